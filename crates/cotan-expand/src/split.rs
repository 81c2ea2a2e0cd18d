//! `#[cotan::autodiff_split(FORWARD, REVERSE, ACTIVITIES...)]`: the two sweeps of reverse
//! mode as two functions, with the record (the tape) between them held by the caller, so
//! that one forward sweep serves reverse sweeps for several seeds. They are the same two
//! sweeps a caller's derivative uses for a call, with no memory readable by the reverse
//! sweep: the record holds everything it needs, whatever the caller does in between.

use cotan_ad::{Avail, CallSite, Linker, Mode, Need};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, ToTokens};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;

pub(crate) fn derive(attr: TokenStream, func: &syn::ItemFn) -> syn::Result<TokenStream> {
    let usage = "expected `#[cotan::autodiff_split(FORWARD, REVERSE, INPUT_ACTIVITIES..., OUTPUT_ACTIVITY)]`";
    let items = syn::parse::Parser::parse2(Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated, attr)?;
    let name = |k: usize| -> syn::Result<syn::Ident> {
        match items.iter().nth(k) {
            Some(syn::Expr::Path(p)) if p.path.get_ident().is_some() => Ok(p.path.get_ident().unwrap().clone()),
            Some(e) => Err(syn::Error::new(e.span(), format!("{usage}: a function name here"))),
            None => Err(syn::Error::new(Span::call_site(), usage)),
        }
    };
    let (fwd_name, rev_name) = (name(0)?, name(1)?);
    // The activities, read as `autodiff_reverse` reads them (with REVERSE as its NAME).
    let rest: Punctuated<syn::Expr, syn::Token![,]> = items.into_iter().skip(1).collect();
    let args = crate::parse_args(Mode::Reverse, rest.to_token_stream())?;
    let mut lowered = crate::lower_root(func)?;
    if lowered.func.generic_float.is_some() {
        return Err(syn::Error::new(func.sig.generics.span(), "`autodiff_split` does not support generic functions yet; put it on a function of `f64` that calls this one"));
    }
    let mut program = crate::program_for(&mut lowered, func, crate::program::Rule::Body)?;
    let f = &lowered.func;
    let has_ret = !f.returns.is_empty();
    let mut acts = args.acts.clone();
    if acts.len() != f.params.len() + usize::from(has_ret) {
        return Err(crate::count_error(func, &args, f.params.len(), has_ret));
    }
    let ret = if has_ret { acts.pop() } else { None };
    let spec = cotan_ad::Spec {
        mode: Mode::Reverse,
        inputs: acts.iter().map(|a| a.0).collect(),
        ret: ret.map(|r| r.0),
        width: 1,
    };
    if let Err(e) = cotan_ad::check(f, &spec) {
        let span = match e.target {
            cotan_ad::Target::Input(k) => acts[k].1,
            cotan_ad::Target::Return => ret.map_or(func.sig.output.span(), |r| r.1),
            cotan_ad::Target::Whole => rev_name.span(),
        };
        return Err(syn::Error::new(span, e.message));
    }
    program.reserve(&fwd_name.to_string());
    program.reserve(&rev_name.to_string());
    let site = |need| CallSite {
        callee: f.name.clone(),
        need,
        active: spec.inputs.iter().map(|a| a.is_active()).collect(),
        avail: vec![Avail::Absent; f.params.len()],
        ret_active: spec.ret.is_some_and(|a| a.is_active()),
        arg_tys: f.params.iter().map(|p| f.ty(*p)).collect(),
        ret_tys: f.returns.clone(),
        records: f.records.clone(),
        tape: false,
    };
    let at = func.sig.ident.span();
    let aug = program.link(&site(Need::Augmented), cotan_ir::SpanId::NONE).map_err(|e| syn::Error::new(at, e))?;
    let rev = program.link(&site(Need::Reverse), cotan_ir::SpanId::NONE).map_err(|e| syn::Error::new(at, e))?;
    program.check_visibility().map_err(|e| syn::Error::new(at, e))?;
    let (aug, rev) = (program.made_fn(&aug), program.made_fn(&rev));
    let krate = crate::cotan_path();
    let nested = |g: &cotan_ir::Function| -> TokenStream {
        program
            .reachable(g)
            .into_iter()
            .chain(std::iter::once(g))
            .map(|h| {
                let h = cotan_codegen::emit_fn_spanned(h, quote!(), &[], krate.clone());
                quote!(#[inline] #h)
            })
            .collect()
    };
    let of = f.name.clone();
    let vis = &func.vis;

    // FORWARD: the function's own parameters; its result and the record.
    let inputs = &func.sig.inputs;
    let arg_names: Vec<TokenStream> = func
        .sig
        .inputs
        .iter()
        .map(|a| match a {
            syn::FnArg::Receiver(r) => r.self_token.to_token_stream(),
            syn::FnArg::Typed(pt) => pt.pat.to_token_stream(),
        })
        .collect();
    let aug_name = format_ident!("{}", aug.name);
    let aug_items = nested(&aug);
    let (fwd_ret, fwd_out) = match &func.sig.output {
        syn::ReturnType::Type(_, t) => {
            (quote!(-> (#t, #krate::Record)), quote!((__result, #krate::Record::new(__tape, #of))))
        }
        syn::ReturnType::Default => (quote!(-> #krate::Record), quote!(#krate::Record::new(__tape, #of))),
    };
    // (The sweeps of an `unsafe fn` are `unsafe` too.)
    let unsafety = &func.sig.unsafety;
    let fwd_doc = format!(" The forward sweep of [`{of}`]'s reverse mode (generated by cotan): its result, and the record that [`{rev_name}`] takes.");
    // (An array result comes from the sweep as one number per element.)
    let n = f.returns.len();
    let result = match &func.sig.output {
        syn::ReturnType::Type(_, t) if matches!(**t, syn::Type::Array(_)) && n > 1 => {
            let rs: Vec<syn::Ident> = (0..n).map(|k| format_ident!("r{k}")).collect();
            quote!(let (#(#rs),*) = #aug_name(#(#arg_names,)* &mut __tape); let __result = [#(#rs),*];)
        }
        syn::ReturnType::Type(_, t) if matches!(**t, syn::Type::Array(_)) => {
            quote!(let __result = [#aug_name(#(#arg_names,)* &mut __tape)];)
        }
        _ => quote!(let __result = #aug_name(#(#arg_names,)* &mut __tape);),
    };
    let forward = quote! {
        #[doc = #fwd_doc]
        #[allow(unused, non_snake_case, clippy::all, clippy::pedantic, clippy::nursery)]
        #vis #unsafety fn #fwd_name(#inputs) #fwd_ret {
            #aug_items
            let mut __tape = #krate::rt::Tape::acquire();
            #result
            #fwd_out
        }
    };

    // REVERSE: the record, the shadows, the seed; the gradients of `Active` arguments.
    let rev_name_inner = format_ident!("{}", rev.name);
    let rev_items = nested(&rev);
    let params: Vec<(syn::Ident, TokenStream)> = rev
        .params
        .iter()
        .map(|&p| {
            (
                format_ident!("{}", rev.value(p).name.clone().unwrap_or_default()),
                cotan_codegen::param_ty_tokens(&rev, rev.ty(p)),
            )
        })
        .collect();
    let (mut pn, mut pt): (Vec<_>, Vec<_>) = params.into_iter().unzip();
    // A tuple or array result takes its seed as one tuple or array, as `autodiff_reverse`'s
    // derivative does (the sweep takes one number per element, last).
    let mut call: Vec<TokenStream> = pn.iter().map(|p| quote!(#p)).collect();
    let seeded = spec.ret.is_some_and(|a| a.is_active()) && pn.len() >= n;
    if let (Some(shape), true) = (lowered.ret_shape, seeded) {
        let seeds = pn.len() - n;
        if pn[seeds..].iter().all(|p| p.to_string().starts_with("dret")) {
            let ty = match &func.sig.output {
                syn::ReturnType::Type(_, t) => (**t).clone(),
                syn::ReturnType::Default => unreachable!("checked: a result"),
            };
            pn.truncate(seeds);
            pt.truncate(seeds);
            call.truncate(seeds);
            call.extend(crate::seed_parts(shape, n));
            pn.push(format_ident!("dret"));
            pt.push(ty.to_token_stream());
        }
    }
    let ret = match rev.returns.as_slice() {
        [] => quote!(),
        [t] => {
            let t = cotan_codegen::ty_tokens(*t);
            quote!(-> #t)
        }
        ts => {
            let ts = ts.iter().map(|t| cotan_codegen::ty_tokens(*t));
            quote!(-> (#(#ts),*))
        }
    };
    let acts_text: Vec<&str> = spec.inputs.iter().chain(spec.ret.iter()).map(|a| a.name()).collect();
    let rev_doc = format!(
        " The reverse sweep of [`{of}`]'s reverse mode (generated by cotan with activities `{}`), from the record [`{fwd_name}`] made; it may run any number of times.",
        acts_text.join(", ")
    );
    let reverse = quote! {
        #[doc = #rev_doc]
        #[allow(unused, non_snake_case, clippy::all, clippy::pedantic, clippy::nursery)]
        #vis #unsafety fn #rev_name(record: &#krate::Record, #(#pn: #pt),*) #ret {
            #rev_items
            let mut __tape = record.replay(#of);
            let __gradients = #rev_name_inner(#(#call,)* &mut __tape);
            __tape.release();
            __gradients
        }
    };
    Ok(quote!(#forward #reverse))
}

/// `#[autodiff_reverse(NAME, W, ...)]`, std's batched reverse mode: `W` shadows per
/// `Duplicated` argument, filled by one forward sweep and `W` reverse sweeps, each from the
/// same record (the two sweeps `autodiff_split` makes, in one function).
pub(crate) fn batched_reverse(
    func: &syn::ItemFn,
    args: &crate::Args,
    spec: &cotan_ad::Spec,
    lowered: &cotan_syntax::Lowered,
    program: &mut crate::program::Program,
) -> syn::Result<TokenStream> {
    use cotan_ad::Activity;
    let f = &lowered.func;
    let w = args.width;
    let inputs_ok = spec.inputs.iter().all(|a| matches!(a, Activity::Const | Activity::Duplicated));
    if !inputs_ok || spec.ret.is_some_and(|r| r != Activity::Const) || f.generic_float.is_some() {
        return Err(syn::Error::new(
            args.name.span(),
            "cotan's batched reverse mode (a width) takes `Duplicated` and `Const` arguments and a `Const` result (or none), in functions of `f64`/`f32`; write a loop over the seeds with `autodiff_split` for the rest",
        ));
    }
    let site = |need| CallSite {
        callee: f.name.clone(),
        need,
        active: spec.inputs.iter().map(|a| a.is_active()).collect(),
        avail: vec![Avail::Absent; f.params.len()],
        ret_active: false,
        arg_tys: f.params.iter().map(|p| f.ty(*p)).collect(),
        ret_tys: f.returns.clone(),
        records: f.records.clone(),
        tape: false,
    };
    let at = func.sig.ident.span();
    let aug = program.link(&site(Need::Augmented), cotan_ir::SpanId::NONE).map_err(|e| syn::Error::new(at, e))?;
    let rev = program.link(&site(Need::Reverse), cotan_ir::SpanId::NONE).map_err(|e| syn::Error::new(at, e))?;
    program.check_visibility().map_err(|e| syn::Error::new(at, e))?;
    let (aug, rev) = (program.made_fn(&aug), program.made_fn(&rev));
    let duplicated: Vec<usize> = (0..f.params.len()).filter(|&k| spec.inputs[k] == Activity::Duplicated).collect();
    if rev.params.len() != duplicated.len() {
        return Err(syn::Error::new(at, "cotan's batched reverse mode cannot split this function's sweeps yet; write a loop over the seeds with `autodiff_split`"));
    }
    let krate = crate::cotan_path();
    let items: TokenStream = program
        .reachable(&aug)
        .into_iter()
        .chain(program.reachable(&rev))
        .chain([&*aug, &*rev])
        .map(|h| cotan_codegen::emit_fn_spanned(h, quote!(), &[], krate.clone()))
        .collect();
    let mut params = vec![];
    let mut primal_args = vec![];
    let mut lanes: Vec<Vec<syn::Ident>> = vec![vec![]; w];
    for (k, &p) in f.params.iter().enumerate() {
        let x = format_ident!("arg{}", k);
        let t = cotan_codegen::param_ty_tokens(f, f.ty(p));
        params.push(quote!(#x: #t));
        primal_args.push(quote!(#x));
        if duplicated.contains(&k) {
            let dt = cotan_codegen::param_ty_tokens(
                &rev,
                rev.ty(rev.params[duplicated.iter().position(|&d| d == k).unwrap()]),
            );
            for (j, lane) in lanes.iter_mut().enumerate() {
                let d = format_ident!("d{}_{}", k, j);
                params.push(quote!(#d: #dt));
                lane.push(d);
            }
        }
    }
    // A sweep generic over the function's type parameters (`M: Model`) that takes none of
    // them (the reverse sweep of a `Const` model) is called with them named.
    let turbofish = |g: &cotan_ir::Function| -> TokenStream {
        let names: Vec<syn::Ident> = g
            .type_params
            .iter()
            .map(|decl| format_ident!("{}", decl.split(':').next().unwrap_or_default().trim()))
            .collect();
        match names.is_empty() {
            true => quote!(),
            false => quote!(::<#(#names),*>),
        }
    };
    let (aug_name, rev_name) = (format_ident!("{}", aug.name), format_ident!("{}", rev.name));
    let (aug_args, rev_args) = (turbofish(&aug), turbofish(&rev));
    let (aug_name, rev_name) = (quote!(#aug_name #aug_args), quote!(#rev_name #rev_args));
    let of = f.name.clone();
    let sweeps = lanes.iter().map(|lane| {
        quote! {
            let mut __tape = __record.replay(#of);
            #rev_name(#(&mut *#lane,)* &mut __tape);
            __tape.release();
        }
    });
    let (ret, result) = match lowered.func.returns.as_slice() {
        [] => (quote!(), quote!()),
        _ => {
            let t = match &func.sig.output {
                syn::ReturnType::Type(_, t) => t.to_token_stream(),
                syn::ReturnType::Default => quote!(()),
            };
            (quote!(-> #t), quote!(__result))
        }
    };
    let name = &args.name;
    let vis = &func.vis;
    // The function's type parameters (`M: Model`; generic float code is refused above).
    let generics = cotan_codegen::generics_tokens(f, &krate);
    let doc =
        format!(" Reverse-mode derivative of [`{of}`], batched over {w} seeds: one forward sweep, {w} reverse sweeps.");
    Ok(quote! {
        #[doc = #doc]
        #[inline]
        #[allow(unused, non_snake_case, clippy::all, clippy::pedantic, clippy::nursery)]
        #vis fn #name #generics(#(#params),*) #ret {
            #items
            let mut __tape = #krate::rt::Tape::acquire();
            let __result = #aug_name(#(#primal_args,)* &mut __tape);
            let __record = #krate::Record::new(__tape, #of);
            #(#sweeps)*
            #result
        }
    })
}
