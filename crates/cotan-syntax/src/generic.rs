//! Functions generic over their float type (`fn f<T: Float>(x: &[T]) -> T`, with
//! `num_traits::Float`): lowered as if `T` were `f64`, which the IR then stands for; code
//! generation writes `T` back. The `num_traits` idioms become their `f64` spellings:
//! `T::from(e).unwrap()` is `e as f64`, `T::zero()` is `0.0`, `x.to_usize().unwrap()` is
//! `x as usize`.

use crate::span::Spanned;
use syn::visit_mut::VisitMut;

use crate::lower::err_at;

/// Float bounds that make a type parameter the function's float type.
const FLOAT_TRAITS: [&str; 3] = ["Float", "Real", "FloatCore"];

/// std's arithmetic traits: a type parameter bound by some of them (and by markers only
/// otherwise) is a number type, which cotan takes for the float type
/// (`T: Mul<Output = T> + Copy`).
const ARITHMETIC: [&str; 10] =
    ["Add", "Sub", "Mul", "Div", "Neg", "Rem", "AddAssign", "SubAssign", "MulAssign", "DivAssign"];
const MARKERS: [&str; 11] =
    ["Copy", "Clone", "PartialOrd", "PartialEq", "Debug", "Default", "Sum", "Product", "Display", "Send", "Sync"];

/// A generic function as cotan lowers it: the signature and body rewritten for `f64` in
/// place of the float type parameter (if there is one), and the other type parameters kept
/// as they are declared.
pub(crate) struct Generic {
    /// The float type parameter's name.
    pub float: Option<String>,
    /// The other type parameters with their bounds (`M: Model`), as the IR keeps them.
    pub others: Vec<String>,
    pub sig: syn::Signature,
    pub body: syn::Block,
}

/// The function as cotan lowers it, or `None` if it is not generic.
pub(crate) fn monomorphic(sig: &syn::Signature, body: &syn::Block) -> syn::Result<Option<Generic>> {
    let types: Vec<&syn::TypeParam> = sig.generics.type_params().collect();
    if types.is_empty() {
        return Ok(None);
    }
    if let Some(c) = sig.generics.const_params().next() {
        return err_at(c, "cotan does not support const generic parameters yet");
    }
    let where_bounds = |t: &syn::TypeParam| -> Vec<syn::TypeParamBound> {
        sig.generics
            .where_clause
            .iter()
            .flat_map(|w| &w.predicates)
            .filter_map(|p| match p {
                syn::WherePredicate::Type(pt)
                    if matches!(&pt.bounded_ty, syn::Type::Path(tp) if tp.path.is_ident(&t.ident)) =>
                {
                    Some(pt.bounds.iter().cloned().collect::<Vec<_>>())
                }
                _ => None,
            })
            .flatten()
            .collect()
    };
    let is_float = |t: &syn::TypeParam| {
        let bounds: Vec<syn::TypeParamBound> = t.bounds.iter().cloned().chain(where_bounds(t)).collect();
        bounds.iter().any(float_bound)
            || number_bounds(&bounds)
            // An unbounded parameter that is only the element type of slices (`&mut [T]`,
            // moved or swapped around): the float type the function is called with.
            || (bounds.is_empty() && element_only(sig, &t.ident))
    };
    let floats: Vec<&&syn::TypeParam> = types.iter().filter(|t| is_float(t)).collect();
    if floats.len() > 1 {
        return err_at(&sig.generics, "cotan supports one float type parameter (`T: num_traits::Float`)");
    }
    let mut others = vec![];
    for t in types.iter().filter(|t| !is_float(t)) {
        let bounds: Vec<syn::TypeParamBound> = t.bounds.iter().cloned().chain(where_bounds(t)).collect();
        if bounds.is_empty() {
            return err_at(t, "cotan supports a generic parameter as the float type (bound it by `num_traits::Float`) or as a type bound by a trait whose methods the function calls (`M: Model`)");
        }
        let name = &t.ident;
        others.push(quote::quote!(#name: #(#bounds)+*).to_string().replace(" :: ", "::"));
    }
    let mut sig = sig.clone();
    sig.generics = syn::Generics::default();
    let Some(t) = floats.first() else {
        return Ok(Some(Generic { float: None, others, sig, body: body.clone() }));
    };
    let name = t.ident.to_string();
    let mut concrete = ConcreteFloats(None, Rewrite { name: name.clone() });
    concrete.visit_signature_mut(&mut sig.clone());
    concrete.visit_block_mut(&mut body.clone());
    if let Some(span) = concrete.0 {
        return Err(syn::Error::new(
            span,
            format!("a function generic over its float type `{name}` cannot use `f64`/`f32` directly; write `{name}` (and `{name}::from(..).unwrap()` for constants)"),
        ));
    }
    let mut body = body.clone();
    let mut r = Rewrite { name: name.clone() };
    r.visit_signature_mut(&mut sig);
    r.visit_block_mut(&mut body);
    Ok(Some(Generic { float: Some(name), others, sig, body }))
}

/// Whether `sig` is generic over a type bound by a trait (`M: Model`) and not over its
/// float type: a function whose calls are lowered in place, with the caller's types.
pub(crate) fn over_trait_types(sig: &syn::Signature) -> bool {
    let empty = syn::Block { brace_token: Default::default(), stmts: vec![] };
    matches!(monomorphic(sig, &empty), Ok(Some(Generic { float: None, ref others, .. })) if !others.is_empty())
}

/// Bounds of std's arithmetic traits and markers, at least one arithmetic.
fn number_bounds(bounds: &[syn::TypeParamBound]) -> bool {
    let names: Vec<String> = bounds
        .iter()
        .filter_map(|b| match b {
            syn::TypeParamBound::Trait(t) => t.path.segments.last().map(|s| s.ident.to_string()),
            _ => None,
        })
        .collect();
    names.len() == bounds.len()
        && names.iter().any(|n| ARITHMETIC.contains(&n.as_str()))
        && names.iter().all(|n| ARITHMETIC.contains(&n.as_str()) || MARKERS.contains(&n.as_str()))
}

/// Whether type parameter `t` appears in the signature only as the element of slices,
/// arrays and vectors.
fn element_only(sig: &syn::Signature, t: &syn::Ident) -> bool {
    struct Uses<'a> {
        t: &'a syn::Ident,
        elem: bool,
        other: bool,
    }
    impl<'ast> syn::visit::Visit<'ast> for Uses<'_> {
        fn visit_type(&mut self, ty: &'ast syn::Type) {
            match ty {
                syn::Type::Slice(s) if matches!(&*s.elem, syn::Type::Path(p) if p.path.is_ident(self.t)) => {
                    self.elem = true
                }
                syn::Type::Array(a) if matches!(&*a.elem, syn::Type::Path(p) if p.path.is_ident(self.t)) => {
                    self.elem = true
                }
                syn::Type::Path(p) if p.path.is_ident(self.t) => self.other = true,
                ty => syn::visit::visit_type(self, ty),
            }
        }
    }
    let mut u = Uses { t, elem: false, other: false };
    syn::visit::Visit::visit_signature(&mut u, sig);
    u.elem && !u.other
}

fn float_bound(b: &syn::TypeParamBound) -> bool {
    match b {
        syn::TypeParamBound::Trait(t) => {
            t.path.segments.last().is_some_and(|s| FLOAT_TRAITS.contains(&s.ident.to_string().as_str()))
        }
        _ => false,
    }
}

/// Finds a use of `f64`/`f32` as a type or path.
/// The first `f64`/`f32` written in a function generic over its float type, outside the
/// conversions to it (`T::from(std::f64::consts::SQRT_2).unwrap()`, and a closure that is one
/// such conversion, `|v: f64| T::from(v).unwrap()`): those keep the value `T` would have.
struct ConcreteFloats(Option<proc_macro2::Span>, Rewrite);

impl VisitMut for ConcreteFloats {
    fn visit_ident_mut(&mut self, i: &mut proc_macro2::Ident) {
        if self.0.is_none() && (i == "f64" || i == "f32") {
            self.0 = Some(i.span());
        }
    }

    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        let converts = |r: &Rewrite, e: &syn::Expr| match e {
            syn::Expr::MethodCall(m) if matches!(m.method.to_string().as_str(), "unwrap" | "expect") => {
                matches!(&*m.receiver, syn::Expr::Call(_)) && r.conversion(&m.receiver).is_some()
            }
            _ => false,
        };
        match e {
            e if converts(&self.1, e) => {}
            syn::Expr::Closure(c) if converts(&self.1, crate::lower::strip_parens(&c.body)) => {}
            e => syn::visit_mut::visit_expr_mut(self, e),
        }
    }
}

struct Rewrite {
    name: String,
}

impl Rewrite {
    fn is_t(&self, p: &syn::Path) -> bool {
        p.segments.first().is_some_and(|s| s.ident == self.name.as_str())
    }

    /// `T::NAME()` with no arguments: the `f64` constant it is.
    fn constant(&self, c: &syn::ExprCall) -> Option<syn::Expr> {
        let syn::Expr::Path(p) = &*c.func else { return None };
        if !self.is_t(&p.path) || p.path.segments.len() != 2 || !c.args.is_empty() {
            return None;
        }
        let text = match p.path.segments[1].ident.to_string().as_str() {
            "zero" => "0.0f64",
            "one" => "1.0f64",
            "epsilon" => "f64::EPSILON",
            "infinity" => "f64::INFINITY",
            "neg_infinity" => "f64::NEG_INFINITY",
            "nan" => "f64::NAN",
            "max_value" => "f64::MAX",
            "min_value" => "f64::MIN",
            "min_positive_value" => "f64::MIN_POSITIVE",
            "PI" => "std::f64::consts::PI",
            "E" => "std::f64::consts::E",
            "LN_2" => "std::f64::consts::LN_2",
            "SQRT_2" => "std::f64::consts::SQRT_2",
            "FRAC_PI_2" => "std::f64::consts::FRAC_PI_2",
            _ => return None,
        };
        syn::parse_str(text).ok()
    }

    /// `T::from(e)` and `x.to_f64()`, `x.to_usize()`, ...: the conversion as a cast, when
    /// unwrapped (`.unwrap()`, `.expect(..)`).
    fn conversion(&self, e: &syn::Expr) -> Option<syn::Expr> {
        match e {
            syn::Expr::Call(c) => {
                let syn::Expr::Path(p) = &*c.func else { return None };
                let is_from = self.is_t(&p.path)
                    && p.path.segments.len() == 2
                    && matches!(p.path.segments[1].ident.to_string().as_str(), "from" | "from_f64" | "from_usize");
                if !is_from || c.args.len() != 1 {
                    return None;
                }
                let a = &c.args[0];
                Some(syn::parse_quote_spanned!(c.span()=> ((#a) as f64)))
            }
            syn::Expr::MethodCall(m) if m.args.is_empty() => {
                let target = m.method.to_string().strip_prefix("to_")?.to_string();
                let ty: syn::Type = syn::parse_str(&target).ok()?;
                crate::signature::scalar_type(&ty)?;
                let r = &m.receiver;
                Some(syn::parse_quote_spanned!(m.span()=> ((#r) as #ty)))
            }
            _ => None,
        }
    }
}

impl VisitMut for Rewrite {
    fn visit_type_mut(&mut self, t: &mut syn::Type) {
        if let syn::Type::Path(p) = t {
            if p.qself.is_none() && p.path.is_ident(&self.name) {
                *t = syn::parse_quote_spanned!(p.span()=> f64);
                return;
            }
        }
        syn::visit_mut::visit_type_mut(self, t);
    }

    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        if let syn::Expr::Call(c) = e {
            if let Some(k) = self.constant(c) {
                *e = k;
                return;
            }
        }
        if let syn::Expr::MethodCall(m) = e {
            if matches!(m.method.to_string().as_str(), "unwrap" | "expect") {
                if let Some(mut cast) = self.conversion(&m.receiver) {
                    self.visit_expr_mut(&mut cast);
                    *e = cast;
                    return;
                }
            }
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }

    fn visit_path_mut(&mut self, p: &mut syn::Path) {
        // `T::sin(x)` is `f64::sin(x)`.
        if self.is_t(p) {
            let span = p.segments[0].ident.span();
            p.segments[0].ident = proc_macro2::Ident::new("f64", span);
        }
        syn::visit_mut::visit_path_mut(self, p);
    }
}
