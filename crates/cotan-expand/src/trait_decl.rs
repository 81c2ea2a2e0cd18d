//! std's form of derivatives through traits: an autodiff attribute on a method's
//! declaration (`trait Model { #[autodiff_reverse(d_f, ..)] fn f(&self, x: f64) -> f64; }`),
//! with the bodies in impls that carry no attribute.
//!
//! Rust gives the attribute the declaration alone, and inside a trait it can only add trait
//! items, so the derivative is a provided method of the trait. Its body holds, for each impl
//! of the trait in the crate, the derivative of a function that calls that impl's method,
//! and runs the one for the type it is called on (`Any::downcast_ref`: after
//! monomorphisation a constant test). A type whose impl cotan did not see (another crate's,
//! a generic impl) panics with a message that says so; the method needs `Self: 'static`.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use crate::sources::{Ns, Res, Sources};
use cotan_ad::Mode;

use crate::{derive_at, Place};

/// The declaration followed by the derivative as a provided method, or by the error.
pub(crate) fn declared(mode: Mode, attr: TokenStream, decl: &syn::TraitItemFn) -> TokenStream {
    let out = crate::guarded(|| derivative(mode, attr, decl));
    let out = out.unwrap_or_else(|e| e.to_compile_error());
    // (Called through its derivatives only, the method is not dead code.)
    let allowed = decl.attrs.iter().any(|a| a.path().is_ident("allow") && quote!(#a).to_string().contains("dead_code"));
    let allow = (!allowed).then(|| quote!(#[allow(dead_code)]));
    quote!(#allow #decl #out)
}

fn derivative(mode: Mode, attr: TokenStream, decl: &syn::TraitItemFn) -> syn::Result<TokenStream> {
    let args = crate::parse_args(mode, attr.clone())?;
    let sig = &decl.sig;
    let fail = |msg: String| syn::Error::new(sig.ident.span(), msg);
    if !sig.generics.params.is_empty() {
        return Err(fail("cotan differentiates trait methods without generic parameters".into()));
    }
    let receiver =
        match sig.inputs.first() {
            Some(syn::FnArg::Receiver(r)) if r.reference.is_some() => Some(r.mutability.is_some()),
            Some(syn::FnArg::Receiver(r)) => return Err(syn::Error::new(
                r.span(),
                "cotan differentiates trait methods that take `&self`, `&mut self` or no receiver; take `&self` here",
            )),
            _ => None,
        };
    let file = sig.ident.span().local_file().or_else(crate::source_file);
    let Some(file) = file else {
        return Err(fail("cotan cannot read this crate's sources, where the impls of this trait are".into()));
    };
    let name = sig.ident.to_string();
    let trait_at = |src: &Sources, file: &std::path::Path, line: usize| {
        let file = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
        (0..src.types.len()).find(|&t| {
            let def = &src.types[t];
            *src.modules[def.module].file == file
                && def.trait_lines.is_some_and(|(a, b)| a <= line && line <= b)
                && def.methods.contains(&name)
        })
    };
    let line = sig.ident.span().start().line;
    let mut found = Sources::for_file(&file).and_then(|src| Some((trait_at(&src, &file, line)?, src)));
    if found.is_none() {
        // Not in the file its spans name: a documentation example, read from the docs.
        if let Some((doc, path, line)) = crate::doctest::trait_sources(&file, decl) {
            found = trait_at(&doc, &path, line).map(|t| (t, std::rc::Rc::new(doc)));
        }
    }
    let Some((trait_id, src)) = found else {
        return Err(fail(format!("cotan cannot find the trait that declares `{name}` in this file")));
    };
    let trait_module = src.types[trait_id].module;

    // The parameters after the receiver, named as the derivative's callers name them.
    let mut params = vec![];
    for (k, input) in sig.inputs.iter().enumerate() {
        if let syn::FnArg::Typed(pt) = input {
            let ident = match &*pt.pat {
                syn::Pat::Ident(i) if i.by_ref.is_none() && i.subpat.is_none() => i.ident.clone(),
                _ => format_ident!("arg{k}"),
            };
            params.push((ident, (*pt.ty).clone()));
        }
    }
    let output = &sig.output;
    let method = &sig.ident;
    let mut nested = TokenStream::new();
    let mut arms = TokenStream::new();
    // The signature and the impl's type of each derivative made.
    let mut derived: Vec<(syn::Signature, syn::Type)> = vec![];
    for imp in &src.impls {
        let Some(tp) = &imp.trait_path else { continue };
        let segs: Vec<String> = tp.segments.iter().map(|s| s.ident.to_string()).collect();
        if imp.generic || src.resolve(imp.module, &segs, Ns::Type) != Res::Type(trait_id) {
            continue;
        }
        // A type the trait's module cannot name is said so here, not by rustc in the
        // generated code.
        if let syn::Type::Path(p) = &imp.self_ty {
            let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
            if let Res::Type(t) = src.resolve(imp.module, &segs, Ns::Type) {
                if !src.visible(trait_module, &src.types[t].vis) {
                    let ty = &src.types[t].name;
                    return Err(fail(format!(
                        "the derivative of `{name}` runs the impl of the trait for `{ty}`, which this module cannot name; make `{ty}` `pub(crate)`"
                    )));
                }
            }
        }
        let self_ty = type_from(&src, imp.module, trait_module, &imp.self_ty)?;
        let dname = format_ident!("derivative_for_{}", derived.len());
        let names: Vec<&syn::Ident> = params.iter().map(|p| &p.0).collect();
        let types: Vec<&syn::Type> = params.iter().map(|p| &p.1).collect();
        // A function of the impl's type that calls its method, differentiated like any other.
        let span = sig.ident.span();
        let synth: syn::ItemFn = match receiver {
            Some(mutable) => {
                let r = if mutable { quote!(&mut #self_ty) } else { quote!(&#self_ty) };
                syn::parse2(quote_spanned! {span=>
                    fn #method(this: #r, #(#names: #types),*) #output { this.#method(#(#names),*) }
                })?
            }
            None => {
                // (`Type::f` where the type is a path: cotan resolves those.)
                let ty = match &self_ty {
                    syn::Type::Path(p) if p.qself.is_none() => quote!(#p),
                    t => quote!(<#t>),
                };
                syn::parse2(quote_spanned! {span=>
                    fn #method(#(#names: #types),*) #output { #ty::#method(#(#names),*) }
                })?
            }
        };
        let place = Place { src: Some(src.clone()), at: Some((trait_module, None)) };
        let attr = renamed(&attr, &dname);
        let tokens = derive_at(mode, attr, &synth, place).map_err(|e| {
            let ty = quote!(#self_ty).to_string().replace(' ', "");
            syn::Error::new(e.span(), format!("{} (differentiating `{name}` of the impl for `{ty}`)", e))
        })?;
        let item: syn::ItemFn = syn::parse2(tokens.clone())
            .map_err(|_| fail("cotan makes derivatives of trait methods in one function; this one is made of several: mark the impl's method with the attribute instead".into()))?;
        nested.extend(tokens);
        // The call, with the receiver and its shadow taken as the impl's type (`Any`'s
        // downcasts; without them, a test of the type).
        let (mut selves, mut casts, mut call_args) = (vec![], vec![], vec![]);
        for (j, input) in item.sig.inputs.iter().enumerate() {
            let syn::FnArg::Typed(pt) = input else { continue };
            let arg = arg_name(&pt.pat, j);
            if let Some(mutable) = self_ref(&pt.ty, &self_ty) {
                casts.push(match mutable {
                    true => quote!((#arg as &mut dyn ::core::any::Any).downcast_mut::<#self_ty>()),
                    false => quote!((#arg as &dyn ::core::any::Any).downcast_ref::<#self_ty>()),
                });
                selves.push(arg.clone());
            }
            call_args.push(arg);
        }
        arms.extend(match selves.len() {
            0 => quote! {
                if ::core::any::TypeId::of::<Self>() == ::core::any::TypeId::of::<#self_ty>() {
                    return #dname(#(#call_args),*);
                }
            },
            _ => quote! {
                if let (#(::core::option::Option::Some(#selves),)*) = (#(#casts,)*) {
                    return #dname(#(#call_args),*);
                }
            },
        });
        derived.push((item.sig, self_ty));
    }
    let Some((dsig, first_ty)) = derived.first() else {
        return Err(fail(format!(
            "cotan found no impl of this trait in the crate to differentiate `{name}` for; implement the trait for a type of this crate, without generic parameters"
        )));
    };
    // The provided method: the derivative's signature, the impl's type written `Self`, its
    // first parameter the receiver.
    let mut params = vec![];
    let mut rebind = TokenStream::new();
    for (j, input) in dsig.inputs.iter().enumerate() {
        let syn::FnArg::Typed(pt) = input else { continue };
        let arg = arg_name(&pt.pat, j);
        let ty = match self_ref(&pt.ty, first_ty) {
            Some(true) => quote!(&mut Self),
            Some(false) => quote!(&Self),
            None => {
                let t = &pt.ty;
                quote!(#t)
            }
        };
        if j == 0 && receiver.is_some() {
            let r = if receiver == Some(true) { quote!(&mut self) } else { quote!(&self) };
            params.push(r);
            rebind = quote!(let #arg = self;);
        } else {
            params.push(quote!(#arg: #ty));
        }
    }
    let dname = &args.name;
    let ret = &dsig.output;
    let trait_name = &src.types[trait_id].name;
    let doc = format!(
        " {} derivative of `{trait_name}::{name}`, generated by cotan for each impl of `{trait_name}` in this crate.",
        if mode == Mode::Forward { "Forward-mode" } else { "Reverse-mode" }
    );
    let missing = format!(
        "cotan: no derivative of `{trait_name}::{name}` for `{{}}`: cotan differentiates the impls of `{trait_name}` it finds in the crate of the trait, without generic parameters"
    );
    Ok(quote_spanned! {Span::call_site()=>
        #[doc = #doc]
        #[allow(unused_variables, clippy::all)]
        fn #dname(#(#params),*) #ret where Self: ::core::marker::Sized + 'static {
            #nested
            #rebind
            #arms
            ::core::panic!(#missing, ::core::any::type_name::<Self>())
        }
    })
}

/// The name of the derivative's `j`-th parameter (the names cotan gives them).
fn arg_name(pat: &syn::Pat, j: usize) -> syn::Ident {
    match pat {
        syn::Pat::Ident(i) => i.ident.clone(),
        _ => format_ident!("arg{j}"),
    }
}

/// The attribute's arguments with the derivative named `name`.
fn renamed(attr: &TokenStream, name: &syn::Ident) -> TokenStream {
    let mut rest =
        attr.clone().into_iter().skip_while(|t| !matches!(t, proc_macro2::TokenTree::Punct(p) if p.as_char() == ','));
    let comma = rest.next();
    let rest: TokenStream = rest.collect();
    quote!(#name #comma #rest)
}

/// Whether `ty` is `&T` or `&mut T` (`Some(true)` for the latter) of the impl's type `t`.
fn self_ref(ty: &syn::Type, t: &syn::Type) -> Option<bool> {
    match ty {
        syn::Type::Reference(r) => {
            let elem = &r.elem;
            (quote!(#elem).to_string() == quote!(#t).to_string()).then_some(r.mutability.is_some())
        }
        _ => None,
    }
}

/// `ty`, written in module `from`, as module `to` can name it.
fn type_from(
    src: &Sources,
    from: crate::sources::ModId,
    to: crate::sources::ModId,
    ty: &syn::Type,
) -> syn::Result<syn::Type> {
    let (a, b) = (src.module_of(from), src.module_of(to));
    // (The sources' tokens are proc-macro2's own: the type is written out and read again.)
    let text = crate::sources::with_fallback(|| quote!(#ty).to_string());
    let single = matches!(ty, syn::Type::Path(p) if p.qself.is_none() && p.path.leading_colon.is_none() && p.path.segments.len() == 1);
    let text = if a != b && src.rooted && single {
        let path: Vec<&str> = src.modules[a].path.iter().map(String::as_str).collect();
        format!("crate::{}{text}", path.iter().map(|s| format!("{s}::")).collect::<String>())
    } else {
        text
    };
    syn::parse_str(&text)
}
