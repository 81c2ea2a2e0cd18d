//! Functions of the crate lowered in place of their calls: those that take a closure
//! (`fn rk4<F: Fn(State) -> State>(f: F, ..)`, `f: &impl Fn(f64) -> f64`), those that
//! return memory (`-> Vec<f64>`, `-> &[f64]`), those that return an `Option` and those
//! generic over constants (`fn dot<const N: usize>(a: &[f64; N], ..)`, lowered with the
//! lengths of the arrays each call passes). No derivative signature can carry a closure,
//! hand back a buffer, say whether there is a result or leave a length open, so such a
//! call is lowered as the callee's body with its
//! parameters bound to the arguments, as a local closure is. Calls inside that body are
//! named as the caller's module names them (`Env::home_path`).

use crate::span::Spanned;
use syn::visit_mut::VisitMut;

use crate::agg::{Agg, Tree};
use crate::chain::Item;
use crate::env::Inlined;
use crate::exits::{exits_of_expr, Exit};
use crate::lower::{err, err_at, strip_parens, Binding, Lower};

/// Inlined calls nest at most this deep (a deeper chain is recursion in disguise).
const MAX_DEPTH: usize = 16;

/// Why a function generic over constants is lowered at its calls.
const CONST_GENERIC: &str = "it is generic over a constant";

/// Why a function is inlined at its calls, if it is: its signature takes a closure,
/// returns memory, returns an `Option` or has const parameters. Other type parameters than
/// closures keep it out (they are differentiated as generic functions, or refused,
/// elsewhere).
pub fn inline_reason(sig: &syn::Signature) -> Option<&'static str> {
    if sig.generics.const_params().next().is_some() {
        return Some(CONST_GENERIC);
    }
    let Some(closures) = closure_params(&sig.generics) else {
        // (Generic over a model's type, `fn objective<M: Model>(m: &M, ..)`: its calls
        // lowered in place know `M`, from the arguments.)
        return crate::generic::over_trait_types(sig).then_some("it is generic over a type bound by a trait");
    };
    let takes_closure = sig.inputs.iter().any(|a| match a {
        syn::FnArg::Typed(pt) => closure_arity(&pt.ty, &closures).is_some(),
        syn::FnArg::Receiver(_) => false,
    });
    if takes_closure {
        return Some("it takes a closure");
    }
    if !sig.generics.params.is_empty() {
        return None;
    }
    match &sig.output {
        syn::ReturnType::Type(_, t) if returns_memory(t) => Some("it returns a vector or a slice"),
        syn::ReturnType::Type(_, t) if returns_option(t) => Some("it returns an `Option` or a `Result`"),
        _ => None,
    }
}

/// Gives each `None` that is the value of `e` (itself, or the tail of a branch of an `if`,
/// a `match` or a block that is) the type `ty`: `{ let none: ty = None; none }`; the same
/// for an `Err(..)` and a `std::array::from_fn(..)`.
pub(crate) fn type_final_nones(e: &mut syn::Expr, ty: &syn::Type) {
    match e {
        _ if is_none_value(e) => {
            let at = e.span();
            *e = syn::parse_quote_spanned!(at=> { let none: #ty = None; none });
        }
        // `std::array::from_fn(..)` as the result: of the declared array type, which gives
        // its length (as a typed `let` does).
        syn::Expr::Call(c)
            if matches!(ty, syn::Type::Array(_))
                && matches!(&*c.func, syn::Expr::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "from_fn")) =>
        {
            let at = e.span();
            let call = e.clone();
            *e = syn::parse_quote_spanned!(at=> { let from_fn_value: #ty = #call; from_fn_value });
        }
        syn::Expr::Paren(p) => type_final_nones(&mut p.expr, ty),
        syn::Expr::Block(b) => type_block_nones(&mut b.block, ty),
        syn::Expr::If(i) => {
            type_block_nones(&mut i.then_branch, ty);
            if let Some((_, other)) = &mut i.else_branch {
                type_final_nones(other, ty);
            }
        }
        syn::Expr::Match(m) => m.arms.iter_mut().for_each(|arm| type_final_nones(&mut arm.body, ty)),
        _ => {}
    }
}

/// `None`, or `Err(..)` of a `Result` (its `None`: the error itself is not kept).
fn is_none_value(e: &syn::Expr) -> bool {
    match e {
        syn::Expr::Path(p) => p.path.is_ident("None"),
        syn::Expr::Call(c) => matches!(&*c.func, syn::Expr::Path(p) if p.path.is_ident("Err")),
        _ => false,
    }
}

fn type_block_nones(b: &mut syn::Block, ty: &syn::Type) {
    if let Some(syn::Stmt::Expr(tail, None)) = b.stmts.last_mut() {
        type_final_nones(tail, ty);
    }
}

/// `Option<..>`, or `Result<..>`, which cotan holds as an `Option` of its `Ok` value (whether
/// there was an error, not which).
pub(crate) fn returns_option(t: &syn::Type) -> bool {
    match t {
        syn::Type::Paren(p) => returns_option(&p.elem),
        syn::Type::Path(p) => {
            p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "Option" || s.ident == "Result")
        }
        _ => false,
    }
}

/// `Vec<..>`, `&[..]`, `&mut [..]`, `&Vec<..>`, arrays of arrays.
fn returns_memory(t: &syn::Type) -> bool {
    match t {
        syn::Type::Paren(p) => returns_memory(&p.elem),
        syn::Type::Reference(r) => {
            matches!(&*r.elem, syn::Type::Slice(_) | syn::Type::Array(_)) || returns_memory(&r.elem)
        }
        syn::Type::Array(a) => crate::signature::scalar_type(&a.elem).is_none(),
        syn::Type::Path(p) => p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "Vec"),
        // `(Vec<f64>, Vec<usize>)`, `(Vec<f64>, f64)`: a tuple with a vector or a slice in it.
        syn::Type::Tuple(t) => t.elems.iter().any(returns_memory),
        _ => false,
    }
}

/// The type parameters bounded by `Fn`, `FnMut` or `FnOnce`, with their arity; `None` if
/// there is another type parameter (const ones are given at each call).
fn closure_params(g: &syn::Generics) -> Option<Vec<(String, usize)>> {
    let mut out = vec![];
    for p in &g.params {
        match p {
            syn::GenericParam::Lifetime(_) | syn::GenericParam::Const(_) => {}
            syn::GenericParam::Type(t) => {
                let name = t.ident.to_string();
                let mut bounds: Vec<&syn::TypeParamBound> = t.bounds.iter().collect();
                if let Some(w) = &g.where_clause {
                    for pred in &w.predicates {
                        if let syn::WherePredicate::Type(pt) = pred {
                            if matches!(&pt.bounded_ty, syn::Type::Path(tp) if tp.path.is_ident(&name)) {
                                bounds.extend(pt.bounds.iter());
                            }
                        }
                    }
                }
                out.push((name, bounds.iter().find_map(|b| fn_bound_arity(b))?));
            }
        }
    }
    Some(out)
}

/// The number of arguments of an `Fn(..)`/`FnMut(..)`/`FnOnce(..)` bound.
fn fn_bound_arity(b: &syn::TypeParamBound) -> Option<usize> {
    let syn::TypeParamBound::Trait(t) = b else { return None };
    let last = t.path.segments.last()?;
    if !matches!(last.ident.to_string().as_str(), "Fn" | "FnMut" | "FnOnce") {
        return None;
    }
    match &last.arguments {
        syn::PathArguments::Parenthesized(a) => Some(a.inputs.len()),
        _ => None,
    }
}

/// The arity of a parameter's closure type (`F`, `&F`, `impl Fn(f64) -> f64`, `&dyn Fn(..)`,
/// `fn(f64) -> f64`).
fn closure_arity(t: &syn::Type, closures: &[(String, usize)]) -> Option<usize> {
    match t {
        syn::Type::Paren(p) => closure_arity(&p.elem, closures),
        syn::Type::Reference(r) => closure_arity(&r.elem, closures),
        syn::Type::ImplTrait(it) => it.bounds.iter().find_map(fn_bound_arity),
        syn::Type::TraitObject(to) => to.bounds.iter().find_map(fn_bound_arity),
        // A function pointer (`fn(f64) -> f64`) is given a function or a closure like `F`.
        syn::Type::BareFn(f) => Some(f.inputs.len()),
        syn::Type::Path(p) if p.qself.is_none() => {
            let id = p.path.get_ident()?.to_string();
            closures.iter().find(|(n, _)| *n == id).map(|(_, k)| *k)
        }
        _ => None,
    }
}

/// An argument, evaluated where the call is.
enum Arg {
    Item(Item),
    Closure(usize),
    /// A local struct lent by reference (`&mut b`, a `&mut self` receiver): the callee's
    /// parameter names the caller's own variables and arrays.
    Slots(crate::agg::Tree<crate::agg::Slot>),
}

/// Why a function is lowered at a call that lends it a local struct with arrays.
const LENDS_STRUCT_WITH_ARRAYS: &str = "the call lends it a local struct with arrays";
/// Why a function is lowered at a call that passes it an enum value the caller made.
const PASSES_ENUM_VALUE: &str = "the call passes it an enum value made in the caller";
/// Why a generic function is lowered at a call that gives a struct for its type parameter.
const PASSES_STRUCT_FOR_TYPE: &str = "the call gives a struct for its type parameter";
/// Why a function that returns a struct with arrays is lowered at its calls.
pub(crate) const RETURNS_STRUCT_WITH_ARRAYS: &str = "it returns a struct with arrays";

/// The path of the type `inl` returns, as written there, `Self` being `owner`.
pub(crate) fn returned_type(inl: &Inlined, owner: Option<String>) -> Option<String> {
    let syn::ReturnType::Type(_, t) = &inl.item.sig.output else { return None };
    let syn::Type::Path(p) = &**t else { return None };
    match crate::record::tokens_text(&p.path) {
        s if s == "Self" => owner,
        s => Some(s),
    }
}

/// Whether `inl` returns a struct (`S` or `Self`) with an array field.
fn returns_struct_with_arrays(inl: &Inlined) -> bool {
    let syn::ReturnType::Type(_, t) = &inl.item.sig.output else { return false };
    let syn::Type::Path(p) = &**t else { return false };
    let ty = crate::record::tokens_text(&p.path);
    inl.env.record_fields(&ty).is_some_and(|fs| fs.iter().any(|(_, f)| f.is_buffer()))
}

impl Lower {
    /// The inlined function a call names, if lowering inlines it.
    pub(crate) fn inlined(&self, path: &syn::Path) -> Option<syn::Result<Inlined>> {
        Some(self.env.inline(path)?.map_err(|e| syn::Error::new(path.span(), e)))
    }

    /// [`Lower::inlined`], or the function a call lends a local struct with arrays to: no
    /// derivative signature carries such a struct, so the callee is lowered at the call.
    pub(crate) fn inlined_for(&self, path: &syn::Path, args: &[&syn::Expr]) -> Option<syn::Result<Inlined>> {
        if let Some(inl) = self.inlined(path) {
            return Some(inl);
        }
        if args.iter().any(|a| self.lent_struct_with_arrays(a).is_some() || self.local_struct_with_arrays(a).is_some())
        {
            return Some(
                self.env.inline_as(path, LENDS_STRUCT_WITH_ARRAYS)?.map_err(|e| syn::Error::new(path.span(), e)),
            );
        }
        // A fieldless enum value made here (`Act::Tanh`, a local holding one) is a number
        // inside the function, not the enum a derivative's signature would take.
        if args.iter().any(|a| self.made_enum(a)) {
            return Some(self.env.inline_as(path, PASSES_ENUM_VALUE)?.map_err(|e| syn::Error::new(path.span(), e)));
        }
        // A function generic over a type that this call gives a struct for (`lerp(a, b, t)`
        // of `V3`s, `T: Add<Output = T> + Mul<f64, Output = T>`): its type parameter is the
        // struct here, and no derivative is generated for that.
        if args.iter().any(|a| self.struct_type_of(a).is_some()) {
            if let Some(Ok(inl)) = self.env.inline_as(path, PASSES_STRUCT_FOR_TYPE) {
                let closures = closure_params(&inl.item.sig.generics);
                let generic = inl
                    .item
                    .sig
                    .generics
                    .type_params()
                    .any(|t| !closures.as_ref().is_some_and(|c| c.iter().any(|(n, _)| t.ident == n.as_str())));
                if generic {
                    return Some(Ok(inl));
                }
            }
        }
        // A result no derivative signature carries (not numbers, a tuple or a struct of
        // them, an array): lowered here if it is a struct with arrays (`Body::new(x)`).
        let other = self
            .env
            .callee(path)
            .is_none_or(|s| s.results == 1 && s.ret.is_none() && s.ret_array.is_none() && s.ret_scalars.is_none());
        if !other {
            return None;
        }
        match self.env.inline_as(path, RETURNS_STRUCT_WITH_ARRAYS)? {
            Ok(inl) if returns_struct_with_arrays(&inl) => Some(Ok(inl)),
            _ => None,
        }
    }

    /// The type of the struct with arrays that the call `e` returns (`Mat3::rot_z(t)`,
    /// `m.transpose()`, `Mat3::rot_z(t).transpose()`), judged without lowering it.
    pub(crate) fn returned_struct_with_arrays(&self, e: &syn::Expr) -> Option<String> {
        let (owner, path) = match strip_parens(e) {
            syn::Expr::Call(c) => {
                let syn::Expr::Path(p) = strip_parens(&c.func) else { return None };
                let mut owner = p.path.clone();
                owner.segments.pop();
                owner.segments.pop_punct();
                let owner = (!owner.segments.is_empty()).then(|| crate::record::tokens_text(&owner));
                (owner, p.path.clone())
            }
            syn::Expr::MethodCall(m) => {
                let ty = self.struct_type_of(&m.receiver).or_else(|| self.returned_struct_with_arrays(&m.receiver))?;
                let path = syn::parse_str(&format!("{ty}::{}", m.method)).ok()?;
                (Some(ty), path)
            }
            // An operator of such a struct (`a * b` of `impl Mul for M3`).
            syn::Expr::Binary(b) => {
                let (_, out, inl) = self.operator_result(b)?;
                return returns_struct_with_arrays(&inl).then_some(out);
            }
            _ => return None,
        };
        let inl = self.env.inline_as(&path, RETURNS_STRUCT_WITH_ARRAYS)?.ok()?;
        if !returns_struct_with_arrays(&inl) {
            return None;
        }
        returned_type(&inl, owner)
    }

    /// Whether `a` (or `&a`, `*a`) is a fieldless enum value made in the function: a
    /// variant (`Act::Tanh`) or a local holding one.
    fn made_enum(&self, a: &syn::Expr) -> bool {
        let e = match strip_parens(a) {
            syn::Expr::Reference(syn::ExprReference { expr, .. })
            | syn::Expr::Unary(syn::ExprUnary { op: syn::UnOp::Deref(_), expr, .. }) => strip_parens(expr),
            e => e,
        };
        let syn::Expr::Path(p) = e else { return false };
        crate::matching::is_variant_path(&p.path)
            || matches!(
                p.path.get_ident().and_then(|i| self.lookup(&i.to_string())),
                Some(Binding::Agg(crate::agg::Tree::Enum(_)))
            )
    }

    /// The slots of the local struct with arrays that `a` lends (`&b`, `&mut b`, `b` as a
    /// receiver made `&mut b`).
    pub(crate) fn lent_struct_with_arrays(&self, a: &syn::Expr) -> Option<crate::agg::Tree<crate::agg::Slot>> {
        let syn::Expr::Reference(r) = strip_parens(a) else { return None };
        self.local_struct_with_arrays(&r.expr)
    }

    /// The slots of the local struct with arrays that `e` names.
    pub(crate) fn local_struct_with_arrays(&self, e: &syn::Expr) -> Option<crate::agg::Tree<crate::agg::Slot>> {
        let syn::Expr::Path(p) = strip_parens(e) else { return None };
        match self.lookup(&p.path.get_ident()?.to_string())? {
            Binding::Agg(t @ crate::agg::Tree::Struct(..))
                if t.leaves().iter().any(|s| matches!(s, crate::agg::Slot::Value(v) if self.mem_ty(*v).is_some())) =>
            {
                Some(t)
            }
            _ => None,
        }
    }

    /// Lowers a call of `inl` with `args` (the receiver first for a method) in place.
    pub(crate) fn inline_call(
        &mut self,
        mut inl: Inlined,
        args: &[&syn::Expr],
        turbofish: Option<&syn::AngleBracketedGenericArguments>,
        span: proc_macro2::Span,
    ) -> syn::Result<Option<Agg>> {
        let sig = &inl.item.sig;
        if sig.inputs.len() != args.len() {
            return err(span, format!("{} takes {} argument(s), {} given", inl.shown, sig.inputs.len(), args.len()));
        }
        if self.inline_stack.contains(&inl.key) || self.inline_stack.len() >= MAX_DEPTH {
            return err(
                span,
                format!(
                    "cotan lowers {} at its calls ({}), so it cannot call itself; write the recursion as a loop{}",
                    inl.shown,
                    inl.reason,
                    if inl.reason.contains("another crate") {
                        ", or mark it `#[cotan::differentiable]` where it is defined"
                    } else {
                        ""
                    }
                ),
            );
        }
        let closures = closure_params(&sig.generics).unwrap_or_default();
        // (What the arguments lend `&mut` is read back after the body, as after a call.)
        let lent_mark = self.lent.len();
        let mut bound = vec![];
        for (p, a) in sig.inputs.iter().zip(args) {
            let arity = match p {
                syn::FnArg::Typed(pt) => closure_arity(&pt.ty, &closures),
                syn::FnArg::Receiver(_) => None,
            };
            bound.push(match (arity, self.lent_struct_with_arrays(a)) {
                (Some(n), _) => Arg::Closure(self.closure_arg(a, n)?),
                (None, Some(slots)) => Arg::Slots(slots),
                (None, None) => Arg::Item(self.inline_arg(p, a)?),
            });
        }
        // Type parameters other than closures' (`K: Kind`): the types the arguments have
        // here, so that `K::scale()` names the impl's function.
        let types = self.type_args(sig, &closures, &bound, turbofish);
        if !types.is_empty() {
            self.bind_type_params(&mut inl, &types, span)?;
        }
        let sig = &inl.item.sig;
        if sig.generics.const_params().next().is_some() {
            let values = self.const_args(sig, &bound, turbofish).map_err(|m| {
                syn::Error::new(span, format!("cotan lowers {} at this call ({}); {m}", inl.shown, inl.reason))
            })?;
            inl.item = crate::const_generic::with_constants(&inl.item, &values);
        }
        let sig = &inl.item.sig;
        let mut block = (*inl.item.block).clone();
        if let (syn::ReturnType::Type(_, ty), Some(syn::Stmt::Expr(tail, None))) = (&sig.output, block.stmts.last_mut())
        {
            // A final `None` (in the branches of a final `if` or `match` too): of the
            // declared type (a branch before it gives the `Option` its shape otherwise).
            type_final_nones(tail, ty);
        }
        let body = syn::Expr::Block(syn::ExprBlock { attrs: vec![], label: None, block });
        // `return` in the body: a flag that guards what follows it, as in a function's
        // body, and the value each `return` gives (`Lower::inline_ret`).
        let returns = exits_of_expr(&body).contains(&Exit::Return);
        let outer_ret = (self.ret_flag.take(), self.inline_ret.take());
        if returns {
            let depth = self.stack.len();
            self.ret_flag = Some(self.flag_at(depth, "returned"));
            let ty = match &sig.output {
                syn::ReturnType::Type(_, t) => Some((**t).clone()),
                syn::ReturnType::Default => None,
            };
            self.inline_ret = Some((crate::agg::Merge::new(depth), ty));
        }
        let outer_scopes = std::mem::take(&mut self.scopes);
        let outer_loops = std::mem::take(&mut self.loops);
        let outer_env = std::mem::replace(&mut self.env, inl.env.clone());
        let outer_lent = self.lent_params.clone();
        self.inline_stack.push(inl.key.clone());
        self.push_scope();
        let r = (|| -> syn::Result<Option<Agg>> {
            for (p, a) in sig.inputs.iter().zip(bound) {
                self.bind_param(p, a)?;
            }
            let mut v = self.agg_opt(&body)?;
            if let (Some(flag), Some((mut merge, ty))) = (self.ret_flag, self.inline_ret.take()) {
                // The tail is the result only if no `return` ran.
                if let Some(tail) = v {
                    let tail = match &ty {
                        Some(t) => self.shape_none_by_type(t, tail),
                        None => tail,
                    };
                    let b = crate::infer::STy::Known(cotan_ir::Scalar::Bool);
                    let returned = self.emit_s(cotan_ir::OpKind::GetVar(flag), b);
                    let not = self.emit_s(cotan_ir::OpKind::Unary(cotan_ir::UnOp::Not, returned), b);
                    self.push_region();
                    merge.set(self, &tail, span)?;
                    let then_region = self.pop_region();
                    self.effect(cotan_ir::OpKind::If { cond: not, then_region, else_region: Default::default() });
                }
                v = merge.get(self);
            }
            if let (syn::ReturnType::Type(_, ty), Some(v)) = (&sig.output, &v) {
                if crate::signature::scalar_type(ty).is_some() || matches!(**ty, syn::Type::Tuple(_)) {
                    self.annotate(ty, v)?;
                }
            }
            Ok(v)
        })();
        self.pop_scope();
        (self.ret_flag, self.inline_ret) = outer_ret;
        self.inline_stack.pop();
        self.env = outer_env;
        self.lent_params = outer_lent;
        self.loops = outer_loops;
        self.scopes = outer_scopes;
        match r.is_ok() {
            true => self.return_lent(lent_mark, span),
            false => self.lent.truncate(lent_mark),
        }
        r.map_err(|e: syn::Error| {
            let at = e.span().start();
            let place = match inl.located && at.line > 0 {
                true => format!(", line {}, column {}", at.line, at.column + 1),
                false => String::new(),
            };
            // (Another crate's function can also be marked there, or wrapped here.)
            let remedy = match inl.reason.starts_with("it is another crate's")
                && !["cotan::differentiable", "custom_derivative"].iter().any(|m| e.to_string().contains(m))
            {
                true => "; if this cannot change, mark the function `#[cotan::differentiable]` in its crate, or call it from a function of your own marked `#[cotan::custom_derivative(..)]` or `#[cotan::zero_derivative]`",
                false => "",
            };
            syn::Error::new(span, format!("in {}{place}, which cotan lowers at this call: {e}{remedy}", inl.shown))
        })
    }

    /// The value of each const parameter of `sig` at this call: from the turbofish
    /// (`dot::<3>(..)`), or the length of the array an argument passes for a parameter of
    /// type `[T; N]` (or `&[T; N]`, `&mut [T; N]`).
    fn const_args(
        &self,
        sig: &syn::Signature,
        bound: &[Arg],
        turbofish: Option<&syn::AngleBracketedGenericArguments>,
    ) -> Result<Vec<(String, syn::Expr)>, String> {
        let (params, given) = generics_at_call(sig, turbofish);
        let mut out = vec![];
        for (k, c) in params.iter().enumerate() {
            let syn::GenericParam::Const(c) = c else { continue };
            let name = c.ident.to_string();
            let from_turbofish = match given.get(k) {
                Some(syn::GenericArgument::Const(e)) => Some(e.clone()),
                Some(syn::GenericArgument::Type(syn::Type::Path(p))) => Some(syn::parse_quote!(#p)),
                _ => None,
            };
            let from_args = || {
                sig.inputs.iter().zip(bound).find_map(|(p, a)| {
                    let (syn::FnArg::Typed(pt), Arg::Item(Item::Val(v))) = (p, a) else { return None };
                    let dims = crate::const_generic::array_dims(&pt.ty);
                    let level = dims.iter().position(|d| d.as_deref() == Some(name.as_str()))?;
                    let n = crate::const_generic::mem_dims(self.mem_ty(*v)?.kind).get(level).copied().flatten()?;
                    // Of the parameter's declared type (`usize`, `u32`, ..).
                    let suffix = match &c.ty {
                        syn::Type::Path(t) => t.path.get_ident().map(|i| i.to_string()).unwrap_or_default(),
                        _ => String::new(),
                    };
                    let lit = syn::LitInt::new(&format!("{n}{suffix}"), proc_macro2::Span::call_site());
                    Some(syn::Expr::Lit(syn::ExprLit { attrs: vec![], lit: syn::Lit::Int(lit) }))
                })
            };
            match from_turbofish.or_else(from_args) {
                Some(e) => out.push((name, e)),
                None => {
                    return Err(format!(
                        "it cannot tell `{name}` from the arguments: pass a fixed-size array (`[f64; 3]`, `&a` of one) where the function takes `[_; {name}]`, or write `::<3>` after the function's name"
                    ))
                }
            }
        }
        Ok(out)
    }

    /// Per type parameter of `sig` other than closures', the type it stands for at this
    /// call (as the function being lowered names it), if it can be told: from the turbofish
    /// (`helper::<Gauss>(..)`) or from an argument passed for a parameter of type `K`,
    /// `&K`, `&mut K` (a struct) or `&[K]`, `&Vec<K>`, `&[K; N]` (a slice of structs).
    fn type_args(
        &self,
        sig: &syn::Signature,
        closures: &[(String, usize)],
        bound: &[Arg],
        turbofish: Option<&syn::AngleBracketedGenericArguments>,
    ) -> Vec<(String, Option<String>)> {
        let (params, given) = generics_at_call(sig, turbofish);
        let mut out = vec![];
        for (k, t) in params.iter().enumerate() {
            let syn::GenericParam::Type(t) = t else { continue };
            let name = t.ident.to_string();
            if closures.iter().any(|(c, _)| *c == name) {
                continue;
            }
            let from_turbofish = match given.get(k) {
                Some(syn::GenericArgument::Type(syn::Type::Path(p))) if p.qself.is_none() => {
                    self.env.home_type(&p.path)
                }
                _ => None,
            };
            let from_args = || {
                sig.inputs.iter().zip(bound).find_map(|(p, a)| {
                    let syn::FnArg::Typed(pt) = p else { return None };
                    let (param, container) = type_param_of(&pt.ty)?;
                    if param != name {
                        return None;
                    }
                    let record = |kind: cotan_ir::MemKind| match (kind, container) {
                        (cotan_ir::MemKind::Record(id), false) | (cotan_ir::MemKind::Records(_, id), true) => {
                            Some(self.func.records[id as usize].clone()).filter(|t| !t.starts_with('*'))
                        }
                        _ => None,
                    };
                    match a {
                        Arg::Item(Item::Val(v)) => record(self.mem_ty(*v)?.kind),
                        Arg::Item(Item::Agg(Tree::Struct(path, _))) | Arg::Slots(Tree::Struct(path, _))
                            if !container =>
                        {
                            Some(path.clone())
                        }
                        _ => None,
                    }
                })
            };
            let ty = from_turbofish.or_else(from_args);
            out.push((name, ty));
        }
        out
    }

    /// Lowers `inl`'s body with its type parameters standing for `types` (see
    /// [`Lower::type_args`]): `K::f` is then the function of `K`'s type. An error if the
    /// body names one whose type is not known (`K::f` would reach rustc as it is).
    fn bind_type_params(
        &self,
        inl: &mut Inlined,
        types: &[(String, Option<String>)],
        span: proc_macro2::Span,
    ) -> syn::Result<()> {
        let known: Vec<(String, String)> = types.iter().filter_map(|(n, t)| Some((n.clone(), t.clone()?))).collect();
        let env = match known.len() == types.len() {
            true => inl.env.with_type_params(&known),
            false => None,
        };
        let (unknown, bound): (Vec<String>, Vec<String>) = match &env {
            Some(_) => (vec![], known.iter().map(|(n, _)| n.clone()).collect()),
            None => (types.iter().map(|(n, _)| n.clone()).collect(), vec![]),
        };
        let mut named = TypeParamPaths { unknown: &unknown, bound, found: None };
        named.visit_block_mut(&mut inl.item.block);
        if let Some((param, at)) = named.found {
            let ty = types.iter().find(|(n, _)| *n == param).and_then(|(_, t)| t.clone());
            let why = match ty {
                Some(t) => format!("cotan cannot name the functions of `{t}`, which `{param}` stands for here"),
                None => format!("cotan cannot tell which type `{param}` stands for here"),
            };
            return Err(syn::Error::new(
                span,
                format!(
                    "cotan lowers {} at this call ({}) and its body names `{at}`, but {why}; pass a struct of this crate for a parameter of type `{param}` or `&{param}`, or write the type after the function's name (`::<Type>`)",
                    inl.shown, inl.reason
                ),
            ));
        }
        if let Some(env) = env {
            inl.env = env;
        }
        Ok(())
    }

    /// A closure argument: a closure written at the call, a local closure, or a function.
    fn closure_arg(&mut self, a: &syn::Expr, arity: usize) -> syn::Result<usize> {
        let e = match strip_parens(a) {
            syn::Expr::Reference(r) => strip_parens(&r.expr),
            e => e,
        };
        match e {
            syn::Expr::Closure(c) if c.inputs.len() == arity => self.new_closure(c),
            syn::Expr::Closure(c) => err_at(c, format!("expected a closure with {arity} parameter(s)")),
            syn::Expr::Path(p) => {
                if let Some(i) = p.path.get_ident() {
                    match self.lookup(&i.to_string()) {
                        Some(Binding::Closure(id)) => return Ok(id),
                        Some(_) => {
                            return err_at(
                                p,
                                "cotan needs a closure here (`|x| ...`), a local closure or a function, not a value",
                            )
                        }
                        None => {}
                    }
                }
                // A function item, as the closure `|a, b| f(a, b)`.
                let names: Vec<syn::Ident> =
                    (0..arity).map(|k| syn::Ident::new(&format!("arg{k}"), p.span())).collect();
                let c: syn::ExprClosure = syn::parse_quote_spanned!(p.span()=> |#(#names),*| #p(#(#names),*));
                self.new_closure(&c)
            }
            e => err_at(e, "cotan needs a closure written here (`|x| ...`), a local closure or a function"),
        }
    }

    /// An argument of an inlined function or of a closure: numbers, tuples and structs of
    /// numbers, or memory (lent: `&x`, `&mut x[1..]`).
    pub(crate) fn passed(&mut self, a: &syn::Expr) -> syn::Result<Item> {
        if let Some(place) = self.place_item(a) {
            return Ok(place);
        }
        if let syn::Expr::Reference(r) = strip_parens(a) {
            let lent = r.mutability.is_some()
                || crate::slices::is_range_index(&r.expr)
                || matches!(&*r.expr, syn::Expr::Unary(syn::ExprUnary { op: syn::UnOp::Deref(_), .. }));
            if lent || self.is_memory(&r.expr) {
                return Ok(Item::Val(self.call_arg(a)?.0));
            }
            return Ok(Item::from_agg(self.agg(&r.expr)?));
        }
        match self.agg(a)? {
            Tree::Leaf(v) if self.elem_refs.contains_key(&v) => {
                let (mem, index) = self.elem_refs[&v];
                Ok(Item::Place(mem, index))
            }
            a => Ok(Item::from_agg(a)),
        }
    }

    /// A name bound to an element taken by `&mut`, passed on as that element's place.
    fn place_item(&mut self, a: &syn::Expr) -> Option<Item> {
        let syn::Expr::Path(p) = strip_parens(a) else { return None };
        match self.lookup(&p.path.get_ident()?.to_string()) {
            Some(Binding::Place(mem, index)) => Some(Item::Place(mem, index)),
            _ => None,
        }
    }

    /// A value argument of an inlined function.
    fn inline_arg(&mut self, p: &syn::FnArg, a: &syn::Expr) -> syn::Result<Item> {
        if let syn::Expr::Reference(_) = strip_parens(a) {
            return self.passed(a);
        }
        if let Some(place) = self.place_item(a) {
            return Ok(place);
        }
        let v = self.agg(a)?;
        // A struct or tuple taken by value owns copies of its arrays.
        let v = match v {
            crate::agg::Tree::Leaf(_) => v,
            v => self.own_arrays(a, v, true)?,
        };
        // An array taken by value is the callee's own copy.
        if let (syn::FnArg::Typed(pt), crate::agg::Tree::Leaf(m)) = (p, &v) {
            if matches!(&*pt.ty, syn::Type::Array(_)) && self.mem_ty(*m).is_some() {
                return Ok(Item::Val(self.local_copy(*m, a.span())?));
            }
        }
        Ok(Item::from_agg(v))
    }

    fn bind_param(&mut self, p: &syn::FnArg, a: Arg) -> syn::Result<()> {
        match (p, a) {
            (syn::FnArg::Receiver(_), Arg::Item(Item::Val(v))) => {
                self.bind("self".to_string(), Binding::Value(v));
                Ok(())
            }
            (syn::FnArg::Receiver(r), Arg::Item(item)) => {
                let a = crate::chain::item_agg(self, item);
                self.bind_agg(&syn::parse_quote_spanned!(r.span()=> self), a)
            }
            (syn::FnArg::Typed(pt), Arg::Closure(id)) => match &*pt.pat {
                syn::Pat::Ident(pi) => {
                    self.bind(pi.ident.to_string(), Binding::Closure(id));
                    Ok(())
                }
                syn::Pat::Wild(_) => Ok(()),
                p => err_at(p, "cotan binds a closure parameter to a name; write `f: F`"),
            },
            (syn::FnArg::Typed(pt), Arg::Item(item)) => {
                if let Item::Val(v) = &item {
                    if crate::signature::scalar_type(&pt.ty).is_some() {
                        self.annotate(&pt.ty, &crate::agg::Tree::Leaf(*v))?;
                    }
                    if let syn::Type::Reference(r) = &*pt.ty {
                        self.lent_params.insert(*v, r.mutability.is_some());
                    }
                }
                crate::chain::bind_item(self, &pt.pat, item)
            }
            (syn::FnArg::Receiver(r), Arg::Closure(_)) => err_at(r, "a receiver is not a closure"),
            (syn::FnArg::Receiver(_), Arg::Slots(t)) => {
                self.bind("self".to_string(), Binding::Agg(t));
                Ok(())
            }
            (syn::FnArg::Typed(pt), Arg::Slots(t)) => match &*pt.pat {
                syn::Pat::Ident(pi) => {
                    self.bind(pi.ident.to_string(), Binding::Agg(t));
                    Ok(())
                }
                p => err_at(p, "cotan binds a struct lent to this function to a name; write `s: &mut S`"),
            },
        }
    }
}

/// `sig`'s generic parameters and the turbofish's arguments, lifetimes left out of both
/// (so that the k-th argument is the k-th parameter's).
fn generics_at_call<'a>(
    sig: &'a syn::Signature,
    turbofish: Option<&'a syn::AngleBracketedGenericArguments>,
) -> (Vec<&'a syn::GenericParam>, Vec<&'a syn::GenericArgument>) {
    let params = sig.generics.params.iter().filter(|p| !matches!(p, syn::GenericParam::Lifetime(_))).collect();
    let given = turbofish
        .map(|t| t.args.iter().filter(|a| !matches!(a, syn::GenericArgument::Lifetime(_))).collect())
        .unwrap_or_default();
    (params, given)
}

/// The type parameter a parameter's type is, or holds as its elements: `K`, `&K`,
/// `&mut K` (`false`) or `&[K]`, `&Vec<K>`, `&[K; N]` (`true`).
fn type_param_of(ty: &syn::Type) -> Option<(String, bool)> {
    let single = |t: &syn::Type| match t {
        syn::Type::Path(p) if p.qself.is_none() => p.path.get_ident().map(|i| i.to_string()),
        _ => None,
    };
    match ty {
        syn::Type::Paren(p) => type_param_of(&p.elem),
        syn::Type::Reference(r) => match single(&r.elem) {
            Some(n) => Some((n, false)),
            None => {
                let (_, elem) = crate::record::container_of(&r.elem)?;
                Some((single(elem)?, true))
            }
        },
        t => Some((single(t)?, false)),
    }
}

/// In an inlined generic body: `<K as Trait>::f` written `K::f` where `K` is bound (the
/// crate's view then resolves it), and the first path whose first segment is one of the
/// type parameters whose type is not known (`K::scale`).
struct TypeParamPaths<'a> {
    unknown: &'a [String],
    bound: Vec<String>,
    /// The type parameter and the path.
    found: Option<(String, String)>,
}

/// Whether `t` is one of the type parameters `names`.
fn is_type_param(t: &syn::Type, names: &[String]) -> bool {
    match t {
        syn::Type::Path(p) if p.qself.is_none() => p.path.get_ident().is_some_and(|i| names.iter().any(|n| i == n)),
        _ => false,
    }
}

impl VisitMut for TypeParamPaths<'_> {
    fn visit_expr_path_mut(&mut self, e: &mut syn::ExprPath) {
        if let Some(q) = &e.qself {
            if let (true, syn::Type::Path(p)) = (is_type_param(&q.ty, &self.bound), &*q.ty) {
                // `<K as Trait>::f`: `K::f`.
                let mut path = p.path.clone();
                path.segments.extend(e.path.segments.iter().skip(q.position).cloned());
                e.qself = None;
                e.path = path;
            } else if self.found.is_none() && is_type_param(&q.ty, self.unknown) {
                self.found = Some((crate::record::tokens_text(&*q.ty), crate::record::tokens_text(&*e)));
            }
        }
        if self.found.is_none() && e.qself.is_none() && e.path.segments.len() > 1 {
            let first = e.path.segments[0].ident.to_string();
            if self.unknown.contains(&first) {
                self.found = Some((first, crate::record::tokens_text(&*e)));
            }
        }
        syn::visit_mut::visit_expr_path_mut(self, e);
    }
}
