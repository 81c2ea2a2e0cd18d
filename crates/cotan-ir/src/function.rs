//! Functions, regions, values and variables: the IR's data structures.

use crate::{OpKind, Scalar, Ty};

/// An SSA value: an index into [`Function::values`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Value(pub u32);

/// A mutable local: an index into [`Function::vars`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Var(pub u32);

/// An opaque reference to a source location, kept by whoever built the IR
/// (the proc macro maps it to a `proc_macro2::Span`). `SpanId::NONE` means unknown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct SpanId(pub u32);

impl SpanId {
    pub const NONE: SpanId = SpanId(0);
}

#[derive(Clone, Debug, PartialEq)]
pub struct ValueData {
    pub ty: Ty,
    /// The user's name for the value, when it was bound by `let` or is a parameter.
    pub name: Option<String>,
    pub span: SpanId,
}

#[derive(Clone, Debug, PartialEq)]
pub struct VarData {
    pub ty: Scalar,
    pub name: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Op {
    pub kind: OpKind,
    pub result: Option<Value>,
    pub span: SpanId,
}

/// A sequence of operations executed in order.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Region {
    pub ops: Vec<Op>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    pub name: String,
    pub params: Vec<Value>,
    /// The returned values: none is `()`, one is returned bare, several as a tuple.
    pub returns: Vec<Ty>,
    pub values: Vec<ValueData>,
    pub vars: Vec<VarData>,
    /// The Rust types of the records (structs and tuples) that `MemKind::Record` refers to.
    pub records: Vec<String>,
    /// For a function generic over its float type (`fn f<T: Float>`), the parameter's
    /// name: `f64` in the IR stands for it.
    pub generic_float: Option<String>,
    /// Generic type parameters other than the float type, as declared (`M: Model`): records
    /// may be of these types, and calls may be of their traits' methods.
    pub type_params: Vec<String>,
    /// The function pushes to and pops from its caller's tape rather than its own (the
    /// augmented forward sweep and the reverse sweep of a call, which share one record).
    pub tape_param: bool,
    /// The source uses `unsafe` (an `unsafe fn`, or `unsafe` blocks): generated code makes
    /// its calls and its reads of record fields (a union's) in `unsafe` blocks. (Raw-pointer
    /// operations always are.)
    pub unsafe_code: bool,
    /// Loops the source annotated with `cotan::checkpoint`: reverse mode records them by
    /// snapshots of their state and recomputes their steps (forward mode ignores them).
    pub checkpoints: Vec<Checkpoint>,
    /// The index values of the `for` loops the source wrote over `cotan::par(lo..hi)`:
    /// their iterations may run in any order and at once (`#[cotan::kernel]` runs the
    /// primal's in parallel; the transforms run them in order). The text form does not
    /// carry them.
    pub par_loops: Vec<Value>,
    /// Variables that only collect sums of derivative contributions (reverse mode's
    /// adjoints): the order of their additions does not matter, so code generation may split
    /// a loop's additions into independent partial sums, which the CPU adds in parallel.
    /// The text form does not carry them.
    pub sums: Vec<Var>,
    pub body: Region,
}

/// A `for` loop over `lo..hi` (named by its index) whose reverse stores snapshots of its
/// loop-carried state and recomputes the iterations between them in the reverse sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    pub index: Value,
    pub schedule: Schedule,
    /// The annotation (`cotan::checkpoint(..)`), for errors.
    pub span: SpanId,
}

/// When a checkpointed loop stores snapshots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// At the start of every `k`-th iteration.
    Every(u64),
    /// Griewank's binomial schedule (Revolve's) with at most this many snapshots held at once.
    Binomial(u64),
}

/// The first iteration of the right part when Revolve splits iterations `a..b` whose start
/// is stored, with `free` more snapshots available (`free >= 1`, `b - a >= 2`): the
/// binomial schedule, which needs the fewest recomputed iterations. Generated code calls
/// `cotan::rt::binomial_split`, the same function (the interpreter runs this one).
pub fn binomial_split(a: usize, b: usize, free: usize) -> usize {
    let l = b - a;
    if l < 2 || free == 0 {
        return b.saturating_sub(1).max(a);
    }
    // Revolve's `ds`: the snapshots from the one at `a` on.
    let ds = free + 1;
    let (mut reps, mut range) = (0usize, 1usize);
    while range < l {
        reps += 1;
        range = range * (reps + ds) / reps;
    }
    let bino1 = range * reps / (ds + reps);
    let bino2 = if ds > 1 { bino1 * ds / (ds + reps - 1) } else { 1 };
    let bino3 = match ds {
        1 => 0,
        2 => 1,
        _ => bino2 * (ds - 1) / (ds + reps - 2),
    };
    let bino4 = bino2 * (reps - 1) / ds;
    let bino5 = match ds {
        0..=2 => 0,
        3 => 1,
        _ => bino3 * (ds - 2) / reps,
    };
    let step = if l <= bino1 + bino3 {
        bino4
    } else if l >= range - bino5 {
        bino1
    } else {
        l - bino2 - bino3
    };
    a + step.clamp(1, l - 1)
}

impl Function {
    pub fn new(name: impl Into<String>) -> Function {
        Function {
            name: name.into(),
            params: vec![],
            returns: vec![],
            values: vec![],
            vars: vec![],
            records: vec![],
            generic_float: None,
            type_params: vec![],
            tape_param: false,
            unsafe_code: false,
            checkpoints: vec![],
            par_loops: vec![],
            sums: vec![],
            body: Region::default(),
        }
    }

    /// The index of a record type, added if new.
    pub fn record(&mut self, rust_type: &str) -> u32 {
        match self.records.iter().position(|r| r == rust_type) {
            Some(k) => k as u32,
            None => {
                self.records.push(rust_type.to_string());
                self.records.len() as u32 - 1
            }
        }
    }

    pub fn ty(&self, v: Value) -> Ty {
        self.values[v.0 as usize].ty
    }

    pub fn value(&self, v: Value) -> &ValueData {
        &self.values[v.0 as usize]
    }

    pub fn var(&self, v: Var) -> &VarData {
        &self.vars[v.0 as usize]
    }

    pub fn new_value(&mut self, ty: Ty, name: Option<String>, span: SpanId) -> Value {
        self.values.push(ValueData { ty, name, span });
        Value(self.values.len() as u32 - 1)
    }

    pub fn new_var(&mut self, ty: Scalar, name: impl Into<String>) -> Var {
        self.vars.push(VarData { ty, name: name.into() });
        Var(self.vars.len() as u32 - 1)
    }

    pub fn add_param(&mut self, ty: Ty, name: impl Into<String>, span: SpanId) -> Value {
        let v = self.new_value(ty, Some(name.into()), span);
        self.params.push(v);
        v
    }

    /// Calls `f` on every op, depth first, in program order.
    pub fn walk<'a>(&'a self, f: &mut impl FnMut(&'a Op)) {
        self.body.walk(f)
    }

    /// Calls `f` on every op in reverse program order (nested regions before the op that
    /// holds them): a backward dataflow pass converges in fewer rounds this way.
    pub fn walk_rev(&self, f: &mut impl FnMut(&Op)) {
        self.body.walk_rev(f)
    }
}

impl Region {
    /// Calls `f` on every op in program order (an op before the regions it holds).
    pub fn walk<'a>(&'a self, f: &mut impl FnMut(&'a Op)) {
        for op in &self.ops {
            f(op);
            for r in op.kind.regions() {
                r.walk(f);
            }
        }
    }

    pub fn walk_rev(&self, f: &mut impl FnMut(&Op)) {
        for op in self.ops.iter().rev() {
            for r in op.kind.regions().into_iter().rev() {
                r.walk_rev(f);
            }
            f(op);
        }
    }

    pub fn walk_mut(&mut self, f: &mut impl FnMut(&mut Op)) {
        for op in &mut self.ops {
            f(op);
            for r in op.kind.regions_mut() {
                r.walk_mut(f);
            }
        }
    }
}

/// Appends ops to a region of a function, creating their result values.
pub struct Builder<'f> {
    pub func: &'f mut Function,
    pub ops: Vec<Op>,
    pub span: SpanId,
}

impl<'f> Builder<'f> {
    pub fn new(func: &'f mut Function) -> Builder<'f> {
        Builder { func, ops: vec![], span: SpanId::NONE }
    }

    /// Appends an op with a result of type `ty`.
    pub fn op(&mut self, kind: OpKind, ty: Ty) -> Value {
        let v = self.func.new_value(ty, None, self.span);
        self.ops.push(Op { kind, result: Some(v), span: self.span });
        v
    }

    /// Appends an op without a result.
    pub fn effect(&mut self, kind: OpKind) {
        self.ops.push(Op { kind, result: None, span: self.span });
    }

    pub fn float(&mut self, x: f64, ty: Scalar) -> Value {
        self.op(OpKind::Const(crate::Const::Float(x)), Ty::Scalar(ty))
    }

    pub fn int(&mut self, x: i128, ty: Scalar) -> Value {
        self.op(OpKind::Const(crate::Const::Int(x)), Ty::Scalar(ty))
    }

    pub fn bool(&mut self, b: bool) -> Value {
        self.op(OpKind::Const(crate::Const::Bool(b)), Ty::BOOL)
    }

    pub fn binary(&mut self, op: crate::BinOp, a: Value, b: Value) -> Value {
        let ty = self.func.ty(a);
        self.op(OpKind::Binary(op, a, b), ty)
    }

    pub fn unary(&mut self, op: crate::UnOp, a: Value) -> Value {
        let ty = self.func.ty(a);
        self.op(OpKind::Unary(op, a), ty)
    }

    pub fn cmp(&mut self, op: crate::CmpOp, a: Value, b: Value) -> Value {
        self.op(OpKind::Cmp(op, a, b), Ty::BOOL)
    }

    pub fn math(&mut self, f: crate::MathFn, args: Vec<Value>) -> Value {
        let ty = self.func.ty(args[0]);
        self.op(OpKind::Math(f, args), ty)
    }

    pub fn select(&mut self, c: Value, a: Value, b: Value) -> Value {
        let ty = self.func.ty(a);
        self.op(OpKind::Select(c, a, b), ty)
    }

    pub fn cast(&mut self, a: Value, to: Scalar) -> Value {
        self.op(OpKind::Cast(a), Ty::Scalar(to))
    }

    /// Takes the ops built so far as a region, leaving the builder empty.
    pub fn finish(&mut self) -> Region {
        Region { ops: std::mem::take(&mut self.ops) }
    }
}
