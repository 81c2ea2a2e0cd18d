//! Raw pointers in generated code: pointer arithmetic and the views it makes are written
//! where they are used (`*x.add(i)`, `(*p)[i]`, `x.as_mut_ptr().add(k)`), like sub-slices,
//! and every expression or statement that goes through a raw pointer is written in an
//! `unsafe` block (so are calls and reads of record fields in a function whose source used
//! `unsafe`: an `unsafe fn` callee, a union).

use cotan_ir::IdSet;

use cotan_ir::{Access, Const, Function, MemKind, OpKind, Scalar, Ty, Value};
use proc_macro2::TokenStream;
use quote::quote;

use crate::{scalar_tokens, Gen, Prec};

/// The memory values whose use goes through a raw pointer: pointers, and the views
/// (offsets, sub-slices) of them.
pub(crate) fn unsafe_memory(f: &Function) -> IdSet<Value> {
    let mut out: IdSet<Value> = f.params.iter().copied().filter(|p| is_ptr(f.ty(*p))).collect();
    f.walk(&mut |op| {
        let Some(r) = op.result else { return };
        if is_ptr(f.ty(r)) || op.kind.view_base().is_some_and(|b| out.contains(&b)) {
            out.insert(r);
        }
    });
    out
}

fn is_ptr(t: Ty) -> bool {
    t.mem().is_some_and(|m| m.is_ptr())
}

impl Gen<'_> {
    /// `(base, offset)` if `v` is an `Offset`.
    pub(crate) fn offset_of(&self, v: Value) -> Option<(Value, Value)> {
        match self.def.get(&v)?.kind {
            OpKind::Offset { base, offset } => Some((base, offset)),
            _ => None,
        }
    }

    /// Notes that the code being written goes through a raw pointer (it goes in `unsafe`).
    pub(crate) fn touch(&self, v: Value) {
        if self.unsafe_mem.contains(&v) {
            self.touched.set(true);
        }
    }

    fn is_zero(&self, v: Value) -> bool {
        self.inline.contains(&v) && matches!(self.def[&v].kind, OpKind::Const(Const::Int(0)))
    }

    /// A pointer-typed value as an expression: its name, or the pointer arithmetic that
    /// makes it (`x.as_ptr().add(k)`, `p.offset(k)`, `a.as_mut_ptr().cast::<[f64; 2]>()`).
    pub(crate) fn ptr_expr(&self, v: Value) -> TokenStream {
        self.touch(v);
        let Some((base, k)) = self.offset_of(v) else {
            let n = self.name(v);
            return quote!(#n);
        };
        let rt = self.f.ty(v).mem().unwrap();
        let bt = self.f.ty(base).mem().unwrap();
        let e = scalar_tokens(rt.elem);
        if let (MemKind::ArrayPtr(n), MemKind::ArrayPtr(m)) = (rt.kind, bt.kind) {
            if n == m && self.is_zero(k) {
                return self.ptr_expr(base);
            }
        }
        let mut p = match bt.kind {
            MemKind::Ptr => self.ptr_expr(base),
            MemKind::ArrayPtr(_) => {
                let b = self.ptr_expr(base);
                quote!(#b.cast::<#e>())
            }
            MemKind::Cell => {
                let place = self.place(base, None);
                if rt.access == Access::Mut {
                    quote!((&raw mut #place))
                } else {
                    quote!((&raw const #place))
                }
            }
            _ => {
                let b = self.mem_ref(base);
                if rt.access == Access::Mut {
                    quote!(#b.as_mut_ptr())
                } else {
                    quote!(#b.as_ptr())
                }
            }
        };
        if !self.is_zero(k) {
            let k_ts = self.expr(k).0;
            p = if self.f.ty(k) == Ty::Scalar(Scalar::Isize) {
                quote!(#p.offset(#k_ts))
            } else {
                quote!(#p.add(#k_ts))
            };
        }
        if let MemKind::ArrayPtr(n) = rt.kind {
            let n = proc_macro2::Literal::u64_unsuffixed(n);
            p = quote!(#p.cast::<[#e; #n]>());
        }
        p
    }

    /// Memory reached through a raw pointer, as a place (`(*p.add(k))`), a reference to
    /// one (`(&mut *p)`, `::core::slice::from_raw_parts(p, n)`: indexing or calling a
    /// method on `*p` itself would take a reference implicitly, which rustc refuses), or
    /// `x[k]` for an element of a slice taken by `get_unchecked`; or a pointer as an
    /// expression. `None` for other memory.
    pub(crate) fn pointer_ref(&self, v: Value) -> Option<TokenStream> {
        let t = self.f.ty(v).mem()?;
        if t.is_ptr() {
            return Some(self.ptr_expr(v));
        }
        if let Some((base, start, end)) = self.view_of(v) {
            // `from_raw_parts(p, n)`: a sub-slice of a pointer's memory.
            if self.f.ty(base).mem().is_none_or(|m| m.kind != MemKind::Ptr) {
                return None;
            }
            self.touch(v);
            let mut p = self.ptr_expr(base);
            let len = if self.is_zero(start) {
                self.expr(end).0
            } else {
                let s = self.expr(start).0;
                p = quote!(#p.add(#s));
                let (s, e) = (self.operand(start, Prec::Mul), self.operand(end, Prec::Add));
                quote!(#e - #s)
            };
            return Some(if t.access == Access::Mut {
                quote!(::core::slice::from_raw_parts_mut(#p, #len))
            } else {
                quote!(::core::slice::from_raw_parts(#p, #len))
            });
        }
        let (base, k) = self.offset_of(v)?;
        self.touch(v);
        let bt = self.f.ty(base).mem().unwrap();
        Some(match (t.kind, bt.kind) {
            (MemKind::Array(n), _) => {
                let mut p = self.ptr_expr(base);
                if !self.is_zero(k) {
                    // (Offsets count elements, not arrays.)
                    let (e, k, n) = (scalar_tokens(t.elem), self.expr(k).0, proc_macro2::Literal::u64_unsuffixed(n));
                    p = quote!(#p.cast::<#e>().add(#k).cast::<[#e; #n]>());
                }
                if t.access == Access::Mut {
                    quote!((&mut *#p))
                } else {
                    quote!((&*#p))
                }
            }
            (_, MemKind::Ptr) => {
                let p = self.ptr_expr(base);
                if self.is_zero(k) {
                    quote!((*#p))
                } else {
                    let k = self.expr(k).0;
                    quote!((*#p.add(#k)))
                }
            }
            _ => {
                // An element of a slice, an array or a vector (`get_unchecked`).
                let b = self.mem_ref(base);
                let k = self.expr(k).0;
                quote!(#b[#k])
            }
        })
    }

    /// `*p.add(i)`: an element read or written through a pointer.
    pub(crate) fn ptr_place(&self, mem: Value, index: Option<Value>) -> Option<TokenStream> {
        if self.f.ty(mem).mem()?.kind != MemKind::Ptr {
            return None;
        }
        let p = self.ptr_expr(mem);
        Some(match index {
            Some(i) if !self.is_zero(i) => {
                let i = self.expr(i).0;
                quote!(*#p.add(#i))
            }
            _ => quote!(*#p),
        })
    }

    /// The length of the array an array pointer points at, for `Len` of it.
    pub(crate) fn pointee_len(&self, m: Value) -> Option<u64> {
        self.offset_of(m)?;
        match self.f.ty(m).mem()?.kind {
            MemKind::Array(n) => Some(n),
            _ => None,
        }
    }

    /// `v` as a whole expression (the right side of a `let`, an argument), in an `unsafe`
    /// block if it goes through a raw pointer.
    pub(crate) fn root(&self, v: Value) -> TokenStream {
        self.guard(false, || self.expr(v).0)
    }

    /// `v` as an operand of at least precedence `min`, in an `unsafe` block if needed.
    pub(crate) fn root_operand(&self, v: Value, min: Prec) -> TokenStream {
        self.guard(false, || self.operand(v, min))
    }

    /// What `code` writes, in an `unsafe` block if it goes through a raw pointer (or
    /// `always`).
    pub(crate) fn guard(&self, always: bool, code: impl FnOnce() -> TokenStream) -> TokenStream {
        let outer = self.touched.replace(false);
        let ts = code();
        let touched = self.touched.replace(outer);
        if touched || always {
            self.wrapped.set(true);
            quote!(unsafe { #ts })
        } else {
            ts
        }
    }
}
