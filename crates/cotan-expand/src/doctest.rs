//! The sources of a doctest. rustdoc compiles a documentation example as a crate of its
//! own, from text that is in no file of its own: its spans name the file the
//! documentation is attached to. cotan looks in that file's `///` and `//!` comments and in
//! the Markdown files it includes (`#[doc = include_str!(..)]`) for the code block that
//! defines the function being differentiated (the same function, token for token), and
//! reads the block as rustdoc does (its statements and items in one `fn main`), so that
//! the example's other functions are found like a crate's.

use std::path::{Path, PathBuf};

use quote::ToTokens;

use crate::sources::{with_fallback, Sources};

/// The code block of documentation attached to `file` that defines `func`, as sources (the
/// block's lines at their lines in the documentation), the file the block is in, and the
/// line of `func`'s name there.
pub(crate) fn sources(file: &Path, func: &syn::ItemFn) -> Option<(Sources, PathBuf, usize)> {
    sources_defining(file, &func.sig.ident.to_string(), &text_of(&func.sig, &func.block))
}

/// [`sources`] for a method declared in a trait (`fn f(&self) -> f64;`).
pub(crate) fn trait_sources(file: &Path, decl: &syn::TraitItemFn) -> Option<(Sources, PathBuf, usize)> {
    sources_defining(file, &decl.sig.ident.to_string(), &declaration_text(&decl.sig))
}

/// The code block that defines function `name` whose text (without white space) is `want`.
fn sources_defining(file: &Path, name: &str, want: &str) -> Option<(Sources, PathBuf, usize)> {
    let text = std::fs::read_to_string(file).ok()?;
    let comments: Vec<String> = text.lines().map(|l| strip_doc_comment(l).unwrap_or_default()).collect();
    let mut docs = vec![(file.to_path_buf(), comments)];
    for included in includes(&text) {
        let path = file.parent()?.join(&included);
        if let Ok(md) = std::fs::read_to_string(&path) {
            docs.push((path, md.lines().map(str::to_string).collect()));
        }
    }
    for (path, lines) in docs {
        for block in blocks(&lines) {
            if !block.contains(&format!("fn {name}")) {
                continue;
            }
            let line = with_fallback(|| {
                let file: syn::File = syn::parse_str(&block).ok()?;
                let found = defined(&file.items, name, want)?;
                Some(found.ident.span().start().line)
            });
            if let Some(line) = line {
                return Some((Sources::from_text(&path, &block)?, path, line));
            }
        }
    }
    None
}

/// The text of a `///` or `//!` comment line.
fn strip_doc_comment(l: &str) -> Option<String> {
    let t = l.trim_start();
    let rest = t.strip_prefix("///").or_else(|| t.strip_prefix("//!"))?;
    Some(rest.strip_prefix(' ').unwrap_or(rest).to_string())
}

/// The paths in `include_str!("..")` of a file (its `#[doc = ..]` attributes).
fn includes(text: &str) -> Vec<String> {
    let key = "include_str!(\"";
    text.lines()
        .filter_map(|l| {
            let rest = &l[l.find(key)? + key.len()..];
            Some(rest[..rest.find('"')?].to_string())
        })
        .collect()
}

/// Every fenced code block, as Rust text with each of its lines at its own line number: the
/// opening fence becomes `fn main() {`, rustdoc's wrapping.
fn blocks(lines: &[String]) -> Vec<String> {
    let fence = |l: &str| l.trim_start().starts_with("```");
    let mut out = vec![];
    let mut k = 0;
    while k < lines.len() {
        if !fence(&lines[k]) {
            k += 1;
            continue;
        }
        let Some(end) = (k + 1..lines.len()).find(|&j| fence(&lines[j])) else { break };
        let mut text = "\n".repeat(k);
        text.push_str("fn main() {\n");
        for l in &lines[k + 1..end] {
            // Hidden lines (`# use ..;`) are code too.
            let l = l.trim_start();
            let l = l.strip_prefix("# ").or_else(|| l.strip_prefix('#').filter(|r| r.is_empty())).unwrap_or(l);
            text.push_str(l);
            text.push('\n');
        }
        text.push_str("}\n");
        out.push(text);
        k = end + 1;
    }
    out
}

/// The function named `name` whose signature and body are `want` (without whitespace),
/// anywhere in `items` (in function bodies, modules and impls too).
fn defined<'a>(items: &'a [syn::Item], name: &str, want: &str) -> Option<&'a syn::Signature> {
    struct Find<'a, 'w> {
        name: &'w str,
        want: &'w str,
        found: Option<&'a syn::Signature>,
    }
    impl<'a> syn::visit::Visit<'a> for Find<'a, '_> {
        fn visit_item_fn(&mut self, f: &'a syn::ItemFn) {
            if f.sig.ident == self.name && text_of(&f.sig, &f.block) == self.want {
                self.found = Some(&f.sig);
            }
            syn::visit::visit_item_fn(self, f);
        }
        fn visit_trait_item_fn(&mut self, f: &'a syn::TraitItemFn) {
            if f.sig.ident == self.name && f.default.is_none() && declaration_text(&f.sig) == self.want {
                self.found = Some(&f.sig);
            }
        }
        fn visit_impl_item_fn(&mut self, f: &'a syn::ImplItemFn) {
            if f.sig.ident == self.name && text_of(&f.sig, &f.block) == self.want {
                self.found = Some(&f.sig);
            }
            syn::visit::visit_impl_item_fn(self, f);
        }
    }
    let mut v = Find { name, want, found: None };
    for item in items {
        syn::visit::Visit::visit_item(&mut v, item);
    }
    v.found
}

/// A function's signature and body, without whitespace.
fn declaration_text(sig: &syn::Signature) -> String {
    let text = format!("{};", sig.to_token_stream());
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

fn text_of(sig: &syn::Signature, block: &syn::Block) -> String {
    let text = format!("{}{}", sig.to_token_stream(), block.to_token_stream());
    text.chars().filter(|c| !c.is_whitespace()).collect()
}
