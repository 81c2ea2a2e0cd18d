//! What cotan's attributes expand to, as a library: parses an attribute and its function,
//! runs the library crates (lowering, differentiation, code generation) and turns their
//! errors into `compile_error!`s with spans. `cotan-macros` calls it from the compiler,
//! `cotan-cli` from the command line.

mod constants;
mod custom;
mod doctest;
mod env;
mod gpu;
mod kernel;
mod linalg;
mod program;
mod siblings;
mod sources;
mod split;
pub mod tools;
mod trait_decl;
mod traits;

pub use kernel::kernel;

use std::cell::RefCell;
use std::path::PathBuf;

pub use cotan_ad::Mode;
use cotan_ad::{Activity, Spec, Target};
use proc_macro2::Span;
use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;

/// `#[autodiff_forward(...)]` or `#[autodiff_reverse(...)]` (std::autodiff's syntax:
/// `NAME, INPUT_ACTIVITIES..., OUTPUT_ACTIVITY`) on `item`.
pub fn autodiff(mode: Mode, attr: TokenStream, item: TokenStream) -> TokenStream {
    if siblings::is_expanded(&attr) {
        return item;
    }
    let func: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            // A method's declaration in a trait, as std allows: the impls have the bodies.
            if let Ok(decl) = syn::parse2::<syn::TraitItemFn>(item.clone()) {
                if decl.default.is_none() {
                    return trait_decl::declared(mode, attr, &decl);
                }
            }
            if looks_like_fn(&item) {
                // A function rustc could not parse either: its own errors say what is wrong.
                return item;
            }
            let e = syn::Error::new(
                Span::call_site(),
                "`#[autodiff_forward]`/`#[autodiff_reverse]` apply to functions only; put the attribute on a `fn`",
            );
            let e = e.to_compile_error();
            return quote!(#e #item);
        }
    };
    let mut func = func;
    let siblings = siblings::take(&mut func);
    if siblings.is_empty() {
        return finish(&func, guarded(|| derive(mode, attr, &func)));
    }
    let attrs: Vec<_> = std::iter::once((mode, attr)).chain(siblings).collect();
    let results = siblings::derive_all(&attrs, &func);
    let marked = dead_code_allowed(&func);
    let out = results.into_iter().map(|r| r.unwrap_or_else(|e| e.to_compile_error()));
    quote!(#marked #(#out)*)
}

/// `#[cotan::autodiff_split(FORWARD, REVERSE, INPUT_ACTIVITIES..., OUTPUT_ACTIVITY)]`:
/// reverse mode as two functions with the record between them held by the caller.
pub fn autodiff_split(attr: TokenStream, item: TokenStream) -> TokenStream {
    let func: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            let e = syn::Error::new(Span::call_site(), "`#[cotan::autodiff_split]` applies to functions only")
                .to_compile_error();
            return quote!(#e #item);
        }
    };
    finish(&func, guarded(|| split::derive(attr, &func)))
}

thread_local! {
    static FILE: RefCell<Option<PathBuf>> = const { RefCell::new(None) };
}

/// The file the attribute being expanded is in (from the compiler, `None` for tools), whose
/// crate's sources hold the functions a differentiated function calls.
pub fn set_source_file(path: Option<PathBuf>) {
    FILE.with(|f| *f.borrow_mut() = path);
}

/// The file set by [`set_source_file`], if any.
pub(crate) fn source_file() -> Option<PathBuf> {
    FILE.with(|f| f.borrow().clone())
}

/// The function followed by the generated items, or by the error.
/// Whether `item` is a function by its tokens (`fn` before its body), though syn could not
/// parse it: rustc has then reported the syntax error, and another would only add noise.
fn looks_like_fn(item: &TokenStream) -> bool {
    item.clone()
        .into_iter()
        .take_while(
            |t| !matches!(t, proc_macro2::TokenTree::Group(g) if g.delimiter() == proc_macro2::Delimiter::Brace),
        )
        .any(|t| matches!(&t, proc_macro2::TokenTree::Ident(i) if i == "fn"))
}

fn finish(func: &syn::ItemFn, result: syn::Result<TokenStream>) -> TokenStream {
    match result {
        Ok(d) => {
            let marked = dead_code_allowed(func);
            quote!(#marked #d)
        }
        Err(e) => {
            let e = e.to_compile_error();
            quote!(#func #e)
        }
    }
}

/// `func`, which a derivative may be the only user of: not dead code (std's derivative calls
/// the original; cotan's is a copy).
fn dead_code_allowed(func: &syn::ItemFn) -> syn::ItemFn {
    let mut marked = func.clone();
    if !marked.attrs.iter().any(|a| a.path().is_ident("allow") && a.to_token_stream().to_string().contains("dead_code"))
    {
        marked.attrs.push(syn::parse_quote!(#[allow(dead_code)]));
    }
    marked
}

/// `#[cotan::differentiable]`: a mark that cotan no longer needs within a crate (every
/// function a differentiated function calls is differentiated from its source). The
/// function is kept as it is.
pub fn differentiable(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        let e = syn::Error::new(Span::call_site(), "`#[cotan::differentiable]` takes no arguments").to_compile_error();
        return quote!(#e #item);
    }
    if let Ok(t) = syn::parse2::<syn::ItemTrait>(item.clone()) {
        return guarded(|| traits::trait_exports(&t)).unwrap_or_else(|e| {
            let e = e.to_compile_error();
            quote!(#t #e)
        });
    }
    if let Ok(i) = syn::parse2::<syn::ItemImpl>(item.clone()) {
        return guarded(|| traits::impl_exports(&i)).unwrap_or_else(|e| {
            let e = e.to_compile_error();
            quote!(#i #e)
        });
    }
    with_function(item, "differentiable", |func| exports(func, program::Rule::Body))
}

/// Uses the user's derivatives wherever the function is called from differentiated code:
/// `#[cotan::custom_derivative(forward = F, reverse = R)]`, where F and R have the
/// signatures `autodiff_forward`/`autodiff_reverse` would generate with every float
/// argument `Dual`/(`Active` or `Duplicated`) and a `Dual`/`Active` result. Either may be
/// given alone; the other mode is then unavailable.
pub fn custom_derivative(attr: TokenStream, item: TokenStream) -> TokenStream {
    with_function(item, "custom_derivative", |func| {
        let (mut out, rule) = custom::custom_derivative(attr, func)?;
        out.extend(exports(func, rule)?);
        Ok(out)
    })
}

/// Treats the function's results as constants in differentiated code.
pub fn zero_derivative(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        let e = syn::Error::new(Span::call_site(), "`#[cotan::zero_derivative]` takes no arguments").to_compile_error();
        return quote!(#e #item);
    }
    with_function(item, "zero_derivative", |func| {
        let mut out = custom::zero_derivative(func)?;
        out.extend(exports(func, program::Rule::Zero)?);
        Ok(out)
    })
}

/// Parses the item as a function, runs `f`, and emits the function followed by what `f` made
/// (or by its error).
fn with_function(
    item: TokenStream,
    what: &str,
    f: impl FnOnce(&syn::ItemFn) -> syn::Result<TokenStream>,
) -> TokenStream {
    let func: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            let e = syn::Error::new(Span::call_site(), format!("`#[cotan::{what}]` applies to functions only"))
                .to_compile_error();
            return quote!(#e #item);
        }
    };
    match guarded(|| f(&func)) {
        Ok(d) => quote!(#func #d),
        Err(e) => {
            let e = e.to_compile_error();
            quote!(#func #e)
        }
    }
}

/// `#[derive(cotan::Differentiable)]` on a struct: `zero_like` field by field.
pub fn derive_differentiable(item: TokenStream) -> TokenStream {
    let input: syn::DeriveInput = match syn::parse2(item) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let krate = cotan_path();
    let body = match &input.data {
        syn::Data::Struct(data) => match &data.fields {
            syn::Fields::Named(n) => {
                let names = n.named.iter().map(|f| f.ident.clone());
                quote!(Self { #( #names: #krate::Differentiable::zero_like(&self.#names), )* })
            }
            syn::Fields::Unnamed(u) => {
                let idx = (0..u.unnamed.len()).map(syn::Index::from);
                quote!(Self( #( #krate::Differentiable::zero_like(&self.#idx), )* ))
            }
            syn::Fields::Unit => quote!(Self),
        },
        // An enum (an activation, a mode): the same variant, its fields zero.
        syn::Data::Enum(e) => {
            let arms = e.variants.iter().map(|v| {
                let name = &v.ident;
                match &v.fields {
                    syn::Fields::Named(n) => {
                        let names: Vec<_> = n.named.iter().map(|f| f.ident.clone()).collect();
                        quote!(Self::#name { #(#names),* } => Self::#name { #( #names: #krate::Differentiable::zero_like(#names), )* })
                    }
                    syn::Fields::Unnamed(u) => {
                        let binds: Vec<syn::Ident> = (0..u.unnamed.len()).map(|k| quote::format_ident!("f{k}")).collect();
                        quote!(Self::#name( #(#binds),* ) => Self::#name( #( #krate::Differentiable::zero_like(#binds), )* ))
                    }
                    syn::Fields::Unit => quote!(Self::#name => Self::#name),
                }
            });
            quote!(match self { #(#arms,)* })
        }
        syn::Data::Union(_) => {
            return syn::Error::new(
                input.ident.span(),
                "`cotan::Differentiable` derives for structs and enums, not unions",
            )
            .to_compile_error();
        }
    };
    let name = &input.ident;
    let mut generics = input.generics.clone();
    for p in generics.type_params_mut() {
        p.bounds.push(syn::parse_quote!(#krate::Differentiable));
    }
    let (impl_g, ty_g, where_g) = generics.split_for_impl();
    quote! {
        impl #impl_g #krate::Differentiable for #name #ty_g #where_g {
            fn zero_like(&self) -> Self { #body }
        }
    }
}

/// Directions per call in Hessian assembly.
const HESSIAN_LANES: usize = 4;

/// `#[cotan::hvp(NAME)]` or `#[cotan::hessian(NAME)]`.
#[derive(Clone, Copy, PartialEq)]
pub enum SecondOrder {
    Hvp,
    Hessian,
}

pub fn second_order(kind: SecondOrder, attr: TokenStream, item: TokenStream) -> TokenStream {
    let func: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) if looks_like_fn(&item) => return item,
        Err(_) => {
            let e = syn::Error::new(Span::call_site(), "`#[cotan::hvp]`/`#[cotan::hessian]` apply to functions only")
                .to_compile_error();
            return quote!(#e #item);
        }
    };
    finish(&func, guarded(|| derive_second_order(kind, attr, &func)))
}

fn derive_second_order(kind: SecondOrder, attr: TokenStream, func: &syn::ItemFn) -> syn::Result<TokenStream> {
    let name: syn::Ident = syn::parse2(attr).map_err(|e| {
        syn::Error::new(e.span(), "expected the name of the new function, as in `#[cotan::hvp(f_hvp)]`")
    })?;
    let mut lowered = lower_root(func)?;
    let mut program = program_for(&mut lowered, func, program::Rule::Body)?;
    let f = &lowered.func;
    if f.generic_float.is_some() {
        return Err(syn::Error::new(
            func.sig.generics.span(),
            "second-order attributes do not support generic functions yet; put them on a function of `f64` that calls this one",
        ));
    }
    let first_ok = f.params.first().and_then(|p| f.ty(*p).mem()).is_some_and(|m| {
        m.kind == cotan_ir::MemKind::Slice && m.access == cotan_ir::Access::Shared && m.elem.is_float()
    });
    let ret = f.returns.first().copied();
    if !first_ok || !ret.is_some_and(|t| t.is_float()) {
        let at = func.sig.inputs.first().map_or(func.sig.ident.span(), |a| a.span());
        return Err(syn::Error::new(at, "second-order attributes need a function whose first parameter is `&[f64]` (or `&[f32]`) and which returns that float type; for a method, or a `&Vec<f64>` parameter, put the attribute on a function `fn f(x: &[f64], ..)` that calls it"));
    }
    let n = f.params.len();
    let rev_spec = Spec {
        mode: Mode::Reverse,
        inputs: std::iter::once(Activity::Duplicated).chain(std::iter::repeat_n(Activity::Const, n - 1)).collect(),
        ret: Some(Activity::Active),
        width: 1,
    };
    program.reserve("hvp_of");
    let mut rev = cotan_ad::reverse(f, &rev_spec, "gradient", &mut program)
        .map_err(|e| syn::Error::new(lowered.span(e.span), e.message))?;
    internal_check(&rev, "differentiation")?;
    cotan_ir::simplify::cse(&mut rev);
    // (Fewer writes of adjoints in the gradient: fewer tangents of them to compute.)
    cotan_ir::dead_stores::dead_stores(&mut rev);
    // (Not `fuse::fuse_sweeps`: the Hessian-vector product of Rosenbrock's function measured
    // 1.4 times slower with the gradient's sweeps fused.)
    // The gradient function's parameters: x, dx, others..., dret.
    let fwd_inputs: Vec<Activity> =
        (0..rev.params.len()).map(|k| if k < 2 { Activity::Dual } else { Activity::Const }).collect();
    // Hessians take HESSIAN_LANES directions per call (batched forward mode), sharing the
    // gradient's primal work and partial derivatives between them.
    let mut width = if kind == SecondOrder::Hessian { HESSIAN_LANES } else { 1 };
    let mut fwd_spec = Spec { mode: Mode::Forward, inputs: fwd_inputs, ret: Some(Activity::Const), width };
    let mut inner = cotan_ad::forward(&rev, &fwd_spec, "hvp_of", &mut program);
    if inner.is_err() && width > 1 {
        // Batched forward mode does not pass through every call (the sweeps a trait's impls
        // export write through `&mut`): one direction per call then. (What the failed try
        // generated is not reachable from the result, so it is not emitted.)
        width = 1;
        fwd_spec.width = 1;
        inner = cotan_ad::forward(&rev, &fwd_spec, "hvp_of", &mut program);
    }
    let mut inner = inner.map_err(|e| syn::Error::new(lowered.span(e.span), e.message))?;
    internal_check(&inner, "differentiation")?;
    cotan_ir::simplify::cse(&mut inner);
    internal_check(&inner, "simplification")?;
    let inner = emit_with_callees(&inner, quote!(), &lowered, &program)?;
    let inner = quote!(#[inline] #inner);
    let w = proc_macro2::Literal::usize_unsuffixed(width);

    let elem = cotan_codegen::ty_tokens(ret.unwrap());
    let x = param_ident(&func.sig.inputs[0]);
    let others: Vec<&syn::FnArg> = func.sig.inputs.iter().skip(1).collect();
    let other_names: Vec<syn::Ident> = others.iter().map(|a| param_ident(a)).collect();
    let taken: Vec<String> = std::iter::once(x.to_string()).chain(other_names.iter().map(|i| i.to_string())).collect();
    let fresh = |base: &str| {
        let mut s = base.to_string();
        while taken.contains(&s) {
            s.push('_');
        }
        syn::Ident::new(&s, Span::call_site())
    };
    let (v, grad, hv, hess) = (fresh("v"), fresh("grad"), fresh("hv"), fresh("hess"));
    // (The Hessian's locals must not hide the parameters passed on to `hvp_of`.)
    let (n, dirs, columns, value, j0) = (fresh("n"), fresh("dirs"), fresh("columns"), fresh("value"), fresh("j0"));
    let lanes: Vec<syn::Ident> = (0..width).map(|k| fresh(&format!("e{k}"))).collect();
    let cols: Vec<syn::Ident> = (0..width).map(|k| fresh(&format!("c{k}"))).collect();
    let vis = &func.vis;
    // Generic over the types the function is generic over (`M: Model`).
    let generics = &func.sig.generics;
    let where_clause = &func.sig.generics.where_clause;
    let out = match kind {
        SecondOrder::Hvp => quote! {
            #[inline]
            #[allow(unused, non_snake_case, clippy::all, clippy::pedantic, clippy::nursery)]
            #vis fn #name #generics(#x: &[#elem], #v: &[#elem], #(#others,)* #grad: &mut [#elem], #hv: &mut [#elem]) -> #elem #where_clause {
                #inner
                assert!(#v.len() == #x.len() && #grad.len() == #x.len() && #hv.len() == #x.len(), "cotan::hvp: v, grad and hv must have the length of x");
                #grad.fill(0.0);
                #hv.fill(0.0);
                hvp_of(#x, #v, #grad, #hv, #(#other_names,)* 1.0)
            }
        },
        SecondOrder::Hessian => quote! {
            #[inline]
            #[allow(unused, non_snake_case, clippy::all, clippy::pedantic, clippy::nursery)]
            #vis fn #name #generics(#x: &[#elem], #(#others,)* #grad: &mut [#elem], #hess: &mut [#elem]) -> #elem #where_clause {
                #inner
                let #n = #x.len();
                assert!(#grad.len() == #n && #hess.len() == #n * #n, "cotan::hessian: grad must have the length n of x, hess n * n");
                // Unit directions and Hessian columns, #w at a time.
                let mut #dirs = vec![vec![0.0; #n]; #w];
                let mut #columns = vec![vec![0.0; #n]; #w];
                let mut #value = 0.0;
                let mut #j0 = 0;
                loop {
                    for (k, d) in #dirs.iter_mut().enumerate() {
                        d.fill(0.0);
                        if #j0 + k < #n {
                            d[#j0 + k] = 1.0;
                        }
                    }
                    for c in #columns.iter_mut() {
                        c.fill(0.0);
                    }
                    #grad.fill(0.0);
                    let [#(#lanes),*] = &#dirs[..] else { unreachable!() };
                    let [#(#cols),*] = &mut #columns[..] else { unreachable!() };
                    #value = hvp_of(#x, #(#lanes,)* #grad, #(#cols,)* #(#other_names,)* 1.0);
                    for (k, c) in #columns.iter().enumerate() {
                        if #j0 + k < #n {
                            for i in 0..#n {
                                #hess[i * #n + #j0 + k] = c[i];
                            }
                        }
                    }
                    #j0 += #w;
                    if #j0 >= #n {
                        break;
                    }
                }
                // Both triangles get their mean, so the result is exactly symmetric.
                for i in 0..#n {
                    for j in i + 1..#n {
                        let m = 0.5 * (#hess[i * #n + j] + #hess[j * #n + i]);
                        #hess[i * #n + j] = m;
                        #hess[j * #n + i] = m;
                    }
                }
                #value
            }
        },
    };
    keep_unsafe(respan(out, name.span()), func)
}

/// A derivative of an `unsafe fn` is `unsafe` too (its callers promise what the function's
/// callers promise).
fn keep_unsafe(item: TokenStream, func: &syn::ItemFn) -> syn::Result<TokenStream> {
    if func.sig.unsafety.is_none() {
        return Ok(item);
    }
    let mut f: syn::ItemFn = syn::parse2(item)?;
    f.sig.unsafety = func.sig.unsafety;
    Ok(quote!(#f))
}

fn param_ident(arg: &syn::FnArg) -> syn::Ident {
    match arg {
        syn::FnArg::Typed(pt) => match &*pt.pat {
            syn::Pat::Ident(pi) => pi.ident.clone(),
            _ => syn::Ident::new("_arg", Span::call_site()),
        },
        syn::FnArg::Receiver(r) => syn::Ident::new("self", r.self_token.span),
    }
}

/// The attribute's arguments: the new function's name and the activities with their spans.
pub(crate) struct Args {
    pub name: syn::Ident,
    /// Batched forward mode's number of directions (1 when not given).
    pub width: usize,
    pub acts: Vec<(Activity, Span)>,
    /// Per activity: `Dualv`, batched forward mode's tangents of a slice as one buffer of
    /// `width` lanes, one after the other (taken as `Dual` by the transform).
    pub lanes: Vec<bool>,
}

pub(crate) fn parse_args(mode: Mode, attr: TokenStream) -> syn::Result<Args> {
    let items = syn::parse::Parser::parse2(Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated, attr)?;
    let mut it = items.iter();
    let usage = match mode {
        Mode::Forward => "expected `#[autodiff_forward(NAME, INPUT_ACTIVITIES..., OUTPUT_ACTIVITY)]`",
        Mode::Reverse => "expected `#[autodiff_reverse(NAME, INPUT_ACTIVITIES..., OUTPUT_ACTIVITY)]`",
    };
    let name = match it.next() {
        Some(syn::Expr::Path(p)) if p.path.get_ident().is_some() => p.path.get_ident().unwrap().clone(),
        Some(e) => {
            return Err(syn::Error::new(e.span(), format!("{usage}: NAME must be the name of the new function")))
        }
        None => return Err(syn::Error::new(Span::call_site(), usage)),
    };
    let mut acts = vec![];
    let mut lanes = vec![];
    let mut width = 1;
    for (k, e) in it.enumerate() {
        if let syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(n), .. }) = e {
            let n: usize = n.base10_parse()?;
            if k != 0 || n == 0 {
                return Err(syn::Error::new(
                    e.span(),
                    "the width of batched forward mode is a positive number right after NAME",
                ));
            }
            width = n;
            continue;
        }
        let word = match e {
            syn::Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
            _ => None,
        };
        if word.as_deref() == Some("Dualv") && mode == Mode::Forward {
            acts.push((Activity::Dual, e.span()));
            lanes.push(true);
            continue;
        }
        match word.as_deref().and_then(Activity::from_name) {
            Some(a) => {
                acts.push((a, e.span()));
                lanes.push(false);
            }
            None => {
                let shown = e.to_token_stream().to_string();
                return Err(syn::Error::new(
                    e.span(),
                    format!("unknown activity `{shown}`; use one of Const, Active, ActiveOnly, Dual, DualOnly, Dualv, Duplicated, DuplicatedOnly"),
                ));
            }
        }
    }
    Ok(Args { name, width, acts, lanes })
}

fn derive(mode: Mode, attr: TokenStream, func: &syn::ItemFn) -> syn::Result<TokenStream> {
    derive_at(mode, attr, func, root_place(func))
}

/// The derivative of `func`, which is at `place` in the crate's sources.
pub(crate) fn derive_at(mode: Mode, attr: TokenStream, func: &syn::ItemFn, place: Place) -> syn::Result<TokenStream> {
    if let Some(found) = linalg::mention(func) {
        return linalg::derive(mode, attr, func, place, found);
    }
    derive_plain(mode, attr, func, place)
}

/// [`derive_at`] of a function without nalgebra or ndarray values.
pub(crate) fn derive_plain(
    mode: Mode,
    attr: TokenStream,
    func: &syn::ItemFn,
    place: Place,
) -> syn::Result<TokenStream> {
    match prepare(mode, attr, func, place, &mut None)? {
        Prepared::Done(tokens) => Ok(tokens),
        Prepared::Ir(p) => emit(*p, func, false),
    }
}

/// A derivative on its way: finished, or differentiated and not yet emitted.
pub(crate) enum Prepared {
    Done(TokenStream),
    Ir(Box<PreparedIr>),
}

/// A derivative as IR, with what emitting it needs.
pub(crate) struct PreparedIr {
    pub args: Args,
    spec: Spec,
    lowered: cotan_syntax::Lowered,
    program: program::Program,
    pub derived: cotan_ir::Function,
    /// Emitted as a plain function (a function of a module, of concrete types, with one
    /// result or several numbers): another function may call it by name.
    pub plain: bool,
}

/// A derivative up to its IR (batched reverse mode and all-`Const` ones to their code),
/// lowering `func` only if `lowering` (the lowering of the function's other attributes)
/// holds nothing yet, and keeping its lowering there.
pub(crate) fn prepare(
    mode: Mode,
    attr: TokenStream,
    func: &syn::ItemFn,
    place: Place,
    lowering: &mut Option<syn::Result<cotan_syntax::Lowered>>,
) -> syn::Result<Prepared> {
    let args = parse_args(mode, attr)?;
    if let Some(tokens) = passthrough(func, &args) {
        return Ok(Prepared::Done(tokens));
    }
    let in_module = match (&place.src, place.at) {
        (Some(src), Some((_, Some(f)))) => src.fns[f].imp.is_none(),
        _ => false,
    };
    let mut lowered = lowering.get_or_insert_with(|| lower_root_at(func, &place)).clone()?;
    let n_params = lowered.func.params.len();
    let has_ret = !lowered.func.returns.is_empty();
    let mut acts = args.acts.clone();
    if acts.len() != n_params + usize::from(has_ret) {
        return Err(count_error(func, &args, n_params, has_ret));
    }
    let ret = if has_ret { acts.pop() } else { None };
    let spec = Spec { mode, inputs: acts.iter().map(|a| a.0).collect(), ret: ret.map(|r| r.0), width: args.width };
    if let Err(e) = cotan_ad::check(&lowered.func, &spec) {
        let span = match e.target {
            Target::Input(k) => acts[k].1,
            Target::Return => ret.map_or(func.sig.output.span(), |r| r.1),
            Target::Whole => args.name.span(),
        };
        return Err(syn::Error::new(span, e.message));
    }
    let mut program = program_at(&mut lowered, program::Rule::Body, place)?;
    program.reserve(&args.name.to_string());
    program.reserve("batched");
    if mode == Mode::Reverse && args.width > 1 {
        let spec = Spec { width: 1, ..spec };
        return Ok(Prepared::Done(split::batched_reverse(func, &args, &spec, &lowered, &mut program)?));
    }
    let derived = differentiate(&lowered, &spec, &args.name.to_string(), &mut program)?;
    let plain = in_module
        && args.width == 1
        && !args.lanes.contains(&true)
        && lowered.ret_shape.is_none()
        && func.sig.unsafety.is_none()
        && func.sig.receiver().is_none()
        && lowered.func.generic_float.is_none()
        && lowered.func.type_params.is_empty()
        && !(cfg!(feature = "gpu") && gpu::is_gpu_kernel(func));
    Ok(Prepared::Ir(Box::new(PreparedIr { args, spec, lowered, program, derived, plain })))
}

/// The number of ops of `f`, nested ones included.
fn op_count(f: &cotan_ir::Function) -> usize {
    let mut n = 0;
    f.walk(&mut |_| n += 1);
    n
}

/// The code of a prepared derivative; `called` if a sibling's derivative calls it.
pub(crate) fn emit(p: PreparedIr, func: &syn::ItemFn, called: bool) -> syn::Result<TokenStream> {
    let PreparedIr { args, spec, lowered, mut program, derived, plain } = p;
    let vis = func.vis.to_token_stream();
    if args.lanes.contains(&true) {
        let body = lanes(&derived, &args, &lowered, vis, &program)?;
        return Ok(quote! { #[inline] #body });
    }
    let code = match (args.width, spec.ret, lowered.ret_shape) {
        (_, _, Some(shape)) => {
            if lowered.func.generic_float.is_some() {
                return Err(syn::Error::new(
                    func.sig.output.span(),
                    "cotan supports tuple and array results in functions of `f64`/`f32` only, not generic ones; return the elements through `&mut` parameters here",
                ));
            }
            shaped(&derived, shape, &spec, vis.clone(), &lowered, &program)?
        }
        (w, Some(Activity::Dual | Activity::DualOnly), _) if w > 1 => {
            batched(&derived, vis.clone(), &lowered, &program)?
        }
        _ => emit_with_callees(&derived, vis.clone(), &lowered, &program)?,
    };
    let code = keep_unsafe(code, func)?;
    // `#[cotan::kernel(gpu)]`: the derivative on the GPU too.
    let gpu = if cfg!(feature = "gpu") && gpu::is_gpu_kernel(func) && args.width == 1 && lowered.ret_shape.is_none() {
        gpu::entry(&derived, &args.name, &vis, &lowered.spans, &mut program)?
    } else {
        TokenStream::new()
    };
    let orig = &func.sig.ident;
    let doc = format!(
        " {} derivative of [`{orig}`], generated by cotan with activities `{}`.",
        if spec.mode == Mode::Forward { "Forward-mode" } else { "Reverse-mode" },
        acts_text(&spec)
    );
    // `#[inline]`: rustc generates machine code for a derivative only where it is called, so
    // a derivative that nothing calls costs its expansion and type checking only. A short one
    // that a value-less sibling calls is always inlined: the optimizer then removes from the
    // sibling what only the value needs (`Σ sin(xᵢ)`'s `sin`: half the work). In a long one,
    // with its callees' sweeps, that is a small part, and inlining is left to the optimizer.
    let inline = if called && plain && program.reachable(&derived).is_empty() && op_count(&derived) <= 300 {
        quote!(#[inline(always)])
    } else {
        quote!(#[inline])
    };
    Ok(quote! {
        #[doc = #doc]
        #inline
        #code
        #gpu
    })
}

/// Nothing to differentiate (every activity `Const`): as std, the derivative is the
/// function itself, whatever its types (`fn f() -> NotANumber`).
fn passthrough(func: &syn::ItemFn, args: &Args) -> Option<TokenStream> {
    let returns = matches!(&func.sig.output, syn::ReturnType::Type(_, t) if !matches!(&**t, syn::Type::Tuple(t) if t.elems.is_empty()));
    let all_const = args.acts.iter().all(|a| a.0 == Activity::Const);
    if !all_const || args.width != 1 || args.acts.len() != func.sig.inputs.len() + usize::from(returns) {
        return None;
    }
    let mut sig = func.sig.clone();
    sig.ident = args.name.clone();
    let mut call_args = vec![];
    let mut receiver = false;
    for (k, input) in sig.inputs.iter_mut().enumerate() {
        match input {
            syn::FnArg::Receiver(_) => receiver = true,
            syn::FnArg::Typed(pt) => {
                let name = quote::format_ident!("arg{}", k);
                *pt.pat = syn::parse_quote!(#name);
                call_args.push(name);
            }
        }
    }
    let orig = &func.sig.ident;
    let call = if receiver { quote!(Self::#orig(self, #(#call_args),*)) } else { quote!(#orig(#(#call_args),*)) };
    let vis = &func.vis;
    let doc = format!(" The derivative of [`{orig}`] with every activity `Const`: the function itself.");
    Some(quote! {
        #[doc = #doc]
        #[inline]
        #vis #sig { #call }
    })
}

/// The function with the attribute, lowered.
pub(crate) fn lower_root(func: &syn::ItemFn) -> syn::Result<cotan_syntax::Lowered> {
    // Second order, split reverse mode and exports take the function as it is written.
    if let Some(found) = linalg::mention(func) {
        return Err(linalg::not_here(found));
    }
    lower_root_at(func, &root_place(func))
}

/// The function with the attribute, found at `place`, lowered.
pub(crate) fn lower_root_at(func: &syn::ItemFn, place: &Place) -> syn::Result<cotan_syntax::Lowered> {
    let with_constants;
    let mut env: Option<std::rc::Rc<dyn cotan_syntax::Env>> = None;
    let func = match (&place.src, place.at) {
        (Some(src), Some((module, f))) => {
            let (scope, imp) = match f {
                Some(f) if func.sig.ident == src.fns[f].name => (src.fns[f].scope, src.fns[f].imp),
                _ => (module, None),
            };
            with_constants = constants::substitute(func, src, scope, imp)?;
            env = Some(std::rc::Rc::new(env::SourceEnv::new(src.clone(), scope, imp)));
            &with_constants
        }
        _ => func,
    };
    let mut lowered = match env {
        Some(env) => cotan_syntax::lower_fn_in(&func.sig, &func.block, env, false)?,
        None => cotan_syntax::lower_fn(&func.sig, &func.block)?,
    };
    if !kernel::is_kernel(func) {
        // Without `#[cotan::kernel]`, `cotan::par` is the plain range, and nothing checked
        // the loop's body: it runs in order.
        lowered.func.par_loops.clear();
    }
    internal_check(&lowered.func, "lowering")?;
    cotan_ir::simplify::cse(&mut lowered.func);
    Ok(lowered)
}

/// The program around the function with the attribute: the crate's sources, if the macro
/// can read them, and where in them the function is.
pub(crate) fn program_for(
    lowered: &mut cotan_syntax::Lowered,
    func: &syn::ItemFn,
    rule: program::Rule,
) -> syn::Result<program::Program> {
    let place = root_place(func);
    program_at(lowered, rule, place)
}

/// The program around `lowered`, at `place`; `lowered`'s calls of functions that take
/// structs of numbers field by field go to the copies the program makes of them.
pub(crate) fn program_at(
    lowered: &mut cotan_syntax::Lowered,
    rule: program::Rule,
    place: Place,
) -> syn::Result<program::Program> {
    let mut program = program::Program::new(lowered, rule, place.src, place.at);
    program.redirect_flat(&mut lowered.func).map_err(|(span, e)| syn::Error::new(lowered.span(span), e))?;
    Ok(program)
}

/// Where the function with an attribute is: its crate's sources, and the module (or block)
/// and function of them it is in. Both unknown when the macro cannot read them.
pub(crate) struct Place {
    pub src: Option<std::rc::Rc<sources::Sources>>,
    pub at: Option<(sources::ModId, Option<sources::FnId>)>,
}

/// Where the function with the attribute is, from the file its spans name.
pub(crate) fn root_place(func: &syn::ItemFn) -> Place {
    // The file of the function itself: a macro's attribute may be written elsewhere.
    let file = func.sig.ident.span().local_file().or_else(|| FILE.with(|f| f.borrow().clone()));
    let src = file.as_deref().and_then(sources::Sources::for_file);
    place_in(func, src, file)
}

/// Where `func` is in sources `src`, of which `file` holds it.
pub(crate) fn place_in(func: &syn::ItemFn, src: Option<std::rc::Rc<sources::Sources>>, file: Option<PathBuf>) -> Place {
    let name = func.sig.ident.to_string();
    let line = func.sig.ident.span().start().line;
    let at = match (&src, &file) {
        (Some(s), Some(file)) => s.locate(file, line, &name),
        _ => None,
    };
    if at.is_none() {
        // Not in the file its spans name: a documentation example, read from the docs.
        if let Some((doc, path, line)) = file.as_deref().and_then(|f| doctest::sources(f, func)) {
            let at = doc.locate(&path, line, &name);
            if at.is_some() {
                return Place { src: Some(std::rc::Rc::new(doc)), at };
            }
        }
    }
    // Sources that do not hold the function are not its crate's.
    Place { src: src.filter(|_| at.is_some()), at }
}

/// The derivative `f` as a Rust function, with the derivatives of the functions it calls
/// inside it.
fn emit_with_callees(
    f: &cotan_ir::Function,
    vis: TokenStream,
    lowered: &cotan_syntax::Lowered,
    program: &program::Program,
) -> syn::Result<TokenStream> {
    program.check_visibility().map_err(|e| syn::Error::new(Span::call_site(), e))?;
    let krate = cotan_path();
    // The callees' sweeps are `#[inline]` too: nested in an inline derivative, they would
    // otherwise get machine code (and LLVM time) in every crate, called or not.
    let mut nested: TokenStream = program
        .reachable(f)
        .iter()
        .map(|g| {
            let g = cotan_codegen::emit_fn_spanned(g, quote!(), &[], krate.clone());
            quote!(#[inline] #g)
        })
        .collect();
    nested.extend(field_type_checks(lowered, program));
    Ok(cotan_codegen::emit_fn_nested(f, vis, &lowered.spans, krate, nested))
}

/// Statements that make rustc check what cotan assumed about the types of fields: that
/// those whose use shows no number type (`p.n as f64`) are integers. The function's own
/// fields are checked where the derivative has its parameters; a callee's in a function
/// with its parameters, never called.
fn field_type_checks(lowered: &cotan_syntax::Lowered, program: &program::Program) -> TokenStream {
    let krate = cotan_path();
    let mut out = TokenStream::new();
    // (A union's fields are read in `unsafe` blocks.)
    let wrap = |unsafe_code: bool, check: TokenStream| {
        if unsafe_code {
            quote!(#[allow(unused_unsafe)] let _ = unsafe { #check };)
        } else {
            check
        }
    };
    for (path, span) in &lowered.assumed_int {
        if let Ok(e) = syn::parse_str::<syn::Expr>(path) {
            let e = respan(e.to_token_stream(), *span);
            let check = quote::quote_spanned!(*span=> #krate::rt::not_float(&#e););
            out.extend(wrap(lowered.func.unsafe_code, check));
        }
    }
    for (k, (f, paths)) in program.assumed_int.iter().enumerate() {
        let params = f.params.iter().map(|&p| {
            let n = match f.value(p).name.as_deref() {
                Some("self") => quote::format_ident!("this"),
                n => quote::format_ident!("{}", n.unwrap_or_default()),
            };
            let t = cotan_codegen::param_ty_tokens(f, f.ty(p));
            quote!(#n: #t)
        });
        let checks = paths.iter().filter_map(|p| {
            let p = p.strip_prefix("self.").map_or(p.clone(), |rest| format!("this.{rest}"));
            let e = syn::parse_str::<syn::Expr>(&p).ok()?;
            Some(wrap(f.unsafe_code, quote!(#krate::rt::not_float(&#e);)))
        });
        let name = quote::format_ident!("{}__field_types{k}", f.name);
        out.extend(quote! {
            #[allow(unused, non_snake_case)]
            fn #name(#(#params),*) { #(#checks)* }
        });
    }
    out
}

/// The derivatives a mark exports beside function `func`, for callers that cannot read its
/// source (other crates, doctests): `NAME__fwd` (forward mode, every float argument
/// `Dual`), `NAME__aug` and `NAME__rev` (the two sweeps of reverse mode, every float
/// argument active, sharing the caller's tape), and the forward modes of those two,
/// `NAME__aug__fwd` and `NAME__rev__fwd`, for second order.
pub(crate) fn exports(func: &syn::ItemFn, rule: program::Rule) -> syn::Result<TokenStream> {
    let mut lowered = match &rule {
        program::Rule::Body => lower_root(func)?,
        _ => cotan_syntax::Lowered {
            func: cotan_syntax::lower_signature(&func.sig)?,
            spans: vec![Span::call_site()],
            assumed_int: vec![],
            ret_shape: None,
        },
    };
    let required = matches!(rule, program::Rule::Body);
    let f = &lowered.func;
    // (Memory by value: a struct, or an array `[f64; N]`.)
    let by_value_struct = f.params.iter().any(|p| f.ty(*p).mem().is_some_and(|m| m.access == cotan_ir::Access::Owned));
    if by_value_struct {
        // Derivatives do not call it (structs and arrays are passed by reference), so it
        // exports none.
        return Ok(quote!());
    }
    let mut program = program_for(&mut lowered, func, rule)?;
    let name = func.sig.ident.to_string();
    let at = func.sig.ident.span();
    let site = |f: &cotan_ir::Function, need: cotan_ad::Need| cotan_ad::CallSite {
        callee: f.name.clone(),
        need,
        active: f.params.iter().map(|p| f.ty(*p).carries_derivative()).collect(),
        avail: vec![cotan_ad::Avail::Absent; f.params.len()],
        ret_active: f.returns.iter().any(|t| t.is_float()),
        arg_tys: f.params.iter().map(|p| f.ty(*p)).collect(),
        ret_tys: f.returns.clone(),
        records: f.records.clone(),
        tape: f.tape_param,
    };
    use cotan_ad::Linker;
    let f = lowered.func.clone();
    let link = |program: &mut program::Program, g: &cotan_ir::Function, need| {
        program.link(&site(g, need), cotan_ir::SpanId::NONE).map_err(|e| syn::Error::new(at, e))
    };
    // A custom derivative exports the modes it has rules for; a function cotan
    // differentiates must be differentiable in both.
    let mut exported = vec![];
    match link(&mut program, &f, cotan_ad::Need::Forward { width: 1 }) {
        Ok(fwd) => exported.push((format!("{name}__fwd"), fwd)),
        Err(e) if required => return Err(e),
        Err(_) => {}
    }
    let split = link(&mut program, &f, cotan_ad::Need::Augmented)
        .and_then(|aug| Ok((aug, link(&mut program, &f, cotan_ad::Need::Reverse)?)));
    match split {
        Ok((aug, rev)) => {
            exported.push((format!("{name}__aug"), aug.clone()));
            exported.push((format!("{name}__rev"), rev.clone()));
            // Second order through the function, where cotan can differentiate its sweeps
            // again (not through functions it knows only by exports it has not seen).
            for (part, sweep) in [("aug", aug), ("rev", rev)] {
                let g = program.made_fn(&sweep);
                let known = program.exported.clone();
                if let Ok(n) = link(&mut program, &g, cotan_ad::Need::Forward { width: 1 }) {
                    if program.exported.is_subset(&known) {
                        exported.push((format!("{name}__{part}__fwd"), n));
                    }
                }
            }
        }
        Err(e) if required => return Err(e),
        Err(_) => {}
    }
    let vis = &func.vis;
    let mut out = TokenStream::new();
    for (export, internal) in exported {
        let inner = program.made_fn(&internal);
        let wrapper = program::forwarding(&inner, &export);
        let tokens = emit_with_callees(&wrapper, quote!(#vis), &lowered, &program)?;
        out.extend(quote!(#[doc(hidden)] #[inline] #tokens));
    }
    Ok(out)
}

/// The activities of a spec as the user wrote them, for documentation.
fn acts_text(spec: &Spec) -> String {
    let mut parts: Vec<String> = vec![];
    if spec.width > 1 {
        parts.push(spec.width.to_string());
    }
    parts.extend(spec.inputs.iter().chain(spec.ret.iter()).map(|a| a.name().to_string()));
    parts.join(", ")
}

/// Runs the transform a spec asks for, verifies and simplifies the result.
fn differentiate(
    lowered: &cotan_syntax::Lowered,
    spec: &Spec,
    name: &str,
    program: &mut program::Program,
) -> syn::Result<cotan_ir::Function> {
    let result = match spec.mode {
        Mode::Forward => cotan_ad::forward(&lowered.func, spec, name, program),
        Mode::Reverse => cotan_ad::reverse(&lowered.func, spec, name, program),
    };
    let mut derived = result.map_err(|e| syn::Error::new(lowered.span(e.span), e.message))?;
    internal_check(&derived, "differentiation")?;
    cotan_ir::simplify::cse(&mut derived);
    cotan_ir::dead_stores::dead_stores(&mut derived);
    if spec.mode == Mode::Reverse {
        cotan_ir::fuse::fuse_sweeps(&mut derived);
    }
    internal_check(&derived, "simplification")?;
    Ok(derived)
}

pub(crate) fn attr_name(a: &syn::Attribute) -> String {
    a.path().segments.last().map(|s| s.ident.to_string()).unwrap_or_default()
}

/// The path of the `cotan` crate in the user's crate (it may be renamed in Cargo.toml).
pub(crate) fn cotan_path() -> TokenStream {
    use proc_macro_crate::{crate_name, FoundCrate};
    match crate_name("cotan") {
        Ok(FoundCrate::Name(n)) => {
            let n = syn::Ident::new(&n, Span::call_site());
            quote!(::#n)
        }
        _ => quote!(::cotan),
    }
}

/// Batched forward mode returns an array `[primal, t1, .., tN]` (or `[t1, .., tN]`): the
/// generated function returns a tuple, wrapped here.
fn batched(
    derived: &cotan_ir::Function,
    vis: TokenStream,
    lowered: &cotan_syntax::Lowered,
    program: &program::Program,
) -> syn::Result<TokenStream> {
    let mut inner = derived.clone();
    inner.name = "batched".into();
    let inner_tokens = emit_with_callees(&inner, quote!(), lowered, program)?;
    let name = syn::Ident::new(&derived.name, Span::call_site());
    // The parameters keep their names (`x`, `dx_0`, `dx_1`, ...) unless two would clash.
    let mut names: Vec<String> =
        derived.params.iter().map(|p| derived.value(*p).name.clone().unwrap_or_default()).collect();
    let distinct = names.iter().collect::<cotan_ir::HashSet<_>>().len() == names.len();
    if !distinct || names.iter().any(|n| n.is_empty() || n == "batched") {
        names = (0..names.len()).map(|k| format!("arg{k}")).collect();
    }
    let args: Vec<syn::Ident> = names.iter().map(|n| syn::Ident::new(n, Span::call_site())).collect();
    let params: Vec<TokenStream> = derived
        .params
        .iter()
        .zip(&args)
        .map(|(p, n)| {
            let t = cotan_codegen::param_ty_tokens(derived, derived.ty(*p));
            quote!(#n: #t)
        })
        .collect();
    let n = derived.returns.len();
    let elem = cotan_codegen::ty_tokens(derived.returns[0]);
    let outs: Vec<syn::Ident> = (0..n).map(|k| syn::Ident::new(&format!("r{k}"), Span::call_site())).collect();
    let n_lit = proc_macro2::Literal::usize_unsuffixed(n);
    // The function's generics (`M: Model`, a float type): the wrapper's too.
    let generics = cotan_codegen::generics_tokens(derived, &cotan_path());
    let head = cotan_codegen::wrapper_head(derived, quote!(#vis fn #name #generics(#(#params),*) -> [#elem; #n_lit]));
    Ok(quote! {
        #[allow(unused, non_snake_case, clippy::all, clippy::pedantic, clippy::nursery)]
        #head {
            #inner_tokens
            let (#(#outs),*) = batched(#(#args),*);
            [#(#outs),*]
        }
    })
}

/// `Dualv` (std's batched forward mode with one buffer per slice for all its tangents):
/// the batched derivative, wrapped so that each such buffer is cut into `width` lanes of the
/// slice's length.
fn lanes(
    derived: &cotan_ir::Function,
    args: &Args,
    lowered: &cotan_syntax::Lowered,
    vis: TokenStream,
    program: &program::Program,
) -> syn::Result<TokenStream> {
    let w = args.width;
    let mut inner = derived.clone();
    inner.name = "lanes".into();
    let inner_tokens = emit_with_callees(&inner, quote!(), lowered, program)?;
    let name = syn::Ident::new(&derived.name, Span::call_site());
    let primal = &lowered.func;
    let mut params = vec![];
    let mut prelude = TokenStream::new();
    let mut call = vec![];
    let mut next = derived.params.iter();
    for (k, (&p, &(act, span))) in primal.params.iter().zip(&args.acts).enumerate() {
        let at = *next.next().expect("a primal parameter");
        let x = quote::format_ident!("arg{}", k);
        let t = cotan_codegen::param_ty_tokens(derived, derived.ty(at));
        params.push(quote!(#x: #t));
        call.push(quote!(#x));
        if act == Activity::Const {
            continue;
        }
        let tangents: Vec<cotan_ir::Value> = (0..w).map(|_| *next.next().expect("a tangent")).collect();
        if !args.lanes[k] {
            for (j, &tp) in tangents.iter().enumerate() {
                let d = quote::format_ident!("d{}_{}", k, j);
                let t = cotan_codegen::param_ty_tokens(derived, derived.ty(tp));
                params.push(quote!(#d: #t));
                call.push(quote!(#d));
            }
            continue;
        }
        let Some(m) = primal.ty(p).mem().filter(|m| m.kind.dim().is_some() && m.kind.row().is_none()) else {
            return Err(syn::Error::new(span, "`Dualv` is for slices, arrays and vectors of numbers; use `Dual` here"));
        };
        let d = quote::format_ident!("d{}", k);
        let e = cotan_codegen::ty_tokens(cotan_ir::Ty::Scalar(m.elem));
        if derived.ty(tangents[0]).mem().is_some_and(|t| t.access == cotan_ir::Access::Mut) {
            params.push(quote!(#d: &mut [#e]));
            let it = quote::format_ident!("lanes{}", k);
            prelude.extend(quote! {
                assert_eq!(#d.len(), #w * #x.len(), "a `Dualv` tangent holds {} lanes of the argument's length", #w);
                let mut #it = #d.chunks_exact_mut(#x.len());
            });
            call.extend((0..w).map(|_| quote!(#it.next().unwrap())));
        } else {
            params.push(quote!(#d: &[#e]));
            prelude.extend(quote! {
                assert_eq!(#d.len(), #w * #x.len(), "a `Dualv` tangent holds {} lanes of the argument's length", #w);
            });
            call.extend((0..w).map(|j| quote!(&#d[#j * #x.len()..(#j + 1) * #x.len()])));
        }
    }
    let (ret, body) = match derived.returns.len() {
        0 => (quote!(), quote!(lanes(#(#call),*);)),
        1 => {
            let t = cotan_codegen::ty_tokens(derived.returns[0]);
            (quote!(-> #t), quote!(lanes(#(#call),*)))
        }
        n => {
            let elem = cotan_codegen::ty_tokens(derived.returns[0]);
            let outs: Vec<syn::Ident> = (0..n).map(|k| quote::format_ident!("r{}", k)).collect();
            (quote!(-> [#elem; #n]), quote!({ let (#(#outs),*) = lanes(#(#call),*); [#(#outs),*] }))
        }
    };
    let doc = format!(
        " Forward-mode derivative of [`{}`], batched over {w} directions (`Dualv`: one buffer of {w} lanes per slice).",
        primal.name
    );
    let generics = cotan_codegen::generics_tokens(derived, &cotan_path());
    let head = cotan_codegen::wrapper_head(derived, quote!(#vis fn #name #generics(#(#params),*) #ret));
    Ok(quote! {
        #[doc = #doc]
        #[allow(unused, non_snake_case, clippy::all, clippy::pedantic, clippy::nursery)]
        #head {
            #inner_tokens
            #prelude
            #body
        }
    })
}

/// The `n` numbers of the seed `dret` of a tuple or array result (`dret.0`, `dret[1]`),
/// which the derivative generated with one result per element takes one by one.
fn seed_parts(shape: cotan_syntax::ResultShape, n: usize) -> Vec<TokenStream> {
    (0..n)
        .map(|k| match shape {
            cotan_syntax::ResultShape::Tuple => {
                let k = syn::Index::from(k);
                quote!(dret.#k)
            }
            cotan_syntax::ResultShape::Array => quote!(dret[#k]),
        })
        .collect()
}

/// A function returning a tuple or an array (`-> (f64, f64)`, `-> [f64; 3]`) gets std's
/// signatures: the derivative is generated with one result per element and wrapped here.
/// Forward mode returns the result and its tangent, each a tuple/array (`Dual`), or one of
/// them; reverse mode takes the seed `dret` as one tuple/array and returns the result
/// then the gradients of the `Active` inputs.
fn shaped(
    derived: &cotan_ir::Function,
    shape: cotan_syntax::ResultShape,
    spec: &Spec,
    vis: TokenStream,
    lowered: &cotan_syntax::Lowered,
    program: &program::Program,
) -> syn::Result<TokenStream> {
    let mut inner = derived.clone();
    inner.name = "shaped".into();
    let inner_tokens = emit_with_callees(&inner, quote!(), lowered, program)?;
    let name = syn::Ident::new(&derived.name, Span::call_site());
    let results = &lowered.func.returns;
    let n = results.len();
    let pack = |vals: &[TokenStream]| match shape {
        cotan_syntax::ResultShape::Tuple => quote!((#(#vals,)*)),
        cotan_syntax::ResultShape::Array => quote!([#(#vals),*]),
    };
    let elem_tys: Vec<TokenStream> = results.iter().map(|t| cotan_codegen::ty_tokens(*t)).collect();
    let result_ty = match shape {
        cotan_syntax::ResultShape::Tuple => quote!((#(#elem_tys,)*)),
        cotan_syntax::ResultShape::Array => {
            let (e, n) = (&elem_tys[0], proc_macro2::Literal::usize_unsuffixed(n));
            quote!([#e; #n])
        }
    };
    // Parameters keep their names unless two would clash; seeds become one `dret`.
    let seeds = match (spec.mode, spec.ret) {
        (Mode::Reverse, Some(Activity::Active | Activity::ActiveOnly)) => n,
        _ => 0,
    };
    let kept = derived.params.len() - seeds;
    let mut names: Vec<String> =
        derived.params[..kept].iter().map(|p| derived.value(*p).name.clone().unwrap_or_default()).collect();
    let distinct = names.iter().collect::<cotan_ir::HashSet<_>>().len() == names.len();
    if !distinct || names.iter().any(|n| n.is_empty() || n == "shaped" || n == "dret") {
        names = (0..names.len()).map(|k| format!("arg{k}")).collect();
    }
    let args: Vec<syn::Ident> = names.iter().map(|n| syn::Ident::new(n, Span::call_site())).collect();
    let mut params: Vec<TokenStream> = derived.params[..kept]
        .iter()
        .zip(&args)
        .map(|(p, n)| {
            let t = cotan_codegen::param_ty_tokens(derived, derived.ty(*p));
            quote!(#n: #t)
        })
        .collect();
    let mut call_args: Vec<TokenStream> = args.iter().map(|a| quote!(#a)).collect();
    if seeds > 0 {
        params.push(quote!(dret: #result_ty));
        call_args.extend(seed_parts(shape, n));
    }
    let outs: Vec<TokenStream> = (0..derived.returns.len())
        .map(|k| {
            let r = syn::Ident::new(&format!("r{k}"), Span::call_site());
            quote!(#r)
        })
        .collect();
    let (ret_ty, value) = match (spec.mode, spec.ret) {
        (Mode::Forward, Some(act @ (Activity::Dual | Activity::DualOnly))) => {
            // Each result, then its `width` tangents: regroup by lane (the value, then each
            // direction's tangent), each lane a tuple/array of the results.
            let w = spec.width;
            let per = if act == Activity::Dual { w + 1 } else { w };
            let lanes: Vec<TokenStream> =
                (0..per).map(|k| pack(&(0..n).map(|r| outs[r * per + k].clone()).collect::<Vec<_>>())).collect();
            let per_lit = proc_macro2::Literal::usize_unsuffixed(per);
            match (w, act) {
                (1, Activity::DualOnly) => (result_ty.clone(), quote!(#(#lanes)*)),
                (1, _) => (quote!((#result_ty, #result_ty)), quote!((#(#lanes),*))),
                _ => (quote!([#result_ty; #per_lit]), quote!([#(#lanes),*])),
            }
        }
        (Mode::Forward, _) => (result_ty.clone(), pack(&outs)),
        (Mode::Reverse, act) => {
            let with_value = act != Some(Activity::ActiveOnly);
            let grads = if with_value { &outs[n..] } else { &outs[..] };
            let grad_tys: Vec<TokenStream> = derived.returns[derived.returns.len() - grads.len()..]
                .iter()
                .map(|t| cotan_codegen::param_ty_tokens(derived, *t))
                .collect();
            let v = pack(&outs[..n.min(outs.len())]);
            match (with_value, grads.len()) {
                (true, 0) => (result_ty.clone(), v),
                (true, _) => (quote!((#result_ty, #(#grad_tys),*)), quote!((#v, #(#grads),*))),
                (false, 1) => (quote!(#(#grad_tys)*), quote!(#(#grads)*)),
                (false, _) => (quote!((#(#grad_tys),*)), quote!((#(#grads),*))),
            }
        }
    };
    let bind = match outs.len() {
        0 => quote!(shaped(#(#call_args),*);),
        1 => quote!(let #(#outs)* = shaped(#(#call_args),*);),
        _ => quote!(let (#(#outs),*) = shaped(#(#call_args),*);),
    };
    // (Generic float code is refused before: only type parameters.)
    let generics = cotan_codegen::generics_tokens(derived, &cotan_path());
    Ok(quote! {
        #[allow(unused, non_snake_case, clippy::all, clippy::pedantic, clippy::nursery)]
        #vis fn #name #generics(#(#params),*) -> #ret_ty {
            #inner_tokens
            #bind
            #value
        }
    })
}

/// A wrong number of activities, pointing at the first extra one or at the last one given.
pub(crate) fn count_error(func: &syn::ItemFn, args: &Args, n_params: usize, has_ret: bool) -> syn::Error {
    let expected = n_params + usize::from(has_ret);
    let given = args.acts.len();
    let returns = match &func.sig.output {
        syn::ReturnType::Type(_, t) if has_ret => format!("returns `{}`", t.to_token_stream()),
        _ => "returns `()`".to_string(),
    };
    let parts = if has_ret {
        "one per parameter, then one for the result"
    } else {
        "one per parameter; none for a `()` result"
    };
    let msg = format!(
        "`{}` has {n_params} parameter(s) and {returns}, so it needs {expected} activit{} ({parts}); {given} given",
        func.sig.ident,
        if expected == 1 { "y" } else { "ies" },
    );
    let span = match args.acts.get(expected) {
        Some((_, extra)) => *extra,
        None => args.acts.last().map_or(args.name.span(), |a| a.1),
    };
    syn::Error::new(span, msg)
}

/// Runs a derivation, turning a panic (a bug in cotan) into a compile error: the macro must
/// never take the compiler down with it.
fn guarded<T>(f: impl FnOnce() -> syn::Result<T>) -> syn::Result<T> {
    if std::env::var_os("COTAN_PANIC").is_some() {
        // (For cotan's developers: the panic's backtrace.)
        std::panic::set_hook(Box::new(|i| eprintln!("{i}\n{}", std::backtrace::Backtrace::force_capture())));
        return f();
    }
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Err(syn::Error::new(
            Span::call_site(),
            format!("internal error in cotan ({what}); please report this with the function"),
        ))
    })
}

/// Turns an IR verifier failure into a compile error rather than emitting wrong code.
fn internal_check(f: &cotan_ir::Function, stage: &str) -> syn::Result<()> {
    cotan_ir::verify(f).map_err(|errs| {
        let first = errs.first().map(|e| e.to_string()).unwrap_or_default();
        syn::Error::new(
            Span::call_site(),
            format!(
                "internal error in cotan ({stage} produced invalid IR: {first}); please report this with the function"
            ),
        )
    })
}

pub(crate) fn respan(ts: TokenStream, span: Span) -> TokenStream {
    ts.into_iter()
        .map(|mut tt| {
            if let proc_macro2::TokenTree::Group(g) = &tt {
                let mut ng = proc_macro2::Group::new(g.delimiter(), respan(g.stream(), span));
                ng.set_span(span);
                tt = proc_macro2::TokenTree::Group(ng);
            } else {
                tt.set_span(span);
            }
            tt
        })
        .collect()
}

/// The derivative an attribute generates, as formatted Rust (what `cargo expand` shows),
/// without the hidden variants that other differentiated functions call.
pub fn derivative_source(mode: Mode, attr: TokenStream, func: &syn::ItemFn) -> syn::Result<String> {
    let out = guarded(|| derive(mode, attr, func))?;
    let file: syn::File = syn::parse2(out)?;
    Ok(prettyplease::unparse(&file))
}

#[cfg(test)]
fn expand_to_string(mode: Mode, attr: &str, func: &str) -> String {
    let func: syn::ItemFn = syn::parse_str(func).unwrap();
    derivative_source(mode, attr.parse().unwrap(), &func).unwrap_or_else(|e| format!("error: {e}"))
}

#[cfg(test)]
mod snapshots;
