//! Functions generic over constants (`fn dot<const N: usize>(a: &[f64; N], b: &[f64; N])`)
//! are lowered at each call with their constants replaced by the values the call gives
//! them (`inline.rs` finds the values: a turbofish, or the lengths of the arrays passed).

use syn::visit_mut::VisitMut;

/// `item` with each const parameter replaced by its value, and no const parameters left.
pub(crate) fn with_constants(item: &syn::ItemFn, values: &[(String, syn::Expr)]) -> syn::ItemFn {
    let mut item = item.clone();
    item.sig.generics.params = std::mem::take(&mut item.sig.generics.params)
        .into_iter()
        .filter(|p| !matches!(p, syn::GenericParam::Const(_)))
        .collect();
    let mut r = Replace { values };
    r.visit_signature_mut(&mut item.sig);
    r.visit_block_mut(&mut item.block);
    item
}

/// The lengths of an array type's levels, outer first (`[[T; C]; R]`: `R`, `C`), each
/// a const parameter's name if it is one (`None` for a slice or a `Vec`); behind
/// references too (`&[T; N]`, `&[[T; N]]`).
pub(crate) fn array_dims(ty: &syn::Type) -> Vec<Option<String>> {
    match ty {
        syn::Type::Reference(r) => array_dims(&r.elem),
        syn::Type::Paren(p) => array_dims(&p.elem),
        syn::Type::Array(a) => {
            let len = match &a.len {
                syn::Expr::Path(p) if p.qself.is_none() => p.path.get_ident().map(|i| i.to_string()),
                _ => None,
            };
            std::iter::once(len).chain(array_dims(&a.elem)).collect()
        }
        // A slice's or vector's length is not a constant; its elements' may be (`&[[T; N]]`).
        syn::Type::Slice(s) => std::iter::once(None).chain(array_dims(&s.elem)).collect(),
        syn::Type::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 && p.path.segments[0].ident == "Vec" => {
            match &p.path.segments[0].arguments {
                syn::PathArguments::AngleBracketed(a) => match a.args.first() {
                    Some(syn::GenericArgument::Type(t)) => std::iter::once(None).chain(array_dims(t)).collect(),
                    _ => vec![],
                },
                _ => vec![],
            }
        }
        _ => vec![],
    }
}

/// The lengths of an argument's levels, outer first, where they are fixed.
pub(crate) fn mem_dims(kind: cotan_ir::MemKind) -> Vec<Option<u64>> {
    let fixed = |d: cotan_ir::Dim| match d {
        cotan_ir::Dim::Array(n) => Some(n),
        _ => None,
    };
    match kind {
        cotan_ir::MemKind::Array(n) => vec![Some(n)],
        cotan_ir::MemKind::Nested(a, b, c) => [Some(a), Some(b), c].into_iter().flatten().map(fixed).collect(),
        _ => vec![],
    }
}

/// The generic arguments written at a call (`dot::<3>`).
pub(crate) fn turbofish(path: &syn::Path) -> Option<&syn::AngleBracketedGenericArguments> {
    match &path.segments.last()?.arguments {
        syn::PathArguments::AngleBracketed(a) => Some(a),
        _ => None,
    }
}

struct Replace<'a> {
    values: &'a [(String, syn::Expr)],
}

impl Replace<'_> {
    /// The value of the constant `path` names, parenthesized unless it is a literal.
    fn value(&self, path: &syn::Path) -> Option<syn::Expr> {
        let id = path.get_ident()?.to_string();
        let (_, v) = self.values.iter().find(|(n, _)| *n == id)?;
        Some(match v {
            syn::Expr::Lit(_) => v.clone(),
            v => syn::parse_quote!((#v)),
        })
    }
}

impl VisitMut for Replace<'_> {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        if let syn::Expr::Path(p) = e {
            if p.qself.is_none() {
                if let Some(v) = self.value(&p.path) {
                    *e = v;
                    return;
                }
            }
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }

    fn visit_generic_argument_mut(&mut self, a: &mut syn::GenericArgument) {
        // `helper::<N>(..)` parses `N` as a type.
        if let syn::GenericArgument::Type(syn::Type::Path(p)) = a {
            if p.qself.is_none() {
                if let Some(v) = self.value(&p.path) {
                    *a = syn::GenericArgument::Const(v);
                    return;
                }
            }
        }
        syn::visit_mut::visit_generic_argument_mut(self, a);
    }
}
