//! Callees that cannot be differentiated, found before rustc does. A proc macro sees one
//! function; for a call of `g` from differentiated code, rustc would only say that
//! `__cotan_rev_g_m1` does not exist. So the macro reads the crate's sources (the file it
//! expands in, from `Span::local_file`, and the `.rs` files under `CARGO_MANIFEST_DIR/src`)
//! and, when every `g` defined there lacks a cotan attribute that gives the needed mode,
//! reports the call with the two remedies. Names that `use` items bring in, and paths into
//! modules it does not know (other crates), are left to rustc.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use cotan_ad::Mode;

thread_local! {
    static FILE: RefCell<Option<PathBuf>> = const { RefCell::new(None) };
    static PARSED: RefCell<HashMap<PathBuf, Rc<FileItems>>> = RefCell::new(HashMap::new());
}

/// What a source file defines and imports (parsed once per file and process).
#[derive(Default)]
struct FileItems {
    defined: Vec<Defined>,
    /// The names its `use` items bring in, with the paths they stand for.
    imports: Vec<(String, String)>,
}

/// The file the attribute being expanded is in (from the compiler, `None` for tools).
pub fn set_source_file(path: Option<PathBuf>) {
    FILE.with(|f| *f.borrow_mut() = path);
}

/// A function of the crate and the modes its attributes make callable (or a module name,
/// with `module` set).
struct Defined {
    name: String,
    forward: bool,
    reverse: bool,
    module: bool,
    /// For a name a `use` brings in: the path's first segment (`crate`, a module, a crate).
    via: Option<String>,
}

fn attr_modes(attrs: &[syn::Attribute]) -> (bool, bool) {
    let (mut fwd, mut rev) = (false, false);
    for a in attrs {
        let name = crate::attr_name(a);
        match name.as_str() {
            "differentiable" | "zero_derivative" => (fwd, rev) = (true, true),
            "autodiff_forward" => fwd = true,
            "autodiff_reverse" | "hvp" | "hessian" => rev = true,
            "custom_derivative" => {
                let text = quote::ToTokens::to_token_stream(&a.meta).to_string();
                fwd |= text.contains("forward");
                rev |= text.contains("reverse");
            }
            _ => {}
        }
    }
    (fwd, rev)
}

fn collect(items: &[syn::Item], out: &mut Vec<Defined>) {
    for item in items {
        match item {
            syn::Item::Fn(f) => {
                let (forward, reverse) = attr_modes(&f.attrs);
                out.push(Defined { name: f.sig.ident.to_string(), forward, reverse, module: false, via: None });
            }
            syn::Item::Impl(i) => {
                for it in &i.items {
                    if let syn::ImplItem::Fn(f) = it {
                        let (forward, reverse) = attr_modes(&f.attrs);
                        out.push(Defined { name: f.sig.ident.to_string(), forward, reverse, module: false, via: None });
                    }
                }
            }
            syn::Item::Mod(m) => {
                out.push(Defined {
                    name: m.ident.to_string(),
                    forward: false,
                    reverse: false,
                    module: true,
                    via: None,
                });
                if let Some((_, items)) = &m.content {
                    collect(items, out);
                }
            }
            // A name brought in from elsewhere may be the one called: no claim about it.
            syn::Item::Use(u) => {
                let text = quote::ToTokens::to_token_stream(&u.tree).to_string();
                let via = text.split("::").next().unwrap_or_default().trim().to_string();
                for word in text.split(|c: char| !c.is_alphanumeric() && c != '_') {
                    out.push(Defined {
                        name: word.to_string(),
                        forward: true,
                        reverse: true,
                        module: false,
                        via: Some(via.clone()),
                    });
                }
            }
            // Types are namespaces of methods (`Params::predict`).
            syn::Item::Struct(syn::ItemStruct { ident, .. }) | syn::Item::Enum(syn::ItemEnum { ident, .. }) => {
                out.push(Defined { name: ident.to_string(), forward: false, reverse: false, module: true, via: None });
            }
            _ => {}
        }
    }
}

/// What a file defines and imports (cached: the compiler runs the macros of a crate in one process).
fn parsed(path: &Path) -> Rc<FileItems> {
    PARSED.with(|p| {
        if let Some(d) = p.borrow().get(path) {
            return d.clone();
        }
        let mut items = FileItems::default();
        if let Some(file) = std::fs::read_to_string(path).ok().and_then(|t| syn::parse_file(&t).ok()) {
            collect(&file.items, &mut items.defined);
            imports(&file.items, &mut items.imports);
        }
        let items = Rc::new(items);
        p.borrow_mut().insert(path.to_path_buf(), items.clone());
        items
    })
}

/// The `.rs` files of the crate: the current one and those under `src/`.
fn crate_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = FILE.with(|f| f.borrow().clone()).into_iter().collect();
    if files.is_empty() {
        return files;
    }
    let Some(dir) = std::env::var_os("CARGO_MANIFEST_DIR").map(|d| PathBuf::from(d).join("src")) else {
        return files;
    };
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") && !files.contains(&p) {
                files.push(p);
            }
        }
    }
    files
}

/// An error at the first call, in `f`, of a function of this file that has no derivative
/// in `mode`.
pub(crate) fn check(lowered: &cotan_syntax::Lowered, mode: Mode) -> syn::Result<()> {
    let mut calls = false;
    lowered.func.walk(&mut |op| calls |= matches!(op.kind, cotan_ir::OpKind::Call { .. }));
    if !calls {
        return Ok(());
    }
    let files = crate_files();
    let all: Vec<Rc<FileItems>> = files.iter().map(|f| parsed(f)).collect();
    let defs: Vec<&Defined> = all.iter().flat_map(|d| d.defined.iter()).collect();
    // Module names: file modules (`src/model.rs`) and inline ones.
    let modules: Vec<String> = files
        .iter()
        .filter_map(|f| f.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .chain(defs.iter().filter(|d| d.module).map(|d| d.name.clone()))
        .collect();
    let mut found = Ok(());
    lowered.func.walk(&mut |op| {
        let cotan_ir::OpKind::Call { callee, .. } = &op.kind else { return };
        let name = callee.rsplit("::").next().unwrap_or(callee);
        if found.is_err() || name.starts_with("__cotan_") {
            return;
        }
        // `other_crate::g`: not ours to judge.
        let first = callee.split("::").next().unwrap_or_default();
        let local = callee == name || ["crate", "self", "super", "Self"].contains(&first) || modules.iter().any(|m| m == first);
        if !local {
            return;
        }
        let is_local = |first: &str| ["crate", "self", "super", "Self"].contains(&first) || modules.iter().any(|m| m == first);
        // A name imported from a module of this crate is judged by its definition there.
        let same: Vec<&Defined> = defs
            .iter()
            .copied()
            .filter(|d| d.name == name && !d.module && !d.via.as_deref().is_some_and(is_local))
            .collect();
        let callable = |d: &&Defined| if mode == Mode::Forward { d.forward } else { d.reverse };
        if same.is_empty() || same.iter().any(callable) {
            return;
        }
        let marked = same.iter().any(|d| d.forward || d.reverse);
        let message = if marked {
            format!(
                "`{name}` has no {} derivative, which this call needs: mark it `#[cotan::differentiable]` (both modes), or give it a custom derivative for this mode",
                if mode == Mode::Forward { "forward-mode" } else { "reverse-mode" }
            )
        } else {
            format!("cotan cannot differentiate through `{name}`: mark it `#[cotan::differentiable]`, or give it `#[cotan::custom_derivative(forward = .., reverse = ..)]` (or `#[cotan::zero_derivative]` for a constant)")
        };
        found = Err(syn::Error::new(lowered.span(op.span), message));
    });
    found
}

/// `use` imports of one file: the name in scope and the path it stands for.
fn imports(items: &[syn::Item], out: &mut Vec<(String, String)>) {
    fn walk(tree: &syn::UseTree, prefix: &str, out: &mut Vec<(String, String)>) {
        let join = |p: &str, n: &str| if p.is_empty() { n.to_string() } else { format!("{p}::{n}") };
        match tree {
            syn::UseTree::Path(p) => walk(&p.tree, &join(prefix, &p.ident.to_string()), out),
            syn::UseTree::Name(n) => out.push((n.ident.to_string(), join(prefix, &n.ident.to_string()))),
            syn::UseTree::Rename(r) => out.push((r.rename.to_string(), join(prefix, &r.ident.to_string()))),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| walk(t, prefix, out)),
            syn::UseTree::Glob(_) => {}
        }
    }
    for item in items {
        match item {
            syn::Item::Use(u) => walk(&u.tree, "", out),
            syn::Item::Mod(m) => {
                if let Some((_, items)) = &m.content {
                    imports(items, out);
                }
            }
            _ => {}
        }
    }
}

/// Calls of a function imported by name (`use crate::model::g;` then `g(x)`) call it by its
/// path, so that its derivatives (`crate::model::__cotan_rev_g_m1`), which the `use` does
/// not import, are found.
pub(crate) fn resolve_imports(f: &mut cotan_ir::Function) {
    let Some(path) = FILE.with(|f| f.borrow().clone()) else { return };
    let items = parsed(&path);
    let found = &items.imports;
    f.body.walk_mut(&mut |op| {
        let cotan_ir::OpKind::Call { callee, .. } = &mut op.kind else { return };
        if callee.contains("::") {
            return;
        }
        let targets: Vec<&String> = found.iter().filter(|(n, _)| n == callee).map(|(_, p)| p).collect();
        // Imported once (or always from the same place): unambiguous.
        if let Some(first) = targets.first() {
            if targets.iter().all(|t| t == first) && first.contains("::") {
                *callee = (*first).clone();
            }
        }
    });
}
