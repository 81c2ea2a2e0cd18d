//! Local structs of numbers lent to calls: `step(&mut p, dt)`, `p.advance(dt)` with a
//! `&mut self` method, `show(&p)`.
//!
//! A local struct of numbers is a value (a tree of its fields, see `structs.rs`), but a
//! callee that takes `&S` or `&mut S` takes memory. For the call, the struct is copied into
//! a struct of its own (an array of one element, on the stack), and after a call that took it `&mut`, its fields are read back. The callee sees
//! the same numbers and the caller gets what it wrote, as with the borrow.

use cotan_ir::{Access, Const, Dim, MemKind, OpKind, Scalar, Value, Var, ZeroField};
use proc_macro2::Span;

use crate::agg::{Slot, Tree};
use crate::env::FieldType;
use crate::infer::STy;
use crate::lower::{err, mem, Binding, Lower};

const USIZE: STy = STy::Known(Scalar::Usize);

/// A struct lent `&mut` to the call being lowered: the copy, and the variables its fields
/// go back to.
pub(crate) struct Lent {
    copy: Value,
    fields: Vec<(String, Var)>,
}

impl Lower {
    /// `&name` or `&mut name` (`by_mut`) as an argument, when `name` is a local struct of
    /// numbers: its copy, lent. `None` when `name` is something else.
    pub(crate) fn lend_struct(&mut self, name: &str, by_mut: bool, span: Span) -> Option<syn::Result<(Value, bool)>> {
        let Some(Binding::Agg(Tree::Struct(ty, fields))) = self.lookup(name) else { return None };
        Some(self.lend(name, &ty, &fields, by_mut, span))
    }

    fn lend(
        &mut self,
        name: &str,
        ty: &str,
        fields: &[(String, Tree<Slot>)],
        by_mut: bool,
        span: Span,
    ) -> syn::Result<(Value, bool)> {
        let refuse = |why: &str| {
            err(
                span,
                format!("cotan lends a local struct to a call when its fields are numbers, and {why}; pass `{name}` by value and return the new one from the function (`{name} = f({name}, ..)`)"),
            )
        };
        let Some(defs) = self.env.record_fields(ty) else {
            return refuse(&format!("it cannot read the definition of `{ty}`"));
        };
        let mut zero = vec![];
        let mut slots = vec![];
        for (field, ft) in defs {
            let (FieldType::Number(s), Some((_, Tree::Leaf(slot)))) = (ft, fields.iter().find(|(n, _)| *n == field))
            else {
                return refuse(&format!("`{ty}` has the field `{field}`"));
            };
            zero.push((field.clone(), ZeroField::Number(s)));
            slots.push((field, *slot));
        }
        if slots.len() != fields.len() {
            return refuse(&format!("`{name}` does not match the definition of `{ty}`"));
        }
        let id = self.func.record(ty);
        self.at(span);
        let one = self.emit_s(OpKind::Const(Const::Int(1)), USIZE);
        let buf = self.emit(
            OpKind::AllocRecords { len: one, fields: zero },
            mem(Scalar::F64, MemKind::Records(Dim::Array(1), id), Access::Owned),
        );
        let first = self.emit_s(OpKind::Const(Const::Int(0)), USIZE);
        let copy = self.row(buf, first);
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
                return err(span, format!("`{name}` is not `mut`: it cannot be lent `&mut`"));
            }
            self.lent.push(Lent { copy, fields: back });
        }
        Ok((copy, by_mut))
    }

    /// After a call: the fields of the structs lent to it `&mut` since `mark` (the length
    /// of `lent` before its arguments), read back from their copies.
    pub(crate) fn return_lent(&mut self, mark: usize, span: Span) {
        for Lent { copy, fields } in self.lent.split_off(mark) {
            for (field, var) in fields {
                let place = self.field_of(copy, field, String::new(), span);
                let t = self.elem_sty(place);
                let v = self.emit_s(OpKind::Load { mem: place, index: None }, t);
                self.effect(OpKind::SetVar(var, v));
            }
        }
    }

    /// `name.method(args)` on a local struct of numbers, for a method of the crate that does
    /// not take it field by field (`&mut self`): `Type::method(&mut name, args)`.
    pub(crate) fn lent_receiver_call(
        &mut self,
        m: &syn::ExprMethodCall,
        ty: &str,
    ) -> Option<syn::Result<Option<crate::agg::Agg>>> {
        let syn::Expr::Path(recv) = crate::lower::strip_parens(&m.receiver) else { return None };
        recv.path.get_ident()?;
        let mut path: syn::Path = syn::parse_str(&format!("{ty}::{}", m.method)).ok()?;
        let shape = self.env.callee(&path)?;
        for seg in path.segments.iter_mut() {
            seg.ident.set_span(m.method.span());
        }
        let at = crate::span::Spanned::span(&*m.receiver);
        let receiver: syn::Expr = syn::parse_quote_spanned!(at=> &mut #recv);
        let mut args: Vec<syn::Expr> = vec![receiver];
        args.extend(m.args.iter().cloned());
        let args: Vec<&syn::Expr> = args.iter().collect();
        let n = shape.results;
        let types = shape.ret_scalars.filter(|t| t.len() == n);
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
