//! The autodiff attributes of one function, expanded together. The first of them to expand
//! also generates the derivatives of the others (which then expand to nothing), so that:
//! - the function is lowered once, not once per attribute;
//! - an `ActiveOnly` (`DualOnly`) derivative beside an `Active` (`Dual`) one with the same
//!   input activities calls that one and drops the value, instead of being a second copy of
//!   nearly the same code. rustc checks one derivative instead of two (the attributes' cost
//!   in compile time is mostly rustc checking generated code), and once inlined, the
//!   optimizer removes the work that only the dropped value needed.

use cotan_ad::{Activity, Mode};
use proc_macro2::TokenStream;
use quote::{quote, ToTokens};

use crate::{derive_at, derive_lowered, guarded, linalg, parse_args, root_place, Args, Derived};

/// Attributes that rustc acts on itself. Another attribute between two of cotan's could be a
/// macro that changes the function the second one sees: then each expands on its own.
const INERT: [&str; 14] = [
    "doc",
    "allow",
    "warn",
    "deny",
    "forbid",
    "expect",
    "inline",
    "cold",
    "must_use",
    "track_caller",
    "deprecated",
    "no_mangle",
    "rustfmt",
    "clippy",
];

/// cotan's attributes that keep the function as it is (and add their own items beside it).
const KEEPING: [&str; 4] = ["hvp", "hessian", "autodiff_split", "differentiable"];

/// One of cotan's attributes that keep the function as it is: left on it.
fn keeping(a: &syn::Attribute) -> bool {
    let segments = &a.path().segments;
    let named = |s: &syn::PathSegment| KEEPING.contains(&s.ident.to_string().as_str());
    match segments.len() {
        1 => named(&segments[0]),
        2 => segments[0].ident == "cotan" && named(&segments[1]),
        _ => false,
    }
}

/// The mode of an autodiff attribute of cotan's (`autodiff_reverse`, `cotan::autodiff_reverse`,
/// `::cotan::autodiff_forward`, ...).
fn autodiff_mode(a: &syn::Attribute) -> Option<Mode> {
    let segments = &a.path().segments;
    if segments.len() > 2 || (segments.len() == 2 && segments[0].ident != "cotan") {
        return None;
    }
    match segments.last()?.ident.to_string().as_str() {
        "autodiff_forward" => Some(Mode::Forward),
        "autodiff_reverse" => Some(Mode::Reverse),
        _ => None,
    }
}

/// What the attributes whose derivatives are generated already take as arguments: they
/// stay on the function (their names are used, as written), and expand to nothing. No
/// attribute a user writes starts with `=`.
fn expanded() -> TokenStream {
    quote!(= expanded)
}

/// Whether an attribute's arguments are [`expanded`]'s.
pub(crate) fn is_expanded(attr: &TokenStream) -> bool {
    let mut it = attr.clone().into_iter();
    matches!(it.next(), Some(proc_macro2::TokenTree::Punct(p)) if p.as_char() == '=')
        && matches!(it.next(), Some(proc_macro2::TokenTree::Ident(i)) if i == "expanded")
        && it.next().is_none()
}

/// Takes the arguments of the autodiff attributes below the one being expanded, leaving
/// [`expanded`] in their place; none if `func` has an attribute that could be another macro.
pub(crate) fn take(func: &mut syn::ItemFn) -> Vec<(Mode, TokenStream)> {
    let mut found = vec![];
    for a in &func.attrs {
        match autodiff_mode(a) {
            Some(mode) => match &a.meta {
                syn::Meta::List(l) => found.push((mode, l.tokens.clone())),
                // (Its own expansion says what is wrong with it.)
                _ => return vec![],
            },
            None if keeping(a) || INERT.contains(&a.path().segments[0].ident.to_string().as_str()) => {}
            None => return vec![],
        }
    }
    for a in &mut func.attrs {
        if let (Some(_), syn::Meta::List(l)) = (autodiff_mode(a), &mut a.meta) {
            l.tokens = expanded();
        }
    }
    found
}

/// The derivatives of `attrs` (mode and arguments of each), in their order.
pub(crate) fn derive_all(attrs: &[(Mode, TokenStream)], func: &syn::ItemFn) -> Vec<syn::Result<TokenStream>> {
    if linalg::mention(func).is_some() {
        return attrs
            .iter()
            .map(|(mode, attr)| guarded(|| derive_at(*mode, attr.clone(), func, root_place(func))))
            .collect();
    }
    let args: Vec<Option<Args>> = attrs.iter().map(|(mode, attr)| parse_args(*mode, attr.clone()).ok()).collect();
    let full: Vec<Option<usize>> = (0..attrs.len()).map(|k| with_value(&args, attrs, k)).collect();
    let mut lowering = None;
    let mut done: Vec<Option<syn::Result<Derived>>> = attrs.iter().map(|_| None).collect();
    // The derivatives that others may call first.
    let order = (0..attrs.len()).filter(|&k| full[k].is_none()).chain((0..attrs.len()).filter(|&k| full[k].is_some()));
    for k in order {
        let (mode, attr) = &attrs[k];
        let calls = full[k].and_then(|j| match &done[j] {
            Some(Ok(Derived { callable: Some(f), .. })) => Some((j, f)),
            _ => None,
        });
        let derived = match (calls, &args[k]) {
            (Some((j, f)), Some(own)) => {
                let tokens = without_value(*mode, func, own, args[j].as_ref().expect("parsed"), f);
                Ok(Derived { tokens, callable: None })
            }
            _ => guarded(|| derive_lowered(*mode, attr.clone(), func, root_place(func), &mut lowering)),
        };
        done[k] = Some(derived);
    }
    done.into_iter().map(|d| d.expect("every attribute derived").map(|d| d.tokens)).collect()
}

/// For an `ActiveOnly` or `DualOnly` result: the sibling with the same inputs and the value
/// (`Active`, `Dual`), one direction wide.
fn with_value(args: &[Option<Args>], attrs: &[(Mode, TokenStream)], k: usize) -> Option<usize> {
    let own = args[k].as_ref()?;
    let mode = attrs[k].0;
    let (last, inputs) = own.acts.split_last()?;
    let wanted = match (mode, last.0) {
        (Mode::Reverse, Activity::ActiveOnly) => Activity::Active,
        (Mode::Forward, Activity::DualOnly) => Activity::Dual,
        _ => return None,
    };
    let one_wide = |a: &Args| a.width == 1 && !a.lanes.contains(&true);
    if !one_wide(own) {
        return None;
    }
    (0..args.len()).find(|&j| {
        let Some(other) = &args[j] else { return false };
        let Some((other_last, other_inputs)) = other.acts.split_last() else { return false };
        attrs[j].0 == mode
            && other_last.0 == wanted
            && one_wide(other)
            && inputs.len() == other_inputs.len()
            && inputs.iter().zip(other_inputs).all(|(a, b)| a.0 == b.0)
    })
}

/// The derivative `own` as a call of its sibling `of` (derivative `f`), without the value.
fn without_value(mode: Mode, func: &syn::ItemFn, own: &Args, of: &Args, f: &cotan_ir::Function) -> TokenStream {
    let acts: Vec<&str> = own.acts.iter().map(|a| a.0.name()).collect();
    let doc = format!(
        " {} derivative of [`{}`], generated by cotan with activities `{}`: [`{}`] without the value.",
        if mode == Mode::Forward { "Forward-mode" } else { "Reverse-mode" },
        func.sig.ident,
        acts.join(", "),
        of.name
    );
    let vis = func.vis.to_token_stream();
    let body = cotan_codegen::emit_without_value(f, &own.name, vis, &of.name.to_string());
    quote! {
        #[doc = #doc]
        #[inline]
        #body
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expands the first attribute of `src`'s function (the way rustc hands it over: the
    /// function with the attributes below it), with the file as the crate's sources.
    fn expand(src: &str) -> String {
        let dir = std::env::temp_dir().join(format!("cotan-siblings-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("f{}.rs", src.len()));
        std::fs::write(&path, src).unwrap();
        crate::set_source_file(Some(path.clone()));
        let mut func: syn::ItemFn = syn::parse_file(src)
            .unwrap()
            .items
            .into_iter()
            .find_map(|i| match i {
                syn::Item::Fn(f) => Some(f),
                _ => None,
            })
            .unwrap();
        let first = func.attrs.remove(0);
        let mode = autodiff_mode(&first).unwrap();
        let syn::Meta::List(l) = first.meta else { panic!("an attribute with arguments") };
        let out = crate::autodiff(mode, l.tokens, func.into_token_stream()).to_string();
        crate::set_source_file(None);
        out
    }

    const BOTH: &str = "
#[autodiff_reverse(g_only, Duplicated, Active, ActiveOnly)]
#[inline]
#[cotan::autodiff_reverse(g, Duplicated, Active, Active)]
#[autodiff_forward(g_fwd, Dual, Const, Dual)]
#[autodiff_forward(g_fwd_only, Dual, Const, DualOnly)]
fn f(x: &[f64], a: f64) -> f64 { a * x[0] * x[1] }
";

    #[test]
    fn value_less_derivatives_call_their_siblings() {
        let out = expand(BOTH);
        assert!(out.contains("fn g_only (x : & [f64] , dx : & mut [f64] , a : f64 , dret : f64) -> f64 { g (x , dx , a , dret) . 1 }"), "{out}");
        assert!(
            out.contains("fn g_fwd_only (x : & [f64] , dx : & [f64] , a : f64) -> f64 { g_fwd (x , dx , a) . 1 }"),
            "{out}"
        );
        // The siblings stay on the function, expanding to nothing.
        assert_eq!(out.matches("= expanded").count(), 3, "{out}");
        assert_eq!(out.matches("fn g (").count(), 1, "{out}");
    }

    #[test]
    fn another_macro_between_them_keeps_them_apart() {
        let src = BOTH.replace("#[inline]", "#[some_crate::instrument]");
        let out = expand(&src);
        assert!(!out.contains("= expanded"), "{out}");
        assert!(out.contains("fn g_only"), "{out}");
        assert!(!out.contains("fn g ("), "{out}");
    }

    #[test]
    fn different_inputs_are_generated_apart() {
        let src = BOTH.replace("g_only, Duplicated, Active,", "g_only, Duplicated, Const,");
        let out = expand(&src);
        assert!(!out.contains("g (x , dx , a , dret)"), "{out}");
        assert!(out.contains("fn g_only"), "{out}");
    }
}
