//! Functions generic over their float type: the IR's `f64` stands for the type parameter,
//! so the code written for `f64` is turned generic token by token. Types become `T`, float
//! literals `T::lit(..)`, `f64::NAN`-like constants the `num_traits::Float` methods, and
//! the runtime's `f64` stacks and buffers their generic forms.

use proc_macro2::{Group, Ident, Literal, TokenStream, TokenTree};
use quote::quote;

/// `ts` with `f64` replaced by the type parameter `g` (bound by `cotan::Real`).
pub(crate) fn generic_tokens(ts: TokenStream, g: &Ident) -> TokenStream {
    let toks: Vec<TokenTree> = ts.into_iter().collect();
    let mut out = TokenStream::new();
    let mut k = 0;
    while k < toks.len() {
        match &toks[k] {
            TokenTree::Group(gr) => {
                let mut ng = Group::new(gr.delimiter(), generic_tokens(gr.stream(), g));
                ng.set_span(gr.span());
                out.extend([TokenTree::Group(ng)]);
            }
            TokenTree::Ident(i) if i == "f64" => {
                // `f64::NAN` and the like: `T::nan()`.
                let path_const = match (toks.get(k + 1), toks.get(k + 2), toks.get(k + 3)) {
                    (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)), Some(TokenTree::Ident(c)))
                        if a.as_char() == ':' && b.as_char() == ':' =>
                    {
                        constant(&c.to_string())
                    }
                    _ => None,
                };
                match path_const {
                    Some(method) => {
                        let m = Ident::new(method, i.span());
                        out.extend(quote!((#g::#m())));
                        k += 4;
                        continue;
                    }
                    None => out.extend(quote!(#g)),
                }
            }
            TokenTree::Ident(i) => {
                let renamed = match i.to_string().as_str() {
                    "push_f64" => Some("push_real"),
                    "pop_f64" => Some("pop_real"),
                    "take_f64" => Some("take_real"),
                    "give_f64" => Some("give_real"),
                    _ => None,
                };
                match renamed {
                    // A pop names its type: nothing else says what comes off the stack.
                    Some("pop_real") => {
                        let r = Ident::new("pop_real", i.span());
                        out.extend(quote!(#r::<#g>));
                    }
                    Some(r) => out.extend([TokenTree::Ident(Ident::new(r, i.span()))]),
                    None => out.extend([toks[k].clone()]),
                }
            }
            TokenTree::Literal(l) if is_float_literal(l) => {
                let text = l.to_string();
                let text = text.trim_end_matches("f64");
                let lit: Literal = text.parse().unwrap_or_else(|_| l.clone());
                out.extend(match text.parse::<f64>() {
                    Ok(0.0) => quote!(#g::zero()),
                    Ok(1.0) => quote!(#g::one()),
                    _ => quote!(#g::lit(#lit)),
                });
            }
            t => out.extend([t.clone()]),
        }
        k += 1;
    }
    out
}

fn is_float_literal(l: &Literal) -> bool {
    let s = l.to_string();
    let digits = s.chars().next().is_some_and(|c| c.is_ascii_digit());
    // (An integer's suffix is no exponent: `3usize`.)
    const INTEGERS: [&str; 12] =
        ["usize", "isize", "u8", "u16", "u32", "u64", "u128", "i8", "i16", "i32", "i64", "i128"];
    digits
        && !s.starts_with("0x")
        && !INTEGERS.iter().any(|t| s.ends_with(t))
        && (s.contains('.') || s.ends_with("f64") || (s.contains('e') && !s.contains('_')))
}

fn constant(name: &str) -> Option<&'static str> {
    Some(match name {
        "NAN" => "nan",
        "INFINITY" => "infinity",
        "NEG_INFINITY" => "neg_infinity",
        "EPSILON" => "epsilon",
        "MAX" => "max_value",
        "MIN" => "min_value",
        "MIN_POSITIVE" => "min_positive_value",
        _ => return None,
    })
}
