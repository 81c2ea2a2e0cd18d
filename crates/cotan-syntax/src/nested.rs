//! Nested memory (`&[Vec<f64>]`, `&mut [[f64; 3]]`, `vec![vec![0.0; m]; n]`,
//! `[[0.0; 3]; 4]`): `m[i]` is a row, memory like a slice parameter (an IR `Elem`), which
//! is indexed, iterated, written and passed to functions like any slice. An array of array
//! literals or arrays (`[[a, b], [c, d]]`, `[p, q]`) is nested memory whose rows are copies.

use cotan_ir::{Access, Dim, MemKind, MemTy, OpKind, Ty, Value};
use proc_macro2::Span;

use crate::infer::STy;
use crate::lower::{err, err_at, Lower};
use crate::span::Spanned;

const USIZE: STy = STy::Known(cotan_ir::Scalar::Usize);

impl Lower {
    /// Whether memory `m` has rows.
    pub(crate) fn is_nested(&self, m: Value) -> bool {
        self.mem_ty(m).is_some_and(|t| t.kind.row().is_some())
    }

    /// Row `index` of nested memory `m`: `&mut` when `m` can be written.
    pub(crate) fn row(&mut self, m: Value, index: Value) -> Value {
        let t = self.mem_ty(m).expect("nested memory");
        self.row_as(m, index, if t.is_writable() { Access::Mut } else { Access::Shared })
    }

    /// Row `index` of nested memory `m`, as a `&mut` or a shared reference.
    pub(crate) fn row_as(&mut self, m: Value, index: Value, access: Access) -> Value {
        let t = self.mem_ty(m).expect("nested memory");
        let ty = MemTy { kind: t.kind.row().expect("nested memory"), elem: t.elem, access };
        let v = self.emit(OpKind::Elem { base: m, index }, Ty::Mem(ty));
        let elem = self.elem_sty(m);
        self.set_elem_sty(v, elem);
        v
    }

    /// Whether `e` makes a buffer that can be the row of nested memory (`vec![0.0; m]`,
    /// `[0.0; 3]`, `[a, b]`, `x.to_vec()`), judged from its syntax.
    pub(crate) fn makes_row(&self, e: &syn::Expr) -> bool {
        match e {
            syn::Expr::Paren(p) => self.makes_row(&p.expr),
            syn::Expr::Repeat(_) | syn::Expr::Array(_) => true,
            syn::Expr::Macro(m) => m.mac.path.is_ident("vec"),
            syn::Expr::MethodCall(m) => {
                matches!(m.method.to_string().as_str(), "to_vec" | "clone" | "to_owned") && self.is_memory(&m.receiver)
            }
            _ => false,
        }
    }

    /// Whether `elems` (of `[..]` or `vec![..]`) are rows (`[[a, b], [c, d]]`, `[p, q]` of
    /// arrays).
    pub(crate) fn is_rows_literal<'a>(&self, mut elems: impl Iterator<Item = &'a syn::Expr>) -> bool {
        elems.next().is_some_and(|r| self.makes_row(r) || self.is_memory(r))
    }

    /// `[r0, r1, ..]` (`outer` an array) or `vec![r0, r1, ..]` (a vector) of arrays of
    /// numbers: nested memory whose rows are copies of them (the rows are made first, in
    /// order, as Rust evaluates them).
    pub(crate) fn rows_literal<'a>(
        &mut self,
        elems: impl Iterator<Item = &'a syn::Expr>,
        vector: bool,
        span: Span,
    ) -> syn::Result<Value> {
        let mut rows = vec![];
        for r in elems {
            let m = self.memory(r)?;
            let Some(MemKind::Array(k)) = self.mem_ty(m).map(|t| t.kind) else {
                return err_at(r, "cotan builds arrays of arrays of numbers (`[[a, b], [c, d]]`); this row is not an array of numbers");
            };
            if let Some(&(_, first)) = rows.first() {
                if k != first {
                    return err_at(r, format!("the rows of an array of arrays have one length; this row has {k} elements, the first {first}"));
                }
                let (de, se) = (self.elem_sty(rows[0].0), self.elem_sty(m));
                self.unify(de, se, r.span())?;
            }
            rows.push((m, k));
        }
        let (first, k) = rows[0];
        let t = self.elem_sty(first);
        let k_v = self.usize_const(k as i128);
        let n = self.usize_const(rows.len() as i128);
        let outer = if vector { Dim::Vec } else { Dim::Array(rows.len() as u64) };
        let m = self.zero_rows(t, MemKind::Array(k), k_v, n, outer, span)?;
        for (i, (src, _)) in rows.into_iter().enumerate() {
            let i = self.usize_const(i as i128);
            let dst = self.row(m, i);
            let len = self.emit_s(OpKind::Len(dst), USIZE);
            self.copy_loop(dst, src, len);
        }
        Ok(m)
    }

    /// `vec![row; len]` or `[row; N]` with `row` (made from `e`): a constant row (`[0.0; 3]`,
    /// `vec![1.0; m]`) is the allocation's initial value; another (`[x, 2.0 * x]`,
    /// `x.to_vec()`), which may carry a derivative, is copied into rows of zeros.
    pub(crate) fn repeated_rows(
        &mut self,
        e: &syn::Expr,
        row: Value,
        len: Value,
        outer: Dim,
        span: Span,
    ) -> syn::Result<Value> {
        if constant_row(e) {
            return self.nested_alloc(row, len, outer, span);
        }
        let t = self.elem_sty(row);
        // (A slice `x` repeated, `vec![x; n]`: rows that are vectors of its numbers.)
        let kind = match self.mem_ty(row).expect("a row is memory").kind {
            MemKind::Slice => MemKind::Vec,
            k => k,
        };
        let k = self.emit_s(OpKind::Len(row), USIZE);
        let m = self.zero_rows(t, kind, k, len, outer, span)?;
        self.index_loop(len, |l, i| {
            let dst = l.row(m, i);
            let n = l.emit_s(OpKind::Len(dst), USIZE);
            l.copy_loop(dst, row, n);
        });
        Ok(m)
    }

    /// Nested memory of `n` rows of kind `row`, each `row_len` zeros of type `t`.
    pub(crate) fn zero_rows(
        &mut self,
        t: STy,
        row: MemKind,
        row_len: Value,
        n: Value,
        outer: Dim,
        span: Span,
    ) -> syn::Result<Value> {
        let zero = self.pending_zero(t);
        let zeros = self.alloc(zero, t, row_len, row, span)?;
        self.nested_alloc(zeros, n, outer, span)
    }

    /// `vec![row; len]` or `[row; N]`: nested memory of `len` copies of a row.
    pub(crate) fn nested_alloc(&mut self, row: Value, len: Value, outer: Dim, span: Span) -> syn::Result<Value> {
        let rt = self.mem_ty(row).expect("a row is memory");
        if rt.access != Access::Owned {
            return err(span, "the rows of a nested vector are its own: write `vec![x.to_vec(); n]`");
        }
        let Some(kind) = MemKind::nest(outer, rt.kind) else {
            return err(span, "cotan supports two or three levels of arrays and vectors");
        };
        self.at(span);
        let m =
            self.emit(OpKind::Alloc { len, init: row }, Ty::Mem(MemTy { kind, elem: rt.elem, access: Access::Owned }));
        let elem = self.elem_sty(row);
        self.set_elem_sty(m, elem);
        Ok(m)
    }
}

/// Whether a row's expression gives the same numbers whatever the inputs: a repeat or a
/// list of literals.
fn constant_row(e: &syn::Expr) -> bool {
    fn literal(e: &syn::Expr) -> bool {
        match e {
            syn::Expr::Lit(_) => true,
            syn::Expr::Paren(p) => literal(&p.expr),
            syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => literal(&u.expr),
            _ => false,
        }
    }
    match e {
        syn::Expr::Paren(p) => constant_row(&p.expr),
        syn::Expr::Repeat(r) => literal(&r.expr) || constant_row(&r.expr),
        syn::Expr::Array(a) => a.elems.iter().all(|x| literal(x) || constant_row(x)),
        syn::Expr::Macro(m) if m.mac.path.is_ident("vec") => {
            let repeat = |input: syn::parse::ParseStream| -> syn::Result<(syn::Expr, syn::Expr)> {
                let init: syn::Expr = input.parse()?;
                input.parse::<syn::Token![;]>()?;
                Ok((init, input.parse()?))
            };
            match m.mac.parse_body_with(repeat) {
                Ok((init, _)) => literal(&init) || constant_row(&init),
                Err(_) => m
                    .mac
                    .parse_body_with(syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated)
                    .is_ok_and(|xs| xs.iter().all(literal)),
            }
        }
        _ => false,
    }
}
