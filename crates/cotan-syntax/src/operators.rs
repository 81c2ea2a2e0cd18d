//! Operators on structs of the crate (`impl Sub for V3`): `a - b` is the call of the impl's
//! method `a.sub(b)`, lowered as any method of the struct (field by field, `structs.rs`).
//! Operators on numbers stay operations (`expr.rs`).

use crate::agg::{Agg, Slot, Tree};
use crate::env::Operand;
use crate::lower::{Binding, Lower};
use syn::spanned::Spanned;

/// Methods of numbers that give a number, by which an operand is judged one.
const NUMBER_METHODS: &[&str] = &[
    "sqrt",
    "cbrt",
    "exp",
    "exp2",
    "ln",
    "log10",
    "log2",
    "sin",
    "cos",
    "tan",
    "tanh",
    "sinh",
    "cosh",
    "atan",
    "atan2",
    "asin",
    "acos",
    "abs",
    "powi",
    "powf",
    "max",
    "min",
    "hypot",
    "recip",
    "signum",
    "clamp",
    "mul_add",
    "ln_1p",
    "exp_m1",
    "to_radians",
    "to_degrees",
];

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
    format!("cotan found no `{name}` method of `{ty}` for this operator that it can tell is the one Rust takes: it reads the operator's impls in this crate (such as `Mul<f64>` and `Mul<{ty}>`) and chooses by the right operand's type where it can judge it (a number, an array, or a struct of the crate); bind the operand to a local first (`let s = ..; a * s`), or call a method of your own here (`a.scaled(s)`)")
}

impl Lower {
    /// `a op b` with `a` a struct whose type implements the operator: the method call
    /// (`a.sub(b)`); `None` for operands that are not structs (nothing is lowered then).
    pub(crate) fn struct_operator(&mut self, b: &syn::ExprBinary) -> Option<syn::Result<Option<Agg>>> {
        let name = method_of(&b.op)?;
        let span = b.op.span();
        if let syn::Expr::Reference(r) = crate::lower::strip_parens(&b.left) {
            // `&a + &b`: the impl for references (`impl Add<&V3> for &V3`), which may differ
            // from the one for values.
            let ty = self.any_struct_type_of(&r.expr)?;
            return match self.chosen_impl(b, &ty, name, true) {
                Some(Ok(inl)) => Some(self.inline_call(inl, &[&b.left, &b.right], None, span)),
                Some(Err(e)) => Some(crate::lower::err(span, e)),
                None => Some(crate::lower::err(span, no_method(name, &format!("&{ty}")))),
            };
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
            if let Some(r) = self.chosen_operator(b, &ty, name) {
                return Some(r);
            }
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
            // The struct, under a name the operator can take it by.
            let operand = syn::Ident::new(&format!("__cotan_operand{}", self.func.values.len()), b.op.span());
            self.bind(operand.to_string(), Binding::Agg(a.map(&mut Slot::Value)));
            let named =
                syn::ExprBinary { left: Box::new(syn::parse_quote_spanned!(left.span()=> #operand)), ..b.clone() };
            match self.struct_operator(&named) {
                Some(r) => r,
                None => crate::lower::err(b.op.span(), no_method(name, ty)),
            }
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

    /// `a op b` with `a` a struct whose type implements the operator several times (`Mul`
    /// and `Mul<[f64; 3]>`): the impl for `b`'s type, judged without lowering `b`, lowered
    /// at the operator. `None` when no impl fits.
    fn chosen_operator(&mut self, b: &syn::ExprBinary, ty: &str, name: &str) -> Option<syn::Result<Option<Agg>>> {
        let inl = match self.chosen_impl(b, ty, name, false)? {
            Ok(inl) => inl,
            Err(e) => return Some(crate::lower::err(b.op.span(), e)),
        };
        let left = &b.left;
        let receiver: syn::Expr = match name.ends_with("_assign") {
            true => syn::parse_quote_spanned!(left.span()=> &mut #left),
            false => (**left).clone(),
        };
        Some(self.inline_call(inl, &[&receiver, &b.right], None, b.op.span()))
    }

    /// Of the impls of the operator `name` for the struct `ty`, the one for `b`'s right
    /// operand.
    fn chosen_impl(
        &self,
        b: &syn::ExprBinary,
        ty: &str,
        name: &str,
        by_ref: bool,
    ) -> Option<Result<crate::Inlined, String>> {
        let right = match crate::lower::strip_parens(&b.right) {
            syn::Expr::Reference(r) => crate::lower::strip_parens(&r.expr),
            e => e,
        };
        let rhs = match self
            .any_struct_type_of(right)
            .or_else(|| self.returned_struct_with_arrays(right))
            .or_else(|| self.constructed_struct(right))
        {
            Some(t) => Operand::Struct(syn::parse_str(&t).ok()?),
            None if self.is_array_operand(right) => Operand::Array,
            None if self.is_number_operand(right) => Operand::Number,
            None => return None,
        };
        self.env.operator_for(&syn::parse_str(ty).ok()?, name, &rhs, by_ref)
    }

    /// The type `a op b` gives, judged without lowering it, when `a` is a struct whose
    /// operator impl returns a struct (`Self` is `a`'s type): `(a's type, the result's)`.
    pub(crate) fn operator_result(&self, b: &syn::ExprBinary) -> Option<(String, String, crate::Inlined)> {
        let name = method_of(&b.op)?;
        let left = crate::lower::strip_parens(&b.left);
        let ty = self.any_struct_type_of(left).or_else(|| self.returned_struct_with_arrays(left))?;
        let by_ref = matches!(left, syn::Expr::Reference(_));
        let inl = match self.operator_method(&ty, name) {
            Some(path) if !by_ref => self.env.inline_as(&path, crate::inline::RETURNS_STRUCT_WITH_ARRAYS)?,
            _ => self.chosen_impl(b, &ty, name, by_ref)?,
        }
        .ok()?;
        let out = crate::inline::returned_type(&inl, Some(ty.clone()))?;
        Some((ty, out, inl))
    }

    /// The struct a tuple struct's constructor builds (`Vec3([x, y, z])`), by the path
    /// written.
    fn constructed_struct(&self, e: &syn::Expr) -> Option<String> {
        let syn::Expr::Call(c) = e else { return None };
        let syn::Expr::Path(p) = crate::lower::strip_parens(&c.func) else { return None };
        let ty = crate::record::tokens_text(&p.path);
        self.env.record_fields(&ty).map(|_| ty)
    }

    /// Whether `e` is a number, judged without lowering it: a literal, a cast, a local
    /// number, an element of a buffer of numbers, a number field, a number method
    /// (`x.sqrt()`), a call of the crate's function returning one, or arithmetic of these.
    fn is_number_operand(&self, e: &syn::Expr) -> bool {
        use syn::Expr as E;
        match e {
            E::Lit(_) | E::Cast(_) => true,
            E::Paren(p) => self.is_number_operand(&p.expr),
            E::Unary(u) => matches!(u.op, syn::UnOp::Neg(_)) && self.is_number_operand(&u.expr),
            E::Binary(b) => {
                method_of(&b.op).is_some() && self.is_number_operand(&b.left) && self.is_number_operand(&b.right)
            }
            E::Path(p) => p.path.get_ident().is_some_and(|i| match self.lookup(&i.to_string()) {
                Some(Binding::Var(_)) => true,
                Some(Binding::Value(v)) => self.mem_ty(v).is_none(),
                _ => false,
            }),
            E::Index(ix) => match crate::lower::strip_parens(&ix.expr) {
                E::Path(p) => p.path.get_ident().is_some_and(|i| match self.lookup(&i.to_string()) {
                    Some(Binding::Value(v)) => self.mem_ty(v).is_some_and(|m| {
                        matches!(
                            m.kind,
                            cotan_ir::MemKind::Array(_) | cotan_ir::MemKind::Slice | cotan_ir::MemKind::Vec
                        )
                    }),
                    _ => false,
                }),
                _ => false,
            },
            E::Field(_) => matches!(self.slots_of(e), Some(Ok(Tree::Leaf(_)))),
            E::MethodCall(m) => NUMBER_METHODS.contains(&m.method.to_string().as_str()),
            E::Call(c) => match crate::lower::strip_parens(&c.func) {
                E::Path(p) => {
                    self.env.callee(&p.path).is_some_and(|s| s.results == 1 && s.ret.is_none() && s.ret_array.is_none())
                }
                _ => false,
            },
            _ => false,
        }
    }

    /// Whether `e` is an array (a literal, a repeat, or a name or field holding one), judged
    /// without lowering it.
    fn is_array_operand(&self, e: &syn::Expr) -> bool {
        match e {
            syn::Expr::Array(_) | syn::Expr::Repeat(_) => true,
            syn::Expr::Path(p) => p
                .path
                .get_ident()
                .and_then(|i| match self.lookup(&i.to_string())? {
                    Binding::Value(v) => self.mem_ty(v),
                    _ => None,
                })
                .is_some_and(|m| matches!(m.kind, cotan_ir::MemKind::Array(_))),
            syn::Expr::Reference(r) => self.is_array_operand(&r.expr),
            _ => false,
        }
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
