//! The chunk length that `let (chunks, rest) = x.as_chunks_mut();` leaves to inference,
//! read from how the chunks are used, as rustc infers it: an array pattern destructuring
//! them in a `for` loop (`for ([ax, ay], [bx, by]) in a.iter_mut().zip(b.iter_mut())`) or
//! in a closure of a chain (`chunks.iter().map(|[x, y]| ..)`), `let [x, y] = chunk;` (or
//! `*chunk`) of such a loop's variable, `let [x, y] = chunks[i];`, `chunks[i] = [x, y];`,
//! or the `let`'s type (`let (c, rest): (&mut [[f64; 2]], _) = ..`). The `let` is then
//! lowered as if the length were written (`as_chunks_mut::<2>()`); when the uses say
//! nothing or disagree, it is left as it is, and lowering asks for the length.

use std::borrow::Cow;

use syn::visit::Visit;

use crate::lower::strip_parens;

/// `stmt`, with the chunk length written if it is a `let` of `as_chunks` without it and the
/// rest of the block tells it.
pub(crate) fn with_chunk_len<'s>(stmt: &'s syn::Stmt, rest: &[syn::Stmt]) -> Cow<'s, syn::Stmt> {
    let syn::Stmt::Local(local) = stmt else { return Cow::Borrowed(stmt) };
    let Some(init) = local.init.as_ref().filter(|i| i.diverge.is_none()) else { return Cow::Borrowed(stmt) };
    if !matches!(crate::slices::as_chunks_call(&init.expr), Some((_, None))) {
        return Cow::Borrowed(stmt);
    }
    let Some(n) = chunk_len(&local.pat, rest) else { return Cow::Borrowed(stmt) };
    let mut local = local.clone();
    if let Some(init) = local.init.as_mut() {
        write_len(&mut init.expr, n);
    }
    Cow::Owned(syn::Stmt::Local(local))
}

/// Writes `::<n>` on the `as_chunks` call `e` is.
fn write_len(e: &mut syn::Expr, n: u64) {
    match e {
        syn::Expr::Paren(p) => write_len(&mut p.expr, n),
        syn::Expr::Group(g) => write_len(&mut g.expr, n),
        syn::Expr::MethodCall(m) => {
            let n = syn::LitInt::new(&n.to_string(), m.method.span());
            m.turbofish = Some(syn::parse_quote_spanned!(m.method.span()=> ::<#n>));
        }
        _ => {}
    }
}

/// The chunk length the `let`'s type or the uses of its chunks in `rest` give.
fn chunk_len(pat: &syn::Pat, rest: &[syn::Stmt]) -> Option<u64> {
    let pat = match pat {
        syn::Pat::Type(t) => match crate::slices::chunks_annotation(&t.ty) {
            Some(n) => return Some(n),
            None => &*t.pat,
        },
        p => p,
    };
    let syn::Pat::Tuple(t) = strip_pat(pat) else { return None };
    let syn::Pat::Ident(name) = strip_pat(t.elems.first()?) else { return None };
    let mut uses = Uses { name: name.ident.to_string(), found: vec![] };
    for s in rest {
        uses.visit_stmt(s);
        if let syn::Stmt::Local(l) = s {
            if binds(&l.pat, &uses.name) {
                break;
            }
        }
    }
    let first = *uses.found.first()?;
    uses.found.iter().all(|&n| n == first).then_some(first)
}

/// The uses of the chunks named `name`, and the lengths they give.
struct Uses {
    name: String,
    found: Vec<u64>,
}

impl<'a> Visit<'a> for Uses {
    fn visit_expr_for_loop(&mut self, f: &'a syn::ExprForLoop) {
        if let Some(p) = item_path(&f.expr, &self.name).and_then(|path| project(&f.pat, &path)) {
            self.pattern(p, Some(&f.body));
        }
        syn::visit::visit_expr_for_loop(self, f);
    }

    fn visit_expr_method_call(&mut self, m: &'a syn::ExprMethodCall) {
        // A closure that takes the items of a chain over the chunks.
        if let Some(path) = item_path(&m.receiver, &self.name) {
            let (arg, param) = match m.method.to_string().as_str() {
                "map" | "for_each" | "filter" | "any" | "all" | "find" | "position" | "inspect" => (0, 0),
                "fold" => (1, 1),
                _ => (usize::MAX, 0),
            };
            if let Some(syn::Expr::Closure(c)) = m.args.iter().nth(arg).map(strip_parens) {
                if let Some(p) = c.inputs.iter().nth(param).and_then(|p| project(p, &path)) {
                    self.pattern(p, None);
                }
            }
        }
        syn::visit::visit_expr_method_call(self, m);
    }

    fn visit_expr_assign(&mut self, a: &'a syn::ExprAssign) {
        // `chunks[i] = [x, y];`
        if let (syn::Expr::Index(i), syn::Expr::Array(v)) = (strip_parens(&a.left), strip_parens(&a.right)) {
            if names(&i.expr, &self.name) {
                self.found.push(v.elems.len() as u64);
            }
        }
        syn::visit::visit_expr_assign(self, a);
    }

    fn visit_local(&mut self, l: &'a syn::Local) {
        // `let [x, y] = chunks[i];`
        if let Some(init) = &l.init {
            if let syn::Expr::Index(i) = strip_refs(&init.expr) {
                if names(&i.expr, &self.name) {
                    self.pattern(&l.pat, None);
                }
            }
        }
        syn::visit::visit_local(self, l);
    }
}

impl Uses {
    /// The length a pattern for one chunk gives; for a name (a loop variable), the patterns
    /// that destructure it in `body`.
    fn pattern(&mut self, p: &syn::Pat, body: Option<&syn::Block>) {
        match p {
            syn::Pat::Slice(s) if !s.elems.iter().any(|e| matches!(e, syn::Pat::Rest(_))) => {
                self.found.push(s.elems.len() as u64)
            }
            syn::Pat::Reference(r) => self.pattern(&r.pat, body),
            syn::Pat::Paren(q) => self.pattern(&q.pat, body),
            syn::Pat::Type(t) => match array_type_len(&t.ty) {
                Some(n) => self.found.push(n),
                None => self.pattern(&t.pat, body),
            },
            syn::Pat::Ident(pi) => match (&pi.subpat, body) {
                (Some((_, sub)), _) => self.pattern(sub, body),
                (None, Some(body)) => {
                    let mut inner =
                        Destructured { name: pi.ident.to_string(), uses: Uses { name: String::new(), found: vec![] } };
                    inner.visit_block(body);
                    self.found.extend(inner.uses.found);
                }
                (None, None) => {}
            },
            _ => {}
        }
    }
}

/// `let PAT = chunk;` (or `*chunk`, `&mut *chunk`) of one chunk named `name`.
struct Destructured {
    name: String,
    uses: Uses,
}

impl<'a> Visit<'a> for Destructured {
    fn visit_local(&mut self, l: &'a syn::Local) {
        if l.init.as_ref().is_some_and(|i| names(strip_refs(&i.expr), &self.name)) {
            self.uses.pattern(&l.pat, None);
        }
        syn::visit::visit_local(self, l);
    }
}

/// Where an item of the chunks is in the items of the iterator `e` (a path of tuple
/// indices: `c.iter().enumerate()` gives `[1]`), if it has them.
fn item_path(e: &syn::Expr, name: &str) -> Option<Vec<usize>> {
    match strip_parens(e) {
        syn::Expr::Reference(r) => item_path(&r.expr, name),
        e @ syn::Expr::Path(_) => names(e, name).then(Vec::new),
        syn::Expr::MethodCall(m) => {
            let inner = |k: usize, e: &syn::Expr| {
                item_path(e, name).map(|mut p| {
                    p.insert(0, k);
                    p
                })
            };
            match m.method.to_string().as_str() {
                "iter" | "iter_mut" | "into_iter" | "rev" | "skip" | "take" | "step_by" | "filter" | "copied"
                | "cloned" | "inspect" => item_path(&m.receiver, name),
                "enumerate" => inner(1, &m.receiver),
                "zip" => inner(0, &m.receiver).or_else(|| inner(1, m.args.first()?)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The sub-pattern at `path` of a pattern of tuples.
fn project<'p>(mut p: &'p syn::Pat, path: &[usize]) -> Option<&'p syn::Pat> {
    for &k in path {
        let syn::Pat::Tuple(t) = strip_pat(p) else { return None };
        if t.elems.iter().any(|e| matches!(e, syn::Pat::Rest(_))) {
            return None;
        }
        p = t.elems.iter().nth(k)?;
    }
    Some(p)
}

/// `N` of `[T; N]`, `&[T; N]` or `&mut [T; N]`.
fn array_type_len(ty: &syn::Type) -> Option<u64> {
    match ty {
        syn::Type::Reference(r) => array_type_len(&r.elem),
        syn::Type::Paren(p) => array_type_len(&p.elem),
        syn::Type::Array(a) => crate::signature::array_len(&a.len),
        _ => None,
    }
}

/// Whether `e` is the name `name`.
fn names(e: &syn::Expr, name: &str) -> bool {
    matches!(strip_parens(e), syn::Expr::Path(p) if p.path.is_ident(name))
}

/// `e` without `&`, `&mut`, `*` and parentheses.
fn strip_refs(e: &syn::Expr) -> &syn::Expr {
    match strip_parens(e) {
        syn::Expr::Reference(r) => strip_refs(&r.expr),
        syn::Expr::Unary(syn::ExprUnary { op: syn::UnOp::Deref(_), expr, .. }) => strip_refs(expr),
        e => e,
    }
}

fn strip_pat(p: &syn::Pat) -> &syn::Pat {
    match p {
        syn::Pat::Paren(p) => strip_pat(&p.pat),
        p => p,
    }
}

/// Whether a pattern binds `name` (which then hides the chunks).
fn binds(p: &syn::Pat, name: &str) -> bool {
    struct Binds<'n>(&'n str, bool);
    impl<'a> Visit<'a> for Binds<'_> {
        fn visit_pat_ident(&mut self, i: &'a syn::PatIdent) {
            self.1 |= i.ident == self.0;
            syn::visit::visit_pat_ident(self, i);
        }
    }
    let mut b = Binds(name, false);
    b.visit_pat(p);
    b.1
}
