//! Sub-slices: `x[a..b]`, `&x[a..]`, `&mut x[..k]`, `x.split_at(m)`, `x.split_at_mut(m)`
//! and the items of `chunks`/`windows`. Each is an IR `Slice` of its buffer, memory like a
//! slice parameter: it can be indexed, iterated, written (if `&mut`) and passed to calls.

use cotan_ir::{Access, BinOp, CmpOp, MemKind, MemTy, OpKind, Scalar, Ty, Value};
use syn::spanned::Spanned;

use crate::agg::{Agg, Tree};
use crate::infer::STy;
use crate::lower::{err_at, Lower};

const USIZE: STy = STy::Known(Scalar::Usize);

/// Whether `e` is `x[range]`.
pub(crate) fn is_range_index(e: &syn::Expr) -> bool {
    match e {
        syn::Expr::Index(i) => matches!(strip(&i.index), syn::Expr::Range(_)),
        syn::Expr::Paren(p) => is_range_index(&p.expr),
        _ => false,
    }
}

fn strip(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Paren(p) => strip(&p.expr),
        syn::Expr::Group(g) => strip(&g.expr),
        e => e,
    }
}

impl Lower {
    /// `&mem[start..end]` with type `ty` (a slice of `mem`'s elements).
    pub(crate) fn slice_of(&mut self, mem: Value, start: Value, end: Value, ty: MemTy) -> Value {
        let v = self.emit(OpKind::Slice { base: mem, start, end }, Ty::Mem(ty));
        let elem = self.elem_sty(mem);
        self.set_elem_sty(v, elem);
        self.views.insert(v, (mem, start, end));
        v
    }

    /// Whether `v` is a reference to a slice, an array or a vector (not a buffer the
    /// function owns): what a `let mut` may point elsewhere.
    pub(crate) fn is_slice_ref(&self, v: Value) -> bool {
        self.mem_ty(v).is_some_and(|m| {
            matches!(m.kind, MemKind::Slice | MemKind::Array(_) | MemKind::Vec) && m.access != Access::Owned
        })
    }

    /// `v` as `root[start..end]`, with `root` a buffer that is no sub-slice (the bounds are
    /// computed here).
    fn in_root(&mut self, v: Value) -> (Value, Value, Value) {
        match self.views.get(&v).copied() {
            Some((base, start, end)) => {
                if !self.views.contains_key(&base) {
                    return (base, start, end);
                }
                let (root, s0, _) = self.in_root(base);
                let s = self.emit_s(OpKind::Binary(BinOp::Add, s0, start), USIZE);
                let e = self.emit_s(OpKind::Binary(BinOp::Add, s0, end), USIZE);
                (root, s, e)
            }
            None => {
                let zero = self.emit_s(OpKind::Const(cotan_ir::Const::Int(0)), USIZE);
                let len = self.emit_s(OpKind::Len(v), USIZE);
                (v, zero, len)
            }
        }
    }

    /// The binding of `let mut name = v;` for a slice reference `v`.
    pub(crate) fn slice_var(&mut self, name: &str, v: Value) -> crate::lower::Binding {
        let mut ty = self.mem_ty(v).unwrap();
        ty.kind = MemKind::Slice;
        let (root, s, e) = self.in_root(v);
        let start = self.new_var(&format!("{name}_start"), USIZE);
        self.effect(OpKind::DeclVar { var: start, init: s });
        let end = self.new_var(&format!("{name}_end"), USIZE);
        self.effect(OpKind::DeclVar { var: end, init: e });
        crate::lower::Binding::SliceVar { root, start, end, ty }
    }

    /// The current value of a slice variable.
    pub(crate) fn read_slice_var(&mut self, root: Value, start: cotan_ir::Var, end: cotan_ir::Var, ty: MemTy) -> Value {
        let s = self.emit_s(OpKind::GetVar(start), USIZE);
        let e = self.emit_s(OpKind::GetVar(end), USIZE);
        self.slice_of(root, s, e, ty)
    }

    /// `name = e;` for a slice variable: `e` must be part of the same buffer.
    pub(crate) fn assign_slice_var(&mut self, target: &syn::Expr, e: &syn::Expr) -> syn::Result<bool> {
        let syn::Expr::Path(p) = strip(target) else { return Ok(false) };
        let Some(ident) = p.path.get_ident() else { return Ok(false) };
        let Some(crate::lower::Binding::SliceVar { root, start, end, ty }) = self.lookup(&ident.to_string()) else {
            return Ok(false);
        };
        let v = self.memory(e)?;
        let (r, s, en) = self.in_root(v);
        if r != root {
            return err_at(
                e,
                format!("cotan can point the slice variable `{ident}` only at parts of the buffer it starts in; use a second variable for this one"),
            );
        }
        if ty.access == Access::Mut && self.mem_ty(v).is_some_and(|m| !m.is_writable()) {
            return err_at(e, "this slice is shared, and the variable holds `&mut` slices");
        }
        self.effect(OpKind::SetVar(start, s));
        self.effect(OpKind::SetVar(end, en));
        Ok(true)
    }

    /// `x[range]` (an index expression whose index is a range) as a sub-slice: `&mut`
    /// when `access` says so or, without it, when `x` can be written.
    pub(crate) fn sub_slice(&mut self, e: &syn::Expr, access: Option<Access>) -> syn::Result<Value> {
        let syn::Expr::Index(i) = strip(e) else { return err_at(e, "expected a sub-slice `x[a..b]`") };
        let syn::Expr::Range(r) = strip(&i.index) else { return err_at(e, "expected a sub-slice `x[a..b]`") };
        let base = self.memory(&i.expr)?;
        let bt = self.mem_ty(base).unwrap();
        if matches!(bt.kind, MemKind::Record(_) | MemKind::Cell) {
            return err_at(&i.expr, "only slices, arrays and vectors have sub-slices");
        }
        let writable = bt.is_writable();
        let access = access.unwrap_or(if writable { Access::Mut } else { Access::Shared });
        if access == Access::Mut && !writable {
            return err_at(&i.expr, "a `&mut` sub-slice needs `&mut` access to the slice it is part of");
        }
        let bound = |l: &mut Lower, b: &Option<Box<syn::Expr>>| -> syn::Result<Option<Value>> {
            let Some(b) = b else { return Ok(None) };
            let (v, t) = l.scalar(b)?;
            l.unify(USIZE, t, b.span())?;
            Ok(Some(v))
        };
        let start = bound(self, &r.start)?;
        let end = bound(self, &r.end)?;
        self.at(e.span());
        let start = match start {
            Some(s) => s,
            None => self.emit_s(OpKind::Const(cotan_ir::Const::Int(0)), USIZE),
        };
        let end = match (end, &r.limits) {
            (Some(e), syn::RangeLimits::HalfOpen(_)) => e,
            (Some(e), syn::RangeLimits::Closed(_)) => {
                // `a..=b` is `a..b + 1`: `b` must be an index (which also keeps `b + 1`
                // from overflowing).
                let len = self.emit_s(OpKind::Len(base), USIZE);
                let ok = self.emit_s(OpKind::Cmp(CmpOp::Lt, e, len), STy::Known(Scalar::Bool));
                let message = "range end index out of range for slice".to_string();
                self.effect(OpKind::Assert { cond: ok, message });
                let one = self.emit_s(OpKind::Const(cotan_ir::Const::Int(1)), USIZE);
                self.emit_s(OpKind::Binary(BinOp::Add, e, one), USIZE)
            }
            (None, _) => self.emit_s(OpKind::Len(base), USIZE),
        };
        let ty = MemTy { kind: MemKind::Slice, access, ..bt };
        Ok(self.slice_of(base, start, end, ty))
    }

    /// `x.split_at(mid)` / `x.split_at_mut(mid)`: the two sub-slices, as a tuple.
    pub(crate) fn split_at(&mut self, m: &syn::ExprMethodCall, access: Access) -> syn::Result<Agg> {
        let base = self.memory(&m.receiver)?;
        let bt = self.mem_ty(base).unwrap();
        if access == Access::Mut && !bt.is_writable() {
            return err_at(&m.receiver, "`split_at_mut` needs `&mut` access");
        }
        let [mid] = m.args.iter().collect::<Vec<_>>()[..] else {
            return err_at(m, format!("`{}` takes one argument", m.method));
        };
        let (mid, t) = self.scalar(mid)?;
        self.unify(USIZE, t, m.span())?;
        self.at(m.span());
        let zero = self.emit_s(OpKind::Const(cotan_ir::Const::Int(0)), USIZE);
        let len = self.emit_s(OpKind::Len(base), USIZE);
        let ok = self.emit_s(OpKind::Cmp(CmpOp::Le, mid, len), STy::Known(Scalar::Bool));
        self.effect(OpKind::Assert { cond: ok, message: "mid > len".into() });
        let ty = MemTy { kind: MemKind::Slice, access, ..bt };
        let left = self.slice_of(base, zero, mid, ty);
        let right = self.slice_of(base, mid, len, ty);
        Ok(Tree::Tuple(vec![Tree::Leaf(left), Tree::Leaf(right)]))
    }
}
