//! Locals lent to calls: structs of numbers (`step(&mut p, dt)`, `p.advance(dt)` with a
//! `&mut self` method, `show(&p)`), numbers and their fields (`add_to(&mut acc, x)`,
//! `&mut s.x`), elements of buffers of numbers (`bump(&mut w[i], x)`), and values of
//! expressions (`&K`, `&(a * b)`).
//!
//! A local struct of numbers is a value (a tree of its fields, see `structs.rs`), and a
//! local number a variable, but a callee that takes `&S` or `&mut f64` takes memory. For
//! the call, the local is copied into an array of one element on the stack, and after a
//! call that took it `&mut`, read back: the callee sees the same numbers and the caller
//! gets what it wrote, as with the borrow. A value of an expression is copied the same way
//! and not read back (the temporary Rust makes). An element of a buffer, or a field of a
//! struct parameter, is lent as itself (a cell of its memory, which the callee writes in
//! place).

use cotan_ir::{Access, Const, Dim, MemKind, MemTy, OpKind, Scalar, Value, Var, ZeroField};
use proc_macro2::Span;

use crate::agg::{Slot, Tree};
use crate::env::FieldType;
use crate::infer::STy;
use crate::lower::{err, mem, Binding, Lower};

const USIZE: STy = STy::Known(Scalar::Usize);

/// What was lent `&mut` to the call being lowered: a struct's copy and the variables its
/// fields go back to, or a number's copy (a cell) and its variable.
pub(crate) enum Lent {
    Struct { copy: Value, fields: Vec<(String, Var)> },
    Number { copy: Value, var: Var },
}

impl Lower {
    /// `&name` or `&mut name` (`by_mut`) as an argument, when `name` is a local struct of
    /// numbers: its copy, lent. `None` when `name` is something else.
    pub(crate) fn lend_struct(&mut self, name: &str, by_mut: bool, span: Span) -> Option<syn::Result<(Value, bool)>> {
        let Some(Binding::Agg(Tree::Struct(ty, fields))) = self.lookup(name) else { return None };
        Some(self.lend(name, &ty, &fields, by_mut, span))
    }

    /// `&mut b.pos` of a struct field of a local struct: lent as `lend_struct` lends one.
    pub(crate) fn lend_struct_field(
        &mut self,
        e: &syn::Expr,
        by_mut: bool,
        span: Span,
    ) -> Option<syn::Result<(Value, bool)>> {
        let Ok(Tree::Struct(ty, fields)) = self.slots_of(e)? else { return None };
        let name = quote::ToTokens::to_token_stream(e).to_string().replace(' ', "");
        Some(self.lend(&name, &ty, &fields, by_mut, span))
    }

    fn lend(
        &mut self,
        name: &str,
        ty: &str,
        fields: &[(String, Tree<Slot>)],
        by_mut: bool,
        span: Span,
    ) -> syn::Result<(Value, bool)> {
        // (A struct a call returned, lent to its method, has no name of the user's.)
        let shown = if name.starts_with("__cotan") { "it" } else { name };
        let refuse = |why: &str| {
            err(
                span,
                format!("cotan lends a local struct to a call when its fields are numbers, and {why}; pass `{shown}` by value and return the new one from the function (`{shown} = f({shown}, ..)`)"),
            )
        };
        let Some(defs) = self.env.record_fields(ty) else {
            return refuse(&format!("it cannot read the definition of `{ty}`"));
        };
        let mut zero = vec![];
        let mut slots = vec![];
        for (field, ft) in defs {
            let (&FieldType::Number(s), Some((_, Tree::Leaf(slot)))) = (&ft, fields.iter().find(|(n, _)| *n == field))
            else {
                if let FieldType::Memory(..) = ft {
                    return err(
                        span,
                        format!("cotan lends a local struct to a call when its fields are numbers, and `{ty}` has the array or vector field `{field}`; take the struct as a `&mut {ty}` parameter (`Duplicated`) of the differentiated function, or keep its arrays in local arrays of their own"),
                    );
                }
                return refuse(&format!("`{ty}` has the field `{field}`"));
            };
            zero.push((field.clone(), ZeroField::Number(s)));
            slots.push((field, *slot));
        }
        if slots.len() != fields.len() {
            return refuse(&format!("`{name}` does not match the definition of `{ty}`"));
        }
        let id = self.func.record(ty);
        let copy = self.one_record(id, zero, span);
        let mut back = vec![];
        for (field, slot) in slots {
            let value = match slot {
                Slot::Value(v) => v,
                Slot::Var(var) => {
                    back.push((field.clone(), var));
                    let t = self.var_sty(var);
                    self.emit_s(OpKind::GetVar(var), t)
                }
            };
            let place = self.field_of(copy, field, String::new(), span);
            let (pt, vt) = (self.elem_sty(place), self.scalar_sty(value, span)?);
            self.unify(pt, vt, span)?;
            self.effect(OpKind::Store { mem: place, index: None, value });
        }
        if by_mut {
            if back.len() != fields.len() {
                return err(span, format!("`{shown}` is not `mut`: it cannot be lent `&mut`"));
            }
            self.lent.push(Lent::Struct { copy, fields: back });
        }
        Ok((copy, by_mut))
    }

    /// A struct of record type `id` with `fields` zero, on the stack: the one element of a
    /// buffer of its own, which the caller fills.
    pub(crate) fn one_record(&mut self, id: u32, fields: Vec<(String, ZeroField)>, span: Span) -> Value {
        self.at(span);
        let one = self.usize_const(1);
        let buf = self.emit(
            OpKind::AllocRecords { len: one, fields },
            mem(Scalar::F64, MemKind::Records(Dim::Array(1), id), Access::Owned),
        );
        let first = self.usize_const(0);
        self.row(buf, first)
    }

    /// `&e` or `&mut e` (`by_mut`) as an argument, when `e` is a local number, or a number
    /// field of a local struct or tuple (`&mut s.x`, `&mut t.0`): a cell holding a copy of
    /// it, lent. `None` when `e` is something else.
    pub(crate) fn lend_number(
        &mut self,
        e: &syn::Expr,
        by_mut: bool,
        span: Span,
    ) -> Option<syn::Result<(Value, bool)>> {
        let slot = match e {
            syn::Expr::Path(p) => match p.path.get_ident().and_then(|n| self.lookup(&n.to_string())) {
                Some(Binding::Var(var)) => Slot::Var(var),
                Some(Binding::Value(v)) => Slot::Value(v),
                Some(_) => return None,
                // A constant (`&K`): a copy of its value, as the temporary Rust makes.
                None if !by_mut => match self.expr(e) {
                    Ok(v) if self.mem_ty(v).is_none() => Slot::Value(v),
                    // (Memory, a constant table: lent as it is.)
                    Ok(v) => return Some(Ok((v, by_mut))),
                    Err(err) => return Some(Err(err)),
                },
                None => return None,
            },
            // The value of an expression (`&(a * b)`, `&mut 0.0`): a copy, the temporary Rust
            // makes, which nothing reads after the call.
            e if !is_place(e) => match self.expr(e) {
                Ok(v) if self.mem_ty(v).is_none() => return Some(self.lend_copy(v, None, by_mut, span)),
                // (Memory an expression gives: lent as it is.)
                Ok(v) => return Some(Ok((v, by_mut))),
                Err(err) => return Some(Err(err)),
            },
            syn::Expr::Field(f) => match self.slots_of(e) {
                Some(Ok(Tree::Leaf(slot))) => slot,
                Some(_) => return None,
                // A number field of a struct in memory (`&mut p.x` of `p: &mut P`): its cell.
                None => return self.lend_field_cell(f, by_mut, span),
            },
            _ => return None,
        };
        let (value, var) = match slot {
            Slot::Var(var) => {
                let t = self.var_sty(var);
                self.at(span);
                (self.emit_s(OpKind::GetVar(var), t), Some(var))
            }
            Slot::Value(v) if self.mem_ty(v).is_none() => (v, None),
            Slot::Value(_) => return None,
        };
        if by_mut && var.is_none() {
            let name = quote::ToTokens::to_token_stream(e).to_string().replace(' ', "");
            return Some(err(span, format!("`{name}` is not `mut`: it cannot be lent `&mut`")));
        }
        Some(self.lend_copy(value, var, by_mut, span))
    }

    /// A cell holding a copy of the number `value`, lent; after a `&mut` borrow, its
    /// content goes back to `back` (none for a temporary).
    fn lend_copy(&mut self, value: Value, back: Option<Var>, by_mut: bool, span: Span) -> syn::Result<(Value, bool)> {
        let t = self.scalar_sty(value, span)?;
        // (A float of a type not known yet is settled with the rest: `set_elem_sty`.)
        let s = match t {
            STy::Known(s) => s,
            _ => Scalar::F64,
        };
        self.at(span);
        let one = self.emit_s(OpKind::Const(Const::Int(1)), USIZE);
        let buf = self.emit(OpKind::Alloc { len: one, init: value }, mem(s, MemKind::Array(1), Access::Owned));
        self.set_elem_sty(buf, t);
        let first = self.emit_s(OpKind::Const(Const::Int(0)), USIZE);
        let access = if by_mut { Access::Mut } else { Access::Shared };
        let copy = self.offset_of(buf, first, MemTy { kind: MemKind::Cell, elem: s, access });
        if let (true, Some(var)) = (by_mut, back) {
            self.lent.push(Lent::Number { copy, var });
        }
        Ok((copy, by_mut))
    }

    /// `&p.x` or `&mut p.x` with `p` a struct in memory and `x` a number: the field's cell,
    /// lent as itself. `None` for other fields (arrays, structs, enums: lent as they are).
    fn lend_field_cell(&mut self, f: &syn::ExprField, by_mut: bool, span: Span) -> Option<syn::Result<(Value, bool)>> {
        if !self.is_record_receiver(&f.base) {
            return None;
        }
        let cell = self.field(f).ok()?;
        let m = self.mem_ty(cell).filter(|m| m.kind == MemKind::Cell)?;
        Some(match m.is_writable() || !by_mut {
            true => Ok((cell, by_mut)),
            false => err(span, "this field cannot be lent `&mut`: its struct is not `&mut`; take it as `&mut S`"),
        })
    }

    /// `&x[i]` or `&mut x[i]` as an argument, with `x` a buffer of numbers: the element,
    /// lent as a cell of `x`. `None` for other buffers (whose elements are rows or structs).
    pub(crate) fn lend_element(
        &mut self,
        ix: &syn::ExprIndex,
        by_mut: bool,
        span: Span,
    ) -> Option<syn::Result<(Value, bool)>> {
        // (Only a buffer named by a place: when the element is not a number, the caller
        // lowers the expression again, which must not repeat a call's work.)
        if matches!(crate::lower::strip_parens(&ix.index), syn::Expr::Range(_))
            || !is_place(&ix.expr)
            || !self.is_memory(&ix.expr)
        {
            return None;
        }
        let x = match self.memory(&ix.expr) {
            Ok(x) => x,
            Err(e) => return Some(Err(e)),
        };
        let mt = self.mem_ty(x)?;
        if !matches!(mt.kind, MemKind::Slice | MemKind::Array(_) | MemKind::Vec) {
            return None;
        }
        Some((|| {
            if by_mut && !mt.is_writable() {
                return err(span, "this element cannot be lent `&mut`: its buffer is not `&mut`");
            }
            let i = self.index_value(&ix.index)?;
            let access = if by_mut { Access::Mut } else { Access::Shared };
            self.at(span);
            Ok((self.offset_of(x, i, MemTy { kind: MemKind::Cell, access, ..mt }), by_mut))
        })())
    }

    /// An element already taken by `&mut` (a name bound to `mem[index]`), lent `&mut`.
    pub(crate) fn lend_place(&mut self, mem: Value, index: Value, span: Span) -> (Value, bool) {
        let mt = self.mem_ty(mem).expect("an element's buffer is memory");
        self.at(span);
        (self.offset_of(mem, index, MemTy { kind: MemKind::Cell, access: Access::Mut, ..mt }), true)
    }

    /// After a call: what was lent to it `&mut` since `mark` (the length of `lent` before
    /// its arguments), read back from the copies.
    pub(crate) fn return_lent(&mut self, mark: usize, span: Span) {
        for lent in self.lent.split_off(mark) {
            match lent {
                Lent::Struct { copy, fields } => {
                    for (field, var) in fields {
                        let place = self.field_of(copy, field, String::new(), span);
                        let t = self.elem_sty(place);
                        let v = self.emit_s(OpKind::Load { mem: place, index: None }, t);
                        self.effect(OpKind::SetVar(var, v));
                    }
                }
                Lent::Number { copy, var } => {
                    let t = self.elem_sty(copy);
                    let v = self.emit_s(OpKind::Load { mem: copy, index: None }, t);
                    self.effect(OpKind::SetVar(var, v));
                }
            }
        }
    }

    /// `name.method(args)` on a local struct of numbers, for a method of the crate that does
    /// not take it field by field (`&mut self`, a trait's method): `Type::method(&mut name,
    /// args)`, or `&name` when `name` is not `mut` (a `&self` method then).
    pub(crate) fn lent_receiver_call(
        &mut self,
        m: &syn::ExprMethodCall,
        ty: &str,
    ) -> Option<syn::Result<Option<crate::agg::Agg>>> {
        let syn::Expr::Path(recv) = crate::lower::strip_parens(&m.receiver) else { return None };
        let name = recv.path.get_ident()?.to_string();
        let Some(Binding::Agg(slots)) = self.lookup(&name) else { return None };
        let mutable = slots.leaves().iter().all(|s| matches!(s, Slot::Var(_)));
        let mut path: syn::Path = syn::parse_str(&format!("{ty}::{}", m.method)).ok()?;
        // (A trait's method has no shape here: like a struct parameter's, it gives one value.)
        let shape = self.env.callee(&path);
        for seg in path.segments.iter_mut() {
            seg.ident.set_span(m.method.span());
        }
        let at = crate::span::Spanned::span(&*m.receiver);
        let receiver: syn::Expr = match mutable {
            true => syn::parse_quote_spanned!(at=> &mut #recv),
            false => syn::parse_quote_spanned!(at=> &#recv),
        };
        let mut args: Vec<syn::Expr> = vec![receiver];
        args.extend(m.args.iter().cloned());
        let args: Vec<&syn::Expr> = args.iter().collect();
        if let Some(inl) = self.inlined_for(&path, &args) {
            // (A struct with arrays: the method is lowered here, on the struct's own slots.)
            return Some(inl.and_then(|inl| self.inline_call(inl, &args, m.turbofish.as_ref(), m.method.span())));
        }
        let n = shape.as_ref().map_or(1, |s| s.results);
        let types = shape.and_then(|s| s.ret_scalars).filter(|t| t.len() == n);
        let vals = match self.call_path(&path, &args, None, n, types.as_deref(), m.method.span()) {
            Ok(v) => v,
            Err(e) => return Some(Err(e)),
        };
        Some(Ok(match vals.as_slice() {
            [] => None,
            [v] => Some(Tree::Leaf(*v)),
            _ => Some(Tree::Tuple(vals.into_iter().map(Tree::Leaf).collect())),
        }))
    }
}

/// Whether `e` names a place (a variable, a field, an element, a dereference), which a
/// borrow lends, rather than computing a value, which it copies into a temporary.
fn is_place(e: &syn::Expr) -> bool {
    match e {
        syn::Expr::Paren(p) => is_place(&p.expr),
        syn::Expr::Path(_) | syn::Expr::Field(_) | syn::Expr::Index(_) => true,
        syn::Expr::Unary(u) => matches!(u.op, syn::UnOp::Deref(_)),
        _ => false,
    }
}
