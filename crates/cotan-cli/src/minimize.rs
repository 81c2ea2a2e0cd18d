//! `cotan minimize`: greedy delta debugging on the syntax tree of the whole file. Candidate
//! edits, biggest first (whole items, whole statements, then expressions, literals and
//! inputs), are tried to a fixpoint; an edit is kept when the program gets shorter and its
//! check still fails with the same signature (kind and argument). Each check runs
//! in-process through the interpreter, with a step limit, so a candidate that loops forever
//! just fails.

use std::collections::HashSet;
use std::time::Instant;

use quote::ToTokens;
use serde_json::Value as Json;
use syn::visit_mut::VisitMut;

use crate::checker::{self, Points, Signature};
use crate::source::Source;
use crate::CliError;

pub struct Minimized {
    pub program: String,
    pub before_lines: usize,
    pub after_lines: usize,
    pub seconds: f64,
    pub steps: Vec<String>,
    pub signature: Signature,
    pub detail: String,
    pub at: String,
    pub tried: usize,
    pub changed_character: usize,
    pub out_of_time: bool,
    /// rustc's first error on the minimized program, if rustc is found and rejects it:
    /// cotan accepts some code rustc does not, and the reduction may reach it.
    pub rustc_error: Option<String>,
}

struct State<'a> {
    name: &'a str,
    sig: Signature,
    file: syn::File,
    at: Vec<Json>,
    size: usize,
    steps: Vec<String>,
    tried: usize,
    changed_character: usize,
    detail: String,
    bar: Option<indicatif::ProgressBar>,
    start: Instant,
    /// A program whose every check is slow stops being reduced after this long.
    budget: std::time::Duration,
    out_of_time: bool,
    /// Functions with a custom or zero derivative and their rules: the user's derivatives
    /// are what is under test, so they are kept as written (editing them would plant a
    /// different bug).
    protected: HashSet<String>,
}

/// The size that must shrink with every kept step: the program's text, its inputs, and a
/// price per parameter of the checked function, so that pinning an input (a `let` in place
/// of a parameter) counts as progress.
fn measure(file: &syn::File, name: &str, at: &[Json]) -> usize {
    let params = Source::of(file).function(name).map_or(0, |f| f.sig.inputs.len());
    let text = pretty(file);
    // Lines first: a step that saves a line may lengthen one.
    1000 * text.lines().count() + text.len() + Json::Array(at.to_vec()).to_string().len() + 2000 * params
}

/// The function's name in a `--fn` path (`out` of `Layer::out`).
fn ident(name: &str) -> &str {
    name.rsplit("::").next().unwrap_or(name)
}

fn pretty(file: &syn::File) -> String {
    prettyplease::unparse(file)
}

fn short(tokens: &impl ToTokens) -> String {
    let s = tokens.to_token_stream().to_string();
    if s.len() > 60 {
        format!("{}...", &s[..s.char_indices().nth(57).map_or(s.len(), |c| c.0)])
    } else {
        s
    }
}

impl State<'_> {
    /// Keeps `file`/`at` if they are smaller and fail the same way.
    fn attempt(&mut self, file: syn::File, at: Vec<Json>, what: impl FnOnce() -> String) -> bool {
        if self.start.elapsed() > self.budget {
            self.out_of_time = true;
            return false;
        }
        let size = measure(&file, self.name, &at);
        if size >= self.size {
            return false;
        }
        self.tried += 1;
        if let Some(bar) = &self.bar {
            bar.set_message(format!(
                "{} lines, {} steps, {} candidates tried",
                pretty(&self.file).lines().count(),
                self.steps.len(),
                self.tried
            ));
            bar.tick();
        }
        match failure_of(&file, self.name, &at) {
            Some((sig, detail, all_same_kind)) if sig == self.sig || all_same_kind.contains(&self.sig) => {
                if all_same_kind.iter().any(|s| s.0 != self.sig.0) {
                    self.changed_character += 1;
                    return false;
                }
                self.file = file;
                self.at = at;
                self.size = size;
                self.detail = detail;
                self.steps.push(what());
                true
            }
            Some(_) => {
                self.changed_character += 1;
                false
            }
            None => false,
        }
    }
}

/// The first failure's signature and detail, and all signatures, or `None` if the candidate
/// passes or is not a valid program.
fn failure_of(file: &syn::File, name: &str, at: &[Json]) -> Option<(Signature, String, Vec<Signature>)> {
    let src = Source::reparsed(file).ok()?;
    let at = Json::Array(at.to_vec()).to_string();
    let run = || {
        let p = checker::prepare(&src, name).ok()?;
        let r = checker::check(&p, &Points { at: Some(&at), trials: 1, seed: 0, len: 5 }).ok()?;
        let first = r.failures.first()?;
        Some((first.signature(), first.detail.clone(), r.failures.iter().map(|f| f.signature()).collect()))
    };
    // An engine panic on a candidate only rejects the candidate.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).ok().flatten()
}

pub fn minimize(src: &Source, name: &str, points: &Points, progress: bool) -> Result<Minimized, CliError> {
    let start = Instant::now();
    let prepared = checker::prepare(src, name)?;
    let report = checker::check(&prepared, points)?;
    let Some(first) = report.failures.first() else {
        return Err(CliError::new(format!("`{name}` passes the check; there is no failure to minimize")));
    };
    let at: Vec<Json> = match serde_json::from_str(&report.point) {
        Ok(Json::Array(a)) => a,
        _ => return Err(CliError::new("internal error: the failing point is not a JSON array")),
    };
    let before = pretty(&src.file);
    let bar = progress.then(|| {
        let b = indicatif::ProgressBar::new_spinner();
        b.set_draw_target(indicatif::ProgressDrawTarget::stderr());
        b.enable_steady_tick(std::time::Duration::from_millis(100));
        b
    });
    let previous_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut st = State {
        name,
        sig: first.signature(),
        size: measure(&src.file, name, &at) + 1,
        file: src.file.clone(),
        at,
        steps: vec![],
        tried: 0,
        changed_character: 0,
        detail: first.detail.clone(),
        bar,
        start,
        budget: std::time::Duration::from_secs(120),
        out_of_time: false,
        protected: protected(src),
    };
    loop {
        let size = st.size;
        extract_calls(&mut st);
        remove_attributes(&mut st);
        remove_items(&mut st);
        delete_statements(&mut st);
        inline_calls(&mut st);
        flatten_blocks(&mut st);
        inline_lets(&mut st);
        replace_expressions(&mut st);
        pin_inputs(&mut st);
        shrink_inputs(&mut st);
        drop_helper_params(&mut st);
        if st.size == size || st.out_of_time {
            break;
        }
    }
    std::panic::set_hook(previous_hook);
    if let Some(bar) = &st.bar {
        bar.finish_and_clear();
    }
    let program = pretty(&st.file);
    let rustc_error = rustc_rejects(&program);
    Ok(Minimized {
        rustc_error,
        before_lines: if src.lines > 0 { src.lines } else { before.lines().count() },
        after_lines: program.lines().count(),
        program,
        seconds: start.elapsed().as_secs_f64(),
        steps: st.steps,
        signature: st.sig,
        detail: st.detail,
        at: Json::Array(st.at).to_string(),
        tried: st.tried,
        changed_character: st.changed_character,
        out_of_time: st.out_of_time,
    })
}

/// rustc's first error on `program` as a library, or `None` if rustc accepts it or cannot
/// be run (`$RUSTC`, else `rustc` on the path).
fn rustc_rejects(program: &str) -> Option<String> {
    let dir = std::env::temp_dir().join(format!("cotan-minimize-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let file = dir.join("minimized.rs");
    // Without cotan's attributes, derives and imports, which rustc alone cannot resolve.
    let mut tree = syn::parse_file(program).ok()?;
    WithoutCotan.visit_file_mut(&mut tree);
    std::fs::write(&file, prettyplease::unparse(&tree)).ok()?;
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = std::process::Command::new(rustc)
        .args(["--edition", "2021", "--crate-type", "lib", "--emit=metadata", "-A", "warnings", "-o"])
        .arg(dir.join("minimized.rmeta"))
        .arg(&file)
        .output()
        .ok()?;
    let _ = std::fs::remove_dir_all(&dir);
    if out.status.success() {
        return None;
    }
    let err = String::from_utf8_lossy(&out.stderr).lines().find(|l| l.starts_with("error")).map(str::to_string);
    Some(err.unwrap_or_else(|| "an error".into()))
}

/// Removes what names the `cotan` crate: its attributes, `cotan::Differentiable` in derives,
/// `use cotan::..`.
struct WithoutCotan;

impl WithoutCotan {
    fn clean(attrs: &mut Vec<syn::Attribute>) {
        const COTAN: [&str; 8] = [
            "custom_derivative",
            "zero_derivative",
            "differentiable",
            "autodiff_forward",
            "autodiff_reverse",
            "autodiff_split",
            "hvp",
            "hessian",
        ];
        attrs.retain(|a| !COTAN.contains(&crate::source::attr_name(a).as_str()));
        for a in attrs.iter_mut() {
            if !a.path().is_ident("derive") {
                continue;
            }
            type Paths = syn::punctuated::Punctuated<syn::Path, syn::Token![,]>;
            if let Ok(paths) = a.parse_args_with(Paths::parse_terminated) {
                let kept: Vec<syn::Path> = paths
                    .into_iter()
                    .filter(|p| p.segments.last().is_none_or(|s| s.ident != "Differentiable"))
                    .collect();
                *a = syn::parse_quote!(#[derive(#(#kept),*)]);
            }
        }
    }
}

impl VisitMut for WithoutCotan {
    fn visit_file_mut(&mut self, f: &mut syn::File) {
        f.items.retain(|i| !matches!(i, syn::Item::Use(u) if quote::ToTokens::to_token_stream(&u.tree).to_string().starts_with("cotan")));
        syn::visit_mut::visit_file_mut(self, f);
    }
    fn visit_item_mod_mut(&mut self, m: &mut syn::ItemMod) {
        if let Some((_, items)) = &mut m.content {
            items.retain(|i| !matches!(i, syn::Item::Use(u) if quote::ToTokens::to_token_stream(&u.tree).to_string().starts_with("cotan")));
        }
        syn::visit_mut::visit_item_mod_mut(self, m);
    }
    fn visit_item_fn_mut(&mut self, f: &mut syn::ItemFn) {
        WithoutCotan::clean(&mut f.attrs);
        syn::visit_mut::visit_item_fn_mut(self, f);
    }
    fn visit_impl_item_fn_mut(&mut self, f: &mut syn::ImplItemFn) {
        WithoutCotan::clean(&mut f.attrs);
        syn::visit_mut::visit_impl_item_fn_mut(self, f);
    }
    fn visit_trait_item_fn_mut(&mut self, f: &mut syn::TraitItemFn) {
        WithoutCotan::clean(&mut f.attrs);
        syn::visit_mut::visit_trait_item_fn_mut(self, f);
    }
    fn visit_item_impl_mut(&mut self, i: &mut syn::ItemImpl) {
        WithoutCotan::clean(&mut i.attrs);
        syn::visit_mut::visit_item_impl_mut(self, i);
    }
    fn visit_item_trait_mut(&mut self, t: &mut syn::ItemTrait) {
        WithoutCotan::clean(&mut t.attrs);
        syn::visit_mut::visit_item_trait_mut(self, t);
    }
    fn visit_item_struct_mut(&mut self, st: &mut syn::ItemStruct) {
        WithoutCotan::clean(&mut st.attrs);
        syn::visit_mut::visit_item_struct_mut(self, st);
    }
    fn visit_item_enum_mut(&mut self, e: &mut syn::ItemEnum) {
        WithoutCotan::clean(&mut e.attrs);
        syn::visit_mut::visit_item_enum_mut(self, e);
    }
}

pub fn render(m: &Minimized) -> String {
    let mut s = m.program.clone();
    s += &format!("\n// still fails: [{}, {}] {}: {}\n", m.signature.0.name(), m.signature.2, m.signature.1, m.detail);
    s += &format!("// at: {}\n", m.at);
    s += &format!(
        "// {} -> {} lines in {:.1} s: {} steps kept of {} candidates checked ({} rejected because the failure changed character)\n",
        m.before_lines,
        m.after_lines,
        m.seconds,
        m.steps.len(),
        m.tried,
        m.changed_character
    );
    if m.out_of_time {
        s += "// stopped at the time budget (120 s); run minimize again on the output to go on\n";
    }
    if let Some(e) = &m.rustc_error {
        s += &format!("// rustc rejects this program ({e}): cotan accepted a step rustc would not; fix it by hand\n");
    }
    for step in &m.steps {
        s += &format!("//   {step}\n");
    }
    s
}

/// The functions whose bodies are never edited: see [`State::protected`].
fn protected(src: &Source) -> HashSet<String> {
    let mut out = HashSet::new();
    for f in src.functions() {
        for a in &f.attrs {
            let name = crate::source::attr_name(a);
            if name == "custom_derivative" || name == "zero_derivative" {
                out.insert(f.sig.ident.to_string());
                if let syn::Meta::List(l) = &a.meta {
                    let rules = l.parse_args_with(
                        syn::punctuated::Punctuated::<syn::MetaNameValue, syn::Token![,]>::parse_terminated,
                    );
                    for nv in rules.into_iter().flatten() {
                        if let syn::Expr::Path(p) = &nv.value {
                            if let Some(last) = p.path.segments.last() {
                                out.insert(last.ident.to_string());
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// Is this one of the functions whose body is kept?
fn is_protected(set: &HashSet<String>, f: &syn::ItemFn) -> bool {
    set.contains(&f.sig.ident.to_string())
}

// ---- attributes: documentation and autodiff attributes (the check needs neither) ----

fn removable(a: &syn::Attribute) -> bool {
    let name = crate::source::attr_name(a);
    name == "doc" || name.starts_with("autodiff_") || name == "allow"
}

fn remove_attributes(st: &mut State) {
    if !st.file.attrs.is_empty() {
        let mut file = st.file.clone();
        file.attrs.clear();
        st.attempt(file, st.at.clone(), || "removed the file's attributes".to_string());
    }
    let mut k = 0;
    while k < st.file.items.len() {
        let mut file = st.file.clone();
        let what = match &mut file.items[k] {
            syn::Item::Fn(f) if f.attrs.iter().any(removable) => {
                f.attrs.retain(|a| !removable(a));
                format!("removed documentation and autodiff attributes of `{}`", f.sig.ident)
            }
            _ => {
                k += 1;
                continue;
            }
        };
        st.attempt(file, st.at.clone(), || what);
        k += 1;
    }
}

// ---- whole items ----

fn remove_items(st: &mut State) {
    let mut k = 0;
    while k < st.file.items.len() {
        let item = &st.file.items[k];
        if matches!(item, syn::Item::Fn(f) if f.sig.ident == ident(st.name)) {
            k += 1;
            continue;
        }
        let what = format!("removed item `{}`", item_name(item));
        let mut file = st.file.clone();
        file.items.remove(k);
        if !st.attempt(file, st.at.clone(), || what) {
            k += 1;
        }
    }
}

fn item_name(item: &syn::Item) -> String {
    match item {
        syn::Item::Fn(f) => format!("fn {}", f.sig.ident),
        syn::Item::Mod(m) => format!("mod {}", m.ident),
        other => short(other),
    }
}

// ---- statements ----

/// Deletes the `target`-th statement (pre-order); records what it deleted.
struct DeleteStmt<'a> {
    protected: &'a HashSet<String>,
    target: usize,
    count: usize,
    deleted: Option<String>,
}

impl VisitMut for DeleteStmt<'_> {
    fn visit_item_fn_mut(&mut self, f: &mut syn::ItemFn) {
        if !is_protected(self.protected, f) {
            syn::visit_mut::visit_item_fn_mut(self, f);
        }
    }

    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        let mut k = 0;
        while k < b.stmts.len() {
            if self.deleted.is_some() {
                return;
            }
            if self.count == self.target {
                self.deleted = Some(short(&b.stmts[k]));
                b.stmts.remove(k);
                return;
            }
            self.count += 1;
            self.visit_stmt_mut(&mut b.stmts[k]);
            k += 1;
        }
    }
}

fn delete_statements(st: &mut State) {
    let mut k = 0;
    loop {
        let mut file = st.file.clone();
        let mut v = DeleteStmt { protected: &st.protected, target: k, count: 0, deleted: None };
        v.visit_file_mut(&mut file);
        let Some(what) = v.deleted else { return };
        if !st.attempt(file, st.at.clone(), || format!("deleted statement `{what}`")) {
            k += 1;
        }
    }
}

// ---- expressions ----

/// Smaller expressions that might replace `e`.
fn replacements(e: &syn::Expr) -> Vec<syn::Expr> {
    use syn::Expr as E;
    let strip = |e: &syn::Expr| match e {
        E::Reference(r) => (*r.expr).clone(),
        e => e.clone(),
    };
    let mut out: Vec<syn::Expr> = vec![];
    match e {
        E::Binary(b) => {
            out.push((*b.left).clone());
            out.push((*b.right).clone());
        }
        E::Unary(u) => out.push((*u.expr).clone()),
        E::ForLoop(f) => out.push(E::Block(syn::ExprBlock { attrs: vec![], label: None, block: f.body.clone() })),
        E::While(w) => out.push(E::Block(syn::ExprBlock { attrs: vec![], label: None, block: w.body.clone() })),
        E::Block(b) => {
            if let Some(syn::Stmt::Expr(e, _)) = b.block.stmts.last() {
                out.push(e.clone());
            }
        }
        E::Paren(p) => out.push((*p.expr).clone()),
        E::MethodCall(m) => {
            // The receiver, where it has the call's type: a float method's (`x.sin()`), or an
            // adapter's that keeps the items (`.rev()`); not `x.iter()` or `it.enumerate()`,
            // which rustc would reject in its place.
            let method = m.method.to_string();
            let keeps_type = cotan_ir::MathFn::from_name(&method).is_some()
                || ["rev", "skip", "take", "step_by", "filter"].contains(&method.as_str());
            if keeps_type {
                out.push((*m.receiver).clone());
            }
            out.extend(m.args.iter().cloned());
        }
        E::Call(c) => out.extend(c.args.iter().map(strip)),
        E::If(i) => {
            out.push(E::Block(syn::ExprBlock { attrs: vec![], label: None, block: i.then_branch.clone() }));
            if let Some((_, e)) = &i.else_branch {
                out.push((**e).clone());
            }
        }
        E::Lit(l) => {
            match &l.lit {
                syn::Lit::Float(f) if !matches!(f.base10_digits(), "0.0" | "1.0" | "0") => {
                    out.push(syn::parse_quote!(1.0));
                }
                syn::Lit::Int(i) => {
                    if let Ok(n) = i.base10_parse::<u64>() {
                        let suffix = i.suffix();
                        for m in [0, 1, n / 2, n - n.min(1)] {
                            if m < n {
                                let lit = syn::LitInt::new(&format!("{m}{suffix}"), i.span());
                                out.push(E::Lit(syn::ExprLit { attrs: vec![], lit: syn::Lit::Int(lit) }));
                            }
                        }
                    }
                }
                _ => {}
            }
            return out;
        }
        _ => {}
    }
    if !matches!(e, E::Path(_) | E::Lit(_) | E::Range(_) | E::Reference(_) | E::Block(_) | E::ForLoop(_) | E::While(_))
    {
        out.push(syn::parse_quote!(1.0));
        out.push(syn::parse_quote!(0.0));
    }
    out
}

/// Counts expressions in pre-order; at `target`, either lists replacements or applies one.
struct AtExpr<'a> {
    protected: &'a HashSet<String>,
    target: usize,
    count: usize,
    apply: Option<syn::Expr>,
    found: Option<(String, Vec<syn::Expr>)>,
}

impl VisitMut for AtExpr<'_> {
    fn visit_item_fn_mut(&mut self, f: &mut syn::ItemFn) {
        if !is_protected(self.protected, f) {
            syn::visit_mut::visit_item_fn_mut(self, f);
        }
    }

    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        if self.found.is_some() {
            return;
        }
        if self.count == self.target {
            self.found = Some((short(e), replacements(e)));
            if let Some(r) = self.apply.take() {
                *e = r;
            }
            return;
        }
        self.count += 1;
        syn::visit_mut::visit_expr_mut(self, e);
    }
}

fn replace_expressions(st: &mut State) {
    let mut k = 0;
    loop {
        let mut probe = AtExpr { protected: &st.protected, target: k, count: 0, apply: None, found: None };
        probe.visit_file_mut(&mut st.file.clone());
        let Some((what, reps)) = probe.found else { return };
        let mut kept = false;
        for r in reps {
            let mut file = st.file.clone();
            let by = short(&r);
            let mut v = AtExpr { protected: &st.protected, target: k, count: 0, apply: Some(r), found: None };
            v.visit_file_mut(&mut file);
            if st.attempt(file, st.at.clone(), || format!("replaced `{what}` by `{by}`")) {
                kept = true;
                break;
            }
        }
        if !kept {
            k += 1;
        }
    }
}

// ---- calls ----

/// The biggest jump: the checked function's body becomes one of the calls it makes (directly),
/// with arguments made of its own parameters (`x`, `xs[0]`, `xs`).
fn extract_calls(st: &mut State) {
    let Ok(target) = Source::of(&st.file).function(st.name) else { return };
    let fns = Source::of(&st.file).functions();
    let mut calls = CollectCalls { names: fns.iter().map(|f| f.sig.ident.to_string()).collect(), calls: vec![] };
    calls.visit_block_mut(&mut (*target.block).clone());
    let params: Vec<(syn::Ident, Option<cotan_ir::Ty>)> = target
        .sig
        .inputs
        .iter()
        .filter_map(|a| match a {
            syn::FnArg::Typed(pt) => match &*pt.pat {
                syn::Pat::Ident(pi) => Some((pi.ident.clone(), cotan_syntax::param_type(&pt.ty))),
                _ => None,
            },
            _ => None,
        })
        .collect();
    for (callee, n_args) in calls.calls {
        let Some(f) = fns.iter().find(|f| f.sig.ident == callee) else { continue };
        // Candidate arguments per parameter of the callee, from the caller's parameters.
        let mut choices: Vec<Vec<syn::Expr>> = vec![];
        for a in f.sig.inputs.iter().take(n_args) {
            let syn::FnArg::Typed(pt) = a else { return };
            let want = cotan_syntax::param_type(&pt.ty);
            let mut c: Vec<syn::Expr> = vec![];
            for (p, ty) in &params {
                match (want, ty) {
                    (Some(cotan_ir::Ty::Scalar(w)), Some(cotan_ir::Ty::Scalar(t))) if w == *t => {
                        c.push(syn::parse_quote!(#p))
                    }
                    (Some(cotan_ir::Ty::Scalar(w)), Some(cotan_ir::Ty::Mem(m))) if w == m.elem => {
                        c.push(syn::parse_quote!(#p[0]))
                    }
                    (Some(cotan_ir::Ty::Mem(w)), Some(cotan_ir::Ty::Mem(m)))
                        if w.elem == m.elem && (w.access == cotan_ir::Access::Shared || m.is_writable()) =>
                    {
                        c.push(syn::parse_quote!(#p))
                    }
                    _ => {}
                }
            }
            if c.is_empty() {
                c.push(match want {
                    Some(cotan_ir::Ty::Scalar(s)) if s.is_float() => syn::parse_quote!(1.0),
                    Some(cotan_ir::Ty::Scalar(s)) if s.is_int() => syn::parse_quote!(1),
                    _ => syn::parse_quote!(&[1.0]),
                });
            }
            choices.push(c);
        }
        // The first few combinations, in order.
        let mut combos: Vec<Vec<syn::Expr>> = vec![vec![]];
        for c in &choices {
            combos = combos
                .iter()
                .flat_map(|pre| c.iter().map(move |x| [pre.clone(), vec![x.clone()]].concat()))
                .take(8)
                .collect();
        }
        for args in combos {
            let mut file = st.file.clone();
            let Some(t) = target_fn(&mut file, st.name) else { return };
            let call: syn::Expr = syn::parse_quote!(#callee(#(#args),*));
            t.block.stmts = vec![syn::Stmt::Expr(call.clone(), None)];
            let what = format!("reduced `{}` to the call `{}`", st.name, short(&call));
            if st.attempt(file, st.at.clone(), || what) {
                return;
            }
        }
    }
}

/// Calls of functions of the file: callee and number of arguments.
struct CollectCalls {
    names: Vec<String>,
    calls: Vec<(syn::Ident, usize)>,
}

impl VisitMut for CollectCalls {
    fn visit_expr_call_mut(&mut self, c: &mut syn::ExprCall) {
        if let syn::Expr::Path(p) = &*c.func {
            if let Some(last) = p.path.segments.last() {
                if self.names.iter().any(|n| last.ident == n) {
                    self.calls.push((last.ident.clone(), c.args.len()));
                }
            }
        }
        syn::visit_mut::visit_expr_call_mut(self, c);
    }
}

/// Replaces the `target`-th call of a function of the file by its body, with the
/// parameters bound by `let`.
struct Inline<'a> {
    protected: &'a HashSet<String>,
    fns: &'a [syn::ItemFn],
    target: usize,
    count: usize,
    done: Option<String>,
}

impl VisitMut for Inline<'_> {
    fn visit_item_fn_mut(&mut self, f: &mut syn::ItemFn) {
        if !is_protected(self.protected, f) {
            syn::visit_mut::visit_item_fn_mut(self, f);
        }
    }

    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        if self.done.is_some() {
            return;
        }
        if let syn::Expr::Call(c) = e {
            let callee = match &*c.func {
                syn::Expr::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
                _ => None,
            };
            if let Some(f) = callee.and_then(|n| self.fns.iter().find(|f| f.sig.ident == n)) {
                if self.count == self.target {
                    // Parameters are replaced by the arguments (without `&`/`&mut`).
                    let mut body = (*f.block).clone();
                    let mut subst = Subst { map: vec![] };
                    for (p, a) in f.sig.inputs.iter().zip(&c.args) {
                        if let (syn::FnArg::Typed(pt), syn::Pat::Ident(pi)) = (p, &*pt_pat(p)) {
                            let _ = pt;
                            let a = match a {
                                syn::Expr::Reference(r) => (*r.expr).clone(),
                                a => a.clone(),
                            };
                            let a = match a {
                                syn::Expr::Path(_) | syn::Expr::Lit(_) => a,
                                a => syn::parse_quote!((#a)),
                            };
                            subst.map.push((pi.ident.to_string(), a));
                        }
                    }
                    subst.visit_block_mut(&mut body);
                    let stmts = body.stmts;
                    self.done = Some(format!("inlined the call `{}`", short(c)));
                    *e = syn::Expr::Block(syn::ExprBlock {
                        attrs: vec![],
                        label: None,
                        block: syn::Block { brace_token: Default::default(), stmts },
                    });
                    return;
                }
                self.count += 1;
            }
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
}

fn inline_calls(st: &mut State) {
    let mut k = 0;
    loop {
        let fns = Source::of(&st.file).functions();
        let mut file = st.file.clone();
        let mut v = Inline { protected: &st.protected, fns: &fns, target: k, count: 0, done: None };
        v.visit_file_mut(&mut file);
        let Some(what) = v.done else { return };
        // A callee no longer called goes in the same step, or the step would grow the file.
        for f in &fns {
            let mut calls = CountCalls { name: f.sig.ident.to_string(), n: 0 };
            calls.visit_file_mut(&mut file.clone());
            if calls.n == 0 && f.sig.ident != ident(st.name) && !is_protected(&st.protected, f) {
                file.items.retain(|i| !matches!(i, syn::Item::Fn(g) if g.sig.ident == f.sig.ident));
            }
        }
        if !st.attempt(file, st.at.clone(), || what) {
            k += 1;
        }
    }
}

struct CountCalls {
    name: String,
    n: usize,
}

impl VisitMut for CountCalls {
    fn visit_expr_call_mut(&mut self, c: &mut syn::ExprCall) {
        if let syn::Expr::Path(p) = &*c.func {
            if p.path.segments.last().is_some_and(|s| s.ident == self.name) {
                self.n += 1;
            }
        }
        syn::visit_mut::visit_expr_call_mut(self, c);
    }
}

/// Splices the `target`-th block statement `{ .. }` into the enclosing block.
struct Flatten<'a> {
    protected: &'a HashSet<String>,
    target: usize,
    count: usize,
    done: bool,
}

impl VisitMut for Flatten<'_> {
    fn visit_item_fn_mut(&mut self, f: &mut syn::ItemFn) {
        if !is_protected(self.protected, f) {
            syn::visit_mut::visit_item_fn_mut(self, f);
        }
    }
    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        for k in 0..b.stmts.len() {
            if self.done {
                return;
            }
            if let syn::Stmt::Expr(syn::Expr::Block(inner), _) = &b.stmts[k] {
                if inner.label.is_none() && k + 1 < b.stmts.len() {
                    if self.count == self.target {
                        let inner = inner.block.stmts.clone();
                        b.stmts.splice(k..=k, inner);
                        self.done = true;
                        return;
                    }
                    self.count += 1;
                }
            }
            self.visit_stmt_mut(&mut b.stmts[k]);
        }
    }
}

/// Replaces the `target`-th `let x = e;` by substituting `e` for `x` in the statements after it.
struct InlineLet {
    target: usize,
    count: usize,
    done: Option<String>,
}

impl VisitMut for InlineLet {
    // Substituting a `let` keeps what a function computes, so the user's rules get it too.
    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        for k in 0..b.stmts.len() {
            if self.done.is_some() {
                return;
            }
            if let syn::Stmt::Local(l) = &b.stmts[k] {
                let ident = match &l.pat {
                    syn::Pat::Ident(pi) => Some(pi.ident.to_string()),
                    syn::Pat::Type(pt) => match &*pt.pat {
                        syn::Pat::Ident(pi) => Some(pi.ident.to_string()),
                        _ => None,
                    },
                    _ => None,
                };
                if let (Some(ident), Some(init)) = (ident, &l.init) {
                    if self.count == self.target {
                        let e = &init.expr;
                        let e: syn::Expr = match &**e {
                            syn::Expr::Path(_)
                            | syn::Expr::Lit(_)
                            | syn::Expr::MethodCall(_)
                            | syn::Expr::Call(_)
                            | syn::Expr::Index(_)
                            | syn::Expr::Paren(_) => (**e).clone(),
                            e => syn::parse_quote!((#e)),
                        };
                        self.done = Some(format!("substituted `{ident}` by its value"));
                        let mut subst = Subst { map: vec![(ident, e)] };
                        b.stmts.remove(k);
                        for st in &mut b.stmts[k..] {
                            subst.visit_stmt_mut(st);
                        }
                        return;
                    }
                    self.count += 1;
                }
            }
            self.visit_stmt_mut(&mut b.stmts[k]);
        }
    }
}

fn inline_lets(st: &mut State) {
    let mut k = 0;
    loop {
        let mut file = st.file.clone();
        let mut v = InlineLet { target: k, count: 0, done: None };
        v.visit_file_mut(&mut file);
        let Some(what) = v.done else { return };
        if !st.attempt(file, st.at.clone(), || what) {
            k += 1;
        }
    }
}

fn flatten_blocks(st: &mut State) {
    let mut k = 0;
    loop {
        let mut file = st.file.clone();
        let mut v = Flatten { protected: &st.protected, target: k, count: 0, done: false };
        v.visit_file_mut(&mut file);
        if !v.done {
            return;
        }
        if !st.attempt(file, st.at.clone(), || "spliced a block into its enclosing block".to_string()) {
            k += 1;
        }
    }
}

fn pt_pat(p: &syn::FnArg) -> Box<syn::Pat> {
    match p {
        syn::FnArg::Typed(pt) => pt.pat.clone(),
        syn::FnArg::Receiver(_) => Box::new(syn::parse_quote!(_)),
    }
}

/// Replaces single-identifier paths by expressions.
struct Subst {
    map: Vec<(String, syn::Expr)>,
}

impl VisitMut for Subst {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        if let syn::Expr::Path(p) = e {
            if let Some(id) = p.path.get_ident() {
                if let Some((_, a)) = self.map.iter().find(|(n, _)| id == n) {
                    *e = a.clone();
                    return;
                }
            }
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
}

// ---- inputs ----

/// The checked function, if it is at the top of the file (a method or a function in a module
/// is not edited as one).
fn target_fn<'a>(file: &'a mut syn::File, name: &str) -> Option<&'a mut syn::ItemFn> {
    file.items.iter_mut().find_map(|i| match i {
        syn::Item::Fn(f) if f.sig.ident == name => Some(f),
        _ => None,
    })
}

/// Replaces a parameter of the checked function by a `let` with its value at the failing point.
fn pin_inputs(st: &mut State) {
    let mut k = 0;
    loop {
        let mut file = st.file.clone();
        let Some(f) = target_fn(&mut file, st.name) else { return };
        if k >= f.sig.inputs.len() || k >= st.at.len() {
            return;
        }
        let syn::FnArg::Typed(pt) = &f.sig.inputs[k] else { return };
        let (pat, ty) = (pt.pat.clone(), pt.ty.clone());
        let value = st.at[k].clone();
        let value = &value;
        let init: Option<syn::Expr> = match (&*ty, value) {
            (syn::Type::Reference(r), Json::Array(items)) if r.mutability.is_none() => {
                let lits: Vec<syn::Expr> = items.iter().filter_map(literal).collect();
                (lits.len() == items.len()).then(|| syn::parse_quote!(&[#(#lits),*]))
            }
            (syn::Type::Path(_), v) => literal(v),
            _ => None,
        };
        let Some(init) = init else {
            k += 1;
            continue;
        };
        let mut dropped_fn = f.clone();
        dropped_fn.sig.inputs =
            f.sig.inputs.iter().enumerate().filter(|(j, _)| *j != k).map(|(_, a)| a.clone()).collect();
        let mut dropped = st.file.clone();
        if let Some(g) = target_fn(&mut dropped, st.name) {
            *g = dropped_fn;
        }
        let mut at = st.at.clone();
        at.remove(k);
        let what = format!("dropped the unused input `{}`", short(&pat));
        if st.attempt(dropped, at, || what) {
            continue;
        }
        let Some(f) = target_fn(&mut file, st.name) else { return };
        f.sig.inputs = f.sig.inputs.iter().enumerate().filter(|(j, _)| *j != k).map(|(_, a)| a.clone()).collect();
        f.block.stmts.insert(0, syn::parse_quote!(let #pat: #ty = #init;));
        let mut at = st.at.clone();
        at.remove(k);
        let what = format!("pinned the input `{}` to {value}", short(&pat));
        if !st.attempt(file, at, || what) {
            k += 1;
        }
    }
}

fn literal(v: &Json) -> Option<syn::Expr> {
    match v {
        Json::Number(n) if n.is_i64() || n.is_u64() => syn::parse_str(&n.to_string()).ok(),
        Json::Number(n) => {
            let x = n.as_f64()?;
            let text = if x.fract() == 0.0 && x.abs() < 1e15 { format!("{x:.1}") } else { format!("{x:?}") };
            syn::parse_str(&text).ok()
        }
        Json::Bool(b) => Some(syn::parse_quote!(#b)),
        _ => None,
    }
}

/// Shorter slices, and simpler numbers, at the failing point.
fn shrink_inputs(st: &mut State) {
    for k in 0..st.at.len() {
        loop {
            let mut at = st.at.clone();
            let Json::Array(items) = &mut at[k] else { break };
            if items.len() <= 1 {
                break;
            }
            items.pop();
            if !st.attempt(st.file.clone(), at, || format!("shortened input {k}")) {
                break;
            }
        }
    }
}

/// Drops a parameter that a helper function does not use, at every call.
fn drop_helper_params(st: &mut State) {
    let fns = Source::of(&st.file).functions();
    let name = st.name;
    let protected = st.protected.clone();
    for f in fns.iter().filter(|f| f.sig.ident != ident(name) && !is_protected(&protected, f)) {
        let n = f.sig.inputs.len();
        for k in (0..n).rev() {
            let mut file = st.file.clone();
            let fname = f.sig.ident.clone();
            let mut v = DropParam { name: fname.to_string(), k };
            v.visit_file_mut(&mut file);
            let what = format!("dropped parameter {k} of `{fname}`");
            st.attempt(file, st.at.clone(), || what);
        }
    }
}

struct DropParam {
    name: String,
    k: usize,
}

impl VisitMut for DropParam {
    fn visit_item_fn_mut(&mut self, f: &mut syn::ItemFn) {
        if f.sig.ident == self.name && self.k < f.sig.inputs.len() {
            f.sig.inputs =
                f.sig.inputs.iter().enumerate().filter(|(j, _)| *j != self.k).map(|(_, a)| a.clone()).collect();
        }
        syn::visit_mut::visit_item_fn_mut(self, f);
    }
    fn visit_expr_call_mut(&mut self, c: &mut syn::ExprCall) {
        if let syn::Expr::Path(p) = &*c.func {
            if p.path.segments.last().is_some_and(|s| s.ident == self.name) && self.k < c.args.len() {
                c.args = c.args.iter().enumerate().filter(|(j, _)| *j != self.k).map(|(_, a)| a.clone()).collect();
            }
        }
        syn::visit_mut::visit_expr_call_mut(self, c);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn rustc_judges_the_minimized_program_without_cotan() {
        let valid = "#[cotan::custom_derivative(reverse = sq_rev)]\nfn sq(x: f64) -> f64 { x * x }\n\
                     fn sq_rev(x: f64, d: f64) -> (f64, f64) { (x * x, 2.0 * x * d) }\n\
                     #[derive(Clone, cotan::Differentiable)]\nstruct P { a: f64 }\n\
                     #[cotan::autodiff_reverse(d_f, Duplicated, Active)]\nfn f(x: &[f64]) -> f64 { sq(x[0]) }\n";
        assert_eq!(super::rustc_rejects(valid), None);
        let invalid = "fn f(x: &[f64]) -> f64 { let c = [1.0, 2.0]; let mut s = 0.0; \
                       for (i, &v) in c.enumerate() { s += v * x[i]; } s }\n";
        let e = super::rustc_rejects(invalid).expect("rustc rejects `c.enumerate()` on an array");
        assert!(e.starts_with("error"), "{e}");
    }
}
