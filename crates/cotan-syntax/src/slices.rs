//! Sub-slices: `x[a..b]`, `&x[a..]`, `&mut x[..k]`, `x.split_at(m)`, `x.split_at_mut(m)`
//! and the items of `chunks`/`windows`. Each is an IR `Slice` of its buffer, memory like a
//! slice parameter: it can be indexed, iterated, written (if `&mut`) and passed to calls.

use crate::span::Spanned;
use cotan_ir::{Access, BinOp, CmpOp, MemKind, MemTy, OpKind, Scalar, Ty, Value};

use crate::agg::{Agg, Tree};
use crate::infer::STy;
use crate::lower::{err_at, Binding, Lower};

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
        whole_containers(&i.expr, bt.kind)?;
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
        whole_containers(&m.receiver, bt.kind)?;
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

/// An error for a sub-slice of structs or of rows, which cotan takes whole (its sub-slices
/// are of numbers).
fn whole_containers(e: &syn::Expr, kind: MemKind) -> syn::Result<()> {
    let x = quote::ToTokens::to_token_stream(e).to_string().replace(' ', "");
    match kind {
        MemKind::Records(..) => err_at(
            e,
            format!("cotan takes a slice of structs whole, not a part of it; index it instead (`for i in a..b {{ let p = &{x}[i]; .. }}`), or iterate `{x}.iter().skip(a)`"),
        ),
        MemKind::Nested(..) => err_at(
            e,
            format!("cotan takes a slice of rows whole, not a part of it; index its rows instead (`for i in a..b {{ let row = &{x}[i]; .. }}`), or iterate `{x}.iter().skip(a)`"),
        ),
        _ => Ok(()),
    }
}

/// `x.as_chunks::<N>()`/`x.as_chunks_mut::<N>()`: `N` (`None` when it is not written, or is
/// not a number).
pub(crate) fn as_chunks_call(e: &syn::Expr) -> Option<(&syn::ExprMethodCall, Option<u64>)> {
    match strip(e) {
        syn::Expr::MethodCall(m)
            if m.args.is_empty() && matches!(m.method.to_string().as_str(), "as_chunks" | "as_chunks_mut") =>
        {
            Some((m, crate::expr::const_turbofish(m)))
        }
        _ => None,
    }
}

impl Lower {
    /// `let (chunks, rest) = x.as_chunks::<N>();` (or `as_chunks_mut`): the chunks are a
    /// binding of their own, `x` seen as arrays of `N` numbers (no IR value is a slice of
    /// arrays over a slice of numbers); each chunk is a sub-slice of `x` taken as an array
    /// where it is used (`chunks[i]`, iteration). The rest is the sub-slice after them.
    pub(crate) fn as_chunks_let(&mut self, pat: &syn::Pat, m: &syn::ExprMethodCall) -> syn::Result<()> {
        let name = m.method.to_string();
        let Some(n) = crate::expr::const_turbofish(m) else {
            return err_at(
                m,
                format!(
                    "cotan cannot tell the chunk length from how the chunks are used here; write it: `.{name}::<N>()`"
                ),
            );
        };
        if n == 0 {
            return err_at(m, "chunks must have a non-zero length");
        }
        let (pat, annotated) = match pat {
            syn::Pat::Type(pt) => (&*pt.pat, Some(&*pt.ty)),
            p => (p, None),
        };
        let syn::Pat::Tuple(t) = pat else {
            return err_at(
                pat,
                format!("cotan binds the chunks and the rest separately: `let (chunks, rest) = x.{name}::<{n}>();`"),
            );
        };
        let [chunks_pat, rest_pat] = t.elems.iter().collect::<Vec<_>>()[..] else {
            return err_at(pat, format!("`{name}` gives the chunks and the rest: `let (chunks, rest) = ..`"));
        };
        let access = if name == "as_chunks_mut" { Access::Mut } else { Access::Shared };
        let base = self.memory(&m.receiver)?;
        let bt = self.mem_ty(base).unwrap();
        if matches!(bt.kind, MemKind::Record(_) | MemKind::Cell) || bt.is_ptr() || self.is_nested(base) {
            return err_at(&m.receiver, format!("cotan supports `{name}` on slices, arrays and vectors of numbers"));
        }
        if access == Access::Mut && !bt.is_writable() {
            return err_at(&m.receiver, "`as_chunks_mut` needs `&mut` access");
        }
        if let Some(ty) = annotated {
            if chunks_annotation(ty).is_some_and(|k| k != n) {
                return err_at(ty, format!("this type has chunks of another length than {n}"));
            }
        }
        self.at(m.span());
        let len = self.emit_s(OpKind::Len(base), USIZE);
        let n_v = self.emit_s(OpKind::Const(cotan_ir::Const::Int(n as i128)), USIZE);
        let count = self.emit_s(OpKind::Binary(BinOp::Div, len, n_v), USIZE);
        let end = self.emit_s(OpKind::Binary(BinOp::Mul, count, n_v), USIZE);
        let rest = self.slice_of(base, end, len, MemTy { kind: MemKind::Slice, access, ..bt });
        match strip_pat(chunks_pat) {
            syn::Pat::Wild(_) => {}
            syn::Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                self.bind(pi.ident.to_string(), Binding::Chunks { base, n, access });
            }
            p => return err_at(p, "bind the chunks to a name (`chunks`) or `_`"),
        }
        self.bind_pat(rest_pat, rest)
    }

    /// The chunks binding `e` names (`c`, `&c`, `&mut *c`): `(base, n, access)`.
    pub(crate) fn chunks_of(&self, e: &syn::Expr) -> Option<(Value, u64, Access)> {
        let p = match strip(e) {
            syn::Expr::Reference(syn::ExprReference { expr, .. })
            | syn::Expr::Unary(syn::ExprUnary { op: syn::UnOp::Deref(_), expr, .. }) => return self.chunks_of(expr),
            syn::Expr::Path(p) => p,
            _ => return None,
        };
        match self.lookup(&p.path.get_ident()?.to_string()) {
            Some(Binding::Chunks { base, n, access }) => Some((base, n, access)),
            _ => None,
        }
    }

    /// How many chunks there are.
    pub(crate) fn chunk_count(&mut self, base: Value, n: u64) -> Value {
        let len = self.emit_s(OpKind::Len(base), USIZE);
        let n = self.emit_s(OpKind::Const(cotan_ir::Const::Int(n as i128)), USIZE);
        self.emit_s(OpKind::Binary(BinOp::Div, len, n), USIZE)
    }

    /// Chunk `k` (in bounds): `&base[k * n..k * n + n]` as an array.
    pub(crate) fn chunk_at(&mut self, base: Value, n: u64, access: Access, k: Value) -> Value {
        let n_v = self.emit_s(OpKind::Const(cotan_ir::Const::Int(n as i128)), USIZE);
        let start = self.emit_s(OpKind::Binary(BinOp::Mul, k, n_v), USIZE);
        let end = self.emit_s(OpKind::Binary(BinOp::Add, start, n_v), USIZE);
        let bt = self.mem_ty(base).unwrap();
        self.slice_of(base, start, end, MemTy { kind: MemKind::Array(n), access, ..bt })
    }

    /// `chunks[i]`: chunk `i`, which must exist.
    pub(crate) fn chunk_index(&mut self, i: &syn::ExprIndex) -> syn::Result<Option<Value>> {
        let Some((base, n, access)) = self.chunks_of(&i.expr) else { return Ok(None) };
        let k = self.index_value(&i.index)?;
        self.at(i.span());
        let count = self.chunk_count(base, n);
        let ok = self.emit_s(OpKind::Cmp(CmpOp::Lt, k, count), STy::Known(Scalar::Bool));
        self.effect(OpKind::Assert { cond: ok, message: "index out of bounds".into() });
        Ok(Some(self.chunk_at(base, n, access, k)))
    }

    /// The methods of chunks: `len`, `is_empty`; `None` when `m`'s receiver is no chunks.
    pub(crate) fn chunks_method(&mut self, m: &syn::ExprMethodCall) -> Option<syn::Result<Value>> {
        let (base, n, _) = self.chunks_of(&m.receiver)?;
        Some(match (m.method.to_string().as_str(), m.args.is_empty()) {
            ("len", true) => Ok(self.chunk_count(base, n)),
            ("is_empty", true) => {
                let count = self.chunk_count(base, n);
                let zero = self.emit_s(OpKind::Const(cotan_ir::Const::Int(0)), USIZE);
                Ok(self.emit_s(OpKind::Cmp(CmpOp::Eq, count, zero), STy::Known(Scalar::Bool)))
            }
            (name, _) => err_at(
                &m.method,
                format!("cotan supports `len`, `is_empty`, indexing and iteration (`iter`, `iter_mut`, `for c in chunks`) on the chunks of `as_chunks`, not `.{name}()`"),
            ),
        })
    }
}

/// The chunk length a `let` annotation gives: `(&mut [[f64; N]], _)`.
pub(crate) fn chunks_annotation(ty: &syn::Type) -> Option<u64> {
    let syn::Type::Tuple(t) = ty else { return None };
    let syn::Type::Reference(r) = t.elems.first()? else { return None };
    let syn::Type::Slice(s) = &*r.elem else { return None };
    let syn::Type::Array(a) = &*s.elem else { return None };
    crate::signature::array_len(&a.len)
}

fn strip_pat(p: &syn::Pat) -> &syn::Pat {
    match p {
        syn::Pat::Paren(p) => strip_pat(&p.pat),
        p => p,
    }
}
