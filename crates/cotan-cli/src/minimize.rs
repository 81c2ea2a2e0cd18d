//! `cotan minimize`: greedy delta debugging on the syntax tree of the whole file. Candidate
//! edits, biggest first (whole items, whole statements, then expressions, literals and
//! inputs), are tried to a fixpoint; an edit is kept when the program gets shorter and its
//! check still fails with the same signature (kind and argument). Each check runs
//! in-process through the interpreter, with a step limit, so a candidate that loops forever
//! just fails.

use std::time::Instant;

use quote::ToTokens;
use serde_json::Value as Json;
use syn::visit_mut::VisitMut;

use crate::checker::{self, Kind, Points};
use crate::source::Source;
use crate::CliError;

pub struct Minimized {
    pub program: String,
    pub before_lines: usize,
    pub after_lines: usize,
    pub seconds: f64,
    pub steps: Vec<String>,
    pub signature: (Kind, String),
    pub detail: String,
    pub at: String,
    pub tried: usize,
    pub changed_character: usize,
}

struct State<'a> {
    name: &'a str,
    sig: (Kind, String),
    file: syn::File,
    at: Vec<Json>,
    size: usize,
    steps: Vec<String>,
    tried: usize,
    changed_character: usize,
    detail: String,
    bar: Option<indicatif::ProgressBar>,
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
        let size = pretty(&file).len() + Json::Array(at.clone()).to_string().len();
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
fn failure_of(file: &syn::File, name: &str, at: &[Json]) -> Option<((Kind, String), String, Vec<(Kind, String)>)> {
    let src = Source { file: file.clone() };
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
        size: before.len() + Json::Array(at.clone()).to_string().len() + 1,
        file: src.file.clone(),
        at,
        steps: vec![],
        tried: 0,
        changed_character: 0,
        detail: first.detail.clone(),
        bar,
    };
    loop {
        let size = st.size;
        remove_items(&mut st);
        delete_statements(&mut st);
        inline_calls(&mut st);
        replace_expressions(&mut st);
        pin_inputs(&mut st);
        shrink_inputs(&mut st);
        drop_helper_params(&mut st);
        if st.size == size {
            break;
        }
    }
    std::panic::set_hook(previous_hook);
    if let Some(bar) = &st.bar {
        bar.finish_and_clear();
    }
    let program = pretty(&st.file);
    Ok(Minimized {
        before_lines: before.lines().count(),
        after_lines: program.lines().count(),
        program,
        seconds: start.elapsed().as_secs_f64(),
        steps: st.steps,
        signature: st.sig,
        detail: st.detail,
        at: Json::Array(st.at).to_string(),
        tried: st.tried,
        changed_character: st.changed_character,
    })
}

pub fn render(m: &Minimized) -> String {
    let mut s = m.program.clone();
    s += &format!("\n// still fails: [{}] {}: {}\n", m.signature.0.name(), m.signature.1, m.detail);
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
    for step in &m.steps {
        s += &format!("//   {step}\n");
    }
    s
}

// ---- whole items ----

fn remove_items(st: &mut State) {
    let mut k = 0;
    while k < st.file.items.len() {
        let item = &st.file.items[k];
        if matches!(item, syn::Item::Fn(f) if f.sig.ident == st.name) {
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
struct DeleteStmt {
    target: usize,
    count: usize,
    deleted: Option<String>,
}

impl VisitMut for DeleteStmt {
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
        let mut v = DeleteStmt { target: k, count: 0, deleted: None };
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
        E::Paren(p) => out.push((*p.expr).clone()),
        E::MethodCall(m) => {
            out.push((*m.receiver).clone());
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
                syn::Lit::Float(f) => {
                    if f.base10_digits() != "0.0" && f.base10_digits() != "1.0" && f.base10_digits() != "0" {
                        out.push(syn::parse_quote!(1.0));
                    }
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
    if !matches!(e, E::Path(_) | E::Lit(_) | E::Range(_) | E::Reference(_) | E::Block(_)) {
        out.push(syn::parse_quote!(1.0));
        out.push(syn::parse_quote!(0.0));
    }
    out
}

/// Counts expressions in pre-order; at `target`, either lists replacements or applies one.
struct AtExpr {
    target: usize,
    count: usize,
    apply: Option<syn::Expr>,
    found: Option<(String, Vec<syn::Expr>)>,
}

impl VisitMut for AtExpr {
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
        let mut probe = AtExpr { target: k, count: 0, apply: None, found: None };
        probe.visit_file_mut(&mut st.file.clone());
        let Some((what, reps)) = probe.found else { return };
        let mut kept = false;
        for r in reps {
            let mut file = st.file.clone();
            let by = short(&r);
            let mut v = AtExpr { target: k, count: 0, apply: Some(r), found: None };
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

/// Replaces the `target`-th call of a function of the file by its body, with the
/// parameters bound by `let`.
struct Inline<'a> {
    fns: &'a [syn::ItemFn],
    target: usize,
    count: usize,
    done: Option<String>,
}

impl VisitMut for Inline<'_> {
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
                    let mut stmts: Vec<syn::Stmt> = vec![];
                    for (p, a) in f.sig.inputs.iter().zip(&c.args) {
                        if let syn::FnArg::Typed(pt) = p {
                            let (pat, ty) = (&pt.pat, &pt.ty);
                            stmts.push(syn::parse_quote!(let #pat: #ty = #a;));
                        }
                    }
                    stmts.extend(f.block.stmts.iter().cloned());
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
        let fns = Source { file: st.file.clone() }.functions();
        let mut file = st.file.clone();
        let mut v = Inline { fns: &fns, target: k, count: 0, done: None };
        v.visit_file_mut(&mut file);
        let Some(what) = v.done else { return };
        if !st.attempt(file, st.at.clone(), || what) {
            k += 1;
        }
    }
}

// ---- inputs ----

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
        let value = &st.at[k];
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
    let fns = Source { file: st.file.clone() }.functions();
    let name = st.name;
    for f in fns.iter().filter(|f| f.sig.ident != name) {
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
            f.sig.inputs = f.sig.inputs.iter().enumerate().filter(|(j, _)| *j != self.k).map(|(_, a)| a.clone()).collect();
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
