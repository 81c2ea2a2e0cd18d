//! What cotan's macros cost and produce, measured in-process: each attribute of the models
//! is run through the same pipeline as the proc macro (lower → simplify → differentiate →
//! simplify → emit; see `crates/cotan-macros/src/lib.rs`), timed, and its output sized.

use cotan_ad::{Activity, Mode, Spec};
use proc_macro2::TokenStream;
use quote::quote;
use std::fmt::Write;
use std::time::Instant;
use syn::punctuated::Punctuated;

/// The model sources, as compiled.
pub const SOURCES: [(&str, &str); 5] = [
    ("mooncake.rs", include_str!("models/mooncake.rs")),
    ("blog.rs", include_str!("models/blog.rs")),
    ("large_block.rs", include_str!("models/large_block.rs")),
    ("adbench.rs", include_str!("models/adbench.rs")),
    ("second_order.rs", include_str!("models/second_order.rs")),
];

/// One cotan attribute found on a model function.
pub struct Attr {
    pub func: syn::ItemFn,
    /// `autodiff_reverse`, `autodiff_forward` or `hvp`.
    pub kind: String,
    pub args: TokenStream,
    pub generated: String,
}

/// Every `#[cfg_attr(feature = "ad", cotan::KIND(ARGS))]` on the models' functions.
pub fn attributes() -> Vec<Attr> {
    SOURCES.iter().flat_map(|(_, src)| attributes_in(src).expect("the models parse")).collect()
}

/// The cotan attributes on the functions of a source file: `#[cotan::KIND(..)]`,
/// `#[KIND(..)]` (KIND one of `autodiff_reverse`, `autodiff_forward`, `hvp`) or either
/// inside `#[cfg_attr(.., ..)]`.
pub fn attributes_in(src: &str) -> syn::Result<Vec<Attr>> {
    let file = syn::parse_file(src)?;
    let mut out = vec![];
    for item in file.items {
        let syn::Item::Fn(func) = item else { continue };
        for a in &func.attrs {
            let metas: Vec<syn::Meta> = if a.path().is_ident("cfg_attr") {
                let m = a.parse_args_with(Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated)?;
                m.into_iter().skip(1).collect()
            } else {
                vec![a.meta.clone()]
            };
            for m in metas {
                let syn::Meta::List(l) = m else { continue };
                let segs: Vec<String> = l.path.segments.iter().map(|s| s.ident.to_string()).collect();
                let kind = match segs.as_slice() {
                    [c, k] if c == "cotan" => k.clone(),
                    [k] => k.clone(),
                    _ => continue,
                };
                if !["autodiff_reverse", "autodiff_forward", "hvp"].contains(&kind.as_str()) {
                    continue;
                }
                let generated = l.tokens.clone().into_iter().next().map(|t| t.to_string()).unwrap_or_default();
                out.push(Attr { func: func.clone(), kind, args: l.tokens.clone(), generated });
            }
        }
    }
    Ok(out)
}

/// The generated code of every cotan attribute in a source file, formatted.
pub fn show_file(src: &str) -> Result<String, String> {
    let mut out = String::new();
    for attr in attributes_in(src).map_err(|e| e.to_string())? {
        let code = derive(&attr).and_then(|t| syn::parse2::<syn::File>(t).map_err(|e| e.to_string()));
        match code {
            Ok(f) => out.push_str(&prettyplease::unparse(&f)),
            Err(e) => writeln!(out, "// {}: error: {e}", attr.generated).unwrap(),
        }
        out.push('\n');
    }
    Ok(out)
}

/// The macro's pipeline for one attribute; returns the generated tokens.
pub fn derive(attr: &Attr) -> Result<TokenStream, String> {
    let func = &attr.func;
    let items: Punctuated<syn::Expr, syn::Token![,]> =
        syn::parse::Parser::parse2(Punctuated::parse_terminated, attr.args.clone()).map_err(|e| e.to_string())?;
    let words: Vec<String> = items
        .iter()
        .map(|e| match e {
            syn::Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()).unwrap_or_default(),
            _ => String::new(),
        })
        .collect();
    let mut lowered = cotan_syntax::lower_fn(&func.sig, &func.block).map_err(|e| e.to_string())?;
    cotan_ir::simplify::cse(&mut lowered.func);
    let f = &lowered.func;
    let vis = quote!(pub);
    if attr.kind == "hvp" {
        let n = f.params.len();
        let rev_spec = Spec {
            mode: Mode::Reverse,
            inputs: std::iter::once(Activity::Duplicated).chain(std::iter::repeat_n(Activity::Const, n - 1)).collect(),
            ret: Some(Activity::Active),
            width: 1,
        };
        let mut rev = cotan_ad::reverse(f, &rev_spec, "gradient", &mut cotan_ad::NoCalls).map_err(|e| e.message)?;
        cotan_ir::simplify::cse(&mut rev);
        let inputs = (0..rev.params.len()).map(|k| if k < 2 { Activity::Dual } else { Activity::Const }).collect();
        let spec = Spec { mode: Mode::Forward, inputs, ret: Some(Activity::Const), width: 1 };
        let mut inner = cotan_ad::forward(&rev, &spec, &words[0], &mut cotan_ad::NoCalls).map_err(|e| e.message)?;
        cotan_ir::simplify::cse(&mut inner);
        return Ok(cotan_codegen::emit_fn(&inner, vis));
    }
    let mode = if attr.kind == "autodiff_reverse" { Mode::Reverse } else { Mode::Forward };
    let mut acts: Vec<Activity> = words[1..]
        .iter()
        .map(|w| Activity::from_name(w).ok_or(format!("unknown activity {w}")))
        .collect::<Result<_, _>>()?;
    let ret = if f.returns.is_empty() { None } else { acts.pop() };
    let spec = Spec { mode, inputs: acts, ret, width: 1 };
    cotan_ad::check(f, &spec).map_err(|e| e.message)?;
    let mut derived = match mode {
        Mode::Forward => cotan_ad::forward(f, &spec, &words[0], &mut cotan_ad::NoCalls).map_err(|e| e.message)?,
        Mode::Reverse => cotan_ad::reverse(f, &spec, &words[0], &mut cotan_ad::NoCalls).map_err(|e| e.message)?,
    };
    cotan_ir::simplify::cse(&mut derived);
    Ok(cotan_codegen::emit_fn(&derived, vis))
}

/// The generated code of one function, formatted (what `cargo expand` would show).
pub fn show(name: &str) -> Option<String> {
    let attr = attributes().into_iter().find(|a| a.generated == name)?;
    let tokens = derive(&attr).unwrap_or_else(|e| panic!("cotan failed on {name}: {e}"));
    let file: syn::File = syn::parse2(tokens).ok()?;
    Some(prettyplease::unparse(&file))
}

/// Macro expansion time (median of 7 runs) and output size per generated function.
pub fn expansion_table() -> String {
    let mut out = String::from(
        "| generated function | from | expansion (median) | lines of the primal | lines generated |\n|---|---|--:|--:|--:|\n",
    );
    let mut total = 0.0;
    for attr in attributes() {
        let mut times = vec![];
        let mut tokens = TokenStream::new();
        for _ in 0..7 {
            let t = Instant::now();
            tokens = match derive(&attr) {
                Ok(t) => t,
                Err(e) => {
                    writeln!(out, "| {} | {} | error: {e} | | |", attr.generated, attr.func.sig.ident).unwrap();
                    break;
                }
            };
            times.push(t.elapsed().as_secs_f64());
        }
        if times.is_empty() {
            continue;
        }
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        total += median;
        let lines = |f: syn::File| prettyplease::unparse(&f).lines().count();
        let primal = lines(syn::File { shebang: None, attrs: vec![], items: vec![syn::Item::Fn(strip(&attr.func))] });
        let generated = syn::parse2(tokens).map(lines).unwrap_or(0);
        writeln!(
            out,
            "| `{}` | `{}` | {:.2} ms | {primal} | {generated} |",
            attr.generated,
            attr.func.sig.ident,
            median * 1e3
        )
        .unwrap();
    }
    writeln!(out, "| **total** | | {:.1} ms | | |", total * 1e3).unwrap();
    out
}

fn strip(f: &syn::ItemFn) -> syn::ItemFn {
    let mut f = f.clone();
    f.attrs.clear();
    f
}
