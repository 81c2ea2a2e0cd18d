//! Activity analysis: which values, variables and memory carry derivatives.
//!
//! A value is *varied* if it depends on an active input and *useful* if an active output
//! depends on it; it is active if both. Only active things get derivative code. Integers
//! and bools are never active. The analysis is flow-insensitive for variables and memory
//! (a variable is varied if any varied value is ever written to it), which is safe.

use cotan_ir::{HashSet, IdSet};

use cotan_ir::{Function, MathFn, Op, OpKind, Scalar, Value, Var};

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ActivityInfo {
    pub values: IdSet<Value>,
    pub vars: IdSet<Var>,
    pub mems: IdSet<Value>,
    /// Float types whose tape stack carries derivatives (when differentiating a reverse
    /// sweep, as forward-over-reverse does): each such stack is one piece of memory.
    pub tapes: HashSet<Scalar>,
}

impl ActivityInfo {
    pub fn value(&self, v: Value) -> bool {
        self.values.contains(&v)
    }
    pub fn var(&self, v: Var) -> bool {
        self.vars.contains(&v)
    }
    pub fn mem(&self, v: Value) -> bool {
        self.mems.contains(&v)
    }
    pub fn tape(&self, s: Option<Scalar>) -> bool {
        s.is_some_and(|s| self.tapes.contains(&s))
    }

    /// True if the op, or anything nested in it, has derivative code.
    pub fn op_is_active(&self, f: &Function, op: &Op) -> bool {
        let own = match &op.kind {
            OpKind::Store { mem, .. } | OpKind::Fill { mem, .. } | OpKind::VecPush { mem, .. } => self.mem(*mem),
            OpKind::DeclVar { var, .. } | OpKind::SetVar(var, _) => self.var(*var),
            OpKind::Push(v) => self.tape(f.ty(*v).scalar()),
            // A call that shares an active tape must be differentiated even when nothing
            // else about it is: its tangents are pushed (or popped) with the others.
            OpKind::Call { args, outs, tape, .. } => {
                outs.iter().any(|v| self.var(*v))
                    || args.iter().any(|(a, by_mut)| *by_mut && self.mem(*a))
                    || (*tape && floats_on_tape(self))
            }
            _ => op.result.is_some_and(|r| self.value(r) || self.mem(r)),
        };
        own || op.kind.regions().iter().any(|r| r.ops.iter().any(|o| self.op_is_active(f, o)))
    }
}

/// Functions whose derivative is zero almost everywhere: their results are never active.
pub fn is_piecewise_constant(f: MathFn) -> bool {
    matches!(f, MathFn::Signum | MathFn::Floor | MathFn::Ceil | MathFn::Round | MathFn::Trunc)
}

/// The operands through which derivatives flow into an op's result.
pub fn differentiable_operands(f: &Function, kind: &OpKind) -> Vec<Value> {
    let float = |v: &Value| f.ty(*v).is_float();
    match kind {
        OpKind::Unary(_, a) | OpKind::Cast(a) => [*a].into_iter().filter(float).collect(),
        OpKind::Binary(_, a, b) => [*a, *b].into_iter().filter(float).collect(),
        OpKind::Math(m, args) if !is_piecewise_constant(*m) => args.iter().copied().filter(float).collect(),
        OpKind::Select(_, a, b) => [*a, *b].into_iter().filter(float).collect(),
        _ => vec![],
    }
}

/// The analysis for a spec: active inputs are seeds; the outputs are an active result and
/// the active writable memory (its final contents).
pub fn analyze_spec(f: &Function, spec: &crate::Spec) -> ActivityInfo {
    let seeds: Vec<bool> = spec.inputs.iter().map(|a| a.is_active()).collect();
    let ret_useful = spec.ret.is_some_and(|a| a.is_active());
    let out_mems: Vec<Value> = f
        .params
        .iter()
        .zip(&spec.inputs)
        // (Memory passed by value, an array `[f64; N]`, is the callee's own: not an output.)
        .filter(|(p, a)| a.is_active() && f.ty(**p).mem().is_some_and(|m| m.access == cotan_ir::Access::Mut))
        .map(|(p, _)| *p)
        .collect();
    analyze(f, &seeds, ret_useful, &out_mems)
}

/// The float tapes: memory shared with the callees that take the tape (and, for a function
/// that takes its caller's tape, with the caller).
const FLOAT_TAPES: [Scalar; 2] = [Scalar::F32, Scalar::F64];

fn floats_on_tape(s: &ActivityInfo) -> bool {
    FLOAT_TAPES.iter().any(|t| s.tapes.contains(t))
}

/// Runs the analysis. `seeds` are the parameters whose derivative flows in (one flag per
/// parameter); `ret_useful` says if the returned value is an active output;
/// `out_mems` are the memory parameters whose final contents are active outputs.
pub fn analyze(f: &Function, seeds: &[bool], ret_useful: bool, out_mems: &[Value]) -> ActivityInfo {
    let varied = forward_pass(f, seeds);
    let useful = backward_pass(f, ret_useful, out_mems);
    ActivityInfo {
        values: varied.values.intersection(&useful.values),
        vars: varied.vars.intersection(&useful.vars),
        mems: varied.mems.intersection(&useful.mems),
        tapes: varied.tapes.intersection(&useful.tapes).copied().collect(),
    }
}

fn forward_pass(f: &Function, seeds: &[bool]) -> ActivityInfo {
    let mut s = ActivityInfo::default();
    if f.tape_param {
        // What the caller pushed may carry derivatives.
        s.tapes.extend(FLOAT_TAPES);
    }
    for (&p, &seeded) in f.params.iter().zip(seeds) {
        if seeded && f.ty(p).carries_derivative() {
            match f.ty(p).mem() {
                Some(_) => s.mems.insert(p),
                None => s.values.insert(p),
            };
        }
    }
    loop {
        let before = (s.values.len(), s.vars.len(), s.mems.len(), s.tapes.len());
        f.walk(&mut |op| {
            let result_float = op.result.is_some_and(|r| f.ty(r).is_float());
            match &op.kind {
                OpKind::Load { mem, .. } if s.mem(*mem) => {
                    s.values.insert(op.result.unwrap());
                }
                // A record and its fields are one piece of memory (fields of numbers
                // that carry no derivative stay inactive).
                OpKind::Field { base, .. } if s.mem(*base) || s.mem(op.result.unwrap()) => {
                    s.mems.insert(*base);
                    if f.ty(op.result.unwrap()).carries_derivative() {
                        s.mems.insert(op.result.unwrap());
                    }
                }
                // A sub-slice, a row or an offset is part of its base.
                OpKind::Slice { base, .. } | OpKind::Elem { base, .. } | OpKind::Offset { base, .. }
                    if s.mem(*base) || s.mem(op.result.unwrap()) =>
                {
                    s.mems.insert(*base);
                    s.mems.insert(op.result.unwrap());
                }
                OpKind::Store { mem, value, .. } | OpKind::Fill { mem, value, .. } | OpKind::VecPush { mem, value }
                    if s.value(*value) =>
                {
                    s.mems.insert(*mem);
                }
                // (Nested memory starts as copies of a row: memory.)
                OpKind::Alloc { init, .. } if s.value(*init) || s.mem(*init) => {
                    s.mems.insert(op.result.unwrap());
                }
                OpKind::DeclVar { var, init: v } | OpKind::SetVar(var, v) if s.value(*v) => {
                    s.vars.insert(*var);
                }
                OpKind::GetVar(var) if s.var(*var) => {
                    s.values.insert(op.result.unwrap());
                }
                OpKind::Push(v) if s.value(*v) => {
                    s.tapes.extend(f.ty(*v).scalar());
                }
                // A call's results and the memory it may write depend on all its arguments
                // (and on the tape, for a call that takes it; it may also push on it).
                OpKind::Call { args, outs, tape, .. }
                    if args.iter().any(|(a, _)| s.value(*a) || s.mem(*a)) || (*tape && floats_on_tape(&s)) =>
                {
                    s.vars.extend(outs.iter().filter(|v| f.var(**v).ty.is_float()));
                    s.mems.extend(args.iter().filter(|(a, m)| *m && f.ty(*a).carries_derivative()).map(|a| a.0));
                    if *tape {
                        s.tapes.extend(FLOAT_TAPES);
                    }
                }
                OpKind::Pop if result_float && s.tape(f.ty(op.result.unwrap()).scalar()) => {
                    s.values.insert(op.result.unwrap());
                }
                k if result_float && differentiable_operands(f, k).iter().any(|a| s.value(*a)) => {
                    s.values.insert(op.result.unwrap());
                }
                _ => {}
            }
        });
        if before == (s.values.len(), s.vars.len(), s.mems.len(), s.tapes.len()) {
            return s;
        }
    }
}

fn backward_pass(f: &Function, ret_useful: bool, out_mems: &[Value]) -> ActivityInfo {
    let mut s = ActivityInfo::default();
    s.mems.extend(out_mems.iter().copied());
    if f.tape_param {
        // What the function pushes is the caller's to pop.
        s.tapes.extend(FLOAT_TAPES);
    }
    loop {
        let before = (s.values.len(), s.vars.len(), s.mems.len(), s.tapes.len());
        f.walk_rev(&mut |op| {
            let result_useful = op.result.is_some_and(|r| s.value(r));
            if let OpKind::Call { args, .. } = &op.kind {
                // A callee may read back what it writes through a `*mut` pointer: what the
                // pointer points at is taken for useful, so that the callee's derivative gets
                // its shadow (cotan cannot make one for memory of unknown length).
                for (a, by_mut) in args {
                    if *by_mut && f.ty(*a).mem().is_some_and(|m| m.is_ptr() && m.elem.is_float()) {
                        s.mems.insert(*a);
                    }
                }
            }
            match &op.kind {
                OpKind::Return(vals) if ret_useful => {
                    s.values.extend(vals.iter().copied().filter(|v| f.ty(*v).is_float()));
                }
                OpKind::Load { mem, .. } if result_useful => {
                    s.mems.insert(*mem);
                }
                // An enum's field is read as a constant (never varied); the enum is marked
                // useful only so that the transforms refuse an enum that carries derivatives.
                OpKind::VariantField { value, .. } if result_useful => {
                    s.mems.insert(*value);
                }
                // A record and its fields are one piece of memory (fields of numbers
                // that carry no derivative stay inactive).
                OpKind::Field { base, .. } if s.mem(*base) || s.mem(op.result.unwrap()) => {
                    s.mems.insert(*base);
                    if f.ty(op.result.unwrap()).carries_derivative() {
                        s.mems.insert(op.result.unwrap());
                    }
                }
                // A sub-slice, a row or an offset is part of its base.
                OpKind::Slice { base, .. } | OpKind::Elem { base, .. } | OpKind::Offset { base, .. }
                    if s.mem(*base) || s.mem(op.result.unwrap()) =>
                {
                    s.mems.insert(*base);
                    s.mems.insert(op.result.unwrap());
                }
                OpKind::Store { mem, value, .. } | OpKind::Fill { mem, value, .. } | OpKind::VecPush { mem, value }
                    if s.mem(*mem) =>
                {
                    s.values.insert(*value);
                }
                OpKind::Alloc { init, .. } if s.mem(op.result.unwrap()) => {
                    if f.ty(*init).mem().is_some() {
                        s.mems.insert(*init);
                    } else {
                        s.values.insert(*init);
                    }
                }
                OpKind::DeclVar { var, init: v } | OpKind::SetVar(var, v) if s.var(*var) => {
                    s.values.insert(*v);
                }
                OpKind::GetVar(var) if result_useful => {
                    s.vars.insert(*var);
                }
                OpKind::Pop if result_useful => {
                    s.tapes.extend(f.ty(op.result.unwrap()).scalar());
                }
                OpKind::Push(v) if s.tape(f.ty(*v).scalar()) => {
                    s.values.insert(*v);
                }
                OpKind::Call { args, outs, tape, .. }
                    if outs.iter().any(|v| s.var(*v))
                        || args.iter().any(|(a, m)| *m && s.mem(*a))
                        || (*tape && floats_on_tape(&s)) =>
                {
                    if *tape {
                        s.tapes.extend(FLOAT_TAPES);
                    }
                    for (a, _) in args {
                        match f.ty(*a) {
                            cotan_ir::Ty::Mem(_) => s.mems.insert(*a),
                            _ => s.values.insert(*a),
                        };
                    }
                }
                k if result_useful => s.values.extend(differentiable_operands(f, k)),
                _ => {}
            }
        });
        if before == (s.values.len(), s.vars.len(), s.mems.len(), s.tapes.len()) {
            s.values.retain(|v| f.ty(*v).is_float());
            s.tapes.retain(|t| t.is_float());
            return s;
        }
    }
}
