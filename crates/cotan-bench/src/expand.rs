//! What cotan's macros cost and produce, measured in-process: each attribute of the models
//! is expanded by `cotan-expand`, the library the proc macros call (with the model's file as
//! its source, so that calls are differentiated as in a build), timed, and its output sized.

use proc_macro2::TokenStream;
use quote::ToTokens;
use std::fmt::Write;
use std::path::Path;
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

/// Where the model sources are, for the expansion's reading of callees.
fn model_path(name: &str) -> String {
    format!("{}/src/models/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// One cotan attribute found on a model function.
pub struct Attr {
    /// The file the function is in.
    pub file: String,
    pub func: syn::ItemFn,
    /// `autodiff_reverse`, `autodiff_forward` or `hvp`.
    pub kind: String,
    pub args: TokenStream,
    pub generated: String,
}

/// Every `#[cfg_attr(feature = "ad", cotan::KIND(ARGS))]` on the models' functions.
pub fn attributes() -> Vec<Attr> {
    SOURCES.iter().flat_map(|(name, src)| attributes_in(src, &model_path(name)).expect("the models parse")).collect()
}

/// The cotan attributes on the functions of a source file: `#[cotan::KIND(..)]`,
/// `#[KIND(..)]` (KIND one of `autodiff_reverse`, `autodiff_forward`, `hvp`) or either
/// inside `#[cfg_attr(.., ..)]`.
pub fn attributes_in(src: &str, file_path: &str) -> syn::Result<Vec<Attr>> {
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
                out.push(Attr {
                    file: file_path.to_string(),
                    func: func.clone(),
                    kind,
                    args: l.tokens.clone(),
                    generated,
                });
            }
        }
    }
    Ok(out)
}

/// The generated code of every cotan attribute in a source file, formatted.
pub fn show_file(path: &str) -> Result<String, String> {
    let src = std::fs::read_to_string(path).map_err(|e| format!("cannot read `{path}`: {e}"))?;
    let mut out = String::new();
    for attr in attributes_in(&src, path).map_err(|e| e.to_string())? {
        let code = derive(&attr).and_then(|t| syn::parse2::<syn::File>(t).map_err(|e| e.to_string()));
        match code {
            Ok(f) => out.push_str(&prettyplease::unparse(&f)),
            Err(e) => writeln!(out, "// {}: error: {e}", attr.generated).unwrap(),
        }
        out.push('\n');
    }
    Ok(out)
}

/// The macro's expansion of one attribute (the function and what it generates), or its
/// error.
pub fn derive(attr: &Attr) -> Result<TokenStream, String> {
    cotan_expand::set_source_file(Some(Path::new(&attr.file).to_path_buf()));
    let mut func = attr.func.clone();
    func.attrs.clear();
    let item = func.into_token_stream();
    let args = attr.args.clone();
    let out = match attr.kind.as_str() {
        "hvp" => cotan_expand::second_order(cotan_expand::SecondOrder::Hvp, args, item),
        "autodiff_reverse" => cotan_expand::autodiff(cotan_expand::Mode::Reverse, args, item),
        _ => cotan_expand::autodiff(cotan_expand::Mode::Forward, args, item),
    };
    let file: syn::File = syn::parse2(out.clone()).map_err(|e| e.to_string())?;
    if let Some(err) = file.items.iter().find_map(|i| match i {
        syn::Item::Macro(m) if m.mac.path.is_ident("compile_error") => Some(m.mac.tokens.to_string()),
        _ => None,
    }) {
        return Err(err);
    }
    Ok(out)
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
