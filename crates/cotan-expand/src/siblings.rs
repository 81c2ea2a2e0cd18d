//! The autodiff attributes of one function, expanded together. The first of them to expand
//! also generates the derivatives of the others (which then expand to nothing), so that:
//! - the function is lowered once, not once per attribute;
//! - an `ActiveOnly` (`DualOnly`) derivative beside an `Active` (`Dual`) one with the same
//!   input activities calls that one and drops the value, instead of being a second copy
//!   of nearly the same code: rustc checks one derivative instead of two (the attributes'
//!   cost in compile time is mostly rustc checking generated code). A short one is then
//!   always inlined, so that the optimizer removes what only the dropped value needs
//!   (`Σ sin(xᵢ)`'s `sin`: half the work); in a long one, with its callees' sweeps, that is
//!   a small part, and inlining is left to the optimizer.

use cotan_ad::{Activity, Mode};
use proc_macro2::TokenStream;
use quote::{quote, ToTokens};

use crate::{derive_at, emit, guarded, linalg, parse_args, prepare, root_place, Args, Prepared};

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
    // For each value-less derivative, a sibling with the value that it may call.
    let full: Vec<Option<usize>> = (0..attrs.len())
        .map(|k| {
            let own = args[k].as_ref()?;
            (0..attrs.len())
                .find(|&j| args[j].as_ref().is_some_and(|a| attrs[j].0 == attrs[k].0 && with_value(own, a, attrs[k].0)))
        })
        .collect();
    let mut lowering = None;
    let mut prepared: Vec<Option<syn::Result<Prepared>>> = attrs.iter().map(|_| None).collect();
    let mut prepare_one = |k: usize, prepared: &mut Vec<Option<syn::Result<Prepared>>>| {
        let (mode, attr) = &attrs[k];
        prepared[k] = Some(guarded(|| prepare(*mode, attr.clone(), func, root_place(func), &mut lowering)));
    };
    // The derivatives with the value first: the value-less ones call those that are plain.
    let mut wrappers: Vec<Option<TokenStream>> = attrs.iter().map(|_| None).collect();
    let mut called = vec![false; attrs.len()];
    for k in (0..attrs.len()).filter(|&k| full[k].is_none()) {
        prepare_one(k, &mut prepared);
    }
    for k in 0..attrs.len() {
        let Some(j) = full[k] else { continue };
        if let Some(Ok(Prepared::Ir(of))) = &prepared[j] {
            if of.plain {
                let own = args[k].as_ref().expect("parsed");
                wrappers[k] = Some(without_value(attrs[k].0, func, own, &of.args, &of.derived));
                called[j] = true;
                continue;
            }
        }
        prepare_one(k, &mut prepared);
    }
    let mut out = vec![];
    for (k, p) in prepared.iter_mut().enumerate() {
        out.push(match (wrappers[k].take(), p.take()) {
            (Some(tokens), _) => Ok(tokens),
            (None, Some(Ok(Prepared::Done(tokens)))) => Ok(tokens),
            (None, Some(Ok(Prepared::Ir(p)))) => guarded(|| emit(*p, func, called[k])),
            (None, Some(Err(e))) => Err(e),
            (None, None) => unreachable!("every attribute is prepared or calls a sibling"),
        });
    }
    out
}

/// Whether `own`'s result is `ActiveOnly` (`DualOnly`) and `full`'s `Active` (`Dual`), with
/// the same input activities, one direction wide.
fn with_value(own: &Args, full: &Args, mode: Mode) -> bool {
    let (Some((last, inputs)), Some((full_last, full_inputs))) = (own.acts.split_last(), full.acts.split_last()) else {
        return false;
    };
    let wanted = match (mode, last.0) {
        (Mode::Reverse, Activity::ActiveOnly) => Activity::Active,
        (Mode::Forward, Activity::DualOnly) => Activity::Dual,
        _ => return false,
    };
    let one_wide = |a: &Args| a.width == 1 && !a.lanes.contains(&true);
    full_last.0 == wanted
        && one_wide(own)
        && one_wide(full)
        && inputs.len() == full_inputs.len()
        && inputs.iter().zip(full_inputs).all(|(a, b)| a.0 == b.0)
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
    let code = cotan_codegen::emit_without_value(f, &own.name, vis, &of.name.to_string());
    quote! {
        #[doc = #doc]
        #[inline]
        #code
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
        let call = "(x : & [f64] , dx : & mut [f64] , a : f64 , dret : f64)";
        assert!(out.contains(&format!("fn g_only {call} -> f64 {{ g (x , dx , a , dret) . 1 }}")), "{out}");
        // (Short: always inlined into the call.)
        assert!(out.contains(&format!("# [inline (always)] # [allow (unused , non_snake_case , clippy :: all , clippy :: pedantic , clippy :: nursery)] fn g {call} -> (f64 , f64) {{")), "{out}");
        let fwd = "(x : & [f64] , dx : & [f64] , a : f64)";
        assert!(out.contains(&format!("fn g_fwd_only {fwd} -> f64 {{ g_fwd (x , dx , a) . 1 }}")), "{out}");
        // The siblings stay on the function, expanding to nothing.
        assert_eq!(out.matches("= expanded").count(), 3, "{out}");
    }

    #[test]
    fn another_macro_between_them_keeps_them_apart() {
        let src = BOTH.replace("#[inline]", "#[some_crate::instrument]");
        let out = expand(&src);
        assert!(!out.contains("= expanded"), "{out}");
        assert!(out.contains("fn g_only"), "{out}");
        assert!(!out.contains("fn g ("), "{out}");
        assert!(!out.contains("inline (always)"), "{out}");
    }

    #[test]
    fn different_inputs_are_generated_apart() {
        let src = BOTH.replace("g_only, Duplicated, Active,", "g_only, Duplicated, Const,");
        let out = expand(&src);
        assert!(!out.contains("g (x , dx , a , dret)"), "{out}");
        assert!(out.contains("fn g_only"), "{out}");
    }
}
