//! Nested memory (`&[Vec<f64>]`, `&mut [[f64; 3]]`, `vec![vec![0.0; m]; n]`,
//! `[[0.0; 3]; 4]`): `m[i]` is a row, memory like a slice parameter (an IR `Elem`), which
//! is indexed, iterated, written and passed to functions like any slice.

use cotan_ir::{Access, Dim, MemKind, MemTy, OpKind, Ty, Value};
use proc_macro2::Span;

use crate::lower::{err, Lower};

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
