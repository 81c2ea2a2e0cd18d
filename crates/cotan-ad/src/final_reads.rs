//! Reads of memory that no later write changes, found by comparing indices.
//!
//! An in-place factorisation overwrites the buffer it reads, so its reads look like reads
//! of memory that changes afterwards, which the reverse sweep would have to save. But in a
//! Cholesky factorisation written row by row (`l[i * n + j] = ..` at iteration `(i, j)`,
//! reading `l[i * n + k]` and `l[j * n + k]` for `k < j ≤ i`), every element it reads was
//! written for the last time at an earlier iteration: the reverse sweep can read it again
//! at the end instead of saving it.
//!
//! For a read `mem[e]` this module proves that no write `mem[e']` runs after it with
//! `e' = e`. Both indices must be `r * n + c` with `0 ≤ c < n` (`n` a value computed outside
//! the loops; so the element is the pair `(r, c)`) or plain `c`, with `r` and `c` a loop
//! index or a value outside the loops plus a constant. "Runs after" is the lexicographic
//! order of the iterations of the loops around both, then their order in the loop body.
//! Each case is a conjunction of difference constraints (`x - y ≤ k`) over the indices of
//! the two iterations, from the loops' bounds and the conditions of the `if`s around each
//! access; a case that has a solution leaves the read saved. Only memory whose every write
//! is such a store is considered (not written by calls or `fill`, and neither a view nor
//! the base of one, which could write an element under another name), and only accesses
//! in `for` loops that count up, one iteration after the other.

use cotan_ir::{BinOp, CmpOp, Const, Function, HashMap, HashSet, Op, OpKind, Region, Value};

/// What surrounds an access, outermost first.
#[derive(Clone, Copy)]
enum Frame<'f> {
    /// A `for` loop (its op), counting up.
    Loop(&'f Op),
    /// The branch of an `if` taken: its condition and whether it holds.
    Branch(Value, bool),
    /// A region whose runs have no index to compare (a `while` loop's, a loop counting
    /// down or in parallel): accesses in it are not placed.
    Opaque,
}

/// A load or store with an index, and where it is.
struct Access<'f> {
    frames: Vec<Frame<'f>>,
    /// The position of the access: the op's index in each region from the top.
    path: Vec<(*const Region, usize)>,
    index: Value,
    /// The load's result.
    result: Option<Value>,
}

/// The loads of `f` that read an element no later write changes.
pub(crate) fn find(f: &Function) -> HashSet<Value> {
    let mut w = Walk {
        f,
        defs: HashMap::default(),
        in_loop: HashSet::default(),
        views: HashMap::default(),
        loads: HashMap::default(),
        stores: HashMap::default(),
        excluded: HashSet::default(),
    };
    w.region(&f.body, &mut vec![], &mut vec![]);
    // Memory that views alias (and the views): an element may be written under another name.
    let aliased: Vec<Value> = w.views.iter().flat_map(|(v, b)| [*v, *b]).collect();
    w.excluded.extend(aliased);
    let mut out = HashSet::default();
    for (mem, loads) in &w.loads {
        let Some(stores) = w.stores.get(mem) else { continue };
        if w.excluded.contains(mem) {
            continue;
        }
        for load in loads {
            if stores.iter().all(|store| w.never_after(load, store)) {
                out.extend(load.result);
            }
        }
    }
    out
}

struct Walk<'f> {
    f: &'f Function,
    defs: HashMap<Value, &'f Op>,
    /// Values defined inside a loop, and loop indices.
    in_loop: HashSet<Value>,
    /// Views (sub-slices, rows, fields, offsets) and the memory they are part of.
    views: HashMap<Value, Value>,
    loads: HashMap<Value, Vec<Access<'f>>>,
    stores: HashMap<Value, Vec<Access<'f>>>,
    /// Memory written otherwise than by a store this module can place.
    excluded: HashSet<Value>,
}

/// A polynomial of degree two at most in atoms (loop indices, values outside the loops):
/// monomial (sorted atoms) → coefficient.
type Poly = Vec<(Vec<Value>, i128)>;

/// `atom + k` (no atom: the constant `k`).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Term {
    atom: Option<Value>,
    k: i128,
}

impl<'f> Walk<'f> {
    fn region(&mut self, r: &'f Region, frames: &mut Vec<Frame<'f>>, path: &mut Vec<(*const Region, usize)>) {
        let placed = !frames.iter().any(|f| matches!(f, Frame::Opaque));
        for (k, op) in r.ops.iter().enumerate() {
            path.push((r as *const Region, k));
            if let Some(v) = op.result {
                self.defs.insert(v, op);
                if frames.iter().any(|f| !matches!(f, Frame::Branch(..))) {
                    self.in_loop.insert(v);
                }
            }
            let access = |index: Value| Access { frames: frames.clone(), path: path.clone(), index, result: op.result };
            match &op.kind {
                OpKind::Load { mem, index: Some(index) } if placed => {
                    self.loads.entry(*mem).or_default().push(access(*index));
                }
                OpKind::Store { mem, index: Some(index), .. } if placed => {
                    self.stores.entry(*mem).or_default().push(access(*index));
                }
                OpKind::Store { mem, .. } | OpKind::Fill { mem, .. } | OpKind::VecPush { mem, .. } => {
                    self.excluded.insert(*mem);
                }
                OpKind::Call { args, .. } => self.excluded.extend(args.iter().filter(|a| a.1).map(|a| a.0)),
                _ => {}
            }
            if let (Some(base), Some(v)) = (op.kind.view_base(), op.result) {
                self.views.insert(v, base);
            }
            match &op.kind {
                OpKind::For { index, body, reverse, .. } => {
                    self.in_loop.insert(*index);
                    // (A parallel loop's iterations run in any order.)
                    let ordered = !*reverse && !self.f.par_loops.contains(index);
                    frames.push(if ordered { Frame::Loop(op) } else { Frame::Opaque });
                    self.region(body, frames, path);
                    frames.pop();
                }
                OpKind::If { cond, then_region, else_region } => {
                    for (region, taken) in [(then_region, true), (else_region, false)] {
                        frames.push(Frame::Branch(*cond, taken));
                        self.region(region, frames, path);
                        frames.pop();
                    }
                }
                kind => {
                    for region in kind.regions() {
                        frames.push(Frame::Opaque);
                        self.region(region, frames, path);
                        frames.pop();
                    }
                }
            }
            path.pop();
        }
    }

    /// `v` as a polynomial in loop indices and values outside the loops.
    fn poly(&self, v: Value, depth: usize) -> Option<Poly> {
        let atom = || Some(vec![(vec![v], 1)]);
        if depth > 32 || !self.f.ty(v).scalar().is_some_and(|s| s.is_int()) {
            return None;
        }
        let Some(op) = self.defs.get(&v) else {
            // A parameter, or a loop index.
            return atom();
        };
        let poly = match &op.kind {
            OpKind::Const(Const::Int(c)) => Some(vec![(vec![], *c)]),
            OpKind::Cast(a) if self.f.ty(*a).scalar().is_some_and(|s| s.is_int()) => self.poly(*a, depth + 1),
            OpKind::Binary(op @ (BinOp::Add | BinOp::Sub | BinOp::Mul), a, b) => {
                match (self.poly(*a, depth + 1), self.poly(*b, depth + 1)) {
                    (Some(a), Some(b)) => combine(*op, a, b),
                    _ => None,
                }
            }
            _ => None,
        };
        match poly {
            Some(p) => Some(p),
            None if !self.in_loop.contains(&v) => atom(),
            None => None,
        }
    }

    /// `v` as `atom + k`.
    fn term(&self, v: Value) -> Option<Term> {
        as_term(&self.poly(v, 0)?)
    }

    /// The element an index reads or writes: `(r, c)` of `r * n + c` (`n` a value outside the
    /// loops, the only factor of the second-degree terms, or a constant, the coefficient of
    /// `r`), or `(0, c)` and no `n`.
    /// With `rows`, a constant stride `n`, a polynomial of degree one is taken as `r * n + c`
    /// (`5 * i` as `i * 4 + i`, `j` as `0 * 4 + j`).
    fn element(&self, index: Value, rows: Option<i128>) -> Option<(Term, Term, Option<Stride>)> {
        let p = self.poly(index, 0)?;
        if let Some(n) = rows.filter(|_| p.iter().all(|(m, _)| m.len() < 2)) {
            return split_rows(&p, n);
        }
        if let Some(c) = as_term(&p) {
            return Some((Term { atom: None, k: 0 }, c, None));
        }
        let n = p.iter().find(|(m, _)| m.len() == 2).map(|(m, _)| {
            // The factor outside the loops.
            if self.in_loop.contains(&m[0]) {
                m[1]
            } else {
                m[0]
            }
        });
        let Some(n) = n else { return constant_stride(&p) };
        if self.in_loop.contains(&n) {
            return None;
        }
        let mut r: Poly = vec![];
        let mut c: Poly = vec![];
        for (m, k) in p {
            match m.iter().position(|a| *a == n) {
                Some(at) => {
                    let mut rest = m.clone();
                    rest.remove(at);
                    r.push((rest, k));
                }
                None => c.push((m, k)),
            }
        }
        Some((as_term(&r)?, as_term(&c)?, Some(Stride::Value(n))))
    }

    /// Whether `store` never writes the element `load` reads after `load` reads it.
    fn never_after(&self, load: &Access, store: &Access) -> bool {
        let common = common_loops(load, store);
        if common.is_empty() && !later_in_body(load, store) {
            // (No loop runs both: all of the store's runs come before the load's.)
            return true;
        }
        let (mut le, mut se) = (self.element(load.index, None), self.element(store.index, None));
        if let Some(Stride::Const(n)) = le.and_then(|e| e.2).or_else(|| se.and_then(|e| e.2)) {
            (le, se) = (self.element(load.index, Some(n)), self.element(store.index, Some(n)));
        }
        let (Some((lr, lc, ln)), Some((sr, sc, sn))) = (le, se) else {
            return false;
        };
        if ln != sn {
            return false;
        }
        let mut sys = System::new(&self.in_loop);
        let (l, s) = (Copy::Load, Copy::Store);
        // Each access's loops and branches.
        let mut facts = vec![];
        for (access, copy) in [(load, l), (store, s)] {
            for frame in &access.frames {
                match frame {
                    Frame::Loop(op) => {
                        let OpKind::For { index, lo, hi, inclusive, .. } = &op.kind else { unreachable!() };
                        let x = Term { atom: Some(*index), k: 0 };
                        if let Some(lo) = self.term(*lo) {
                            facts.push(vec![sys.le(copy, lo, copy, x)]);
                        }
                        if let Some(hi) = self.term(*hi) {
                            let hi = if *inclusive { hi } else { Term { k: hi.k - 1, ..hi } };
                            facts.push(vec![sys.le(copy, x, copy, hi)]);
                        }
                    }
                    Frame::Branch(cond, holds) => {
                        if let Some(cases) = self.condition(&mut sys, copy, *cond, *holds) {
                            facts.push(cases);
                        }
                    }
                    Frame::Opaque => return false,
                }
            }
        }
        // `r * n + c` names one element only for `0 ≤ c < n`: prove it of both.
        if let Some(n) = ln {
            let n = match n {
                Stride::Value(n) => Term { atom: Some(n), k: 0 },
                Stride::Const(n) => Term { atom: None, k: n },
            };
            let zero = Term { atom: None, k: 0 };
            for (c, copy) in [(lc, l), (sc, s)] {
                let outside = [vec![sys.lt(copy, c, copy, zero)], vec![sys.le(copy, n, copy, c)]];
                if outside.into_iter().any(|case| sys.feasible(&facts, &case)) {
                    return false;
                }
            }
        }
        // The same element.
        let mut same = vec![];
        same.extend(sys.eq(s, sr, l, lr));
        same.extend(sys.eq(s, sc, l, lc));
        // The store's iteration after the load's: later in the first loop around both where
        // they differ, or in the same iteration of every loop around both, later in the body.
        for k in 0..=common.len() {
            let mut case = same.clone();
            for &index in &common[..k] {
                let x = Term { atom: Some(index), k: 0 };
                case.extend(sys.eq(s, x, l, x));
            }
            match common.get(k) {
                Some(&index) => {
                    let x = Term { atom: Some(index), k: 0 };
                    case.push(sys.lt(l, x, s, x));
                }
                None if !later_in_body(load, store) => continue,
                None => {}
            }
            if sys.feasible(&facts, &case) {
                return false;
            }
        }
        true
    }

    /// The constraints a branch's condition gives (`a < b` holds, `a == b` fails, ...): one
    /// list per case, of which one holds (`a != b`: `a < b` or `a > b`).
    fn condition(&self, sys: &mut System<'_>, copy: Copy, cond: Value, holds: bool) -> Option<Vec<Edge>> {
        let op = self.defs.get(&cond)?;
        let OpKind::Cmp(cmp, a, b) = &op.kind else { return None };
        let (a, b) = (self.term(*a)?, self.term(*b)?);
        let cmp = if holds { *cmp } else { negate(*cmp) };
        Some(match cmp {
            CmpOp::Lt => vec![sys.lt(copy, a, copy, b)],
            CmpOp::Le => vec![sys.le(copy, a, copy, b)],
            CmpOp::Gt => vec![sys.lt(copy, b, copy, a)],
            CmpOp::Ge => vec![sys.le(copy, b, copy, a)],
            CmpOp::Eq => {
                // (Both edges in one case: see `feasible`.)
                let e = sys.eq(copy, a, copy, b);
                return Some(vec![Edge::All(e.to_vec())]);
            }
            CmpOp::Ne => vec![sys.lt(copy, a, copy, b), sys.lt(copy, b, copy, a)],
        })
    }
}

fn negate(c: CmpOp) -> CmpOp {
    match c {
        CmpOp::Eq => CmpOp::Ne,
        CmpOp::Ne => CmpOp::Eq,
        CmpOp::Lt => CmpOp::Ge,
        CmpOp::Le => CmpOp::Gt,
        CmpOp::Gt => CmpOp::Le,
        CmpOp::Ge => CmpOp::Lt,
    }
}

/// The indices of the loops around both accesses, outermost first.
fn common_loops<'f>(a: &Access<'f>, b: &Access<'f>) -> Vec<Value> {
    fn loops<'f>(x: &Access<'f>) -> Vec<&'f Op> {
        x.frames
            .iter()
            .filter_map(|f| match f {
                Frame::Loop(op) => Some(*op),
                _ => None,
            })
            .collect()
    }
    let mut out = vec![];
    for (p, q) in loops(a).into_iter().zip(loops(b)) {
        match &p.kind {
            OpKind::For { index, .. } if std::ptr::eq(p, q) => out.push(*index),
            _ => break,
        }
    }
    out
}

/// Whether `store` comes after `load` in one run of the body of the innermost loop around
/// both (not when they are in the two branches of one `if`).
fn later_in_body(load: &Access, store: &Access) -> bool {
    for (p, q) in load.path.iter().zip(&store.path) {
        if p.0 != q.0 {
            // Different regions of one op: the branches of an `if`.
            return false;
        }
        if p.1 != q.1 {
            return q.1 > p.1;
        }
    }
    // One inside the other (a loop around the load holding the store cannot be: it is an
    // op of its own).
    false
}

/// The length of the rows of a two-dimensional index `r * n + c`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Stride {
    Value(Value),
    Const(i128),
}

/// `n * (x + q) + (y + k)` for a polynomial `n * x + y + (n * q + k)` of degree one, `n > 1`
/// a constant, `x` and `y` atoms, and `0 ≤ k < n`.
fn constant_stride(p: &Poly) -> Option<(Term, Term, Option<Stride>)> {
    let (mut r, mut c, mut n, mut k) = (None, None, None, 0);
    for (m, coeff) in p {
        match (m.as_slice(), *coeff) {
            ([], coeff) => k += coeff,
            ([a], 1) if c.is_none() => c = Some(*a),
            ([a], coeff) if coeff > 1 && r.is_none() => {
                r = Some(*a);
                n = Some(coeff);
            }
            _ => return None,
        }
    }
    // (`5 * i` alone could be `i * 4 + i` or `i * 5`: a stride only where both are there.)
    let n = n.filter(|_| c.is_some())?;
    let row = Term { atom: r, k: k.div_euclid(n) };
    let col = Term { atom: c, k: k.rem_euclid(n) };
    Some((row, col, Some(Stride::Const(n))))
}

/// A polynomial of degree one as `r * n + c` for a constant `n`: each coefficient `a * n + b`
/// with `a` and `b` zero or one (the constant any).
fn split_rows(p: &Poly, n: i128) -> Option<(Term, Term, Option<Stride>)> {
    let (mut r, mut c): (Poly, Poly) = (vec![], vec![]);
    for (m, coeff) in p {
        let (q, rem) = (coeff.div_euclid(n), coeff.rem_euclid(n));
        if !m.is_empty() && (!(0..=1).contains(&q) || rem > 1) {
            return None;
        }
        r.push((m.clone(), q));
        c.push((m.clone(), rem));
    }
    r.retain(|e| e.1 != 0);
    c.retain(|e| e.1 != 0);
    Some((as_term(&r)?, as_term(&c)?, Some(Stride::Const(n))))
}

fn combine(op: BinOp, a: Poly, b: Poly) -> Option<Poly> {
    let mut out: Poly = vec![];
    let mut add = |m: Vec<Value>, k: i128| match out.iter_mut().find(|(n, _)| *n == m) {
        Some(e) => e.1 += k,
        None => out.push((m, k)),
    };
    match op {
        BinOp::Add | BinOp::Sub => {
            let sign = if op == BinOp::Add { 1 } else { -1 };
            a.into_iter().for_each(|(m, k)| add(m, k));
            b.into_iter().for_each(|(m, k)| add(m, sign * k));
        }
        _ => {
            for (ma, ka) in &a {
                for (mb, kb) in &b {
                    let mut m: Vec<Value> = ma.iter().chain(mb).copied().collect();
                    if m.len() > 2 {
                        return None;
                    }
                    m.sort();
                    add(m, ka.checked_mul(*kb)?);
                }
            }
        }
    }
    out.retain(|(_, k)| *k != 0);
    Some(out)
}

/// A polynomial that is `atom + k`.
fn as_term(p: &Poly) -> Option<Term> {
    let mut t = Term { atom: None, k: 0 };
    for (m, k) in p {
        match (m.as_slice(), *k) {
            ([], k) => t.k += k,
            ([a], 1) if t.atom.is_none() => t.atom = Some(*a),
            _ => return None,
        }
    }
    Some(t)
}

/// Which access's iteration a loop index belongs to (values outside the loops are shared).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Copy {
    Load,
    Store,
}

/// `to - from ≤ k` between nodes, or all of several edges (an equality).
#[derive(Clone, Debug)]
enum Edge {
    One(usize, usize, i128),
    All(Vec<Edge>),
}

/// The nodes of a system of difference constraints: node 0 is the constant zero, and each
/// loop index has a node per access (its iteration), other values one.
struct System<'a> {
    nodes: HashMap<(Option<Copy>, Value), usize>,
    loop_indices: &'a HashSet<Value>,
}

impl<'a> System<'a> {
    fn new(loop_indices: &'a HashSet<Value>) -> Self {
        System { nodes: HashMap::default(), loop_indices }
    }

    fn node(&mut self, copy: Copy, t: Term) -> usize {
        let Some(a) = t.atom else { return 0 };
        let key = (self.loop_indices.contains(&a).then_some(copy), a);
        let next = self.nodes.len() + 1;
        *self.nodes.entry(key).or_insert(next)
    }

    /// `a ≤ b`: `a.atom - b.atom ≤ b.k - a.k`, an edge from `b`'s node to `a`'s.
    fn le(&mut self, ca: Copy, a: Term, cb: Copy, b: Term) -> Edge {
        let (na, nb) = (self.node(ca, a), self.node(cb, b));
        Edge::One(nb, na, b.k - a.k)
    }

    fn lt(&mut self, ca: Copy, a: Term, cb: Copy, b: Term) -> Edge {
        self.le(ca, Term { k: a.k + 1, ..a }, cb, b)
    }

    fn eq(&mut self, ca: Copy, a: Term, cb: Copy, b: Term) -> [Edge; 2] {
        [self.le(ca, a, cb, b), self.le(cb, b, ca, a)]
    }

    /// Whether the constraints `facts` (each a list of cases, one of which holds) and
    /// `case` (all of which hold) have an integer solution. Difference constraints over the
    /// integers have one exactly when their graph has no negative cycle.
    fn feasible(&self, facts: &[Vec<Edge>], case: &[Edge]) -> bool {
        let mut chosen = vec![0; facts.len()];
        loop {
            let mut edges = vec![];
            for e in case.iter().chain(facts.iter().zip(&chosen).map(|(f, &c)| &f[c])) {
                flatten(e, &mut edges);
            }
            if !negative_cycle(self.nodes.len() + 1, &edges) {
                return true;
            }
            // The next combination of cases.
            let mut k = 0;
            loop {
                if k == facts.len() {
                    return false;
                }
                chosen[k] += 1;
                if chosen[k] < facts[k].len() {
                    break;
                }
                chosen[k] = 0;
                k += 1;
            }
        }
    }
}

fn flatten(e: &Edge, out: &mut Vec<(usize, usize, i128)>) {
    match e {
        Edge::One(a, b, k) => out.push((*a, *b, *k)),
        Edge::All(es) => es.iter().for_each(|e| flatten(e, out)),
    }
}

/// Bellman-Ford from a virtual source joined to every node.
fn negative_cycle(n: usize, edges: &[(usize, usize, i128)]) -> bool {
    let n = n.max(edges.iter().map(|e| e.0.max(e.1) + 1).max().unwrap_or(1));
    let mut dist = vec![0i128; n];
    for _ in 0..n {
        let mut changed = false;
        for &(from, to, k) in edges {
            if dist[from] + k < dist[to] {
                dist[to] = dist[from] + k;
                changed = true;
            }
        }
        if !changed {
            return false;
        }
    }
    true
}
