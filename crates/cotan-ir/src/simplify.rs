//! Generic simplification passes.

use crate::{HashMap, IdMap};

use crate::{Const, Function, OpKind, Region, Ty, Value, Var};

/// Removes pure ops, sub-slices and reads of variables whose results nothing with an
/// effect needs, directly or through other such ops.
pub fn dead_code(f: &mut Function) {
    let removable = |op: &crate::Op| {
        // (A sub-slice or an offset only names memory: unused, it does nothing either.)
        op.kind.is_pure() || op.kind.view_base().is_some() || matches!(op.kind, OpKind::GetVar(_))
    };
    // The operands of each removable op (a range of `operands`), by its result; the
    // operands of the others are needed. (Dense vectors, not hash maps: the macros run
    // unoptimized, where hashing is most of this pass's time.)
    let mut defs = vec![0..0; f.values.len()];
    let mut operands = vec![];
    let mut work = vec![];
    f.walk(&mut |op| match op.result {
        Some(r) if removable(op) => {
            let start = operands.len();
            operands.extend(op.kind.operands());
            defs[r.0 as usize] = start..operands.len();
        }
        _ => work.extend(op.kind.operands()),
    });
    let mut needed = vec![false; f.values.len()];
    while let Some(v) = work.pop() {
        if !std::mem::replace(&mut needed[v.0 as usize], true) {
            work.extend_from_slice(&operands[defs[v.0 as usize].clone()]);
        }
    }
    prune(&mut f.body, &|op| removable(op) && op.result.is_some_and(|v| !needed[v.0 as usize]));
}

fn prune(r: &mut Region, dead: &dyn Fn(&crate::Op) -> bool) {
    r.ops.retain(|op| !dead(op));
    for op in &mut r.ops {
        for sub in op.kind.regions_mut() {
            prune(sub, dead);
        }
    }
}

/// How many times each value is used as an operand.
pub fn use_counts(f: &Function) -> IdMap<Value, usize> {
    let mut uses = IdMap::default();
    f.walk(&mut |op| {
        for v in op.kind.operands() {
            *uses.entry_or_default(v) += 1;
        }
    });
    uses
}

/// What a remembered expression reads, so that a write can forget it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Reads {
    Nothing,
    Var(Var),
    Mem(Value),
    /// Written: all memory.
    AnyMem,
}

/// The identity of a value CSE remembers: what computes it, from which operands.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Key {
    Get(Var),
    Load(Value, Option<Value>),
    Len(Value),
    /// A literal by its bits (0.0 and -0.0 stay apart), and its type.
    Const(u128, Ty),
    Unary(crate::UnOp, Value, Ty),
    Binary(crate::BinOp, Value, Value, Ty),
    Cmp(crate::CmpOp, Value, Value, Ty),
    Cast(Value, Ty),
    Math(crate::MathFn, Vec<Value>, Ty),
    Select(Value, Value, Value, Ty),
    Matches(Value, String, Ty),
}

/// The expressions CSE remembers, by key, and the keys by what they read: a write then
/// forgets what it affects without a walk over the whole table.
#[derive(Clone, Default)]
struct Table {
    values: HashMap<Key, (Value, Reads)>,
    readers: HashMap<Reads, Vec<Key>>,
}

impl Table {
    fn get(&self, key: &Key) -> Option<Value> {
        self.values.get(key).map(|e| e.0)
    }

    fn insert(&mut self, key: Key, value: Value, reads: Reads) {
        if reads != Reads::Nothing {
            self.readers.entry(reads).or_default().push(key.clone());
        }
        self.values.insert(key, (value, reads));
    }

    /// Forgets what reads anything in `written`.
    fn forget(&mut self, written: &[Reads]) {
        for &w in written {
            if w == Reads::AnyMem {
                let mems: Vec<Reads> = self.readers.keys().filter(|r| matches!(r, Reads::Mem(_))).copied().collect();
                for r in mems {
                    self.forget_readers(r);
                }
            } else {
                self.forget_readers(w);
            }
        }
    }

    fn forget_readers(&mut self, r: Reads) {
        for key in self.readers.remove(&r).unwrap_or_default() {
            // (A key may have been remembered again since, reading something else.)
            if self.values.get(&key).is_some_and(|e| e.1 == r) {
                self.values.remove(&key);
            }
        }
    }
}

/// Common subexpression elimination over the region tree, with constant folding and
/// forwarding of stored values to later reads of the same variable or element.
pub fn cse(f: &mut Function) {
    let mut body = std::mem::take(&mut f.body);
    let mut rename = HashMap::default();
    let mut cx = Cx { f, roots: HashMap::default() };
    cse_region(&mut cx, &mut body, Table::default(), &mut rename, &mut HashMap::default());
    f.body = body;
}

/// What CSE knows of the function: the buffer each view (sub-slice, offset) is part of, so
/// that a write through a view forgets what was read of its buffer, and the reverse.
struct Cx<'f> {
    f: &'f Function,
    roots: HashMap<Value, Value>,
}

impl Cx<'_> {
    fn root(&self, m: Value) -> Value {
        self.roots.get(&m).copied().unwrap_or(m)
    }
}

fn cse_region(
    cx: &mut Cx,
    r: &mut Region,
    mut table: Table,
    rename: &mut HashMap<Value, Value>,
    consts: &mut HashMap<Value, Const>,
) {
    let f = cx.f;
    let mut keep = Vec::with_capacity(r.ops.len());
    for mut op in std::mem::take(&mut r.ops) {
        for v in op.kind.operands_mut() {
            if let Some(n) = rename.get(v) {
                *v = *n;
            }
        }
        if let (Some(base), Some(res)) = (op.kind.view_base(), op.result) {
            let root = cx.root(base);
            cx.roots.insert(res, root);
        }
        if !op.kind.regions().is_empty() {
            let written = writes(cx, &op);
            table.forget(&written);
            for sub in op.kind.regions_mut() {
                cse_region(cx, sub, table.clone(), rename, consts);
            }
            table.forget(&written);
            keep.push(op);
            continue;
        }
        if let Some(c) = op.result.and_then(|r| fold(consts, &op.kind, f.ty(r))) {
            op.kind = OpKind::Const(c);
        }
        if let (OpKind::Const(c), Some(r)) = (&op.kind, op.result) {
            consts.insert(r, *c);
        }
        match &op.kind {
            OpKind::SetVar(var, v) | OpKind::DeclVar { var, init: v } => {
                table.forget(&[Reads::Var(*var)]);
                table.insert(Key::Get(*var), *v, Reads::Var(*var));
            }
            OpKind::Store { mem, index, value } => {
                let root = Reads::Mem(cx.root(*mem));
                table.forget(&[root]);
                table.insert(Key::Load(*mem, *index), *value, root);
            }
            OpKind::Fill { mem, .. } | OpKind::VecPush { mem, .. } => table.forget(&[Reads::Mem(cx.root(*mem))]),
            OpKind::Call { .. } => {
                let w = writes(cx, &op);
                table.forget(&w);
            }
            _ => {}
        }
        if let (Some(key), Some(res)) = (key(cx, &op), op.result) {
            match table.get(&key.0) {
                Some(v) => {
                    rename.insert(res, v);
                    continue;
                }
                None => table.insert(key.0, res, key.1),
            }
        }
        keep.push(op);
    }
    r.ops = keep;
}

/// The identity of an op's result, for ops whose result depends only on that identity.
fn key(cx: &Cx, op: &crate::Op) -> Option<(Key, Reads)> {
    let ty = op.result.map(|r| cx.f.ty(r))?;
    let pure = |k: Key| Some((k, Reads::Nothing));
    match &op.kind {
        OpKind::GetVar(var) => Some((Key::Get(*var), Reads::Var(*var))),
        OpKind::Load { mem, index } => Some((Key::Load(*mem, *index), Reads::Mem(cx.root(*mem)))),
        // A Vec's length changes when it is pushed to.
        OpKind::Len(mem) => Some((Key::Len(*mem), Reads::Mem(cx.root(*mem)))),
        OpKind::Const(c) => pure(Key::Const(
            match *c {
                Const::Float(x) => x.to_bits() as u128,
                Const::Int(i) => i as u128,
                Const::Bool(b) => b as u128,
            },
            ty,
        )),
        OpKind::Unary(o, a) => pure(Key::Unary(*o, *a, ty)),
        OpKind::Binary(o, a, b) => pure(Key::Binary(*o, *a, *b, ty)),
        OpKind::Cmp(o, a, b) => pure(Key::Cmp(*o, *a, *b, ty)),
        OpKind::Cast(a) => pure(Key::Cast(*a, ty)),
        OpKind::Math(m, args) => pure(Key::Math(*m, args.clone(), ty)),
        OpKind::Select(c, a, b) => pure(Key::Select(*c, *a, *b, ty)),
        OpKind::Matches { value, pattern } => pure(Key::Matches(*value, pattern.clone(), ty)),
        _ => None,
    }
}

/// The variables and memory an op writes, itself or anywhere inside.
fn writes(cx: &mut Cx, op: &crate::Op) -> Vec<Reads> {
    let f = cx.f;
    // Views made inside a region are part of their buffers too.
    let mut visit_views = |o: &crate::Op| {
        if let (Some(base), Some(res)) = (o.kind.view_base(), o.result) {
            let root = cx.roots.get(&base).copied().unwrap_or(base);
            cx.roots.insert(res, root);
        }
    };
    for r in op.kind.regions() {
        r.walk(&mut visit_views);
    }
    let cx = &*cx;
    let mut w = vec![];
    let mut visit = |o: &crate::Op| match &o.kind {
        OpKind::SetVar(var, _) | OpKind::DeclVar { var, .. } => w.push(Reads::Var(*var)),
        OpKind::Store { mem, .. } | OpKind::Fill { mem, .. } | OpKind::VecPush { mem, .. } => {
            w.push(Reads::Mem(cx.root(*mem)))
        }
        OpKind::Call { args, outs, .. } => {
            // A call that gets a record may write any of its fields.
            if args.iter().any(|a| f.ty(a.0).mem().is_some_and(|m| matches!(m.kind, crate::MemKind::Record(_)))) {
                w.push(Reads::AnyMem);
            }
            w.extend(args.iter().map(|a| Reads::Mem(cx.root(a.0))));
            w.extend(outs.iter().map(|v| Reads::Var(*v)));
        }
        _ => {}
    };
    visit(op);
    for r in op.kind.regions() {
        r.walk(&mut visit);
    }
    w
}

/// The constant an op computes when its operands are constants (the cases AD produces).
fn fold(consts: &HashMap<Value, Const>, kind: &OpKind, ty: crate::Ty) -> Option<Const> {
    let k = |v: &Value| consts.get(v).copied();
    let float = |x: f64| match ty {
        crate::Ty::Scalar(crate::Scalar::F32) => Const::Float(x as f32 as f64),
        _ => Const::Float(x),
    };
    match kind {
        OpKind::Cast(a) if ty.is_float() => match k(a)? {
            Const::Int(i) if i.unsigned_abs() < (1 << 24) => Some(float(i as f64)),
            _ => None,
        },
        OpKind::Binary(op, a, b) if ty.is_float() => {
            let (Const::Float(x), Const::Float(y)) = (k(a)?, k(b)?) else {
                return None;
            };
            let (x, y) = if ty == crate::Ty::F32 {
                (x as f32, y as f32)
            } else {
                return fold64(*op, x, y).map(Const::Float);
            };
            let r = match op {
                crate::BinOp::Add => x + y,
                crate::BinOp::Sub => x - y,
                crate::BinOp::Mul => x * y,
                crate::BinOp::Div => x / y,
                _ => return None,
            };
            Some(Const::Float(r as f64))
        }
        OpKind::Binary(op, a, b) if ty.scalar().is_some_and(crate::Scalar::is_int) => {
            let (Const::Int(x), Const::Int(y)) = (k(a)?, k(b)?) else {
                return None;
            };
            // Only small results, far from any overflow of the type.
            let r = match op {
                crate::BinOp::Add => x + y,
                crate::BinOp::Sub => x - y,
                crate::BinOp::Mul => x * y,
                _ => return None,
            };
            let small = r.unsigned_abs() < (1 << 30) && (r >= 0 || ty.scalar().unwrap().is_signed());
            small.then_some(Const::Int(r))
        }
        OpKind::Unary(crate::UnOp::Neg, a) if ty.is_float() => match k(a)? {
            Const::Float(x) => Some(Const::Float(-x)),
            _ => None,
        },
        _ => None,
    }
}

fn fold64(op: crate::BinOp, x: f64, y: f64) -> Option<f64> {
    Some(match op {
        crate::BinOp::Add => x + y,
        crate::BinOp::Sub => x - y,
        crate::BinOp::Mul => x * y,
        crate::BinOp::Div => x / y,
        _ => return None,
    })
}
