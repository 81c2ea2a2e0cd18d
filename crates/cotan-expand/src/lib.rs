//! What cotan's attributes expand to, as a library: parses an attribute and its function,
//! runs the library crates (lowering, differentiation, code generation) and turns their
//! errors into `compile_error!`s with spans. `cotan-macros` calls it from the compiler,
//! `cotan-cli` from the command line.

mod callees;
mod custom;

pub use callees::set_source_file;

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
    let func: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            let e = syn::Error::new(
                Span::call_site(),
                "`#[autodiff_forward]`/`#[autodiff_reverse]` apply to functions only; put the attribute on a `fn`",
            );
            let e = e.to_compile_error();
            return quote!(#e #item);
        }
    };
    let own = [mode];
    finish(&func, &own, guarded(|| derive(mode, attr, &func, variant_modes(&func, &own))))
}

/// The function (marked if this attribute generated its callable variants) followed by
/// the generated items, or by the error.
fn finish(func: &syn::ItemFn, own: &[Mode], result: syn::Result<TokenStream>) -> TokenStream {
    let marked = mark_variants_done(func, own);
    match result {
        Ok(d) => quote!(#marked #d),
        Err(e) => {
            let e = e.to_compile_error();
            quote!(#func #e)
        }
    }
}

/// Makes a function callable from differentiated code: `#[cotan::differentiable]` keeps the
/// function as it is and generates, beside it, the derivatives that callers use.
pub fn differentiable(attr: TokenStream, item: TokenStream) -> TokenStream {
    let func: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            let e = syn::Error::new(Span::call_site(), "`#[cotan::differentiable]` applies to functions only")
                .to_compile_error();
            return quote!(#e #item);
        }
    };
    if !attr.is_empty() {
        let e = syn::Error::new(Span::call_site(), "`#[cotan::differentiable]` takes no arguments").to_compile_error();
        return quote!(#e #func);
    }
    let own = [Mode::Forward, Mode::Reverse];
    let result = guarded(|| {
        let Some(modes) = variant_modes(&func, &own) else { return Ok(quote!()) };
        let mut lowered = cotan_syntax::lower_fn(&func.sig, &func.block)?;
        internal_check(&lowered.func, "lowering")?;
        callees::resolve_imports(&mut lowered.func);
        callees::check(&lowered, Mode::Reverse)?;
        callees::check(&lowered, Mode::Forward)?;
        cotan_ir::simplify::cse(&mut lowered.func);
        callable_variants(&func, &lowered, &modes, Masks::All)
    });
    finish(&func, &own, result)
}

/// Uses the user's derivatives wherever the function is called from differentiated code:
/// `#[cotan::custom_derivative(forward = F, reverse = R)]`, where F and R have the
/// signatures `autodiff_forward`/`autodiff_reverse` would generate with every float
/// argument `Dual`/(`Active` or `Duplicated`) and a `Dual`/`Active` result. Either may be
/// given alone; the other mode is then unavailable.
pub fn custom_derivative(attr: TokenStream, item: TokenStream) -> TokenStream {
    with_function(item, "custom_derivative", |func| custom::custom_derivative(attr, func))
}

/// Treats the function's results as constants in differentiated code.
pub fn zero_derivative(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        let e = syn::Error::new(Span::call_site(), "`#[cotan::zero_derivative]` takes no arguments").to_compile_error();
        return quote!(#e #item);
    }
    with_function(item, "zero_derivative", custom::zero_derivative)
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
    let syn::Data::Struct(data) = &input.data else {
        return syn::Error::new(input.ident.span(), "`cotan::Differentiable` derives for structs only")
            .to_compile_error();
    };
    let krate = cotan_path();
    let body = match &data.fields {
        syn::Fields::Named(n) => {
            let names = n.named.iter().map(|f| f.ident.clone());
            quote!(Self { #( #names: #krate::Differentiable::zero_like(&self.#names), )* })
        }
        syn::Fields::Unnamed(u) => {
            let idx = (0..u.unnamed.len()).map(syn::Index::from);
            quote!(Self( #( #krate::Differentiable::zero_like(&self.#idx), )* ))
        }
        syn::Fields::Unit => quote!(Self),
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
        Err(_) => {
            let e = syn::Error::new(Span::call_site(), "`#[cotan::hvp]`/`#[cotan::hessian]` apply to functions only")
                .to_compile_error();
            return quote!(#e #item);
        }
    };
    let own = [Mode::Reverse];
    finish(&func, &own, guarded(|| derive_second_order(kind, attr, &func, variant_modes(&func, &own))))
}

fn derive_second_order(
    kind: SecondOrder,
    attr: TokenStream,
    func: &syn::ItemFn,
    variants: Option<Vec<Mode>>,
) -> syn::Result<TokenStream> {
    let name: syn::Ident = syn::parse2(attr).map_err(|e| {
        syn::Error::new(e.span(), "expected the name of the new function, as in `#[cotan::hvp(f_hvp)]`")
    })?;
    let mut lowered = cotan_syntax::lower_fn(&func.sig, &func.block)?;
    internal_check(&lowered.func, "lowering")?;
    callees::resolve_imports(&mut lowered.func);
    callees::check(&lowered, Mode::Reverse)?;
    cotan_ir::simplify::cse(&mut lowered.func);
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
        return Err(syn::Error::new(at, "second-order attributes need a function whose first parameter is `&[f64]` (or `&[f32]`) and which returns that float type"));
    }
    let n = f.params.len();
    let rev_spec = Spec {
        mode: Mode::Reverse,
        inputs: std::iter::once(Activity::Duplicated).chain(std::iter::repeat_n(Activity::Const, n - 1)).collect(),
        ret: Some(Activity::Active),
        width: 1,
    };
    let mut rev =
        cotan_ad::reverse(f, &rev_spec, "gradient").map_err(|e| syn::Error::new(lowered.span(e.span), e.message))?;
    internal_check(&rev, "differentiation")?;
    cotan_ir::simplify::cse(&mut rev);
    // The gradient function's parameters: x, dx, others..., dret.
    let fwd_inputs: Vec<Activity> =
        (0..rev.params.len()).map(|k| if k < 2 { Activity::Dual } else { Activity::Const }).collect();
    // Hessians take HESSIAN_LANES directions per call (batched forward mode), sharing the
    // gradient's primal work and partial derivatives between them.
    // (Batched mode does not pass through calls yet: one direction at a time there.)
    let mut calls = false;
    rev.walk(&mut |op| calls |= matches!(op.kind, cotan_ir::OpKind::Call { .. }));
    let width = if kind == SecondOrder::Hessian && !calls { HESSIAN_LANES } else { 1 };
    let fwd_spec = Spec { mode: Mode::Forward, inputs: fwd_inputs, ret: Some(Activity::Const), width };
    let mut inner =
        cotan_ad::forward(&rev, &fwd_spec, "hvp_of").map_err(|e| syn::Error::new(lowered.span(e.span), e.message))?;
    internal_check(&inner, "differentiation")?;
    cotan_ir::simplify::cse(&mut inner);
    internal_check(&inner, "simplification")?;
    let inner = cotan_codegen::emit_fn_spanned(&inner, quote!(), &lowered.spans, cotan_path());
    let lanes: Vec<syn::Ident> = (0..width).map(|k| syn::Ident::new(&format!("e{k}"), Span::call_site())).collect();
    let cols: Vec<syn::Ident> = (0..width).map(|k| syn::Ident::new(&format!("c{k}"), Span::call_site())).collect();
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
    let vis = &func.vis;
    let out = match kind {
        SecondOrder::Hvp => quote! {
            #[allow(unused, non_snake_case, clippy::all, clippy::pedantic, clippy::nursery)]
            #vis fn #name(#x: &[#elem], #v: &[#elem], #(#others,)* #grad: &mut [#elem], #hv: &mut [#elem]) -> #elem {
                #inner
                assert!(#v.len() == #x.len() && #grad.len() == #x.len() && #hv.len() == #x.len(), "cotan::hvp: v, grad and hv must have the length of x");
                #grad.fill(0.0);
                #hv.fill(0.0);
                hvp_of(#x, #v, #grad, #hv, #(#other_names,)* 1.0)
            }
        },
        SecondOrder::Hessian => quote! {
            #[allow(unused, non_snake_case, clippy::all, clippy::pedantic, clippy::nursery)]
            #vis fn #name(#x: &[#elem], #(#others,)* #grad: &mut [#elem], #hess: &mut [#elem]) -> #elem {
                #inner
                let n = #x.len();
                assert!(#grad.len() == n && #hess.len() == n * n, "cotan::hessian: grad must have the length n of x, hess n * n");
                // Unit directions and Hessian columns, #w at a time.
                let mut dirs = vec![vec![0.0; n]; #w];
                let mut columns = vec![vec![0.0; n]; #w];
                let mut value = 0.0;
                let mut j0 = 0;
                loop {
                    for (k, d) in dirs.iter_mut().enumerate() {
                        d.fill(0.0);
                        if j0 + k < n {
                            d[j0 + k] = 1.0;
                        }
                    }
                    for c in columns.iter_mut() {
                        c.fill(0.0);
                    }
                    #grad.fill(0.0);
                    let [#(#lanes),*] = &dirs[..] else { unreachable!() };
                    let [#(#cols),*] = &mut columns[..] else { unreachable!() };
                    value = hvp_of(#x, #(#lanes,)* #grad, #(#cols,)* #(#other_names,)* 1.0);
                    for (k, c) in columns.iter().enumerate() {
                        if j0 + k < n {
                            for i in 0..n {
                                #hess[i * n + j0 + k] = c[i];
                            }
                        }
                    }
                    j0 += #w;
                    if j0 >= n {
                        break;
                    }
                }
                // Both triangles get their mean, so the result is exactly symmetric.
                for i in 0..n {
                    for j in i + 1..n {
                        let m = 0.5 * (#hess[i * n + j] + #hess[j * n + i]);
                        #hess[i * n + j] = m;
                        #hess[j * n + i] = m;
                    }
                }
                value
            }
        },
    };
    let mut out = respan(out, name.span());
    if let Some(modes) = variants {
        out.extend(callable_variants(func, &lowered, &modes, masks_for(func))?);
    }
    Ok(out)
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
struct Args {
    name: syn::Ident,
    /// Batched forward mode's number of directions (1 when not given).
    width: usize,
    acts: Vec<(Activity, Span)>,
}

fn parse_args(mode: Mode, attr: TokenStream) -> syn::Result<Args> {
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
    let mut width = 1;
    for (k, e) in it.enumerate() {
        if let syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(n), .. }) = e {
            let n: usize = n.base10_parse()?;
            if mode == Mode::Reverse {
                return Err(syn::Error::new(e.span(), "a width (batched mode) is for `autodiff_forward` only"));
            }
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
        match word.as_deref().and_then(Activity::from_name) {
            Some(a) => acts.push((a, e.span())),
            None => {
                let shown = e.to_token_stream().to_string();
                return Err(syn::Error::new(
                    e.span(),
                    format!("unknown activity `{shown}`; use one of Const, Active, ActiveOnly, Dual, DualOnly, Duplicated, DuplicatedOnly"),
                ));
            }
        }
    }
    Ok(Args { name, width, acts })
}

fn derive(mode: Mode, attr: TokenStream, func: &syn::ItemFn, variants: Option<Vec<Mode>>) -> syn::Result<TokenStream> {
    let args = parse_args(mode, attr)?;
    let mut lowered = cotan_syntax::lower_fn(&func.sig, &func.block)?;
    internal_check(&lowered.func, "lowering")?;
    callees::resolve_imports(&mut lowered.func);
    callees::check(&lowered, mode)?;
    cotan_ir::simplify::cse(&mut lowered.func);
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
    let derived = differentiate(&lowered, &spec, &args.name.to_string())?;
    let vis = func.vis.to_token_stream();
    let body = match (args.width, spec.ret) {
        (w, Some(Activity::Dual | Activity::DualOnly)) if w > 1 => batched(&derived, vis),
        _ => cotan_codegen::emit_fn_spanned(&derived, vis, &lowered.spans, cotan_path()),
    };
    let nested = nested_variants(&derived, func.vis.to_token_stream(), &lowered.spans);
    let orig = &func.sig.ident;
    let doc = format!(
        " {} derivative of [`{orig}`], generated by cotan with activities `{}`.",
        if mode == Mode::Forward { "Forward-mode" } else { "Reverse-mode" },
        acts_text(&spec)
    );
    let mut out = quote! {
        #[doc = #doc]
        #body
        #nested
    };
    if let Some(modes) = variants {
        out.extend(callable_variants(func, &lowered, &modes, masks_for(func))?);
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
pub fn differentiate(lowered: &cotan_syntax::Lowered, spec: &Spec, name: &str) -> syn::Result<cotan_ir::Function> {
    let result = match spec.mode {
        Mode::Forward => cotan_ad::forward(&lowered.func, spec, name),
        Mode::Reverse => cotan_ad::reverse(&lowered.func, spec, name),
    };
    let mut derived = result.map_err(|e| syn::Error::new(lowered.span(e.span), e.message))?;
    internal_check(&derived, "differentiation")?;
    cotan_ir::simplify::cse(&mut derived);
    internal_check(&derived, "simplification")?;
    Ok(derived)
}

const COTAN_ATTRIBUTES: [&str; 7] = [
    "autodiff_forward",
    "autodiff_reverse",
    "differentiable",
    "hvp",
    "hessian",
    "custom_derivative",
    "zero_derivative",
];

pub(crate) fn attr_name(a: &syn::Attribute) -> String {
    a.path().segments.last().map(|s| s.ident.to_string()).unwrap_or_default()
}

/// The modes of the callable variants this attribute must generate: those of every cotan
/// attribute on the function (the outermost one sees them all and generates them once).
/// `None` if they are already generated, or if a custom derivative provides them.
fn variant_modes(func: &syn::ItemFn, own: &[Mode]) -> Option<Vec<Mode>> {
    let names: Vec<String> = func.attrs.iter().map(attr_name).collect();
    if names.iter().any(|n| n == "__variants_done" || n == "custom_derivative" || n == "zero_derivative") {
        return None;
    }
    let mut modes: Vec<Mode> = own.to_vec();
    for n in &names {
        match n.as_str() {
            "autodiff_forward" => modes.push(Mode::Forward),
            "autodiff_reverse" | "hvp" | "hessian" => modes.push(Mode::Reverse),
            "differentiable" => modes.extend([Mode::Forward, Mode::Reverse]),
            _ => {}
        }
    }
    let mut unique = vec![];
    for m in modes {
        if !unique.contains(&m) {
            unique.push(m);
        }
    }
    Some(unique)
}

/// The function as re-emitted: if other cotan attributes remain on it, a hidden marker
/// tells them that the callable variants exist.
fn mark_variants_done(func: &syn::ItemFn, own: &[Mode]) -> syn::ItemFn {
    let mut f = func.clone();
    // A function used only through its derivative is not dead code (std's derivative calls
    // the original; cotan's is a copy).
    if !f.attrs.iter().any(|a| a.path().is_ident("allow") && a.to_token_stream().to_string().contains("dead_code")) {
        f.attrs.push(syn::parse_quote!(#[allow(dead_code)]));
    }
    let remaining = func.attrs.iter().any(|a| COTAN_ATTRIBUTES.contains(&attr_name(a).as_str()));
    if remaining && variant_modes(func, own).is_some() {
        let krate = cotan_path();
        f.attrs.push(syn::parse_quote!(#[#krate::__variants_done]));
    }
    f
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

/// Most float memory parameters for which every activity combination is generated.
const MAX_MEMORY_PARAMS: usize = 5;

/// The derivatives a differentiated caller may call: forward and reverse, for every
/// combination of active and constant float memory parameters (float scalars are always
/// active; a constant one costs a multiplication by zero, never a buffer).
fn callable_variants(
    func: &syn::ItemFn,
    lowered: &cotan_syntax::Lowered,
    modes: &[Mode],
    masks: Masks,
) -> syn::Result<TokenStream> {
    let mut out =
        variants_of(&func.sig.ident.to_string(), func.vis.to_token_stream(), lowered, modes, MAX_MEMORY_PARAMS, masks)?;
    out.extend(field_type_checks(func, lowered));
    Ok(out)
}

/// A function never called, whose body makes rustc check what cotan assumed about the
/// types of fields: that those whose use shows no number type are integers.
fn field_type_checks(func: &syn::ItemFn, lowered: &cotan_syntax::Lowered) -> TokenStream {
    if lowered.assumed_int.is_empty() {
        return quote!();
    }
    let krate = cotan_path();
    let name = quote::format_ident!("__cotan_field_types_{}", func.sig.ident);
    let inputs = &func.sig.inputs;
    let generics = &func.sig.generics;
    let checks = lowered.assumed_int.iter().filter_map(|(path, span)| {
        let e = respan(syn::parse_str::<syn::Expr>(path).ok()?.to_token_stream(), *span);
        Some(quote::quote_spanned!(*span=> #krate::rt::not_float(&#e);))
    });
    quote! {
        #[doc(hidden)]
        #[allow(unused, non_snake_case, clippy::all)]
        fn #name #generics(#inputs) {
            #( #checks )*
        }
    }
}

/// Which combinations of active and constant float references get a variant. Each one is
/// compiled (type-checked at least), so only `#[cotan::differentiable]` asks for all of
/// them; a function with only autodiff attributes is callable with all its references
/// active or all constant.
#[derive(Clone, Copy, PartialEq)]
enum Masks {
    All,
    AllOrNone,
    AllActive,
}

impl Masks {
    fn includes(self, bits: usize, n: usize) -> bool {
        let all = (1usize << n) - 1;
        match self {
            Masks::All => true,
            Masks::AllOrNone => bits == 0 || bits == all,
            Masks::AllActive => bits == all,
        }
    }
}

fn masks_for(func: &syn::ItemFn) -> Masks {
    if func.attrs.iter().any(|a| attr_name(a) == "differentiable") {
        Masks::All
    } else {
        Masks::AllOrNone
    }
}

/// Most float memory parameters of a generated derivative for which forward variants (for
/// nested differentiation) are generated.
const MAX_NESTED_MEMORY_PARAMS: usize = 3;

/// Forward variants of a generated derivative, so that a forward-mode function may call it
/// (forward over reverse, forward over forward), as std documents nesting. Derivatives
/// that call other functions are left out (their callees' derivatives have none).
fn nested_variants(derived: &cotan_ir::Function, vis: TokenStream, spans: &[Span]) -> TokenStream {
    let mut calls = false;
    derived.walk(&mut |op| calls |= matches!(op.kind, cotan_ir::OpKind::Call { .. }));
    if calls || derived.returns.iter().any(|t| !t.is_float()) {
        return quote!();
    }
    let lowered = cotan_syntax::Lowered { func: derived.clone(), spans: spans.to_vec(), assumed_int: vec![] };
    variants_of(&derived.name, vis, &lowered, &[Mode::Forward], MAX_NESTED_MEMORY_PARAMS, Masks::AllActive)
        .unwrap_or_default()
}

fn variants_of(
    name: &str,
    vis: TokenStream,
    lowered: &cotan_syntax::Lowered,
    modes: &[Mode],
    max_mems: usize,
    masks: Masks,
) -> syn::Result<TokenStream> {
    // Reverse variants of `#[cotan::differentiable]` functions get the forward variant a
    // Hessian-vector product through a call needs (not those of derivatives: no nesting
    // beyond second order; not those of functions with only autodiff attributes, whose
    // variants cost compile time in every crate that uses them).
    let nest = masks == Masks::All;
    let f = &lowered.func;
    let mems: Vec<usize> =
        (0..f.params.len()).filter(|k| f.ty(f.params[*k]).mem().is_some_and(|m| m.elem.is_float())).collect();
    if mems.len() > max_mems {
        return Ok(quote!());
    }
    let mut out = TokenStream::new();
    for bits in (0..(1usize << mems.len())).filter(|b| masks.includes(*b, mems.len())) {
        let mask: String = (0..mems.len()).map(|k| if bits >> k & 1 == 1 { '1' } else { '0' }).collect();
        for &mode in modes {
            let spec = variant_spec(f, mode, &mask);
            let kind = if mode == Mode::Forward { "fwd" } else { "rev" };
            let variant = format!("__cotan_{kind}_{name}_m{mask}");
            // A variant the engine cannot build is left out: only a caller that needs it
            // is affected, and gets an error naming it.
            if let Ok(derived) = differentiate(lowered, &spec, &variant) {
                let tokens = cotan_codegen::emit_fn_spanned(&derived, vis.clone(), &lowered.spans, cotan_path());
                // `#[inline]`: rustc generates code for a variant only where it is called,
                // so the variants nobody calls cost type checking, not code generation.
                out.extend(quote!(#[doc(hidden)] #[inline] #tokens));
                if mode == Mode::Reverse && nest {
                    out.extend(forward_of_reverse(&derived, &mask, vis.clone(), &lowered.spans));
                }
            }
        }
    }
    Ok(out)
}

/// The activities of the callable variant `__cotan_{fwd,rev}_NAME_m{mask}` of `f`: float
/// scalars and the result are always active; float memory parameters are active where
/// `mask` (one `0`/`1` per float memory parameter, in order) says so.
pub fn variant_spec(f: &cotan_ir::Function, mode: Mode, mask: &str) -> Spec {
    let mut bits = mask.chars();
    let inputs = f
        .params
        .iter()
        .map(|p| match f.ty(*p) {
            cotan_ir::Ty::Scalar(s) if s.is_float() => {
                if mode == Mode::Forward {
                    Activity::Dual
                } else {
                    Activity::Active
                }
            }
            cotan_ir::Ty::Mem(m) if m.elem.is_float() => match (bits.next(), mode) {
                (Some('1'), Mode::Forward) => Activity::Dual,
                (Some('1'), Mode::Reverse) => Activity::Duplicated,
                _ => Activity::Const,
            },
            _ => Activity::Const,
        })
        .collect();
    let ret = f.returns.first().map(|t| match (t.is_float(), mode) {
        (true, Mode::Forward) => Activity::Dual,
        (true, Mode::Reverse) => Activity::Active,
        _ => Activity::Const,
    });
    Spec { mode, inputs, ret, width: 1 }
}

/// The forward variant of the reverse variant `rev` (made with memory `mask`) that forward
/// over reverse calls: tangents for the active references and their shadows.
fn forward_of_reverse(rev: &cotan_ir::Function, mask: &str, vis: TokenStream, spans: &[Span]) -> TokenStream {
    // Its callees' reverse variants would need such variants too, which custom derivatives
    // do not have: second order goes through one level of calls.
    let mut calls = false;
    rev.walk(&mut |op| calls |= matches!(op.kind, cotan_ir::OpKind::Call { .. }));
    if calls {
        return quote!();
    }
    let params: Vec<cotan_ir::Ty> = rev.params.iter().map(|p| rev.ty(*p)).collect();
    let nested_mask = cotan_ad::forward_of_reverse_mask(&params, mask);
    let spec = variant_spec(rev, Mode::Forward, &nested_mask);
    let name = format!("__cotan_fwd_{}_m{nested_mask}", rev.name);
    let lowered = cotan_syntax::Lowered { func: rev.clone(), spans: spans.to_vec(), assumed_int: vec![] };
    match differentiate(&lowered, &spec, &name) {
        Ok(derived) => {
            let tokens = cotan_codegen::emit_fn_spanned(&derived, vis, spans, cotan_path());
            quote!(#[doc(hidden)] #[inline] #tokens)
        }
        Err(_) => quote!(),
    }
}

/// Batched forward mode returns an array `[primal, t1, .., tN]` (or `[t1, .., tN]`): the
/// generated function returns a tuple, wrapped here.
fn batched(derived: &cotan_ir::Function, vis: TokenStream) -> TokenStream {
    let mut inner = derived.clone();
    inner.name = "batched".into();
    let inner_tokens = cotan_codegen::emit_fn_spanned(&inner, quote!(), &[], cotan_path());
    let name = syn::Ident::new(&derived.name, Span::call_site());
    // The parameters keep their names (`x`, `dx_0`, `dx_1`, ...) unless two would clash.
    let mut names: Vec<String> =
        derived.params.iter().map(|p| derived.value(*p).name.clone().unwrap_or_default()).collect();
    let distinct = names.iter().collect::<std::collections::HashSet<_>>().len() == names.len();
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
    quote! {
        #[allow(unused, non_snake_case, clippy::all, clippy::pedantic, clippy::nursery)]
        #vis fn #name(#(#params),*) -> [#elem; #n_lit] {
            #inner_tokens
            let (#(#outs),*) = batched(#(#args),*);
            [#(#outs),*]
        }
    }
}

/// A wrong number of activities, pointing at the first extra one or at the last one given.
fn count_error(func: &syn::ItemFn, args: &Args, n_params: usize, has_ret: bool) -> syn::Error {
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
fn guarded(f: impl FnOnce() -> syn::Result<TokenStream>) -> syn::Result<TokenStream> {
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

fn respan(ts: TokenStream, span: Span) -> TokenStream {
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
    let out = guarded(|| derive(mode, attr, func, None))?;
    let mut file: syn::File = syn::parse2(out)?;
    file.items.retain(|item| !matches!(item, syn::Item::Fn(f) if f.sig.ident.to_string().starts_with("__cotan_")));
    Ok(prettyplease::unparse(&file))
}

#[cfg(test)]
fn expand_to_string(mode: Mode, attr: &str, func: &str) -> String {
    let func: syn::ItemFn = syn::parse_str(func).unwrap();
    derivative_source(mode, attr.parse().unwrap(), &func).unwrap_or_else(|e| format!("error: {e}"))
}

#[cfg(test)]
mod snapshots;
