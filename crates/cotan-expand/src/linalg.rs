//! nalgebra and ndarray values in differentiated functions (cotan's features `nalgebra`
//! and `ndarray`).
//!
//! A function that takes `&DVector<f64>`, `&DMatrix<f64>`, `&Array2<f64>`, `ArrayView1<f64>`
//! ... is rewritten, before lowering, into one of slices: a vector is its storage
//! (`&[f64]`), a matrix its storage and two `usize` parameters, its shape, added at the
//! end with activity `Const`. A matrix value is a buffer with a shape and strides: element
//! `(i, j)` is `buf[i * rs + j * cs]` (nalgebra stores columns, `rs = 1`; ndarray rows,
//! `cs = 1`; a transpose swaps both). Indexing becomes slice indexing; products, dot
//! products and norms become calls of `cotan::rt::{nalgebra, ndarray}`, whose custom
//! derivatives are the libraries' own routines; element-wise operations become the index
//! loops and iterator chains cotan differentiates anyway. A value that a library operation
//! makes is a new local buffer. The derivative of the rewritten function is emitted inside
//! a function with std's signature, whose shadows have the arguments' types, which passes
//! their storage on.
//!
//! With a library's feature off, naming one of its types is an error asking for it.

use cotan_ir::{HashMap, HashSet};

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, ToTokens};
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::visit_mut::VisitMut;

use crate::{Args, Mode, Place};
use cotan_ad::Activity;

mod cholesky;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Lib {
    Nalgebra,
    Ndarray,
    Faer,
}

impl Lib {
    fn name(self) -> &'static str {
        match self {
            Lib::Nalgebra => "nalgebra",
            Lib::Ndarray => "ndarray",
            Lib::Faer => "faer",
        }
    }
    fn enabled(self) -> bool {
        match self {
            Lib::Nalgebra => cfg!(feature = "nalgebra"),
            Lib::Ndarray => cfg!(feature = "ndarray"),
            Lib::Faer => cfg!(feature = "faer"),
        }
    }
    fn ident(self) -> syn::Ident {
        syn::Ident::new(self.name(), Span::call_site())
    }
}

/// The library and kind (`true`: a matrix) of a type or constructor's name.
fn classify(name: &str) -> Option<(Lib, bool)> {
    match name {
        "DVector" | "SVector" | "Vector1" | "Vector2" | "Vector3" | "Vector4" | "Vector5" | "Vector6" => {
            Some((Lib::Nalgebra, false))
        }
        "DMatrix" | "SMatrix" | "Matrix1" | "Matrix2" | "Matrix3" | "Matrix4" | "Matrix5" | "Matrix6" => {
            Some((Lib::Nalgebra, true))
        }
        "Array1" | "ArrayView1" | "ArrayViewMut1" => Some((Lib::Ndarray, false)),
        "Array2" | "ArrayView2" | "ArrayViewMut2" => Some((Lib::Ndarray, true)),
        "Mat" | "MatRef" | "MatMut" => Some((Lib::Faer, true)),
        "Col" | "ColRef" | "ColMut" => Some((Lib::Faer, false)),
        _ => None,
    }
}

/// The first nalgebra or ndarray type (or path into those crates) the function names.
pub(crate) fn mention(func: &syn::ItemFn) -> Option<(Lib, Span, String)> {
    struct Find(Option<(Lib, Span, String)>);
    impl<'ast> Visit<'ast> for Find {
        fn visit_path(&mut self, p: &'ast syn::Path) {
            if self.0.is_some() {
                return;
            }
            let first = p.segments.first().map(|s| s.ident.to_string()).unwrap_or_default();
            let lib = match first.as_str() {
                "nalgebra" | "na" => Some(Lib::Nalgebra),
                "ndarray" => Some(Lib::Ndarray),
                "faer" => Some(Lib::Faer),
                _ => None,
            };
            for s in &p.segments {
                let name = s.ident.to_string();
                // `Vector3`, `Matrix2`: nalgebra's only with type arguments or its path
                // (a crate's own `struct Vector3 { x, y, z }` is a struct of numbers).
                // So are faer's short names (`Mat<f64>`, `MatRef<'_, f64>`).
                let generic_name = name.starts_with("Vector")
                    || name.starts_with("Matrix")
                    || matches!(name.as_str(), "Mat" | "MatRef" | "MatMut" | "Col" | "ColRef" | "ColMut");
                if generic_name && lib.is_none() && s.arguments.is_empty() {
                    continue;
                }
                if let Some((l, _)) = classify(&name) {
                    self.0 = Some((l, s.ident.span(), s.ident.to_string()));
                    return;
                }
            }
            if let (Some(l), Some(last)) = (lib, p.segments.last()) {
                if p.segments.len() > 1 {
                    self.0 = Some((l, last.ident.span(), p.to_token_stream().to_string().replace(' ', "")));
                    return;
                }
            }
            if p.segments.len() == 1 && ["arr1", "arr2"].contains(&first.as_str()) {
                self.0 = Some((Lib::Ndarray, p.segments[0].ident.span(), first));
                return;
            }
            syn::visit::visit_path(self, p);
        }
    }
    let mut f = Find(None);
    f.visit_signature(&func.sig);
    f.visit_block(&func.block);
    f.0
}

/// The error of an attribute other than `autodiff_forward`/`autodiff_reverse` on a function
/// with nalgebra or ndarray values (with the feature off: the feature's error).
pub(crate) fn not_here((lib, span, name): (Lib, Span, String)) -> syn::Error {
    if !lib.enabled() {
        return feature_error(lib, span, &name);
    }
    syn::Error::new(
        span,
        format!("cotan differentiates functions with {} values (`{name}`) with `#[autodiff_forward]` and `#[autodiff_reverse]` only, not yet with this attribute; write this function with slices (`&[f64]`)", lib.name()),
    )
}

fn feature_error(lib: Lib, span: Span, name: &str) -> syn::Error {
    let l = lib.name();
    syn::Error::new(
        span,
        format!("`{name}` is from {l}: enable cotan's feature `{l}` to differentiate functions that use {l}'s vectors and matrices (`cotan = {{ version = \"0.1\", features = [\"{l}\"] }}` in Cargo.toml)"),
    )
}

/// A parameter of a nalgebra or ndarray type.
#[derive(Clone)]
struct LaParam {
    lib: Lib,
    matrix: bool,
    /// `&mut T` or `ArrayViewMut`.
    mutable: bool,
    /// The type as written.
    ty: syn::Type,
    /// `Some(T)` for `&T`/`&mut T`, `None` for a view by value.
    referent: Option<syn::Type>,
}

fn la_param(name: &syn::Ident, ty: &syn::Type) -> Option<syn::Result<LaParam>> {
    let (path_ty, referent, mut mutable) = match ty {
        syn::Type::Reference(r) => (&*r.elem, Some((*r.elem).clone()), r.mutability.is_some()),
        t => (t, None, false),
    };
    let syn::Type::Path(tp) = path_ty else { return None };
    let last = tp.path.segments.last()?;
    let tname = last.ident.to_string();
    let (lib, matrix) = classify(&tname)?;
    let view = tname.starts_with("ArrayView") || matches!(tname.as_str(), "MatRef" | "MatMut" | "ColRef" | "ColMut");
    if referent.is_none() && !view {
        return Some(Err(syn::Error::new(
            ty.span(),
            format!("cotan takes `{tname}` parameters by reference: write `&{tname}<f64>` (or `&mut`), whose shadow is a `&mut {tname}<f64>` as in std"),
        )));
    }
    if referent.is_some() && view {
        return Some(Err(syn::Error::new(ty.span(), format!("pass the `{tname}` by value (it is a view already)"))));
    }
    mutable |= tname.starts_with("ArrayViewMut") || tname == "MatMut" || tname == "ColMut";
    let float = match &last.arguments {
        syn::PathArguments::AngleBracketed(a) => a.args.iter().find_map(|g| match g {
            syn::GenericArgument::Type(t) => Some((t.to_token_stream().to_string(), t.span())),
            _ => None,
        }),
        _ => Some(("f64".into(), last.ident.span())),
    };
    if float.as_ref().map(|f| f.0.as_str()) != Some("f64") {
        return Some(Err(syn::Error::new(
            float.map_or(last.ident.span(), |f| f.1),
            format!("cotan differentiates {} values of `f64` only; use `{tname}<f64>`", lib.name()),
        )));
    }
    let _ = name;
    Some(Ok(LaParam { lib, matrix, mutable, ty: ty.clone(), referent }))
}

/// The derivative of `func`, which names a nalgebra or ndarray type: an error if its
/// library's feature is off, else the derivative of the function rewritten for slices,
/// wrapped in std's signature.
pub(crate) fn derive(
    mode: Mode,
    attr: TokenStream,
    func: &syn::ItemFn,
    place: Place,
    (lib, span, name): (Lib, Span, String),
) -> syn::Result<TokenStream> {
    if !lib.enabled() {
        return Err(feature_error(lib, span, &name));
    }
    let args = crate::parse_args(mode, attr.clone())?;
    let has_ret = match &func.sig.output {
        syn::ReturnType::Default => false,
        syn::ReturnType::Type(_, t) => !matches!(&**t, syn::Type::Tuple(t) if t.elems.is_empty()),
    };
    let n_params = func.sig.inputs.len();
    if args.acts.len() != n_params + usize::from(has_ret) {
        return Err(crate::count_error(func, &args, n_params, has_ret));
    }
    if let syn::ReturnType::Type(_, t) = &func.sig.output {
        if let Some((lib, span, name)) = mention(&syn::parse_quote!(fn f() -> #t {})) {
            return Err(syn::Error::new(
                span,
                format!("cotan's derivatives return numbers, not {} values such as `{name}`; write the result into a `&mut` parameter of that type", lib.name()),
            ));
        }
        let _ = span;
    }
    // The parameters: the rewritten function's, and the nalgebra/ndarray ones.
    let mut inner = func.clone();
    inner.vis = syn::Visibility::Inherited;
    inner.sig.generics.params =
        inner.sig.generics.params.iter().filter(|g| !matches!(g, syn::GenericParam::Lifetime(_))).cloned().collect();
    let mut params: Vec<Option<LaParam>> = vec![];
    let mut rw = Rewriter::new();
    let mut shape_params: Vec<syn::FnArg> = vec![];
    for (k, arg) in inner.sig.inputs.iter_mut().enumerate() {
        let syn::FnArg::Typed(pt) = arg else {
            if func
                .sig
                .inputs
                .iter()
                .any(|a| matches!(a, syn::FnArg::Typed(pt) if la_param(&format_ident!("x"), &pt.ty).is_some()))
            {
                return Err(syn::Error::new(arg.span(), format!("cotan differentiates functions with {} parameters, not methods with them yet; make it a free function", lib.name())));
            }
            params.push(None);
            continue;
        };
        let ident = match &*pt.pat {
            syn::Pat::Ident(pi) if pi.subpat.is_none() => pi.ident.clone(),
            _ => format_ident!("arg{}", k),
        };
        match la_param(&ident, &pt.ty) {
            None => {
                rw.shadow_name(&ident);
                params.push(None);
            }
            Some(Err(e)) => return Err(e),
            Some(Ok(p)) => {
                if !matches!(&*pt.pat, syn::Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none()) {
                    return Err(syn::Error::new(pt.pat.span(), "name this parameter with a plain identifier"));
                }
                if let syn::Pat::Ident(pi) = &mut *pt.pat {
                    pi.mutability = None;
                }
                if matches!(args.acts[k].0, Activity::Active | Activity::ActiveOnly) {
                    let t = pt.ty.to_token_stream().to_string().replace(' ', "");
                    let shadow = match &p.referent {
                        Some(r) => format!("&mut {}", r.to_token_stream().to_string().replace(' ', "")),
                        None => view_type(&p.ty, true).to_string().replace(' ', ""),
                    };
                    return Err(syn::Error::new(args.acts[k].1, format!("`Active` is for floats passed by value; use `Duplicated` for `{t}`, whose shadow is a `{shadow}`")));
                }
                if args.lanes[k] {
                    return Err(syn::Error::new(
                        args.acts[k].1,
                        format!(
                            "`Dualv` is for slices; use `Dual` here (its tangent is a {} value like the argument)",
                            p.lib.name()
                        ),
                    ));
                }
                if p.lib != lib && !p.lib.enabled() {
                    let l = p.lib.name();
                    return Err(syn::Error::new(
                        pt.ty.span(),
                        format!("this type is from {l}: enable cotan's feature `{l}`"),
                    ));
                }
                *pt.ty = if p.mutable { syn::parse_quote!(&mut [f64]) } else { syn::parse_quote!(&[f64]) };
                let mat = p.matrix.then(|| {
                    let (r, c) = (format_ident!("nrows_{}", ident), format_ident!("ncols_{}", ident));
                    shape_params.push(syn::parse_quote!(#r: usize));
                    shape_params.push(syn::parse_quote!(#c: usize));
                    Mat::native(p.lib, syn::parse_quote!(#r), syn::parse_quote!(#c))
                });
                rw.bind(&ident, Val { lib: p.lib, buf: ident.clone(), owned: false, mat });
                params.push(Some(p));
            }
        }
    }
    inner.sig.inputs.extend(shape_params.iter().cloned());
    rw.visit_block_mut(&mut inner.block);
    if let Some(e) = rw.err {
        return Err(e);
    }
    // The activities, `Const` for the shapes.
    let mut items: Vec<TokenStream> = split_commas(attr);
    let at = if has_ret { items.len() - 1 } else { items.len() };
    for _ in 0..shape_params.len() {
        items.insert(at, quote!(Const));
    }
    let attr2 = quote!(#(#items),*);
    let derived = crate::derive_plain(mode, attr2, &inner, place)?;
    let derived: syn::ItemFn = syn::parse2(derived).map_err(|e| {
        syn::Error::new(func.sig.ident.span(), format!("internal error: cotan's derivative does not parse ({e})"))
    })?;
    wrap(func, &args, mode, &params, shape_params.len(), derived)
}

/// How many parameters (the argument, its shadows) the derivative has per parameter.
fn group(act: Activity, width: usize) -> usize {
    match act {
        Activity::Const | Activity::Active | Activity::ActiveOnly => 1,
        Activity::Duplicated | Activity::DuplicatedOnly => 2,
        Activity::Dual | Activity::DualOnly => 1 + width,
    }
}

/// std's signature around the derivative of the rewritten function, nested inside it.
fn wrap(
    func: &syn::ItemFn,
    args: &Args,
    mode: Mode,
    params: &[Option<LaParam>],
    n_shapes: usize,
    mut derived: syn::ItemFn,
) -> syn::Result<TokenStream> {
    let _ = mode;
    let inputs: Vec<syn::FnArg> = derived.sig.inputs.iter().cloned().collect();
    let mut next = inputs.iter();
    let mut sig_params: Vec<TokenStream> = vec![];
    let mut call: Vec<TokenStream> = vec![];
    let mut prelude = TokenStream::new();
    let (mut copies, mut write_backs) = (TokenStream::new(), TokenStream::new());
    let mut shapes: Vec<TokenStream> = vec![];
    let internal = || {
        syn::Error::new(func.sig.ident.span(), "internal error: cotan's derivative has fewer parameters than expected")
    };
    for (k, p) in params.iter().enumerate() {
        let n = group(args.acts[k].0, args.width);
        let group: Vec<&syn::FnArg> = (0..n).map(|_| next.next()).collect::<Option<_>>().ok_or_else(internal)?;
        let names: Vec<syn::Ident> = group
            .iter()
            .map(|a| match a {
                syn::FnArg::Typed(pt) => match &*pt.pat {
                    syn::Pat::Ident(pi) => pi.ident.clone(),
                    _ => format_ident!("arg{}", k),
                },
                syn::FnArg::Receiver(_) => format_ident!("self"),
            })
            .collect();
        let Some(p) = p else {
            for (a, n) in group.iter().zip(&names) {
                sig_params.push(a.to_token_stream());
                call.push(quote!(#n));
            }
            continue;
        };
        let krate = crate::cotan_path();
        let lib = p.lib.ident();
        for (j, (a, n)) in group.iter().zip(&names).enumerate() {
            let writable = matches!(a, syn::FnArg::Typed(pt) if matches!(&*pt.ty, syn::Type::Reference(r) if r.mutability.is_some()));
            let ty = match (&p.referent, writable) {
                (Some(t), true) => quote!(&mut #t),
                (Some(t), false) => quote!(&#t),
                (None, true) => view_type(&p.ty, true),
                (None, false) => view_type(&p.ty, false),
            };
            let mutability = (p.referent.is_none() && writable).then(|| quote!(mut));
            sig_params.push(quote!(#mutability #n: #ty));
            let by_ref = if p.referent.is_some() {
                quote!(#n)
            } else if writable {
                quote!(&mut #n)
            } else {
                quote!(&#n)
            };
            let shown = n.to_string();
            // faer's storage may pad columns: a column-major copy goes in, and what the
            // derivative writes is copied back after it.
            let faer_ref = |x: &syn::Ident| if p.referent.is_some() { quote!(&*#x) } else { quote!(&#x) };
            call.push(match (p.lib, writable) {
                (Lib::Nalgebra, false) => quote!(#n.as_slice()),
                (Lib::Nalgebra, true) => quote!(#n.as_mut_slice()),
                (Lib::Ndarray, false) => quote!(#krate::rt::ndarray::storage(#by_ref, #shown)),
                (Lib::Ndarray, true) => quote!(#krate::rt::ndarray::storage_mut(#by_ref, #shown)),
                (Lib::Faer, _) => {
                    let buf = format_ident!("faer_{}", n);
                    let src = faer_ref(n);
                    let m = writable.then(|| quote!(mut));
                    copies.extend(quote!(let #m #buf: Vec<f64> = #krate::rt::faer::storage(#src);));
                    if writable {
                        let dst = if p.referent.is_some() { quote!(&mut *#n) } else { quote!(&mut #n) };
                        write_backs.extend(quote!(#krate::rt::faer::write_back(#dst, &#buf);));
                        quote!(&mut #buf[..])
                    } else {
                        quote!(&#buf[..])
                    }
                }
            });
            if j > 0 {
                let x = &names[0];
                let xs = x.to_string();
                prelude.extend(match p.lib {
                    Lib::Faer => {
                        let (a, b) = (faer_ref(x), faer_ref(n));
                        quote!(#krate::rt::faer::same_shape(#xs, #a, #b);)
                    }
                    _ => quote!(#krate::rt::#lib::same_shape(#xs, #x.shape(), #n.shape());),
                });
            }
        }
        if p.matrix {
            let x = &names[0];
            shapes.push(quote!(#x.nrows()));
            shapes.push(quote!(#x.ncols()));
        }
    }
    let n_calls = call.len();
    for _ in 0..n_shapes {
        next.next().ok_or_else(internal)?;
    }
    // The seeds of reverse mode's results.
    for a in next {
        sig_params.push(a.to_token_stream());
        if let syn::FnArg::Typed(pt) = a {
            let n = &pt.pat;
            call.push(quote!(#n));
        }
    }
    let name = &derived.sig.ident;
    let ret = &derived.sig.output;
    let docs: Vec<syn::Attribute> = derived.attrs.iter().filter(|a| a.path().is_ident("doc")).cloned().collect();
    derived.attrs.retain(|a| !a.path().is_ident("doc"));
    let vis = &func.vis;
    let generics = &func.sig.generics;
    let where_clause = &func.sig.generics.where_clause;
    let unsafety = &func.sig.unsafety;
    // The shapes go before the seeds.
    let seeds = call.split_off(call.len() - (call.len() - n_calls));
    let body = quote!(#name(#(#call,)* #(#shapes,)* #(#seeds),*));
    let body = if write_backs.is_empty() {
        quote!(#copies #body)
    } else {
        quote!(#copies let faer_result = #body; #write_backs faer_result)
    };
    let body = if unsafety.is_some() { quote!(unsafe { #body }) } else { body };
    Ok(quote! {
        #(#docs)*
        #[inline]
        #[allow(clippy::all)]
        #vis #unsafety fn #name #generics (#(#sig_params),*) #ret #where_clause {
            #derived
            #prelude
            { #body }
        }
    })
}

/// A view type written by value, made writable (`ArrayViewMut1`) or read-only: the user's
/// type if it is already so, else the other one through cotan's runtime (which re-exports
/// ndarray's views, since the user's scope may not name them).
fn view_type(ty: &syn::Type, writable: bool) -> TokenStream {
    let syn::Type::Path(tp) = ty else { return ty.to_token_stream() };
    let Some(last) = tp.path.segments.last() else { return ty.to_token_stream() };
    let s = last.ident.to_string();
    let is_mut = s.starts_with("ArrayViewMut") || s.ends_with("Mut");
    if is_mut == writable {
        return ty.to_token_stream();
    }
    let (name, lib) = match s.as_str() {
        "MatRef" | "MatMut" | "ColRef" | "ColMut" => {
            let stem = &s[..3];
            (if writable { format!("{stem}Mut") } else { format!("{stem}Ref") }, quote!(faer))
        }
        _ if writable => (s.replace("ArrayView", "ArrayViewMut"), quote!(ndarray)),
        _ => (s.replace("ArrayViewMut", "ArrayView"), quote!(ndarray)),
    };
    let name = syn::Ident::new(&name, last.ident.span());
    let args = &last.arguments;
    let krate = crate::cotan_path();
    quote!(#krate::rt::#lib::#name #args)
}

/// The body of closure `f` with its parameters bound to `args` (as many as it takes),
/// for an iterator chain over indices: `{ let i = ..; let j = ..; body }`.
fn index_closure(f: &syn::Expr, args: &[TokenStream]) -> syn::Result<TokenStream> {
    let syn::Expr::Closure(c) = f else {
        return fail(f.span(), "cotan takes a closure here, `|i| ..`");
    };
    if c.inputs.is_empty() || c.inputs.len() > args.len() {
        return fail(c.span(), format!("cotan takes a closure of {} index(es) here", args.len().min(2)));
    }
    let lets = c.inputs.iter().zip(args).map(|(p, a)| quote!(let #p = #a;));
    let body = &c.body;
    Ok(quote!({ #(#lets)* #body }))
}

/// `e` without parentheses and references.
fn strip(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Paren(p) => strip(&p.expr),
        syn::Expr::Reference(r) => strip(&r.expr),
        e => e,
    }
}

/// A `Vec` copy of a slice expression (`&[1.0, 2.0]` as `vec![1.0, 2.0]`).
fn owned_copy(x: &syn::Expr) -> TokenStream {
    match x {
        syn::Expr::Reference(r) => match &*r.expr {
            syn::Expr::Array(a) => {
                let e = a.elems.iter();
                quote!(vec![#(#e),*])
            }
            _ => quote!((#x).to_vec()),
        },
        x => quote!((#x).to_vec()),
    }
}

/// Whether `e` names `name`.
fn mentions(e: &syn::Expr, name: &syn::Ident) -> bool {
    e.to_token_stream().into_iter().any(|t| fn_mentions(&t, name))
}

fn fn_mentions(t: &proc_macro2::TokenTree, name: &syn::Ident) -> bool {
    match t {
        proc_macro2::TokenTree::Ident(i) => i == name,
        proc_macro2::TokenTree::Group(g) => g.stream().into_iter().any(|t| fn_mentions(&t, name)),
        _ => false,
    }
}

fn split_commas(ts: TokenStream) -> Vec<TokenStream> {
    let mut out = vec![TokenStream::new()];
    for tt in ts {
        match &tt {
            proc_macro2::TokenTree::Punct(p) if p.as_char() == ',' => out.push(TokenStream::new()),
            _ => out.last_mut().unwrap().extend(std::iter::once(tt)),
        }
    }
    if out.last().is_some_and(|t| t.is_empty()) {
        out.pop();
    }
    out
}

/// A matrix's shape and strides, each an expression of `usize` (a name or a literal).
#[derive(Clone)]
struct Mat {
    rows: syn::Expr,
    cols: syn::Expr,
    rs: syn::Expr,
    cs: syn::Expr,
    /// Stored in its library's order (column-major for nalgebra, row-major for ndarray):
    /// iteration and linear indexing follow the storage.
    native: bool,
}

impl Mat {
    fn native(lib: Lib, rows: syn::Expr, cols: syn::Expr) -> Mat {
        let one: syn::Expr = syn::parse_quote!(1usize);
        match lib {
            Lib::Nalgebra | Lib::Faer => Mat { rs: one, cs: rows.clone(), rows, cols, native: true },
            Lib::Ndarray => Mat { rs: cols.clone(), cs: one, rows, cols, native: true },
        }
    }
    fn transposed(&self) -> Mat {
        Mat {
            rows: self.cols.clone(),
            cols: self.rows.clone(),
            rs: self.cs.clone(),
            cs: self.rs.clone(),
            native: false,
        }
    }
}

/// A nalgebra or ndarray value of the rewritten function: a buffer (a slice parameter or a
/// local `Vec`), and a matrix's shape.
#[derive(Clone)]
struct Val {
    lib: Lib,
    buf: syn::Ident,
    /// A local `Vec` (else a slice parameter).
    owned: bool,
    mat: Option<Mat>,
}

impl Val {
    /// The buffer as a `&[f64]` argument.
    fn arg(&self) -> TokenStream {
        let b = &self.buf;
        if self.owned {
            quote!(&#b[..])
        } else {
            quote!(#b)
        }
    }
    fn arg_mut(&self) -> TokenStream {
        let b = &self.buf;
        if self.owned {
            quote!(&mut #b[..])
        } else {
            quote!(#b)
        }
    }
    fn len(&self) -> TokenStream {
        let b = &self.buf;
        quote!(#b.len())
    }
}

/// What an expression rewrites to: an expression of the rewritten function, or a value.
// Short-lived results of the rewrite, never stored in bulk.
#[allow(clippy::large_enum_variant)]
enum R {
    Plain(syn::Expr),
    La(Val),
}

struct Rewriter {
    scopes: Vec<HashMap<String, Option<Val>>>,
    hoist: Vec<syn::Stmt>,
    tmp: usize,
    err: Option<syn::Error>,
    krate: TokenStream,
    /// The buffers that hold a Cholesky factor (`cholesky.rs`), not a matrix.
    factors: HashSet<String>,
}

fn fail<T>(span: Span, msg: impl Into<String>) -> syn::Result<T> {
    Err(syn::Error::new(span, msg.into()))
}

impl Rewriter {
    fn new() -> Rewriter {
        Rewriter {
            scopes: vec![HashMap::default()],
            hoist: vec![],
            tmp: 0,
            err: None,
            krate: crate::cotan_path(),
            factors: HashSet::default(),
        }
    }
    fn bind(&mut self, name: &syn::Ident, v: Val) {
        self.scopes.last_mut().unwrap().insert(name.to_string(), Some(v));
    }
    fn shadow_name(&mut self, name: &syn::Ident) {
        self.scopes.last_mut().unwrap().insert(name.to_string(), None);
    }
    fn shadow_pat(&mut self, pat: &syn::Pat) {
        struct Names(Vec<syn::Ident>);
        impl<'ast> Visit<'ast> for Names {
            fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
                self.0.push(p.ident.clone());
                syn::visit::visit_pat_ident(self, p);
            }
        }
        let mut n = Names(vec![]);
        n.visit_pat(pat);
        for i in n.0 {
            self.shadow_name(&i);
        }
    }
    fn lookup(&self, name: &str) -> Option<Val> {
        self.scopes.iter().rev().find_map(|s| s.get(name)).cloned().flatten()
    }
    fn fresh(&mut self, dest: Option<&syn::Ident>) -> syn::Ident {
        if let Some(d) = dest {
            // A new buffer under this name, no longer a factor it may have named.
            self.factors.remove(&d.to_string());
            return d.clone();
        }
        self.tmp += 1;
        format_ident!("la_t{}", self.tmp)
    }
    fn push(&mut self, s: TokenStream) -> syn::Result<()> {
        let b: syn::Block = syn::parse2(quote!({ #s }))?;
        self.hoist.extend(b.stmts);
        Ok(())
    }
    fn fail_error(&mut self, e: syn::Error) {
        if self.err.is_none() {
            self.err = Some(e);
        }
    }

    /// A new local buffer `dest` (or a temporary) of `len` zeros.
    fn zeros(&mut self, dest: Option<&syn::Ident>, len: TokenStream) -> syn::Result<syn::Ident> {
        let t = self.fresh(dest);
        self.push(quote!(let mut #t: Vec<f64> = vec![0.0f64; #len];))?;
        Ok(t)
    }

    /// A matrix local's shape, bound to names so that later changes of what it was computed
    /// from do not change it.
    fn shape_locals(
        &mut self,
        t: &syn::Ident,
        rows: TokenStream,
        cols: TokenStream,
    ) -> syn::Result<(syn::Expr, syn::Expr)> {
        let (r, c) = (format_ident!("nrows_{}", t), format_ident!("ncols_{}", t));
        self.push(quote!(let #r: usize = #rows; let #c: usize = #cols;))?;
        Ok((syn::parse_quote!(#r), syn::parse_quote!(#c)))
    }

    /// `v` in its library's storage order (a copy of a transposed matrix).
    fn native(&mut self, v: Val, dest: Option<&syn::Ident>) -> syn::Result<Val> {
        match &v.mat {
            Some(m) if !m.native => self.copy(v.clone(), dest),
            _ => Ok(v),
        }
    }

    /// A copy of `v` in a new local buffer, in its library's storage order.
    fn copy(&mut self, v: Val, dest: Option<&syn::Ident>) -> syn::Result<Val> {
        match v.mat.clone() {
            None => {
                let t = self.fresh(dest);
                let a = v.arg();
                self.push(quote!(let mut #t: Vec<f64> = #a.to_vec();))?;
                Ok(Val { lib: v.lib, buf: t, owned: true, mat: None })
            }
            Some(m) => {
                let (rows, cols, rs, cs) = (&m.rows, &m.cols, &m.rs, &m.cs);
                let t = self.zeros(dest, quote!(#rows * #cols))?;
                let (r, c) = self.shape_locals(&t, quote!(#rows), quote!(#cols))?;
                let nm = Mat::native(v.lib, r.clone(), c.clone());
                let (nrs, ncs) = (&nm.rs, &nm.cs);
                let src = &v.buf;
                self.push(quote! {
                    for i in 0..#r {
                        for j in 0..#c {
                            #t[i * #nrs + j * #ncs] = #src[i * #rs + j * #cs];
                        }
                    }
                })?;
                Ok(Val { lib: v.lib, buf: t, owned: true, mat: Some(nm) })
            }
        }
    }

    /// An element-wise map of `v` (in storage order) by `f`, a closure of one `f64`.
    fn map(&mut self, v: Val, f: TokenStream, dest: Option<&syn::Ident>) -> syn::Result<Val> {
        let v = self.native(v, None)?;
        let t = self.fresh(dest);
        let a = v.arg();
        self.push(quote!(let mut #t: Vec<f64> = #a.iter().map(#f).collect::<Vec<f64>>();))?;
        let mat = match &v.mat {
            Some(m) => {
                let (rows, cols) = (&m.rows, &m.cols);
                let (r, c) = self.shape_locals(&t, quote!(#rows), quote!(#cols))?;
                Some(Mat::native(v.lib, r, c))
            }
            None => None,
        };
        Ok(Val { lib: v.lib, buf: t, owned: true, mat })
    }

    /// `a op b` element by element.
    fn zip(&mut self, a: Val, b: Val, op: TokenStream, span: Span, dest: Option<&syn::Ident>) -> syn::Result<Val> {
        if a.mat.is_some() != b.mat.is_some() {
            return fail(span, "cotan combines vectors with vectors and matrices with matrices element by element here; the shapes differ");
        }
        let a = self.native(a, None)?;
        let b = self.native(b, None)?;
        let t = self.fresh(dest);
        let (x, y) = (a.arg(), b.arg());
        let (la, lb) = (a.len(), b.len());
        self.push(quote! {
            assert_eq!(#la, #lb, "element-wise operation on values of different shapes");
            let mut #t: Vec<f64> = #x.iter().zip(#y.iter()).map(|(&p, &q)| p #op q).collect::<Vec<f64>>();
        })?;
        let mat = match &a.mat {
            Some(m) => {
                let (rows, cols) = (&m.rows, &m.cols);
                let (r, c) = self.shape_locals(&t, quote!(#rows), quote!(#cols))?;
                Some(Mat::native(a.lib, r, c))
            }
            None => None,
        };
        Ok(Val { lib: a.lib, buf: t, owned: true, mat })
    }

    /// A matrix-vector or matrix-matrix product (a vector on the left is a row).
    fn product(&mut self, a: Val, b: Val, span: Span, dest: Option<&syn::Ident>) -> syn::Result<Val> {
        // `aᵀ a`: the runtime's rules take the two operands' shadows as two `&mut`, which
        // must not be one buffer; the second operand is a copy.
        let b = if a.buf == b.buf { self.copy(b, None)? } else { b };
        let k = self.krate.clone();
        let lib = a.lib.ident();
        match (&a.mat, &b.mat) {
            (Some(m), None) => {
                let (rows, cols, rs, cs) = (&m.rows, &m.cols, &m.rs, &m.cs);
                let (ab, x, bl) = (a.arg(), b.arg(), b.len());
                let t = self.zeros(dest, quote!(#rows))?;
                self.push(quote! {
                    assert_eq!(#cols, #bl, "matrix-vector product of a matrix with {} columns and a vector of length {}", #cols, #bl);
                    #k::rt::#lib::gemv(#ab, #rows, #cols, #rs, #cs, #x, &mut #t[..]);
                })?;
                Ok(Val { lib: a.lib, buf: t, owned: true, mat: None })
            }
            (None, Some(m)) => {
                // xᵀ B = Bᵀ x.
                self.product(Val { mat: Some(m.transposed()), ..b }, a, span, dest)
            }
            (Some(ma), Some(mb)) => {
                let t = self.fresh(dest);
                let (m, kk, n) = (&ma.rows, &ma.cols, &mb.cols);
                let (r, c) = (format_ident!("nrows_{}", t), format_ident!("ncols_{}", t));
                let nm = Mat::native(a.lib, syn::parse_quote!(#r), syn::parse_quote!(#c));
                let (ars, acs, brs, bcs, crs, ccs) = (&ma.rs, &ma.cs, &mb.rs, &mb.cs, &nm.rs, &nm.cs);
                let (x, y) = (a.arg(), b.arg());
                let kb = &mb.rows;
                self.push(quote! {
                    assert_eq!(#kk, #kb, "matrix product of a matrix with {} columns and one with {} rows", #kk, #kb);
                    let #r: usize = #m;
                    let #c: usize = #n;
                    let mut #t: Vec<f64> = vec![0.0f64; #r * #c];
                    #k::rt::#lib::gemm(#x, #r, #kk, #ars, #acs, #y, #c, #brs, #bcs, &mut #t[..], #crs, #ccs);
                })?;
                Ok(Val { lib: a.lib, buf: t, owned: true, mat: Some(nm) })
            }
            (None, None) => fail(span, "cotan multiplies a matrix by a vector or a matrix here; for the dot product of two vectors write `a.dot(&b)`"),
        }
    }

    fn la_or_fail(&mut self, e: &syn::Expr, what: &str) -> syn::Result<Val> {
        match self.expr(e, None)? {
            R::La(v) => Ok(v),
            R::Plain(_) => fail(e.span(), format!("cotan expects a nalgebra or ndarray value here ({what})")),
        }
    }

    /// An argument of a call: a nalgebra or ndarray value passes only as its storage.
    fn argument(&mut self, e: &syn::Expr) -> syn::Result<syn::Expr> {
        match self.expr(e, None)? {
            R::Plain(p) => Ok(p),
            R::La(v) => {
                let how = match v.lib {
                    Lib::Ndarray => "`x.as_slice().unwrap()`",
                    _ => "`x.as_slice()`",
                };
                fail(e.span(), format!("cotan passes {} values to functions as their storage only: give the function a `&[f64]` (or `&mut [f64]`) parameter and pass {how}", v.lib.name()))
            }
        }
    }

    fn scalar(&mut self, e: &syn::Expr) -> syn::Result<syn::Expr> {
        match self.expr(e, None)? {
            R::Plain(p) => Ok(p),
            R::La(_) => fail(e.span(), "cotan expects a number here, not a vector or matrix"),
        }
    }

    /// Rewrites `e`; a new value that it makes is named `dest` if given.
    fn expr(&mut self, e: &syn::Expr, dest: Option<&syn::Ident>) -> syn::Result<R> {
        match e {
            syn::Expr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => {
                if let Some(v) = self.lookup(&p.path.get_ident().unwrap().to_string()) {
                    return Ok(R::La(v));
                }
            }
            syn::Expr::Reference(r) => {
                return Ok(match self.expr(&r.expr, dest)? {
                    R::La(v) => R::La(v),
                    R::Plain(x) => {
                        let mut r = r.clone();
                        *r.expr = x;
                        R::Plain(syn::Expr::Reference(r))
                    }
                });
            }
            syn::Expr::Paren(p) => {
                return Ok(match self.expr(&p.expr, dest)? {
                    R::La(v) => R::La(v),
                    R::Plain(x) => {
                        let mut p = p.clone();
                        *p.expr = x;
                        R::Plain(syn::Expr::Paren(p))
                    }
                });
            }
            syn::Expr::Index(ix) => {
                return match self.expr(&ix.expr, None)? {
                    R::La(v) => self.index(v, &ix.index, e.span()).map(R::Plain),
                    R::Plain(x) => {
                        let mut ix = ix.clone();
                        *ix.expr = x;
                        *ix.index = self.scalar(&ix.index)?;
                        Ok(R::Plain(syn::Expr::Index(ix)))
                    }
                };
            }
            syn::Expr::MethodCall(mc) => {
                if let Some(r) = self.solve(mc, dest)? {
                    return Ok(r);
                }
                if let Some(r) = self.cholesky(mc, dest)? {
                    return Ok(r);
                }
                // ndarray's `x.as_slice().unwrap()` (or `.expect(..)`): the storage.
                if let syn::Expr::MethodCall(inner) = &*mc.receiver {
                    let m = inner.method.to_string();
                    if ["unwrap", "expect"].contains(&mc.method.to_string().as_str())
                        && ["as_slice", "as_slice_mut", "as_slice_memory_order"].contains(&m.as_str())
                        && inner.args.is_empty()
                    {
                        if let R::La(v) = self.expr(&inner.receiver, None)? {
                            let v = self.native(v, None)?;
                            let a = if m == "as_slice" { v.arg() } else { v.arg_mut() };
                            return Ok(R::Plain(syn::parse2(a)?));
                        }
                    }
                }
                return match self.expr(&mc.receiver, None)? {
                    R::La(v) => self.method(v, mc, dest),
                    R::Plain(x) => {
                        let mut mc = mc.clone();
                        *mc.receiver = x;
                        for a in mc.args.iter_mut() {
                            *a = self.argument(a)?;
                        }
                        Ok(R::Plain(syn::Expr::MethodCall(mc)))
                    }
                };
            }
            syn::Expr::Call(c) => {
                if let Some(r) = self.constructor(c, dest)? {
                    return Ok(r);
                }
                let mut c = c.clone();
                *c.func = self.scalar(&c.func)?;
                for a in c.args.iter_mut() {
                    *a = self.argument(a)?;
                }
                return Ok(R::Plain(syn::Expr::Call(c)));
            }
            syn::Expr::Unary(u) => {
                return match self.expr(&u.expr, None)? {
                    R::La(v) if matches!(u.op, syn::UnOp::Neg(_)) => self.map(v, quote!(|&p| -p), dest).map(R::La),
                    // `*x` of a `&mut DVector` parameter: the value itself.
                    R::La(v) if matches!(u.op, syn::UnOp::Deref(_)) => Ok(R::La(v)),
                    R::La(_) => fail(u.span(), "cotan expects a number here, not a vector or matrix"),
                    R::Plain(x) => {
                        let mut u = u.clone();
                        *u.expr = x;
                        Ok(R::Plain(syn::Expr::Unary(u)))
                    }
                };
            }
            syn::Expr::Binary(b) => {
                if let Some(r) = self.binary(b, dest)? {
                    return Ok(r);
                }
            }
            syn::Expr::Closure(c) => {
                let mut c = c.clone();
                self.scopes.push(HashMap::default());
                for p in &c.inputs {
                    self.shadow_pat(p);
                }
                let saved = std::mem::take(&mut self.hoist);
                let body = self.scalar(&c.body);
                let hoisted = std::mem::replace(&mut self.hoist, saved);
                self.scopes.pop();
                let body = body?;
                *c.body = if hoisted.is_empty() { body } else { syn::parse_quote!({ #(#hoisted)* #body }) };
                return Ok(R::Plain(syn::Expr::Closure(c)));
            }
            syn::Expr::While(w) => {
                let mut w = w.clone();
                let saved = std::mem::take(&mut self.hoist);
                let cond = self.scalar(&w.cond);
                let hoisted = std::mem::replace(&mut self.hoist, saved);
                *w.cond = cond?;
                if !hoisted.is_empty() {
                    return fail(w.cond.span(), "cotan computes nalgebra/ndarray values in statements, not in a `while` condition; compute it in a `let` inside a `loop`");
                }
                self.visit_block_mut(&mut w.body);
                return Ok(R::Plain(syn::Expr::While(w)));
            }
            syn::Expr::ForLoop(f) => {
                let mut f = f.clone();
                let iter = match self.expr(&f.expr, None)? {
                    R::Plain(p) => p,
                    R::La(v) => {
                        let v = self.native(v, None)?;
                        let b = &v.buf;
                        let writes = matches!(&*f.expr, syn::Expr::Reference(r) if r.mutability.is_some());
                        if writes {
                            syn::parse_quote!(#b.iter_mut())
                        } else {
                            syn::parse_quote!(#b.iter())
                        }
                    }
                };
                *f.expr = iter;
                self.scopes.push(HashMap::default());
                self.shadow_pat(&f.pat);
                self.visit_block_mut(&mut f.body);
                self.scopes.pop();
                return Ok(R::Plain(syn::Expr::ForLoop(f)));
            }
            _ => {}
        }
        let mut e = e.clone();
        syn::visit_mut::visit_expr_mut(self, &mut e);
        Ok(R::Plain(e))
    }

    /// nalgebra's `a.lu().solve(&b).unwrap()` (also `a.clone().lu()`, `.expect(..)`): a new
    /// vector, `A⁻¹ b`, by the runtime's `solve`, whose derivatives reuse the factorization.
    /// Also faer's `a.partial_piv_lu().solve(&b)`.
    fn solve(&mut self, mc: &syn::ExprMethodCall, dest: Option<&syn::Ident>) -> syn::Result<Option<R>> {
        let (solve, lib) = if mc.method == "solve" {
            (mc, Lib::Faer)
        } else if ["unwrap", "expect"].contains(&mc.method.to_string().as_str()) {
            let syn::Expr::MethodCall(solve) = strip(&mc.receiver) else { return Ok(None) };
            (solve, Lib::Nalgebra)
        } else {
            return Ok(None);
        };
        let syn::Expr::MethodCall(lu) = strip(&solve.receiver) else { return Ok(None) };
        let factorization = if lib == Lib::Faer { "partial_piv_lu" } else { "lu" };
        if solve.method != "solve" || solve.args.len() != 1 || lu.method != factorization || !lu.args.is_empty() {
            return Ok(None);
        }
        let base = match strip(&lu.receiver) {
            syn::Expr::MethodCall(c) if c.method == "clone" && c.args.is_empty() => &*c.receiver,
            e => e,
        };
        let R::La(a) = self.expr(base, None)? else { return Ok(None) };
        let span = solve.method.span();
        let Some(m) = a.mat.clone().filter(|_| a.lib == lib) else {
            return fail(span, "cotan solves with a nalgebra matrix, `a.lu().solve(&b).unwrap()`, or a faer one, `a.partial_piv_lu().solve(&b)`");
        };
        let b = self.la_or_fail(&solve.args[0], "the right-hand side of `solve`")?;
        if b.mat.is_some() {
            return fail(span, "cotan solves for one right-hand side, a vector; solve column by column");
        }
        let (rows, cols, rs, cs) = (&m.rows, &m.cols, &m.rs, &m.cs);
        let (ab, bb, bl) = (a.arg(), b.arg(), b.len());
        let k = self.krate.clone();
        let l = lib.ident();
        let t = self.zeros(dest, quote!(#rows))?;
        self.push(quote! {
            assert_eq!(#rows, #cols, "`solve` with a matrix that is not square");
            assert_eq!(#rows, #bl, "`solve` with a right-hand side of another length");
            #k::rt::#l::solve(#ab, #rows, #rs, #cs, #bb, &mut #t[..]);
        })?;
        Ok(Some(R::La(Val { lib, buf: t, owned: true, mat: None })))
    }

    fn index(&mut self, v: Val, index: &syn::Expr, span: Span) -> syn::Result<syn::Expr> {
        self.not_factor(&v, span)?;
        let b = &v.buf;
        let pair = match index {
            syn::Expr::Tuple(t) if t.elems.len() == 2 => Some((&t.elems[0], &t.elems[1])),
            syn::Expr::Array(a) if a.elems.len() == 2 => Some((&a.elems[0], &a.elems[1])),
            _ => None,
        };
        match (&v.mat, pair) {
            (Some(m), Some((i, j))) => {
                let (i, j) = (self.scalar(i)?, self.scalar(j)?);
                let (rs, cs) = (&m.rs, &m.cs);
                Ok(syn::parse_quote!(#b[(#i) * #rs + (#j) * #cs]))
            }
            (Some(m), None) if m.native && v.lib == Lib::Nalgebra => {
                let i = self.scalar(index)?;
                Ok(syn::parse_quote!(#b[#i]))
            }
            (None, None) => {
                let i = self.scalar(index)?;
                Ok(syn::parse_quote!(#b[#i]))
            }
            (None, Some(_)) => fail(span, "a vector takes one index, `v[i]`"),
            (Some(_), None) => {
                fail(span, "index a matrix by row and column: `m[(i, j)]` (nalgebra) or `a[[i, j]]` (ndarray)")
            }
        }
    }

    fn method(&mut self, v: Val, mc: &syn::ExprMethodCall, dest: Option<&syn::Ident>) -> syn::Result<R> {
        if self.is_factor(&v) {
            return self.factor_method(v, mc, dest);
        }
        let name = mc.method.to_string();
        let span = mc.method.span();
        let k = self.krate.clone();
        let lib = v.lib.ident();
        let b = v.buf.clone();
        let args: Vec<&syn::Expr> = mc.args.iter().collect();
        let plain = |e: syn::Expr| Ok(R::Plain(e));
        match (name.as_str(), args.len()) {
            ("len", 0) => plain(syn::parse_quote!(#b.len())),
            ("nrows" | "ncols", 0) => match &v.mat {
                Some(m) => plain(if name == "nrows" { m.rows.clone() } else { m.cols.clone() }),
                None if v.lib != Lib::Ndarray => plain(if name == "nrows" { syn::parse_quote!(#b.len()) } else { syn::parse_quote!(1usize) }),
                None => fail(span, "`nrows`/`ncols` are a matrix's; a vector has `len()`"),
            },
            ("shape", 0) => match &v.mat {
                Some(m) => {
                    let (r, c) = (&m.rows, &m.cols);
                    plain(match v.lib {
                        Lib::Nalgebra | Lib::Faer => syn::parse_quote!((#r, #c)),
                        Lib::Ndarray => syn::parse_quote!([#r, #c]),
                    })
                }
                None => plain(match v.lib {
                    Lib::Nalgebra | Lib::Faer => syn::parse_quote!((#b.len(), 1usize)),
                    Lib::Ndarray => syn::parse_quote!([#b.len()]),
                }),
            },
            ("dim", 0) => match &v.mat {
                Some(m) => {
                    let (r, c) = (&m.rows, &m.cols);
                    plain(syn::parse_quote!((#r, #c)))
                }
                None => plain(syn::parse_quote!(#b.len())),
            },
            ("iter", 0) | ("iter_mut", 0) => {
                let v = self.native(v, None)?;
                let b = &v.buf;
                let m = &mc.method;
                plain(syn::parse_quote!(#b.#m()))
            }
            ("as_slice" | "as_mut_slice", 0) if v.lib == Lib::Nalgebra => {
                let v = self.native(v, None)?;
                let a = if name == "as_slice" { v.arg() } else { v.arg_mut() };
                plain(syn::parse2(a)?)
            }
            ("sum", 0) => {
                let a = v.arg();
                plain(syn::parse2(quote!(#a.iter().sum::<f64>()))?)
            }
            ("mean", 0) if v.lib == Lib::Nalgebra => {
                let a = v.arg();
                plain(syn::parse2(quote!((#a.iter().sum::<f64>() / #a.len() as f64)))?)
            }
            ("norm_squared", 0) | ("squared_norm_l2", 0) => {
                let v = self.native(v, None)?;
                let a = v.arg();
                plain(syn::parse2(quote!(#k::rt::#lib::norm_squared(#a)))?)
            }
            ("norm", 0) | ("norm_l2", 0) => {
                let v = self.native(v, None)?;
                let a = v.arg();
                plain(syn::parse2(quote!(#k::rt::#lib::norm_squared(#a).sqrt()))?)
            }
            ("dot", 1) => {
                let w = self.la_or_fail(args[0], "the argument of `dot`")?;
                match (&v.mat, &w.mat) {
                    (None, None) => {
                        if w.buf == v.buf {
                            let a = v.arg();
                            return plain(syn::parse2(quote!(#k::rt::#lib::norm_squared(#a)))?);
                        }
                        let (a, c) = (v.arg(), w.arg());
                        let (la, lc) = (v.len(), w.len());
                        self.push(quote!(assert_eq!(#la, #lc, "dot product of vectors of different lengths");))?;
                        plain(syn::parse2(quote!(#k::rt::#lib::dot(#a, #c)))?)
                    }
                    _ if v.lib == Lib::Ndarray => self.product(v, w, span, dest).map(R::La),
                    _ => fail(span, "nalgebra's `dot` of matrices is not supported by cotan; multiply with `*` or use `dot` on vectors"),
                }
            }
            ("tr_mul", 1) if v.lib == Lib::Nalgebra => {
                let w = self.la_or_fail(args[0], "the argument of `tr_mul`")?;
                let vt = match &v.mat {
                    Some(m) => Val { mat: Some(m.transposed()), ..v },
                    None => return fail(span, "cotan takes `tr_mul` on a matrix"),
                };
                self.product(vt, w, span, dest).map(R::La)
            }
            ("transpose" | "t" | "reversed_axes", 0) => match &v.mat {
                Some(m) => {
                    let t = Val { mat: Some(m.transposed()), ..v };
                    // nalgebra's transpose is a copy, ndarray's `t()` a view.
                    if v.lib == Lib::Nalgebra && dest.is_some() {
                        self.copy(t, dest).map(R::La)
                    } else {
                        Ok(R::La(t))
                    }
                }
                None => fail(span, "cotan transposes matrices only (a row vector is not supported)"),
            },
            ("clone" | "to_owned" | "into_owned", 0) => self.copy(v, dest).map(R::La),
            // faer's reborrows: the same value.
            ("as_ref" | "as_mut" | "rb" | "rb_mut", 0) if v.lib == Lib::Faer => Ok(R::La(v)),
            ("partial_piv_lu" | "llt", _) if v.lib == Lib::Faer => fail(
                span,
                format!("cotan takes faer's `{name}` in one expression with its use: `a.partial_piv_lu().solve(&b)`, `let c = a.llt(Side::Lower).unwrap();` (then `c.solve(&b)`, `c.L()`)"),
            ),
            ("cholesky", 0) if v.lib == Lib::Nalgebra => fail(
                span,
                "cotan takes a Cholesky factor in one expression, `a.clone().cholesky().unwrap()` (or `.expect(..)`); `match` and `if let` on it are not supported",
            ),
            ("diagonal", 0) if v.lib == Lib::Nalgebra => match v.mat.clone() {
                Some(m) => {
                    let (rows, cols, rs, cs) = (&m.rows, &m.cols, &m.rs, &m.cs);
                    let t = self.fresh(dest);
                    let b = &v.buf;
                    self.push(quote!(let mut #t: Vec<f64> = (0..#rows.min(#cols)).map(|i| #b[i * #rs + i * #cs]).collect::<Vec<f64>>();))?;
                    Ok(R::La(Val { lib: v.lib, buf: t, owned: true, mat: None }))
                }
                None => fail(span, "cotan takes the `diagonal()` of a matrix"),
            },
            ("map" | "mapv", 1) => {
                // nalgebra's `map` and ndarray's `mapv` give the closure the number, ndarray's
                // `map` a reference to it.
                let by_ref = v.lib == Lib::Ndarray && name == "map";
                let f = match args[0] {
                    syn::Expr::Closure(c) if c.inputs.len() == 1 => {
                        let pat = c.inputs[0].clone();
                        self.scopes.push(HashMap::default());
                        self.shadow_pat(&pat);
                        let saved = std::mem::take(&mut self.hoist);
                        let body = self.scalar(&c.body);
                        let hoisted = std::mem::replace(&mut self.hoist, saved);
                        self.scopes.pop();
                        let body = body?;
                        let body = if hoisted.is_empty() { quote!(#body) } else { quote!({ #(#hoisted)* #body }) };
                        match (&pat, by_ref) {
                            (_, true) => quote!(|#pat| #body),
                            (syn::Pat::Ident(pi), false) => {
                                let i = &pi.ident;
                                quote!(|&#i| #body)
                            }
                            (syn::Pat::Type(pt), false) => {
                                let p = &pt.pat;
                                quote!(|&#p: &f64| #body)
                            }
                            _ => return fail(pat.span(), "name the closure's parameter with a plain identifier"),
                        }
                    }
                    syn::Expr::Path(f) => {
                        if by_ref {
                            quote!(|p: &f64| #f(p))
                        } else {
                            quote!(|&p: &f64| #f(p))
                        }
                    }
                    e => return fail(e.span(), "cotan takes a closure or a function's name here"),
                };
                self.map(v, f, dest).map(R::La)
            }
            ("component_mul" | "component_div", 1) if v.lib == Lib::Nalgebra => {
                let w = self.la_or_fail(args[0], "the argument")?;
                let op = if name == "component_mul" { quote!(*) } else { quote!(/) };
                self.zip(v, w, op, span, dest).map(R::La)
            }
            ("scale", 1) if v.lib == Lib::Nalgebra => {
                let s = self.scalar(args[0])?;
                let s = self.hoisted_scalar(s)?;
                self.map(v, quote!(|&p| p * #s), dest).map(R::La)
            }
            ("fill", 1) => {
                let s = self.scalar(args[0])?;
                plain(syn::parse2(quote!(#b.fill(#s)))?)
            }
            ("copy_from" | "assign", 1) => {
                let w = self.la_or_fail(args[0], "the argument")?;
                let w = self.native(w, None)?;
                let a = w.arg();
                plain(syn::parse2(quote!(#b.copy_from_slice(#a)))?)
            }
            _ if v.lib == Lib::Faer => fail(
                span,
                format!("cotan does not support `{name}` on faer values in differentiated functions; supported: indexing, `nrows`, `ncols`, `shape`, `iter`, products `&a * &b`, `transpose`, `norm_l2`, `squared_norm_l2`, `sum`, `clone`/`to_owned`, `as_ref`, `fill`, `partial_piv_lu().solve(&b)`, `llt(Side::Lower).unwrap()`; element-wise maps as `Mat::from_fn`/`Col::from_fn`"),
            ),
            _ => fail(
                span,
                format!("cotan does not support `{name}` on {} values in differentiated functions; supported: indexing, `len`, `nrows`, `ncols`, `shape`, `dim`, `iter`, `iter_mut`, `dot`, products, `transpose`/`t`, `norm`, `norm_squared`, `sum`, `map`/`mapv`, `component_mul`, `clone`, `fill`, `as_slice`, `diagonal` and `cholesky().unwrap()` (nalgebra)", v.lib.name()),
            ),
        }
    }

    /// A number computed once, before the statement (`let s = ..;`).
    fn hoisted_scalar(&mut self, s: syn::Expr) -> syn::Result<syn::Ident> {
        self.tmp += 1;
        let t = format_ident!("la_s{}", self.tmp);
        self.push(quote!(let #t: f64 = #s;))?;
        Ok(t)
    }

    fn binary(&mut self, b: &syn::ExprBinary, dest: Option<&syn::Ident>) -> syn::Result<Option<R>> {
        use syn::BinOp;
        let arith = matches!(b.op, BinOp::Add(_) | BinOp::Sub(_) | BinOp::Mul(_) | BinOp::Div(_));
        let compound =
            matches!(b.op, BinOp::AddAssign(_) | BinOp::SubAssign(_) | BinOp::MulAssign(_) | BinOp::DivAssign(_));
        if !arith && !compound {
            return Ok(None);
        }
        if compound {
            let R::La(target) = self.expr(&b.left, None)? else { return Ok(None) };
            self.not_factor(&target, b.left.span())?;
            let tb = target.buf.clone();
            let op = match b.op {
                BinOp::AddAssign(_) => quote!(+=),
                BinOp::SubAssign(_) => quote!(-=),
                BinOp::MulAssign(_) => quote!(*=),
                _ => quote!(/=),
            };
            if target.mat.as_ref().is_some_and(|m| !m.native) {
                return fail(
                    b.left.span(),
                    "cotan updates a matrix in place through its own storage, not through a transpose",
                );
            }
            let right = match self.expr(&b.right, None)? {
                R::La(w) => {
                    let w = self.native(w, None)?;
                    let a = w.arg();
                    let (lt, lw) = (target.len(), w.len());
                    self.push(quote!(assert_eq!(#lt, #lw, "element-wise update with a value of another shape");))?;
                    syn::parse2::<syn::Expr>(quote!(#a[k]))?
                }
                R::Plain(s) => {
                    let s = self.hoisted_scalar(s)?;
                    syn::parse_quote!(#s)
                }
            };
            return Ok(Some(R::Plain(syn::parse2(quote!(for k in 0..#tb.len() { #tb[k] #op #right; }))?)));
        }
        // faer's `Scale(k) * &a` is `k * &a`.
        let unscale = |e: &syn::Expr| match strip(e) {
            syn::Expr::Call(c)
                if c.args.len() == 1
                    && matches!(&*c.func, syn::Expr::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Scale")) =>
            {
                c.args[0].clone()
            }
            _ => e.clone(),
        };
        let left = self.expr(&unscale(&b.left), None)?;
        let right = self.expr(&unscale(&b.right), None)?;
        let span = b.op.span();
        for side in [&left, &right] {
            if let R::La(v) = side {
                self.not_factor(v, span)?;
            }
        }
        let op = match b.op {
            BinOp::Add(_) => quote!(+),
            BinOp::Sub(_) => quote!(-),
            BinOp::Mul(_) => quote!(*),
            _ => quote!(/),
        };
        let r = match (left, right) {
            (R::Plain(l), R::Plain(r)) => {
                let mut e = b.clone();
                *e.left = l;
                *e.right = r;
                return Ok(Some(R::Plain(syn::Expr::Binary(e))));
            }
            (R::La(a), R::La(c)) => match b.op {
                BinOp::Mul(_) if a.lib != Lib::Ndarray => self.product(a, c, span, dest)?,
                _ => self.zip(a, c, op, span, dest)?,
            },
            (R::La(a), R::Plain(s)) => {
                let s = self.hoisted_scalar(s)?;
                if a.lib != Lib::Ndarray && matches!(b.op, BinOp::Add(_) | BinOp::Sub(_)) {
                    return fail(
                        span,
                        format!("{} does not add numbers to vectors and matrices here; use a `map` (nalgebra) or `Mat::from_fn` (faer)", a.lib.name()),
                    );
                }
                self.map(a, quote!(|&p| p #op #s), dest)?
            }
            (R::Plain(s), R::La(a)) => {
                let s = self.hoisted_scalar(s)?;
                if a.lib != Lib::Ndarray && !matches!(b.op, BinOp::Mul(_)) {
                    return fail(span, format!("{} multiplies vectors by numbers only here", a.lib.name()));
                }
                self.map(a, quote!(|&p| #s #op p), dest)?
            }
        };
        Ok(Some(R::La(r)))
    }

    /// `DVector::zeros(n)`, `Array2::zeros((r, c))`, `DVector::from_vec(v)`, `arr1(&[..])`, ...
    fn constructor(&mut self, c: &syn::ExprCall, dest: Option<&syn::Ident>) -> syn::Result<Option<R>> {
        let syn::Expr::Path(p) = &*c.func else { return Ok(None) };
        let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
        let span = c.span();
        let args: Vec<&syn::Expr> = c.args.iter().collect();
        let last = segs.last().cloned().unwrap_or_default();
        // `arr1(&[..])`, `arr2(&[[..], ..])`
        if (last == "arr1" || last == "arr2") && (segs.len() == 1 || segs[0] == "ndarray") && args.len() == 1 {
            let lit = match args[0] {
                syn::Expr::Reference(r) => &*r.expr,
                e => e,
            };
            let syn::Expr::Array(arr) = lit else {
                return fail(args[0].span(), format!("cotan takes `{last}` of an array literal, `{last}(&[..])`"));
            };
            let t = self.fresh(dest);
            if last == "arr1" {
                let elems: Vec<syn::Expr> = arr.elems.iter().map(|e| self.scalar(e)).collect::<syn::Result<_>>()?;
                self.push(quote!(let mut #t: Vec<f64> = vec![#(#elems),*];))?;
                return Ok(Some(R::La(Val { lib: Lib::Ndarray, buf: t, owned: true, mat: None })));
            }
            let mut elems = vec![];
            let mut cols = None;
            for row in &arr.elems {
                let syn::Expr::Array(r) = row else {
                    return fail(row.span(), "cotan takes `arr2` of rows written as array literals");
                };
                if cols.is_some_and(|c| c != r.elems.len()) {
                    return fail(row.span(), "the rows of `arr2` have different lengths");
                }
                cols = Some(r.elems.len());
                for e in &r.elems {
                    elems.push(self.scalar(e)?);
                }
            }
            let (nr, nc) = (arr.elems.len(), cols.unwrap_or(0));
            self.push(quote!(let mut #t: Vec<f64> = vec![#(#elems),*];))?;
            let (r, cc) = self.shape_locals(&t, quote!(#nr), quote!(#nc))?;
            return Ok(Some(R::La(Val {
                lib: Lib::Ndarray,
                buf: t,
                owned: true,
                mat: Some(Mat::native(Lib::Ndarray, r, cc)),
            })));
        }
        if segs.len() < 2 {
            return Ok(None);
        }
        let Some((lib, matrix)) = classify(&segs[segs.len() - 2]) else { return Ok(None) };
        let tname = &segs[segs.len() - 2];
        let unsupported = || {
            fail(
                span,
                format!("cotan does not support `{tname}::{last}` in differentiated functions; supported: `zeros`, `from_element`/`from_elem`, `from_vec`, `from_fn`/`from_shape_fn`, `arr1`, `arr2`"),
            )
        };
        let v = match (matrix, last.as_str(), args.len()) {
            (false, "zeros", 1) => {
                let n = self.scalar(args[0])?;
                let t = self.zeros(dest, quote!(#n))?;
                Val { lib, buf: t, owned: true, mat: None }
            }
            (false, "from_element" | "from_elem", 2) => {
                let (n, x) = (self.scalar(args[0])?, self.scalar(args[1])?);
                let t = self.fresh(dest);
                self.push(quote!(let mut #t: Vec<f64> = vec![#x; #n];))?;
                Val { lib, buf: t, owned: true, mat: None }
            }
            (false, "from_vec" | "from", 1) => {
                let x = self.scalar(args[0])?;
                let t = self.fresh(dest);
                self.push(quote!(let mut #t: Vec<f64> = #x;))?;
                Val { lib, buf: t, owned: true, mat: None }
            }
            (false, "from_column_slice" | "from_row_slice", 1) if lib == Lib::Nalgebra => {
                let x = self.scalar(args[0])?;
                let t = self.fresh(dest);
                let x = owned_copy(&x);
                self.push(quote!(let mut #t: Vec<f64> = #x;))?;
                Val { lib, buf: t, owned: true, mat: None }
            }
            (true, "from_column_slice", 3) if lib == Lib::Nalgebra => {
                let (rows, cols, x) = (self.scalar(args[0])?, self.scalar(args[1])?, self.scalar(args[2])?);
                let t = self.fresh(dest);
                let (r, c) = self.shape_locals(&t, quote!(#rows), quote!(#cols))?;
                let x = owned_copy(&x);
                self.push(quote!(let mut #t: Vec<f64> = #x; assert_eq!(#t.len(), #r * #c, "`from_column_slice` of a slice that is not rows × cols long");))?;
                Val { lib, buf: t, owned: true, mat: Some(Mat::native(lib, r, c)) }
            }
            (false, "from_fn" | "from_shape_fn", 2) => {
                let n = self.scalar(args[0])?;
                let f = self.scalar(args[1])?;
                let body = index_closure(&f, &[quote!(la_index), quote!(0usize)])?;
                let t = self.fresh(dest);
                self.push(quote!(let mut #t: Vec<f64> = (0..#n).map(|la_index: usize| #body).collect::<Vec<f64>>();))?;
                Val { lib, buf: t, owned: true, mat: None }
            }
            (true, "from_fn", 3) if lib != Lib::Ndarray => {
                let (rows, cols, f) = (self.scalar(args[0])?, self.scalar(args[1])?, self.scalar(args[2])?);
                let t = self.fresh(dest);
                let (r, c) = self.shape_locals(&t, quote!(#rows), quote!(#cols))?;
                let body = index_closure(&f, &[quote!(la_index % #r), quote!(la_index / #r)])?;
                self.push(
                    quote!(let mut #t: Vec<f64> = (0..#r * #c).map(|la_index: usize| #body).collect::<Vec<f64>>();),
                )?;
                Val { lib, buf: t, owned: true, mat: Some(Mat::native(lib, r, c)) }
            }
            (true, "zeros", 1 | 2) | (true, "from_element" | "from_elem", 2 | 3) => {
                let (rows, cols) = match (lib, args.len(), last.as_str()) {
                    (Lib::Nalgebra | Lib::Faer, _, _) => (self.scalar(args[0])?, self.scalar(args[1])?),
                    (Lib::Ndarray, _, _) => match args[0] {
                        syn::Expr::Tuple(t) if t.elems.len() == 2 => {
                            (self.scalar(&t.elems[0])?, self.scalar(&t.elems[1])?)
                        }
                        syn::Expr::Array(t) if t.elems.len() == 2 => {
                            (self.scalar(&t.elems[0])?, self.scalar(&t.elems[1])?)
                        }
                        e => {
                            return fail(
                                e.span(),
                                "cotan takes the shape of a new ndarray matrix as a tuple `(rows, cols)`",
                            )
                        }
                    },
                };
                let x: syn::Expr =
                    if last == "zeros" { syn::parse_quote!(0.0f64) } else { self.scalar(args[args.len() - 1])? };
                let t = self.fresh(dest);
                let (r, c) = self.shape_locals(&t, quote!(#rows), quote!(#cols))?;
                self.push(quote!(let mut #t: Vec<f64> = vec![#x; #r * #c];))?;
                Val { lib, buf: t, owned: true, mat: Some(Mat::native(lib, r, c)) }
            }
            (true, "from_vec", 3) if lib == Lib::Nalgebra => {
                let (rows, cols, x) = (self.scalar(args[0])?, self.scalar(args[1])?, self.scalar(args[2])?);
                let t = self.fresh(dest);
                let (r, c) = self.shape_locals(&t, quote!(#rows), quote!(#cols))?;
                self.push(quote!(let mut #t: Vec<f64> = #x; assert_eq!(#t.len(), #r * #c, "`from_vec` of a vector that is not rows × cols long");))?;
                Val { lib, buf: t, owned: true, mat: Some(Mat::native(lib, r, c)) }
            }
            (true, "from_row_slice", 3) if lib == Lib::Nalgebra => {
                let (rows, cols, x) = (self.scalar(args[0])?, self.scalar(args[1])?, self.scalar(args[2])?);
                let t = self.fresh(dest);
                let (r, c) = self.shape_locals(&t, quote!(#rows), quote!(#cols))?;
                let x = owned_copy(&x);
                self.push(quote!(let mut #t: Vec<f64> = #x; assert_eq!(#t.len(), #r * #c, "`from_row_slice` of a slice that is not rows × cols long");))?;
                // Stored by rows: a transposed view of itself.
                let one: syn::Expr = syn::parse_quote!(1usize);
                Val {
                    lib,
                    buf: t,
                    owned: true,
                    mat: Some(Mat { rs: c.clone(), cs: one, rows: r, cols: c, native: false }),
                }
            }
            _ => return unsupported(),
        };
        Ok(Some(R::La(v)))
    }

    /// One statement, with the statements its values need before it.
    fn stmt(&mut self, s: &syn::Stmt) -> syn::Result<Vec<syn::Stmt>> {
        let saved = std::mem::take(&mut self.hoist);
        let out = self.stmt_inner(s);
        let mut hoisted = std::mem::replace(&mut self.hoist, saved);
        let out = out?;
        hoisted.extend(out);
        Ok(hoisted)
    }

    fn stmt_inner(&mut self, s: &syn::Stmt) -> syn::Result<Vec<syn::Stmt>> {
        match s {
            syn::Stmt::Local(l) => {
                let Some(init) = &l.init else {
                    self.shadow_pat(&l.pat);
                    return Ok(vec![s.clone()]);
                };
                let ident = match &l.pat {
                    syn::Pat::Ident(pi) if pi.subpat.is_none() => Some(&pi.ident),
                    syn::Pat::Type(pt) => match &*pt.pat {
                        syn::Pat::Ident(pi) if pi.subpat.is_none() => Some(&pi.ident),
                        _ => None,
                    },
                    _ => None,
                };
                if init.diverge.is_some() {
                    let mut l = l.clone();
                    let e = self.scalar(&init.expr)?;
                    if let Some(init) = &mut l.init {
                        *init.expr = e;
                        if let Some((_, d)) = &mut init.diverge {
                            self.visit_expr_mut(d);
                        }
                    }
                    self.shadow_pat(&l.pat);
                    return Ok(vec![syn::Stmt::Local(l)]);
                }
                // `let y = &a * &y;`: the new value cannot be made under the name it reads.
                let reads_own_name = ident.is_some_and(|i| mentions(&init.expr, i));
                let dest = if reads_own_name { None } else { ident };
                match self.expr(&init.expr, dest)? {
                    R::La(v) if reads_own_name && v.owned => {
                        let name = ident.unwrap();
                        let t = &v.buf;
                        let s: syn::Stmt = syn::parse2(quote!(let mut #name: Vec<f64> = #t;))?;
                        self.bind(name, Val { buf: name.clone(), ..v });
                        Ok(vec![s])
                    }
                    R::La(v) => {
                        let Some(name) = ident else {
                            return fail(l.pat.span(), "bind a nalgebra or ndarray value to a plain name");
                        };
                        if &v.buf == name {
                            // A new buffer, made under the binding's name.
                            self.bind(name, v);
                            return Ok(vec![]);
                        }
                        // A view of another value (`let y = &x;`, `let at = a.t();`).
                        self.bind(name, v);
                        Ok(vec![])
                    }
                    R::Plain(e) => {
                        let mut l = l.clone();
                        if let Some(init) = &mut l.init {
                            *init.expr = e;
                        }
                        self.shadow_pat(&l.pat);
                        Ok(vec![syn::Stmt::Local(l)])
                    }
                }
            }
            syn::Stmt::Expr(syn::Expr::Assign(a), semi) => {
                if let R::La(target) = self.expr(&a.left, None)? {
                    let tb = target.buf.clone();
                    if target.mat.as_ref().is_some_and(|m| !m.native) {
                        return fail(a.left.span(), "cotan assigns a matrix through its own storage, not through a transpose");
                    }
                    let w = self.la_or_fail(&a.right, "the value assigned to a nalgebra or ndarray variable")?;
                    let w = self.native(w, None)?;
                    let x = w.arg();
                    let s: syn::Stmt = syn::parse2(quote!(#tb.copy_from_slice(#x);))?;
                    return Ok(vec![s]);
                }
                let mut e = syn::Expr::Assign(a.clone());
                self.visit_expr_mut(&mut e);
                Ok(vec![syn::Stmt::Expr(e, *semi)])
            }
            syn::Stmt::Expr(e, semi) => match self.expr(e, None)? {
                R::Plain(e) => Ok(vec![syn::Stmt::Expr(e, *semi)]),
                R::La(_) if semi.is_some() => Ok(vec![]),
                R::La(_) => fail(e.span(), "cotan's derivatives return numbers, not nalgebra or ndarray values; write the result into a `&mut` parameter"),
            },
            syn::Stmt::Item(_) => Ok(vec![s.clone()]),
            syn::Stmt::Macro(m) => {
                let mut m = m.clone();
                self.macro_args(&mut m.mac);
                Ok(vec![syn::Stmt::Macro(m)])
            }
        }
    }

    /// The arguments of `assert!`, `println!` and the like, rewritten where they parse as
    /// expressions.
    fn macro_args(&mut self, mac: &mut syn::Macro) {
        let Ok(args) = mac.parse_body_with(syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated)
        else {
            return;
        };
        let mut out = syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::new();
        for a in args {
            match self.scalar(&a) {
                Ok(e) => out.push(e),
                Err(e) => {
                    self.fail_error(e);
                    return;
                }
            }
        }
        mac.tokens = out.to_token_stream();
    }
}

impl VisitMut for Rewriter {
    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        self.scopes.push(HashMap::default());
        let mut out = vec![];
        for s in &b.stmts {
            match self.stmt(s) {
                Ok(v) => out.extend(v),
                Err(e) => {
                    self.fail_error(e);
                    out.push(s.clone());
                }
            }
        }
        b.stmts = out;
        self.scopes.pop();
    }

    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        match self.expr(e, None) {
            Ok(R::Plain(x)) => *e = x,
            Ok(R::La(v)) => {
                // A vector where a slice fits (passed to a helper, say): its storage.
                if v.mat.is_none() {
                    if let Ok(x) = syn::parse2(v.arg()) {
                        *e = x;
                        return;
                    }
                }
                self.fail_error(syn::Error::new(
                    e.span(),
                    "cotan uses a nalgebra or ndarray matrix here in a way it does not support; index it, multiply it, or pass `m.as_slice()`",
                ));
            }
            Err(err) => self.fail_error(err),
        }
    }

    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        self.macro_args(m);
    }
}
