//! Closures, inlined where they are called. A local closure (`let f = |x| x * x;`) is kept
//! as its syntax with the bindings it sees where it is defined, so that a later shadowing
//! `let` does not change what it captures; each call lowers its body with those bindings
//! and the arguments bound to its parameters. Iterator methods take closures, local
//! closures by name, and function items (`f64::max`, `f64::sin`, a function of the crate).

use crate::span::Spanned;

use crate::agg::{Agg, Slot};
use crate::chain::Item;
use crate::exits::{exits_of_expr, Exit};
use crate::lower::{err, err_at, Binding, Lower};

/// A local closure: its syntax and the bindings visible where it was defined.
#[derive(Clone)]
pub(crate) struct ClosureDef {
    expr: syn::ExprClosure,
    scopes: Vec<Vec<(String, Binding)>>,
    /// The crate as seen where it was written (it may be called inside an inlined function).
    env: std::rc::Rc<dyn crate::env::Env>,
    /// The functions being inlined where it was written: its body runs there, so calling a
    /// helper inside it is no recursion of the helper it is passed to.
    inline_stack: Vec<String>,
}

/// Something an iterator method calls per item.
pub(crate) enum Callable<'a> {
    /// A closure written at the call (`.map(|x| x * x)`), in the current scope.
    Literal(&'a syn::ExprClosure),
    /// A local closure, by its index in `Lower::closures`.
    Local(usize),
    /// A function item (`f64::max`, `f64::sin`, `square`).
    Path(&'a syn::ExprPath),
}

/// Closures that `return` cannot be inlined as expressions.
fn check_body(c: &syn::ExprClosure) -> syn::Result<()> {
    if exits_of_expr(&c.body).contains(&Exit::Return) {
        return err_at(c, "cotan does not support `return` inside closures; make the closure's result its last expression (`if .. { a } else { b }`)");
    }
    if c.asyncness.is_some() {
        return err_at(c, "cotan does not support async closures");
    }
    Ok(())
}

impl Lower {
    /// `let f = |x| ..;`
    pub(crate) fn define_closure(&mut self, name: &syn::PatIdent, c: &syn::ExprClosure) -> syn::Result<()> {
        let id = self.new_closure(c)?;
        self.bind(name.ident.to_string(), Binding::Closure(id));
        Ok(())
    }

    /// Keeps a closure with the bindings it sees here; its index in `closures`.
    pub(crate) fn new_closure(&mut self, c: &syn::ExprClosure) -> syn::Result<usize> {
        check_body(c)?;
        let mut scopes = self.scopes.clone();
        if c.capture.is_some() {
            // A `move` closure copies the numbers it captures when it is made.
            for scope in &mut scopes {
                for (_, b) in scope.iter_mut() {
                    match b {
                        Binding::Var(var) => {
                            let t = self.var_sty(*var);
                            *b = Binding::Value(self.emit_s(cotan_ir::OpKind::GetVar(*var), t));
                        }
                        Binding::Agg(t) => {
                            let v = self.read_slots(t);
                            *b = Binding::Agg(v.map(&mut Slot::Value));
                        }
                        _ => {}
                    }
                }
            }
        }
        let inline_stack = self.inline_stack.clone();
        self.closures.push(ClosureDef { expr: c.clone(), scopes, env: self.env.clone(), inline_stack });
        Ok(self.closures.len() - 1)
    }

    /// The local closure a call calls, if it calls one (`f(a)` with `let f = |x| ..`).
    pub(crate) fn closure_called(&self, c: &syn::ExprCall) -> Option<usize> {
        let syn::Expr::Path(p) = crate::lower::strip_parens(&c.func) else { return None };
        match self.lookup(&p.path.get_ident()?.to_string()) {
            Some(Binding::Closure(id)) => Some(id),
            _ => None,
        }
    }

    /// Inlines a call of a local closure.
    pub(crate) fn call_closure_def(
        &mut self,
        id: usize,
        args: Vec<Item>,
        span: proc_macro2::Span,
    ) -> syn::Result<Option<Agg>> {
        let def = self.closures[id].clone();
        if def.expr.inputs.len() != args.len() {
            return err(
                span,
                format!("this closure takes {} argument(s), {} given", def.expr.inputs.len(), args.len()),
            );
        }
        let outer = std::mem::replace(&mut self.scopes, def.scopes);
        let outer_env = std::mem::replace(&mut self.env, def.env);
        let outer_stack = std::mem::replace(&mut self.inline_stack, def.inline_stack);
        // `break`/`continue` inside a closure cannot leave the loops around its call.
        let loops = std::mem::take(&mut self.loops);
        let r = self.inline(&def.expr, args);
        self.scopes = outer;
        self.env = outer_env;
        self.inline_stack = outer_stack;
        self.loops = loops;
        r
    }

    /// Binds a closure's parameters to `args` in a new scope and lowers its body.
    fn inline(&mut self, c: &syn::ExprClosure, args: Vec<Item>) -> syn::Result<Option<Agg>> {
        self.push_scope();
        let r = (|| {
            for (p, a) in c.inputs.iter().zip(args) {
                crate::chain::bind_item(self, p, a)?;
            }
            let v = self.agg_opt(&c.body)?;
            if let (syn::ReturnType::Type(_, ty), Some(v)) = (&c.output, &v) {
                self.annotate(ty, v)?;
            }
            Ok(v)
        })();
        self.pop_scope();
        r
    }

    /// What an iterator method's argument calls: a closure with `n` parameters, a local
    /// closure, or a function item.
    pub(crate) fn callable<'a>(&self, e: &'a syn::Expr, n: usize) -> syn::Result<Callable<'a>> {
        match crate::lower::strip_parens(e) {
            syn::Expr::Closure(c) if c.inputs.len() == n => {
                check_body(c)?;
                Ok(Callable::Literal(c))
            }
            syn::Expr::Closure(c) => err_at(c, format!("expected a closure with {n} parameter(s)")),
            syn::Expr::Path(p) => {
                if let Some(i) = p.path.get_ident() {
                    match self.lookup(&i.to_string()) {
                        Some(Binding::Closure(id)) => return Ok(Callable::Local(id)),
                        Some(_) => {
                            return err_at(
                                p,
                                "cotan needs a closure here (`|x| ...`), a local closure or a function, not a value",
                            )
                        }
                        None => {}
                    }
                }
                Ok(Callable::Path(p))
            }
            e => err_at(e, "cotan needs a closure written here (`|x| ...`), a local closure or a function"),
        }
    }

    /// Calls a callable on items; `None` when it returns `()`.
    pub(crate) fn call_callable(
        &mut self,
        f: &Callable,
        args: Vec<Item>,
        span: proc_macro2::Span,
    ) -> syn::Result<Option<Agg>> {
        match f {
            Callable::Literal(c) => self.inline(c, args),
            Callable::Local(id) => self.call_closure_def(*id, args, span),
            Callable::Path(p) => {
                // `f64::max` as `|a, b| f64::max(a, b)`, with the items bound to fresh names.
                self.push_scope();
                let r = (|| {
                    let mut call: syn::ExprCall = syn::parse_quote_spanned!(p.span()=> #p());
                    for (k, a) in args.into_iter().enumerate() {
                        let name = syn::Ident::new(&format!("__cotan_arg{k}"), p.span());
                        let v = crate::chain::item_agg(self, a);
                        self.bind_agg(&syn::parse_quote!(#name), v)?;
                        call.args.push(syn::parse_quote!(#name));
                    }
                    self.agg_opt(&syn::Expr::Call(call))
                })();
                self.pop_scope();
                r
            }
        }
    }

    /// Binds a closure's parameters to `args` and lowers its body with `body` rather than as
    /// an expression (comparators are read as orderings).
    pub(crate) fn with_params<T>(
        &mut self,
        f: &Callable,
        args: Vec<Item>,
        span: proc_macro2::Span,
        body: impl FnOnce(&mut Self, &syn::Expr) -> syn::Result<T>,
    ) -> syn::Result<T> {
        let (c, scopes) = match f {
            Callable::Literal(c) => ((*c).clone(), None),
            Callable::Local(id) => {
                let def = self.closures[*id].clone();
                (def.expr, Some((def.scopes, def.env, def.inline_stack)))
            }
            Callable::Path(p) => return err_at(p, "expected a closure here"),
        };
        if c.inputs.len() != args.len() {
            return err(span, format!("this closure takes {} argument(s), {} given", c.inputs.len(), args.len()));
        }
        let outer = scopes.map(|(s, e, k)| {
            let s = std::mem::replace(&mut self.scopes, s);
            (s, std::mem::replace(&mut self.env, e), std::mem::replace(&mut self.inline_stack, k))
        });
        self.push_scope();
        let r = (|| {
            for (p, a) in c.inputs.iter().zip(args) {
                crate::chain::bind_item(self, p, a)?;
            }
            body(self, &c.body)
        })();
        self.pop_scope();
        if let Some((s, e, k)) = outer {
            self.scopes = s;
            self.env = e;
            self.inline_stack = k;
        }
        r
    }

    /// Like `call_callable`, for a value.
    pub(crate) fn call_value(&mut self, f: &Callable, args: Vec<Item>, span: proc_macro2::Span) -> syn::Result<Agg> {
        match self.call_callable(f, args, span)? {
            Some(v) => Ok(v),
            None => err(span, "this closure must produce a value"),
        }
    }
}
