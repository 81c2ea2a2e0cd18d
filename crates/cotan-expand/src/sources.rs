//! The crate's sources as a proc macro can read them: its files (from the crate root, by
//! following `mod` items), its modules, functions, types and `impl` blocks, and Rust's name
//! resolution over them, enough to find the function a call names and to write a path that
//! reaches it from where the derivative is emitted.
//!
//! Files are parsed with proc-macro2's fallback implementation (the compiler's spans carry
//! no lines for text parsed inside a macro), so nothing parsed here may reach the macro's
//! output: lowering uses the syntax, code generation re-creates every token.

use cotan_ir::HashMap;
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::SystemTime;

use syn::spanned::Spanned;

pub(crate) type ModId = usize;
pub(crate) type FnId = usize;
pub(crate) type TypeId = usize;
pub(crate) type ImplId = usize;
pub(crate) type DerivedId = usize;
pub(crate) type ConstId = usize;

/// A derivative that `#[autodiff_forward(NAME, ..)]` or `#[autodiff_reverse(NAME, ..)]`
/// generates beside function `of`.
pub(crate) struct DerivedDef {
    pub name: String,
    pub of: FnId,
    pub mode: cotan_ad::Mode,
    /// The attribute's arguments.
    pub args: String,
}

/// Who may name an item.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Vis {
    Public,
    /// `pub(crate)`, `pub(super)`, `pub(in path)`, private: visible in this module (by
    /// path from the crate root) and below it.
    Within(Vec<String>),
}

/// A module, or the items declared in a function's body (a block: reachable only from
/// inside it, by name).
pub(crate) struct Module {
    pub parent: Option<ModId>,
    pub block: bool,
    /// Names from the crate root (a block has its module's path).
    pub path: Vec<String>,
    pub file: Rc<PathBuf>,
    /// First and last line in `file`.
    pub lines: (usize, usize),
    items: Vec<(String, Item)>,
    uses: Vec<Use>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Item {
    Fn(FnId),
    /// A derivative an autodiff attribute generates.
    Derived(DerivedId),
    Mod(ModId),
    Type(TypeId),
    /// A `const` or a `static` that is not `mut`.
    Const(ConstId),
    /// A `static mut` (which shadows names of the value namespace).
    Value,
}

/// `use path::name as alias;` (`name: Some(alias)`) or `use path::*;` (`name: None`).
struct Use {
    name: Option<String>,
    path: Vec<String>,
}

pub(crate) struct FnDef {
    pub name: String,
    pub item: Rc<syn::ItemFn>,
    /// Where the names in its signature and body resolve.
    pub module: ModId,
    /// The `impl` block it is a method of.
    pub imp: Option<ImplId>,
    pub vis: Vis,
    pub file: Rc<PathBuf>,
    pub lines: (usize, usize),
    /// The line of its name (where messages point).
    pub line: usize,
    /// Where the names of its body resolve: the items declared in it, then `module`'s.
    pub scope: ModId,
}

/// A `const`, or a `static` that is not `mut`: a module's, a function body's or an `impl`
/// block's (an associated constant).
pub(crate) struct ConstDef {
    pub name: String,
    pub ty: syn::Type,
    pub expr: syn::Expr,
    /// Where the names of `expr` resolve.
    pub module: ModId,
    pub imp: Option<ImplId>,
}

pub(crate) struct TypeDef {
    pub name: String,
    pub module: ModId,
    pub vis: Vis,
    /// Named fields of a struct and who may read them.
    pub fields: Vec<(String, Vis)>,
    /// The methods a trait declares.
    pub methods: Vec<String>,
    /// A trait's methods with a default body, as functions (public, without attributes).
    pub provided: Vec<Rc<syn::ItemFn>>,
    /// A trait's first and last line (in its module's file).
    pub trait_lines: Option<(usize, usize)>,
    /// A struct's definition (its fields' types), if it is a struct without generics.
    pub structure: Option<Rc<syn::Fields>>,
    /// The type a type alias without generics stands for.
    pub alias: Option<Rc<syn::Type>>,
    /// An enum without generics.
    pub is_enum: bool,
    /// The traits a struct derives (`#[derive(Clone, Default)]`), by their last name.
    pub derives: Vec<String>,
    /// A trait marked `#[cotan::differentiable]` (its derivatives are part of it).
    pub marked: bool,
}

pub(crate) struct ImplDef {
    pub module: ModId,
    pub self_ty: syn::Type,
    pub trait_path: Option<syn::Path>,
    pub generic: bool,
    /// Marked `#[cotan::differentiable]`: its methods export their derivatives.
    pub marked: bool,
}

/// What a path names.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Res {
    Fn(FnId),
    Derived(DerivedId),
    Module(ModId),
    Type(TypeId),
    Const(ConstId),
    /// Nothing of this crate (another crate's item, or a name it does not know).
    Outside,
}

/// The lookups of one resolution: (module, name, value namespace) to what they found.
type Memo = HashMap<(ModId, String, bool), Res>;

/// Which namespace a path's last segment is looked up in.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Ns {
    Value,
    Type,
}

pub(crate) struct Sources {
    pub modules: Vec<Module>,
    pub fns: Vec<FnDef>,
    pub types: Vec<TypeDef>,
    pub impls: Vec<ImplDef>,
    pub derived: Vec<DerivedDef>,
    pub consts: Vec<ConstDef>,
    /// Where macros are invoked in item position (their expansion is not read).
    macros: Vec<(Rc<PathBuf>, (usize, usize))>,
    /// Module paths start at the crate root (else at the top of the one file read).
    pub rooted: bool,
    /// Every file read, with its modification time when it was read.
    files: Vec<(PathBuf, Option<SystemTime>)>,
}

thread_local! {
    static CACHE: RefCell<HashMap<PathBuf, Rc<Sources>>> = RefCell::new(HashMap::default());
}

fn mtime(p: &Path) -> Option<SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

thread_local! {
    /// How many `with_fallback` calls are running.
    static DEPTH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Whether proc-macro2 is forced into its fallback mode (tokens made now are not rustc's).
pub(crate) fn in_fallback() -> bool {
    extern crate proc_macro;
    DEPTH.with(|d| d.get() > 0) || !proc_macro::is_available()
}

/// Runs `f` with proc-macro2's own implementation, whose spans know their lines.
pub(crate) fn with_fallback<T>(f: impl FnOnce() -> T) -> T {
    // (Nested calls keep it forced until the outermost one ends.)
    proc_macro2::fallback::force();
    DEPTH.with(|d| d.set(d.get() + 1));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    if DEPTH.with(|d| {
        d.set(d.get() - 1);
        d.get() == 0
    }) {
        proc_macro2::fallback::unforce();
    }
    r.unwrap_or_else(|p| std::panic::resume_unwind(p))
}

fn lines_of(node: &impl Spanned) -> (usize, usize) {
    let s = node.span();
    (s.start().line, s.end().line)
}

impl Sources {
    /// The crate containing `file` (cached per process, re-read when a file changes).
    pub(crate) fn for_file(file: &Path) -> Option<Rc<Sources>> {
        let file = std::fs::canonicalize(file).ok()?;
        let roots = candidate_roots(&file);
        for (root, rooted) in roots.into_iter().map(|r| (r, true)).chain([(file.clone(), false)]) {
            let Some(s) = Sources::cached(&root, rooted) else { continue };
            if s.modules.iter().any(|m| *m.file == file) {
                return Some(s);
            }
        }
        None
    }

    /// One file's text, in memory (for tools), read alone.
    pub(crate) fn from_text(name: &Path, text: &str) -> Option<Sources> {
        let name = &std::fs::canonicalize(name).unwrap_or_else(|_| name.to_path_buf());
        with_fallback(|| {
            let file = syn::parse_file(text).ok()?;
            let mut s = Sources {
                modules: vec![],
                fns: vec![],
                types: vec![],
                impls: vec![],
                derived: vec![],
                consts: vec![],
                macros: vec![],
                rooted: false,
                files: vec![],
            };
            let m = s.add_module(None, false, vec![], Rc::new(name.to_path_buf()), (1, usize::MAX));
            s.items(&file.items, m, Path::new(""));
            Some(s)
        })
    }

    fn cached(root: &Path, rooted: bool) -> Option<Rc<Sources>> {
        let key = root.with_extension(if rooted { "rs.root" } else { "rs.file" });
        let hit = CACHE.with(|c| c.borrow().get(&key).cloned());
        if let Some(s) = hit {
            if s.files.iter().all(|(p, t)| mtime(p) == *t) {
                return Some(s);
            }
        }
        let s = Rc::new(with_fallback(|| Sources::load(root, rooted))?);
        CACHE.with(|c| c.borrow_mut().insert(key, s.clone()));
        Some(s)
    }

    fn load(root: &Path, rooted: bool) -> Option<Sources> {
        let mut s = Sources {
            modules: vec![],
            fns: vec![],
            types: vec![],
            impls: vec![],
            derived: vec![],
            consts: vec![],
            macros: vec![],
            rooted,
            files: vec![],
        };
        let file = s.parse(root)?;
        let dir = root.parent()?.to_path_buf();
        let lines = (1, usize::MAX);
        let m = s.add_module(None, false, vec![], Rc::new(root.to_path_buf()), lines);
        s.items(&file.items, m, &dir);
        s.provided_methods();
        Some(s)
    }

    /// The provided methods of the crate's traits, as methods of each impl that does not
    /// write them: their default bodies, whose names resolve in the trait's module and
    /// whose `Self` is the impl's type. (Their lines are none of the file's: an attribute
    /// is never located in one.)
    fn provided_methods(&mut self) {
        for i in 0..self.impls.len() {
            let Some(t) = self.impl_trait(i) else { continue };
            for p in self.types[t].provided.clone() {
                let name = p.sig.ident.to_string();
                if self.fns.iter().any(|f| f.imp == Some(i) && f.name == name) {
                    continue;
                }
                let module = self.types[t].module;
                let id = self.add_fn((*p).clone(), module, Some(i), &p.vis);
                self.fns[id].lines = (0, 0);
            }
        }
    }

    fn parse(&mut self, path: &Path) -> Option<syn::File> {
        let text = std::fs::read_to_string(path).ok()?;
        self.files.push((path.to_path_buf(), mtime(path)));
        syn::parse_file(&text).ok()
    }

    fn add_module(
        &mut self,
        parent: Option<ModId>,
        block: bool,
        path: Vec<String>,
        file: Rc<PathBuf>,
        lines: (usize, usize),
    ) -> ModId {
        self.modules.push(Module { parent, block, path, file, lines, items: vec![], uses: vec![] });
        self.modules.len() - 1
    }

    fn vis(&self, v: &syn::Visibility, m: ModId) -> Vis {
        let here = self.modules[m].path.clone();
        match v {
            syn::Visibility::Public(_) => Vis::Public,
            syn::Visibility::Restricted(r) => {
                let segs: Vec<String> = r.path.segments.iter().map(|s| s.ident.to_string()).collect();
                match segs.first().map(String::as_str) {
                    Some("crate") => Vis::Within(segs[1..].to_vec()),
                    Some("self") => Vis::Within(here),
                    Some("super") => Vis::Within(here[..here.len().saturating_sub(segs.len())].to_vec()),
                    _ => Vis::Within(vec![]),
                }
            }
            syn::Visibility::Inherited => Vis::Within(here),
        }
    }

    /// The items of a module or block.
    fn items(&mut self, items: &[syn::Item], m: ModId, dir: &Path) {
        let file = self.modules[m].file.clone();
        for item in items {
            match item {
                syn::Item::Fn(f) => {
                    let id = self.add_fn(f.clone(), m, None, &f.vis);
                    self.modules[m].items.push((f.sig.ident.to_string(), Item::Fn(id)));
                    for d in self.derivatives(id) {
                        self.modules[m].items.push((self.derived[d].name.clone(), Item::Derived(d)));
                    }
                    if let Some(b) = self.body_items(&f.block, m, dir) {
                        self.fns[id].scope = b;
                    }
                }
                syn::Item::Mod(md) => {
                    let name = md.ident.to_string();
                    // (`mod r#unsafe;` is in `unsafe.rs`.)
                    let file_name = syn::ext::IdentExt::unraw(&md.ident).to_string();
                    let mut path = self.modules[m].path.clone();
                    path.push(name.clone());
                    let explicit = md.attrs.iter().find_map(path_attr);
                    match &md.content {
                        Some((_, inner)) => {
                            let id = self.add_module(Some(m), false, path, file.clone(), lines_of(md));
                            self.modules[m].items.push((name.clone(), Item::Mod(id)));
                            let sub = match &explicit {
                                Some(p) => dir.join(p),
                                None => dir.join(&file_name),
                            };
                            self.items(inner, id, &sub);
                        }
                        None => {
                            let candidates = match &explicit {
                                Some(p) => vec![dir.join(p)],
                                None => vec![dir.join(format!("{file_name}.rs")), dir.join(&file_name).join("mod.rs")],
                            };
                            let Some(found) = candidates.into_iter().find(|p| p.is_file()) else { continue };
                            let Some(parsed) = self.parse(&found) else { continue };
                            let found = std::fs::canonicalize(&found).unwrap_or(found);
                            // `x/mod.rs` (and a `#[path]` file) hold their submodules beside
                            // them; `x.rs` in `x/`.
                            let sub = if found.file_name().is_some_and(|f| f == "mod.rs") || explicit.is_some() {
                                found.parent().map(Path::to_path_buf).unwrap_or_default()
                            } else {
                                dir.join(&file_name)
                            };
                            let id = self.add_module(Some(m), false, path, Rc::new(found), (1, usize::MAX));
                            self.modules[m].items.push((name.clone(), Item::Mod(id)));
                            self.items(&parsed.items, id, &sub);
                        }
                    }
                }
                syn::Item::Impl(imp) => {
                    let generic = !imp.generics.params.is_empty();
                    self.impls.push(ImplDef {
                        module: m,
                        self_ty: (*imp.self_ty).clone(),
                        trait_path: imp.trait_.as_ref().map(|t| t.1.clone()),
                        generic,
                        marked: imp.attrs.iter().any(|a| crate::attr_name(a) == "differentiable"),
                    });
                    let iid = self.impls.len() - 1;
                    for it in &imp.items {
                        if let syn::ImplItem::Const(c) = it {
                            self.consts.push(ConstDef {
                                name: c.ident.to_string(),
                                ty: c.ty.clone(),
                                expr: c.expr.clone(),
                                module: m,
                                imp: Some(iid),
                            });
                        }
                        if let syn::ImplItem::Fn(f) = it {
                            let item = syn::ItemFn {
                                attrs: f.attrs.clone(),
                                vis: f.vis.clone(),
                                sig: f.sig.clone(),
                                block: Box::new(f.block.clone()),
                            };
                            // A trait's methods are as visible as the trait: taken as public.
                            let vis = if imp.trait_.is_some() { syn::parse_quote!(pub) } else { f.vis.clone() };
                            let id = self.add_fn(item, m, Some(iid), &vis);
                            self.derivatives(id);
                            if let Some(b) = self.body_items(&f.block, m, dir) {
                                self.fns[id].scope = b;
                            }
                        }
                    }
                }
                syn::Item::Struct(st) => {
                    let fields = match &st.fields {
                        syn::Fields::Named(n) => n
                            .named
                            .iter()
                            .map(|f| (f.ident.as_ref().unwrap().to_string(), self.vis(&f.vis, m)))
                            .collect(),
                        syn::Fields::Unnamed(u) => {
                            u.unnamed.iter().enumerate().map(|(k, f)| (k.to_string(), self.vis(&f.vis, m))).collect()
                        }
                        syn::Fields::Unit => vec![],
                    };
                    self.add_type(st.ident.to_string(), m, &st.vis, fields);
                    self.types.last_mut().unwrap().derives = derived(&st.attrs);
                    if st.generics.params.is_empty() {
                        self.types.last_mut().unwrap().structure = Some(Rc::new(st.fields.clone()));
                    }
                }
                syn::Item::Enum(e) => {
                    self.add_type(e.ident.to_string(), m, &e.vis, vec![]);
                    self.types.last_mut().unwrap().is_enum = e.generics.params.is_empty();
                }
                syn::Item::Type(t) => {
                    self.add_type(t.ident.to_string(), m, &t.vis, vec![]);
                    if t.generics.params.is_empty() {
                        self.types.last_mut().unwrap().alias = Some(Rc::new((*t.ty).clone()));
                    }
                }
                syn::Item::Trait(t) => {
                    self.add_type(t.ident.to_string(), m, &t.vis, vec![]);
                    let methods = t.items.iter().filter_map(|i| match i {
                        syn::TraitItem::Fn(f) => Some(f.sig.ident.to_string()),
                        _ => None,
                    });
                    self.types.last_mut().unwrap().methods = methods.collect();
                    self.types.last_mut().unwrap().provided = t
                        .items
                        .iter()
                        .filter_map(|i| match i {
                            syn::TraitItem::Fn(f) => Some(Rc::new(syn::ItemFn {
                                attrs: vec![],
                                vis: syn::parse_quote!(pub),
                                sig: f.sig.clone(),
                                block: Box::new(f.default.clone()?),
                            })),
                            _ => None,
                        })
                        .collect();
                    self.types.last_mut().unwrap().trait_lines = Some(lines_of(t));
                    self.types.last_mut().unwrap().marked =
                        t.attrs.iter().any(|a| crate::attr_name(a) == "differentiable");
                }
                syn::Item::Use(u) => use_tree(&u.tree, vec![], &mut self.modules[m].uses),
                syn::Item::Macro(mac) => self.macros.push((file.clone(), lines_of(mac))),
                syn::Item::Const(c) => self.add_const(c.ident.to_string(), &c.ty, &c.expr, m),
                syn::Item::Static(s) if matches!(s.mutability, syn::StaticMutability::None) => {
                    self.add_const(s.ident.to_string(), &s.ty, &s.expr, m)
                }
                syn::Item::Static(s) => self.modules[m].items.push((s.ident.to_string(), Item::Value)),
                _ => {}
            }
        }
    }

    fn add_fn(&mut self, item: syn::ItemFn, m: ModId, imp: Option<ImplId>, vis: &syn::Visibility) -> FnId {
        let vis = self.vis(vis, m);
        let lines = lines_of(&item);
        let line = item.sig.ident.span().start().line;
        let file = self.modules[m].file.clone();
        self.fns.push(FnDef {
            name: item.sig.ident.to_string(),
            item: Rc::new(item),
            module: m,
            imp,
            vis,
            file,
            lines,
            line,
            scope: m,
        });
        self.fns.len() - 1
    }

    fn add_const(&mut self, name: String, ty: &syn::Type, expr: &syn::Expr, m: ModId) {
        let c = ConstDef { name: name.clone(), ty: ty.clone(), expr: expr.clone(), module: m, imp: None };
        self.consts.push(c);
        self.modules[m].items.push((name, Item::Const(self.consts.len() - 1)));
    }

    /// Records the derivatives the autodiff attributes of function `f` generate.
    fn derivatives(&mut self, f: FnId) -> Vec<DerivedId> {
        let mut out = vec![];
        for a in &self.fns[f].item.attrs {
            let mode = match crate::attr_name(a).as_str() {
                "autodiff_forward" => cotan_ad::Mode::Forward,
                "autodiff_reverse" => cotan_ad::Mode::Reverse,
                _ => continue,
            };
            let syn::Meta::List(list) = &a.meta else { continue };
            let args = list.tokens.to_string();
            let Some(name) = args.split(',').next().map(|n| n.trim().to_string()) else { continue };
            self.derived.push(DerivedDef { name, of: f, mode, args });
            out.push(self.derived.len() - 1);
        }
        out
    }

    fn add_type(&mut self, name: String, m: ModId, vis: &syn::Visibility, fields: Vec<(String, Vis)>) {
        let vis = self.vis(vis, m);
        self.types.push(TypeDef {
            name: name.clone(),
            module: m,
            vis,
            fields,
            methods: vec![],
            provided: vec![],
            trait_lines: None,
            structure: None,
            alias: None,
            is_enum: false,
            derives: vec![],
            marked: false,
        });
        let id = self.types.len() - 1;
        self.modules[m].items.push((name, Item::Type(id)));
    }

    /// Items declared inside a function body: a block module, below `m` (if there are any).
    fn body_items(&mut self, block: &syn::Block, m: ModId, dir: &Path) -> Option<ModId> {
        struct Found(Vec<syn::Item>);
        impl<'ast> syn::visit::Visit<'ast> for Found {
            fn visit_item(&mut self, i: &'ast syn::Item) {
                // Items in this body, not those of nested functions (their own blocks).
                self.0.push(i.clone());
            }
        }
        let mut found = Found(vec![]);
        syn::visit::Visit::visit_block(&mut found, block);
        if found.0.is_empty() {
            return None;
        }
        let path = self.modules[m].path.clone();
        let file = self.modules[m].file.clone();
        let b = self.add_module(Some(m), true, path, file, lines_of(block));
        self.items(&found.0, b, dir);
        Some(b)
    }

    /// Where function `name`, at line `line` of `file`, is: the innermost module or block
    /// around it, and the innermost function the line is in. `None` if no function of that
    /// name is there and no macro invocation either (the code is not this file's: a
    /// doctest's, say).
    pub(crate) fn locate(&self, file: &Path, line: usize, name: &str) -> Option<(ModId, Option<FnId>)> {
        let file = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
        let within = |l: (usize, usize)| l.0 <= line && line <= l.1;
        let here = self.fns.iter().any(|f| *f.file == file && within(f.lines) && f.name == name)
            || self.macros.iter().any(|(f, l)| **f == file && within(*l));
        if !here {
            return None;
        }
        let module = (0..self.modules.len())
            .filter(|&m| *self.modules[m].file == file && within(self.modules[m].lines))
            .max_by_key(|&m| self.depth(m))?;
        // The innermost function around the line; of several on one line
        // (`impl K for A { fn scale() .. fn f(&self) .. }`), the one of that name.
        let func = (0..self.fns.len())
            .filter(|&f| *self.fns[f].file == file && within(self.fns[f].lines))
            .min_by_key(|&f| (self.fns[f].lines.1 - self.fns[f].lines.0, self.fns[f].name != name));
        Some((module, func))
    }

    fn depth(&self, mut m: ModId) -> usize {
        let mut d = 0;
        while let Some(p) = self.modules[m].parent {
            d += 1;
            m = p;
        }
        d
    }

    /// The module (not block) a scope is in.
    pub(crate) fn module_of(&self, mut m: ModId) -> ModId {
        while self.modules[m].block {
            m = self.modules[m].parent.expect("a block is inside a module");
        }
        m
    }

    /// Resolves `path` as written in scope `from`; `ns` is the namespace of its last segment.
    pub(crate) fn resolve(&self, from: ModId, path: &[String], ns: Ns) -> Res {
        self.resolve_depth(from, path, ns, 0, &mut Memo::default())
    }

    fn resolve_depth(&self, from: ModId, path: &[String], ns: Ns, depth: usize, memo: &mut Memo) -> Res {
        if path.is_empty() || depth > 16 {
            return Res::Outside;
        }
        let last = path.len() == 1;
        let first_ns = if last { ns } else { Ns::Type };
        let mut cur = match path[0].as_str() {
            "crate" if self.rooted => Res::Module(0),
            "crate" => return Res::Outside,
            "self" => Res::Module(self.module_of(from)),
            "super" => match self.modules[self.module_of(from)].parent {
                Some(p) => Res::Module(self.module_of(p)),
                None => return Res::Outside,
            },
            name => self.lookup_scope(from, name, first_ns, depth, memo),
        };
        for (k, seg) in path.iter().enumerate().skip(1) {
            let seg_ns = if k + 1 == path.len() { ns } else { Ns::Type };
            cur = match cur {
                Res::Module(m) if seg == "super" => match self.modules[m].parent {
                    Some(p) => Res::Module(self.module_of(p)),
                    None => Res::Outside,
                },
                Res::Module(m) => self.lookup_in(m, seg, seg_ns, depth, memo),
                Res::Type(t) => self.method(t, seg),
                _ => Res::Outside,
            };
        }
        cur
    }

    /// A name in a scope: its items and imports, then those of the scopes around a block.
    fn lookup_scope(&self, mut m: ModId, name: &str, ns: Ns, depth: usize, memo: &mut Memo) -> Res {
        loop {
            match self.lookup_in(m, name, ns, depth, memo) {
                Res::Outside if self.modules[m].block => m = self.modules[m].parent.unwrap(),
                r => return r,
            }
        }
    }

    /// A name declared or imported in module `m`, looked up once per resolution: a crate
    /// whose modules import each other's globs (faer: `use crate::internal_prelude::*`
    /// everywhere) would otherwise be searched along every chain of globs, exponentially
    /// in their depth. A lookup that a chain of globs comes back to finds nothing there.
    fn lookup_in(&self, m: ModId, name: &str, ns: Ns, depth: usize, memo: &mut Memo) -> Res {
        let key = (m, name.to_string(), ns == Ns::Value);
        if let Some(r) = memo.get(&key) {
            return *r;
        }
        memo.insert(key.clone(), Res::Outside);
        let r = self.lookup_in_module(m, name, ns, depth, memo);
        memo.insert(key, r);
        r
    }

    fn lookup_in_module(&self, m: ModId, name: &str, ns: Ns, depth: usize, memo: &mut Memo) -> Res {
        let fits = |it: &Item| match (it, ns) {
            (Item::Fn(_) | Item::Derived(_) | Item::Const(_) | Item::Value, Ns::Value) => true,
            (Item::Mod(_) | Item::Type(_), Ns::Type) => true,
            // `Type::method(..)`, a unit or tuple struct's constructor.
            (Item::Type(_), Ns::Value) => true,
            _ => false,
        };
        let module = &self.modules[m];
        if let Some((_, it)) = module.items.iter().find(|(n, it)| n == name && fits(it)) {
            return match *it {
                Item::Fn(f) => Res::Fn(f),
                Item::Derived(d) => Res::Derived(d),
                Item::Mod(md) => Res::Module(md),
                Item::Type(t) => Res::Type(t),
                Item::Const(c) => Res::Const(c),
                Item::Value => Res::Outside,
            };
        }
        for u in module.uses.iter().filter(|u| u.name.as_deref() == Some(name)) {
            let r = self.resolve_use(m, &u.path, ns, depth + 1, memo);
            if r != Res::Outside {
                return r;
            }
        }
        for u in module.uses.iter().filter(|u| u.name.is_none()) {
            if let Res::Module(g) = self.resolve_use(m, &u.path, Ns::Type, depth + 1, memo) {
                if g != m {
                    let r = self.lookup_in(g, name, ns, depth + 1, memo);
                    if r != Res::Outside {
                        return r;
                    }
                }
            }
        }
        Res::Outside
    }

    /// The path a `use` item in scope `from` gives `name` (the first that does).
    pub(crate) fn import_path(&self, mut m: ModId, name: &str) -> Option<Vec<String>> {
        loop {
            if let Some(u) = self.modules[m].uses.iter().find(|u| u.name.as_deref() == Some(name)) {
                return Some(u.path.clone());
            }
            match self.modules[m].parent {
                Some(p) if self.modules[m].block => m = p,
                _ => return None,
            }
        }
    }

    /// Whether the first segment of a path names something of this crate in scope `from`
    /// (rather than another crate).
    pub(crate) fn is_local(&self, from: ModId, first: &str) -> bool {
        ["crate", "self", "super", "Self"].contains(&first)
            || self.lookup_scope(from, first, Ns::Type, 0, &mut Memo::default()) != Res::Outside
            || self.lookup_scope(from, first, Ns::Value, 0, &mut Memo::default()) != Res::Outside
    }

    /// A `use` path (2018: from a name in scope, `crate`, `self` or `super`).
    fn resolve_use(&self, m: ModId, path: &[String], ns: Ns, depth: usize, memo: &mut Memo) -> Res {
        self.resolve_depth(m, path, ns, depth, memo)
    }

    /// A method (or associated function) named `name` of type `t`, inherent or from a
    /// trait impl, or a derivative generated beside one. Several trait impls giving `t` the
    /// method (`impl Mul<f64> for V3` and `impl Mul<V3> for V3`) are none: Rust chooses by
    /// the arguments' types, which cotan does not know here.
    pub(crate) fn method(&self, t: TypeId, name: &str) -> Res {
        let mut found = Res::Outside;
        let mut from_traits = 0;
        for (f, def) in self.fns.iter().enumerate() {
            let Some(i) = def.imp else { continue };
            if def.name != name || self.impl_type(i) != Some(t) {
                continue;
            }
            // Inherent methods come before trait methods, as in Rust.
            if self.impls[i].trait_path.is_none() {
                return Res::Fn(f);
            }
            from_traits += 1;
            if found == Res::Outside {
                found = Res::Fn(f);
            }
        }
        if from_traits > 1 {
            return Res::Outside;
        }
        if found == Res::Outside {
            // An associated constant.
            if let Some(c) =
                self.consts.iter().position(|c| c.name == name && c.imp.is_some_and(|i| self.impl_type(i) == Some(t)))
            {
                return Res::Const(c);
            }
            if let Some(d) = self
                .derived
                .iter()
                .position(|d| d.name == name && self.fns[d.of].imp.is_some_and(|i| self.impl_type(i) == Some(t)))
            {
                return Res::Derived(d);
            }
        }
        found
    }

    /// The type of this crate that `p` names in module `m`, if it names one.
    pub(crate) fn type_at(&self, m: ModId, p: &syn::Path) -> Option<TypeId> {
        let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        match self.resolve(m, &segs, Ns::Type) {
            Res::Type(t) => Some(t),
            _ => None,
        }
    }

    /// The type an `impl` block is for, if it is a type of this crate named by a path.
    pub(crate) fn impl_type(&self, i: ImplId) -> Option<TypeId> {
        let syn::Type::Path(p) = &self.impls[i].self_ty else { return None };
        self.type_at(self.impls[i].module, &p.path)
    }

    /// The trait an `impl` block implements, if it is one of this crate.
    pub(crate) fn impl_trait(&self, i: ImplId) -> Option<TypeId> {
        self.type_at(self.impls[i].module, self.impls[i].trait_path.as_ref()?)
    }

    /// A path to `name` in module or block `target`, as written in scope `from`.
    pub(crate) fn path_to(&self, from: ModId, target: ModId, name: &str) -> Option<String> {
        if self.modules[target].block {
            // Items of a function body are reachable by name from inside it only.
            let mut s = from;
            loop {
                if s == target {
                    return Some(name.to_string());
                }
                match self.modules[s].parent {
                    Some(p) if self.modules[s].block => s = p,
                    _ => return None,
                }
            }
        }
        let tp = &self.modules[target].path;
        if self.rooted {
            let mut p = String::from("crate");
            for seg in tp {
                p.push_str("::");
                p.push_str(seg);
            }
            return Some(format!("{p}::{name}"));
        }
        let fp = &self.modules[self.module_of(from)].path;
        let common = fp.iter().zip(tp).take_while(|(a, b)| a == b).count();
        let mut segs: Vec<String> = vec!["super".to_string(); fp.len() - common];
        segs.extend(tp[common..].iter().cloned());
        segs.push(name.to_string());
        Some(segs.join("::"))
    }

    /// A path to type `t` from scope `from`.
    pub(crate) fn type_path(&self, from: ModId, t: TypeId) -> Option<String> {
        self.path_to(from, self.types[t].module, &self.types[t].name)
    }

    /// Whether code in scope `from` may name an item declared in `module` with `vis`.
    pub(crate) fn visible(&self, from: ModId, vis: &Vis) -> bool {
        match vis {
            Vis::Public => true,
            Vis::Within(p) => self.modules[self.module_of(from)].path.starts_with(p),
        }
    }

    /// Whether function `f` exports its derivatives (`#[cotan::differentiable]`, custom and
    /// zero derivatives, or a marked impl).
    pub(crate) fn exports(&self, f: FnId) -> bool {
        let def = &self.fns[f];
        def.imp.is_some_and(|i| self.impls[i].marked)
            || def.item.attrs.iter().any(|a| {
                matches!(crate::attr_name(a).as_str(), "differentiable" | "custom_derivative" | "zero_derivative")
            })
    }

    /// Where a function is, for messages: `src/model.rs:12`.
    pub(crate) fn location(&self, f: FnId) -> String {
        let def = &self.fns[f];
        let file = def.file.as_path();
        let shown = std::env::var_os("CARGO_MANIFEST_DIR")
            .and_then(|d| file.strip_prefix(std::fs::canonicalize(d).ok()?).ok().map(Path::to_path_buf))
            .unwrap_or_else(|| file.to_path_buf());
        format!("{}:{}", shown.display(), def.line)
    }
}

/// The traits `#[derive(..)]` attributes name, by their last name.
fn derived(attrs: &[syn::Attribute]) -> Vec<String> {
    let parse = syn::punctuated::Punctuated::<syn::Path, syn::Token![,]>::parse_terminated;
    attrs
        .iter()
        .filter(|a| a.path().is_ident("derive"))
        .filter_map(|a| a.parse_args_with(parse).ok())
        .flatten()
        .filter_map(|p| p.segments.last().map(|s| s.ident.to_string()))
        .collect()
}

/// The `#[path = "..."]` of a module.
fn path_attr(a: &syn::Attribute) -> Option<String> {
    if !a.path().is_ident("path") {
        return None;
    }
    match &a.meta {
        syn::Meta::NameValue(nv) => match &nv.value {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    }
}

fn use_tree(tree: &syn::UseTree, prefix: Vec<String>, out: &mut Vec<Use>) {
    let with = |name: String| {
        let mut p = prefix.clone();
        p.push(name);
        p
    };
    match tree {
        syn::UseTree::Path(p) => use_tree(&p.tree, with(p.ident.to_string()), out),
        syn::UseTree::Name(n) if n.ident == "self" => {
            if let Some(last) = prefix.last() {
                out.push(Use { name: Some(last.clone()), path: prefix.clone() });
            }
        }
        syn::UseTree::Name(n) => out.push(Use { name: Some(n.ident.to_string()), path: with(n.ident.to_string()) }),
        syn::UseTree::Rename(r) => out.push(Use { name: Some(r.rename.to_string()), path: with(r.ident.to_string()) }),
        syn::UseTree::Glob(_) => out.push(Use { name: None, path: prefix }),
        syn::UseTree::Group(g) => g.items.iter().for_each(|t| use_tree(t, prefix.clone(), out)),
    }
}

/// The crate roots `file` may belong to, most likely first: from Cargo's environment
/// (`CARGO_MANIFEST_DIR`, and `CARGO_CRATE_NAME` for tests, examples, benches and binaries).
/// (A file outside them all is read alone, with paths relative to its top.)
fn candidate_roots(file: &Path) -> Vec<PathBuf> {
    // (Tools have no `CARGO_MANIFEST_DIR`: the package is the one whose manifest is nearest
    // above the file.)
    let Some(dir) = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from).or_else(|| package_dir(file)) else {
        return vec![];
    };
    let mut names = vec![];
    if let Ok(n) = std::env::var("CARGO_CRATE_NAME") {
        names.push(n.replace('_', "-"));
        names.push(n);
    }
    let mut out = vec![];
    for n in &names {
        for p in [
            format!("tests/{n}.rs"),
            format!("examples/{n}.rs"),
            format!("examples/{n}/main.rs"),
            format!("benches/{n}.rs"),
            format!("src/bin/{n}.rs"),
            format!("src/bin/{n}/main.rs"),
        ] {
            out.push(dir.join(p));
        }
    }
    out.push(dir.join("src/lib.rs"));
    out.push(dir.join("src/main.rs"));
    let _ = file;
    out.into_iter().filter(|p| p.is_file()).filter_map(|p| std::fs::canonicalize(p).ok()).collect()
}

/// The sources of the dependency `name` of the crate being compiled (a path dependency, a
/// workspace member or a crate from the registry), if they can be found.
pub(crate) fn dependency(name: &str) -> Option<Rc<Sources>> {
    dependency_near(name, None)
}

/// Like [`dependency`], for the package whose manifest is nearest above `file` (the tools
/// have no `CARGO_MANIFEST_DIR`, or that of another package).
pub(crate) fn dependency_near(name: &str, file: Option<&Path>) -> Option<Rc<Sources>> {
    let dir = match file.and_then(package_dir) {
        Some(d) => d,
        None => PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR")?),
    };
    let root = dependency_dir(&dir, name).and_then(|d| library_root(&d))?;
    Sources::cached(&std::fs::canonicalize(root).ok()?, true)
}

/// The directory of the package `file` is in: the nearest above it with a manifest.
fn package_dir(file: &Path) -> Option<PathBuf> {
    file.ancestors().skip(1).find(|d| d.join("Cargo.toml").is_file()).map(Path::to_path_buf)
}

fn manifest(dir: &Path) -> Option<toml_edit::DocumentMut> {
    std::fs::read_to_string(dir.join("Cargo.toml")).ok()?.parse().ok()
}

/// Where the package of dependency `name` (as the code names it) of the package in `dir` is.
fn dependency_dir(dir: &Path, name: &str) -> Option<PathBuf> {
    let doc = manifest(dir)?;
    let tables = ["dependencies", "dev-dependencies", "build-dependencies"];
    for t in tables {
        let Some(deps) = doc.get(t).and_then(|d| d.as_table_like()) else { continue };
        for (key, spec) in deps.iter() {
            let package = spec.get("package").and_then(|p| p.as_str()).unwrap_or(key);
            if key.replace('-', "_") != name {
                continue;
            }
            if let Some(path) = spec.get("path").and_then(|p| p.as_str()) {
                return Some(dir.join(path));
            }
            if spec.get("workspace").and_then(|w| w.as_bool()) == Some(true) {
                return workspace_dependency(dir, key);
            }
            return registry_dir(dir, package);
        }
    }
    None
}

/// A dependency the workspace declares (`name = { workspace = true }` in a member).
fn workspace_dependency(dir: &Path, key: &str) -> Option<PathBuf> {
    let ws = dir.ancestors().skip(1).find(|d| manifest(d).is_some_and(|m| m.get("workspace").is_some()))?;
    let doc = manifest(ws)?;
    let spec = doc.get("workspace")?.get("dependencies")?.get(key)?;
    match spec.get("path").and_then(|p| p.as_str()) {
        Some(path) => Some(ws.join(path)),
        None => registry_dir(ws, spec.get("package").and_then(|p| p.as_str()).unwrap_or(key)),
    }
}

/// A registry crate's unpacked sources, at the version the lock file holds.
fn registry_dir(dir: &Path, package: &str) -> Option<PathBuf> {
    let lock = dir.ancestors().map(|d| d.join("Cargo.lock")).find(|p| p.is_file())?;
    let doc: toml_edit::DocumentMut = std::fs::read_to_string(lock).ok()?.parse().ok()?;
    let version = doc
        .get("package")?
        .as_array_of_tables()?
        .iter()
        .find(|p| p.get("name").and_then(|n| n.as_str()) == Some(package))?
        .get("version")?
        .as_str()?
        .to_string();
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    std::fs::read_dir(home.join("registry/src"))
        .ok()?
        .flatten()
        .map(|index| index.path().join(format!("{package}-{version}")))
        .find(|p| p.is_dir())
}

/// The library target's root file of the package in `dir`.
fn library_root(dir: &Path) -> Option<PathBuf> {
    let declared =
        manifest(dir).and_then(|m| m.get("lib")?.get("path")?.as_str().map(str::to_string)).map(|p| dir.join(p));
    declared.or_else(|| Some(dir.join("src/lib.rs"))).filter(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Modules that import each other's globs, as faer's do: a name is looked up once per
    /// module, not along every chain of globs (which did not finish).
    #[test]
    fn glob_cycles() {
        let n = 12;
        let globs: String = (0..n).map(|j| format!("pub use super::m{j}::*; ")).collect();
        let text: String = (0..n).map(|k| format!("mod m{k} {{ {globs} pub fn f{k}() {{}} }}\n")).collect();
        let s = Sources::from_text(Path::new("glob_cycles.rs"), &text).expect("parses");
        let start = std::time::Instant::now();
        let path = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(s.resolve(0, &path(&["m3", "missing"]), Ns::Value), Res::Outside);
        let Res::Fn(f) = s.resolve(0, &path(&["m3", "f7"]), Ns::Value) else { panic!("`f7` through a glob") };
        assert_eq!(s.fns[f].name, "f7");
        assert!(start.elapsed() < std::time::Duration::from_secs(5), "{:?}", start.elapsed());
    }
}
