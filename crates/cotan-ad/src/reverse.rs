//! Reverse mode: a forward sweep that runs the primal and saves what the reverse sweep
//! needs, then a reverse sweep over the same structure, backwards.
//!
//! What is saved: a primal value that the reverse sweep needs and that is defined inside a
//! branch or loop body is either recomputed at the start of that region's reverse (cheap
//! ops whose inputs are available: constants, arithmetic, loop indices, reads of memory
//! nothing writes) or pushed on a typed stack at the end of the region in the forward
//! sweep and popped at the start of its reverse, or, for reads of an integer counter, taken
//! from a copy the reverse sweep steps back (`counters.rs`). Values at the top level stay
//! in locals.
//! Loops whose trip count is not known from their bounds (`while`, early exits) count
//! their iterations. Memory is never restored: every value read from memory is an SSA
//! value, so the reverse sweep never reads primal memory again.
//!
//! Which values are needed is found by a dry run of the reverse sweep that records every
//! primal value it asks for; the real run then emits the saves and restores.

use cotan_ir::{HashMap, HashSet};

use cotan_ir::{
    BinOp, Checkpoint, CmpOp, Const, Function, MemKind, Op, OpKind, Region, Scalar, Schedule, Ty, Value, Var,
};

use crate::activity::{analyze_spec, differentiable_operands, ActivityInfo};
use crate::counters::{self, Counters};
use crate::emit::{remap, Emitter};
use crate::forward::{d_name, owned, Shadow};
use crate::link::{passed_ty, Avail, CallSite, Linker, Need};
use crate::rules::{partials, scale, Partial};
use crate::spec::{Activity, AdError, Spec};

type RegionId = usize;
const TOP: RegionId = 0;
/// How many partial sums the adjoint of a value in SSA form is kept as.
const LANES: usize = 4;

/// Where each value is defined, and what kind of region each region is.
#[derive(Default)]
struct Layout {
    parent: Vec<Option<RegionId>>,
    region_of: HashMap<*const Region, RegionId>,
    def_region: HashMap<Value, RegionId>,
    /// (region, position in it); loop indices have position 0 before their body's ops.
    pos: HashMap<Value, (RegionId, i64)>,
    def_op: HashMap<Value, Op>,
    /// Indices of `for` loops without early exit: the reverse loop recreates them.
    free_indices: HashSet<Value>,
    /// Values used in a region other than their own: their adjoint must be a variable.
    used_elsewhere: HashSet<Value>,
    /// Memory that nothing writes.
    read_only: HashSet<Value>,
    /// Vectors whose length changes (`push`, `v = w`): it is not fixed at allocation.
    pushed: HashSet<Value>,
    /// Per vector made in a loop or branch whose length changes: its length at the end of
    /// that region (`final_lens.rs`).
    final_lens: HashMap<Value, Value>,
    /// For each value, the position of the top-level op it is in.
    top_pos: HashMap<Value, usize>,
    /// For each piece of memory, the position of the last top-level op that writes it.
    last_write: HashMap<Value, usize>,
    /// Memory the reverse sweep can read, holding what it held at the end of the forward
    /// sweep (reads of it after its last write can be repeated there).
    stable_mem: HashSet<Value>,
    /// Memory whose length the reverse sweep can read.
    len_mem: HashSet<Value>,
    /// Every value that is memory (never saved: the reverse sweep reads it or does not).
    memory: HashSet<Value>,
    /// Where each op is: its region and, for ops directly in the body, their position.
    op_at: HashMap<*const Op, (RegionId, usize)>,
    /// The reverse sweep is a function of its own (`reverse_split`): values of the body's
    /// top level are saved like those of any region.
    split: bool,
    /// Integer counters the reverse sweep can step back instead of saving their values.
    counters: Counters,
    /// Stores that add to what they overwrite (`x[i] += e`, `x[i] -= e`): the operand `e`
    /// and whether it is subtracted. The adjoint of the element passes through them.
    accumulations: HashMap<*const Op, (Value, bool)>,
    /// Reads of buffers that the reverse of a loop body (this region) may repeat after
    /// putting back a copy of the buffer (`restored.rs`): read → (buffer, body).
    restorable: HashMap<Value, (Value, RegionId)>,
    /// Reads of variables that the `if` before them sets from cheap values: the reverse
    /// sweep runs the `if` again (`if_value`).
    if_values: HashMap<Value, IfValue>,
    /// Reads of elements that no later write changes (`final_reads.rs`): the reverse sweep
    /// reads them again.
    final_reads: HashSet<Value>,
    /// Memory parameters of a split derivative that its forward sweep pushes whole at its end
    /// and its reverse sweep pops into a copy, whose reads it then repeats instead of
    /// popping them one by one (`snapshot_params`).
    snapshots: Vec<Value>,
}

/// A variable's value chosen by an `if` whose branches each compute it from cheap ops and
/// set it last (`let ip = if i == n - 1 { i } else { i + 1 };`).
#[derive(Clone)]
struct IfValue {
    cond: Value,
    var: Var,
    /// The then and else branches' ops, each ending with the variable's `SetVar`.
    arms: [Vec<Op>; 2],
    /// The values the condition and the branches use from outside the branches.
    inputs: Vec<Value>,
}

impl Layout {
    /// The loop body whose reverse puts back buffer `mem` for the read `result`, if any.
    fn restoring(&self, mem: Value, result: Value) -> Option<RegionId> {
        self.restorable.get(&result).filter(|(m, _)| *m == mem).map(|(_, r)| *r)
    }

    /// `avail`: for a split reverse sweep, what it may do with each parameter's memory.
    fn new(f: &Function, avail: Option<&[Avail]>) -> Layout {
        let mut l = Layout { split: avail.is_some(), ..Layout::default() };
        l.memory = (0..f.values.len() as u32).map(Value).filter(|v| f.ty(*v).mem().is_some()).collect();
        for &p in &f.params {
            l.def_region.insert(p, TOP);
            l.pos.insert(p, (TOP, -1));
            if f.ty(p).mem().is_some() {
                l.read_only.insert(p);
            }
        }
        l.parent.push(None);
        l.region_of.insert(&f.body as *const Region, TOP);
        l.scan(&f.body, TOP, None);
        // (Not where a loop is replayed from a checkpoint or run in parallel, nor in a split
        // reverse sweep, which does not have the top level's values.)
        if avail.is_none() && f.checkpoints.is_empty() && f.par_loops.is_empty() {
            l.counters = counters::find(f);
        }
        l.accumulations = accumulations(f);
        // Record fields (all at the top), sub-slices and offsets (anywhere) are memory like
        // parameters; writing a record or a buffer writes all its fields and sub-slices, and
        // writing those writes what they are part of.
        let mut field_base = HashMap::default();
        f.walk(&mut |op| {
            if let (
                OpKind::Field { base, .. }
                | OpKind::Slice { base, .. }
                | OpKind::Elem { base, .. }
                | OpKind::Offset { base, .. },
                Some(r),
            ) = (&op.kind, op.result)
            {
                field_base.insert(r, *base);
                l.read_only.insert(r);
            }
        });
        let aliases = |m: Value| -> Vec<Value> {
            let mut out = vec![m];
            let mut up = m;
            while let Some(&b) = field_base.get(&up) {
                out.push(b);
                up = b;
            }
            let mut k = 0;
            while k < out.len() {
                let cur = out[k];
                out.extend(field_base.iter().filter(|(_, b)| **b == cur).map(|(fv, _)| *fv).filter(|fv| *fv != m));
                k += 1;
                if out.len() > 4 * field_base.len() + 2 {
                    break;
                }
            }
            out
        };
        for (k, op) in f.body.ops.iter().enumerate() {
            let mut writes = vec![];
            let mut visit = |o: &Op| match &o.kind {
                OpKind::Store { mem, .. } | OpKind::Fill { mem, .. } | OpKind::VecPush { mem, .. } => writes.push(*mem),
                OpKind::Call { args, .. } => writes.extend(args.iter().filter(|a| a.1).map(|a| a.0)),
                _ => {}
            };
            visit(op);
            for r in op.kind.regions() {
                r.walk(&mut visit);
            }
            for m in writes.into_iter().flat_map(aliases) {
                l.last_write.insert(m, k);
            }
        }
        let mut written = HashSet::default();
        f.walk(&mut |op| {
            if let OpKind::Store { mem, .. } | OpKind::Fill { mem, .. } | OpKind::VecPush { mem, .. } = &op.kind {
                written.extend(aliases(*mem));
            }
            l.pushed.extend(op.kind.resized());
            if let OpKind::Call { args, .. } = &op.kind {
                written.extend(args.iter().filter(|a| a.1).flat_map(|a| aliases(a.0)));
            }
        });
        l.read_only.retain(|m| !written.contains(m));
        // What the reverse sweep can still read: everything at the top level of a combined
        // derivative; the parameters the caller says it may, and their fields, for a split one.
        let mut base_param = HashMap::default();
        let mut base_of_view = HashMap::default();
        for &p in &f.params {
            base_param.insert(p, p);
        }
        let mut results = vec![];
        f.walk(&mut |op| {
            if let (
                OpKind::Field { base, .. }
                | OpKind::Slice { base, .. }
                | OpKind::Elem { base, .. }
                | OpKind::Offset { base, .. },
                Some(r),
            ) = (&op.kind, op.result)
            {
                if let Some(&p) = base_param.get(base) {
                    base_param.insert(r, p);
                }
            }
            // Sub-slices and offsets anywhere are what they are part of; other memory is at
            // the top.
            if let (Some(base), Some(r)) = (op.kind.view_base(), op.result) {
                base_of_view.insert(r, base);
            }
            results.extend(op.result);
        });
        let top_results: HashSet<Value> = f.body.ops.iter().filter_map(|o| o.result).collect();
        let memory: Vec<Value> = f
            .params
            .iter()
            .copied()
            .chain(results.into_iter().filter(|r| top_results.contains(r) || base_of_view.contains_key(r)))
            .filter(|v| f.ty(*v).mem().is_some())
            .collect();
        let mut avail_of = HashMap::default();
        for m in memory {
            let kind = f.ty(m).mem().unwrap().kind;
            let a = match (avail, base_of_view.get(&m)) {
                // The reverse sweep makes a sub-slice again from its base.
                (_, Some(base)) => avail_of.get(base).copied().unwrap_or(Avail::Absent),
                (None, None) => Avail::Stable,
                (Some(avail), None) => match base_param.get(&m).and_then(|p| f.params.iter().position(|q| q == p)) {
                    Some(k) => avail[k],
                    None => Avail::Absent,
                },
            };
            avail_of.insert(m, a);
            if a == Avail::Stable {
                l.stable_mem.insert(m);
            }
            if a == Avail::Stable || (a == Avail::Present && kind != MemKind::Vec) {
                l.len_mem.insert(m);
            }
        }
        l.if_values = if_values(&l, &f.body);
        l.final_reads = crate::final_reads::find(f);
        l
    }

    /// Whether the reverse sweep may read memory `m` passed to the call `op` and find what
    /// the call left in it: nothing writes it later in the forward sweep.
    fn stable_after(&self, m: Value, op: &Op) -> bool {
        if !self.stable_mem.contains(&m) {
            return false;
        }
        if self.read_only.contains(&m) {
            return true;
        }
        match self.op_at.get(&(op as *const Op)) {
            Some(&(TOP, k)) => self.last_write.get(&m).is_none_or(|w| *w <= k),
            _ => false,
        }
    }

    fn scan(&mut self, r: &Region, id: RegionId, top: Option<usize>) {
        for (k, op) in r.ops.iter().enumerate() {
            let top_k = top.unwrap_or(k);
            self.op_at.insert(op as *const Op, (id, k));
            for u in op.kind.operands() {
                if self.def_region.get(&u) != Some(&id) {
                    self.used_elsewhere.insert(u);
                }
            }
            if let Some(v) = op.result {
                self.top_pos.insert(v, top_k);
                self.def_region.insert(v, id);
                self.pos.insert(v, (id, k as i64));
                self.def_op.insert(v, op.clone());
            }
            for sub in op.kind.regions() {
                let sid = self.parent.len();
                self.parent.push(Some(id));
                self.region_of.insert(sub as *const Region, sid);
                if let (OpKind::For { index, exit, body, .. }, true) =
                    (&op.kind, std::ptr::eq(sub, op.kind.regions()[0]))
                {
                    self.def_region.insert(*index, sid);
                    self.pos.insert(*index, (sid, -1));
                    if exit.is_none() {
                        self.free_indices.insert(*index);
                    }
                    debug_assert!(std::ptr::eq(sub, body));
                }
                self.scan(sub, sid, Some(top_k));
            }
        }
    }

    fn id(&self, r: &Region) -> RegionId {
        self.region_of[&(r as *const Region)]
    }
}

/// The reads of variables in `r` (and the regions in it) that are `IfValue`s: the op
/// before the read that writes the variable is an `if` whose branches set it last, after
/// ops that are cheap to run again.
fn if_values(l: &Layout, r: &Region) -> HashMap<Value, IfValue> {
    let mut out = HashMap::default();
    for (k, op) in r.ops.iter().enumerate() {
        for sub in op.kind.regions() {
            out.extend(if_values(l, sub));
        }
        let (OpKind::GetVar(var), Some(read)) = (&op.kind, op.result) else { continue };
        let Some(writer) = r.ops[..k].iter().rev().find(|o| writes_var(o, *var)) else { continue };
        let OpKind::If { cond, then_region, else_region } = &writer.kind else { continue };
        // (Not a read repeated from a restored copy: the copy is put back for the loop body
        // only.)
        let again = |o: &Op| {
            o.result.is_some_and(|v| {
                cheap(l, &o.kind, v) && !matches!(o.kind, OpKind::Load { mem, .. } if l.restoring(mem, v).is_some())
            })
        };
        let arm = |region: &Region| -> Option<Vec<Op>> {
            let (last, body) = region.ops.split_last()?;
            let set = matches!(last.kind, OpKind::SetVar(v, _) if v == *var);
            (set && body.iter().all(again)).then(|| region.ops.clone())
        };
        let (Some(then_ops), Some(else_ops)) = (arm(then_region), arm(else_region)) else { continue };
        let inside: HashSet<Value> = then_ops.iter().chain(&else_ops).filter_map(|o| o.result).collect();
        let mut inputs = vec![*cond];
        for o in then_ops.iter().chain(&else_ops) {
            inputs.extend(o.kind.operands().into_iter().filter(|u| !inside.contains(u)));
        }
        inputs.sort();
        inputs.dedup();
        out.insert(read, IfValue { cond: *cond, var: *var, arms: [then_ops, else_ops], inputs });
    }
    out
}

/// Whether `op` (or an op inside it) writes variable `var`.
fn writes_var(op: &Op, var: Var) -> bool {
    let mut hit = false;
    let mut see = |o: &Op| {
        hit |= match &o.kind {
            OpKind::SetVar(v, _) | OpKind::DeclVar { var: v, .. } => *v == var,
            OpKind::Call { outs, .. } => outs.contains(&var),
            _ => false,
        }
    };
    see(op);
    for sub in op.kind.regions() {
        sub.walk(&mut see);
    }
    hit
}

/// The stores `x[i] = x[i] + e` (or `- e`) whose read of `x[i]` nothing else uses, in the
/// same region with only pure ops between the read and the store.
fn accumulations(f: &Function) -> HashMap<*const Op, (Value, bool)> {
    let mut uses: HashMap<Value, usize> = HashMap::default();
    f.walk(&mut |op| {
        for u in op.kind.operands() {
            *uses.entry(u).or_default() += 1;
        }
    });
    fn visit(r: &Region, uses: &HashMap<Value, usize>, out: &mut HashMap<*const Op, (Value, bool)>) {
        let at: HashMap<Value, usize> =
            r.ops.iter().enumerate().filter_map(|(k, o)| o.result.map(|v| (v, k))).collect();
        for (k, op) in r.ops.iter().enumerate() {
            for sub in op.kind.regions() {
                visit(sub, uses, out);
            }
            let OpKind::Store { mem, index, value } = &op.kind else { continue };
            let Some(&kv) = at.get(value) else { continue };
            let OpKind::Binary(bop @ (BinOp::Add | BinOp::Sub), a, b) = &r.ops[kv].kind else { continue };
            let is_old = |v: &Value| {
                at.get(v).is_some_and(|&kl| {
                    matches!(&r.ops[kl].kind, OpKind::Load { mem: m, index: i } if m == mem && i == index)
                        && uses.get(v) == Some(&1)
                        && r.ops[kl + 1..k].iter().all(|o| {
                            o.result.is_some() && o.kind.regions().is_empty() && !matches!(o.kind, OpKind::Call { .. })
                        })
                })
            };
            let e = match bop {
                BinOp::Add if is_old(a) => (*b, false),
                BinOp::Add if is_old(b) => (*a, false),
                BinOp::Sub if is_old(a) => (*b, true),
                _ => continue,
            };
            if uses.get(value) == Some(&1) {
                out.insert(op as *const Op, e);
            }
        }
    }
    let mut out = HashMap::default();
    visit(&f.body, &uses, &mut out);
    out
}

/// `fwd` followed at once by `back`: the pushes that end `fwd` and the pops that start
/// `back` (last pushed, first popped) pass their values directly, with no tape between
/// (a parallel loop's iteration, replayed and at once reversed).
fn forward_pushes_to_pops(fwd: &mut Region, back: &mut Region) {
    let mut pass = HashMap::default();
    let mut k = 0;
    while let (Some(last), Some(first)) = (fwd.ops.last(), back.ops.get(k)) {
        let (OpKind::Push(v), OpKind::Pop, Some(r)) = (&last.kind, &first.kind, first.result) else { break };
        pass.insert(r, *v);
        fwd.ops.pop();
        k += 1;
    }
    if pass.is_empty() {
        return;
    }
    back.ops.drain(..k);
    fn substitute(r: &mut Region, pass: &HashMap<Value, Value>) {
        for op in &mut r.ops {
            for v in op.kind.operands_mut() {
                if let Some(p) = pass.get(v) {
                    *v = *p;
                }
            }
            for sub in op.kind.regions_mut() {
                substitute(sub, pass);
            }
        }
    }
    substitute(back, &pass);
}

/// What the dry run decided: per region, the values to push and to recompute.
#[derive(Default)]
struct Plan {
    push: HashMap<RegionId, Vec<Value>>,
    recompute: HashMap<RegionId, Vec<Value>>,
    /// The buffers each region's forward sweep copies at its end and its reverse puts back
    /// (those of `Layout::restorable` that a repeated read needs).
    restore: HashMap<RegionId, Vec<Value>>,
    /// The counters whose values the reverse sweep gets by stepping them back.
    counters: HashSet<Var>,
}

fn cheap(l: &Layout, kind: &OpKind, result: Value) -> bool {
    match kind {
        OpKind::Const(_)
        | OpKind::Unary(..)
        | OpKind::Binary(..)
        | OpKind::Cmp(..)
        | OpKind::Cast(_)
        | OpKind::Select(..) => true,
        // Memory cannot be saved: only the length of memory the reverse sweep has is recomputed.
        OpKind::Len(mem) => !l.pushed.contains(mem) && l.len_mem.contains(mem),
        // A read can be repeated in the reverse sweep if nothing writes the memory after it:
        // never, or only in top-level statements before the one the read is in, or nothing
        // writes that element after it.
        OpKind::Load { mem, .. } => {
            l.stable_mem.contains(mem)
                && (l.read_only.contains(mem)
                    || l.last_write.get(mem).is_some_and(|w| Some(w) < l.top_pos.get(&result))
                    || l.restoring(*mem, result).is_some()
                    || l.final_reads.contains(&result))
        }
        _ => false,
    }
}

/// How many values recomputing an op with `kind` in the reverse sweep would save that the
/// reverse sweep does not need for themselves (`needs`): `lap = a + b + c + d` saves four
/// where saving `lap` saves one.
fn saves_for(l: &Layout, kind: &OpKind, needs: &HashSet<Value>, memo: &mut HashMap<Value, usize>) -> usize {
    let mut n = 0;
    for u in kind.operands() {
        if l.memory.contains(&u)
            || l.def_region.get(&u).is_none_or(|r| *r == TOP && !l.split)
            || l.free_indices.contains(&u)
            || l.counters.before.contains_key(&u)
            || l.counters.read_of.contains_key(&u)
            || needs.contains(&u)
        {
            continue;
        }
        if let Some(&c) = memo.get(&u) {
            n += c;
            continue;
        }
        memo.insert(u, 1); // (a cycle cannot happen in SSA; this bounds the walk anyway)
        let c = match l.def_op.get(&u) {
            Some(op) if cheap(l, &op.kind, u) => saves_for(l, &op.kind, needs, memo),
            _ => 1,
        };
        memo.insert(u, c);
        n += c;
    }
    n
}

fn make_plan(l: &Layout, needs: HashSet<Value>) -> Plan {
    let mut push = HashSet::default();
    let mut recompute = HashSet::default();
    let mut counters = HashSet::default();
    let mut memo = HashMap::default();
    let mut work: Vec<Value> = needs.iter().copied().collect();
    while let Some(v) = work.pop() {
        if let Some(var) = l.counters.before.get(&v).or_else(|| l.counters.read_of.get(&v)) {
            counters.insert(*var);
            continue;
        }
        if l.memory.contains(&v) {
            // Memory is not saved, but a view (a sub-slice, a row, an offset) is taken again
            // from its base in the reverse sweep: its bounds or index are needed there.
            if let Some(op) = l.def_op.get(&v).filter(|o| o.kind.view_base().is_some()) {
                work.extend(op.kind.operands());
            }
            continue;
        }
        if l.def_region.get(&v).is_none_or(|r| *r == TOP && !l.split)
            || l.free_indices.contains(&v)
            || push.contains(&v)
            || recompute.contains(&v)
        {
            continue;
        }
        if let Some(iv) = l.if_values.get(&v) {
            // (The `if` again, if that saves at most one value besides.)
            if saves_for(l, &OpKind::Return(iv.inputs.clone()), &needs, &mut memo) < 2 {
                recompute.insert(v);
                work.extend(iv.inputs.iter().copied());
                continue;
            }
        }
        match l.def_op.get(&v) {
            // (Recomputing it would save two or more values nothing else needs: save it.)
            Some(op) if cheap(l, &op.kind, v) && saves_for(l, &op.kind, &needs, &mut memo) < 2 => {
                recompute.insert(v);
                work.extend(op.kind.operands());
            }
            _ => {
                push.insert(v);
            }
        }
    }
    let mut plan = Plan::default();
    let by_region = |set: HashSet<Value>| {
        let mut m: HashMap<RegionId, Vec<Value>> = HashMap::default();
        for v in set {
            m.entry(l.def_region[&v]).or_default().push(v);
        }
        for vs in m.values_mut() {
            vs.sort_by_key(|v| l.pos[v].1);
        }
        m
    };
    for &v in &recompute {
        if let Some(OpKind::Load { mem, .. }) = l.def_op.get(&v).map(|o| &o.kind) {
            if let Some(r) = l.restoring(*mem, v) {
                let list = plan.restore.entry(r).or_default();
                if !list.contains(mem) {
                    list.push(*mem);
                }
            }
        }
    }
    for list in plan.restore.values_mut() {
        list.sort();
    }
    plan.push = by_region(push);
    plan.recompute = by_region(recompute);
    plan.counters = counters;
    plan
}

#[derive(Clone, Copy)]
enum Adj {
    Ssa,
    Var(Var),
}

struct Rev<'a> {
    f: &'a Function,
    act: &'a ActivityInfo,
    l: &'a Layout,
    plan: Plan,
    linker: &'a mut dyn Linker,
    /// For a split derivative: what the reverse sweep may do with each parameter's memory.
    avail: Option<&'a [Avail]>,
    /// Dry run: record needed values instead of resolving them.
    planning: bool,
    needs: HashSet<Value>,
    e: Emitter,
    /// The finished augmented forward sweep of a split derivative.
    aug: Option<Function>,
    /// Primal values as the forward sweep computed them.
    fwd: HashMap<Value, Value>,
    /// Primal memory as the reverse sweep of a split derivative has it (its parameters).
    rmem: HashMap<Value, Value>,
    /// Restored values and shadows of the reverse regions being built, innermost last.
    scopes: Vec<HashMap<Value, Value>>,
    shadows: Vec<HashMap<Value, Shadow>>,
    adj_kind: HashMap<Value, Adj>,
    /// The adjoint of a value kept in SSA form, as up to `LANES` partial sums.
    adj_ssa: HashMap<Value, Vec<Value>>,
    dvar: HashMap<Var, Var>,
    /// Iteration counts of counted loops at the top level.
    counts: HashMap<*const Op, Value>,
    /// For each loop checkpointed by the binomial schedule: its stack of segments (start,
    /// end, free snapshots, has a snapshot), the variable holding the stack's depth, and its
    /// iteration count, made by the forward sweep for the reverse.
    segments: HashMap<*const Op, (Value, Var, Value)>,
    /// Adjoint variables known to hold zero at this point of the current region, so that
    /// the next `+=` can be a plain assignment.
    zeroed: HashSet<Var>,
    /// The reverse sweep's copy of each counter it steps back (see [`counters`]).
    back: HashMap<Var, Var>,
    ret: Vec<Value>,
    errors: Vec<AdError>,
    /// Buffers whose stores the forward sweep being built leaves out: a parallel loop's
    /// outputs, in its replays (`par_outputs`).
    replay_skip: HashSet<Value>,
    /// The loads and sums of the accumulations into those buffers.
    replay_skip_values: HashSet<Value>,
}

/// Builds the reverse-mode derivative `name` of `f` with std::autodiff's signature: the
/// forward sweep and the reverse sweep in one function. Calls are linked by `linker`.
pub fn reverse(f: &Function, spec: &Spec, name: &str, linker: &mut dyn Linker) -> Result<Function, AdError> {
    let (f, final_lens) = crate::final_lens::with_final_lens(f);
    let f = &*f;
    let act = analyze_spec(f, spec);
    let mut layout = Layout::new(f, None);
    layout.final_lens = final_lens;
    layout.counters.keep_reversed(f, &|op| act.op_is_active(f, op));
    for (read, (m, body)) in crate::restored::find(f, &|op| act.op_is_active(f, op)) {
        if let Some(&id) = layout.region_of.get(&body) {
            layout.restorable.insert(read, (m, id));
        }
    }
    let plan = dry_plan(f, &act, &layout, name, linker, None, spec);
    let out = Rev::new(f, &act, &layout, plan, false, name, linker, None).run(spec);
    match out.errors.into_iter().last() {
        Some(e) => Err(e),
        None => Ok(out.rev),
    }
}

/// Builds the two halves of a derivative for calls (see [`crate::link`]): the augmented
/// forward sweep `aug_name`, which runs `f` and pushes what the reverse sweep needs on the
/// caller's tape, and the reverse sweep `rev_name`, which pops it. `avail` says, per
/// parameter, what the reverse sweep may do with its memory.
pub fn reverse_split(
    f: &Function,
    spec: &Spec,
    avail: &[Avail],
    names: (&str, &str),
    linker: &mut dyn Linker,
) -> Result<(Function, Function), AdError> {
    let (f, final_lens) = crate::final_lens::with_final_lens(f);
    let f = &*f;
    let act = analyze_spec(f, spec);
    let mut layout = Layout::new(f, Some(avail));
    layout.final_lens = final_lens;
    let mut plan = dry_plan(f, &act, &layout, names.0, linker, Some(avail), spec);
    let snapshots = snapshot_params(f, &layout, &plan, avail);
    if !snapshots.is_empty() {
        // Plan again: the reads of the copies can be repeated.
        layout.stable_mem.extend(snapshots.iter().copied());
        layout.snapshots = snapshots;
        plan = dry_plan(f, &act, &layout, names.0, linker, Some(avail), spec);
    }
    let mut out = Rev::new(f, &act, &layout, plan, false, names.0, linker, Some(avail)).run(spec);
    if let Some(e) = out.errors.pop() {
        return Err(e);
    }
    out.rev.name = names.1.to_string();
    Ok((out.aug.expect("a split derivative has a forward sweep"), out.rev))
}

/// The plan of a derivative: which values a dry run of the transform asks of the forward
/// sweep, and which of them are saved or recomputed.
fn dry_plan(
    f: &Function,
    act: &ActivityInfo,
    layout: &Layout,
    name: &str,
    linker: &mut dyn Linker,
    avail: Option<&[Avail]>,
    spec: &Spec,
) -> Plan {
    let dry = Rev::new(f, act, layout, Plan::default(), true, name, linker, avail).run(spec);
    make_plan(layout, dry.needs)
}

/// The memory parameters a split derivative copies whole instead of saving its reads of
/// them (`Layout::snapshots`): buffers of numbers the function only reads, which the caller
/// may change before the reverse sweep (`Avail::Present`) or no longer has there
/// (`Avail::Absent`, for arrays, whose length is in their type), and whose reads the plan
/// would save about as many times as the buffer has elements or more: a fixed-size array's
/// reads in loops of constant trip counts, at least half its length; a slice's, in a loop
/// over its whole length (`for i in 0..x.len()`). A copy (one `push_all` and one `pop_all`)
/// costs less than as many single pushes and pops, and the reverse sweep can then
/// recompute what it would have saved from those reads (ode_brusselator's Laplacians).
fn snapshot_params(f: &Function, l: &Layout, plan: &Plan, avail: &[Avail]) -> Vec<Value> {
    if !f.par_loops.is_empty() || !f.checkpoints.is_empty() {
        return vec![];
    }
    let mut reach = HashMap::default();
    reach_regions(l, &f.body, &Reach { times: Some(1), bounds: vec![] }, &mut reach);
    // Per buffer: its saved reads counted over constant trip counts, and whether one of
    // them is in a loop over the buffer's length.
    let mut saved: HashMap<Value, (u128, bool)> = HashMap::default();
    for (region, values) in &plan.push {
        let Some(r) = reach.get(region) else { continue };
        for v in values {
            if let Some(OpKind::Load { mem, index: Some(_) }) = l.def_op.get(v).map(|o| &o.kind) {
                let over_len = r
                    .bounds
                    .iter()
                    .any(|b| matches!(l.def_op.get(b).map(|o| &o.kind), Some(OpKind::Len(m)) if m == mem));
                let e = saved.entry(*mem).or_default();
                e.0 = e.0.saturating_add(r.times.unwrap_or(0));
                e.1 |= over_len;
            }
        }
    }
    f.params
        .iter()
        .zip(avail)
        .filter(|(p, av)| **av != Avail::Stable && l.read_only.contains(*p))
        .filter_map(|(&p, &av)| {
            let mt = f.ty(p).mem()?;
            let (count, over_len) = saved.get(&p).copied().unwrap_or_default();
            let worth = match mt.kind {
                MemKind::Array(n) => (count > 0 && 2 * count >= n as u128) || over_len,
                MemKind::Slice => av == Avail::Present && over_len,
                _ => false,
            };
            (mt.elem.is_float() && worth).then_some(p)
        })
        .collect()
}

/// How often a region runs, and the upper bounds of the loops around it.
struct Reach {
    /// Times per run of the function: `None` where a loop's trip count is not a constant (a
    /// branch counts as running every time).
    times: Option<u128>,
    /// The `hi` of each counted loop (`for i in 0..hi`) the region is in.
    bounds: Vec<Value>,
}

/// The `Reach` of each region below `r`, which has `reach`.
fn reach_regions(l: &Layout, r: &Region, reach: &Reach, out: &mut HashMap<RegionId, Reach>) {
    let int = |v: &Value| match l.def_op.get(v).map(|o| &o.kind) {
        Some(OpKind::Const(cotan_ir::Const::Int(i))) => u128::try_from(*i).ok(),
        _ => None,
    };
    for op in &r.ops {
        let (each, bound) = match &op.kind {
            OpKind::For { lo, hi, step: None, inclusive: false, exit: None, .. } => {
                (int(lo).zip(int(hi)).map(|(lo, hi)| hi.saturating_sub(lo)), (int(lo) == Some(0)).then_some(*hi))
            }
            OpKind::If { .. } => (Some(1), None),
            _ => (None, None),
        };
        for sub in op.kind.regions() {
            let Some(&id) = l.region_of.get(&(sub as *const Region)) else { continue };
            let times = reach.times.zip(each).map(|(a, b)| a.saturating_mul(b));
            let bounds = reach.bounds.iter().copied().chain(bound).collect();
            let sub_reach = Reach { times, bounds };
            reach_regions(l, sub, &sub_reach, out);
            out.insert(id, sub_reach);
        }
    }
}

/// What one run of the transform made.
struct Out {
    /// The derivative, or the reverse sweep of a split one.
    rev: Function,
    aug: Option<Function>,
    needs: HashSet<Value>,
    errors: Vec<AdError>,
}

impl<'a> Rev<'a> {
    #[allow(clippy::too_many_arguments)]
    fn new(
        f: &'a Function,
        act: &'a ActivityInfo,
        l: &'a Layout,
        plan: Plan,
        planning: bool,
        name: &str,
        linker: &'a mut dyn Linker,
        avail: Option<&'a [Avail]>,
    ) -> Self {
        Rev {
            f,
            act,
            l,
            plan,
            linker,
            avail,
            planning,
            needs: HashSet::default(),
            e: Emitter::new(Rev::function_like(f, name)),
            aug: None,
            fwd: HashMap::default(),
            rmem: HashMap::default(),
            scopes: vec![],
            shadows: vec![HashMap::default()],
            adj_kind: HashMap::default(),
            adj_ssa: HashMap::default(),
            dvar: HashMap::default(),
            counts: HashMap::default(),
            segments: HashMap::default(),
            zeroed: HashSet::default(),
            back: HashMap::default(),
            ret: vec![],
            errors: vec![],
            replay_skip: HashSet::default(),
            replay_skip_values: HashSet::default(),
        }
    }

    /// A new function with `f`'s variables and types.
    fn function_like(f: &Function, name: &str) -> Function {
        let mut out = Function::new(name);
        out.vars = f.vars.clone();
        out.records = f.records.clone();
        out.generic_float = f.generic_float.clone();
        out.type_params = f.type_params.clone();
        out.unsafe_code = f.unsafe_code;
        out
    }

    fn run(mut self, spec: &Spec) -> Out {
        let seeds = if self.l.split {
            self.e.out.tape_param = true;
            self.forward_params();
            vec![]
        } else {
            self.params(spec)
        };
        // Forward sweep.
        for op in &self.f.body.ops {
            self.forward_op(op);
        }
        let seeds = if self.l.split { self.split_sweeps(spec) } else { seeds };
        // Reverse sweep.
        self.scopes.push(HashMap::default());
        self.internal_shadows();
        if !self.errors.is_empty() {
            // (A struct without a shadow: the reverse sweep would have nowhere to write.)
            return self.out();
        }
        for k in 0..self.f.vars.len() {
            let var = Var(k as u32);
            if self.act.var(var) {
                let d = self.dvar_of(var);
                let z = self.zero(Ty::Scalar(self.f.var(var).ty));
                self.e.effect(OpKind::DeclVar { var: d, init: z });
                self.zeroed.insert(d);
            }
        }
        self.prepare(&self.f.body);
        let floats: Vec<Value> = self.ret.iter().copied().filter(|r| self.f.ty(*r).is_float()).collect();
        for (r, seed) in floats.into_iter().zip(seeds) {
            self.accumulate(r, seed);
        }
        for op in self.f.body.ops.iter().rev() {
            self.reverse_op(op);
        }
        let mut outs = vec![];
        if let (Some(act), false) = (spec.ret, self.l.split) {
            if act != Activity::ActiveOnly {
                // Every result (a tuple or array result is several).
                outs.extend(self.ret.iter().map(|r| self.fwd[r]));
            }
        }
        for (&p, &a) in self.f.params.iter().zip(&spec.inputs) {
            if a == Activity::Active {
                let g = match (self.f.ty(p).mem(), self.shadows[0].get(&p).copied()) {
                    // An array passed by value: its gradient is its (local) shadow.
                    (Some(_), Some(Shadow::Mem(s))) => s,
                    (Some(m), _) => self.zero_array(m).expect("arrays passed by value have a fixed size"),
                    (None, _) => match self.read_adj(p) {
                        Some(g) => g,
                        None => self.zero(self.f.ty(p)),
                    },
                };
                outs.push(g);
            }
        }
        self.e.out.returns = outs.iter().map(|v| self.e.out.ty(*v)).collect();
        if !outs.is_empty() {
            self.e.effect(OpKind::Return(outs));
        }
        self.out()
    }

    fn out(self) -> Out {
        Out { rev: self.e.finish(), aug: self.aug, needs: self.needs, errors: self.errors }
    }

    /// Declares the parameters: primal ones, shadows after `Duplicated` ones, `dret` last.
    /// Returns the seeds of the result.
    fn params(&mut self, spec: &Spec) -> Vec<Value> {
        for (&p, &a) in self.f.params.iter().zip(&spec.inputs) {
            let data = self.f.value(p).clone();
            let name = data.name.clone().unwrap_or_default();
            let np = self.e.out.add_param(data.ty, name.clone(), data.span);
            self.fwd.insert(p, np);
            if matches!(a, Activity::Duplicated | Activity::DuplicatedOnly) {
                let mut m = data.ty.mem().unwrap();
                m.access = cotan_ir::Access::Mut;
                let dp = self.e.out.add_param(Ty::Mem(m), d_name(&name), data.span);
                // Integers marked `Duplicated` keep std's signature; their shadow is unused.
                if m.elem.is_float() {
                    self.shadows[0].insert(p, Shadow::Mem(dp));
                }
            }
        }
        // One seed per float result (a tuple or array result has several). A lone integer
        // result keeps std's signature: a seed of its type that nothing reads.
        match spec.ret {
            Some(Activity::Active | Activity::ActiveOnly) => {
                let lone_int = matches!(self.f.returns[..], [Ty::Scalar(s)] if s.is_int());
                let seeded: Vec<Ty> = self.f.returns.iter().copied().filter(|t| t.is_float() || lone_int).collect();
                let n = seeded.len();
                let mut seeds = vec![];
                for (k, ty) in seeded.into_iter().enumerate() {
                    let name = if n == 1 { "dret".to_string() } else { format!("dret{k}") };
                    let seed = self.e.out.add_param(ty, name, cotan_ir::SpanId::NONE);
                    if ty.is_float() {
                        seeds.push(seed);
                    }
                }
                seeds
            }
            _ => vec![],
        }
    }

    /// The augmented forward sweep's parameters: the primal ones.
    fn forward_params(&mut self) {
        for &p in &self.f.params {
            let data = self.f.value(p).clone();
            let np = self.e.out.add_param(data.ty, data.name.clone().unwrap_or_default(), data.span);
            self.fwd.insert(p, np);
        }
    }

    /// Ends the augmented forward sweep of a split derivative (pushing what the reverse
    /// sweep needs of the top level, returning the results) and starts the reverse sweep's
    /// function: its parameters (the memory it may read, shadows, the results' seeds) and the
    /// fields of its structs. Returns the seeds.
    fn split_sweeps(&mut self, spec: &Spec) -> Vec<Value> {
        // The final lengths of active vectors grown by `push`, for their shadows (popped
        // by `prepare` in program order).
        for op in self.f.body.ops.iter().rev() {
            if let (OpKind::Alloc { .. }, Some(m)) = (&op.kind, op.result) {
                if self.act.mem(m) && self.l.pushed.contains(&m) && !self.planning {
                    let n = self.e.emit(OpKind::Len(self.fwd[&m]), Ty::USIZE);
                    self.e.effect(OpKind::Push(n));
                }
            }
        }
        if !self.planning {
            for v in self.plan.push.get(&TOP).cloned().unwrap_or_default() {
                let nv = self.fwd[&v];
                self.e.effect(OpKind::Push(nv));
            }
            // Last, so that the reverse sweep pops them first.
            self.push_state(&self.l.snapshots, &[]);
        }
        let results: Vec<Value> = self.ret.iter().map(|r| self.fwd[r]).collect();
        self.e.out.returns = results.iter().map(|v| self.e.out.ty(*v)).collect();
        if !results.is_empty() {
            self.e.effect(OpKind::Return(results));
        }
        let mut rev = Rev::function_like(self.f, &self.e.out.name);
        rev.tape_param = true;
        let aug = std::mem::replace(&mut self.e, Emitter::new(rev)).finish();
        self.aug = Some(aug);
        let avail = self.avail.expect("split");
        for ((&p, &a), &av) in self.f.params.iter().zip(&spec.inputs).zip(avail) {
            let data = self.f.value(p).clone();
            let Some(mut m) = data.ty.mem() else { continue };
            let name = data.name.clone().unwrap_or_default();
            if av != Avail::Absent {
                m.access = cotan_ir::Access::Shared;
                let np = self.e.out.add_param(Ty::Mem(m), name.clone(), data.span);
                self.rmem.insert(p, np);
            }
            if a == Activity::Duplicated {
                m.access = cotan_ir::Access::Mut;
                let dp = self.e.out.add_param(Ty::Mem(m), d_name(&name), data.span);
                self.shadows[0].insert(p, Shadow::Mem(dp));
            }
        }
        // The copies of the snapshot parameters, which the reverse sweep reads instead.
        for &p in self.l.snapshots.iter().rev() {
            let mt = self.f.ty(p).mem().unwrap();
            let copy = match self.zero_array(mt) {
                Some(array) => array,
                None => {
                    // A slice, which the reverse sweep has: a vector of its length.
                    let n = self.e.emit(OpKind::Len(self.rmem[&p]), Ty::USIZE);
                    let z = self.zero(Ty::Scalar(mt.elem));
                    self.e.emit(OpKind::Alloc { len: n, init: z }, Ty::Mem(owned(mt)))
                }
            };
            self.e.out.values[copy.0 as usize].name =
                Some(format!("{}_copy", self.f.value(p).name.as_deref().unwrap_or("p")));
            self.pop_into(copy, Ty::Scalar(mt.elem));
            self.rmem.insert(p, copy);
        }
        let mut seeds = vec![];
        if spec.ret == Some(Activity::Active) {
            for (k, &ty) in self.f.returns.iter().enumerate() {
                if ty.is_float() {
                    let name = if k == 0 { "dret".to_string() } else { format!("dret{k}") };
                    seeds.push(self.e.out.add_param(ty, name, cotan_ir::SpanId::NONE));
                }
            }
        }
        // The fields of the structs the reverse sweep has, and of their shadows.
        for op in &self.f.body.ops {
            let (OpKind::Field { base, name }, Some(r)) = (&op.kind, op.result) else { continue };
            let mut m = self.f.ty(r).mem().unwrap();
            if let Some(&b) = self.rmem.get(base) {
                m.access = cotan_ir::Access::Shared;
                let fv = self.e.emit(OpKind::Field { base: b, name: name.clone() }, Ty::Mem(m));
                self.rmem.insert(r, fv);
            }
            if let Some(Shadow::Mem(s)) = self.shadows[0].get(base).copied() {
                m.access = cotan_ir::Access::Mut;
                let ds = self.e.emit(OpKind::Field { base: s, name: name.clone() }, Ty::Mem(m));
                self.shadows[0].insert(r, Shadow::Mem(ds));
            }
        }
        seeds
    }

    /// Primal memory `m` as the reverse sweep has it, if it has it.
    fn primal_mem(&self, m: Value) -> Option<Value> {
        if self.l.split {
            self.rmem.get(&m).copied()
        } else if self.l.def_region.get(&m) == Some(&TOP) {
            self.fwd.get(&m).copied()
        } else {
            None
        }
    }

    /// Primal memory `m` as the reverse sweep has it, if it has it; a sub-slice (or an
    /// offset) is taken again from its base.
    fn mem_now(&mut self, m: Value) -> Option<Value> {
        if let Some(pm) = self.primal_mem(m) {
            return Some(pm);
        }
        let base = self.view_parts(m)?;
        let base_now = self.mem_now(base)?;
        Some(self.view_again(m, base, base_now, cotan_ir::Access::Shared))
    }

    /// The view `m` (of `base`) again, of `base_now`, with `access`: its other operands are
    /// read in the reverse sweep.
    fn view_again(&mut self, m: Value, base: Value, base_now: Value, access: cotan_ir::Access) -> Value {
        let op = self.l.def_op[&m].kind.clone();
        let kind = remap(&op, |v| if v == base { base_now } else { self.get(v) });
        let mut ty = self.f.ty(m).mem().unwrap();
        ty.access = access;
        self.e.emit(kind, Ty::Mem(ty))
    }

    /// The memory `m` is part of, if it is a view (a sub-slice, a row or an offset).
    fn view_parts(&self, m: Value) -> Option<Value> {
        self.l.def_op.get(&m)?.kind.view_base()
    }

    /// A zeroed array of type `m` (arrays of arrays too), or `None` if `m` has a level
    /// whose size is not in its type.
    fn zero_array(&mut self, m: cotan_ir::MemTy) -> Option<Value> {
        let init = match m.kind.row() {
            Some(row) => self.zero_array(cotan_ir::MemTy { kind: row, ..m })?,
            None => self.zero(Ty::Scalar(m.elem)),
        };
        let Some(cotan_ir::Dim::Array(n)) = m.kind.dim() else { return None };
        let len = self.usize_const(n as i128);
        Some(self.e.emit(OpKind::Alloc { len, init }, Ty::Mem(owned(m))))
    }

    /// A zeroed buffer shaped like `v`, a buffer of `f` made by `Alloc` (for nested memory,
    /// by `Alloc`s of `Alloc`s), or `None` for other memory.
    fn zero_like(&mut self, v: Value) -> Option<Value> {
        let Some(OpKind::Alloc { len, init }) = self.l.def_op.get(&v).map(|o| o.kind.clone()) else { return None };
        let init = match self.f.ty(init).mem() {
            Some(_) => self.zero_like(init)?,
            None => self.zero(self.f.ty(init)),
        };
        let len = self.get(len);
        Some(self.e.emit(OpKind::Alloc { len, init }, self.f.ty(v)))
    }

    /// Active memory parameters without a user shadow get a zeroed local one.
    fn internal_shadows(&mut self) {
        for &p in &self.f.params {
            if self.act.mem(p) && !self.shadows[0].contains_key(&p) {
                let m = self.f.ty(p).mem().unwrap();
                if let MemKind::Nested(..) = m.kind {
                    // An array of arrays passed by value: a zeroed one of its size.
                    if let Some(z) = self.zero_array(m) {
                        self.shadows[0].insert(p, Shadow::Mem(z));
                        continue;
                    }
                }
                if let MemKind::Record(_) | MemKind::Nested(..) | MemKind::Records(..) = m.kind {
                    self.errors.push(AdError {
                        span: self.f.value(p).span,
                        message:
                            "this argument takes part in the derivative, so it needs a shadow: mark it `Duplicated`"
                                .into(),
                    });
                    continue;
                }
                if m.is_ptr() {
                    self.errors.push(AdError {
                        span: self.f.value(p).span,
                        message: "what this pointer points at takes part in the derivative, so it needs a shadow (cotan cannot make one for memory of unknown length): mark it `Duplicated`".into(),
                    });
                    continue;
                }
                let name = d_name(self.f.value(p).name.as_deref().unwrap_or("mem"));
                let zero = self.zero(Ty::Scalar(m.elem));
                let shadow = if m.kind == MemKind::Cell {
                    let var = self.e.out.new_var(m.elem, name);
                    self.e.effect(OpKind::DeclVar { var, init: zero });
                    Shadow::Var(var)
                } else {
                    let Some(pm) = self.primal_mem(p) else {
                        self.errors.push(AdError {
                            span: self.f.value(p).span,
                            message: "cotan cannot differentiate this call yet: the callee uses this argument as scratch memory for derivatives, but the caller's buffer no longer exists when the derivative runs; create the buffer at the top level of the calling function".into(),
                        });
                        continue;
                    };
                    let len = self.e.emit(OpKind::Len(pm), Ty::USIZE);
                    Shadow::Mem(self.e.emit(OpKind::Alloc { len, init: zero }, Ty::Mem(owned(m))))
                };
                self.shadows[0].insert(p, shadow);
            }
        }
    }

    fn zero(&mut self, ty: Ty) -> Value {
        self.e.build(|b| crate::rules::zero(b, ty))
    }

    fn usize_const(&mut self, n: i128) -> Value {
        self.e.emit(OpKind::Const(Const::Int(n)), Ty::USIZE)
    }

    fn dvar_of(&mut self, var: Var) -> Var {
        if let Some(d) = self.dvar.get(&var) {
            return *d;
        }
        let data = self.f.var(var).clone();
        let d = self.e.out.new_var(data.ty, d_name(&data.name));
        self.e.out.sums.push(d);
        self.dvar.insert(var, d);
        d
    }

    // ---- forward sweep ----

    fn forward_region(&mut self, r: &Region) -> Region {
        self.e.push_region();
        for op in &r.ops {
            self.forward_op(op);
        }
        if !self.planning {
            let id = self.l.id(r);
            // The buffers this body's reverse reads again, as the body leaves them.
            let restored = self.plan.restore.get(&id).cloned().unwrap_or_default();
            self.push_state(&restored, &[]);
            for v in self.plan.push.get(&id).cloned().unwrap_or_default() {
                let nv = self.fwd[&v];
                self.e.effect(OpKind::Push(nv));
            }
            // The counters declared here, as they are at the end: where their copies start.
            for var in self.counters_declared_in(r) {
                let n = self.e.emit(OpKind::GetVar(var), Ty::Scalar(self.f.var(var).ty));
                self.e.effect(OpKind::Push(n));
            }
        }
        self.e.pop_region()
    }

    fn new_result(&mut self, v: Value) -> Value {
        let data = self.f.value(v).clone();
        let nv = self.e.out.new_value(data.ty, data.name, data.span);
        self.fwd.insert(v, nv);
        nv
    }

    /// True for loops whose reverse needs an iteration count.
    fn counted(&self, op: &Op) -> bool {
        self.act.op_is_active(self.f, op) && matches!(op.kind, OpKind::While { .. } | OpKind::For { exit: Some(_), .. })
    }

    fn forward_op(&mut self, op: &Op) {
        self.e.span = op.span;
        if !self.replay_skip.is_empty() {
            if let OpKind::Store { mem, .. } = &op.kind {
                if self.replay_skip.contains(&self.mem_root(*mem)) {
                    return;
                }
            }
            // (And the read and the sum of an accumulation into an output: the read cannot
            // fail, the primal's loop made it at the same index.)
            if op.result.is_some_and(|r| self.replay_skip_values.contains(&r)) {
                return;
            }
        }
        if let Some(c) = self.checkpoint(op, true) {
            self.forward_checkpointed(op, c);
            return;
        }
        if self.par_loop(op) {
            self.forward_par(op);
            return;
        }
        if let OpKind::VariantField { value, .. } = &op.kind {
            if self.act.mem(*value) {
                self.errors.push(AdError { span: op.span, message: "cotan reads the fields of enum variants as constants, but this enum carries derivatives; mark it `Const`".into() });
            }
        }
        let counter = self.counted(op).then(|| {
            let var = self.e.out.new_var(Scalar::Usize, "iterations");
            let z = self.usize_const(0);
            self.e.effect(OpKind::DeclVar { var, init: z });
            var
        });
        let kind = match &op.kind {
            OpKind::If { cond, then_region, else_region } => {
                let t = self.forward_region(then_region);
                let e = self.forward_region(else_region);
                OpKind::If { cond: self.fwd[cond], then_region: t, else_region: e }
            }
            OpKind::For { index, lo, hi, step, inclusive, reverse, body, exit } => {
                let ni = self.new_result(*index);
                let mut body = self.forward_region(body);
                self.count(counter, &mut body);
                OpKind::For {
                    index: ni,
                    lo: self.fwd[lo],
                    hi: self.fwd[hi],
                    step: step.map(|s| self.fwd[&s]),
                    inclusive: *inclusive,
                    reverse: *reverse,
                    body,
                    exit: *exit,
                }
            }
            OpKind::While { cond_region, cond, body, exit } => {
                let c = self.forward_region(cond_region);
                let mut body = self.forward_region(body);
                self.count(counter, &mut body);
                OpKind::While { cond_region: c, cond: self.fwd[cond], body, exit: *exit }
            }
            OpKind::Return(vals) => {
                self.ret = vals.clone();
                return;
            }
            OpKind::Call { callee, args, outs, .. } if self.act.op_is_active(self.f, op) => {
                // The callee's augmented forward sweep records what its reverse sweep needs.
                let site = self.call_site(op, Need::Augmented, callee, args, outs);
                match self.link(&site, op) {
                    Some(name) => OpKind::Call {
                        callee: name,
                        args: args.iter().map(|&(a, m)| (self.fwd[&a], m)).collect(),
                        outs: outs.clone(),
                        tape: true,
                    },
                    None => remap(&op.kind, |v| self.fwd[&v]),
                }
            }
            k => remap(k, |v| self.fwd[&v]),
        };
        let result = op.result.map(|r| self.new_result(r));
        self.e.push_op(Op { kind, result, span: op.span });
        if let (OpKind::Field { base, name }, Some(r), false) = (&op.kind, op.result, self.l.split) {
            // The shadow of a field is the same field of the shadow.
            if let Some(Shadow::Mem(s)) = self.shadows[0].get(base).copied() {
                let mut m = self.f.ty(r).mem().unwrap();
                m.access = cotan_ir::Access::Mut;
                let ds = self.e.emit(OpKind::Field { base: s, name: name.clone() }, Ty::Mem(m));
                self.shadows[0].insert(r, Shadow::Mem(ds));
            }
        }
        if let Some(var) = counter {
            let n = self.e.emit(OpKind::GetVar(var), Ty::USIZE);
            if self.in_top_region() {
                self.counts.insert(op as *const Op, n);
            } else {
                self.e.effect(OpKind::Push(n));
            }
        }
    }

    /// In the body's top level of a combined derivative, whose values the reverse sweep has.
    fn in_top_region(&self) -> bool {
        !self.l.split && self.e.depth() == 1
    }

    /// Appends `counter += 1` to a loop body.
    fn count(&mut self, counter: Option<Var>, body: &mut Region) {
        let Some(var) = counter else { return };
        self.e.push_region();
        let n = self.e.emit(OpKind::GetVar(var), Ty::USIZE);
        let one = self.usize_const(1);
        let n1 = self.e.emit(OpKind::Binary(BinOp::Add, n, one), Ty::USIZE);
        self.e.effect(OpKind::SetVar(var, n1));
        body.ops.extend(self.e.pop_region().ops);
    }

    // ---- checkpointed loops (`cotan::checkpoint`) ----

    /// The checkpoint annotation of `op`, if it is an active `for` loop that has one and can
    /// be checkpointed; `report` reports one that cannot (once: from the forward sweep).
    fn checkpoint(&mut self, op: &Op, report: bool) -> Option<Checkpoint> {
        let OpKind::For { index, .. } = &op.kind else { return None };
        let c = self.f.checkpoints.iter().find(|c| c.index == *index).copied()?;
        if !self.act.op_is_active(self.f, op) {
            // Nothing to record: the loop runs as it is.
            return None;
        }
        let at_top = matches!(self.l.op_at.get(&(op as *const Op)), Some((TOP, _)));
        if self.l.split || !at_top {
            if report {
                self.errors.push(AdError {
                    span: c.span,
                    message: if self.l.split {
                        "cotan checkpoints loops in the function with `#[autodiff_reverse]` only, not in a function it calls nor in `autodiff_split`'s functions (their reverse sweep cannot rewrite the primal state); move the loop, or the annotation, into the function with the attribute"
                    } else {
                        "cotan checkpoints loops at the top level of the function, not inside another loop or a branch (an early `return`, `?` or `let .. else` before the loop puts the rest of the function in a branch); move the loop (or the annotation) to the top level, and an early exit before it to after it (`if n == 0 { return x0; }` after a loop that then runs zero times)"
                    }
                    .into(),
                });
            }
            return None;
        }
        match self.carried(op) {
            Ok(_) => Some(c),
            Err(e) => {
                if report {
                    self.errors.push(e);
                }
                None
            }
        }
    }

    /// The state a checkpointed loop carries from one iteration to the next, which its
    /// reverse snapshots and restores: the memory defined outside it that its body writes
    /// (whole buffers, at the top level) and the variables declared outside it that its body
    /// sets; and what the body only reads but statements after the loop change, which the
    /// recomputation must see as the loop saw it.
    fn carried(&self, op: &Op) -> Result<(Vec<Value>, Vec<Var>), AdError> {
        let OpKind::For { body, .. } = &op.kind else { unreachable!("checkpointed loops are `for` loops") };
        let after = self.after_loop(op);
        // (memory, where, written, by `push`)
        let mut used = vec![];
        let mut set = vec![];
        let mut read = vec![];
        let mut declared = HashSet::default();
        body.walk(&mut |o: &Op| {
            match &o.kind {
                k if k.resized().is_some() => used.extend(k.resized().map(|m| (m, o.span, true, true))),
                OpKind::Store { mem, .. } | OpKind::Fill { mem, .. } => used.push((*mem, o.span, true, false)),
                OpKind::Call { args, .. } => used.extend(args.iter().map(|a| (a.0, o.span, a.1, false))),
                OpKind::DeclVar { var, .. } => {
                    declared.insert(*var);
                }
                OpKind::SetVar(var, _) => set.push(*var),
                OpKind::GetVar(var) => read.push(*var),
                _ => {}
            }
            for u in o.kind.operands() {
                if self.f.ty(u).mem().is_some() {
                    used.push((u, o.span, false, false));
                }
            }
        });
        // Variables and memory that top-level statements after the loop write.
        let mut set_after = HashSet::default();
        for later in self.f.body.ops.iter().skip(after) {
            let mut visit = |o: &Op| {
                if let OpKind::SetVar(var, _) = &o.kind {
                    set_after.insert(*var);
                }
            };
            visit(later);
            for r in later.kind.regions() {
                r.walk(&mut visit);
            }
        }
        let written_after = |m: Value| self.l.last_write.get(&m).is_some_and(|w| *w >= after);
        let mut mems: Vec<Value> = vec![];
        for (m, span, writes, push) in used {
            // The memory outside the loop that `m` is (part of).
            let mut cur = m;
            while self.l.def_region.get(&cur) != Some(&TOP) {
                match self.view_parts(cur) {
                    Some(b) => cur = b,
                    None => break,
                }
            }
            if self.l.def_region.get(&cur) != Some(&TOP) || !(writes || written_after(cur)) {
                // Made in the body, or read and unchanged until the reverse sweep.
                continue;
            }
            let root = loop {
                let mt = self.f.ty(cur).mem().unwrap();
                if matches!(mt.kind, MemKind::Slice | MemKind::Vec | MemKind::Array(_) | MemKind::Cell) {
                    break cur;
                }
                match (&self.l.def_op.get(&cur).map(|o| &o.kind), mt.kind) {
                    (Some(OpKind::Slice { base, .. } | OpKind::Offset { base, .. }), _) => cur = *base,
                    (_, MemKind::Ptr | MemKind::ArrayPtr(_)) => {
                        return Err(AdError {
                            span,
                            message: if writes {
                                "cotan cannot checkpoint a loop that writes through a raw pointer: it cannot snapshot memory of unknown length; pass a slice"
                            } else {
                                "cotan cannot checkpoint a loop that reads through a raw pointer memory that is written after the loop: it cannot snapshot memory of unknown length; pass a slice"
                            }
                            .into(),
                        });
                    }
                    _ => {
                        return Err(AdError {
                            span,
                            message: if writes {
                                "cotan checkpoints loops whose state is numbers, slices, arrays and vectors of numbers (and such fields of structs); this writes nested memory (rows of a matrix, the array fields of a slice of structs) or a whole struct, which it cannot snapshot yet; keep the loop's state in slices or vectors of numbers (one per field: `xs`, `vs`)"
                            } else {
                                "cotan checkpoints loops whose state is numbers, slices, arrays and vectors of numbers (and such fields of structs); this reads nested memory (rows of a matrix, the array fields of a slice of structs) or a whole struct that is written after the loop, which it cannot snapshot yet; keep that state in slices or vectors of numbers (one per field)"
                            }
                            .into(),
                        });
                    }
                }
            };
            if push || (self.l.pushed.contains(&root) && written_after(root)) {
                return Err(AdError {
                    span,
                    message: if push {
                        "cotan cannot checkpoint a loop that pushes to a vector made outside it: its snapshots have a fixed size; give the vector its final length before the loop"
                    } else {
                        "cotan cannot checkpoint a loop that uses a vector which grows by `push` after the loop: its snapshots have a fixed size; push after the loop to another vector"
                    }
                    .into(),
                });
            }
            if !mems.contains(&root) {
                mems.push(root);
            }
        }
        let mut vars = vec![];
        for v in set.into_iter().chain(read.into_iter().filter(|v| set_after.contains(v))) {
            if !declared.contains(&v) && !vars.contains(&v) {
                vars.push(v);
            }
        }
        Ok((mems, vars))
    }

    /// Pushes the loop-carried state on the tape.
    fn push_state(&mut self, mems: &[Value], vars: &[Var]) {
        for &m in mems {
            let pm = self.fwd[&m];
            let elem = Ty::Scalar(self.f.ty(m).mem().unwrap().elem);
            if self.f.ty(m).mem().unwrap().kind == MemKind::Cell {
                let x = self.e.emit(OpKind::Load { mem: pm, index: None }, elem);
                self.e.effect(OpKind::Push(x));
                continue;
            }
            let n = self.e.emit(OpKind::Len(pm), Ty::USIZE);
            self.index_loop(n, false, |s, i| {
                let x = s.e.emit(OpKind::Load { mem: pm, index: Some(i) }, elem);
                s.e.effect(OpKind::Push(x));
            });
        }
        for &v in vars {
            let x = self.e.emit(OpKind::GetVar(v), Ty::Scalar(self.f.var(v).ty));
            self.e.effect(OpKind::Push(x));
        }
    }

    /// Pops the loop-carried state `push_state` pushed back into the primal memory and variables.
    fn pop_state(&mut self, mems: &[Value], vars: &[Var]) {
        for &v in vars.iter().rev() {
            let x = self.e.emit(OpKind::Pop, Ty::Scalar(self.f.var(v).ty));
            self.e.effect(OpKind::SetVar(v, x));
        }
        for &m in mems.iter().rev() {
            let pm = self.fwd[&m];
            let elem = Ty::Scalar(self.f.ty(m).mem().unwrap().elem);
            if self.f.ty(m).mem().unwrap().kind == MemKind::Cell {
                let x = self.e.emit(OpKind::Pop, elem);
                self.e.effect(OpKind::Store { mem: pm, index: None, value: x });
                continue;
            }
            self.pop_into(pm, elem);
        }
    }

    /// Pops buffer `m`'s elements, last first (undoes `push_state`'s pushes of a buffer).
    fn pop_into(&mut self, m: Value, elem: Ty) {
        let n = self.e.emit(OpKind::Len(m), Ty::USIZE);
        self.index_loop(n, true, |s, i| {
            let x = s.e.emit(OpKind::Pop, elem);
            s.e.effect(OpKind::Store { mem: m, index: Some(i), value: x });
        });
    }

    /// The primal of `r`, recording nothing (calls run the primal callee).
    fn primal_region(&mut self, r: &Region) -> Region {
        self.e.push_region();
        for op in &r.ops {
            self.primal_op(op);
        }
        self.e.pop_region()
    }

    fn primal_op(&mut self, op: &Op) {
        self.e.span = op.span;
        let kind = match &op.kind {
            OpKind::If { cond, then_region, else_region } => {
                let t = self.primal_region(then_region);
                let e = self.primal_region(else_region);
                OpKind::If { cond: self.fwd[cond], then_region: t, else_region: e }
            }
            OpKind::For { index, lo, hi, step, inclusive, reverse, body, exit } => {
                let ni = self.new_result(*index);
                let body = self.primal_region(body);
                OpKind::For {
                    index: ni,
                    lo: self.fwd[lo],
                    hi: self.fwd[hi],
                    step: step.map(|s| self.fwd[&s]),
                    inclusive: *inclusive,
                    reverse: *reverse,
                    body,
                    exit: *exit,
                }
            }
            OpKind::While { cond_region, cond, body, exit } => {
                let c = self.primal_region(cond_region);
                let body = self.primal_region(body);
                OpKind::While { cond_region: c, cond: self.fwd[cond], body, exit: *exit }
            }
            k => remap(k, |v| self.fwd[&v]),
        };
        let result = op.result.map(|r| self.new_result(r));
        self.e.push_op(Op { kind, result, span: op.span });
    }

    /// The forward sweep of a checkpointed loop: its primal, pushing the loop-carried state
    /// at the start of every `every`-th iteration.
    fn forward_checkpointed(&mut self, op: &Op, c: Checkpoint) {
        let OpKind::For { index, lo, hi, body, .. } = &op.kind else { unreachable!("a `for` loop") };
        let Ok((mems, vars)) = self.carried(op) else { return };
        let every = match c.schedule {
            Schedule::Every(k) => k,
            Schedule::Binomial(snapshots) => return self.forward_binomial(op, snapshots, &mems, &vars),
        };
        let ity = self.f.ty(*index);
        let (nlo, nhi) = (self.fwd[lo], self.fwd[hi]);
        let ni = self.new_result(*index);
        self.e.push_region();
        let t = self.e.emit(OpKind::Binary(BinOp::Sub, ni, nlo), ity);
        let k = self.e.emit(OpKind::Const(Const::Int(every as i128)), ity);
        let r = self.e.emit(OpKind::Binary(BinOp::Rem, t, k), ity);
        let zero = self.zero(ity);
        let start = self.e.emit(OpKind::Cmp(CmpOp::Eq, r, zero), Ty::BOOL);
        self.e.push_region();
        self.push_state(&mems, &vars);
        let snap = self.e.pop_region();
        self.e.effect(OpKind::If { cond: start, then_region: snap, else_region: Region::default() });
        let body = self.primal_region(body);
        let mut region = self.e.pop_region();
        region.ops.extend(body.ops);
        self.e.effect(OpKind::For {
            index: ni,
            lo: nlo,
            hi: nhi,
            step: None,
            inclusive: false,
            reverse: false,
            body: region,
            exit: None,
        });
    }

    /// The reverse of a checkpointed loop: for each segment of `every` iterations, last
    /// first, restores its snapshot, runs its iterations again recording them, and goes back
    /// through them; then puts back the state the loop left. With no checkpoint, the reverse
    /// of a parallel loop (`reverse_each`).
    fn reverse_checkpointed(&mut self, op: &Op, c: Option<Checkpoint>) {
        let carried = if c.is_some() { self.carried(op) } else { self.par_carried(op) };
        let Ok((mems, vars)) = carried else { return };
        // The state after the loop, which the recomputation overwrites. (Not for a parallel
        // loop's buffers that the function allocates: their next readers in the reverse
        // sweep are the replays of parallel loops, which restore their own snapshots first;
        // every other use of them there is of values saved, since the loop writes them.)
        let mut finals = vec![];
        for &m in &mems {
            if c.is_none() && self.local(m) {
                finals.push(m);
                continue;
            }
            let pm = self.fwd[&m];
            let mt = self.f.ty(m).mem().unwrap();
            let elem = Ty::Scalar(mt.elem);
            if mt.kind == MemKind::Cell {
                finals.push(self.e.emit(OpKind::Load { mem: pm, index: None }, elem));
                continue;
            }
            let n = self.e.emit(OpKind::Len(pm), Ty::USIZE);
            let z = self.zero(elem);
            let bt = cotan_ir::MemTy { elem: mt.elem, kind: MemKind::Vec, access: cotan_ir::Access::Owned };
            let buf = self.e.emit(OpKind::Alloc { len: n, init: z }, Ty::Mem(bt));
            self.e.out.values[buf.0 as usize].name =
                Some(format!("{}_end", self.f.value(m).name.as_deref().unwrap_or("state")));
            self.index_loop(n, false, |s, i| {
                let x = s.e.emit(OpKind::Load { mem: pm, index: Some(i) }, elem);
                s.e.effect(OpKind::Store { mem: buf, index: Some(i), value: x });
            });
            finals.push(buf);
        }
        let vars_end: Vec<Value> =
            vars.iter().map(|&v| self.e.emit(OpKind::GetVar(v), Ty::Scalar(self.f.var(v).ty))).collect();
        match c.map(|c| c.schedule) {
            Some(Schedule::Every(k)) => self.reverse_every(op, k, &mems, &vars),
            Some(Schedule::Binomial(_)) => self.reverse_binomial(op, &mems, &vars),
            None => self.reverse_each(op, &mems, &vars),
        }
        // The state the loop left.
        for (&m, &fin) in mems.iter().zip(&finals) {
            if fin == m {
                continue;
            }
            let pm = self.fwd[&m];
            let mt = self.f.ty(m).mem().unwrap();
            if mt.kind == MemKind::Cell {
                self.e.effect(OpKind::Store { mem: pm, index: None, value: fin });
                continue;
            }
            let elem = Ty::Scalar(mt.elem);
            let n = self.e.emit(OpKind::Len(pm), Ty::USIZE);
            self.index_loop(n, false, |s, i| {
                let x = s.e.emit(OpKind::Load { mem: fin, index: Some(i) }, elem);
                s.e.effect(OpKind::Store { mem: pm, index: Some(i), value: x });
            });
        }
        for (&v, &x) in vars.iter().zip(&vars_end) {
            self.e.effect(OpKind::SetVar(v, x));
        }
    }

    // ---- parallel loops (`cotan::par` in a `#[cotan::kernel]`) ----

    /// Whether `op` is a parallel loop (`Function::par_loops`) whose derivative runs in
    /// parallel: an active plain `for` over `lo..hi` of a function with both sweeps, not
    /// checkpointed, at the top level or inside plain loops and branches (`par_nesting_ok`),
    /// whose state `carried` can snapshot. Others are reversed as ordinary loops, in order.
    fn par_loop(&self, op: &Op) -> bool {
        let OpKind::For { index, step: None, inclusive: false, reverse: false, exit: None, .. } = &op.kind else {
            return false;
        };
        self.f.par_loops.contains(index)
            && !self.f.checkpoints.iter().any(|c| c.index == *index)
            && self.act.op_is_active(self.f, op)
            && !self.l.split
            && self.par_nesting_ok(op)
            && self.carried(op).is_ok()
    }

    /// The first top-level position whose writes come after loop `op`: the next statement
    /// for a loop at the top level; for a parallel loop inside another loop, the top-level
    /// statement holding it, whose later iterations come after the loop too.
    fn after_loop(&self, op: &Op) -> usize {
        match self.l.op_at.get(&(op as *const Op)) {
            Some(&(TOP, k)) => k + 1,
            _ => self.enclosing(op).map_or(usize::MAX, |(k, _)| k),
        }
    }

    /// The top-level statement that holds `op` (its index in the function's body) and the
    /// statements around `op` inside it, outermost first; `None` if `op` is not in the body.
    fn enclosing<'f>(&'f self, op: &Op) -> Option<(usize, Vec<&'f Op>)> {
        fn find<'f>(r: &'f Region, op: &Op, path: &mut Vec<&'f Op>) -> bool {
            for o in &r.ops {
                if std::ptr::eq(o, op) {
                    return true;
                }
                path.push(o);
                if o.kind.regions().into_iter().any(|sub| find(sub, op, path)) {
                    return true;
                }
                path.pop();
            }
            false
        }
        let mut path = vec![];
        if !find(&self.f.body, op, &mut path) {
            return None;
        }
        let top = match path.first() {
            Some(first) => self.f.body.ops.iter().position(|o| std::ptr::eq(o, *first))?,
            None => self.f.body.ops.iter().position(|o| std::ptr::eq(o, op))?,
        };
        Some((top, path))
    }

    /// Whether a parallel loop sits where its reverse can run in parallel: at the top level,
    /// or inside plain `for` loops (a time-stepping loop) and branches, taking from outside
    /// only memory of the top level (its snapshots are pushed once per run of the loop, and
    /// the numbers it takes from the enclosing statements are saved for the reverse sweep as
    /// any other value).
    fn par_nesting_ok(&self, op: &Op) -> bool {
        let Some((_, around)) = self.enclosing(op) else { return false };
        let plain = around.iter().all(|o| match &o.kind {
            OpKind::For { index, .. } => {
                !self.f.checkpoints.iter().any(|c| c.index == *index) && !self.f.par_loops.contains(index)
            }
            OpKind::If { .. } => true,
            _ => false,
        });
        plain
            && self
                .free_values(op)
                .iter()
                .all(|v| self.f.ty(*v).mem().is_none() || self.l.def_region.get(v) == Some(&TOP))
    }

    /// The values a loop's body uses that are defined outside it.
    fn free_values(&self, op: &Op) -> Vec<Value> {
        let OpKind::For { body, .. } = &op.kind else { return vec![] };
        let mut inside = HashSet::default();
        body.walk(&mut |o: &Op| {
            inside.extend(o.result);
            if let OpKind::For { index, .. } = &o.kind {
                inside.insert(*index);
            }
        });
        if let OpKind::For { index, .. } = &op.kind {
            inside.insert(*index);
        }
        let mut free = vec![];
        body.walk(&mut |o: &Op| {
            for u in o.kind.operands() {
                if !inside.contains(&u) && !free.contains(&u) {
                    free.push(u);
                }
            }
        });
        free
    }

    /// The state a parallel loop's reverse snapshots: what `carried` says, less the memory
    /// the body writes (at the loop's index, or by accumulation) but never reads, its
    /// outputs, unless the caller sees it and a statement after the loop writes it: the
    /// outputs hold their final values after the loop, and the reverse sweep's replays of
    /// its iterations do not write them.
    fn par_carried(&self, op: &Op) -> Result<(Vec<Value>, Vec<Var>), AdError> {
        let (mut mems, vars) = self.carried(op)?;
        let OpKind::For { body, .. } = &op.kind else { unreachable!("a `for` loop") };
        // The reads of accumulations (`y[e] += w`) read nothing the iteration uses.
        let added = self.accumulation_loads(body);
        let mut read = HashSet::default();
        body.walk(&mut |o: &Op| {
            let written = match &o.kind {
                OpKind::Store { mem, .. } | OpKind::Fill { mem, .. } => Some(*mem),
                OpKind::Len(_) => return,
                OpKind::Load { .. } if o.result.is_some_and(|r| added.contains(&r)) => return,
                _ => None,
            };
            for u in o.kind.operands() {
                if Some(u) != written && self.f.ty(u).mem().is_some() {
                    read.insert(self.mem_root(u));
                }
            }
        });
        // (Unless a statement after the loop writes it: the reverse sweep keeps the memory as
        // the function left it, which the runs would not.)
        let after = self.after_loop(op);
        // (A buffer the function allocates is not put back to its final state in the reverse
        // sweep either way: see `reverse_checkpointed`.)
        mems.retain(|m| read.contains(m) || (!self.local(*m) && self.l.last_write.get(m).is_some_and(|w| *w >= after)));
        Ok((mems, vars))
    }

    /// Whether `m` is a buffer the function allocates (its caller never sees it).
    fn local(&self, m: Value) -> bool {
        matches!(self.l.def_op.get(&m).map(|o| &o.kind), Some(OpKind::Alloc { .. }))
    }

    /// The memory `m` is part of (through views, sub-slices and offsets).
    fn mem_root(&self, mut m: Value) -> Value {
        while let Some(b) = self.view_parts(m).or_else(|| match self.l.def_op.get(&m).map(|o| &o.kind) {
            Some(OpKind::Slice { base, .. } | OpKind::Offset { base, .. }) => Some(*base),
            _ => None,
        }) {
            m = b;
        }
        m
    }

    /// For an accumulation `y[e] += w` (a store of `Layout::accumulations`): the load of
    /// `y[e]` and the sum stored.
    fn accumulation_parts(&self, store: &Op) -> Option<(Value, Value)> {
        let (OpKind::Store { value, .. }, Some((e, _))) =
            (&store.kind, self.l.accumulations.get(&(store as *const Op)))
        else {
            return None;
        };
        let OpKind::Binary(_, a, b) = self.l.def_op.get(value)?.kind else { return None };
        Some((if a == *e { b } else { a }, *value))
    }

    /// The loads of `body`'s accumulations (`y[e] += w`: the load of `y[e]`).
    fn accumulation_loads(&self, body: &Region) -> HashSet<Value> {
        let mut added = HashSet::default();
        body.walk(&mut |o: &Op| added.extend(self.accumulation_parts(o).map(|(load, _)| load)));
        added
    }

    /// The loads and sums of `body`'s accumulations into `replay_skip`'s buffers.
    fn output_accumulations(&self, body: &Region) -> HashSet<Value> {
        let mut skip = HashSet::default();
        body.walk(&mut |o: &Op| {
            let OpKind::Store { mem, .. } = &o.kind else { return };
            if self.replay_skip.contains(&self.mem_root(*mem)) {
                skip.extend(self.accumulation_parts(o).map(|(load, sum)| [load, sum]).into_iter().flatten());
            }
        });
        skip
    }

    /// The buffers from outside a parallel loop that its body writes (by element or by
    /// accumulation) but that `mems`, its snapshot, leaves out: they hold, after the loop,
    /// what they will hold at the end, and the replays in the reverse sweep leave them so.
    fn par_outputs(&self, op: &Op, mems: &[Value]) -> HashSet<Value> {
        let OpKind::For { body, .. } = &op.kind else { return HashSet::default() };
        let mut inside = HashSet::default();
        body.walk(&mut |o: &Op| inside.extend(o.result));
        let mut out = HashSet::default();
        body.walk(&mut |o: &Op| {
            if let OpKind::Store { mem, .. } = &o.kind {
                let root = self.mem_root(*mem);
                if !inside.contains(&root) && !mems.contains(&root) {
                    out.insert(root);
                }
            }
        });
        out
    }

    /// The forward sweep of a parallel loop: a snapshot of the state the loop writes, then
    /// its primal, recording nothing, itself a parallel loop.
    fn forward_par(&mut self, op: &Op) {
        let OpKind::For { index, lo, hi, body, .. } = &op.kind else { unreachable!("a `for` loop") };
        let Ok((mems, vars)) = self.par_carried(op) else { return };
        self.push_state(&mems, &vars);
        let (nlo, nhi) = (self.fwd[lo], self.fwd[hi]);
        let ni = self.new_result(*index);
        let body = self.primal_region(body);
        // (At the loop's source, for validation mode's messages.)
        self.e.span = op.span;
        self.e.effect(OpKind::For {
            index: ni,
            lo: nlo,
            hi: nhi,
            step: None,
            inclusive: false,
            reverse: false,
            body,
            exit: None,
        });
        self.e.out.par_loops.push(ni);
    }

    /// The reverse of a parallel loop: the snapshot restored, then for each iteration, in
    /// parallel, its forward sweep recording it followed at once by its reverse. The
    /// iterations are independent (the kernel's rules), so each needs its own record only:
    /// codegen gives each the thread's tape from the pool.
    fn reverse_each(&mut self, op: &Op, mems: &[Value], vars: &[Var]) {
        let OpKind::For { index, lo, hi, body, .. } = &op.kind else { unreachable!("a `for` loop") };
        let (lo, hi) = (self.get(*lo), self.get(*hi));
        self.zeroed.clear();
        self.pop_state(mems, vars);
        let ni = self.new_result(*index);
        // The numbers the body takes from enclosing statements (of a loop around this one):
        // as the reverse sweep has them there.
        let mut outer = vec![];
        for v in self.free_values(op) {
            if self.f.ty(v).mem().is_none() && self.l.def_region.get(&v).is_some_and(|r| *r != TOP) {
                let now = self.get(v);
                outer.push((v, self.fwd.insert(v, now)));
            }
        }
        // (The loop's outputs hold their final values already: the replay writes them no more.)
        self.replay_skip = self.par_outputs(op, mems);
        self.replay_skip_values = self.output_accumulations(body);
        let mut each = self.forward_region(body);
        self.replay_skip.clear();
        self.replay_skip_values.clear();
        for (v, was) in outer {
            match was {
                Some(w) => self.fwd.insert(v, w),
                None => self.fwd.remove(&v),
            };
        }
        let mut back = self.reverse_region(body, vec![(*index, ni)]);
        forward_pushes_to_pops(&mut each, &mut back);
        each.ops.extend(back.ops);
        // The adjoints of the body's own variables are zero at the start of every iteration
        // (the reverse of their declaration zeroes them): said at the start, so that each
        // iteration has its own.
        let mut declared = vec![];
        body.walk(&mut |o: &Op| {
            if let OpKind::DeclVar { var, .. } = o.kind {
                declared.push(var);
            }
        });
        self.e.push_region();
        for var in declared {
            if let Some(&d) = self.dvar.get(&var) {
                let z = self.zero(Ty::Scalar(self.e.out.var(d).ty));
                self.e.effect(OpKind::SetVar(d, z));
            }
        }
        let mut reset = self.e.pop_region();
        reset.ops.append(&mut each.ops);
        each.ops = reset.ops;
        self.zeroed.clear();
        self.e.span = op.span;
        self.e.effect(OpKind::For {
            index: ni,
            lo,
            hi,
            step: None,
            inclusive: false,
            reverse: false,
            body: each,
            exit: None,
        });
        self.e.out.par_loops.push(ni);
    }

    /// The segments of `every` iterations, last first: each restored, run again recording
    /// it, and gone back through.
    fn reverse_every(&mut self, op: &Op, every: u64, mems: &[Value], vars: &[Var]) {
        let OpKind::For { index, lo, hi, body, .. } = &op.kind else { unreachable!("a `for` loop") };
        let ity = self.f.ty(*index);
        let (lo, hi) = (self.get(*lo), self.get(*hi));
        // Segments: ⌈(hi - lo) / every⌉ of them (none if hi <= lo).
        let k = self.e.emit(OpKind::Const(Const::Int(every as i128)), ity);
        let zero = self.zero(ity);
        let one = self.e.emit(OpKind::Const(Const::Int(1)), ity);
        let nonempty = self.e.emit(OpKind::Cmp(CmpOp::Gt, hi, lo), Ty::BOOL);
        let top = self.e.emit(OpKind::Select(nonempty, hi, lo), ity);
        let n = self.e.emit(OpKind::Binary(BinOp::Sub, top, lo), ity);
        let q = self.e.emit(OpKind::Binary(BinOp::Div, n, k), ity);
        let rem = self.e.emit(OpKind::Binary(BinOp::Rem, n, k), ity);
        let partial = self.e.emit(OpKind::Cmp(CmpOp::Ne, rem, zero), Ty::BOOL);
        let extra = self.e.emit(OpKind::Select(partial, one, zero), ity);
        let segments = self.e.emit(OpKind::Binary(BinOp::Add, q, extra), ity);
        let seg = self.e.out.new_value(ity, Some("segment".into()), op.span);
        self.zeroed.clear();
        self.e.push_region();
        self.pop_state(mems, vars);
        let off = self.e.emit(OpKind::Binary(BinOp::Mul, seg, k), ity);
        let a = self.e.emit(OpKind::Binary(BinOp::Add, lo, off), ity);
        let room = self.e.emit(OpKind::Binary(BinOp::Sub, top, a), ity);
        let whole = self.e.emit(OpKind::Cmp(CmpOp::Gt, room, k), Ty::BOOL);
        let len = self.e.emit(OpKind::Select(whole, k, room), ity);
        let b = self.e.emit(OpKind::Binary(BinOp::Add, a, len), ity);
        // The segment's iterations again, recording them.
        let ni = self.new_result(*index);
        let fbody = self.forward_region(body);
        self.e.effect(OpKind::For {
            index: ni,
            lo: a,
            hi: b,
            step: None,
            inclusive: false,
            reverse: false,
            body: fbody,
            exit: None,
        });
        // And back through them.
        let ri = self.e.out.new_value(ity, self.f.value(*index).name.clone(), op.span);
        let rbody = self.reverse_region(body, vec![(*index, ri)]);
        self.e.effect(OpKind::For {
            index: ri,
            lo: a,
            hi: b,
            step: None,
            inclusive: false,
            reverse: true,
            body: rbody,
            exit: None,
        });
        let seg_body = self.e.pop_region();
        self.zeroed.clear();
        self.e.effect(OpKind::For {
            index: seg,
            lo: zero,
            hi: segments,
            step: None,
            inclusive: false,
            reverse: true,
            body: seg_body,
            exit: None,
        });
    }

    /// The number of iterations of `lo..hi`, as a `usize`.
    fn trip_count(&mut self, lo: Value, hi: Value, ity: Ty) -> Value {
        let nonempty = self.e.emit(OpKind::Cmp(CmpOp::Gt, hi, lo), Ty::BOOL);
        let top = self.e.emit(OpKind::Select(nonempty, hi, lo), ity);
        let n = self.e.emit(OpKind::Binary(BinOp::Sub, top, lo), ity);
        if ity == Ty::USIZE {
            n
        } else {
            self.e.emit(OpKind::Cast(n), Ty::USIZE)
        }
    }

    /// The loop's index for iteration number `t` (a `usize`): `lo + t`.
    fn index_of(&mut self, op: &Op, t: Value) -> Value {
        let OpKind::For { index, lo, .. } = &op.kind else { unreachable!("a `for` loop") };
        let ity = self.f.ty(*index);
        let t = if ity == Ty::USIZE { t } else { self.e.emit(OpKind::Cast(t), ity) };
        let lo = self.fwd[lo];
        let i = self.e.emit(OpKind::Binary(BinOp::Add, lo, t), ity);
        self.e.out.values[i.0 as usize].name = self.f.value(*index).name.clone();
        i
    }

    /// The primal of iterations `from..to` (iteration numbers), recording nothing.
    fn primal_steps(&mut self, op: &Op, from: Value, to: Value) {
        let OpKind::For { index, body, .. } = &op.kind else { unreachable!("a `for` loop") };
        let t = self.e.out.new_value(Ty::USIZE, self.f.value(*index).name.clone(), op.span);
        self.e.push_region();
        let i = self.index_of(op, t);
        self.fwd.insert(*index, i);
        for o in &body.ops {
            self.primal_op(o);
        }
        let region = self.e.pop_region();
        self.e.effect(OpKind::For {
            index: t,
            lo: from,
            hi: to,
            step: None,
            inclusive: false,
            reverse: false,
            body: region,
            exit: None,
        });
    }

    /// Iteration number `t` run again recording it, then gone back through.
    fn step_back(&mut self, op: &Op, t: Value) {
        self.record_step(op, t);
        self.reverse_step(op, t);
    }

    fn if_then(&mut self, cond: Value, then: impl FnOnce(&mut Self)) {
        self.e.push_region();
        then(self);
        let t = self.e.pop_region();
        self.e.effect(OpKind::If { cond, then_region: t, else_region: Region::default() });
    }

    /// Entry `field` of the segment at `base` of a binomial schedule's stack.
    fn seg_get(&mut self, stk: Value, base: Value, field: i128) -> Value {
        let f = self.usize_const(field);
        let at = self.e.emit(OpKind::Binary(BinOp::Add, base, f), Ty::USIZE);
        self.e.emit(OpKind::Load { mem: stk, index: Some(at) }, Ty::USIZE)
    }

    fn seg_set(&mut self, stk: Value, base: Value, field: i128, v: Value) {
        let f = self.usize_const(field);
        let at = self.e.emit(OpKind::Binary(BinOp::Add, base, f), Ty::USIZE);
        self.e.effect(OpKind::Store { mem: stk, index: Some(at), value: v });
    }

    /// The top segment of the stack: its position in the stack, start, end, free snapshots
    /// and whether its start has a snapshot.
    fn seg_top(&mut self, stk: Value, depth: Var) -> [Value; 5] {
        let d = self.e.emit(OpKind::GetVar(depth), Ty::USIZE);
        let one = self.usize_const(1);
        let four = self.usize_const(4);
        let d1 = self.e.emit(OpKind::Binary(BinOp::Sub, d, one), Ty::USIZE);
        let base = self.e.emit(OpKind::Binary(BinOp::Mul, d1, four), Ty::USIZE);
        let a = self.seg_get(stk, base, 0);
        let b = self.seg_get(stk, base, 1);
        let s = self.seg_get(stk, base, 2);
        let snap = self.seg_get(stk, base, 3);
        [base, a, b, s, snap]
    }

    /// Splits the top segment `a..b` at `m`: it becomes `a..m`, and `m..b` is pushed above
    /// it with one free snapshot fewer, its start stored if one was free.
    fn seg_split(&mut self, stk: Value, depth: Var, [base, _a, b, s, _]: [Value; 5], m: Value) {
        self.seg_set(stk, base, 1, m);
        let four = self.usize_const(4);
        let zero = self.usize_const(0);
        let one = self.usize_const(1);
        let nb = self.e.emit(OpKind::Binary(BinOp::Add, base, four), Ty::USIZE);
        let free = self.e.emit(OpKind::Cmp(CmpOp::Gt, s, zero), Ty::BOOL);
        let has = self.e.emit(OpKind::Select(free, one, zero), Ty::USIZE);
        let s1 = self.e.emit(OpKind::Binary(BinOp::Sub, s, has), Ty::USIZE);
        self.seg_set(stk, nb, 0, m);
        self.seg_set(stk, nb, 1, b);
        self.seg_set(stk, nb, 2, s1);
        self.seg_set(stk, nb, 3, has);
        let d = self.e.emit(OpKind::GetVar(depth), Ty::USIZE);
        let d1 = self.e.emit(OpKind::Binary(BinOp::Add, d, one), Ty::USIZE);
        self.e.effect(OpKind::SetVar(depth, d1));
    }

    /// Revolve's split of the top segment (`cotan::rt::binomial_split`).
    fn binomial_split(&mut self, a: Value, b: Value, s: Value) -> Value {
        let m = self.e.out.new_var(Scalar::Usize, "split");
        let z = self.usize_const(0);
        self.e.effect(OpKind::DeclVar { var: m, init: z });
        self.e.effect(OpKind::Call {
            callee: "::cotan::rt::binomial_split".into(),
            args: vec![(a, false), (b, false), (s, false)],
            outs: vec![m],
            tape: false,
        });
        self.e.emit(OpKind::GetVar(m), Ty::USIZE)
    }

    /// The forward sweep of a loop checkpointed by the binomial schedule: its primal, storing
    /// the state where Revolve's first descent puts snapshots (the start, then each split of
    /// the last segment while snapshots are free).
    fn forward_binomial(&mut self, op: &Op, snapshots: u64, mems: &[Value], vars: &[Var]) {
        let OpKind::For { index, lo, hi, .. } = &op.kind else { unreachable!("a `for` loop") };
        let ity = self.f.ty(*index);
        let (lo, hi) = (self.fwd[lo], self.fwd[hi]);
        let n = self.trip_count(lo, hi, ity);
        self.e.out.values[n.0 as usize].name = Some("steps".into());
        let zero = self.usize_const(0);
        let st = cotan_ir::MemTy {
            elem: Scalar::Usize,
            kind: MemKind::Array(4 * (snapshots + 1)),
            access: cotan_ir::Access::Owned,
        };
        let len = self.usize_const(4 * (snapshots as i128 + 1));
        let stk = self.e.emit(OpKind::Alloc { len, init: zero }, Ty::Mem(st));
        self.e.out.values[stk.0 as usize].name = Some("segments".into());
        let depth = self.e.out.new_var(Scalar::Usize, "depth");
        self.e.effect(OpKind::DeclVar { var: depth, init: zero });
        self.segments.insert(op as *const Op, (stk, depth, n));
        let nonempty = self.e.emit(OpKind::Cmp(CmpOp::Gt, n, zero), Ty::BOOL);
        self.if_then(nonempty, |s| {
            s.push_state(mems, vars);
            let zero = s.usize_const(0);
            let one = s.usize_const(1);
            let free = s.usize_const(snapshots as i128 - 1);
            s.seg_set(stk, zero, 0, zero);
            s.seg_set(stk, zero, 1, n);
            s.seg_set(stk, zero, 2, free);
            s.seg_set(stk, zero, 3, one);
            s.e.effect(OpKind::SetVar(depth, one));
            // While the last segment has more than one iteration and a snapshot is free:
            // run to Revolve's split and store the state there.
            s.e.push_region();
            let [_, a, b, free, _] = s.seg_top(stk, depth);
            let w = s.e.emit(OpKind::Binary(BinOp::Sub, b, a), Ty::USIZE);
            let one = s.usize_const(1);
            let zero = s.usize_const(0);
            let long = s.e.emit(OpKind::Cmp(CmpOp::Gt, w, one), Ty::BOOL);
            let any = s.e.emit(OpKind::Cmp(CmpOp::Gt, free, zero), Ty::BOOL);
            let cond = s.e.emit(OpKind::Binary(BinOp::BitAnd, long, any), Ty::BOOL);
            let cond_region = s.e.pop_region();
            s.e.push_region();
            let top = s.seg_top(stk, depth);
            let m = s.binomial_split(top[1], top[2], top[3]);
            s.primal_steps(op, top[1], m);
            s.seg_split(stk, depth, top, m);
            s.push_state(mems, vars);
            let body = s.e.pop_region();
            s.e.effect(OpKind::While { cond_region, cond, body, exit: None });
            // The rest of the loop, its last iteration recorded (Revolve's first turn).
            let [_, a, ..] = s.seg_top(stk, depth);
            let one = s.usize_const(1);
            let last = s.e.emit(OpKind::Binary(BinOp::Sub, n, one), Ty::USIZE);
            s.primal_steps(op, a, last);
            s.record_step(op, last);
        });
    }

    /// Iteration number `t` run recording it.
    fn record_step(&mut self, op: &Op, t: Value) {
        let OpKind::For { index, body, .. } = &op.kind else { unreachable!("a `for` loop") };
        let i = self.index_of(op, t);
        self.fwd.insert(*index, i);
        for o in self.forward_region(body).ops {
            self.e.push_op(o);
        }
    }

    /// Back through iteration number `t`, which was just recorded.
    fn reverse_step(&mut self, op: &Op, t: Value) {
        let OpKind::For { index, body, .. } = &op.kind else { unreachable!("a `for` loop") };
        let i = self.index_of(op, t);
        self.zeroed.clear();
        // The body's reverse is emitted in more than one place: the adjoints of its values
        // are declared anew in each.
        let mut local = vec![*index];
        body.walk(&mut |o: &Op| {
            local.extend(o.result);
            if let OpKind::For { index, .. } = &o.kind {
                local.push(*index);
            }
        });
        for v in local {
            self.adj_ssa.remove(&v);
            self.adj_kind.remove(&v);
        }
        for o in self.reverse_region(body, vec![(*index, i)]).ops {
            self.e.push_op(o);
        }
    }

    /// Pops the top segment, with its snapshot if it has one, and restores the start of the
    /// segment below, if any.
    fn seg_pop(&mut self, depth: Var, snap: Value, mems: &[Value], vars: &[Var]) {
        let d = self.e.emit(OpKind::GetVar(depth), Ty::USIZE);
        let one = self.usize_const(1);
        let d1 = self.e.emit(OpKind::Binary(BinOp::Sub, d, one), Ty::USIZE);
        self.e.effect(OpKind::SetVar(depth, d1));
        let stored = self.e.emit(OpKind::Cmp(CmpOp::Eq, snap, one), Ty::BOOL);
        self.if_then(stored, |s| s.pop_state(mems, vars));
        let zero = self.usize_const(0);
        let more = self.e.emit(OpKind::Cmp(CmpOp::Gt, d1, zero), Ty::BOOL);
        self.if_then(more, |s| {
            s.pop_state(mems, vars);
            s.push_state(mems, vars);
        });
    }

    /// The reverse of a loop checkpointed by the binomial schedule: the top segment of the
    /// stack, whose start the primal state holds, is either one iteration (gone back
    /// through, then popped with its snapshot, and the state of the next one's start
    /// restored) or split (run to the split, the right part pushed, with a snapshot of its
    /// start if one is free, else it is the last iteration alone).
    fn reverse_binomial(&mut self, op: &Op, mems: &[Value], vars: &[Var]) {
        let Some(&(stk, depth, n)) = self.segments.get(&(op as *const Op)) else { return };
        let zero = self.usize_const(0);
        let nonempty = self.e.emit(OpKind::Cmp(CmpOp::Gt, n, zero), Ty::BOOL);
        self.if_then(nonempty, |s| {
            // Back through the last iteration, which the forward sweep recorded; the top
            // segment then ends before it: popped if that leaves it empty, else its start
            // restored.
            let one = s.usize_const(1);
            let last = s.e.emit(OpKind::Binary(BinOp::Sub, n, one), Ty::USIZE);
            s.reverse_step(op, last);
            let [base, a, _, _, snap] = s.seg_top(stk, depth);
            s.seg_set(stk, base, 1, last);
            let empty = s.e.emit(OpKind::Cmp(CmpOp::Eq, a, last), Ty::BOOL);
            s.e.push_region();
            s.seg_pop(depth, snap, mems, vars);
            let then_region = s.e.pop_region();
            s.e.push_region();
            s.pop_state(mems, vars);
            s.push_state(mems, vars);
            let else_region = s.e.pop_region();
            s.e.effect(OpKind::If { cond: empty, then_region, else_region });
            s.e.push_region();
            let d = s.e.emit(OpKind::GetVar(depth), Ty::USIZE);
            let zero = s.usize_const(0);
            let cond = s.e.emit(OpKind::Cmp(CmpOp::Gt, d, zero), Ty::BOOL);
            let cond_region = s.e.pop_region();
            s.e.push_region();
            let top = s.seg_top(stk, depth);
            let [_, a, b, free, snap] = top;
            let w = s.e.emit(OpKind::Binary(BinOp::Sub, b, a), Ty::USIZE);
            let one = s.usize_const(1);
            let single = s.e.emit(OpKind::Cmp(CmpOp::Eq, w, one), Ty::BOOL);
            // One iteration: back through it, then the segment below.
            s.e.push_region();
            s.step_back(op, a);
            s.seg_pop(depth, snap, mems, vars);
            let then_region = s.e.pop_region();
            // Several: run to the split and push the right part.
            s.e.push_region();
            let zero = s.usize_const(0);
            let one = s.usize_const(1);
            let last = s.e.emit(OpKind::Binary(BinOp::Sub, b, one), Ty::USIZE);
            let m = s.e.out.new_var(Scalar::Usize, "split");
            s.e.effect(OpKind::DeclVar { var: m, init: last });
            let any = s.e.emit(OpKind::Cmp(CmpOp::Gt, free, zero), Ty::BOOL);
            s.if_then(any, |s| {
                let at = s.binomial_split(a, b, free);
                s.e.effect(OpKind::SetVar(m, at));
            });
            let m = s.e.emit(OpKind::GetVar(m), Ty::USIZE);
            s.primal_steps(op, a, m);
            s.seg_split(stk, depth, top, m);
            s.if_then(any, |s| s.push_state(mems, vars));
            let else_region = s.e.pop_region();
            s.e.effect(OpKind::If { cond: single, then_region, else_region });
            let body = s.e.pop_region();
            s.zeroed.clear();
            s.e.effect(OpKind::While { cond_region, cond, body, exit: None });
        });
    }

    // ---- reverse sweep ----

    /// The value of primal `v` at the current point of the reverse sweep.
    fn get(&mut self, v: Value) -> Value {
        if self.l.memory.contains(&v) {
            return self.mem_now(v).unwrap_or_else(|| {
                panic!("cotan: memory {v:?} is not available in the reverse sweep (a bug in the plan)")
            });
        }
        let top = self.l.def_region.get(&v) == Some(&TOP) && !self.l.split;
        if self.planning {
            if !top {
                self.needs.insert(v);
            }
            let ty = self.f.ty(v);
            return self.e.out.new_value(ty, None, cotan_ir::SpanId::NONE);
        }
        if top {
            return self.fwd[&v];
        }
        for s in self.scopes.iter().rev() {
            if let Some(nv) = s.get(&v) {
                return *nv;
            }
        }
        unreachable!("cotan: value {v:?} is not available in the reverse sweep (a bug in the plan)")
    }

    fn shadow(&mut self, mem: Value) -> Shadow {
        for s in self.shadows.iter().rev() {
            if let Some(sh) = s.get(&mem) {
                return *sh;
            }
        }
        // The shadow of a sub-slice (or an offset) is the same sub-slice of the shadow,
        // taken where needed.
        if let Some(base) = self.view_parts(mem) {
            match self.shadow(base) {
                Shadow::Mem(s) => return Shadow::Mem(self.view_again(mem, base, s, cotan_ir::Access::Mut)),
                // (An offset of a `&mut f64` whose shadow is a variable: the same variable.)
                Shadow::Var(var) => return Shadow::Var(var),
            }
        }
        unreachable!("cotan: memory {mem:?} has no shadow")
    }

    fn adj_kind(&mut self, v: Value) -> Adj {
        if let Some(k) = self.adj_kind.get(&v) {
            return *k;
        }
        let k = if self.l.used_elsewhere.contains(&v) {
            let ty = self.f.ty(v).scalar().unwrap();
            let name = d_name(self.f.value(v).name.as_deref().unwrap_or("v"));
            let var = self.e.out.new_var(ty, name);
            self.e.out.sums.push(var);
            let z = self.zero(Ty::Scalar(ty));
            self.e.effect(OpKind::DeclVar { var, init: z });
            self.zeroed.insert(var);
            Adj::Var(var)
        } else {
            Adj::Ssa
        };
        self.adj_kind.insert(v, k);
        k
    }

    fn read_adj(&mut self, v: Value) -> Option<Value> {
        if !self.act.value(v) {
            return None;
        }
        match self.adj_kind.get(&v).copied() {
            Some(Adj::Var(var)) => Some(self.e.emit(OpKind::GetVar(var), self.f.ty(v))),
            Some(Adj::Ssa) => {
                // The partial sums added pairwise, once: what reads the adjoint again sees
                // the total.
                let mut parts = self.adj_ssa.get(&v)?.clone();
                let ty = self.f.ty(v);
                while parts.len() > 1 {
                    parts = parts
                        .chunks(2)
                        .map(|p| match *p {
                            [a, b] => self.e.emit(OpKind::Binary(BinOp::Add, a, b), ty),
                            [a] => a,
                            _ => unreachable!("chunks of two"),
                        })
                        .collect();
                }
                self.adj_ssa.insert(v, parts.clone());
                parts.first().copied()
            }
            None => None,
        }
    }

    /// `adj(v) += g`.
    fn accumulate(&mut self, v: Value, g: Value) {
        if !self.act.value(v) {
            return;
        }
        let ty = self.f.ty(v);
        match self.adj_kind.get(&v).copied().unwrap_or(Adj::Ssa) {
            Adj::Var(var) => self.add_to_var(var, g, ty),
            // Up to `LANES` partial sums, each contribution added to the oldest: a value
            // used many times (`x2` in a chain of products) gets its adjoint from independent
            // chains of additions, not one long one. (An adjoint's additions may come in any
            // order.)
            Adj::Ssa => {
                let parts = self.adj_ssa.entry(v).or_default();
                if parts.len() < LANES {
                    parts.push(g);
                } else {
                    let oldest = parts.remove(0);
                    let new = self.e.emit(OpKind::Binary(BinOp::Add, oldest, g), ty);
                    self.adj_ssa.get_mut(&v).expect("just used").push(new);
                }
            }
        }
    }

    /// `var += g`, or `var = g` where `var` is known to be zero.
    fn add_to_var(&mut self, var: Var, g: Value, ty: Ty) {
        if self.zeroed.remove(&var) {
            self.e.effect(OpKind::SetVar(var, g));
            return;
        }
        let old = self.e.emit(OpKind::GetVar(var), ty);
        let new = self.e.emit(OpKind::Binary(BinOp::Add, old, g), ty);
        self.e.effect(OpKind::SetVar(var, new));
    }

    /// `var = 0`.
    fn zero_var(&mut self, var: Var, ty: Ty) {
        let zero = self.zero(ty);
        self.e.effect(OpKind::SetVar(var, zero));
        self.zeroed.insert(var);
    }

    /// The primal value `v`, made by `kind`, computed again in the reverse sweep (with the
    /// name it has in the primal) and available there from now on.
    fn run_again(&mut self, v: Value, kind: &OpKind) {
        let kind = remap(kind, |u| self.get(u));
        let nv = self.e.emit(kind, self.f.ty(v));
        self.e.out.values[nv.0 as usize].name = self.f.value(v).name.clone();
        self.scopes.last_mut().unwrap().insert(v, nv);
    }

    /// The read `v` of an `IfValue`, recomputed by running its `if` again.
    fn if_value(&mut self, v: Value, iv: &IfValue) {
        let cond = self.get(iv.cond);
        let ty = self.f.var(iv.var).ty;
        let init = self.zero(Ty::Scalar(ty));
        let var = self.e.out.new_var(ty, self.f.var(iv.var).name.clone());
        self.e.effect(OpKind::DeclVar { var, init });
        let then_region = self.arm_again(&iv.arms[0], var);
        let else_region = self.arm_again(&iv.arms[1], var);
        self.e.effect(OpKind::If { cond, then_region, else_region });
        self.run_again(v, &OpKind::GetVar(var));
    }

    /// A branch of an `IfValue` run again, setting `var` where it set the primal's variable.
    fn arm_again(&mut self, arm: &[Op], var: Var) -> Region {
        self.e.push_region();
        self.scopes.push(HashMap::default());
        for op in arm {
            match (&op.kind, op.result) {
                (OpKind::SetVar(_, x), _) => {
                    let x = self.get(*x);
                    self.e.effect(OpKind::SetVar(var, x));
                }
                (kind, Some(r)) => self.run_again(r, kind),
                _ => unreachable!("an `IfValue`'s branches are ops with results and a `SetVar`"),
            }
        }
        self.scopes.pop();
        self.e.pop_region()
    }

    /// At the start of a region's reverse: restore saved values, declare adjoint variables
    /// of the region's values and shadows of its local buffers.
    fn prepare(&mut self, r: &Region) {
        let id = self.l.id(r);
        if !self.planning {
            for var in self.counters_declared_in(r).into_iter().rev() {
                let ty = Ty::Scalar(self.f.var(var).ty);
                let end = if id == TOP { self.e.emit(OpKind::GetVar(var), ty) } else { self.e.emit(OpKind::Pop, ty) };
                let back = self.e.out.new_var(self.f.var(var).ty, format!("{}_back", self.f.var(var).name));
                self.e.effect(OpKind::DeclVar { var: back, init: end });
                self.back.insert(var, back);
            }
            for v in self.plan.push.get(&id).cloned().unwrap_or_default().into_iter().rev() {
                let nv = self.e.emit(OpKind::Pop, self.f.ty(v));
                self.e.out.values[nv.0 as usize].name = self.f.value(v).name.clone();
                self.scopes.last_mut().unwrap().insert(v, nv);
            }
            let restored = self.plan.restore.get(&id).cloned().unwrap_or_default();
            self.pop_state(&restored, &[]);
            self.step_counters_back(r);
            for v in self.plan.recompute.get(&id).cloned().unwrap_or_default() {
                if let Some(iv) = self.l.if_values.get(&v).cloned() {
                    self.if_value(v, &iv);
                    continue;
                }
                let op = self.l.def_op[&v].clone();
                self.run_again(v, &op.kind);
            }
        }
        let params: Vec<Value> = if id == TOP { self.f.params.clone() } else { vec![] };
        for v in params.into_iter().chain(r.ops.iter().filter_map(|o| o.result)) {
            if self.act.value(v) {
                self.adj_kind(v);
            }
        }
        for op in &r.ops {
            if let (OpKind::CopyRecords { src, zero, .. }, Some(m)) = (&op.kind, op.result) {
                if self.act.mem(m) {
                    // A vector of structs copied in the function: zeros shaped like it.
                    let Some(src_now) = self.mem_now(*src) else {
                        self.errors.push(AdError {
                            span: op.span,
                            message: "cotan copies slices of structs it can read again in the reverse sweep: copy a parameter".into(),
                        });
                        continue;
                    };
                    let kind = OpKind::CopyRecords { src: src_now, zero: zero.clone(), zeroed: true };
                    let s = self.e.emit(kind, self.f.ty(m));
                    let name = d_name(self.f.value(m).name.as_deref().unwrap_or("buf"));
                    self.e.out.values[s.0 as usize].name = Some(name);
                    self.shadows.last_mut().unwrap().insert(m, Shadow::Mem(s));
                }
                continue;
            }
            if let (OpKind::AllocRecords { len, fields }, Some(m)) = (&op.kind, op.result) {
                if self.act.mem(m) {
                    // Structs made in the function: zeros shaped like them.
                    let kind = OpKind::AllocRecords { len: self.get(*len), fields: fields.clone() };
                    let s = self.e.emit(kind, self.f.ty(m));
                    let name = d_name(self.f.value(m).name.as_deref().unwrap_or("buf"));
                    self.e.out.values[s.0 as usize].name = Some(name);
                    self.shadows.last_mut().unwrap().insert(m, Shadow::Mem(s));
                }
                continue;
            }
            if let (OpKind::Alloc { len, init }, Some(m)) = (&op.kind, op.result) {
                if self.act.mem(m) && self.f.ty(*init).mem().is_some() {
                    // Nested memory: rows of zeros shaped like its rows.
                    let len = self.get(*len);
                    let Some(row) = self.zero_like(*init) else {
                        self.errors.push(AdError {
                            span: op.span,
                            message: "cotan builds nested vectors from rows it allocates (`vec![vec![0.0; m]; n]`, `vec![[0.0; 3]; n]`); build this one that way".into(),
                        });
                        continue;
                    };
                    let s = self.e.emit(OpKind::Alloc { len, init: row }, self.f.ty(m));
                    let name = d_name(self.f.value(m).name.as_deref().unwrap_or("buf"));
                    self.e.out.values[s.0 as usize].name = Some(name);
                    self.shadows.last_mut().unwrap().insert(m, Shadow::Mem(s));
                    continue;
                }
                if self.act.mem(m) {
                    let len = if !self.l.pushed.contains(&m) {
                        self.get(*len)
                    } else if id == TOP && self.l.split {
                        // Its final length, saved by `split_sweeps`.
                        if self.planning {
                            self.usize_const(0)
                        } else {
                            self.e.emit(OpKind::Pop, Ty::USIZE)
                        }
                    } else if id == TOP {
                        // A vector grown by `push` has its final length now.
                        self.e.emit(OpKind::Len(self.fwd[&m]), Ty::USIZE)
                    } else if let Some(&n) = self.l.final_lens.get(&m) {
                        // The length it ended its region with (`final_lens`).
                        self.get(n)
                    } else {
                        self.errors.push(AdError {
                            span: op.span,
                            message: "cotan cannot size the derivative of this vector, whose length changes: make it before the loop".into(),
                        });
                        self.usize_const(0)
                    };
                    let elem = self.f.ty(m).mem().unwrap().elem;
                    let zero = self.zero(Ty::Scalar(elem));
                    let s = self.e.emit(OpKind::Alloc { len, init: zero }, self.f.ty(m));
                    let name = d_name(self.f.value(m).name.as_deref().unwrap_or("buf"));
                    self.e.out.values[s.0 as usize].name = Some(name);
                    self.shadows.last_mut().unwrap().insert(m, Shadow::Mem(s));
                }
            }
        }
    }

    /// The counters stepped back by the reverse sweep that `r` declares, in a fixed order.
    fn counters_declared_in(&self, r: &Region) -> Vec<Var> {
        let mut vars: Vec<Var> = self
            .plan
            .counters
            .iter()
            .copied()
            .filter(|v| self.l.counters.declared.get(v).is_some_and(|d| std::ptr::eq(*d, r)))
            .collect();
        vars.sort_by_key(|v| v.0);
        vars
    }

    /// Steps the counters back over `r`'s own steps, last first: each step's starting
    /// value is the copy minus the step.
    fn step_counters_back(&mut self, r: &Region) {
        let mut steps = self.l.counters.steps.get(&(r as *const Region)).cloned().unwrap_or_default();
        steps.retain(|s| self.plan.counters.contains(&s.var));
        for s in steps.into_iter().rev() {
            let ty = Ty::Scalar(self.f.var(s.var).ty);
            let back = self.back[&s.var];
            let after = self.e.emit(OpKind::GetVar(back), ty);
            let step = match &self.l.def_op.get(&s.step).map(|o| o.kind.clone()) {
                Some(k @ OpKind::Const(_)) => self.e.emit(k.clone(), ty),
                _ => self.get(s.step),
            };
            let op = if s.add { BinOp::Sub } else { BinOp::Add };
            let before = self.e.emit(OpKind::Binary(op, after, step), ty);
            let name = self.f.value(s.before).name.clone().unwrap_or_else(|| self.f.var(s.var).name.clone());
            self.e.out.values[before.0 as usize].name = Some(name);
            self.e.effect(OpKind::SetVar(back, before));
            self.scopes.last_mut().unwrap().insert(s.before, before);
        }
        let mut reads = self.l.counters.reads.get(&(r as *const Region)).cloned().unwrap_or_default();
        reads.retain(|(_, var)| self.plan.counters.contains(var));
        for (g, var) in reads {
            let now = self.e.emit(OpKind::GetVar(self.back[&var]), self.f.ty(g));
            self.scopes.last_mut().unwrap().insert(g, now);
        }
    }

    fn reverse_region(&mut self, r: &Region, seed: Vec<(Value, Value)>) -> Region {
        // What is zero outside is not known inside, nor after: the region may run many times.
        self.zeroed.clear();
        self.e.push_region();
        self.scopes.push(seed.into_iter().collect());
        self.shadows.push(HashMap::default());
        self.prepare(r);
        for op in r.ops.iter().rev() {
            self.reverse_op(op);
        }
        self.shadows.pop();
        self.scopes.pop();
        self.zeroed.clear();
        self.e.pop_region()
    }

    fn reverse_op(&mut self, op: &Op) {
        if !self.act.op_is_active(self.f, op) {
            return;
        }
        self.e.span = op.span;
        if let Some(c) = self.checkpoint(op, false) {
            self.reverse_checkpointed(op, Some(c));
            return;
        }
        if self.par_loop(op) {
            self.reverse_checkpointed(op, None);
            return;
        }
        match &op.kind {
            OpKind::If { cond, then_region, else_region } => {
                let c = self.get(*cond);
                let t = self.reverse_region(then_region, vec![]);
                let e = self.reverse_region(else_region, vec![]);
                self.e.effect(OpKind::If { cond: c, then_region: t, else_region: e });
            }
            OpKind::For { index, lo, hi, step, inclusive, reverse, body, exit: None } => {
                let ty = self.f.ty(*index);
                let ni = self.e.out.new_value(ty, self.f.value(*index).name.clone(), op.span);
                let (lo, hi, step) = (self.get(*lo), self.get(*hi), step.map(|s| self.get(s)));
                let body = self.reverse_region(body, vec![(*index, ni)]);
                self.e.effect(OpKind::For {
                    index: ni,
                    lo,
                    hi,
                    step,
                    inclusive: *inclusive,
                    reverse: !*reverse,
                    body,
                    exit: None,
                });
            }
            OpKind::For { body, .. } | OpKind::While { body, .. } => {
                let n = match self.counts.get(&(op as *const Op)) {
                    Some(&n) => n,
                    None if self.planning => self.usize_const(0),
                    None => self.e.emit(OpKind::Pop, Ty::USIZE),
                };
                let zero = self.usize_const(0);
                let t = self.e.out.new_value(Ty::USIZE, None, op.span);
                let body = self.reverse_region(body, vec![]);
                self.e.effect(OpKind::For {
                    index: t,
                    lo: zero,
                    hi: n,
                    step: None,
                    inclusive: false,
                    reverse: false,
                    body,
                    exit: None,
                });
            }
            OpKind::Field { .. }
            | OpKind::Slice { .. }
            | OpKind::Elem { .. }
            | OpKind::Offset { .. }
            | OpKind::CopyRecords { .. }
            | OpKind::AllocRecords { .. } => {}
            _ => self.reverse_simple(op),
        }
    }

    fn reverse_simple(&mut self, op: &Op) {
        match &op.kind {
            OpKind::Load { mem, index } => {
                let r = op.result.unwrap();
                let Some(g) = self.read_adj(r) else { return };
                let idx = index.map(|i| self.get(i));
                self.add_to_shadow(*mem, idx, g, self.f.ty(r));
            }
            OpKind::Store { mem, index, value }
                if self.act.value(*value) && self.l.accumulations.contains_key(&(op as *const Op)) =>
            {
                // `x[i] += e`: the element's adjoint stays, and `e` gets it too.
                let (e, minus) = self.l.accumulations[&(op as *const Op)];
                let ty = Ty::Scalar(self.f.ty(*mem).mem().unwrap().elem);
                let idx = index.map(|i| self.get(i));
                let g = match self.shadow(*mem) {
                    Shadow::Mem(s) => self.e.emit(OpKind::Load { mem: s, index: idx }, ty),
                    Shadow::Var(var) => self.e.emit(OpKind::GetVar(var), ty),
                };
                let g = if minus { self.e.emit(OpKind::Unary(cotan_ir::UnOp::Neg, g), ty) } else { g };
                self.accumulate(e, g);
            }
            OpKind::Store { mem, index, value } => {
                let ty = Ty::Scalar(self.f.ty(*mem).mem().unwrap().elem);
                let idx = index.map(|i| self.get(i));
                let zero = self.zero(ty);
                let g = match self.shadow(*mem) {
                    Shadow::Mem(s) => {
                        let g = self.e.emit(OpKind::Load { mem: s, index: idx }, ty);
                        self.e.effect(OpKind::Store { mem: s, index: idx, value: zero });
                        g
                    }
                    Shadow::Var(var) => {
                        let g = self.e.emit(OpKind::GetVar(var), ty);
                        self.zero_var(var, ty);
                        g
                    }
                };
                self.accumulate(*value, g);
            }
            OpKind::Call { callee, args, outs, .. } => self.reverse_call(op, callee, args, outs),
            OpKind::VecPush { mem, value } => {
                let ty = Ty::Scalar(self.f.ty(*mem).mem().unwrap().elem);
                let k = self.get(op.result.unwrap());
                let Shadow::Mem(s) = self.shadow(*mem) else { return };
                let g = self.e.emit(OpKind::Load { mem: s, index: Some(k) }, ty);
                let zero = self.zero(ty);
                self.e.effect(OpKind::Store { mem: s, index: Some(k), value: zero });
                self.accumulate(*value, g);
            }
            OpKind::Fill { mem, value, resize } => {
                let Shadow::Mem(s) = self.shadow(*mem) else {
                    return;
                };
                let ty = Ty::Scalar(self.f.ty(*mem).mem().unwrap().elem);
                let Some([len, old_len]) = resize else {
                    let sum = self.drain(s, ty, None);
                    self.accumulate(*value, sum);
                    return;
                };
                let (len, old_len) = (self.get(*len), self.get(*old_len));
                if self.act.value(*value) {
                    // The elements it added (`old_len..len`) are `value`.
                    let shorter = self.e.emit(OpKind::Cmp(CmpOp::Lt, len, old_len), Ty::BOOL);
                    let kept = self.e.emit(OpKind::Select(shorter, len, old_len), Ty::USIZE);
                    let sum = self.drain(s, ty, Some((kept, len)));
                    self.accumulate(*value, sum);
                }
                // The shadow takes back the old length: the elements kept keep their
                // adjoints, those the resize dropped get zeros (nothing read them after).
                let zero = self.zero(ty);
                self.e.effect(OpKind::Fill { mem: s, value: zero, resize: Some([old_len, len]) });
            }
            OpKind::Alloc { init, .. } => {
                let m = op.result.unwrap();
                if self.f.ty(*init).mem().is_some() {
                    // Copies of a row: its derivative would be the sum of the rows'.
                    if self.act.mem(*init) {
                        self.errors.push(AdError {
                            span: op.span,
                            message: "cotan cannot differentiate `vec![row; n]` with a row that depends on the inputs yet; start from zeros (`vec![vec![0.0; m]; n]`) and fill the rows in a loop".into(),
                        });
                    }
                    return;
                }
                if !self.act.value(*init) {
                    return;
                }
                let Shadow::Mem(s) = self.shadow(m) else {
                    return;
                };
                let ty = self.f.ty(*init);
                let sum = self.drain(s, ty, None);
                self.accumulate(*init, sum);
            }
            OpKind::DeclVar { var, init: v } | OpKind::SetVar(var, v) => {
                let d = self.dvar_of(*var);
                let ty = Ty::Scalar(self.f.var(*var).ty);
                let g = self.e.emit(OpKind::GetVar(d), ty);
                self.zero_var(d, ty);
                self.accumulate(*v, g);
            }
            OpKind::GetVar(var) => {
                let r = op.result.unwrap();
                let Some(g) = self.read_adj(r) else { return };
                let d = self.dvar_of(*var);
                self.add_to_var(d, g, self.f.ty(r));
            }
            OpKind::Cast(a) => {
                let r = op.result.unwrap();
                let Some(g) = self.read_adj(r) else { return };
                let ga = self.e.emit(OpKind::Cast(g), self.f.ty(*a));
                self.accumulate(*a, ga);
            }
            kind => {
                let Some(r) = op.result else { return };
                let Some(g) = self.read_adj(r) else { return };
                let operands = differentiable_operands(self.f, kind);
                let wanted: Vec<bool> = operands.iter().map(|a| self.act.value(*a)).collect();
                let ps = self.emit_partials(kind, r, &wanted);
                for ((p, a), w) in ps.into_iter().zip(operands).zip(wanted) {
                    if w {
                        let c = self.e.build(|b| scale(b, p, g));
                        self.accumulate(a, c);
                    }
                }
            }
        }
    }

    /// Emits the partial derivatives of a scalar op, but only those of `wanted` operands
    /// and only the primal values they read: the rule is built once on placeholders, then
    /// the part the wanted partials depend on is copied in.
    fn emit_partials(&mut self, kind: &OpKind, result: Value, wanted: &[bool]) -> Vec<Partial> {
        let ty = self.f.ty(result).scalar().unwrap();
        let mut scratch = Function::new("rule");
        let mut placeholder = HashMap::default();
        for v in kind.operands().into_iter().chain([result]) {
            placeholder.insert(v, scratch.new_value(self.f.ty(v), None, cotan_ir::SpanId::NONE));
        }
        let mut b = cotan_ir::Builder::new(&mut scratch);
        let ps = partials(&mut b, kind, result, ty, &mut |v| placeholder[&v]);
        let ops = b.finish().ops;
        // Which scratch values the wanted partials need.
        let mut live: HashSet<Value> = ps
            .iter()
            .zip(wanted)
            .filter_map(|(p, w)| match (p, w) {
                (Partial::Of(v) | Partial::Strong(v), true) => Some(*v),
                _ => None,
            })
            .collect();
        for op in ops.iter().rev() {
            if op.result.is_some_and(|r| live.contains(&r)) {
                live.extend(op.kind.operands());
            }
        }
        let mut map: HashMap<Value, Value> = HashMap::default();
        for (&primal, &ph) in &placeholder {
            if live.contains(&ph) {
                let v = self.get(primal);
                map.insert(ph, v);
            }
        }
        for op in ops {
            let Some(r) = op.result.filter(|r| live.contains(r)) else {
                continue;
            };
            let kind = remap(&op.kind, |u| map[&u]);
            let nv = self.e.emit(kind, scratch.ty(r));
            map.insert(r, nv);
        }
        ps.into_iter()
            .map(|p| match p {
                Partial::Of(v) => map.get(&v).map_or(Partial::One, |nv| Partial::Of(*nv)),
                Partial::Strong(v) => map.get(&v).map_or(Partial::One, |nv| Partial::Strong(*nv)),
                p => p,
            })
            .collect()
    }

    /// `for i in 0..len` (backwards if `reverse`), `body` emitting what it does with `i`.
    fn index_loop(&mut self, len: Value, reverse: bool, body: impl FnOnce(&mut Self, Value)) {
        let lo = self.usize_const(0);
        let i = self.e.out.new_value(Ty::USIZE, Some("i".into()), self.e.span);
        self.e.push_region();
        body(self, i);
        let body = self.e.pop_region();
        self.e.effect(OpKind::For { index: i, lo, hi: len, step: None, inclusive: false, reverse, body, exit: None });
    }

    /// What a call site needs of its callee (the same in both sweeps).
    fn call_site(&self, op: &Op, need: Need, callee: &str, args: &[(Value, bool)], outs: &[Var]) -> CallSite {
        let active = args
            .iter()
            .map(|&(a, _)| match self.f.ty(a) {
                Ty::Scalar(s) => s.is_float() && self.act.value(a),
                Ty::Mem(m) => m.elem.is_float() && self.act.mem(a),
            })
            .collect();
        let avail = args
            .iter()
            .map(|&(a, _)| {
                if self.f.ty(a).mem().is_none() || self.l.stable_after(a, op) {
                    Avail::Stable
                } else if self.l.len_mem.contains(&a) {
                    Avail::Present
                } else {
                    Avail::Absent
                }
            })
            .collect();
        let ret_active = outs.iter().any(|v| self.act.var(*v));
        CallSite {
            callee: callee.to_string(),
            need,
            active,
            avail,
            ret_active,
            arg_tys: args.iter().map(|&(a, m)| passed_ty(self.f.ty(a), m)).collect(),
            ret_tys: outs.iter().map(|v| Ty::Scalar(self.f.var(*v).ty)).collect(),
            records: self.f.records.clone(),
            tape: false,
        }
    }

    /// The name of the callee's derivative a call site needs, or `None` after an error.
    fn link(&mut self, site: &CallSite, op: &Op) -> Option<String> {
        match self.linker.link(site, op.span) {
            Ok(name) => Some(name),
            Err(message) => {
                self.errors.push(AdError { span: op.span, message });
                None
            }
        }
    }

    /// The reverse of a call: the callee's reverse sweep, which pops what its augmented
    /// forward sweep pushed.
    fn reverse_call(&mut self, op: &Op, callee: &str, args: &[(Value, bool)], outs: &[Var]) {
        // The shadows of a struct and of one of its fields cannot both be lent `&mut`.
        let bases: Vec<Value> = args.iter().filter_map(|(a, _)| self.record_of_field(*a)).collect();
        if bases.iter().any(|b| args.iter().any(|(a, _)| a == b)) && args.iter().any(|(a, _)| self.act.mem(*a)) {
            self.errors.push(AdError {
                span: op.span,
                message: "cotan cannot pass a struct and one of its fields to the same call in reverse mode; let the callee read the field from the struct".into(),
            });
            return;
        }
        let site = self.call_site(op, Need::Reverse, callee, args, outs);
        let Some(name) = self.link(&site, op) else { return };
        let mut call_args = vec![];
        let mut grads = vec![];
        // A buffer passed twice (`dot(x, x)`, or two sub-slices of it that may overlap) gets
        // a second shadow, added back after the call. (Sub-slices the call writes cannot
        // overlap, nor can their shadows.)
        let mut passed: Vec<(Value, bool)> = vec![];
        let mut extra: Vec<(Value, Value)> = vec![];
        for (k, &(a, by_mut)) in args.iter().enumerate() {
            match self.f.ty(a) {
                Ty::Scalar(_) => {
                    if site.active[k] {
                        let s = self.f.ty(a).scalar().unwrap();
                        let var = self.e.out.new_var(s, "grad");
                        let z = self.zero(Ty::Scalar(s));
                        self.e.effect(OpKind::DeclVar { var, init: z });
                        grads.push((a, var));
                    }
                }
                Ty::Mem(_) => {
                    if site.avail[k] != Avail::Absent {
                        let pm = self.get(a);
                        call_args.push((pm, false));
                    }
                    if !site.active[k] {
                        continue;
                    }
                    let (root, mut_view) = (self.view_root(a), by_mut && self.view_parts(a).is_some());
                    // (Raw pointers may alias: their shadows are lent as they are. Lowering
                    // refuses the calls where that would be wrong.)
                    let ptr = self.f.ty(a).mem().is_some_and(|m| m.is_ptr());
                    let clash = !ptr && passed.iter().any(|&(r, m)| r == root && !(m && mut_view));
                    passed.push((root, mut_view));
                    match self.shadow(a) {
                        Shadow::Mem(s) if clash => {
                            let mt = self.e.out.ty(s).mem().unwrap();
                            if let MemKind::Record(_) | MemKind::Nested(..) | MemKind::Records(..) = mt.kind {
                                self.errors.push(AdError {
                                    span: op.span,
                                    message: "cotan cannot pass the same struct twice to a call in reverse mode yet; pass a copy as the second argument".into(),
                                });
                                return;
                            }
                            let zero = self.zero(Ty::Scalar(mt.elem));
                            let t = if mt.kind == MemKind::Cell {
                                // A cell (a number lent `&f64`, a field): a cell of its own.
                                let one = self.usize_const(1);
                                let array = cotan_ir::MemTy { kind: MemKind::Array(1), ..owned(mt) };
                                let buf = self.e.emit(OpKind::Alloc { len: one, init: zero }, Ty::Mem(array));
                                let first = self.usize_const(0);
                                let cell = cotan_ir::MemTy { access: cotan_ir::Access::Mut, ..mt };
                                self.e.emit(OpKind::Offset { base: buf, offset: first }, Ty::Mem(cell))
                            } else {
                                let len = self.e.emit(OpKind::Len(s), Ty::USIZE);
                                self.e.emit(OpKind::Alloc { len, init: zero }, Ty::Mem(owned(mt)))
                            };
                            call_args.push((t, true));
                            extra.push((s, t));
                        }
                        Shadow::Mem(s) => call_args.push((s, true)),
                        Shadow::Var(_) => {
                            self.errors.push(AdError {
                                span: op.span,
                                message: "cotan cannot pass a derivative through a `&mut f64` that is `Const` to a call; mark the argument `Duplicated`".into(),
                            });
                            return;
                        }
                    }
                }
            }
        }
        if site.ret_active {
            for &out in outs {
                let ty = self.f.var(out).ty;
                if !ty.is_float() {
                    continue;
                }
                let d = if self.act.var(out) {
                    let d = self.dvar_of(out);
                    let g = self.e.emit(OpKind::GetVar(d), Ty::Scalar(ty));
                    self.zero_var(d, Ty::Scalar(ty));
                    g
                } else {
                    self.zero(Ty::Scalar(ty))
                };
                call_args.push((d, false));
            }
        }
        let new_outs = grads.iter().map(|g| g.1).collect();
        self.e.push_op(Op {
            kind: OpKind::Call { callee: name, args: call_args, outs: new_outs, tape: true },
            result: None,
            span: op.span,
        });
        for (a, var) in grads {
            let g = self.e.emit(OpKind::GetVar(var), self.f.ty(a));
            self.accumulate(a, g);
        }
        for (s, t) in extra {
            self.add_into(s, t);
        }
    }

    /// The buffer a sub-slice is part of (any level up), or `m` itself.
    fn view_root(&self, m: Value) -> Value {
        match self.view_parts(m) {
            Some(base) => self.view_root(base),
            None => m,
        }
    }

    /// The record a field value belongs to (any level up).
    fn record_of_field(&self, v: Value) -> Option<Value> {
        let mut cur = v;
        let mut found = None;
        while let Some(op) = self.f.body.ops.iter().find(|o| o.result == Some(cur)) {
            let OpKind::Field { base, .. } = &op.kind else { break };
            found = Some(*base);
            cur = *base;
        }
        found
    }

    /// `s[i] += t[i]` for every element.
    fn add_into(&mut self, s: Value, t: Value) {
        let ty = Ty::Scalar(self.e.out.ty(s).mem().unwrap().elem);
        if self.e.out.ty(s).mem().unwrap().kind == MemKind::Cell {
            let old = self.e.emit(OpKind::Load { mem: s, index: None }, ty);
            let g = self.e.emit(OpKind::Load { mem: t, index: None }, ty);
            let new = self.e.emit(OpKind::Binary(BinOp::Add, old, g), ty);
            self.e.effect(OpKind::Store { mem: s, index: None, value: new });
            return;
        }
        let len = self.e.emit(OpKind::Len(s), Ty::USIZE);
        self.index_loop(len, false, |r, i| {
            let old = r.e.emit(OpKind::Load { mem: s, index: Some(i) }, ty);
            let g = r.e.emit(OpKind::Load { mem: t, index: Some(i) }, ty);
            let new = r.e.emit(OpKind::Binary(BinOp::Add, old, g), ty);
            r.e.effect(OpKind::Store { mem: s, index: Some(i), value: new });
        });
    }

    /// `shadow[idx] += g`.
    fn add_to_shadow(&mut self, mem: Value, idx: Option<Value>, g: Value, ty: Ty) {
        match self.shadow(mem) {
            Shadow::Mem(s) => {
                let old = self.e.emit(OpKind::Load { mem: s, index: idx }, ty);
                let new = self.e.emit(OpKind::Binary(BinOp::Add, old, g), ty);
                self.e.effect(OpKind::Store { mem: s, index: idx, value: new });
            }
            Shadow::Var(var) => self.add_to_var(var, g, ty),
        }
    }

    /// Sums a shadow buffer and zeroes it; returns the sum.
    fn drain(&mut self, s: Value, ty: Ty, range: Option<(Value, Value)>) -> Value {
        let elem = ty.scalar().unwrap();
        let acc = self.e.out.new_var(elem, "sum");
        let z = self.zero(ty);
        self.e.effect(OpKind::DeclVar { var: acc, init: z });
        let (start, len) = match range {
            Some((lo, hi)) => (Some(lo), self.e.emit(OpKind::Binary(BinOp::Sub, hi, lo), Ty::USIZE)),
            None => (None, self.e.emit(OpKind::Len(s), Ty::USIZE)),
        };
        self.index_loop(len, false, |r, i| {
            let i = match start {
                Some(lo) => r.e.emit(OpKind::Binary(BinOp::Add, lo, i), Ty::USIZE),
                None => i,
            };
            let g = r.e.emit(OpKind::Load { mem: s, index: Some(i) }, ty);
            let z2 = r.zero(ty);
            r.e.effect(OpKind::Store { mem: s, index: Some(i), value: z2 });
            let old = r.e.emit(OpKind::GetVar(acc), ty);
            let new = r.e.emit(OpKind::Binary(BinOp::Add, old, g), ty);
            r.e.effect(OpKind::SetVar(acc, new));
        });
        self.e.emit(OpKind::GetVar(acc), ty)
    }
}
