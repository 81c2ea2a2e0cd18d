//! `#[cotan::kernel]`: a function whose `for i in cotan::par(lo..hi)` loops run on rayon's
//! thread pool.
//!
//! The primal is rewritten syntax to syntax: each parallel loop becomes a call of
//! `cotan::rt::par_for` with the body as a closure, and each array declared outside the
//! loop that the body writes is shadowed, for the loop, by a `cotan::rt::ParSlice` of it
//! (raw-pointer element access shared by the threads; never a `&mut` per thread). Writes
//! `x[i] = v` at the loop's own index become `x.set(i, v)`, accumulations `x[e] += v`
//! atomic `x.add(e, v)`; reads `x[j]` stay as they are (a `ParSlice` is indexable). What
//! would let two iterations write one place, or leave the loop, is an error here.
//!
//! The derivatives are not made here: an autodiff attribute lowers the function as written,
//! where `cotan::par` is a plain range (`cotan-syntax` lists the loops in
//! `Function::par_loops`). A `#[cotan::kernel]` above an autodiff attribute moves itself
//! below it, so that the autodiff attribute sees the function as written.

use cotan_ir::HashSet;

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::visit_mut::VisitMut;

use crate::{cotan_path, guarded};

/// The attributes that read the function's body: a kernel attribute above them goes below.
const DERIVATIVE_ATTRS: &[&str] =
    &["autodiff_forward", "autodiff_reverse", "autodiff_split", "hvp", "hessian", "differentiable"];

/// Whether the function carries `#[cotan::kernel]` (as `kernel` imported, or by a path).
pub(crate) fn is_kernel(func: &syn::ItemFn) -> bool {
    func.attrs.iter().any(|a| a.path().segments.last().is_some_and(|s| s.ident == "kernel"))
}

/// `#[cotan::kernel]` on `item`.
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    let func: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            let e =
                syn::Error::new(Span::call_site(), "`#[cotan::kernel]` applies to functions only; put it on a `fn`")
                    .to_compile_error();
            return quote!(#e #item);
        }
    };
    let gpu = match attr.to_string().trim() {
        "" => false,
        "gpu" if cfg!(feature = "gpu") => true,
        "gpu" => {
            let e = syn::Error::new(
                attr.span(),
                "`#[cotan::kernel(gpu)]` needs cotan's feature `gpu`: in Cargo.toml, `cotan = { version = \"0.1\", features = [\"gpu\"] }`",
            )
            .to_compile_error();
            return quote!(#func #e);
        }
        _ => {
            let e = syn::Error::new(
                attr.span(),
                "`#[cotan::kernel]` takes no arguments, or `gpu` (`#[cotan::kernel(gpu)]`) to run on the GPU as well",
            )
            .to_compile_error();
            return quote!(#func #e);
        }
    };
    let derivative = |a: &syn::Attribute| {
        a.path().segments.last().is_some_and(|s| DERIVATIVE_ATTRS.contains(&s.ident.to_string().as_str()))
    };
    if func.attrs.iter().any(derivative) {
        // Below the autodiff attributes, which differentiate the body as written and keep
        // the function (with this attribute) for it to expand next.
        let mut moved = func;
        let krate = cotan_path();
        if gpu {
            moved.attrs.push(syn::parse_quote!(#[#krate::kernel(gpu)]));
        } else {
            moved.attrs.push(syn::parse_quote!(#[#krate::kernel]));
        }
        return moved.into_token_stream();
    }
    let cpu = guarded(|| rewrite(&func));
    let cpu = match (cpu, gpu) {
        (Ok(cpu), true) => guarded(|| {
            let entry = gpu_entry(&func)?;
            Ok(quote!(#cpu #entry))
        }),
        (r, _) => r,
    };
    match cpu {
        Ok(f) => f,
        Err(e) => {
            let e = e.to_compile_error();
            quote!(#func #e)
        }
    }
}

/// `NAME_gpu`, the kernel on the GPU (`#[cotan::kernel(gpu)]`).
fn gpu_entry(func: &syn::ItemFn) -> syn::Result<TokenStream> {
    // Lowered as the autodiff attributes see it: with the attribute, whose loops are parallel.
    let mut marked = func.clone();
    let krate = cotan_path();
    marked.attrs.push(syn::parse_quote!(#[#krate::kernel(gpu)]));
    let place = crate::root_place(&marked);
    let mut lowered = crate::lower_root_at(&marked, &place)?;
    let mut program = crate::program_at(&mut lowered, crate::program::Rule::Body, place)?;
    let vis = func.vis.to_token_stream();
    crate::gpu::entry(&lowered.func, &func.sig.ident, &vis, &lowered.spans, &mut program)
}

/// The function with its parallel loops run by `par_for`.
fn rewrite(func: &syn::ItemFn) -> syn::Result<TokenStream> {
    let mut out = func.clone();
    let mut r = Rewriter { kernel: func.sig.ident.to_string(), errors: None };
    r.visit_block_mut(&mut out.block);
    match r.errors {
        Some(e) => Err(e),
        None => Ok(out.into_token_stream()),
    }
}

fn push_error(errors: &mut Option<syn::Error>, e: syn::Error) {
    match errors {
        Some(all) => all.combine(e),
        None => *errors = Some(e),
    }
}

/// `cotan::par(range)` (or `par(range)` imported): the loop is parallel.
pub(crate) fn is_par(e: &syn::Expr) -> bool {
    let syn::Expr::Call(c) = strip(e) else { return false };
    let syn::Expr::Path(p) = strip(&c.func) else { return false };
    let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
    let named = match segs.as_slice() {
        [n] => n == "par",
        [c, n] => c == "cotan" && n == "par",
        _ => false,
    };
    named && c.args.len() == 1
}

fn strip(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Paren(p) => strip(&p.expr),
        syn::Expr::Group(g) => strip(&g.expr),
        _ => e,
    }
}

struct Rewriter {
    /// The function's name, for validation mode's messages.
    kernel: String,
    errors: Option<syn::Error>,
}

impl VisitMut for Rewriter {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        if let syn::Expr::ForLoop(f) = e {
            if is_par(&f.expr) {
                match par_loop(f, &self.kernel) {
                    Ok(new) => *e = new,
                    Err(err) => push_error(&mut self.errors, err),
                }
                return;
            }
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
}

/// The names patterns bind anywhere in a block.
#[derive(Default)]
struct Bound(HashSet<String>);

impl<'a> Visit<'a> for Bound {
    fn visit_pat_ident(&mut self, p: &'a syn::PatIdent) {
        self.0.insert(p.ident.to_string());
        syn::visit::visit_pat_ident(self, p);
    }
}

/// The arrays a parallel loop's body accumulates into (`x[e] += ..`, `-=`) at another index
/// than the loop's own: there iterations share elements, so every accumulation into them is
/// atomic; an array accumulated into at the loop's index only is each iteration's own.
struct Shared<'a> {
    own_index: Option<&'a str>,
    names: HashSet<String>,
    /// How often each name is used, and how often as the array an accumulation adds into.
    uses: cotan_ir::HashMap<String, usize>,
    accumulations: cotan_ir::HashMap<String, usize>,
}

impl Shared<'_> {
    /// The arrays of `names` the body uses only to accumulate into: those go through
    /// per-thread copies (`AccSlice`) rather than atomics.
    fn gathered(&self) -> HashSet<String> {
        self.names.iter().filter(|x| self.uses.get(*x) == self.accumulations.get(*x)).cloned().collect()
    }
}

impl<'a> Visit<'a> for Shared<'_> {
    fn visit_path(&mut self, p: &'a syn::Path) {
        if let Some(x) = p.get_ident() {
            *self.uses.entry(x.to_string()).or_default() += 1;
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'a syn::Macro) {
        // Names inside a macro's tokens are uses too (unparsed: never only accumulations).
        for t in m.tokens.clone() {
            if let proc_macro2::TokenTree::Ident(i) = t {
                *self.uses.entry(i.to_string()).or_default() += 2;
            }
        }
        syn::visit::visit_macro(self, m);
    }

    fn visit_expr_binary(&mut self, b: &'a syn::ExprBinary) {
        if matches!(b.op, syn::BinOp::AddAssign(_) | syn::BinOp::SubAssign(_)) {
            if let syn::Expr::Index(ix) = strip(&b.left) {
                if let syn::Expr::Path(p) = strip(&ix.expr) {
                    let own = matches!(strip(&ix.index), syn::Expr::Path(i) if i.qself.is_none()
                        && self.own_index.is_some_and(|o| i.path.is_ident(o)));
                    if let Some(x) = p.path.get_ident() {
                        *self.accumulations.entry(x.to_string()).or_default() += 1;
                        if !own {
                            self.names.insert(x.to_string());
                        }
                    }
                }
            }
        }
        syn::visit::visit_expr_binary(self, b);
    }
}

/// One parallel loop as a `par_for` call (in validation mode, cotan's feature `validate`,
/// `par_for_checked`, the written arrays viewed by `CheckedSlice`s that name them, the
/// kernel and the loop's line).
fn par_loop(f: &syn::ExprForLoop, kernel: &str) -> syn::Result<syn::Expr> {
    let index = match &*f.pat {
        syn::Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => Some(p.ident.clone()),
        syn::Pat::Wild(_) => None,
        other => {
            return Err(syn::Error::new(
                other.span(),
                "a parallel loop's variable is a name or `_`: `for i in cotan::par(lo..hi)`",
            ))
        }
    };
    let mut bound = Bound::default();
    bound.visit_block(&f.body);
    // A name the body binds again is not the loop's index where it is used.
    let own_index = index.as_ref().filter(|i| !bound.0.contains(&i.to_string())).map(|i| i.to_string());
    let mut shared = Shared {
        own_index: own_index.as_deref(),
        names: HashSet::default(),
        uses: Default::default(),
        accumulations: Default::default(),
    };
    shared.visit_block(&f.body);
    let gathered = shared.gathered();
    let shared = shared.names;
    let mut locals = bound.0;
    if let Some(i) = &index {
        locals.insert(i.to_string());
    }
    let mut body = f.body.clone();
    let mut b = Body {
        own_index,
        shared,
        label: f.label.as_ref().map(|l| l.name.ident.to_string()),
        locals,
        viewed: vec![],
        bare: vec![],
        inner_labels: vec![],
        depth: 0,
        closures: 0,
        errors: None,
    };
    b.visit_block_mut(&mut body);
    for (name, span) in &b.bare {
        if b.viewed.iter().any(|v| v == name) {
            push_error(
                &mut b.errors,
                syn::Error::new(
                    *span,
                    format!(
                        "`{name}` is written in this parallel loop, so in the loop it is used only by element (`{name}[j]`) or length (`{name}.len()`): its iterations share it; read the elements you need"
                    ),
                ),
            );
        }
    }
    if let Some(e) = b.errors {
        return Err(e);
    }
    let krate = cotan_path();
    let range = syn::Ident::new("__cotan_range", Span::mixed_site());
    let iter = &f.expr;
    let var = match &index {
        Some(i) => quote!(#i),
        None => quote!(_),
    };
    let attrs = &f.attrs;
    if cfg!(feature = "validate") {
        let site = syn::Ident::new("__cotan_site", Span::mixed_site());
        let line = proc_macro2::Literal::u32_unsuffixed(f.for_token.span.start().line as u32);
        let views = b.viewed.iter().map(|x| {
            let name = x.to_string();
            quote_spanned!(x.span()=> let #x = #krate::rt::CheckedSlice::new(&mut #x[..], #name, &#site);)
        });
        return Ok(syn::parse_quote! {
            #(#attrs)*
            {
                let #range = #iter;
                let #site = #krate::rt::LoopSite { kernel: #kernel, file: ::core::file!(), line: #line };
                #(#views)*
                #krate::rt::par_for_checked(#range, |#var: usize| #body);
            }
        });
    }
    let views = b.viewed.iter().map(|x| {
        if gathered.contains(&x.to_string()) {
            quote_spanned!(x.span()=> let #x = #krate::rt::AccSlice::new(&mut #x[..], #range.len());)
        } else {
            quote_spanned!(x.span()=> let #x = #krate::rt::ParSlice::new(&mut #x[..]);)
        }
    });
    Ok(syn::parse_quote! {
        #(#attrs)*
        {
            let #range = #iter;
            #(#views)*
            #krate::rt::par_for(#range, |#var: usize| #body);
        }
    })
}

/// The walk of a parallel loop's body: checks and rewrites.
struct Body {
    /// The loop's variable, where it is the index (not bound again in the body).
    own_index: Option<String>,
    /// The arrays accumulated into at other indices (`Shared`).
    shared: HashSet<String>,
    label: Option<String>,
    /// Names bound in the body (and the loop's variable).
    locals: HashSet<String>,
    /// Arrays declared outside the loop that it writes, in order, each once.
    viewed: Vec<syn::Ident>,
    /// Uses of names other than as an indexed array or its length.
    bare: Vec<(String, Span)>,
    /// Labels of loops inside the body, innermost last.
    inner_labels: Vec<Option<String>>,
    /// Loops inside the body around the current expression.
    depth: usize,
    /// Closures around the current expression (their `return` is theirs).
    closures: usize,
    errors: Option<syn::Error>,
}

const OUTER_VAR: &str = "a parallel loop's iterations run at once, so none may assign to a variable declared outside the loop; declare it inside the loop, write an array element at the loop's index (`out[i] = ..`), or accumulate into an element (`acc[0] += ..`, atomic)";
const OTHER_INDEX: &str = "a parallel loop writes an array declared outside it only at the loop's own index (`x[i] = ..`, `i` the loop's variable as it is), since another iteration may write any other element at once; write at the loop's index, or accumulate with `+=`/`-=` (atomic)";
const ONE_LEVEL: &str = "a parallel loop writes an array declared outside it one element at a time, `x[i] = ..` with `x` a name; write a local array, or flatten the array to one level";
const NO_LEAVING: &str = "a parallel loop's iterations run at once, so none can leave the loop or the function (`break`, `return`, `?`, or a label outside the loop); compute a flag per iteration (`stop[i] = ..`) and decide after the loop";

impl Body {
    /// An error spanning `at` (all its tokens, as `new_spanned` does on stable).
    fn error(&mut self, at: &dyn ToTokens, msg: impl Into<String>) {
        push_error(&mut self.errors, syn::Error::new_spanned(at.to_token_stream(), msg.into()));
    }

    fn outer(&self, name: &syn::Ident) -> bool {
        !self.locals.contains(&name.to_string())
    }

    fn view(&mut self, x: &syn::Ident) {
        if !self.viewed.iter().any(|v| v == x) {
            self.viewed.push(x.clone());
        }
    }

    fn is_own_index(&self, e: &syn::Expr) -> bool {
        let Some(own) = &self.own_index else { return false };
        matches!(strip(e), syn::Expr::Path(p) if p.qself.is_none() && p.path.is_ident(own))
    }

    /// Checks the place an assignment (`op` = None) or compound assignment writes, and
    /// returns what replaces the whole assignment when it is an outer array's element.
    fn write(&mut self, left: &mut syn::Expr, op: Option<&syn::BinOp>, right: &syn::Expr) -> Option<syn::Expr> {
        match place_root(left) {
            Some(root) if self.outer(&root) => {}
            // A local (or `_`): the body's own.
            _ => {
                self.visit_expr_mut(left);
                return None;
            }
        }
        let syn::Expr::Index(ix) = strip(left) else {
            let msg = if matches!(strip(left), syn::Expr::Path(_)) { OUTER_VAR } else { ONE_LEVEL };
            self.error(left, msg);
            return None;
        };
        let syn::Expr::Path(p) = strip(&ix.expr) else {
            self.error(left, ONE_LEVEL);
            return None;
        };
        let Some(x) = p.path.get_ident().cloned() else {
            self.error(left, ONE_LEVEL);
            return None;
        };
        let own = self.is_own_index(&ix.index);
        let mut index = (*ix.index).clone();
        self.visit_expr_mut(&mut index);
        self.view(&x);
        let span = left.span();
        let at = left.clone();
        match op {
            None if own => Some(syn::parse_quote_spanned!(span=> #x.set(#index, #right))),
            // At the loop's index of an array no iteration accumulates into elsewhere: the
            // element is this iteration's alone, no atomic needed.
            Some(op @ (syn::BinOp::AddAssign(_) | syn::BinOp::SubAssign(_)))
                if own && !self.shared.contains(&x.to_string()) =>
            {
                let bin = compound_to_binary(op)?;
                Some(syn::parse_quote_spanned!(span=> #x.set(#index, #x.get(#index) #bin (#right))))
            }
            Some(syn::BinOp::AddAssign(_)) => Some(syn::parse_quote_spanned!(span=> #x.add(#index, #right))),
            Some(syn::BinOp::SubAssign(_)) => Some(syn::parse_quote_spanned!(span=> #x.sub(#index, #right))),
            Some(op) if own => {
                let bin = compound_to_binary(op)?;
                Some(syn::parse_quote_spanned!(span=> #x.set(#index, #x.get(#index) #bin (#right))))
            }
            Some(_) => {
                self.error(
                    &at,
                    "a parallel loop accumulates into an element of an array declared outside it with `+=` or `-=` only (atomic); other compound assignments write at the loop's own index only (`x[i] *= ..`)",
                );
                None
            }
            None => {
                self.error(&at, OTHER_INDEX);
                None
            }
        }
    }

    fn loop_body(&mut self, label: Option<&syn::Label>, f: impl FnOnce(&mut Self)) {
        self.inner_labels.push(label.map(|l| l.name.ident.to_string()));
        self.depth += 1;
        f(self);
        self.depth -= 1;
        self.inner_labels.pop();
    }

    /// Whether a `break`/`continue` with this label stays inside the parallel loop's body
    /// (`Some(true)`), continues the parallel loop (`Some(false)`, a `continue` only), or
    /// leaves it (`None`).
    fn target(&self, label: Option<&syn::Lifetime>) -> Option<bool> {
        match label {
            None if self.depth > 0 => Some(true),
            None => Some(false),
            Some(l) => {
                let l = l.ident.to_string();
                if self.inner_labels.iter().any(|x| x.as_deref() == Some(l.as_str())) {
                    Some(true)
                } else if self.label.as_deref() == Some(l.as_str()) {
                    Some(false)
                } else {
                    None
                }
            }
        }
    }
}

fn compound_to_binary(op: &syn::BinOp) -> Option<TokenStream> {
    use syn::BinOp::*;
    Some(match op {
        AddAssign(t) => quote_spanned!(t.spans[0]=> +),
        SubAssign(t) => quote_spanned!(t.spans[0]=> -),
        MulAssign(t) => quote_spanned!(t.spans[0]=> *),
        DivAssign(t) => quote_spanned!(t.spans[0]=> /),
        RemAssign(t) => quote_spanned!(t.spans[0]=> %),
        BitAndAssign(t) => quote_spanned!(t.spans[0]=> &),
        BitOrAssign(t) => quote_spanned!(t.spans[0]=> |),
        BitXorAssign(t) => quote_spanned!(t.spans[0]=> ^),
        ShlAssign(t) => quote_spanned!(t.spans[0]=> <<),
        ShrAssign(t) => quote_spanned!(t.spans[0]=> >>),
        _ => return None,
    })
}

fn is_compound(op: &syn::BinOp) -> bool {
    use syn::BinOp::*;
    matches!(
        op,
        AddAssign(_)
            | SubAssign(_)
            | MulAssign(_)
            | DivAssign(_)
            | RemAssign(_)
            | BitAndAssign(_)
            | BitOrAssign(_)
            | BitXorAssign(_)
            | ShlAssign(_)
            | ShrAssign(_)
    )
}

/// The variable a place expression writes into (`x` of `x[i].a`, `*x`), if it has one.
fn place_root(e: &syn::Expr) -> Option<syn::Ident> {
    match e {
        syn::Expr::Path(p) => p.path.get_ident().cloned(),
        syn::Expr::Index(i) => place_root(&i.expr),
        syn::Expr::Field(f) => place_root(&f.base),
        syn::Expr::Paren(p) => place_root(&p.expr),
        syn::Expr::Group(g) => place_root(&g.expr),
        syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => place_root(&u.expr),
        syn::Expr::MethodCall(m) => place_root(&m.receiver),
        _ => None,
    }
}

impl VisitMut for Body {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        match e {
            syn::Expr::ForLoop(f) => {
                if is_par(&f.expr) {
                    self.error(
                        &f.expr,
                        "a parallel loop inside a parallel loop: cotan runs the outer one in parallel; write this one over a plain range `lo..hi`",
                    );
                    return;
                }
                self.visit_expr_mut(&mut f.expr);
                let label = f.label.clone();
                self.loop_body(label.as_ref(), |s| s.visit_block_mut(&mut f.body));
            }
            syn::Expr::While(w) => {
                let label = w.label.clone();
                self.loop_body(label.as_ref(), |s| {
                    s.visit_expr_mut(&mut w.cond);
                    s.visit_block_mut(&mut w.body)
                });
            }
            syn::Expr::Loop(l) => {
                let label = l.label.clone();
                self.loop_body(label.as_ref(), |s| s.visit_block_mut(&mut l.body));
            }
            syn::Expr::Closure(c) => {
                // Its `break`/`continue`/`return` are its own.
                let (labels, depth) = (std::mem::take(&mut self.inner_labels), self.depth);
                self.closures += 1;
                self.depth = 1;
                self.visit_expr_mut(&mut c.body);
                self.closures -= 1;
                (self.inner_labels, self.depth) = (labels, depth);
            }
            syn::Expr::Async(a) => {
                let depth = self.depth;
                self.closures += 1;
                self.depth = 1;
                self.visit_block_mut(&mut a.block);
                self.closures -= 1;
                self.depth = depth;
            }
            syn::Expr::Return(r) if self.closures == 0 => self.error(r, NO_LEAVING),
            syn::Expr::Try(t) if self.closures == 0 => self.error(t, NO_LEAVING),
            syn::Expr::Break(b) if self.closures == 0 => {
                if self.target(b.label.as_ref()) != Some(true) {
                    self.error(b, NO_LEAVING);
                } else if let Some(v) = &mut b.expr {
                    self.visit_expr_mut(v);
                }
            }
            syn::Expr::Continue(c) if self.closures == 0 => match self.target(c.label.as_ref()) {
                Some(true) => {}
                // The next iteration: this one's closure returns.
                Some(false) => {
                    let span = c.span();
                    *e = syn::parse_quote_spanned!(span=> return);
                }
                None => self.error(c, NO_LEAVING),
            },
            syn::Expr::Assign(a) => {
                self.visit_expr_mut(&mut a.right);
                if let Some(new) = self.write(&mut a.left, None, &a.right) {
                    *e = new;
                }
            }
            syn::Expr::Binary(b) if is_compound(&b.op) => {
                self.visit_expr_mut(&mut b.right);
                let op = b.op;
                if let Some(new) = self.write(&mut b.left, Some(&op), &b.right) {
                    *e = new;
                }
            }
            syn::Expr::Reference(r) if r.mutability.is_some() => {
                if place_root(&r.expr).is_some_and(|x| self.outer(&x)) {
                    self.error(
                        r,
                        "a parallel loop cannot lend `&mut` of memory declared outside it, since its iterations run at once; write elements at the loop's index (`x[i] = ..`), or have the callee return what the loop stores",
                    );
                } else {
                    self.visit_expr_mut(&mut r.expr);
                }
            }
            syn::Expr::Index(ix) => {
                let ranged = matches!(strip(&ix.index), syn::Expr::Range(_));
                match strip(&ix.expr) {
                    syn::Expr::Path(p) if !ranged && p.path.get_ident().is_some() => {}
                    _ => self.visit_expr_mut(&mut ix.expr),
                }
                self.visit_expr_mut(&mut ix.index);
            }
            syn::Expr::MethodCall(m) if m.method == "len" || m.method == "is_empty" => {
                if !matches!(strip(&m.receiver), syn::Expr::Path(p) if p.path.get_ident().is_some()) {
                    self.visit_expr_mut(&mut m.receiver);
                }
                for a in &mut m.args {
                    self.visit_expr_mut(a);
                }
            }
            syn::Expr::Path(p) => {
                if let Some(x) = p.path.get_ident() {
                    self.bare.push((x.to_string(), x.span()));
                }
            }
            _ => syn::visit_mut::visit_expr_mut(self, e),
        }
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {
        // Items inside the body are functions of their own.
    }
}
