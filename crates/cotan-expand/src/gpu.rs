//! `#[cotan::kernel(gpu)]`: the GPU entry points, `NAME_gpu` for the kernel and `DNAME_gpu`
//! for each forward-mode derivative, made from the same IR the CPU versions are emitted
//! from (`cotan_codegen::wgsl` writes the shaders; `cotan::gpu` runs them).
//!
//! Naming rule: `NAME_gpu(&Device, params...)`, each `&[T]` a `&Buffer<T>`, each `&mut [T]`
//! a `&mut Buffer<T>`, numbers as they are, returning `Result<R, GpuError>` with `R` what
//! the CPU version returns.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};

use cotan_codegen::wgsl::{GpuParam, WgslError};
use cotan_ir::{Access, Function, Scalar, Ty};

use crate::{cotan_path, program::Program};

/// Whether `func` carries `#[cotan::kernel(gpu)]`.
pub(crate) fn is_gpu_kernel(func: &syn::ItemFn) -> bool {
    func.attrs.iter().any(|a| {
        a.path().segments.last().is_some_and(|s| s.ident == "kernel")
            && matches!(&a.meta, syn::Meta::List(l) if l.tokens.to_string().trim() == "gpu")
    })
}

/// `NAME_gpu` for `f` (the kernel, lowered, or a derivative of it), named after `cpu_name`.
pub(crate) fn entry(
    f: &Function,
    cpu_name: &syn::Ident,
    vis: &TokenStream,
    spans: &[Span],
    program: &mut Program,
) -> syn::Result<TokenStream> {
    let span_of = |id: cotan_ir::SpanId| spans.get(id.0 as usize).copied().unwrap_or_else(Span::call_site);
    let site = |id: cotan_ir::SpanId| format!("{{file}}:{}", span_of(id).start().line);
    let mut callee = |path: &str| program.runnable(path);
    let k = cotan_codegen::wgsl::wgsl_kernel(f, &mut callee, &site)
        .map_err(|WgslError { span, message }| syn::Error::new(span_of(span), message))?;
    let krate = cotan_path();
    let name = format_ident!("{}_gpu", cpu_name);
    let kernel = cpu_name.to_string();
    let steps = k.steps.iter().map(|s| {
        let wgsl = &s.wgsl;
        let bindings = &s.bindings;
        let count_bindings = &s.count_bindings;
        let native_wgsl = match &s.native_wgsl {
            Some(w) => quote!(::core::option::Option::Some(#w)),
            None => quote!(::core::option::Option::None),
        };
        let count_wgsl = match &s.count_wgsl {
            Some(w) => quote!(::core::option::Option::Some(#w)),
            None => quote!(::core::option::Option::None),
        };
        let kind = match s.loop_index {
            Some(l) => quote!(#krate::gpu::StepKind::Loop(#l)),
            None => quote!(#krate::gpu::StepKind::Once),
        };
        quote!(#krate::gpu::Step {
            wgsl: #wgsl,
            bindings: &[#(#bindings),*],
            count_wgsl: #count_wgsl,
            count_bindings: &[#(#count_bindings),*],
            native_wgsl: #native_wgsl,
            kind: #kind,
        })
    });
    let with_file = |s: &str| {
        let parts: Vec<&str> = s.split("{file}").collect();
        let mut toks = vec![];
        for (j, p) in parts.iter().enumerate() {
            if j > 0 {
                toks.push(quote!(::core::file!()));
            }
            toks.push(quote!(#p));
        }
        quote!(::core::concat!(#(#toks),*))
    };
    let checks: Vec<TokenStream> = k
        .checks
        .iter()
        .map(|(b, name, site)| {
            let site = with_file(site);
            quote!((#b, #name, #site))
        })
        .collect();
    let sites = k.sites.iter().map(|s| {
        let parts: Vec<&str> = s.split("{file}").collect();
        let mut toks = vec![];
        for (j, p) in parts.iter().enumerate() {
            if j > 0 {
                toks.push(quote!(::core::file!()));
            }
            toks.push(quote!(#p));
        }
        quote!(::core::concat!(#(#toks),*))
    });
    let n_steps = k.steps.len();
    let tape = match &k.tape {
        Some(t) => {
            let (tp, tmax, scap, cursor, ccap) = (t.tp, t.tmax, t.scap, t.cursor, t.ccap);
            let loops = t.loops.iter().map(|(a, b)| quote!((#a, #b)));
            quote!(::core::option::Option::Some(#krate::gpu::TapePlan {
                tp: #tp, tmax: #tmax, scap: #scap, cursor: #cursor, ccap: #ccap, loops: &[#(#loops),*],
            }))
        }
        None => quote!(::core::option::Option::None),
    };
    let allocs = k.allocs.iter().map(|(s, off)| {
        let bytes: u32 = if *s == Scalar::F64 { 8 } else { 4 };
        quote!((#bytes, #off))
    });
    let (state, loops, f64) = (k.state_bytes, k.loops, k.f64);
    let mut params = vec![];
    let mut puts = vec![];
    for (j, (&p, gp)) in f.params.iter().zip(&k.params).enumerate() {
        let pname =
            f.value(p).name.clone().filter(|n| syn::parse_str::<syn::Ident>(n).is_ok() && !n.starts_with("cotan_"));
        let id = match pname {
            Some(n) => format_ident!("{}", n),
            None => format_ident!("arg{}", j),
        };
        match (gp, f.ty(p)) {
            (GpuParam::Number { scalar, offset }, _) => {
                let t = cotan_codegen::ty_tokens(Ty::Scalar(*scalar));
                params.push(quote!(#id: #t));
                let text = id.to_string();
                puts.push(match scalar {
                    Scalar::Usize | Scalar::Isize => {
                        let signed = *scalar == Scalar::Isize;
                        quote!(cotan_launch.index(#offset, #text, #id as i128, #signed)?;)
                    }
                    Scalar::Bool => quote!(cotan_launch.flag(#offset, #id);),
                    _ => quote!(cotan_launch.scalar(#offset, #id);),
                });
            }
            (GpuParam::Buffer { elem, len_offset, writable }, Ty::Mem(m)) => {
                let t = cotan_codegen::ty_tokens(Ty::Scalar(*elem));
                if m.access == Access::Mut {
                    params.push(quote!(#id: &mut #krate::gpu::Buffer<#t>));
                } else {
                    params.push(quote!(#id: &#krate::gpu::Buffer<#t>));
                }
                puts.push(quote!(cotan_launch.buffer(&*#id, #len_offset, #writable);));
            }
            _ => unreachable!("a buffer parameter is memory"),
        }
    }
    let reads: Vec<TokenStream> = k
        .returns
        .iter()
        .map(|(s, off)| match s {
            Scalar::Bool => quote!(#krate::gpu::get_flag(&cotan_state, #off)),
            Scalar::Usize => quote!(#krate::gpu::get::<u32>(&cotan_state, #off) as usize),
            Scalar::Isize => quote!(#krate::gpu::get::<i32>(&cotan_state, #off) as isize),
            _ => {
                let t = cotan_codegen::ty_tokens(Ty::Scalar(*s));
                quote!(#krate::gpu::get::<#t>(&cotan_state, #off))
            }
        })
        .collect();
    let (ret_ty, ret) = match reads.len() {
        0 => (quote!(()), quote!(())),
        1 => {
            let t = cotan_codegen::ty_tokens(f.returns[0]);
            (t, reads[0].clone())
        }
        _ => {
            let ts = f.returns.iter().map(|t| cotan_codegen::ty_tokens(*t));
            (quote!((#(#ts),*)), quote!((#(#reads),*)))
        }
    };
    let doc = format!(" [`{kernel}`] on the GPU: the same computation as WGSL compute shaders (`cotan::gpu`).");
    Ok(quote! {
        #[doc = #doc]
        #[allow(clippy::all, unused_mut)]
        #vis fn #name(cotan_dev: &#krate::gpu::Device, #(#params),*) -> ::core::result::Result<#ret_ty, #krate::gpu::GpuError> {
            static STEPS: [#krate::gpu::Step; #n_steps] = [#(#steps),*];
            static PLAN: #krate::gpu::Plan = #krate::gpu::Plan {
                kernel: #kernel,
                f64: #f64,
                state: #state,
                steps: &STEPS,
                loops: #loops,
                sites: &[#(#sites),*],
                tape: #tape,
                allocs: &[#(#allocs),*],
                checks: &[#(#checks),*],
            };
            let mut cotan_launch = #krate::gpu::Launch::new(cotan_dev, &PLAN)?;
            #(#puts)*
            let cotan_state = cotan_launch.run(cotan_dev)?;
            ::core::result::Result::Ok(#ret)
        }
    })
}
