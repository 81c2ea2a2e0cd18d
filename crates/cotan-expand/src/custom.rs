//! User-supplied derivatives: `#[cotan::custom_derivative(forward = F, reverse = R)]` and
//! `#[cotan::zero_derivative]` generate, beside the function, the same callable variants
//! that differentiated functions generate for themselves, but delegating to F and R (or
//! giving zero derivatives). The body is never differentiated, so it may call anything.

use cotan_ir::{Access, MemKind, Ty};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, ToTokens};
use syn::spanned::Spanned;

/// One parameter as the variants see it.
struct Param {
    name: syn::Ident,
    ty: syn::Type,
    ir: Ty,
}

impl Param {
    fn float_scalar(&self) -> bool {
        self.ir.is_float()
    }
    fn float_mem(&self) -> bool {
        self.ir.mem().is_some_and(|m| m.elem.is_float())
    }
    fn d(&self) -> syn::Ident {
        format_ident!("d{}", self.name)
    }
    /// The type of a reverse-mode shadow: `&mut` of what the parameter refers to.
    fn shadow_ty(&self) -> TokenStream {
        match &self.ty {
            syn::Type::Reference(r) => {
                let elem = &r.elem;
                quote!(&mut #elem)
            }
            t => t.to_token_stream(),
        }
    }
    /// A zero derivative of the right shape, for arguments the caller holds constant.
    fn zeros(&self, writable: bool) -> TokenStream {
        let n = &self.name;
        let m = self.ir.mem().unwrap();
        let z = match m.kind {
            MemKind::Cell => quote!(0.0),
            MemKind::Array(k) => {
                let k = proc_macro2::Literal::u64_unsuffixed(k);
                quote!([0.0; #k])
            }
            MemKind::Slice | MemKind::Vec | MemKind::Record(_) => quote!(vec![0.0; #n.len()]),
        };
        if writable {
            quote!(&mut #z)
        } else {
            quote!(&#z)
        }
    }
}

enum Rule {
    Custom { forward: Option<syn::Path>, reverse: Option<syn::Path> },
    Zero,
}

fn params(func: &syn::ItemFn) -> syn::Result<Vec<Param>> {
    let mut out = vec![];
    for arg in &func.sig.inputs {
        let syn::FnArg::Typed(pt) = arg else {
            return Err(syn::Error::new(
                arg.span(),
                "custom derivatives of methods are not supported yet; use a free function",
            ));
        };
        let syn::Pat::Ident(pi) = &*pt.pat else {
            return Err(syn::Error::new(pt.pat.span(), "name the parameter with a plain identifier"));
        };
        let Some(ir) = cotan_syntax::param_type(&pt.ty) else {
            return Err(syn::Error::new(
                pt.ty.span(),
                "a function with a custom or zero derivative takes numbers, bools and references to numbers (structs are not supported there yet)",
            ));
        };
        out.push(Param { name: pi.ident.clone(), ty: (*pt.ty).clone(), ir });
    }
    Ok(out)
}

pub fn custom_derivative(attr: TokenStream, func: &syn::ItemFn) -> syn::Result<TokenStream> {
    let items = syn::parse::Parser::parse2(
        syn::punctuated::Punctuated::<syn::MetaNameValue, syn::Token![,]>::parse_terminated,
        attr,
    )?;
    let (mut forward, mut reverse) = (None, None);
    for nv in &items {
        let path = match &nv.value {
            syn::Expr::Path(p) => p.path.clone(),
            e => return Err(syn::Error::new(e.span(), "expected the path of a function")),
        };
        match nv.path.get_ident().map(|i| i.to_string()).as_deref() {
            Some("forward") => forward = Some(path),
            Some("reverse") => reverse = Some(path),
            _ => return Err(syn::Error::new(nv.path.span(), "expected `forward = F` and/or `reverse = R`")),
        }
    }
    if forward.is_none() && reverse.is_none() {
        return Err(syn::Error::new(Span::call_site(), "give `forward = F`, `reverse = R`, or both"));
    }
    variants(func, Rule::Custom { forward, reverse })
}

pub fn zero_derivative(func: &syn::ItemFn) -> syn::Result<TokenStream> {
    variants(func, Rule::Zero)
}

fn variants(func: &syn::ItemFn, rule: Rule) -> syn::Result<TokenStream> {
    if let Some(a) = func.attrs.iter().find(|a| {
        a.path()
            .segments
            .last()
            .is_some_and(|s| s.ident.to_string().starts_with("autodiff_") || s.ident == "differentiable")
    }) {
        return Err(syn::Error::new(
            a.span(),
            "a function with a custom or zero derivative takes no other autodiff attribute",
        ));
    }
    let ps = params(func)?;
    let ret = cotan_syntax::return_type(&func.sig)?;
    if ret.is_some_and(|s| !s.is_float()) {
        return Err(syn::Error::new(
            func.sig.output.span(),
            "custom derivatives need a function that returns a float or `()`",
        ));
    }
    let ret_ty = ret.map(|s| format_ident!("{}", s.name()));
    let name = &func.sig.ident;
    let vis = &func.vis;
    let mems: Vec<usize> = (0..ps.len()).filter(|k| ps[*k].float_mem()).collect();
    let mut out = TokenStream::new();
    for bits in 0..(1usize << mems.len()) {
        let active = |k: usize| mems.iter().position(|m| *m == k).is_some_and(|j| bits >> j & 1 == 1);
        let mask: String = (0..mems.len()).map(|j| if bits >> j & 1 == 1 { '1' } else { '0' }).collect();
        let fwd_name = format_ident!("__cotan_fwd_{}_m{}", name, mask);
        let rev_name = format_ident!("__cotan_rev_{}_m{}", name, mask);

        // Forward: tangents after float scalars and active memory.
        let mut fparams = vec![];
        let mut fargs = vec![];
        let mut fzero = vec![];
        for (k, p) in ps.iter().enumerate() {
            let (n, t, d) = (&p.name, &p.ty, p.d());
            fparams.push(quote!(#n: #t));
            fargs.push(quote!(#n));
            if p.float_scalar() {
                fparams.push(quote!(#d: #t));
                fargs.push(quote!(#d));
            } else if p.float_mem() {
                let writable = p.ir.mem().unwrap().access == Access::Mut;
                if active(k) {
                    fparams.push(quote!(#d: #t));
                    fargs.push(quote!(#d));
                    if writable {
                        fzero.push(match p.ir.mem().unwrap().kind {
                            MemKind::Cell => quote!(*#d = 0.0;),
                            _ => quote!(#d.fill(0.0);),
                        });
                    }
                } else {
                    fargs.push(p.zeros(writable));
                }
            }
        }
        let fret = ret_ty.as_ref().map(|t| quote!(-> (#t, #t)));
        let primal_args: Vec<&syn::Ident> = ps.iter().map(|p| &p.name).collect();
        let fbody = match &rule {
            Rule::Custom { forward: Some(f), .. } => Some(quote!(#f(#(#fargs),*))),
            Rule::Custom { forward: None, .. } => None,
            Rule::Zero => Some(match &ret_ty {
                Some(_) => quote! { let value = #name(#(#primal_args),*); #(#fzero)* (value, 0.0) },
                None => quote! { #name(#(#primal_args),*); #(#fzero)* },
            }),
        };
        if let Some(body) = fbody {
            out.extend(quote! {
                #[doc(hidden)]
                #[inline]
                #[allow(unused, non_snake_case, clippy::all, clippy::pedantic, clippy::nursery)]
                #vis fn #fwd_name(#(#fparams),*) #fret { #body }
            });
        }

        // Reverse: shadows after active memory, `dret` last; returns the value and the
        // gradients of the float scalars.
        let mut rparams = vec![];
        let mut rargs = vec![];
        let mut rzero = vec![];
        let mut grads = vec![];
        for (k, p) in ps.iter().enumerate() {
            let (n, t, d) = (&p.name, &p.ty, p.d());
            rparams.push(quote!(#n: #t));
            rargs.push(quote!(#n));
            if p.float_scalar() {
                grads.push(quote!(0.0));
            } else if p.float_mem() {
                if active(k) {
                    let st = p.shadow_ty();
                    rparams.push(quote!(#d: #st));
                    rargs.push(quote!(#d));
                    if p.ir.mem().unwrap().access == Access::Mut {
                        rzero.push(match p.ir.mem().unwrap().kind {
                            MemKind::Cell => quote!(*#d = 0.0;),
                            _ => quote!(#d.fill(0.0);),
                        });
                    }
                } else {
                    rargs.push(p.zeros(true));
                }
            }
        }
        if let Some(t) = &ret_ty {
            rparams.push(quote!(dret: #t));
            rargs.push(quote!(dret));
        }
        let scalar_tys: Vec<&syn::Type> = ps.iter().filter(|p| p.float_scalar()).map(|p| &p.ty).collect();
        let outs: Vec<TokenStream> =
            ret_ty.iter().map(|t| quote!(#t)).chain(scalar_tys.iter().map(|t| quote!(#t))).collect();
        let rret = match outs.len() {
            0 => quote!(),
            1 => {
                let o = &outs[0];
                quote!(-> #o)
            }
            _ => quote!(-> (#(#outs),*)),
        };
        let rbody = match &rule {
            Rule::Custom { reverse: Some(r), .. } => Some(quote!(#r(#(#rargs),*))),
            Rule::Custom { reverse: None, .. } => None,
            Rule::Zero => {
                let value: Vec<TokenStream> = match &ret_ty {
                    Some(_) => vec![quote!(value)],
                    None => vec![],
                };
                let all: Vec<TokenStream> = value.into_iter().chain(grads.clone()).collect();
                let result = match all.len() {
                    0 => quote!(),
                    1 => all[0].clone(),
                    _ => quote!((#(#all),*)),
                };
                let call = quote!(#name(#(#primal_args),*));
                Some(match &ret_ty {
                    Some(_) => quote! { let value = #call; #(#rzero)* #result },
                    None => quote! { #call; #(#rzero)* #result },
                })
            }
        };
        if let Some(body) = rbody {
            out.extend(quote! {
                #[doc(hidden)]
                #[inline]
                #[allow(unused, non_snake_case, clippy::all, clippy::pedantic, clippy::nursery)]
                #vis fn #rev_name(#(#rparams),*) #rret { #body }
            });
        }
    }
    Ok(out)
}
