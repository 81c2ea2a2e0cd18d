//! Times the expansion of every autodiff attribute in the given files (as a debug build of a
//! proc macro runs it): `cargo run -p cotan-expand --example time_expand -- FILE...`.

use quote::ToTokens;

fn main() {
    let mut total = std::time::Duration::ZERO;
    for path in std::env::args().skip(1) {
        let text = std::fs::read_to_string(&path).unwrap();
        let file = syn::parse_file(&text).unwrap();
        cotan_expand::set_source_file(Some(path.clone().into()));
        for item in &file.items {
            let syn::Item::Fn(f) = item else { continue };
            for a in &f.attrs {
                // `#[cfg_attr(feature = "ad", cotan::autodiff_reverse(..))]` too.
                let text = a.meta.to_token_stream().to_string();
                let Some(at) = text.find("autodiff_") else { continue };
                let rest = &text[at..];
                let mode = if rest.starts_with("autodiff_reverse") {
                    cotan_expand::Mode::Reverse
                } else {
                    cotan_expand::Mode::Forward
                };
                let open = rest.find('(').unwrap();
                let close = rest.rfind(')').unwrap();
                let args: proc_macro2::TokenStream = rest[open + 1..close].trim_end_matches(')').parse().unwrap();
                let l = syn::MetaList {
                    path: syn::parse_quote!(x),
                    delimiter: syn::MacroDelimiter::Paren(Default::default()),
                    tokens: args,
                };
                let mut g = f.clone();
                g.attrs.clear();
                let t0 = std::time::Instant::now();
                let out = cotan_expand::autodiff(mode, l.tokens.clone(), g.into_token_stream());
                let dt = t0.elapsed();
                total += dt;
                println!("{:>10.2?} {} {}", dt, f.sig.ident, out.to_string().len());
            }
        }
    }
    println!("total {total:?}");
}
