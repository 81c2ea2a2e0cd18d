//! `println!`, `print!`, `eprintln!`, `eprint!` and `dbg!`: the primal's output, kept as
//! an IR `Print` (derivatives print what the primal prints, once). The format string is
//! rewritten to refer to its arguments by position (`{x}` and `{name}` become `{0}`,
//! `{1}`), since the arguments become IR values.

use crate::span::Spanned;
use cotan_ir::{OpKind, Value};
use syn::punctuated::Punctuated;

use crate::agg::Tree;
use crate::lower::{err, err_at, Lower};

const PRINTS: [&str; 4] = ["println", "print", "eprintln", "eprint"];

/// Whether a macro is one of the printing macros (`dbg!` included).
pub(crate) fn is_print(name: &str) -> bool {
    PRINTS.contains(&name) || name == "dbg"
}

/// An argument of the format: written in the call (by position or name) or captured.
enum Arg<'a> {
    Expr(&'a syn::Expr),
    Captured(syn::Ident),
}

impl Lower {
    /// A printing macro; `dbg!(e)` has the value of `e`.
    pub(crate) fn print_macro(&mut self, mac: &syn::Macro, name: &str) -> syn::Result<Option<Value>> {
        let exprs = mac.parse_body_with(Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated)?;
        if name == "dbg" {
            return self.dbg(mac, &exprs);
        }
        let Some((first, rest)) = exprs.iter().collect::<Vec<_>>().split_first().map(|(f, r)| (*f, r.to_vec())) else {
            // `println!()`: an empty line.
            self.at(mac.span());
            self.effect(OpKind::Print { mac: name.into(), format: String::new(), args: vec![] });
            return Ok(None);
        };
        let syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(fmt), .. }) = first else {
            return err_at(first, "expected a format string literal");
        };
        let mut positional = vec![];
        let mut named: Vec<(String, &syn::Expr)> = vec![];
        for e in rest {
            match e {
                syn::Expr::Assign(a) => match &*a.left {
                    syn::Expr::Path(p) if p.path.get_ident().is_some() => {
                        named.push((p.path.get_ident().unwrap().to_string(), &a.right))
                    }
                    _ => return err_at(e, "expected `name = value`"),
                },
                e => positional.push(e),
            }
        }
        // The arguments as written, in order, then captured names.
        let mut args: Vec<Arg> = positional.iter().map(|e| Arg::Expr(e)).collect();
        args.extend(named.iter().map(|(_, e)| Arg::Expr(e)));
        let format = rewrite(&fmt.value(), positional.len(), &named, &mut args, fmt.span())?;
        let mut vals = vec![];
        for a in &args {
            let v = match a {
                Arg::Expr(e) => self.agg(e)?,
                Arg::Captured(i) => self.agg(&syn::parse_quote!(#i))?,
            };
            match v {
                Tree::Leaf(v) => vals.push(v),
                v => {
                    return err_at(
                        fmt,
                        format!("cotan prints numbers, bools and arrays; an argument here is {}", v.describe()),
                    )
                }
            }
        }
        self.at(mac.span());
        self.effect(OpKind::Print { mac: name.into(), format, args: vals });
        Ok(None)
    }

    /// `dbg!(e)`: prints `[file:line:column] e = value` to stderr and has the value of `e`.
    fn dbg(&mut self, mac: &syn::Macro, exprs: &Punctuated<syn::Expr, syn::Token![,]>) -> syn::Result<Option<Value>> {
        let span = mac.span();
        let at = format!("[{}:{}:{}]", span.file(), span.start().line, span.start().column + 1);
        let at = at.replace('{', "{{").replace('}', "}}");
        match exprs.iter().collect::<Vec<_>>().as_slice() {
            [] => {
                self.at(span);
                self.effect(OpKind::Print { mac: "eprintln".into(), format: at, args: vec![] });
                Ok(None)
            }
            [e] => {
                let v = self.expr(e)?;
                let text = quote::ToTokens::to_token_stream(e).to_string().replace('{', "{{").replace('}', "}}");
                self.at(span);
                let format = format!("{at} {text} = {{0:#?}}");
                self.effect(OpKind::Print { mac: "eprintln".into(), format, args: vec![v] });
                Ok(Some(v))
            }
            _ => err(span, "cotan supports `dbg!` with one argument; write one `dbg!` per value"),
        }
    }
}

/// The format string with every placeholder referring to an argument by position.
fn rewrite<'a>(
    fmt: &str,
    n_positional: usize,
    named: &[(String, &'a syn::Expr)],
    args: &mut Vec<Arg<'a>>,
    span: proc_macro2::Span,
) -> syn::Result<String> {
    let mut out = String::new();
    let mut next = 0;
    let mut chars = fmt.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push_str("{{");
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push_str("}}");
            }
            '{' => {
                let mut inner = String::new();
                for c in chars.by_ref() {
                    if c == '}' {
                        break;
                    }
                    inner.push(c);
                }
                let (arg, spec) = match inner.split_once(':') {
                    Some((a, s)) => (a.trim(), Some(s)),
                    None => (inner.trim(), None),
                };
                if spec.is_some_and(|s| s.contains('$') || s.contains('*')) {
                    return err(span, "cotan does not support widths or precisions taken from arguments (`{:1$}`, `{:.*}`); write them as numbers");
                }
                let index = if arg.is_empty() {
                    next += 1;
                    next - 1
                } else if let Ok(k) = arg.parse::<usize>() {
                    k
                } else if let Some(k) = named.iter().position(|(n, _)| n == arg) {
                    n_positional + k
                } else {
                    let ident: syn::Ident = syn::parse_str(arg)
                        .map_err(|_| syn::Error::new(span, format!("invalid format argument `{arg}`")))?;
                    let k = args.iter().position(|a| matches!(a, Arg::Captured(i) if *i == ident));
                    k.unwrap_or_else(|| {
                        args.push(Arg::Captured(syn::Ident::new(arg, span)));
                        args.len() - 1
                    })
                };
                if index >= args.len() {
                    return err(span, format!("the format refers to argument {index}, which is not given"));
                }
                match spec {
                    Some(s) => out.push_str(&format!("{{{index}:{s}}}")),
                    None => out.push_str(&format!("{{{index}}}")),
                }
            }
            c => out.push(c),
        }
    }
    Ok(out)
}
