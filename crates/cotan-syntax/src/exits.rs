//! Finds `break`, `continue` and `return` that leave a piece of code.
//!
//! Lowering turns early exits into flag variables (the IR's control flow is structured),
//! so before lowering a loop body or a statement it asks which exits can escape it.

use syn::visit::Visit;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exit {
    Return,
    Break(Option<String>),
    Continue(Option<String>),
}

struct Scan {
    labels: Vec<Option<String>>,
    found: Vec<Exit>,
}

impl Scan {
    /// True if a break/continue with this label targets a loop inside the scanned code.
    fn is_internal(&self, label: &Option<syn::Lifetime>) -> bool {
        match label {
            None => !self.labels.is_empty(),
            Some(l) => {
                let name = l.ident.to_string();
                self.labels.iter().any(|x| x.as_deref() == Some(name.as_str()))
            }
        }
    }

    fn in_loop(&mut self, label: &Option<syn::Label>, f: impl FnOnce(&mut Self)) {
        self.labels.push(label.as_ref().map(|l| l.name.ident.to_string()));
        f(self);
        self.labels.pop();
    }
}

fn label_name(l: &Option<syn::Lifetime>) -> Option<String> {
    l.as_ref().map(|l| l.ident.to_string())
}

impl<'ast> Visit<'ast> for Scan {
    fn visit_expr_return(&mut self, e: &'ast syn::ExprReturn) {
        self.found.push(Exit::Return);
        syn::visit::visit_expr_return(self, e);
    }
    fn visit_expr_try(&mut self, e: &'ast syn::ExprTry) {
        // `e?` returns `None` when `e` is.
        self.found.push(Exit::Return);
        syn::visit::visit_expr_try(self, e);
    }
    fn visit_expr_break(&mut self, e: &'ast syn::ExprBreak) {
        if !self.is_internal(&e.label) {
            self.found.push(Exit::Break(label_name(&e.label)));
        }
        syn::visit::visit_expr_break(self, e);
    }
    fn visit_expr_continue(&mut self, e: &'ast syn::ExprContinue) {
        if !self.is_internal(&e.label) {
            self.found.push(Exit::Continue(label_name(&e.label)));
        }
    }
    fn visit_expr_for_loop(&mut self, e: &'ast syn::ExprForLoop) {
        self.visit_expr(&e.expr);
        self.in_loop(&e.label, |s| s.visit_block(&e.body));
    }
    fn visit_expr_while(&mut self, e: &'ast syn::ExprWhile) {
        self.visit_expr(&e.cond);
        self.in_loop(&e.label, |s| s.visit_block(&e.body));
    }
    fn visit_expr_loop(&mut self, e: &'ast syn::ExprLoop) {
        self.in_loop(&e.label, |s| s.visit_block(&e.body));
    }
    // Exits inside closures and nested items belong to them.
    fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
    fn visit_item(&mut self, _: &'ast syn::Item) {}
}

/// The exits that leave `stmt`.
pub fn exits_of_stmt(stmt: &syn::Stmt) -> Vec<Exit> {
    let mut s = Scan { labels: vec![], found: vec![] };
    s.visit_stmt(stmt);
    s.found
}

/// The exits that leave `block`.
pub fn exits_of_block(block: &syn::Block) -> Vec<Exit> {
    let mut s = Scan { labels: vec![], found: vec![] };
    s.visit_block(block);
    s.found
}

/// The exits that leave `expr`.
pub fn exits_of_expr(expr: &syn::Expr) -> Vec<Exit> {
    let mut s = Scan { labels: vec![], found: vec![] };
    s.visit_expr(expr);
    s.found
}
