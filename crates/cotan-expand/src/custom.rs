//! User-supplied derivatives: `#[cotan::custom_derivative(forward = F, reverse = R)]` and
//! `#[cotan::zero_derivative]`. A derivative that calls such a function calls, instead of
//! its differentiated body (which is never differentiated, so it may call anything),
//! wrappers built here as IR ([`forward`], [`split`]) that delegate to F and R, or give zero
//! derivatives. The attributes themselves only check, at the function, that F and R have
//! the signatures the wrappers call them with.

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
            // A copy of the argument, zeroed row by row.
            MemKind::Nested(_, _, deeper) => {
                let zero_rows = match deeper {
                    None => quote!(for r in z.iter_mut() {
                        r.fill(0.0);
                    }),
                    Some(_) => quote!(for r in z.iter_mut() {
                        for rr in r.iter_mut() {
                            rr.fill(0.0);
                        }
                    }),
                };
                quote!({ let mut z = #n.to_owned(); #zero_rows z })
            }
            MemKind::Ptr | MemKind::ArrayPtr(_) => unreachable!("`params` refuses raw pointers"),
            MemKind::Records(..) => unreachable!("`params` refuses structs"),
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
        if ir.mem().is_some_and(|m| m.is_ptr()) {
            return Err(syn::Error::new(
                pt.ty.span(),
                "a function with a custom or zero derivative takes numbers, bools and references to numbers, not raw pointers; take `&[f64]` (or `&mut [f64]`) and pass `std::slice::from_raw_parts(p, n)`",
            ));
        }
        out.push(Param { name: pi.ident.clone(), ty: (*pt.ty).clone(), ir });
    }
    Ok(out)
}

/// Checks the attribute and the rules' signatures; returns the check and the rules.
pub(crate) fn custom_derivative(attr: TokenStream, func: &syn::ItemFn) -> syn::Result<(TokenStream, Use)> {
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
    let text = |p: &Option<syn::Path>| p.as_ref().map(|p| p.to_token_stream().to_string().replace(' ', ""));
    let rule = Use::Custom { forward: text(&forward), reverse: text(&reverse) };
    Ok((variants(func, Rule::Custom { forward, reverse })?, rule))
}

pub(crate) fn zero_derivative(func: &syn::ItemFn) -> syn::Result<TokenStream> {
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
        // A zero derivative of a function returning a bool or an integer (`inputs_ok(..)
        // -> bool`): calls run the function itself, and no derivative has its signature.
        if matches!(rule, Rule::Zero) {
            return Ok(TokenStream::new());
        }
        return Err(syn::Error::new(
            func.sig.output.span(),
            "custom derivatives need a function that returns a float or `()`; for one that returns a bool or an integer, use `#[cotan::zero_derivative]`",
        ));
    }
    let ret_ty = ret.map(|s| format_ident!("{}", s.name()));
    let name = &func.sig.ident;
    let mems: Vec<usize> = (0..ps.len()).filter(|k| ps[*k].float_mem()).collect();
    let mut out = TokenStream::new();
    // Only the signatures matter: wrappers with every argument active, never called.
    let all = (1usize << mems.len()) - 1;
    for bits in [all] {
        let active = |k: usize| mems.iter().position(|m| *m == k).is_some_and(|j| bits >> j & 1 == 1);
        let mask: String = (0..mems.len()).map(|j| if bits >> j & 1 == 1 { '1' } else { '0' }).collect();
        let fwd_name = format_ident!("forward_{}_m{}", name, mask);
        let rev_name = format_ident!("reverse_{}_m{}", name, mask);

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
                #[allow(unused, non_snake_case, clippy::all, clippy::pedantic, clippy::nursery)]
                fn #fwd_name(#(#fparams),*) #fret { #body }
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
                #[allow(unused, non_snake_case, clippy::all, clippy::pedantic, clippy::nursery)]
                fn #rev_name(#(#rparams),*) #rret { #body }
            });
        }
    }
    Ok(quote!(const _: () = { #out };))
}

// ---- the wrappers derivatives call ----

use cotan_ad::{Avail, CallSite, Linker, Need};
use cotan_ir::{Builder, Const, Function, OpKind, Scalar, SpanId, Value};

use crate::program::{Callee, Program, Rule as Use};

/// Builds a function's IR: parameters, then the body op by op (regions by `region`).
struct Ir {
    f: Function,
    ops: Vec<cotan_ir::Op>,
}

impl Ir {
    fn new(name: &str, like: &Function, tape: bool) -> Ir {
        let mut f = Function::new(name);
        f.records = like.records.clone();
        f.generic_float = like.generic_float.clone();
        f.type_params = like.type_params.clone();
        f.tape_param = tape;
        Ir { f, ops: vec![] }
    }

    fn param(&mut self, ty: Ty, name: &str) -> Value {
        self.f.add_param(ty, name, SpanId::NONE)
    }

    fn op(&mut self, kind: OpKind, ty: Ty) -> Value {
        let mut b = Builder::new(&mut self.f);
        let v = b.op(kind, ty);
        self.ops.extend(b.finish().ops);
        v
    }

    fn effect(&mut self, kind: OpKind) {
        self.ops.push(cotan_ir::Op { kind, result: None, span: SpanId::NONE });
    }

    fn zero(&mut self, s: Scalar) -> Value {
        let c = if s.is_float() { Const::Float(0.0) } else { Const::Int(0) };
        self.op(OpKind::Const(c), Ty::Scalar(s))
    }

    /// A variable of type `s` (zero), for a call's result.
    fn var(&mut self, s: Scalar, name: &str) -> cotan_ir::Var {
        let var = self.f.new_var(s, name);
        let z = self.zero(s);
        self.effect(OpKind::DeclVar { var, init: z });
        var
    }

    fn get(&mut self, var: cotan_ir::Var) -> Value {
        let s = self.f.var(var).ty;
        self.op(OpKind::GetVar(var), Ty::Scalar(s))
    }

    /// `for i in 0..n` (backwards if `rev`), the body built by `body`.
    fn index_loop(&mut self, n: Value, rev: bool, body: impl FnOnce(&mut Ir, Value)) {
        let lo = self.op(OpKind::Const(Const::Int(0)), Ty::USIZE);
        let i = self.f.new_value(Ty::USIZE, Some("i".into()), SpanId::NONE);
        let outer = std::mem::take(&mut self.ops);
        body(self, i);
        let ops = std::mem::replace(&mut self.ops, outer);
        self.effect(OpKind::For {
            index: i,
            lo,
            hi: n,
            step: None,
            inclusive: false,
            reverse: rev,
            body: cotan_ir::Region { ops },
            exit: None,
        });
    }

    /// A zeroed buffer (or struct) shaped like memory `m`.
    fn zeros_like(&mut self, m: Value) -> Value {
        let mt = self.f.ty(m).mem().unwrap();
        if let MemKind::Record(_) = mt.kind {
            return self.op(OpKind::ZeroRecord(m), Ty::Mem(cotan_ir::MemTy { access: Access::Owned, ..mt }));
        }
        let len = self.op(OpKind::Len(m), Ty::USIZE);
        let z = self.zero(mt.elem);
        let kind = match mt.kind {
            MemKind::Array(n) => MemKind::Array(n),
            _ => MemKind::Vec,
        };
        self.op(OpKind::Alloc { len, init: z }, Ty::Mem(cotan_ir::MemTy { elem: mt.elem, kind, access: Access::Owned }))
    }

    fn call(&mut self, callee: &str, args: Vec<(Value, bool)>, outs: Vec<cotan_ir::Var>, tape: bool) {
        self.effect(OpKind::Call { callee: callee.to_string(), args, outs, tape });
    }

    fn finish(mut self, returns: Vec<Value>) -> Function {
        self.f.returns = returns.iter().map(|v| self.f.ty(*v)).collect();
        if !returns.is_empty() {
            self.effect(OpKind::Return(returns));
        }
        self.f.body = cotan_ir::Region { ops: self.ops };
        self.f
    }
}

fn is_float_mem(t: Ty) -> bool {
    t.mem().is_some_and(|m| m.elem.is_float())
}

fn writable(t: Ty) -> bool {
    t.mem().is_some_and(|m| m.is_writable())
}

fn no_cells(c: &Callee) -> Result<(), String> {
    let f = &c.func;
    if let Use::Exported(_) = c.rule {
        // Structs get zeroed copies for constant arguments (`Differentiable::zero_like`).
        if f.params.iter().any(|p| f.ty(*p).mem().is_some_and(|m| m.kind == MemKind::Cell)) {
            return Err(format!("cotan cannot call {} from a derivative yet: a function known only by its exported derivatives takes numbers, slices, arrays, vectors and structs (not `&mut f64`)", c.shown));
        }
        return Ok(());
    }
    if f.params
        .iter()
        .any(|p| f.ty(*p).mem().is_some_and(|m| m.kind == MemKind::Cell || matches!(m.kind, MemKind::Record(_))))
    {
        return Err(format!("cotan cannot call {} from a derivative yet: a custom or zero derivative takes numbers and slices, arrays or vectors of numbers (not `&mut f64` or structs)", c.shown));
    }
    Ok(())
}

/// The forward-mode wrapper of a custom, zero or exported derivative (see
/// `cotan_ad::link`): it calls the forward rule, whose signature is that of
/// `#[autodiff_forward]` with every float argument `Dual` (each argument followed by its
/// tangent; each result by its tangent), once per direction.
pub(crate) fn forward(c: &Callee, site: &CallSite, name: &str, _prog: &mut Program) -> Result<Function, String> {
    no_cells(c)?;
    let sig = &c.func;
    let width = match site.need {
        Need::Forward { width } => width,
        _ => 1,
    };
    let mut ir = Ir::new(name, sig, sig.tape_param);
    let mut prim = vec![];
    let mut tans: Vec<Vec<Value>> = vec![];
    for (k, &p) in sig.params.iter().enumerate() {
        let ty = sig.ty(p);
        let n = sig.value(p).name.clone().unwrap_or_else(|| format!("a{k}"));
        prim.push(ir.param(ty, &n));
        let lanes = if site.active[k] && ty.carries_derivative() {
            (0..width).map(|l| ir.param(ty, &format!("d{n}_{l}"))).collect()
        } else {
            vec![]
        };
        tans.push(lanes);
    }
    let rule = match &c.rule {
        Use::Zero => return Ok(zero_forward(c, site, ir, &prim, &tans, width)),
        Use::Custom { forward: Some(f), .. } => f.clone(),
        Use::Exported(path) => format!("{path}__fwd"),
        Use::Custom { forward: None, .. } => {
            return Err(format!("{} has a custom derivative without a forward rule; forward mode (and second order) through it needs one: add `forward = ..` to its `#[cotan::custom_derivative]`", c.shown))
        }
        Use::Body => unreachable!("bodies are differentiated by cotan-ad"),
    };
    if width > 1 && (sig.tape_param || sig.params.iter().any(|p| writable(sig.ty(*p)))) {
        return Err(format!(
            "batched forward mode through {}, which writes through `&mut`, is not supported yet; use width 1",
            c.shown
        ));
    }
    let mut values = vec![];
    let mut tangents: Vec<Vec<Value>> = vec![vec![]; sig.returns.len()];
    for lane in 0..width {
        let mut args = vec![];
        for (k, &p) in prim.iter().enumerate() {
            let ty = ir.f.ty(p);
            args.push((p, writable(ty)));
            if ty.is_float() {
                let t = match tans[k].get(lane) {
                    Some(&t) => t,
                    None => ir.zero(ty.scalar().unwrap()),
                };
                args.push((t, false));
            } else if is_float_mem(ty) {
                let t = match tans[k].get(lane) {
                    Some(&t) => t,
                    None => ir.zeros_like(p),
                };
                args.push((t, writable(ty)));
            }
        }
        let mut vars = vec![];
        for t in &sig.returns {
            let s = t.scalar().unwrap();
            vars.push((ir.var(s, "value"), s.is_float().then(|| ir.var(s, "tangent"))));
        }
        let outs = vars.iter().flat_map(|(v, t)| std::iter::once(*v).chain(*t)).collect();
        ir.call(&rule, args, outs, sig.tape_param);
        for (r, (v, t)) in vars.into_iter().enumerate() {
            if lane == 0 {
                values.push(ir.get(v));
            }
            if let Some(t) = t {
                tangents[r].push(ir.get(t));
            }
        }
    }
    let mut outs = vec![];
    for (r, v) in values.into_iter().enumerate() {
        outs.push(v);
        if site.ret_active {
            outs.extend(tangents[r].iter().copied());
        }
    }
    Ok(ir.finish(outs))
}

/// The forward mode of a zero derivative: the primal, and zero tangents.
fn zero_forward(
    c: &Callee,
    site: &CallSite,
    mut ir: Ir,
    prim: &[Value],
    tans: &[Vec<Value>],
    width: usize,
) -> Function {
    let sig = &c.func;
    let results = call_primal(&mut ir, c, prim);
    for (k, lanes) in tans.iter().enumerate() {
        if writable(sig.ty(sig.params[k])) {
            for &t in lanes {
                let z = ir.zero(ir.f.ty(t).mem().unwrap().elem);
                ir.effect(OpKind::Fill { mem: t, value: z, resize: None });
            }
        }
    }
    let mut outs = vec![];
    for r in results {
        outs.push(r);
        let s = ir.f.ty(r).scalar().unwrap();
        if site.ret_active && s.is_float() {
            for _ in 0..width {
                outs.push(ir.zero(s));
            }
        }
    }
    ir.finish(outs)
}

/// The augmented forward sweep and the reverse sweep of a custom or zero derivative.
pub(crate) fn split(
    c: &Callee,
    site: &CallSite,
    names: (&str, &str),
    prog: &mut Program,
) -> Result<(Function, Function), String> {
    no_cells(c)?;
    match &c.rule {
        Use::Zero => Ok(zero_split(c, site, names)),
        Use::Custom { reverse: Some(r), .. } => Ok(rule_split(c, site, names, r)),
        Use::Custom { forward: Some(f), .. } => transpose_split(c, site, names, f, prog),
        Use::Exported(path) => export_split(c, site, names, path),
        _ => unreachable!("a custom derivative has a rule"),
    }
}

/// The two sweeps of a function whose derivatives were exported (`{path}__aug`,
/// `{path}__rev`, made with every float argument active and no memory readable by the
/// reverse sweep): zero shadows stand in for those of constant arguments.
fn export_split(
    c: &Callee,
    site: &CallSite,
    (aug, rev): (&str, &str),
    path: &str,
) -> Result<(Function, Function), String> {
    let sig = &c.func;
    let record = |k: usize| sig.ty(sig.params[k]).mem().is_some_and(|m| matches!(m.kind, MemKind::Record(_)));
    // Constant float memory the reverse sweep cannot size from its primal: its length is
    // saved, after the exported sweep's own record.
    let sized = |k: usize| {
        let ty = sig.ty(sig.params[k]);
        is_float_mem(ty) && !record(k) && !site.active[k] && site.avail[k] == Avail::Absent
    };
    if let Some(k) = (0..sig.params.len()).find(|&k| record(k) && !site.active[k] && site.avail[k] == Avail::Absent) {
        return Err(format!("cotan cannot yet pass the constant struct argument {} of {} to its exported derivatives from here: the struct no longer exists when the derivative runs; mark the argument `Duplicated`", k + 1, c.shown));
    }
    let mut a = Ir::new(aug, sig, true);
    let prim = aug_params(&mut a, sig);
    let outs: Vec<cotan_ir::Var> = sig.returns.iter().map(|t| a.var(t.scalar().unwrap(), "value")).collect();
    let args = prim.iter().map(|&p| (p, writable(a.f.ty(p)))).collect();
    a.call(&format!("{path}__aug"), args, outs.clone(), true);
    for (k, &p) in prim.iter().enumerate() {
        if sized(k) {
            let n = a.op(OpKind::Len(p), Ty::USIZE);
            a.effect(OpKind::Push(n));
        }
    }
    let results = outs.into_iter().map(|v| a.get(v)).collect();

    let mut r = Ir::new(rev, sig, true);
    let rp = rev_params(&mut r, sig, site);
    let mut lens = vec![None; sig.params.len()];
    for k in (0..sig.params.len()).rev() {
        if sized(k) {
            lens[k] = Some(r.op(OpKind::Pop, Ty::USIZE));
        }
    }
    let mut args = vec![];
    for (k, &p) in sig.params.iter().enumerate() {
        let ty = sig.ty(p);
        if !is_float_mem(ty) {
            continue;
        }
        let s = match (rp.shadow[k], lens[k], rp.prim[k]) {
            (Some(s), _, _) => s,
            (None, Some(n), _) => {
                let m = ty.mem().unwrap();
                let z = r.zero(m.elem);
                r.op(
                    OpKind::Alloc { len: n, init: z },
                    Ty::Mem(cotan_ir::MemTy { elem: m.elem, kind: MemKind::Vec, access: Access::Owned }),
                )
            }
            (None, None, Some(pm)) => r.zeros_like(pm),
            (None, None, None) => unreachable!("sized above"),
        };
        args.push((s, true));
    }
    let floats = sig.returns.iter().filter_map(|t| t.scalar()).filter(|s| s.is_float());
    for (j, s) in floats.enumerate() {
        let seed = match rp.seeds.get(j) {
            Some(&d) => d,
            None => r.zero(s),
        };
        args.push((seed, false));
    }
    let mut outs = vec![];
    let mut grads = vec![];
    for (k, &p) in sig.params.iter().enumerate() {
        if let Some(s) = sig.ty(p).scalar().filter(|s| s.is_float()) {
            let v = r.var(s, "grad");
            outs.push(v);
            if site.active[k] {
                grads.push(v);
            }
        }
    }
    r.call(&format!("{path}__rev"), args, outs, true);
    let grads = grads.into_iter().map(|v| r.get(v)).collect();
    Ok((a.finish(results), r.finish(grads)))
}

/// The reverse sweep's parameters (see `cotan_ad::link`): the memory it may read and the
/// shadows, per parameter, then the seeds of the float results.
struct RevParams {
    prim: Vec<Option<Value>>,
    shadow: Vec<Option<Value>>,
    seeds: Vec<Value>,
}

fn rev_params(ir: &mut Ir, sig: &Function, site: &CallSite) -> RevParams {
    let mut rp = RevParams { prim: vec![], shadow: vec![], seeds: vec![] };
    for (k, &p) in sig.params.iter().enumerate() {
        let ty = sig.ty(p);
        let n = sig.value(p).name.clone().unwrap_or_else(|| format!("a{k}"));
        let (mut prim, mut shadow) = (None, None);
        if let Some(m) = ty.mem() {
            if site.avail[k] != Avail::Absent {
                prim = Some(ir.param(Ty::Mem(cotan_ir::MemTy { access: Access::Shared, ..m }), &n));
            }
            if site.active[k] && m.elem.is_float() {
                shadow = Some(ir.param(Ty::Mem(cotan_ir::MemTy { access: Access::Mut, ..m }), &format!("d{n}")));
            }
        }
        rp.prim.push(prim);
        rp.shadow.push(shadow);
    }
    if site.ret_active {
        for (k, t) in sig.returns.iter().enumerate() {
            if t.is_float() {
                let name = if k == 0 { "dret".to_string() } else { format!("dret{k}") };
                rp.seeds.push(ir.param(*t, &name));
            }
        }
    }
    rp
}

fn aug_params(ir: &mut Ir, sig: &Function) -> Vec<Value> {
    sig.params
        .iter()
        .enumerate()
        .map(|(k, &p)| ir.param(sig.ty(p), &sig.value(p).name.clone().unwrap_or_else(|| format!("a{k}"))))
        .collect()
}

/// Calls the primal function; returns its float result's variable, if any.
fn call_primal(ir: &mut Ir, c: &Callee, prim: &[Value]) -> Vec<Value> {
    let sig = &c.func;
    let outs: Vec<cotan_ir::Var> = sig.returns.iter().map(|t| ir.var(t.scalar().unwrap(), "value")).collect();
    let args = prim.iter().map(|&p| (p, writable(ir.f.ty(p)))).collect();
    ir.call(&c.path, args, outs.clone(), false);
    outs.into_iter().map(|v| ir.get(v)).collect()
}

fn zero_split(c: &Callee, site: &CallSite, (aug, rev): (&str, &str)) -> (Function, Function) {
    let sig = &c.func;
    let mut a = Ir::new(aug, sig, true);
    let prim = aug_params(&mut a, sig);
    let results = call_primal(&mut a, c, &prim);
    let mut r = Ir::new(rev, sig, true);
    let rp = rev_params(&mut r, sig, site);
    let mut grads = vec![];
    for (k, &p) in sig.params.iter().enumerate() {
        let ty = sig.ty(p);
        if let (Some(s), true) = (rp.shadow[k], writable(ty)) {
            // The initial contents of written memory do not affect anything.
            let z = r.zero(ty.mem().unwrap().elem);
            r.effect(OpKind::Fill { mem: s, value: z, resize: None });
        }
        if ty.is_float() && site.active[k] {
            grads.push(r.zero(ty.scalar().unwrap()));
        }
    }
    (a.finish(results), r.finish(grads))
}

/// Which inputs the augmented sweep saves for a reverse rule: every number, and memory the
/// reverse sweep cannot read as it was (written by the function, or not stable).
fn saved(sig: &Function, site: &CallSite, k: usize) -> bool {
    let ty = sig.ty(sig.params[k]);
    ty.mem().is_none() || writable(ty) || site.avail[k] != Avail::Stable
}

fn rule_split(c: &Callee, site: &CallSite, (aug, rev): (&str, &str), rule: &str) -> (Function, Function) {
    let sig = &c.func;
    let mut a = Ir::new(aug, sig, true);
    let prim = aug_params(&mut a, sig);
    for (k, &p) in prim.iter().enumerate() {
        if !saved(sig, site, k) {
            continue;
        }
        let ty = a.f.ty(p);
        match ty.mem() {
            None => a.effect(OpKind::Push(p)),
            Some(m) => {
                let n = a.op(OpKind::Len(p), Ty::USIZE);
                a.index_loop(n, false, |a, i| {
                    let v = a.op(OpKind::Load { mem: p, index: Some(i) }, Ty::Scalar(m.elem));
                    a.effect(OpKind::Push(v));
                });
                a.effect(OpKind::Push(n));
            }
        }
    }
    let results = call_primal(&mut a, c, &prim);

    let mut r = Ir::new(rev, sig, true);
    let rp = rev_params(&mut r, sig, site);
    let mut inputs: Vec<Option<Value>> = rp.prim.clone();
    for k in (0..sig.params.len()).rev() {
        if !saved(sig, site, k) {
            continue;
        }
        let ty = sig.ty(sig.params[k]);
        inputs[k] = Some(match ty.mem() {
            None => r.op(OpKind::Pop, ty),
            Some(m) => {
                let n = r.op(OpKind::Pop, Ty::USIZE);
                let z = r.zero(m.elem);
                let kind = match m.kind {
                    MemKind::Array(len) => MemKind::Array(len),
                    _ => MemKind::Vec,
                };
                let buf = r.op(
                    OpKind::Alloc { len: n, init: z },
                    Ty::Mem(cotan_ir::MemTy { elem: m.elem, kind, access: Access::Owned }),
                );
                r.index_loop(n, true, |r, i| {
                    let v = r.op(OpKind::Pop, Ty::Scalar(m.elem));
                    r.effect(OpKind::Store { mem: buf, index: Some(i), value: v });
                });
                buf
            }
        });
    }
    let mut args = vec![];
    for (k, &p) in sig.params.iter().enumerate() {
        let ty = sig.ty(p);
        let input = inputs[k].expect("every input is saved or readable");
        args.push((input, writable(ty)));
        if is_float_mem(ty) {
            let s = match rp.shadow[k] {
                Some(s) => s,
                None => r.zeros_like(input),
            };
            args.push((s, true));
        }
    }
    let float_ret = sig.returns.first().and_then(|t| t.scalar()).filter(|s| s.is_float());
    if let Some(s) = float_ret {
        let seed = match rp.seeds.first() {
            Some(&d) => d,
            None => r.zero(s),
        };
        args.push((seed, false));
    }
    let mut outs = vec![];
    if let Some(s) = float_ret {
        outs.push(r.var(s, "value"));
    }
    let mut grads = vec![];
    for (k, &p) in sig.params.iter().enumerate() {
        if let Some(s) = sig.ty(p).scalar().filter(|s| s.is_float()) {
            let v = r.var(s, "grad");
            outs.push(v);
            if site.active[k] {
                grads.push(v);
            }
        }
    }
    r.call(rule, args, outs, false);
    let grads = grads.into_iter().map(|v| r.get(v)).collect();
    (a.finish(results), r.finish(grads))
}

/// The reverse of a function with only a forward rule F: F is linear in its tangents, so
/// the reverse mode of F with respect to them (cotan differentiates F) is the transpose.
fn transpose_split(
    c: &Callee,
    site: &CallSite,
    (aug, rev): (&str, &str),
    rule: &str,
    prog: &mut Program,
) -> Result<(Function, Function), String> {
    let sig = &c.func;
    // F's parameters: each of the function's, then its tangent (numbers and float memory).
    let mut active = vec![];
    let mut avail = vec![];
    let mut arg_tys = vec![];
    for (k, &p) in sig.params.iter().enumerate() {
        let ty = sig.ty(p);
        active.push(false);
        avail.push(site.avail[k]);
        arg_tys.push(ty);
        if ty.is_float() || is_float_mem(ty) {
            active.push(site.active[k]);
            avail.push(Avail::Absent);
            arg_tys.push(ty);
        }
    }
    let float_ret = sig.returns.first().and_then(|t| t.scalar()).filter(|s| s.is_float());
    let ret_tys: Vec<Ty> = float_ret.map(|s| vec![Ty::Scalar(s); 2]).unwrap_or_default();
    let f_site = |need| CallSite {
        callee: rule.to_string(),
        need,
        active: active.clone(),
        avail: avail.clone(),
        ret_active: site.ret_active,
        arg_tys: arg_tys.clone(),
        ret_tys: ret_tys.clone(),
        records: sig.records.clone(),
        tape: false,
    };
    let f_aug = prog.link(&f_site(Need::Augmented), SpanId::NONE)?;
    let f_rev = prog.link(&f_site(Need::Reverse), SpanId::NONE)?;

    let mut a = Ir::new(aug, sig, true);
    let prim = aug_params(&mut a, sig);
    let mut args = vec![];
    for &p in &prim {
        let ty = a.f.ty(p);
        args.push((p, writable(ty)));
        if ty.is_float() {
            let z = a.zero(ty.scalar().unwrap());
            args.push((z, false));
        } else if is_float_mem(ty) {
            let z = a.zeros_like(p);
            args.push((z, writable(ty)));
        }
    }
    let vars: Vec<cotan_ir::Var> = match float_ret {
        Some(s) => vec![a.var(s, "value"), a.var(s, "tangent")],
        None => vec![],
    };
    a.call(&f_aug, args, vars.clone(), true);
    let results = vars.first().map(|&v| a.get(v)).into_iter().collect();

    let mut r = Ir::new(rev, sig, true);
    let rp = rev_params(&mut r, sig, site);
    let mut args = vec![];
    for (k, &p) in sig.params.iter().enumerate() {
        let ty = sig.ty(p);
        if ty.mem().is_some() {
            if let Some(pm) = rp.prim[k] {
                args.push((pm, false));
            }
            if let Some(s) = rp.shadow[k] {
                args.push((s, true));
            }
        }
    }
    if let (Some(s), Some(&seed)) = (float_ret, rp.seeds.first()) {
        let z = r.zero(s);
        args.push((z, false));
        args.push((seed, false));
    }
    let mut grads = vec![];
    for (k, &p) in sig.params.iter().enumerate() {
        if let (Some(s), true) = (sig.ty(p).scalar().filter(|s| s.is_float()), site.active[k]) {
            grads.push(r.var(s, "grad"));
        }
    }
    r.call(&f_rev, args, grads.clone(), true);
    let grads = grads.into_iter().map(|v| r.get(v)).collect();
    Ok((a.finish(results), r.finish(grads)))
}
