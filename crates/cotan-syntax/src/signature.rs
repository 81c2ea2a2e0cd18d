//! Parameter and return types: which Rust types cotan understands and how they map to IR types.

use crate::span::Spanned;
use cotan_ir::{Access, Dim, MemKind, OpKind, Scalar, Ty};

use crate::infer::STy;
use crate::lower::{err_at, mem, Binding, Lower};

const SUPPORTED: &str = "cotan supports parameters of the types f64, f32, the integer types, bool, \
&f64, &mut f64, &[f64], &mut [f64], &[f64; N], &mut [f64; N], &Vec<f64>, *const f64, *mut f64, \
*const [f64; N], *mut [f64; N] (and the same for f32 and integers), \
nested ones (`&[Vec<f64>]`, `&[[f64; 3]]`, `[[f64; 3]; 4]`), and structs and tuples of these (`&S`, `&mut S`, `S`)";

/// The scalar a type path names (`f64`, `usize`, ...).
pub fn scalar_type(ty: &syn::Type) -> Option<Scalar> {
    match ty {
        syn::Type::Path(p) if p.qself.is_none() => p.path.get_ident().and_then(|i| Scalar::from_name(&i.to_string())),
        syn::Type::Paren(p) => scalar_type(&p.elem),
        _ => None,
    }
}

/// The element type of `Vec<T>`, `[T; N]` or `[T]` (also behind a reference), the
/// numbers at the bottom of nested ones.
pub fn elem_type(ty: &syn::Type) -> Option<Scalar> {
    match ty {
        syn::Type::Reference(r) => elem_type(&r.elem),
        ty => container_type(ty).map(|c| c.0),
    }
}

/// `[T]`, `[T; N]` or `Vec<T>`, with `T` a number or (nested memory: `&[Vec<f64>]`,
/// `[[f64; 3]; 4]`) another of these: the numbers' type and the memory's kind.
pub fn container_type(ty: &syn::Type) -> Option<(Scalar, MemKind)> {
    let (dim, inner) = match ty {
        syn::Type::Paren(p) => return container_type(&p.elem),
        syn::Type::Slice(s) => (Dim::Slice, &*s.elem),
        syn::Type::Array(a) => (Dim::Array(array_len(&a.len)?), &*a.elem),
        syn::Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?;
            let syn::PathArguments::AngleBracketed(args) = &last.arguments else { return None };
            match (last.ident == "Vec", args.args.first()?) {
                (true, syn::GenericArgument::Type(t)) => (Dim::Vec, t),
                _ => return None,
            }
        }
        _ => return None,
    };
    if let Some(s) = scalar_type(inner) {
        return Some((s, dim.kind()));
    }
    let (s, row) = container_type(inner)?;
    Some((s, MemKind::nest(dim, row)?))
}

/// The IR type of a parameter, or `None` if cotan does not support it.
pub fn param_type(ty: &syn::Type) -> Option<Ty> {
    if let Some(s) = scalar_type(ty) {
        return Some(Ty::Scalar(s));
    }
    if let syn::Type::Ptr(p) = ty {
        return crate::pointers::ptr_type(p);
    }
    if let syn::Type::Array(_) = ty {
        // `[f64; N]` by value: the function's own copy.
        let (s, kind) = container_type(ty)?;
        return Some(mem(s, kind, Access::Owned));
    }
    let syn::Type::Reference(r) = ty else {
        return None;
    };
    let access = if r.mutability.is_some() { Access::Mut } else { Access::Shared };
    if let Some(inner) = boxed(&r.elem) {
        // `&Box<f64>` is used as `&f64` (and callers' `&Box<f64>` coerces to it).
        let t = param_type(&syn::Type::Reference(syn::TypeReference { elem: Box::new(inner.clone()), ..r.clone() }))?;
        return Some(t);
    }
    if let Some(s) = scalar_type(&r.elem) {
        return Some(mem(s, MemKind::Cell, access));
    }
    let (s, kind) = container_type(&r.elem)?;
    Some(mem(s, kind, access))
}

/// `T` of `Box<T>`.
fn boxed(ty: &syn::Type) -> Option<&syn::Type> {
    let syn::Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else { return None };
    match (last.ident == "Box", args.args.first()?) {
        (true, syn::GenericArgument::Type(t)) => Some(t),
        _ => None,
    }
}

/// The length of an array type, when it is a literal.
pub fn array_len(e: &syn::Expr) -> Option<u64> {
    match e {
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => i.base10_parse().ok(),
        _ => None,
    }
}

/// The return type: `None` for `()`.
pub fn return_type(sig: &syn::Signature) -> syn::Result<Option<Scalar>> {
    match &sig.output {
        syn::ReturnType::Default => Ok(None),
        syn::ReturnType::Type(_, ty) => {
            if let syn::Type::Tuple(t) = &**ty {
                if t.elems.is_empty() {
                    return Ok(None);
                }
            }
            match scalar_type(ty) {
                Some(s) => Ok(Some(s)),
                None => err_at(&ty, "cotan supports functions that return a number, a bool or `()`; return other results through `&mut` parameters"),
            }
        }
    }
}

/// How several results make up a function's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResultShape {
    /// `-> (f64, f64)`
    Tuple,
    /// `-> [f64; N]`
    Array,
}

/// The scalar results of a function: none for `()`, one for a number, several for a
/// tuple of numbers or an array of numbers (with their shape).
pub fn result_types(sig: &syn::Signature) -> syn::Result<(Vec<Scalar>, Option<ResultShape>)> {
    let syn::ReturnType::Type(_, ty) = &sig.output else { return Ok((vec![], None)) };
    let unsupported = |ty: &syn::Type| {
        err_at(ty, "cotan supports functions that return a number, a bool, `()`, a tuple of numbers or an array `[f64; N]`; return other results through `&mut` parameters")
    };
    match &**ty {
        syn::Type::Tuple(t) if t.elems.is_empty() => Ok((vec![], None)),
        syn::Type::Tuple(t) => match t.elems.iter().map(scalar_type).collect::<Option<Vec<_>>>() {
            Some(tys) => Ok((tys, Some(ResultShape::Tuple))),
            None => unsupported(ty),
        },
        syn::Type::Array(a) => match (scalar_type(&a.elem), array_len(&a.len)) {
            (Some(s), Some(n)) => Ok((vec![s; n as usize], Some(ResultShape::Array))),
            _ => unsupported(ty),
        },
        ty => match scalar_type(ty) {
            Some(s) => Ok((vec![s], None)),
            None => match ty {
                syn::Type::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => {
                    let name = p.path.get_ident().unwrap();
                    err_at(ty, format!("cotan differentiates results that are numbers, bools, `()`, or tuples or arrays of numbers, and `{name}` is none of these as far as cotan can see (it reads the aliases of your crate, not of other crates). If `{name}` is another crate's alias of `f64` or `f32`, write that type here; if it is a struct, write it through a `&mut {name}` parameter marked `Duplicated` (the struct deriving `cotan::Differentiable`)"))
                }
                _ => unsupported(ty),
            },
        },
    }
}

/// The scalars of a tuple return type `(f64, f64, ..)` (as custom reverse rules and
/// generated derivatives return), or `None` for any other return type.
pub fn tuple_return_types(sig: &syn::Signature) -> Option<Vec<Scalar>> {
    let syn::ReturnType::Type(_, ty) = &sig.output else { return None };
    let syn::Type::Tuple(t) = &**ty else { return None };
    if t.elems.len() < 2 {
        return None;
    }
    t.elems.iter().map(scalar_type).collect()
}

/// Declares the parameters as IR parameters and binds their names.
pub(crate) fn lower_params(l: &mut Lower, sig: &syn::Signature) -> syn::Result<()> {
    if let Some(g) = sig.generics.params.iter().find(|g| !matches!(g, syn::GenericParam::Lifetime(_))) {
        if let syn::GenericParam::Const(c) = g {
            let n = &c.ident;
            return err_at(
                &g,
                format!("cotan does not differentiate a function generic over a constant itself; write it for the length you need (`{n}` a number) and call generic helpers from it: a helper generic over `const {n}` is lowered at each call, with the lengths of the arrays it is given"),
            );
        }
        return err_at(&g, "cotan does not support generic functions yet; write the function for f64 or f32");
    }
    if let Some(v) = &sig.variadic {
        return err_at(&v, "cotan does not support variadic functions");
    }
    for arg in &sig.inputs {
        let pt = match arg {
            syn::FnArg::Receiver(r) => {
                let access = match (&r.reference, r.mutability) {
                    (Some(_), Some(_)) => Access::Mut,
                    (Some(_), None) => Access::Shared,
                    (None, _) => Access::Owned,
                };
                if r.colon_token.is_some() {
                    return err_at(&r, "cotan supports the receivers `self`, `&self` and `&mut self`");
                }
                let self_ty: syn::Type = syn::parse_quote!(Self);
                let ty = if access == Access::Shared { syn::parse_quote!(&Self) } else { self_ty };
                if access != Access::Mut && l.flat_param("self", &ty, r.mutability.is_some(), r.span())? {
                    continue;
                }
                l.record_param("self", "Self", l.by_ref(access), r.span());
                continue;
            }
            syn::FnArg::Typed(pt) => pt,
        };
        let span = pt.span();
        if let syn::Pat::Ident(pi) = &*pt.pat {
            if pi.subpat.is_none() && l.flat_param(&pi.ident.to_string(), &pt.ty, pi.mutability.is_some(), span)? {
                continue;
            }
        }
        let Some(ty) = param_type(&pt.ty) else {
            if let (Some((rust_type, access)), syn::Pat::Ident(pi)) = (crate::record::record_type(&pt.ty), &*pt.pat) {
                if pi.mutability.is_some() {
                    return err_at(&pi, "cotan does not support `mut` struct parameters; take `&mut S` instead");
                }
                l.record_param(&pi.ident.to_string(), &rust_type, l.by_ref(access), span);
                continue;
            }
            // (Structs whose fields the crate's sources show: not `&[T]` with `T` a type parameter.)
            let records = crate::record::records_type(&pt.ty).filter(|(_, t, _)| {
                !sig.generics.type_params().any(|p| p.ident == t.as_str())
                    && (t.starts_with('(') || l.env.record_fields(t).is_some())
            });
            if let (Some((dim, rust_type, access)), syn::Pat::Ident(pi)) = (records, &*pt.pat) {
                if pi.mutability.is_some() {
                    return err_at(&pi, "cotan does not support `mut` parameters that are slices of structs; write through `&mut [S]` instead");
                }
                l.records_param(&pi.ident.to_string(), &rust_type, dim, l.by_ref(access), span);
                continue;
            }
            if let (syn::Type::Ptr(ptr), syn::Pat::Ident(pi)) = (&*pt.ty, &*pt.pat) {
                // `*const S` with `S` a struct of the crate: read as the struct it points at
                // (`(*p).x`, `*p` passed on), in `unsafe` code; constant.
                let pointee = crate::record::record_type(&ptr.elem).map(|(t, _)| t);
                if let Some(t) = pointee.filter(|t| ptr.mutability.is_none() && l.env.record_fields(t).is_some()) {
                    l.record_param(&pi.ident.to_string(), &format!("*const {t}"), Access::Owned, span);
                    continue;
                }
            }
            if let (Some((rust_type, access)), syn::Pat::Wild(_)) = (crate::record::record_type(&pt.ty), &*pt.pat) {
                // `_: ()`, `_: Marker`: unused, named for the derivative's signature.
                let name = format!("_arg{}", l.func.params.len());
                l.record_param(&name, &rust_type, access, span);
                continue;
            }
            if let syn::Type::Reference(syn::TypeReference { elem, .. }) = &*pt.ty {
                if let syn::Type::TraitObject(t) = &**elem {
                    // `&dyn Payoff` of a trait that is not a closure's.
                    let named = t.bounds.iter().find_map(|b| match b {
                        syn::TypeParamBound::Trait(tb) => tb.path.segments.last().map(|s| s.ident.to_string()),
                        _ => None,
                    });
                    if let Some(name) = named.filter(|n| !matches!(n.as_str(), "Fn" | "FnMut" | "FnOnce")) {
                        let letter = name.chars().next().unwrap_or('T').to_ascii_uppercase();
                        return err_at(
                            &pt.ty,
                            format!("cotan differentiates the code it can read at compile time, and the methods a `&dyn {name}` calls are only known when the derivative runs; take the type itself here (`&MyType`), or make the function generic over the trait (`fn f<{letter}: {name}>(p: &{letter}, ..)`), which cotan lowers with the caller's type"),
                        );
                    }
                }
            }
            if matches!(&*pt.ty, syn::Type::BareFn(_) | syn::Type::ImplTrait(_))
                || matches!(&*pt.ty, syn::Type::Reference(r) if matches!(&*r.elem, syn::Type::TraitObject(_)))
            {
                return err_at(
                    &pt.ty,
                    "cotan differentiates the code it can read at compile time, and the function this parameter holds is only known when the derivative runs; call the function by its name in the body, or keep this function as a helper without the attribute and differentiate a function that calls it with the function to use (`f(square, x)`, `f(|t| t.sin(), x)`)",
                );
            }
            if let syn::Type::Reference(syn::TypeReference { elem, .. }) = &*pt.ty {
                if let syn::Type::ImplTrait(t) = &**elem {
                    // `d: &impl Trait`: the generic form is lowered with the caller's type.
                    let bounds = quote::ToTokens::to_token_stream(&t.bounds);
                    return err_at(
                        &pt.ty,
                        format!("cotan lowers a helper generic over a trait with the caller's type when the type parameter is named: write `fn f<D: {bounds}>(d: &D, ..)` instead of `&impl {bounds}`"),
                    );
                }
            }
            if let syn::Type::Ptr(_) = &*pt.ty {
                return err_at(&pt.ty, "cotan supports raw pointers to numbers, to arrays of numbers (`*const f64`, `*mut [f64; 3]`) and `*const S` to a struct of the crate (constant); take a struct by reference (`&S`, `&mut S`)");
            }
            return err_at(&pt.ty, SUPPORTED);
        };
        let (name, mutable) = match &*pt.pat {
            syn::Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => {
                (pi.ident.to_string(), pi.mutability.is_some())
            }
            syn::Pat::Wild(_) => ("_".to_string(), false),
            p => return err_at(&p, "cotan supports parameters named by a plain identifier (`x: f64`)"),
        };
        let id = l.at(span);
        // (An array by value, in a function cotan calls: by reference; copied if written.)
        let by_value = ty.mem().is_some_and(|m| m.access == Access::Owned);
        let ty = match ty {
            Ty::Mem(m) => Ty::Mem(cotan_ir::MemTy { access: l.by_ref(m.access), ..m }),
            t => t,
        };
        let v = l.func.add_param(ty, name.clone(), id);
        if let Ty::Scalar(s) = ty {
            l.set_sty(v, STy::Known(s));
            if mutable {
                let var = l.new_var(&name, STy::Known(s));
                l.effect(OpKind::DeclVar { var, init: v });
                l.bind(name, Binding::Var(var));
                continue;
            }
        }
        if mutable && by_value {
            // `mut p: [f64; N]`: written in a local copy, so that the parameter stays as given.
            let c = l.local_copy(v, span)?;
            l.bind(name, Binding::Value(c));
            continue;
        }
        l.bind(name, Binding::Value(v));
    }
    Ok(())
}
