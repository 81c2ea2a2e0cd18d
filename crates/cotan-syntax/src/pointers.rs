//! Raw pointers and `unsafe`: parameters `*const T`, `*mut T`, `*const [T; N]` and
//! `*mut [T; N]`, reads and writes through them (`*p`, `*p.add(i)`, `p.add(i).read()`,
//! `(*p)[i]`, `&mut *p`), pointer arithmetic, `as_ptr`/`as_mut_ptr`, `from_raw_parts`,
//! `copy_nonoverlapping`, `ptr::swap` and `get_unchecked(_mut)`. `unsafe` blocks are
//! ordinary blocks (the function's IR is marked `unsafe_code`, so that generated code makes
//! its calls in `unsafe` blocks).
//!
//! A pointer is memory of unknown length (IR `Ptr`, or `ArrayPtr` for a pointer to an
//! array). Pointer arithmetic is an `Offset`: memory that aliases its base from an element
//! on, as a sub-slice does; so are the element a pointer points at as a reference
//! (`&mut *p.add(k)`, a cell) and the array an array pointer points at (`&*p`). A
//! `let mut` pointer is its buffer and a variable holding its offset, which `p = q;`
//! sets when `q` points into the same buffer (as a slice variable keeps its bounds).

use crate::span::Spanned;
use cotan_ir::{Access, Const, MemKind, MemTy, OpKind, Scalar, Ty, UnOp, Value};

use crate::agg::{Agg, Tree};
use crate::infer::STy;
use crate::lower::{err, err_at, strip_parens, Binding, Lower};

const USIZE: STy = STy::Known(Scalar::Usize);
const ISIZE: STy = STy::Known(Scalar::Isize);

/// The IR type of a raw pointer type: `*const f64`, `*mut f32`, `*const [f64; N]`.
pub(crate) fn ptr_type(p: &syn::TypePtr) -> Option<Ty> {
    let access = if p.mutability.is_some() { Access::Mut } else { Access::Shared };
    let (elem, kind) = match &*p.elem {
        syn::Type::Array(a) => {
            (crate::signature::scalar_type(&a.elem)?, MemKind::ArrayPtr(crate::signature::array_len(&a.len)?))
        }
        t => (crate::signature::scalar_type(t)?, MemKind::Ptr),
    };
    Some(Ty::Mem(MemTy { elem, kind, access }))
}

/// What `*e` is.
pub(crate) enum Deref {
    /// Element `index` of the memory a pointer points into (`*p`, `*p.add(i)`).
    Elem(Value, Value),
    /// The array an array pointer points at (`*p` with `p: *const [f64; N]`), as memory.
    Array(Value),
    /// Anything else: `*x` of a reference, or of a number.
    Other(Value),
}

const POINTER_METHODS: &str = "supported: `*p`, `add`, `offset`, `sub`, `read`, `write`, `copy_from_nonoverlapping`, `copy_to_nonoverlapping`, `&*p`, `&mut *p`, and casts (`p as *const [f64; 2]`)";

impl Lower {
    /// Whether `v` is a raw pointer.
    pub(crate) fn is_ptr(&self, v: Value) -> bool {
        self.mem_ty(v).is_some_and(|m| m.is_ptr())
    }

    /// `base` from element `k` on, as memory of type `ty`.
    pub(crate) fn offset_of(&mut self, base: Value, k: Value, ty: MemTy) -> Value {
        let v = self.emit(OpKind::Offset { base, offset: k }, Ty::Mem(ty));
        let elem = self.elem_sty(base);
        self.set_elem_sty(v, elem);
        self.offsets.insert(v, (base, k));
        v
    }

    pub(crate) fn usize_const(&mut self, k: i128) -> Value {
        self.emit_s(OpKind::Const(Const::Int(k)), USIZE)
    }

    /// The pointer an expression gives, or an error saying what it needs.
    fn pointer(&mut self, e: &syn::Expr, what: &str) -> syn::Result<Value> {
        let v = self.expr(e)?;
        match self.mem_ty(v) {
            Some(m) if m.kind == MemKind::Ptr => Ok(v),
            Some(m) if m.is_ptr() => err_at(
                e,
                format!("{what} needs a pointer to numbers; for a pointer to an array, index the array it points at (`(*p)[i]`)"),
            ),
            _ => err_at(e, format!("{what} needs a raw pointer (`*const f64`, `*mut f64`, `x.as_ptr()`)")),
        }
    }

    /// `p.add(k)`, `p.offset(k)`, `p.sub(k)` on a pointer `p` already lowered.
    fn arith(&mut self, p: Value, method: &syn::Ident, arg: &syn::Expr) -> syn::Result<Value> {
        let ty = self.mem_ty(p).unwrap();
        let k = match method.to_string().as_str() {
            "add" => self.index_value(arg)?,
            "offset" => {
                let (k, t) = self.scalar(arg)?;
                self.unify(ISIZE, t, arg.span())?;
                k
            }
            _ => {
                // `p.sub(k)` is `p.offset(-(k as isize))`.
                let k = self.index_value(arg)?;
                let k = self.emit_s(OpKind::Cast(k), ISIZE);
                self.emit_s(OpKind::Unary(UnOp::Neg, k), ISIZE)
            }
        };
        Ok(self.offset_of(p, k, ty))
    }

    /// What `*e` is; `e` is lowered here (`*p.add(i)` becomes element `i` of `p`).
    pub(crate) fn deref(&mut self, e: &syn::Expr) -> syn::Result<Deref> {
        if let syn::Expr::MethodCall(m) = strip_parens(e) {
            if m.method == "add" && m.args.len() == 1 {
                let what = "`.add(..)`".to_string();
                let p = self.pointer(&m.receiver, &what)?;
                let i = self.index_value(&m.args[0])?;
                return Ok(Deref::Elem(p, i));
            }
        }
        let v = self.expr(e)?;
        Ok(match self.mem_ty(v) {
            Some(m) if m.kind == MemKind::Ptr => Deref::Elem(v, self.usize_const(0)),
            Some(m @ MemTy { kind: MemKind::ArrayPtr(n), .. }) => {
                let zero = self.usize_const(0);
                Deref::Array(self.offset_of(v, zero, MemTy { kind: MemKind::Array(n), ..m }))
            }
            _ => Deref::Other(v),
        })
    }

    /// `*e` where a value is expected: the number a pointer points at, or a copy of the
    /// array an array pointer points at (`let a = *p;` copies it, as Rust does).
    pub(crate) fn deref_value(&mut self, e: &syn::Expr) -> syn::Result<Value> {
        if let Some(Binding::Value(v)) =
            crate::record::root_name(e).filter(|_| self.record_type_of_name(e).is_some()).and_then(|n| self.lookup(&n))
        {
            // `*p` of a reference or pointer to a struct: the struct (its fields are read where used).
            return Ok(v);
        }
        Ok(match self.deref(e)? {
            Deref::Elem(m, i) => {
                let t = self.elem_sty(m);
                self.emit_s(OpKind::Load { mem: m, index: Some(i) }, t)
            }
            Deref::Array(a) => self.local_copy(a, e.span())?,
            // `*a` of `a: &[f64; N]` (or `&[[f64; 2]; N]`): a copy, as Rust makes of arrays.
            Deref::Other(v)
                if self.mem_ty(v).is_some_and(|m| matches!(m.kind.dim(), Some(cotan_ir::Dim::Array(_)))) =>
            {
                self.array_copy(v, e.span())?
            }
            Deref::Other(v) if self.elem_refs.contains_key(&v) => self.elem_copy(v),
            Deref::Other(v) => self.auto_load(v),
        })
    }

    /// `(*p)` of an array pointer `p` where memory is expected (`(*p)[i]`,
    /// `(*p).get_unchecked(i)`): the array it points at. `None` if `e` is not such a deref
    /// (nothing is lowered then).
    pub(crate) fn deref_array(&mut self, e: &syn::Expr) -> syn::Result<Option<Value>> {
        let syn::Expr::Unary(syn::ExprUnary { op: syn::UnOp::Deref(_), expr, .. }) = strip_parens(e) else {
            return Ok(None);
        };
        if !self.names_pointer(expr) {
            return Ok(None);
        }
        match self.deref(expr)? {
            Deref::Array(a) => Ok(Some(a)),
            _ => err_at(e, "this is a number, not an array; index it with `*p.add(i)`"),
        }
    }

    /// Whether an expression is (syntactically, without lowering it) a pointer: a name
    /// bound to one, or pointer arithmetic on one.
    pub(crate) fn names_pointer(&self, e: &syn::Expr) -> bool {
        match strip_parens(e) {
            syn::Expr::Path(p) => p.path.get_ident().is_some_and(|i| match self.lookup(&i.to_string()) {
                Some(Binding::Value(v)) => self.is_ptr(v),
                Some(Binding::PtrVar { .. }) => true,
                _ => false,
            }),
            syn::Expr::MethodCall(m) => {
                matches!(m.method.to_string().as_str(), "add" | "offset" | "sub" | "as_ptr" | "as_mut_ptr")
            }
            syn::Expr::Cast(c) => matches!(&*c.ty, syn::Type::Ptr(_)),
            _ => false,
        }
    }

    /// Whether an expression is (syntactically) a pointer to an array: a name bound to
    /// one, or a cast to one.
    pub(crate) fn names_array_pointer(&self, e: &syn::Expr) -> bool {
        match strip_parens(e) {
            syn::Expr::Path(p) => p.path.get_ident().is_some_and(|i| {
                matches!(self.lookup(&i.to_string()), Some(Binding::Value(v)) if self.mem_ty(v).is_some_and(|m| matches!(m.kind, MemKind::ArrayPtr(_))))
            }),
            syn::Expr::Cast(c) => matches!(&*c.ty, syn::Type::Ptr(p) if matches!(&*p.elem, syn::Type::Array(_))),
            _ => false,
        }
    }

    /// `&*e` or `&mut *e` (`r.expr` is the deref) when `e` is a pointer: the element it
    /// points at as a reference (a cell), or the array an array pointer points at. `None`
    /// when `e` is no pointer (nothing is lowered then).
    pub(crate) fn ref_of_deref(&mut self, r: &syn::ExprReference) -> syn::Result<Option<Value>> {
        let syn::Expr::Unary(syn::ExprUnary { op: syn::UnOp::Deref(_), expr, .. }) = strip_parens(&r.expr) else {
            return Ok(None);
        };
        if !self.names_pointer(expr) {
            return Ok(None);
        }
        let access = if r.mutability.is_some() { Access::Mut } else { Access::Shared };
        let (base, k, kind) = match self.deref(expr)? {
            Deref::Elem(m, i) => (m, i, MemKind::Cell),
            Deref::Array(a) => {
                let p = self.offsets[&a].0;
                let zero = self.usize_const(0);
                (p, zero, self.mem_ty(a).unwrap().kind)
            }
            Deref::Other(v) => return Ok(Some(v)),
        };
        let bt = self.mem_ty(base).unwrap();
        if access == Access::Mut && !bt.is_writable() {
            return err_at(r, "`&mut *p` needs a `*mut` pointer");
        }
        Ok(Some(self.offset_of(base, k, MemTy { kind, access, ..bt })))
    }

    /// The pointer methods and the slice methods that give pointers or unchecked
    /// elements; `None` for other methods (nothing is lowered then).
    pub(crate) fn pointer_method(&mut self, m: &syn::ExprMethodCall) -> Option<syn::Result<Option<Agg>>> {
        // (A struct's own `add`, `sub`, `read`, ..: `p.sub(q)` of `impl Sub for P`.)
        if self.any_struct_type_of(&m.receiver).is_some() {
            return None;
        }
        let name = m.method.to_string();
        let args: Vec<&syn::Expr> = m.args.iter().collect();
        let leaf = |v: syn::Result<Value>| Some(v.map(|v| Some(Tree::Leaf(v))));
        match (name.as_str(), args.as_slice()) {
            ("add" | "offset" | "sub", [k]) => {
                let what = format!("`.{name}(..)` (pointer arithmetic)");
                leaf(self.pointer(&m.receiver, &what).and_then(|p| self.arith(p, &m.method, k)))
            }
            ("read", []) => leaf(self.elem_place(&m.receiver, "`.read()`").map(|(p, i)| {
                let t = self.elem_sty(p);
                self.emit_s(OpKind::Load { mem: p, index: Some(i) }, t)
            })),
            ("write", [v]) => Some(self.write_through(&m.receiver, v).map(|_| None)),
            ("as_ptr" | "as_mut_ptr", []) => {
                let access = if name == "as_ptr" { Access::Shared } else { Access::Mut };
                leaf(self.as_ptr(&m.receiver, access))
            }
            ("get_unchecked" | "get_unchecked_mut", [i]) => {
                let access = if name == "get_unchecked" { Access::Shared } else { Access::Mut };
                leaf(self.unchecked(&m.receiver, i, access))
            }
            ("copy_from_nonoverlapping" | "copy_to_nonoverlapping", [other, n]) => {
                let (src, dst) = if name == "copy_to_nonoverlapping" {
                    (&*m.receiver, *other)
                } else {
                    (*other, &*m.receiver)
                };
                Some(self.copy_nonoverlapping(src, dst, n).map(|_| None))
            }
            ("copy_from" | "copy_to", [_, _]) => Some(err_at(
                &m.method,
                format!("cotan supports copies between raw pointers that do not overlap: use `.{name}_nonoverlapping(..)`, or copy with a loop"),
            )),
            ("wrapping_add" | "wrapping_sub" | "wrapping_offset", [_]) => Some(err_at(
                &m.method,
                format!("cotan supports pointer arithmetic that stays in its buffer: use `.{}(..)`", &name["wrapping_".len()..]),
            )),
            _ if self.names_pointer(&m.receiver) && !matches!(name.as_str(), "as_ptr" | "as_mut_ptr") => {
                Some(err_at(&m.method, format!("cotan does not support the pointer method `.{name}()`; {POINTER_METHODS}")))
            }
            _ => None,
        }
    }

    /// `x.as_ptr()` / `x.as_mut_ptr()` of a slice, an array or a vector.
    fn as_ptr(&mut self, recv: &syn::Expr, access: Access) -> syn::Result<Value> {
        let x = self.memory(recv)?;
        let mt = self.mem_ty(x).unwrap();
        if mt.is_ptr() || matches!(mt.kind, MemKind::Record(_)) {
            return err_at(recv, "cotan supports `.as_ptr()`/`.as_mut_ptr()` on slices, arrays and vectors");
        }
        if access == Access::Mut && !mt.is_writable() {
            return err_at(recv, "`.as_mut_ptr()` needs `&mut` access to the slice");
        }
        let zero = self.usize_const(0);
        Ok(self.offset_of(x, zero, MemTy { kind: MemKind::Ptr, access, ..mt }))
    }

    /// `x.get_unchecked(i)` / `x.get_unchecked_mut(i)`: element `i` as a reference (a
    /// cell), indexed as `x[i]` (so a bad index panics in the derivative, where the primal's
    /// behavior would be undefined).
    fn unchecked(&mut self, recv: &syn::Expr, i: &syn::Expr, access: Access) -> syn::Result<Value> {
        if let syn::Expr::Range(_) = strip_parens(i) {
            return err_at(i, "cotan supports `get_unchecked` with an index; take a sub-slice with `&x[a..b]`");
        }
        let x = self.memory(recv)?;
        let mt = self.mem_ty(x).unwrap();
        if mt.is_ptr() || matches!(mt.kind, MemKind::Record(_) | MemKind::Cell) {
            return err_at(recv, "cotan supports `get_unchecked` on slices, arrays and vectors");
        }
        if access == Access::Mut && !mt.is_writable() {
            return err_at(recv, "`get_unchecked_mut` needs `&mut` access to the slice");
        }
        let i = self.index_value(i)?;
        Ok(self.offset_of(x, i, MemTy { kind: MemKind::Cell, access, ..mt }))
    }

    /// `*p = v` as `p.write(v)`.
    fn write_through(&mut self, p: &syn::Expr, v: &syn::Expr) -> syn::Result<()> {
        let (v, vt) = self.scalar(v)?;
        let (m, i) = match self.deref(p)? {
            Deref::Elem(m, i) => (m, i),
            _ => return err_at(p, "cotan supports `.write(..)` on raw pointers to numbers"),
        };
        if !self.mem_ty(m).unwrap().is_writable() {
            return err_at(p, "cannot write through a `*const` pointer; take `*mut`");
        }
        let t = self.elem_sty(m);
        self.unify(t, vt, p.span())?;
        self.effect(OpKind::Store { mem: m, index: Some(i), value: v });
        Ok(())
    }

    /// `copy_nonoverlapping(src, dst, n)`: `dst[k] = src[k]` for `k` in `0..n`.
    fn copy_nonoverlapping(&mut self, src: &syn::Expr, dst: &syn::Expr, n: &syn::Expr) -> syn::Result<()> {
        let what = "`copy_nonoverlapping`";
        let s = self.pointer(src, what)?;
        let d = self.pointer(dst, what)?;
        if !self.mem_ty(d).unwrap().is_writable() {
            return err_at(dst, "`copy_nonoverlapping` writes its destination: it needs a `*mut` pointer");
        }
        let n = self.index_value(n)?;
        let (se, de) = (self.elem_sty(s), self.elem_sty(d));
        self.unify(de, se, dst.span())?;
        self.copy_loop(d, s, n);
        Ok(())
    }

    /// The functions of `std::ptr` and `std::slice` cotan lowers (`name` as `std_fn` gives it).
    pub(crate) fn pointer_fn(&mut self, name: &str, c: &syn::ExprCall) -> syn::Result<Option<Agg>> {
        let args: Vec<&syn::Expr> = c.args.iter().collect();
        let leaf = |v: Value| Some(Tree::Leaf(v));
        match (name, args.as_slice()) {
            ("ptr_swap", [a, b]) => {
                let (pa, ia) = self.elem_place(a, "`ptr::swap`")?;
                let (pb, ib) = self.elem_place(b, "`ptr::swap`")?;
                for (p, e) in [(pa, a), (pb, b)] {
                    if !self.mem_ty(p).unwrap().is_writable() {
                        return err_at(e, "`ptr::swap` writes through its pointers: it needs `*mut` pointers");
                    }
                }
                let (ta, tb) = (self.elem_sty(pa), self.elem_sty(pb));
                self.unify(ta, tb, c.span())?;
                self.at(c.span());
                let x = self.emit_s(OpKind::Load { mem: pa, index: Some(ia) }, ta);
                let y = self.emit_s(OpKind::Load { mem: pb, index: Some(ib) }, tb);
                self.effect(OpKind::Store { mem: pa, index: Some(ia), value: y });
                self.effect(OpKind::Store { mem: pb, index: Some(ib), value: x });
                Ok(None)
            }
            ("ptr_read", [p]) => {
                let (m, i) = self.elem_place(p, "`ptr::read`")?;
                let t = self.elem_sty(m);
                Ok(leaf(self.emit_s(OpKind::Load { mem: m, index: Some(i) }, t)))
            }
            ("ptr_write", [p, v]) => self.write_through(p, v).map(|_| None),
            ("copy_nonoverlapping", [src, dst, n]) => self.copy_nonoverlapping(src, dst, n).map(|_| None),
            ("ptr_copy", _) => err_at(
                &c.func,
                "cotan supports copies between raw pointers that do not overlap: use `std::ptr::copy_nonoverlapping`, or copy with a loop",
            ),
            ("from_raw_parts" | "from_raw_parts_mut", [p, n]) => {
                let access = if name == "from_raw_parts" { Access::Shared } else { Access::Mut };
                let p = self.pointer(p, &format!("`{name}`"))?;
                let mt = self.mem_ty(p).unwrap();
                if access == Access::Mut && !mt.is_writable() {
                    return err_at(&args[0], "`from_raw_parts_mut` needs a `*mut` pointer");
                }
                let n = self.index_value(n)?;
                self.at(c.span());
                let zero = self.usize_const(0);
                Ok(leaf(self.slice_of(p, zero, n, MemTy { kind: MemKind::Slice, access, ..mt })))
            }
            _ => err_at(c, format!("`{}` takes other arguments", quote::ToTokens::to_token_stream(&c.func))),
        }
    }

    /// The element a pointer argument points at, as `(memory, index)`.
    fn elem_place(&mut self, p: &syn::Expr, what: &str) -> syn::Result<(Value, Value)> {
        match self.deref(p)? {
            Deref::Elem(m, i) => Ok((m, i)),
            _ => err_at(p, format!("{what} needs a raw pointer to a number")),
        }
    }

    /// `e as *const T` / `e as *mut T` / `e as *mut [T; N]`: of a reference (`&mut a as
    /// *mut [f64; 2]`, `&x[i] as *const f64`), or of another pointer.
    pub(crate) fn ptr_cast(&mut self, c: &syn::ExprCast, tp: &syn::TypePtr) -> syn::Result<Value> {
        let Some(Ty::Mem(target)) = ptr_type(tp) else {
            return err_at(
                &c.ty,
                "cotan supports raw pointers to numbers and to arrays of numbers (`*const f64`, `*mut [f64; 3]`)",
            );
        };
        let (base, k) = match strip_parens(&c.expr) {
            syn::Expr::Reference(r) => match strip_parens(&r.expr) {
                syn::Expr::Index(i) if !crate::slices::is_range_index(&r.expr) => {
                    let m = self.memory(&i.expr)?;
                    (m, self.index_value(&i.index)?)
                }
                syn::Expr::Unary(syn::ExprUnary { op: syn::UnOp::Deref(_), expr, .. }) => match self.deref(expr)? {
                    Deref::Elem(m, i) => (m, i),
                    Deref::Array(a) | Deref::Other(a) => (a, self.usize_const(0)),
                },
                inner => {
                    let v = self.expr(inner)?;
                    (v, self.usize_const(0))
                }
            },
            e => {
                let v = self.expr(e)?;
                (v, self.usize_const(0))
            }
        };
        let Some(bt) = self.mem_ty(base) else {
            return err_at(
                &c.expr,
                "cotan cannot take a pointer to a local number; keep it in a one-element array (`let mut s = [0.0];`) and pass `s.as_mut_ptr()`",
            );
        };
        if matches!(bt.kind, MemKind::Record(_)) {
            return err_at(&c.expr, "cotan supports pointers to numbers and arrays of numbers, not to structs");
        }
        if target.access == Access::Mut && !bt.is_writable() {
            return err_at(&c.expr, "cotan writes only through pointers made from `&mut` references or `*mut` pointers; take `&mut` (or `*mut`) here");
        }
        let t = self.elem_sty(base);
        self.unify(t, STy::Known(target.elem), c.span())?;
        self.at(c.span());
        Ok(self.offset_of(base, k, MemTy { elem: bt.elem, ..target }))
    }

    /// The buffer memory `v` is part of, through sub-slices and offsets.
    fn root_of(&self, mut v: Value) -> Value {
        loop {
            match (self.views.get(&v), self.offsets.get(&v)) {
                (Some(&(base, ..)), _) | (None, Some(&(base, _))) => v = base,
                _ => return v,
            }
        }
    }

    /// A call may not get two pointers into one buffer when it writes through one of them,
    /// nor a pointer and a reference into one buffer: the callee's derivatives take its
    /// parameters for separate memory, and could not see that they overlap.
    pub(crate) fn check_pointer_args(&self, args: &[(Value, bool)], span: proc_macro2::Span) -> syn::Result<()> {
        let mem: Vec<(Value, bool, bool)> = args
            .iter()
            .filter(|(v, _)| self.mem_ty(*v).is_some())
            .map(|&(v, by_mut)| (self.root_of(v), by_mut, self.is_ptr(v)))
            .collect();
        for (k, &(root, m1, p1)) in mem.iter().enumerate() {
            for &(r2, m2, p2) in &mem[k + 1..] {
                if root != r2 || !(p1 || p2) {
                    continue;
                }
                if p1 && p2 && (m1 || m2) {
                    return err(
                        span,
                        "cotan cannot pass two pointers into one buffer to a call that writes through one of them: the derivative of the callee could not see that they may overlap; pass one pointer and the offsets (`f(p, i, j)`), and take `p.add(i)` in the callee",
                    );
                }
                if p1 != p2 {
                    return err(
                        span,
                        "cotan cannot pass a raw pointer and a reference into the same buffer to one call; pass both as pointers (`x.as_ptr()`)",
                    );
                }
            }
        }
        Ok(())
    }

    /// The binding of `let mut name = p;` for a pointer to numbers `p`: its buffer and a
    /// variable holding the offset from it, which assignments update.
    pub(crate) fn ptr_var(&mut self, name: &str, p: Value) -> Binding {
        let (root, k) = self.ptr_in_root(p);
        let offset = self.new_var(&format!("{name}_offset"), ISIZE);
        self.effect(OpKind::DeclVar { var: offset, init: k });
        Binding::PtrVar { root, offset, ty: self.mem_ty(p).unwrap() }
    }

    /// The current value of a pointer variable.
    pub(crate) fn read_ptr_var(&mut self, root: Value, offset: cotan_ir::Var, ty: MemTy) -> Value {
        let k = self.emit_s(OpKind::GetVar(offset), ISIZE);
        self.offset_of(root, k, ty)
    }

    /// `p` as `(root, k)`: the buffer it points into (no offset or sub-slice) and its
    /// offset in elements from there, an `isize` (offsets may be negative).
    fn ptr_in_root(&mut self, p: Value) -> (Value, Value) {
        let mut parts = vec![];
        let mut root = p;
        loop {
            let (base, k) = match (self.views.get(&root), self.offsets.get(&root)) {
                (Some(&(base, start, _)), _) => (base, start),
                (None, Some(&(base, k))) => (base, k),
                _ => break,
            };
            parts.push(k);
            root = base;
        }
        let mut total = None;
        for k in parts.into_iter().rev() {
            let k = match self.func.ty(k) {
                Ty::Scalar(Scalar::Isize) => k,
                _ => self.emit_s(OpKind::Cast(k), ISIZE),
            };
            total = Some(match total {
                None => k,
                Some(t) => self.emit_s(OpKind::Binary(cotan_ir::BinOp::Add, t, k), ISIZE),
            });
        }
        let total = total.unwrap_or_else(|| self.emit_s(OpKind::Const(Const::Int(0)), ISIZE));
        (root, total)
    }

    /// `name = e;` for a pointer variable: `e` must point into the same buffer. `false`
    /// when `name` is no pointer (nothing is lowered then).
    pub(crate) fn assign_ptr_var(&mut self, target: &syn::Expr, e: &syn::Expr) -> syn::Result<bool> {
        let syn::Expr::Path(p) = strip_parens(target) else { return Ok(false) };
        let Some(ident) = p.path.get_ident() else { return Ok(false) };
        let (root, offset, ty) = match self.lookup(&ident.to_string()) {
            Some(Binding::PtrVar { root, offset, ty }) => (root, offset, ty),
            Some(Binding::Value(v)) if self.is_ptr(v) => {
                return err_at(
                    target,
                    "cotan can point a pointer variable elsewhere only when it points to numbers (`let mut p: *const f64`); keep this pointer and compute each address from it",
                )
            }
            _ => return Ok(false),
        };
        let v = self.pointer(e, "a pointer variable's new value")?;
        if ty.access == Access::Mut && !self.mem_ty(v).unwrap().is_writable() {
            return err_at(e, "this pointer is `*const`, and the variable holds `*mut` pointers");
        }
        let (r, k) = self.ptr_in_root(v);
        if r != root {
            return err_at(
                e,
                format!("cotan can point the pointer variable `{ident}` only into the buffer it starts in; use a second variable for this one"),
            );
        }
        self.effect(OpKind::SetVar(offset, k));
        Ok(true)
    }
}

impl Lower {
    /// A local copy of an array (of numbers, or of rows that are arrays of numbers).
    pub(crate) fn array_copy(&mut self, src: Value, span: proc_macro2::Span) -> syn::Result<Value> {
        let m = self.mem_ty(src).expect("an array");
        let (Some(cotan_ir::Dim::Array(n)), Some(row)) = (m.kind.dim(), m.kind.row()) else {
            return self.local_copy(src, span);
        };
        let MemKind::Array(k) = row else {
            return err(
                span,
                "cotan copies arrays of numbers and arrays of arrays of numbers; copy deeper ones level by level",
            );
        };
        let t = self.elem_sty(src);
        let k_v = self.usize_const(k as i128);
        let n_v = self.usize_const(n as i128);
        let dst = self.zero_rows(t, MemKind::Array(k), k_v, n_v, cotan_ir::Dim::Array(n), span)?;
        self.index_loop(n_v, |l, i| {
            let (d, s) = (l.row(dst, i), l.row(src, i));
            let k_v = l.usize_const(k as i128);
            l.copy_loop(d, s, k_v);
        });
        Ok(dst)
    }
}
