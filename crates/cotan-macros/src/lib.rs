//! The procedural macros of cotan. This crate only parses attributes, runs the library
//! crates (lowering, differentiation, code generation) and reports their errors.

use cotan_ad::{Activity, Mode, Spec, Target};
use proc_macro::TokenStream;
use proc_macro2::Span;
use quote::{quote, ToTokens};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;

/// Forward mode, with std::autodiff's syntax: `#[autodiff_forward(NAME, INPUT_ACTIVITIES..., OUTPUT_ACTIVITY)]`.
#[proc_macro_attribute]
pub fn autodiff_forward(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand(Mode::Forward, attr.into(), item.into()).into()
}

/// Reverse mode, with std::autodiff's syntax: `#[autodiff_reverse(NAME, INPUT_ACTIVITIES..., OUTPUT_ACTIVITY)]`.
#[proc_macro_attribute]
pub fn autodiff_reverse(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand(Mode::Reverse, attr.into(), item.into()).into()
}

fn expand(mode: Mode, attr: proc_macro2::TokenStream, item: proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    let func: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            let e = syn::Error::new(
                Span::call_site(),
                "`#[autodiff_forward]`/`#[autodiff_reverse]` apply to functions only; put the attribute on a `fn`",
            );
            let e = e.to_compile_error();
            return quote!(#e #item);
        }
    };
    match derive(mode, attr, &func) {
        Ok(d) => quote!(#func #d),
        Err(e) => {
            let e = e.to_compile_error();
            quote!(#func #e)
        }
    }
}

/// The attribute's arguments: the new function's name and the activities with their spans.
struct Args {
    name: syn::Ident,
    acts: Vec<(Activity, Span)>,
}

fn parse_args(mode: Mode, attr: proc_macro2::TokenStream) -> syn::Result<Args> {
    let items = syn::parse::Parser::parse2(Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated, attr)?;
    let mut it = items.iter();
    let usage = match mode {
        Mode::Forward => "expected `#[autodiff_forward(NAME, INPUT_ACTIVITIES..., OUTPUT_ACTIVITY)]`",
        Mode::Reverse => "expected `#[autodiff_reverse(NAME, INPUT_ACTIVITIES..., OUTPUT_ACTIVITY)]`",
    };
    let name = match it.next() {
        Some(syn::Expr::Path(p)) if p.path.get_ident().is_some() => p.path.get_ident().unwrap().clone(),
        Some(e) => {
            return Err(syn::Error::new(e.span(), format!("{usage}: NAME must be the name of the new function")))
        }
        None => return Err(syn::Error::new(Span::call_site(), usage)),
    };
    let mut acts = vec![];
    for e in it {
        if let syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(_), .. }) = e {
            return Err(syn::Error::new(
                e.span(),
                "cotan does not support batched forward mode (a width) yet; call the derivative once per direction",
            ));
        }
        let word = match e {
            syn::Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
            _ => None,
        };
        match word.as_deref().and_then(Activity::from_name) {
            Some(a) => acts.push((a, e.span())),
            None => {
                let shown = e.to_token_stream().to_string();
                return Err(syn::Error::new(
                    e.span(),
                    format!("unknown activity `{shown}`; use one of Const, Active, ActiveOnly, Dual, DualOnly, Duplicated, DuplicatedOnly"),
                ));
            }
        }
    }
    Ok(Args { name, acts })
}

fn derive(mode: Mode, attr: proc_macro2::TokenStream, func: &syn::ItemFn) -> syn::Result<proc_macro2::TokenStream> {
    let args = parse_args(mode, attr)?;
    let mut lowered = cotan_syntax::lower_fn(&func.sig, &func.block)?;
    internal_check(&lowered.func, "lowering")?;
    cotan_ir::simplify::cse(&mut lowered.func);
    let n_params = lowered.func.params.len();
    let has_ret = !lowered.func.returns.is_empty();
    let mut acts = args.acts.clone();
    if acts.len() != n_params + usize::from(has_ret) {
        return Err(count_error(func, &args, n_params, has_ret));
    }
    let ret = if has_ret { acts.pop() } else { None };
    let spec = Spec { mode, inputs: acts.iter().map(|a| a.0).collect(), ret: ret.map(|r| r.0) };
    if let Err(e) = cotan_ad::check(&lowered.func, &spec) {
        let span = match e.target {
            Target::Input(k) => acts[k].1,
            Target::Return => ret.map_or(func.sig.output.span(), |r| r.1),
            Target::Whole => args.name.span(),
        };
        return Err(syn::Error::new(span, e.message));
    }
    let name = args.name.to_string();
    let mut derived = match mode {
        Mode::Forward => cotan_ad::forward(&lowered.func, &spec, &name),
        Mode::Reverse => cotan_ad::reverse(&lowered.func, &spec, &name)
            .map_err(|e| syn::Error::new(lowered.span(e.span), e.message))?,
    };
    internal_check(&derived, "differentiation")?;
    cotan_ir::simplify::cse(&mut derived);
    internal_check(&derived, "simplification")?;
    let vis = func.vis.to_token_stream();
    let mut out = cotan_codegen::emit_fn(&derived, vis);
    // Give the new function the user's span so errors and docs point at the attribute.
    out = respan(out, args.name.span());
    Ok(out)
}

/// A wrong number of activities, pointing at the first extra one or at the last one given.
fn count_error(func: &syn::ItemFn, args: &Args, n_params: usize, has_ret: bool) -> syn::Error {
    let expected = n_params + usize::from(has_ret);
    let given = args.acts.len();
    let returns = match &func.sig.output {
        syn::ReturnType::Type(_, t) if has_ret => format!("returns `{}`", t.to_token_stream()),
        _ => "returns `()`".to_string(),
    };
    let parts = if has_ret {
        "one per parameter, then one for the result"
    } else {
        "one per parameter; none for a `()` result"
    };
    let msg = format!(
        "`{}` has {n_params} parameter(s) and {returns}, so it needs {expected} activit{} ({parts}); {given} given",
        func.sig.ident,
        if expected == 1 { "y" } else { "ies" },
    );
    let span = match args.acts.get(expected) {
        Some((_, extra)) => *extra,
        None => args.acts.last().map_or(args.name.span(), |a| a.1),
    };
    syn::Error::new(span, msg)
}

/// Turns an IR verifier failure into a compile error rather than emitting wrong code.
fn internal_check(f: &cotan_ir::Function, stage: &str) -> syn::Result<()> {
    cotan_ir::verify(f).map_err(|errs| {
        let first = errs.first().map(|e| e.to_string()).unwrap_or_default();
        syn::Error::new(
            Span::call_site(),
            format!(
                "internal error in cotan ({stage} produced invalid IR: {first}); please report this with the function"
            ),
        )
    })
}

fn respan(ts: proc_macro2::TokenStream, span: Span) -> proc_macro2::TokenStream {
    ts.into_iter()
        .map(|mut tt| {
            if let proc_macro2::TokenTree::Group(g) = &tt {
                let mut ng = proc_macro2::Group::new(g.delimiter(), respan(g.stream(), span));
                ng.set_span(span);
                tt = proc_macro2::TokenTree::Group(ng);
            } else {
                tt.set_span(span);
            }
            tt
        })
        .collect()
}

/// The derivative as formatted Rust (what `cargo expand` shows), for tests and tools.
#[cfg(test)]
fn expand_to_string(mode: Mode, attr: &str, func: &str) -> String {
    let func: syn::ItemFn = syn::parse_str(func).unwrap();
    let out = match derive(mode, attr.parse().unwrap(), &func) {
        Ok(ts) => ts,
        Err(e) => return format!("error: {e}"),
    };
    prettyplease::unparse(&syn::parse2(out).unwrap())
}

#[cfg(test)]
mod snapshots;
