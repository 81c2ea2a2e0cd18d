//! The verifier: checks that a function is well formed (scoping of SSA values, types,
//! placement of `return`) so that passes can rely on it instead of re-checking.
//!
//! Not checked: that a var is declared before it is read (vars are dynamic state, like the
//! interpreter's memory); values that nothing defines are allowed as long as nothing uses them.

use std::fmt;

use crate::print::{print_op, print_ty};
use crate::{BinOp, Const, Function, MathFn, MemKind, MemTy, Op, OpKind, Region, Scalar, Ty, UnOp, Value, Var};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError {
    /// The first line of the offending op, as printed; `None` for function-level errors.
    pub op: Option<String>,
    pub message: String,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.op {
            Some(op) => write!(f, "`{op}`: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for VerifyError {}

/// Checks `f`, returning every problem found.
pub fn verify(f: &Function) -> Result<(), Vec<VerifyError>> {
    let n = f.values.len();
    let mut v = Verifier { f, errors: vec![], def_count: vec![0; n], visible: vec![false; n] };
    let mut scope = vec![];
    for &p in &f.params {
        if let Err(message) = v.define(p, &mut scope) {
            v.errors.push(VerifyError { op: None, message: format!("parameter: {message}") });
        }
    }
    v.region(&f.body, None, true);
    if !f.returns.is_empty() && !matches!(f.body.ops.last(), Some(Op { kind: OpKind::Return(_), .. })) {
        let message = format!("the function returns {} but its body does not end with `return`", tuple(&f.returns));
        v.errors.push(VerifyError { op: None, message });
    }
    if v.errors.is_empty() {
        Ok(())
    } else {
        Err(v.errors)
    }
}

fn tuple(tys: &[Ty]) -> String {
    let tys: Vec<String> = tys.iter().map(|&t| print_ty(t)).collect();
    format!("({})", tys.join(", "))
}

fn int_range(s: Scalar) -> (i128, i128) {
    s.int_range()
}

struct Verifier<'f> {
    f: &'f Function,
    errors: Vec<VerifyError>,
    /// How many definitions of each value have been seen so far.
    def_count: Vec<u32>,
    /// Values defined in the current region or an enclosing one, before the current op.
    visible: Vec<bool>,
}

type Check<T = ()> = Result<T, String>;

impl Verifier<'_> {
    fn error(&mut self, op: &Op, message: String) {
        let line = print_op(self.f, op).lines().next().unwrap_or_default().to_string();
        self.errors.push(VerifyError { op: Some(line), message });
    }

    fn define(&mut self, v: Value, scope: &mut Vec<Value>) -> Check {
        let i = v.0 as usize;
        if i >= self.f.values.len() {
            return Err(format!("defines %{}, which is not in the function's value table", v.0));
        }
        self.def_count[i] += 1;
        if self.def_count[i] > 1 {
            return Err(format!("defines %{}, which is already defined elsewhere", v.0));
        }
        self.visible[i] = true;
        scope.push(v);
        Ok(())
    }

    /// Checks `r` in a scope of its own that starts with `index` (a loop index). Returns the
    /// values defined at its top level; they are no longer visible afterwards.
    fn region(&mut self, r: &Region, index: Option<(&Op, Value)>, top: bool) -> Vec<Value> {
        let mut scope = vec![];
        if let Some((op, v)) = index {
            if let Err(m) = self.define(v, &mut scope) {
                self.error(op, format!("loop index: {m}"));
            }
        }
        for (i, op) in r.ops.iter().enumerate() {
            if matches!(op.kind, OpKind::Return(_)) && !(top && i + 1 == r.ops.len()) {
                self.error(op, "`return` may only be the last op of the function's body".into());
            }
            self.op(op, &mut scope);
        }
        for v in &scope {
            self.visible[v.0 as usize] = false;
        }
        scope
    }

    fn op(&mut self, op: &Op, scope: &mut Vec<Value>) {
        // A while's condition is an operand of the loop but is defined inside it: checked below.
        let operands = if let OpKind::While { .. } = op.kind { vec![] } else { op.kind.operands() };
        let mut in_range = true;
        for v in operands {
            if let Err(m) = self.check_use(v) {
                in_range &= (v.0 as usize) < self.f.values.len();
                self.error(op, m);
            }
        }
        let defs_ok = op.result.into_iter().chain(op.kind.inner_defs()).all(|d| (d.0 as usize) < self.f.values.len());
        if in_range && defs_ok {
            if let Err(m) = self.types(op) {
                self.error(op, m);
            }
        }
        match &op.kind {
            OpKind::If { then_region, else_region, .. } => {
                self.region(then_region, None, false);
                self.region(else_region, None, false);
            }
            OpKind::For { index, body, .. } => {
                self.region(body, Some((op, *index)), false);
            }
            OpKind::While { cond_region, cond, body, .. } => {
                self.no_writes(cond_region);
                let defined = self.region(cond_region, None, false);
                if !defined.contains(cond) {
                    let m =
                        format!("the condition %{} is not defined at the top level of the condition region", cond.0);
                    self.error(op, m);
                }
                self.region(body, None, false);
            }
            _ => {}
        }
        if let Some(r) = op.result {
            if let Err(m) = self.define(r, scope) {
                self.error(op, m);
            }
        }
    }

    fn check_use(&self, v: Value) -> Check {
        let i = v.0 as usize;
        if i >= self.f.values.len() {
            Err(format!("uses %{}, which is not in the function's value table", v.0))
        } else if self.visible[i] {
            Ok(())
        } else if self.def_count[i] == 0 {
            Err(format!("uses %{} before its definition", v.0))
        } else {
            Err(format!("uses %{} outside the region that defines it", v.0))
        }
    }

    /// A while's condition region runs once more than its body: it may not change state
    /// outside itself (variables it declares itself, as `&&` needs, are allowed).
    fn no_writes(&mut self, r: &Region) {
        let mut own = crate::HashSet::default();
        r.walk(&mut |op| {
            if let OpKind::DeclVar { var, .. } = op.kind {
                own.insert(var);
            }
        });
        let mut bad = vec![];
        r.walk(&mut |op| {
            use OpKind::*;
            let outside = match &op.kind {
                SetVar(var, _) => !own.contains(var),
                Store { .. } | Fill { .. } | VecPush { .. } | Push(_) | Pop => true,
                _ => false,
            };
            if outside {
                bad.push(op.clone());
            }
        });
        for op in bad {
            self.error(&op, "a while loop's condition region may not write memory, vars or the tape".into());
        }
    }

    fn ty(&self, v: Value) -> Ty {
        self.f.ty(v)
    }

    fn scalar(&self, v: Value, what: &str) -> Check<Scalar> {
        self.ty(v).scalar().ok_or_else(|| format!("{what} %{} is memory ({}), not a scalar", v.0, print_ty(self.ty(v))))
    }

    fn mem(&self, v: Value) -> Check<MemTy> {
        self.ty(v).mem().ok_or_else(|| format!("%{} is a {}, not memory", v.0, print_ty(self.ty(v))))
    }

    fn expect(&self, v: Value, ty: Ty, what: &str) -> Check {
        if self.ty(v) == ty {
            Ok(())
        } else {
            Err(format!("{what} %{} is {}, expected {}", v.0, print_ty(self.ty(v)), print_ty(ty)))
        }
    }

    fn var_ty(&self, var: Var) -> Check<Ty> {
        match self.f.vars.get(var.0 as usize) {
            Some(d) => Ok(Ty::Scalar(d.ty)),
            None => Err(format!("${} is not in the function's var table", var.0)),
        }
    }

    fn exit_var(&self, exit: Option<Var>) -> Check {
        match exit {
            Some(var) if self.var_ty(var)? != Ty::BOOL => Err(format!("exit var ${} is not a bool", var.0)),
            _ => Ok(()),
        }
    }

    /// `index` is present and `usize` exactly when `m` is an array.
    fn index(&self, m: MemTy, index: Option<Value>) -> Check {
        match (m.kind, index) {
            (MemKind::Cell, None) => Ok(()),
            (MemKind::Cell, Some(_)) => Err("a cell is accessed without an index".into()),
            (MemKind::Record(_), _) => Err("a struct is accessed through its fields".into()),
            (MemKind::Nested(..) | MemKind::Records(..), _) => {
                Err("nested memory is accessed through its rows (`elem`)".into())
            }
            (MemKind::ArrayPtr(_), _) => Err("an array pointer is accessed through the array it points at".into()),
            (_, None) => Err("an array is accessed with an index".into()),
            (_, Some(i)) => self.expect(i, Ty::USIZE, "index"),
        }
    }

    fn writable(&self, mem: Value, m: MemTy) -> Check {
        if m.is_writable() {
            Ok(())
        } else {
            Err(format!("writes to %{}, which is shared memory ({})", mem.0, print_ty(Ty::Mem(m))))
        }
    }

    fn types(&self, op: &Op) -> Check {
        use OpKind::*;
        let has_result = matches!(
            op.kind,
            Const(_)
                | Unary(..)
                | Binary(..)
                | Cmp(..)
                | Cast(_)
                | Math(..)
                | Select(..)
                | Load { .. }
                | Len(_)
                | Matches { .. }
                | VariantField { .. }
                | Field { .. }
                | ZeroRecord(_)
                | CopyRecords { .. }
                | AllocRecords { .. }
                | Alloc { .. }
                | Slice { .. }
                | Elem { .. }
                | Offset { .. }
                | GetVar(_)
                | Pop
                | VecPush { .. }
        );
        let r = match (has_result, op.result) {
            (true, None) => return Err("this op needs a result".into()),
            (false, Some(_)) => return Err("this op has no result".into()),
            (_, Some(r)) => self.ty(r),
            (false, None) => Ty::BOOL, // no result: never looked at
        };
        let rs = r.scalar();
        match &op.kind {
            Const(c) => {
                let ok = match (c, rs) {
                    (crate::Const::Float(_), Some(s)) => s.is_float(),
                    (crate::Const::Int(i), Some(s)) if s.is_int() => {
                        let (lo, hi) = int_range(s);
                        if !(lo..=hi).contains(i) {
                            return Err(format!("{i} does not fit in {s}"));
                        }
                        true
                    }
                    (crate::Const::Bool(_), Some(s)) => s == Scalar::Bool,
                    _ => false,
                };
                if !ok {
                    return Err(format!("a {} literal cannot have type {}", const_kind(c), print_ty(r)));
                }
            }
            Unary(u, a) => {
                let s = self.scalar(*a, "operand")?;
                let ok = match u {
                    UnOp::Neg => s.is_float() || s.is_signed(),
                    UnOp::Not => s.is_int() || s == Scalar::Bool,
                };
                if !ok {
                    return Err(format!("cannot apply `{}` to {s}", crate::print::unop_name(*u)));
                }
                self.expect(*a, r, "operand")?;
            }
            Binary(b, x, y) => {
                let s = self.scalar(*x, "left operand")?;
                self.expect(*x, r, "left operand")?;
                let ok = match b {
                    BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem => s != Scalar::Bool,
                    BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => !s.is_float(),
                    BinOp::Shl | BinOp::Shr => s.is_int(),
                };
                if !ok {
                    return Err(format!("cannot apply `{}` to {s}", crate::print::binop_name(*b)));
                }
                if matches!(b, BinOp::Shl | BinOp::Shr) {
                    // As in Rust, the shift amount may have any integer type.
                    if !self.scalar(*y, "shift amount")?.is_int() {
                        return Err(format!("shift amount %{} is not an integer", y.0));
                    }
                } else {
                    self.expect(*y, r, "right operand")?;
                }
            }
            Cmp(_, x, y) => {
                self.scalar(*x, "left operand")?;
                self.expect(*y, self.ty(*x), "right operand")?;
                if r != Ty::BOOL {
                    return Err(format!("a comparison's result is bool, not {}", print_ty(r)));
                }
            }
            Cast(a) => {
                let from = self.scalar(*a, "operand")?;
                let to = rs.ok_or("a cast's result must be a scalar")?;
                let numeric = |s: Scalar| s != Scalar::Bool;
                let ok = if to == Scalar::Bool { from == Scalar::Bool } else { numeric(from) || to.is_int() };
                if !ok {
                    return Err(format!("cannot cast {from} to {to}"));
                }
            }
            Math(m, args) => {
                if args.len() != m.arity() {
                    return Err(format!("{} takes {} arguments, not {}", m.name(), m.arity(), args.len()));
                }
                let recv = self.scalar(args[0], "receiver")?;
                if !recv.is_float() {
                    return Err(format!("{} needs a float receiver, not {recv}", m.name()));
                }
                self.expect(args[0], r, "receiver")?;
                for (k, &a) in args.iter().enumerate().skip(1) {
                    let want = if *m == MathFn::Powi { Ty::Scalar(Scalar::I32) } else { r };
                    self.expect(a, want, &format!("argument {k}"))?;
                }
            }
            Select(c, a, b) => {
                self.expect(*c, Ty::BOOL, "condition")?;
                self.expect(*a, r, "first arm")?;
                self.expect(*b, r, "second arm")?;
            }
            Load { mem, index } => {
                let m = self.mem(*mem)?;
                self.index(m, *index)?;
                if r != Ty::Scalar(m.elem) {
                    return Err(format!("loads a {} from memory of {}", print_ty(r), m.elem));
                }
            }
            Store { mem, index, value } => {
                let m = self.mem(*mem)?;
                self.writable(*mem, m)?;
                self.index(m, *index)?;
                self.expect(*value, Ty::Scalar(m.elem), "stored value")?;
            }
            VariantField { value, .. } => {
                let b = self.mem(*value)?;
                if !matches!(b.kind, MemKind::Record(_)) {
                    return Err(format!("%{} is not an enum", value.0));
                }
                if rs.is_none() {
                    return Err("a variant's field is a number".into());
                }
            }
            Matches { value, .. } => {
                let b = self.mem(*value)?;
                if !matches!(b.kind, MemKind::Record(_)) {
                    return Err(format!("%{} is not a struct or enum", value.0));
                }
                if r != Ty::BOOL {
                    return Err("matches gives a bool".into());
                }
            }
            Field { base, .. } => {
                let b = self.mem(*base)?;
                let MemKind::Record(n) = b.kind else { return Err(format!("%{} is not a struct", base.0)) };
                if n as usize >= self.f.records.len() {
                    return Err(format!("struct {n} is not in the function's struct table"));
                }
                match r.mem() {
                    Some(m) if m.access == b.access => {}
                    _ => {
                        return Err(format!(
                            "a field of a {} is memory with the same access",
                            print_ty(self.f.ty(*base))
                        ))
                    }
                }
            }
            Len(a) => {
                if matches!(self.mem(*a)?.kind, MemKind::Cell | MemKind::Record(_)) {
                    return Err(format!("%{} is a cell, which has no length", a.0));
                }
                if self.mem(*a)?.is_ptr() {
                    return Err(format!("%{} is a raw pointer, whose memory has no known length", a.0));
                }
                if r != Ty::USIZE {
                    return Err(format!("len's result is usize, not {}", print_ty(r)));
                }
            }
            Alloc { len, init } => {
                let m = r.mem().filter(|m| {
                    m.access == crate::Access::Owned
                        && matches!(
                            m.kind,
                            MemKind::Vec
                                | MemKind::Array(_)
                                | MemKind::Nested(crate::Dim::Vec | crate::Dim::Array(_), ..)
                        )
                });
                let m = m.ok_or_else(|| {
                    format!("allocates a {}; only owned Vec<T> and [T; N] can be allocated", print_ty(r))
                })?;
                // Nested memory starts as copies of a row.
                let init_ty = match m.kind.row() {
                    Some(row) => Ty::Mem(MemTy { kind: row, elem: m.elem, access: crate::Access::Owned }),
                    None => Ty::Scalar(m.elem),
                };
                self.expect(*init, init_ty, "initial value")?;
                self.expect(*len, Ty::USIZE, "length")?;
            }
            Elem { base, index } => {
                let m = self.mem(*base)?;
                let Some(row) = m.kind.row() else {
                    return Err(format!("%{} has no rows: it is not nested memory", base.0));
                };
                let v = r.mem().filter(|v| v.kind == row && v.elem == m.elem && v.access != crate::Access::Owned);
                let v = v.ok_or_else(|| {
                    format!("a row of {} is a reference to {}", print_ty(Ty::Mem(m)), row.rust(m.elem))
                })?;
                if v.access == crate::Access::Mut {
                    self.writable(*base, m)?;
                }
                self.expect(*index, Ty::USIZE, "index")?;
            }
            Slice { base, start, end } => {
                let m = self.mem(*base)?;
                if !matches!(m.kind, MemKind::Slice | MemKind::Array(_) | MemKind::Vec | MemKind::Ptr) {
                    return Err(format!("%{} is not a slice, an array, a vector or a pointer", base.0));
                }
                let v = r
                    .mem()
                    // (A sub-slice may be taken as an array, `first_chunk::<3>()`.)
                    .filter(|v| {
                        matches!(v.kind, MemKind::Slice | MemKind::Array(_))
                            && v.elem == m.elem
                            && v.access != crate::Access::Owned
                    });
                let v = v.ok_or_else(|| {
                    format!("a sub-slice is a reference to a slice of {}, not {}", m.elem, print_ty(r))
                })?;
                if v.access == crate::Access::Mut {
                    self.writable(*base, m)?;
                }
                self.expect(*start, Ty::USIZE, "start")?;
                self.expect(*end, Ty::USIZE, "end")?;
            }
            Offset { base, offset } => {
                let b = self.mem(*base)?;
                let v = r.mem().ok_or("an offset is memory")?;
                if !matches!(self.ty(*offset), Ty::Scalar(Scalar::Usize | Scalar::Isize)) {
                    return Err(format!("offset %{} is {}, not usize or isize", offset.0, print_ty(self.ty(*offset))));
                }
                if v.elem != b.elem || v.access == crate::Access::Owned || matches!(b.kind, MemKind::Record(_)) {
                    return Err(format!("an offset of {} cannot be {}", print_ty(Ty::Mem(b)), print_ty(r)));
                }
                let ok = match v.kind {
                    MemKind::Ptr | MemKind::ArrayPtr(_) => true,
                    MemKind::Cell => !matches!(b.kind, MemKind::ArrayPtr(_)),
                    MemKind::Array(n) => b.kind == MemKind::ArrayPtr(n),
                    _ => false,
                };
                if !ok {
                    return Err(format!("an offset of {} cannot be {}", print_ty(Ty::Mem(b)), print_ty(r)));
                }
                if v.access == crate::Access::Mut {
                    self.writable(*base, b)?;
                }
            }
            Fill { mem, value, resize } => {
                let m = self.mem(*mem)?;
                self.writable(*mem, m)?;
                if let Some([len, old_len]) = resize {
                    if m.kind != MemKind::Vec || m.access != crate::Access::Owned {
                        return Err("a fill that resizes needs an owned Vec".into());
                    }
                    self.expect(*len, Ty::USIZE, "new length")?;
                    self.expect(*old_len, Ty::USIZE, "old length")?;
                }
                if matches!(m.kind, MemKind::Cell | MemKind::Nested(..)) {
                    return Err("fill needs an array of numbers".into());
                }
                if m.is_ptr() {
                    return Err("fill needs memory of a known length, not a raw pointer".into());
                }
                self.expect(*value, Ty::Scalar(m.elem), "fill value")?;
            }
            Call { outs, .. } => {
                for v in outs {
                    self.var_ty(*v)?;
                }
            }
            VecPush { mem, value } => {
                let m = self.mem(*mem)?;
                if m.kind != MemKind::Vec || m.access != crate::Access::Owned {
                    return Err("push needs an owned Vec".into());
                }
                self.expect(*value, Ty::Scalar(m.elem), "pushed value")?;
                if r != Ty::USIZE {
                    return Err(format!("push gives the index written, a usize, not {}", print_ty(r)));
                }
            }
            DeclVar { var, init: v } | SetVar(var, v) => {
                self.expect(*v, self.var_ty(*var)?, &format!("value for ${}", var.0))?
            }
            GetVar(var) => {
                let t = self.var_ty(*var)?;
                if r != t {
                    return Err(format!("${} is {}, not {}", var.0, print_ty(t), print_ty(r)));
                }
            }
            If { cond, .. } | Assert { cond, .. } => self.expect(*cond, Ty::BOOL, "condition")?,
            Print { mac, .. } => {
                if !matches!(mac.as_str(), "println" | "print" | "eprintln" | "eprint") {
                    return Err(format!("`{mac}!` is not a printing macro"));
                }
            }
            For { index, lo, hi, step, exit, .. } => {
                let it = self.ty(*index);
                if !it.scalar().is_some_and(Scalar::is_int) {
                    return Err(format!("the loop index is {}, not an integer", print_ty(it)));
                }
                self.expect(*lo, it, "lower bound")?;
                self.expect(*hi, it, "upper bound")?;
                if let Some(s) = step {
                    self.expect(*s, it, "step")?;
                }
                self.exit_var(*exit)?;
            }
            While { cond, exit, .. } => {
                if (cond.0 as usize) < self.f.values.len() {
                    self.expect(*cond, Ty::BOOL, "condition")?;
                }
                self.exit_var(*exit)?;
            }
            Push(v) => {
                self.scalar(*v, "pushed value")?;
            }
            Pop => {
                rs.ok_or("pops memory; only scalars go on the tape")?;
            }
            CopyRecords { src, .. } => {
                let MemKind::Records(_, id) = self.mem(*src)?.kind else {
                    return Err(format!("%{} is not a slice of structs", src.0));
                };
                let want = MemKind::Records(crate::Dim::Vec, id);
                if !r.mem().is_some_and(|m| m.kind == want && m.access == crate::Access::Owned) {
                    return Err("a copy of structs is an owned vector of them".into());
                }
            }
            AllocRecords { len, .. } => {
                self.expect(*len, Ty::USIZE, "length")?;
                if !r.mem().is_some_and(|m| {
                    matches!(m.kind, MemKind::Records(crate::Dim::Vec | crate::Dim::Array(_), _))
                        && m.access == crate::Access::Owned
                }) {
                    return Err("structs made in the function are an owned vector or array of them".into());
                }
            }
            ZeroRecord(v) => {
                if !matches!(self.mem(*v)?.kind, MemKind::Record(_)) {
                    return Err(format!("%{} is not a struct; zeroed copies structs", v.0));
                }
                if !r.mem().is_some_and(|m| matches!(m.kind, MemKind::Record(_)) && m.access == crate::Access::Owned) {
                    return Err("zeroed gives an owned struct".into());
                }
            }
            Return(vs) => {
                let tys: Vec<Ty> = vs.iter().map(|&v| self.ty(v)).collect();
                if tys != self.f.returns {
                    return Err(format!("returns {} but the function returns {}", tuple(&tys), tuple(&self.f.returns)));
                }
            }
        }
        Ok(())
    }
}

fn const_kind(c: &Const) -> &'static str {
    match c {
        Const::Float(_) => "float",
        Const::Int(_) => "integer",
        Const::Bool(_) => "bool",
    }
}
