//! Loading a Rust file and finding its functions: free functions, functions in `mod`
//! blocks, and associated functions and methods (`&self`, `&mut self`, `self`) of `impl`
//! blocks, by name or by a path that ends with the name (`out`, `Layer::out`,
//! `model::Layer::out`, `model::energy`).

use crate::CliError;

/// A parsed source file.
pub struct Source {
    pub file: syn::File,
    /// Lines of the text it was parsed from (0 for a syntax tree made in memory).
    pub lines: usize,
    /// Where the functions it calls are found: its crate, or the text alone.
    pub set: cotan_expand::tools::SourceSet,
}

/// A function of the file with the path that names it: its modules, then the type of its
/// `impl` block, if any.
#[derive(Clone)]
pub struct Found {
    pub item: syn::ItemFn,
    pub path: Vec<String>,
    /// In an `impl` block: the last segment of `path` is its type.
    pub in_impl: bool,
}

impl Found {
    /// `model::Layer::out`.
    pub fn qualified(&self) -> String {
        self.path.iter().cloned().chain([self.item.sig.ident.to_string()]).collect::<Vec<_>>().join("::")
    }

    /// `Layer::out` for a method, `energy` for a free function: how the list of functions
    /// names it.
    fn shown(&self) -> String {
        match (self.in_impl, self.path.last()) {
            (true, Some(t)) => format!("{t}::{}", self.item.sig.ident),
            _ => self.item.sig.ident.to_string(),
        }
    }
}

impl Source {
    pub fn load(path: &str) -> Result<Source, CliError> {
        let text = std::fs::read_to_string(path).map_err(|e| CliError::new(format!("cannot read `{path}`: {e}")))?;
        let mut src = Source::parse(&text).map_err(|e| CliError::new(format!("`{path}`: {e}")))?;
        src.set = cotan_expand::tools::SourceSet::file(std::path::Path::new(path));
        // What the macros learn from the compiler: the file a function is in (`emit` derives
        // as they do, with the crate's constants and functions).
        cotan_expand::set_source_file(std::fs::canonicalize(path).ok());
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
        self.found().into_iter().map(|f| f.item).collect()
    }

    /// Every function of the file with its path.
    pub fn found(&self) -> Vec<Found> {
        let mut out = vec![];
        collect(&self.file.items, &mut vec![], &mut out);
        out
    }

    /// The function `name`: a function's name, or a path ending with it whose other segments
    /// are the last modules and `impl` type of its path (`Layer::out`, `model::energy`). A
    /// name that several functions have must be qualified; a message lists the candidates,
    /// or the functions that exist.
    pub fn function(&self, name: &str) -> Result<syn::ItemFn, CliError> {
        let all = self.found();
        let query: Vec<&str> = name.split("::").map(str::trim).collect();
        let (last, prefix) = query.split_last().expect("split gives one segment at least");
        let matches: Vec<&Found> = all
            .iter()
            .filter(|f| f.item.sig.ident == last && f.path.len() >= prefix.len())
            .filter(|f| f.path[f.path.len() - prefix.len()..].iter().zip(prefix.iter()).all(|(a, b)| a == b))
            .collect();
        match matches.as_slice() {
            [one] => return Ok(one.item.clone()),
            [] => {}
            several => {
                // A function at the top of the file is what an unqualified name names first.
                if let Some(top) = several.iter().find(|f| f.path.len() == prefix.len()) {
                    return Ok(top.item.clone());
                }
                let names: Vec<String> = several.iter().map(|f| f.qualified()).collect();
                return Err(CliError::new(format!(
                    "several functions are named `{name}`: {}; give one of these paths to --fn",
                    names.join(", ")
                )));
            }
        }
        let names: Vec<String> = all.iter().map(Found::shown).collect();
        Err(CliError::new(format!("no function `{name}` in the file; it has: {}", names.join(", "))))
    }
}

fn collect(items: &[syn::Item], path: &mut Vec<String>, out: &mut Vec<Found>) {
    for item in items {
        match item {
            syn::Item::Fn(f) => out.push(Found { item: f.clone(), path: path.clone(), in_impl: false }),
            syn::Item::Mod(m) => {
                if let Some((_, items)) = &m.content {
                    path.push(m.ident.to_string());
                    collect(items, path, out);
                    path.pop();
                }
            }
            syn::Item::Impl(i) => {
                let Some(ty) = impl_type(i) else { continue };
                path.push(ty);
                for it in &i.items {
                    if let syn::ImplItem::Fn(m) = it {
                        let item = syn::ItemFn {
                            attrs: m.attrs.clone(),
                            vis: m.vis.clone(),
                            sig: m.sig.clone(),
                            block: Box::new(m.block.clone()),
                        };
                        out.push(Found { item, path: path.clone(), in_impl: true });
                    }
                }
                path.pop();
            }
            _ => {}
        }
    }
}

/// The name of the type an `impl` block is for (`Layer` of `impl Layer`, of `impl<T>
/// Model for Layer<T>`).
fn impl_type(i: &syn::ItemImpl) -> Option<String> {
    match &*i.self_ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
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
