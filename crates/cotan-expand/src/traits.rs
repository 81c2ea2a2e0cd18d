//! Derivatives through traits. A generic function calling a trait's methods
//! (`fn objective<M: Model>(m: &M, ..)`) cannot know the impl it calls, so the derivatives
//! of the methods are part of the trait: `#[cotan::differentiable]` on the trait declares,
//! for each method, the functions a mark exports (`NAME__fwd`, `NAME__aug`, `NAME__rev`,
//! `NAME__aug__fwd`, `NAME__rev__fwd`); on an impl, it defines them from the methods'
//! bodies. A trait's default for them is a compile-time error, raised only where a
//! derivative needs the exports of an impl that is not marked.

use cotan_ad::{Activity, Avail, Mode, NoCalls, Spec};
use cotan_ir::{Const, Function, Op, OpKind, Region, SpanId};
use proc_macro2::TokenStream;
use quote::quote;

/// The signatures of the exports of a method with signature `sig` (as `exports` makes them:
/// every float argument active, no memory readable by the reverse sweep).
fn export_signatures(sig: &Function) -> Result<Vec<Function>, String> {
    // A body that returns zeros: the transforms make the signatures from it.
    let mut stub = sig.clone();
    let mut ops = vec![];
    let mut vals = vec![];
    for t in &sig.returns {
        let v = stub.new_value(*t, None, SpanId::NONE);
        let c = if t.is_float() { Const::Float(0.0) } else { Const::Int(0) };
        ops.push(Op { kind: OpKind::Const(c), result: Some(v), span: SpanId::NONE });
        vals.push(v);
    }
    if !vals.is_empty() {
        ops.push(Op { kind: OpKind::Return(vals), result: None, span: SpanId::NONE });
    }
    stub.body = Region { ops };
    let name = stub.name.clone();
    let all = |f: &Function, mode: Mode| {
        let inputs = f
            .params
            .iter()
            .map(|p| match (f.ty(*p).carries_derivative(), f.ty(*p), mode) {
                (false, _, _) => Activity::Const,
                (true, _, Mode::Forward) => Activity::Dual,
                (true, cotan_ir::Ty::Scalar(_), Mode::Reverse) => Activity::Active,
                (true, cotan_ir::Ty::Mem(_), Mode::Reverse) => Activity::Duplicated,
            })
            .collect();
        let float_ret = f.returns.iter().any(|t| t.is_float());
        let ret = (!f.returns.is_empty()).then_some(match (float_ret, mode) {
            (false, _) => Activity::Const,
            (true, Mode::Forward) => Activity::Dual,
            (true, Mode::Reverse) => Activity::Active,
        });
        Spec { mode, inputs, ret, width: 1 }
    };
    let err = |e: cotan_ad::AdError| e.message;
    let fwd =
        cotan_ad::forward(&stub, &all(&stub, Mode::Forward), &format!("{name}__fwd"), &mut NoCalls).map_err(err)?;
    let avail = vec![Avail::Absent; stub.params.len()];
    let (aug, rev) = cotan_ad::reverse_split(
        &stub,
        &all(&stub, Mode::Reverse),
        &avail,
        (&format!("{name}__aug"), &format!("{name}__rev")),
        &mut NoCalls,
    )
    .map_err(err)?;
    let aug_fwd =
        cotan_ad::forward(&aug, &all(&aug, Mode::Forward), &format!("{name}__aug__fwd"), &mut NoCalls).map_err(err)?;
    let rev_fwd =
        cotan_ad::forward(&rev, &all(&rev, Mode::Forward), &format!("{name}__rev__fwd"), &mut NoCalls).map_err(err)?;
    Ok(vec![fwd, aug, rev, aug_fwd, rev_fwd])
}

/// `#[cotan::differentiable]` on a trait: the declarations of its methods' exports.
pub(crate) fn trait_exports(t: &syn::ItemTrait) -> syn::Result<TokenStream> {
    let krate = crate::cotan_path();
    let mut item = t.clone();
    // Constant arguments of its type get zeroed shadows: its impls are `Differentiable`.
    item.colon_token.get_or_insert_with(Default::default);
    item.supertraits.push(syn::parse_quote!(#krate::Differentiable));
    let trait_name = t.ident.to_string();
    for it in &t.items {
        let syn::TraitItem::Fn(f) = it else { continue };
        let sig = cotan_syntax::lower_signature(&f.sig)?;
        let by_value_struct = sig.params.iter().any(|p| {
            sig.ty(*p)
                .mem()
                .is_some_and(|m| matches!(m.kind, cotan_ir::MemKind::Record(_)) && m.access == cotan_ir::Access::Owned)
        });
        if by_value_struct || sig.generic_float.is_some() || !sig.type_params.is_empty() {
            continue;
        }
        let sigs = export_signatures(&sig).map_err(|e| syn::Error::new(f.sig.ident.span(), e))?;
        for g in sigs {
            let decl = cotan_codegen::signature_tokens(&g, &krate);
            let message = match &f.default {
                // (A marked impl exports the methods it writes, not the trait's defaults.)
                Some(_) => format!(
                    "an impl of `{trait_name}` used in a derivative has no derivatives of the provided method `{0}`: write `{0}` in each `#[cotan::differentiable]` impl of `{trait_name}` (cotan differentiates the methods an impl writes)",
                    f.sig.ident
                ),
                None => format!(
                    "an impl of `{trait_name}` used in a derivative has no derivatives of `{}`: mark the impl `#[cotan::differentiable]`",
                    f.sig.ident
                ),
            };
            let declared: syn::TraitItem = syn::parse2(quote! {
                #[doc(hidden)]
                #[allow(unused, non_snake_case, clippy::all)]
                #decl { const { panic!(#message) } }
            })?;
            item.items.push(declared);
        }
    }
    Ok(quote!(#item))
}

/// `#[cotan::differentiable]` on an impl block: each method's exports, as methods of the
/// impl (in a trait impl, they define what the marked trait declares).
pub(crate) fn impl_exports(i: &syn::ItemImpl) -> syn::Result<TokenStream> {
    let mut item = i.clone();
    let in_trait = i.trait_.is_some();
    for it in &i.items {
        let syn::ImplItem::Fn(m) = it else { continue };
        let f = syn::ItemFn {
            attrs: m.attrs.clone(),
            vis: if in_trait { syn::Visibility::Inherited } else { m.vis.clone() },
            sig: m.sig.clone(),
            block: Box::new(m.block.clone()),
        };
        let exported = crate::exports(&f, crate::program::Rule::Body)?;
        let file: syn::File = syn::parse2(exported)?;
        for g in file.items {
            let syn::Item::Fn(g) = g else { continue };
            item.items.push(syn::ImplItem::Fn(syn::ImplItemFn {
                attrs: g.attrs,
                vis: g.vis,
                defaultness: None,
                sig: g.sig,
                block: *g.block,
            }));
        }
    }
    Ok(quote!(#item))
}
