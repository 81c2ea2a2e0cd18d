//! Operators on structs of the crate (`impl Sub for V3`): `a - b` is the call of the impl's
//! method `a.sub(b)`, lowered as any method of the struct (field by field, `structs.rs`).
//! Operators on numbers stay operations (`expr.rs`).

use crate::agg::{Agg, Slot, Tree};
use crate::lower::{Binding, Lower};
use syn::spanned::Spanned;

/// The method of a binary operator (`+` → `add`, `+=` → `add_assign`).
pub(crate) fn method_of(op: &syn::BinOp) -> Option<&'static str> {
    use syn::BinOp as B;
    Some(match op {
        B::Add(_) => "add",
        B::Sub(_) => "sub",
        B::Mul(_) => "mul",
        B::Div(_) => "div",
        B::Rem(_) => "rem",
        B::AddAssign(_) => "add_assign",
        B::SubAssign(_) => "sub_assign",
        B::MulAssign(_) => "mul_assign",
        B::DivAssign(_) => "div_assign",
        B::RemAssign(_) => "rem_assign",
        _ => return None,
    })
}

/// The message for an operator on a struct whose type has no method for it.
fn no_method(name: &str, ty: &str) -> String {
    format!("cotan found no single `{name}` method of `{ty}` for this operator: it reads the operator's impl in this crate, and does not choose between several (`Mul<f64>` and `Mul<{ty}>`, say) by the operands' types; call a method of your own here (`a.scaled(s)`), or implement the operator's trait for `{ty}` once")
}

impl Lower {
    /// `a op b` with `a` a struct whose type implements the operator: the method call
    /// (`a.sub(b)`); `None` for operands that are not structs (nothing is lowered then).
    pub(crate) fn struct_operator(&mut self, b: &syn::ExprBinary) -> Option<syn::Result<Option<Agg>>> {
        let name = method_of(&b.op)?;
        let span = b.op.span();
        if matches!(crate::lower::strip_parens(&b.left), syn::Expr::Reference(_)) {
            // `&a + &b` is an impl for references, which cotan does not read: not the impl
            // for values (the message then says what cotan takes).
            return None;
        }
        let Some(ty) = self.any_struct_type_of(&b.left) else {
            if let Some(r) = self.number_on_struct(b, name) {
                return Some(r);
            }
            return self.lowered_operand(b, name);
        };
        if self.operator_method(&ty, name).is_none() {
            // (A type cotan cannot read, another crate's alias of `f64` say: `scalar_sty` says so.)
            self.env.record_fields(&ty)?;
            return Some(crate::lower::err(span, no_method(name, &ty)));
        }
        let method = syn::Ident::new(name, span);
        let (left, right) = (&b.left, &b.right);
        let call: syn::ExprMethodCall = syn::parse_quote_spanned!(span=> (#left).#method(#right));
        Some(self.method_call(&call))
    }

    /// `a op b` where only lowering `a` tells whether it is a struct (`v.iter().fold(..) * s`,
    /// a call's result): `a` lowered, then the method of its struct type called on it, or
    /// the operation on numbers. `None` for the operands `any_struct_type_of` judges (names,
    /// elements, fields: numbers then) and for compound assignments (their left is a place).
    fn lowered_operand(&mut self, b: &syn::ExprBinary, name: &str) -> Option<syn::Result<Option<Agg>>> {
        use syn::Expr as E;
        let left = crate::lower::strip_parens(&b.left);
        if name.ends_with("_assign")
            || !matches!(left, E::MethodCall(_) | E::Call(_) | E::Block(_) | E::If(_) | E::Match(_))
        {
            return None;
        }
        Some((|| {
            let a = self.agg(left)?;
            let Tree::Struct(ty, _) = &a else {
                let v = self.single_value(Some(a), left.span())?.expect("a value");
                let v = self.auto_load(v);
                let t = self.scalar_sty(v, left.span())?;
                return self.binary_after(b, (v, t)).map(|v| Some(Tree::Leaf(v)));
            };
            if self.operator_method(ty, name).is_none() {
                return crate::lower::err(b.op.span(), no_method(name, ty));
            }
            // The struct, under a name the call can take it by.
            let operand = syn::Ident::new(&format!("__cotan_operand{}", self.func.values.len()), b.op.span());
            self.bind(operand.to_string(), Binding::Agg(a.map(&mut Slot::Value)));
            let (method, right) = (syn::Ident::new(name, b.op.span()), &b.right);
            let call: syn::ExprMethodCall = syn::parse_quote_spanned!(b.op.span()=> #operand.#method(#right));
            self.method_call(&call)
        })())
    }

    /// `2.0 * v` with `v` a struct whose crate implements the operator for the number type
    /// (`impl Mul<V3> for f64`): that impl's method, lowered at the operator.
    fn number_on_struct(&mut self, b: &syn::ExprBinary, name: &str) -> Option<syn::Result<Option<Agg>>> {
        let ty = self.any_struct_type_of(&b.right)?;
        let path: syn::Path = syn::parse_str(&ty).ok()?;
        let inl = ["f64", "f32"].iter().find_map(|n| self.env.number_operator(n, name, &path))?;
        let inl = match inl {
            Ok(inl) => inl,
            Err(e) => return Some(crate::lower::err(b.op.span(), e)),
        };
        Some(self.inline_call(inl, &[&b.left, &b.right], None, b.op.span()))
    }

    /// `-a` with `a` a struct whose type implements `Neg`: `a.neg()`.
    pub(crate) fn struct_negation(&mut self, u: &syn::ExprUnary) -> Option<syn::Result<Option<Agg>>> {
        if !matches!(u.op, syn::UnOp::Neg(_)) {
            return None;
        }
        let ty = self.any_struct_type_of(&u.expr)?;
        self.operator_method(&ty, "neg")?;
        let span = u.op.span();
        let expr = &u.expr;
        let call: syn::ExprMethodCall = syn::parse_quote_spanned!(span=> (#expr).neg());
        Some(self.method_call(&call))
    }

    /// The path `Ty::name` when the crate defines that method (in an impl of `Ty` or of a
    /// trait for it).
    fn operator_method(&self, ty: &str, name: &str) -> Option<syn::Path> {
        let path: syn::Path = syn::parse_str(&format!("{ty}::{name}")).ok()?;
        self.env.callee(&path).map(|_| path)
    }
}
