//! Fusion of a loop with the reversed loop over the same range that comes after it:
//! reverse mode's forward sweep of a loop and its reverse sweep, where they do not depend on
//! each other; and of two loops over the same range that count up, where the second uses
//! what the first leaves in a buffer at the same index only. `Σ sin(xᵢ)` with an `Active`
//! result computes the sum in one loop and then adds `cos(xᵢ) · dret` to `dxᵢ` in a second,
//! reversed one, which reads nothing the first writes: one loop doing both reads `xᵢ` once,
//! and computes the sine and cosine of the same value side by side (as a hand-written
//! adjoint does).
//!
//! The fused loop runs the first loop's body and then the second's, in the first's order.
//! That is the same computation when:
//! - neither loop reads or writes what the other writes (variables, memory; but memory both
//!   use only at their own index, element `i` in iteration `i`, passes from one to the
//!   other at the same iteration either way);
//! - of two loops counting up, at most one uses the tape, calls functions or prints; with a
//!   reversed second loop, neither does, but for what the first pushes on the tape in each
//!   iteration and the second pops in the same iteration (those values then pass from one
//!   body to the other, off the tape);
//! - the second loop's iterations commute: what it writes outside its body it only adds to
//!   (`d[e] += v`, `dv += v`, whose additions may run in another order), or writes at its
//!   own index only;
//! - what lies between them can be split into what the second loop needs, which moves
//!   before the first (it must not depend on the first), and the rest, which moves after
//!   the fused loop (it must not conflict with the second).

use crate::{HashMap, HashSet};

use crate::{BinOp, Function, Op, OpKind, Region, Value, Var};

/// Fuses the pairs of loops of `f` that can be, in every region; then the fused bodies'
/// reads and computations that the two halves repeat are merged (`simplify::cse`), and the
/// variables that only carried a value from one sweep to the other removed.
pub fn fuse_sweeps(f: &mut Function) {
    if !f.checkpoints.is_empty() {
        return;
    }
    let (mut roots, mut allocs, mut pushed) = (HashMap::default(), HashMap::default(), HashSet::default());
    f.walk(&mut |op| {
        if let (Some(base), Some(v)) = (op.kind.view_base(), op.result) {
            roots.insert(v, base);
        }
        match (&op.kind, op.result) {
            (OpKind::Alloc { len, .. }, Some(v)) => {
                allocs.insert(v, *len);
            }
            (k, _) if k.resized().is_some() => {
                pushed.extend(k.resized());
            }
            _ => {}
        }
    });
    // The length of a buffer the function allocated is the length it was given.
    let mut lens = HashMap::default();
    f.walk(&mut |op| {
        if let (OpKind::Len(m), Some(v)) = (&op.kind, op.result) {
            if let Some(len) = allocs.get(m).filter(|_| !pushed.contains(m)) {
                lens.insert(v, *len);
            }
        }
    });
    let cx = Cx { roots, lens, pushed, par: f.par_loops.iter().copied().collect() };
    let mut body = std::mem::take(&mut f.body);
    let fused = fuse_in(&cx, f, &mut body);
    f.body = body;
    if fused {
        crate::simplify::cse(f);
        crate::dead_stores::dead_stores(f);
    }
}

struct Cx {
    /// Views and the memory they are part of.
    roots: HashMap<Value, Value>,
    /// Lengths of allocated buffers (`y.len()`) and what they were allocated with.
    lens: HashMap<Value, Value>,
    /// Vectors that grow (`push`): the only memory whose length changes.
    pushed: HashSet<Value>,
    par: HashSet<Value>,
}

impl Cx {
    /// `v`, or the length a buffer whose length `v` is was allocated with (`b.len()` of
    /// `b = vec![0.0; a.len()]` is `a`'s length...).
    fn length(&self, mut v: Value) -> Value {
        for _ in 0..self.lens.len() {
            match self.lens.get(&v) {
                Some(&len) => v = len,
                None => break,
            }
        }
        v
    }

    fn root(&self, mut m: Value) -> Value {
        while let Some(&b) = self.roots.get(&m) {
            m = b;
        }
        m
    }
}

/// Whether it fused any.
fn fuse_in(cx: &Cx, f: &Function, r: &mut Region) -> bool {
    let mut fused = false;
    for op in &mut r.ops {
        for sub in op.kind.regions_mut() {
            fused |= fuse_in(cx, f, sub);
        }
    }
    // A loop with its reverse first: the forward sweep of a loop fused with the next one
    // could push values its own reverse does not pop.
    'again: loop {
        for reversed in [true, false] {
            for q in 0..r.ops.len() {
                let Some(range) = ascending_range(cx, &r.ops[q], reversed) else { continue };
                let Some(p) = (0..q).rev().find(|&p| ascending_range(cx, &r.ops[p], false) == Some(range)) else {
                    continue;
                };
                if tape_copy(&r.ops[p]) || tape_copy(&r.ops[q]) {
                    continue;
                }
                if let Some(fusion) = fusable(cx, f, r, p, q, reversed) {
                    fuse(r, p, q, fusion);
                    fused = true;
                    continue 'again;
                }
            }
        }
        break;
    }
    fused
}

/// A loop that copies a buffer to the tape or back (`push(m[i])`, `m[i] = pop()`), which
/// code generation writes as one slice copy: left alone.
fn tape_copy(op: &Op) -> bool {
    let OpKind::For { body, .. } = &op.kind else { return false };
    matches!(
        body.ops.iter().map(|o| &o.kind).collect::<Vec<_>>()[..],
        [OpKind::Load { .. }, OpKind::Push(_)] | [OpKind::Pop, OpKind::Store { .. }]
    )
}

/// How two loops fuse: which ops between them go before the fused loop, and the values the
/// second loop pops that the first pushed (pop, push).
struct Fusion {
    before: Vec<bool>,
    pairs: Vec<(Value, Value)>,
}

/// `(lo, hi, inclusive)` of a plain `for` loop (no step, no early exit, not parallel) that
/// counts down (`reverse`) or up.
fn ascending_range(cx: &Cx, op: &Op, reverse: bool) -> Option<(Value, Value, bool)> {
    match &op.kind {
        OpKind::For { index, lo, hi, step: None, inclusive, reverse: rev, exit: None, .. }
            if *rev == reverse && !cx.par.contains(index) =>
        {
            Some((cx.length(*lo), cx.length(*hi), *inclusive))
        }
        _ => None,
    }
}

/// What ops read, write, define and use.
#[derive(Default)]
struct Effects {
    reads_vars: HashSet<Var>,
    writes_vars: HashSet<Var>,
    reads_mem: HashSet<Value>,
    writes_mem: HashSet<Value>,
    defs: HashSet<Value>,
    uses: HashSet<Value>,
    /// The tape, calls, prints, asserts, returns: kept in their order.
    ordered: bool,
}

fn effects(cx: &Cx, ops: &[Op]) -> Effects {
    let mut e = Effects::default();
    for op in ops {
        visit(cx, op, &mut e);
    }
    e
}

/// The effects of loop `op`, but for the pushes or pops directly in its body.
fn loop_effects(cx: &Cx, op: &Op) -> Effects {
    let OpKind::For { index, body, .. } = &op.kind else { unreachable!() };
    let mut e = Effects::default();
    e.defs.insert(*index);
    e.uses.extend(op.kind.operands());
    for o in body.ops.iter().filter(|o| !matches!(o.kind, OpKind::Push(_) | OpKind::Pop)) {
        visit(cx, o, &mut e);
    }
    e
}

/// What the first loop's body pushes directly (not in a nested region) and the second's pops
/// directly, each pop with the push it takes back (the last push first): the pops' results
/// and the pushed values. None if they do not match one for one, type for type.
fn tape_pairs(f: &Function, first: &Op, second: &Op) -> Option<Vec<(Value, Value)>> {
    let (OpKind::For { body: fb, .. }, OpKind::For { body: sb, .. }) = (&first.kind, &second.kind) else {
        return None;
    };
    let pushes: Vec<Value> =
        fb.ops.iter().filter_map(|o| if let OpKind::Push(v) = o.kind { Some(v) } else { None }).collect();
    let pops: Vec<Value> = sb.ops.iter().filter(|o| matches!(o.kind, OpKind::Pop)).filter_map(|o| o.result).collect();
    if pushes.len() != pops.len() {
        return None;
    }
    let pairs: Vec<(Value, Value)> = pops.into_iter().zip(pushes.into_iter().rev()).collect();
    pairs.iter().all(|(pop, push)| f.ty(*pop) == f.ty(*push)).then_some(pairs)
}

fn visit(cx: &Cx, op: &Op, e: &mut Effects) {
    e.defs.extend(op.result);
    e.defs.extend(op.kind.inner_defs());
    e.uses.extend(op.kind.operands());
    match &op.kind {
        OpKind::GetVar(v) => {
            e.reads_vars.insert(*v);
        }
        OpKind::SetVar(v, _) | OpKind::DeclVar { var: v, .. } => {
            e.writes_vars.insert(*v);
        }
        OpKind::Load { mem, .. } => {
            e.reads_mem.insert(cx.root(*mem));
        }
        OpKind::Len(mem) if cx.pushed.contains(&cx.root(*mem)) => {
            e.reads_mem.insert(cx.root(*mem));
        }
        OpKind::Store { mem, .. } | OpKind::Fill { mem, .. } | OpKind::VecPush { mem, .. } => {
            e.writes_mem.insert(cx.root(*mem));
        }
        OpKind::Call { args, outs, .. } => {
            e.ordered = true;
            for (a, by_mut) in args {
                e.reads_mem.insert(cx.root(*a));
                if *by_mut {
                    e.writes_mem.insert(cx.root(*a));
                }
            }
            e.writes_vars.extend(outs.iter().copied());
        }
        OpKind::Push(_) | OpKind::Pop | OpKind::Print { .. } | OpKind::Assert { .. } | OpKind::Return(_) => {
            e.ordered = true;
        }
        OpKind::CopyRecords { src, .. } => {
            e.reads_mem.insert(cx.root(*src));
        }
        _ => {}
    }
    for sub in op.kind.regions() {
        for o in &sub.ops {
            visit(cx, o, e);
        }
    }
}

/// Whether `a` (earlier) and `b` (later) must keep their order.
fn conflict(a: &Effects, b: &Effects) -> bool {
    conflict_except(a, b, &HashSet::default())
}

/// [`conflict`], but for memory `shared`.
fn conflict_except(a: &Effects, b: &Effects, shared: &HashSet<Value>) -> bool {
    let meets = |x: &HashSet<Var>, y: &HashSet<Var>| x.iter().any(|v| y.contains(v));
    let meets_mem = |x: &HashSet<Value>, y: &HashSet<Value>| x.iter().any(|v| y.contains(v) && !shared.contains(v));
    (a.ordered && b.ordered)
        || meets(&a.writes_vars, &b.reads_vars)
        || meets(&a.writes_vars, &b.writes_vars)
        || meets(&a.reads_vars, &b.writes_vars)
        || meets_mem(&a.writes_mem, &b.reads_mem)
        || meets_mem(&a.writes_mem, &b.writes_mem)
        || meets_mem(&a.reads_mem, &b.writes_mem)
        || b.uses.iter().any(|v| a.defs.contains(v))
}

/// Which ops between loops `p` and `q` the fused loop needs before it (true) and which go
/// after it, if the loops can be fused.
/// With `reversed`, loop `q` counts down: it runs in `p`'s order once fused. Else both count
/// up (a buffer filled by one loop and read by the next at the same index).
fn fusable(cx: &Cx, f: &Function, r: &Region, p: usize, q: usize, reversed: bool) -> Option<Fusion> {
    // Memory both loops use at their own index only: iteration i of the second reads there
    // what iteration i of the first left, fused or not.
    let shared: HashSet<Value> =
        own_elements(cx, &r.ops[p]).intersection(&own_elements(cx, &r.ops[q])).copied().collect();
    let (first, second, pairs) = if reversed {
        // What the first pushes and the second pops, one for one, becomes values passed
        // from one body to the other.
        let pairs = tape_pairs(f, &r.ops[p], &r.ops[q])?;
        let (first, second) = (loop_effects(cx, &r.ops[p]), loop_effects(cx, &r.ops[q]));
        if first.ordered || second.ordered || !commutes(cx, &r.ops[q]) {
            return None;
        }
        (first, second, pairs)
    } else {
        let (first, second) = (effects(cx, &r.ops[p..=p]), effects(cx, &r.ops[q..=q]));
        (first, second, vec![])
    };
    if conflict_except(&first, &second, &shared) {
        return None;
    }
    let middle: Vec<Effects> = r.ops[p + 1..q].iter().map(|op| effects(cx, std::slice::from_ref(op))).collect();
    if (!pairs.is_empty() || first.ordered || second.ordered) && middle.iter().any(|m| m.ordered) {
        return None;
    }
    let mut before = vec![false; middle.len()];
    for k in (0..middle.len()).rev() {
        // (An assertion between the loops stays ahead of the second: it checks what that
        // one assumes, a length say, and its message is the one to see if it fails.)
        before[k] = middle[k].ordered
            || conflict(&middle[k], &second)
            || (k + 1..middle.len()).any(|j| before[j] && conflict(&middle[k], &middle[j]));
    }
    // What moves before the first loop must not depend on it.
    if middle.iter().zip(&before).any(|(m, &b)| b && conflict(&first, m)) {
        return None;
    }
    Some(Fusion { before, pairs })
}

/// The memory loop `op` reads and writes only as element `i` in iteration `i` (not through a
/// view, nor by a call, `fill` or a push).
fn own_elements(cx: &Cx, op: &Op) -> HashSet<Value> {
    let OpKind::For { index, body, .. } = &op.kind else { return HashSet::default() };
    let (mut own, mut other) = (HashSet::default(), HashSet::default());
    body.walk(&mut |o| match &o.kind {
        OpKind::Load { mem, index: i } | OpKind::Store { mem, index: i, .. } => {
            if cx.root(*mem) == *mem && *i == Some(*index) {
                own.insert(*mem);
            } else {
                other.insert(cx.root(*mem));
            }
        }
        OpKind::Fill { mem, .. } | OpKind::VecPush { mem, .. } => {
            other.insert(cx.root(*mem));
        }
        OpKind::Call { args, .. } => other.extend(args.iter().map(|a| cx.root(a.0))),
        OpKind::CopyRecords { src, .. } => {
            other.insert(cx.root(*src));
        }
        _ => {}
    });
    own.retain(|m| !other.contains(m));
    own
}

/// Whether the iterations of loop `op` may run in another order: every variable or memory
/// from outside its body that it writes, it only adds to, or writes at its own index only.
fn commutes(cx: &Cx, op: &Op) -> bool {
    let OpKind::For { index, body, .. } = &op.kind else { return false };
    let inner = effects(cx, &body.ops);
    // Uses of each value within the body.
    let mut uses: HashMap<Value, usize> = HashMap::default();
    let mut defs: HashMap<Value, &Op> = HashMap::default();
    body.walk(&mut |o| {
        for u in o.kind.operands() {
            *uses.entry(u).or_default() += 1;
        }
        if let Some(v) = o.result {
            defs.insert(v, o);
        }
    });
    let once = |v: Value| uses.get(&v) == Some(&1);
    // For `x ± y` (or `y + x`) with `x` read by `is_old` and used for this only: `x`.
    let old_of = |v: Value, is_old: &dyn Fn(&Op) -> bool| -> Option<Value> {
        let candidates = match defs.get(&v).map(|o| &o.kind) {
            Some(OpKind::Binary(BinOp::Add, a, b)) => vec![*a, *b],
            Some(OpKind::Binary(BinOp::Sub, a, _)) => vec![*a],
            _ => vec![],
        };
        candidates.into_iter().find(|x| once(*x) && defs.get(x).is_some_and(|o| is_old(o)))
    };
    let declared_inside: HashSet<Var> = {
        let mut d = HashSet::default();
        body.walk(&mut |o| {
            if let OpKind::DeclVar { var, .. } = &o.kind {
                d.insert(*var);
            }
        });
        d
    };
    let allocated_inside: HashSet<Value> = {
        let mut a = HashSet::default();
        body.walk(&mut |o| {
            if let (OpKind::Alloc { .. }, Some(v)) = (&o.kind, o.result) {
                a.insert(v);
            }
        });
        a
    };
    let outer_vars: HashSet<Var> = inner.writes_vars.iter().filter(|v| !declared_inside.contains(v)).copied().collect();
    // Memory written at the loop's own index only, through no view, needs nothing more.
    let own_element = |m: Value| {
        let mut only = true;
        body.walk(&mut |o| match &o.kind {
            OpKind::Load { mem, index: i } | OpKind::Store { mem, index: i, .. } if cx.root(*mem) == m => {
                only &= *mem == m && *i == Some(*index);
            }
            _ => {}
        });
        only
    };
    let outer_mem: HashSet<Value> =
        inner.writes_mem.iter().filter(|m| !allocated_inside.contains(m) && !own_element(**m)).copied().collect();
    // Every write of those is an addition to what it overwrites, and every read of them is
    // the read of such an addition.
    let mut ok = true;
    let mut added_to = HashSet::default();
    body.walk(&mut |o| match &o.kind {
        OpKind::SetVar(v, value) if outer_vars.contains(v) => {
            let old = old_of(*value, &|x| matches!(x.kind, OpKind::GetVar(w) if w == *v));
            ok &= once(*value) && old.is_some();
            added_to.extend(old);
        }
        OpKind::Store { mem, index: i, value } if outer_mem.contains(&cx.root(*mem)) => {
            let same = |x: &Op| matches!(&x.kind, OpKind::Load { mem: m, index: j } if m == mem && j == i);
            let old = old_of(*value, &same);
            ok &= once(*value) && old.is_some();
            added_to.extend(old);
        }
        _ => {}
    });
    body.walk(&mut |o| match &o.kind {
        OpKind::GetVar(v) if outer_vars.contains(v) => ok &= o.result.is_some_and(|r| added_to.contains(&r)),
        OpKind::Load { mem, .. } if outer_mem.contains(&cx.root(*mem)) => {
            ok &= o.result.is_some_and(|r| added_to.contains(&r));
        }
        // (Other writes of that memory: `fill`, a push.)
        OpKind::Fill { mem, .. } | OpKind::VecPush { mem, .. } if outer_mem.contains(&cx.root(*mem)) => ok = false,
        _ => {}
    });
    ok
}

/// Moves the ops between `p` and `q` marked `before` in front of loop `p`, and fuses the
/// loops into one where `p` was.
fn fuse(r: &mut Region, p: usize, q: usize, Fusion { before, pairs }: Fusion) {
    let mut ops = std::mem::take(&mut r.ops);
    let tail = ops.split_off(q + 1);
    let second = ops.pop().expect("loop q");
    let middle = ops.split_off(p + 1);
    let mut first = ops.pop().expect("loop p");
    let (mut ahead, mut behind) = (vec![], vec![]);
    for (op, b) in middle.into_iter().zip(before) {
        if b {
            ahead.push(op);
        } else {
            behind.push(op);
        }
    }
    let OpKind::For { index: second_index, body: mut second_body, .. } = second.kind else { unreachable!() };
    let OpKind::For { index, body, .. } = &mut first.kind else { unreachable!() };
    rename(&mut second_body, second_index, *index);
    // (Each push directly in the first body is paired, and each pop in the second: or none.)
    if !pairs.is_empty() {
        for (pop, push) in pairs {
            rename(&mut second_body, pop, push);
        }
        body.ops.retain(|o| !matches!(o.kind, OpKind::Push(_)));
        second_body.ops.retain(|o| !matches!(o.kind, OpKind::Pop));
    }
    body.ops.extend(second_body.ops);
    ops.extend(ahead);
    ops.push(first);
    ops.extend(behind);
    ops.extend(tail);
    r.ops = ops;
}

fn rename(r: &mut Region, from: Value, to: Value) {
    r.walk_mut(&mut |op| {
        for v in op.kind.operands_mut() {
            if *v == from {
                *v = to;
            }
        }
    });
}
