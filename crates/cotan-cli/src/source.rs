//! Loading a Rust file and finding its functions: free functions, functions in `mod`
//! blocks and associated functions without `self`, by name.

use crate::CliError;

/// A parsed source file.
pub struct Source {
    pub file: syn::File,
    /// Lines of the text it was parsed from (0 for a syntax tree made in memory).
    pub lines: usize,
    /// Where the functions it calls are found: its crate, or the text alone.
    pub set: cotan_expand::tools::SourceSet,
}

impl Source {
    pub fn load(path: &str) -> Result<Source, CliError> {
        let text = std::fs::read_to_string(path).map_err(|e| CliError::new(format!("cannot read `{path}`: {e}")))?;
        let mut src = Source::parse(&text).map_err(|e| CliError::new(format!("`{path}`: {e}")))?;
        src.set = cotan_expand::tools::SourceSet::file(std::path::Path::new(path));
        Ok(src)
    }

    pub fn parse(text: &str) -> Result<Source, CliError> {
        let file = syn::parse_file(text).map_err(|e| {
            let at = e.span().start();
            CliError::new(format!("the file does not parse as Rust (line {}, column {}): {e}", at.line, at.column + 1))
        })?;
        Ok(Source { file, lines: text.lines().count(), set: cotan_expand::tools::SourceSet::text(text) })
    }

    /// A syntax tree made in memory: its functions can be listed, not run with what they call.
    pub fn of(file: &syn::File) -> Source {
        Source { file: file.clone(), lines: 0, set: cotan_expand::tools::SourceSet::none() }
    }

    /// A syntax tree made in memory, printed and parsed again so that its functions can be
    /// run with what they call.
    pub fn reparsed(file: &syn::File) -> Result<Source, CliError> {
        Source::parse(&prettyplease::unparse(file))
    }

    /// Every function of the file (in nested modules and `impl` blocks too).
    pub fn functions(&self) -> Vec<syn::ItemFn> {
        let mut out = vec![];
        collect(&self.file.items, &mut out);
        out
    }

    /// The function named `name`, or a message listing those that exist.
    pub fn function(&self, name: &str) -> Result<syn::ItemFn, CliError> {
        let all = self.functions();
        if let Some(f) = all.iter().find(|f| f.sig.ident == name) {
            return Ok(f.clone());
        }
        let names: Vec<String> = all.iter().map(|f| f.sig.ident.to_string()).collect();
        Err(CliError::new(format!("no function `{name}` in the file; it has: {}", names.join(", "))))
    }
}

fn collect(items: &[syn::Item], out: &mut Vec<syn::ItemFn>) {
    for item in items {
        match item {
            syn::Item::Fn(f) => out.push(f.clone()),
            syn::Item::Mod(m) => {
                if let Some((_, items)) = &m.content {
                    collect(items, out);
                }
            }
            syn::Item::Impl(i) => {
                for it in &i.items {
                    if let syn::ImplItem::Fn(m) = it {
                        if m.sig.receiver().is_none() {
                            out.push(syn::ItemFn {
                                attrs: m.attrs.clone(),
                                vis: m.vis.clone(),
                                sig: m.sig.clone(),
                                block: Box::new(m.block.clone()),
                            });
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

/// The last segment of an attribute's path (`cotan::custom_derivative` -> `custom_derivative`).
pub fn attr_name(a: &syn::Attribute) -> String {
    a.path().segments.last().map(|s| s.ident.to_string()).unwrap_or_default()
}

/// The arguments of the first attribute named `name` on `f`, as tokens.
pub fn attr_args(f: &syn::ItemFn, name: &str) -> Option<proc_macro2::TokenStream> {
    f.attrs.iter().find(|a| attr_name(a) == name).map(|a| match &a.meta {
        syn::Meta::List(l) => l.tokens.clone(),
        _ => proc_macro2::TokenStream::new(),
    })
}
