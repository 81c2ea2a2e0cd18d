//! What lowering may ask about the crate (`cotan_syntax::Env`), answered from its
//! sources: which types are structs of numbers, and which functions take or return them
//! field by field (those cotan lowers and differentiates itself; not those whose
//! derivatives are exported, which keep Rust's signatures).

use std::rc::Rc;

use cotan_syntax::{CalleeShape, FieldShape, FieldType, Structure};

use crate::sources::{FnId, ImplId, ModId, Ns, Res, Sources, TypeId};

/// The crate as seen from one function: `scope` is where its names resolve, `imp` the
/// `impl` block it is a method of (for `Self`).
pub(crate) struct SourceEnv {
    pub src: Rc<Sources>,
    pub scope: ModId,
    pub imp: Option<ImplId>,
    /// For the body of a function inlined into another (`cotan_syntax::Inlined`): the scope
    /// of the function being lowered, for which the paths it generates are written.
    pub home: Option<ModId>,
    /// For the body of another crate's function inlined into this one's: that crate's name,
    /// by which generated paths reach its items (`::simple_dep::f`).
    pub krate: Option<Rc<str>>,
    /// For the body of a generic function inlined at a call: the types its type parameters
    /// stand for there (`K` for `Gauss`), see `cotan_syntax::Env::with_type_params`.
    /// Each with the path the function being lowered names the type by, which is the
    /// path of the methods called on the parameters of that type (`A::f` for `m.f(x)`
    /// with `m: &K`; `A` may not be visible in the inlined function's module).
    pub type_params: Vec<(String, TypeId, String)>,
}

impl SourceEnv {
    pub(crate) fn new(src: Rc<Sources>, scope: ModId, imp: Option<ImplId>) -> Self {
        SourceEnv { src, scope, imp, home: None, krate: None, type_params: vec![] }
    }

    /// `::krate::module::name` for an item of another crate's module.
    fn foreign(&self, module: ModId, name: &str) -> Option<String> {
        let k = self.krate.as_ref()?;
        let mut p = format!("::{k}");
        for seg in &self.src.modules[module].path {
            p.push_str("::");
            p.push_str(seg);
        }
        Some(format!("{p}::{name}"))
    }

    /// Type `t` as the generated code names it, when that differs from how it is written.
    fn type_path_out(&self, t: TypeId) -> Option<String> {
        match (&self.krate, self.home) {
            (Some(_), _) => self.foreign(self.src.types[t].module, &self.src.types[t].name),
            (None, Some(home)) => self.src.type_path(home, t),
            (None, None) => None,
        }
    }

    /// Another crate's function that a path names from this crate (`simple_dep::f`, or `f`
    /// imported with `use simple_dep::f`): the crate's name, its sources and the function.
    fn dependency_fn(&self, path: &syn::Path) -> Option<(Rc<str>, Rc<Sources>, FnId)> {
        let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        let first = segs.first()?.clone();
        let full: Vec<String> = match self.src.import_path(self.scope, &first) {
            Some(mut p) => {
                if self.src.is_local(self.scope, &p[0]) {
                    return None;
                }
                p.extend(segs[1..].iter().cloned());
                p
            }
            None if self.src.is_local(self.scope, &first) => return None,
            None => segs,
        };
        let krate = full[0].clone();
        if ["std", "core", "alloc", "cotan"].contains(&krate.as_str()) || full.len() < 2 {
            return None;
        }
        let dep = crate::sources::dependency_near(&krate, Some(&self.src.modules[0].file))?;
        match dep.resolve(0, &full[1..], Ns::Value) {
            Res::Fn(f) => Some((krate.into(), dep, f)),
            _ => None,
        }
    }

    /// The type a type parameter of an inlined generic function stands for.
    fn type_param(&self, name: &str) -> Option<TypeId> {
        self.type_params.iter().find(|(n, _, _)| n == name).map(|(_, t, _)| *t)
    }

    /// The type a type parameter stands for, by the path the function being lowered names
    /// it with.
    fn bound_type(&self, path: &[String]) -> Option<TypeId> {
        let text = path.join("::");
        self.type_params.iter().find(|(_, _, p)| *p == text).map(|(_, t, _)| *t)
    }

    /// Where generated paths are read.
    fn home_scope(&self) -> ModId {
        self.home.unwrap_or(self.scope)
    }

    /// The function a path names from this scope (`Self::m` in an `impl` block too).
    fn resolve_fn(&self, path: &syn::Path) -> Option<FnId> {
        let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        let res = match (segs.as_slice(), self.imp) {
            ([s, m], Some(i)) if s == "Self" => self.src.method(self.src.impl_type(i)?, m),
            ([s, m], _) if self.type_param(s).is_some() => self.src.method(self.type_param(s)?, m),
            ([ty @ .., m], _) if self.bound_type(ty).is_some() => self.src.method(self.bound_type(ty)?, m),
            _ => self.src.resolve(self.scope, &segs, Ns::Value),
        };
        match res {
            Res::Fn(f) => Some(f),
            _ => None,
        }
    }

    /// Function `f` as code in the home scope names it (`Type::method` for a method).
    fn fn_path_from_home(&self, f: FnId) -> Option<String> {
        let def = &self.src.fns[f];
        if self.krate.is_some() {
            return match def.imp {
                Some(i) => Some(format!("{}::{}", self.type_path_out(self.src.impl_type(i)?)?, def.name)),
                None => self.foreign(def.module, &def.name),
            };
        }
        match def.imp {
            Some(i) => {
                Some(format!("{}::{}", self.src.type_path(self.home_scope(), self.src.impl_type(i)?)?, def.name))
            }
            None => self.src.path_to(self.home_scope(), def.module, &def.name),
        }
    }
}

impl cotan_syntax::Env for SourceEnv {
    fn structure(&self, ty: &syn::Path) -> Option<Structure> {
        let t = self.type_named(ty)?;
        let mut s = structure(&self.src, t, &mut vec![])?;
        s.path = match self.type_path_out(t) {
            Some(p) => p,
            None if self.home.is_some() || self.krate.is_some() => return None,
            None => path_text(ty),
        };
        Some(s)
    }

    fn struct_path(&self, ty: &syn::Path) -> Option<String> {
        self.type_path_out(self.type_named(ty)?)
    }

    fn derives_default(&self, ty: &syn::Path) -> bool {
        self.type_named(ty).is_some_and(|t| self.src.types[t].derives.iter().any(|d| d == "Default"))
    }

    fn is_enum(&self, ty: &syn::Path) -> bool {
        self.type_named(ty).is_some_and(|t| self.src.types[t].is_enum)
    }

    fn number_operator(
        &self,
        number: &str,
        method: &str,
        operand: &syn::Path,
    ) -> Option<Result<cotan_syntax::Inlined, String>> {
        let want = self.type_named(operand)?;
        let f = self.src.fns.iter().enumerate().find_map(|(f, def)| {
            let imp = &self.src.impls[def.imp?];
            let is_number = matches!(&imp.self_ty, syn::Type::Path(p) if p.qself.is_none() && p.path.is_ident(number));
            let trait_arg = imp.trait_path.as_ref()?.segments.last().and_then(|s| match &s.arguments {
                syn::PathArguments::AngleBracketed(a) => match a.args.first() {
                    Some(syn::GenericArgument::Type(syn::Type::Path(t))) if t.qself.is_none() => Some(&t.path),
                    _ => None,
                },
                _ => None,
            })?;
            let same = self.src.type_at(imp.module, trait_arg) == Some(want);
            (is_number && def.name == method && same).then_some(f)
        })?;
        self.inline_fn(self.src.clone(), f, self.krate.clone(), Some("it is an operator of a number on a struct"))
    }

    fn operator_for(
        &self,
        ty: &syn::Path,
        method: &str,
        rhs: &cotan_syntax::Operand,
        by_ref: bool,
    ) -> Option<Result<cotan_syntax::Inlined, String>> {
        use cotan_syntax::Operand;
        let own = self.type_named(ty)?;
        let wanted = match rhs {
            Operand::Struct(p) => Some(self.type_named(p)?),
            _ => None,
        };
        let f = self.src.fns.iter().enumerate().find_map(|(f, def)| {
            let i = def.imp?;
            let last = self.src.impls[i].trait_path.as_ref()?.segments.last()?;
            // (The impl for references is for `&V3`, `&'a V3`.)
            let module = self.src.impls[i].module;
            let for_type = match (&self.src.impls[i].self_ty, by_ref) {
                (syn::Type::Reference(r), true) => match &*r.elem {
                    syn::Type::Path(p) => self.src.type_at(module, &p.path),
                    _ => None,
                },
                (syn::Type::Reference(_), false) | (_, true) => None,
                (_, false) => self.src.impl_type(i),
            };
            if def.name != method || for_type != Some(own) {
                return None;
            }
            // The trait's argument; none is `Self` (`impl Mul for M3`).
            let arg = match &last.arguments {
                syn::PathArguments::None => None,
                syn::PathArguments::AngleBracketed(a) => match a.args.first() {
                    Some(syn::GenericArgument::Type(t)) => Some(t),
                    _ => return None,
                },
                syn::PathArguments::Parenthesized(_) => return None,
            };
            // (`Add<&'a V3>`: the operand's type behind the reference.)
            let arg = match arg {
                Some(syn::Type::Reference(r)) => Some(&*r.elem),
                a => a,
            };
            let fits = match (arg, rhs) {
                (None, Operand::Struct(_)) => wanted == Some(own),
                (Some(syn::Type::Array(_)), Operand::Array) => true,
                (Some(syn::Type::Path(p)), Operand::Number) => {
                    p.qself.is_none() && (p.path.is_ident("f64") || p.path.is_ident("f32"))
                }
                (Some(syn::Type::Path(p)), Operand::Struct(_)) if p.qself.is_none() => {
                    let t = match p.path.is_ident("Self") {
                        true => Some(own),
                        false => self.src.type_at(module, &p.path),
                    };
                    t.is_some() && t == wanted
                }
                _ => false,
            };
            fits.then_some(f)
        })?;
        self.inline_fn(self.src.clone(), f, self.krate.clone(), Some("it is one of several impls of an operator"))
    }

    fn record_fields(&self, ty: &str) -> Option<Vec<(String, FieldType)>> {
        let path: syn::Path = syn::parse_str(ty).ok()?;
        self.fields(self.type_named(&path)?)
    }

    fn callee(&self, path: &syn::Path) -> Option<CalleeShape> {
        let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        let f = self.resolve_fn(path)?;
        callee_shape(&self.src, f).map(|mut shape| {
            // The result as the caller names it.
            if let Some(r) = &mut shape.ret {
                // The type as the callee's module names it (`Self`, or `Pt` of
                // `crate::more::Pt::new`).
                let def = &self.src.fns[f];
                let own = def.imp.and_then(|i| self.src.impl_type(i));
                let t = match r.path.as_str() {
                    "Self" => own,
                    p => {
                        let segs: Vec<String> = p.split("::").map(str::to_string).collect();
                        match self.src.resolve(def.scope, &segs, Ns::Type) {
                            Res::Type(t) => Some(t),
                            _ => None,
                        }
                    }
                };
                if self.home.is_some() || self.krate.is_some() {
                    if let Some(p) = t.and_then(|t| self.type_path_out(t)) {
                        r.path = p;
                    }
                } else if (r.path == "Self" || t.is_some() && t == own) && segs.len() >= 2 {
                    // The impl's own type: the call's path names it.
                    r.path = segs[..segs.len() - 1].join("::");
                }
            }
            shape
        })
    }

    fn inline(&self, path: &syn::Path) -> Option<Result<cotan_syntax::Inlined, String>> {
        self.inline_for(path, None)
    }

    fn inline_as(&self, path: &syn::Path, reason: &'static str) -> Option<Result<cotan_syntax::Inlined, String>> {
        self.inline_for(path, Some(reason))
    }

    fn home_path(&self, path: &syn::Path) -> Option<String> {
        if self.home.is_none() && self.krate.is_none() {
            return None;
        }
        self.fn_path_from_home(self.resolve_fn(path)?)
    }

    fn home_type(&self, ty: &syn::Path) -> Option<String> {
        if self.krate.is_some() {
            return None;
        }
        self.src.type_path(self.home_scope(), self.type_named(ty)?)
    }

    fn with_type_params(&self, types: &[(String, String)]) -> Option<Rc<dyn cotan_syntax::Env>> {
        // (Another crate's generic functions are not lowered here.)
        if self.krate.is_some() {
            return None;
        }
        let mut type_params = vec![];
        for (name, ty) in types {
            let path: syn::Path = syn::parse_str(ty).ok()?;
            if path.segments.iter().any(|s| !s.arguments.is_none()) {
                return None;
            }
            let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
            match self.src.resolve(self.home_scope(), &segs, Ns::Type) {
                Res::Type(t) => type_params.push((name.clone(), t, segs.join("::"))),
                _ => return None,
            }
        }
        Some(Rc::new(SourceEnv {
            src: self.src.clone(),
            scope: self.scope,
            imp: self.imp,
            home: self.home,
            krate: None,
            type_params,
        }))
    }
}

impl SourceEnv {
    /// The function `path` names, to be lowered at its calls: for `reason` (the caller's),
    /// or when its signature needs it (`cotan_syntax::inline_reason`).
    fn inline_for(
        &self,
        path: &syn::Path,
        forced: Option<&'static str>,
    ) -> Option<Result<cotan_syntax::Inlined, String>> {
        let (src, f, krate) = match self.resolve_fn(path) {
            Some(f) => (self.src.clone(), f, self.krate.clone()),
            // Another crate's function that exports no derivatives: its body, read from that
            // crate's sources, is lowered here (no derivative of it is made there).
            None => {
                let (krate, dep, f) = self.dependency_fn(path)?;
                (dep, f, Some(krate))
            }
        };
        self.inline_fn(src, f, krate, forced)
    }

    /// [`inline_for`](Self::inline_for) of function `f` of `src` (of crate `krate`, or this one).
    fn inline_fn(
        &self,
        src: Rc<Sources>,
        f: FnId,
        krate: Option<Rc<str>>,
        forced: Option<&'static str>,
    ) -> Option<Result<cotan_syntax::Inlined, String>> {
        let def = &src.fns[f];
        if src.exports(f) {
            return None;
        }
        // This crate's functions are inlined when no derivative signature can carry them;
        // another crate's always (but not generic ones, which it cannot name here).
        let foreign = krate.is_some();
        let item = crate::sources::with_fallback(|| {
            let mut sig = def.item.sig.clone();
            for a in sig.inputs.iter_mut() {
                if let syn::FnArg::Typed(t) = a {
                    *t.ty = without_aliases(&src, def.module, &t.ty);
                }
            }
            if let syn::ReturnType::Type(_, t) = &mut sig.output {
                **t = without_aliases(&src, def.module, t);
            }
            let generic = sig.generics.params.iter().any(|g| !matches!(g, syn::GenericParam::Lifetime(_)));
            let reason = match (foreign, generic, forced) {
                (true, false, _) => "it is another crate's function that exports no derivatives",
                (_, _, Some(reason)) => reason,
                _ => cotan_syntax::inline_reason(&sig)?,
            };
            let item = crate::constants::substitute(&def.item, &src, def.scope, def.imp).map(|mut item| {
                item.sig = sig;
                item
            });
            Some((reason, item.map(|i| (quote::ToTokens::to_token_stream(&i).to_string(), i))))
        })?;
        let (reason, item) = item;
        let item = match item {
            // Outside the fallback mode (in the macro), the tokens are made anew for rustc.
            Ok((text, item)) => match crate::sources::in_fallback() {
                true => item,
                false => match syn::parse_str::<syn::ItemFn>(&text) {
                    Ok(item) => item,
                    Err(e) => return Some(Err(e.to_string())),
                },
            },
            Err(e) => return Some(Err(e.to_string())),
        };
        let home = (!foreign).then(|| self.home_scope());
        let env = SourceEnv {
            src: src.clone(),
            scope: def.scope,
            imp: def.imp,
            home,
            krate: krate.clone(),
            type_params: vec![],
        };
        Some(Ok(cotan_syntax::Inlined {
            item,
            env: Rc::new(env),
            shown: format!("`{}` ({})", def.name, src.location(f)),
            key: format!("{}{f}", krate.as_deref().unwrap_or("")),
            located: crate::sources::in_fallback(),
            reason,
        }))
    }

    /// The fields of struct `t` and what lowering can use of their types.
    fn fields(&self, t: TypeId) -> Option<Vec<(String, FieldType)>> {
        let def = &self.src.types[t];
        let fields = def.structure.clone()?;
        let mut out = vec![];
        for (k, f) in fields.iter().enumerate() {
            let name = f.ident.as_ref().map_or_else(|| k.to_string(), |i| i.to_string());
            let fty = crate::sources::with_fallback(|| {
                crate::constants::with_lengths(&without_aliases(&self.src, def.module, &f.ty), &self.src, def.module)
            });
            let ty = if let Some(s) = cotan_syntax::scalar_type(&fty) {
                FieldType::Number(s)
            } else if let Some((s, kind)) = cotan_syntax::container_type(&fty) {
                FieldType::Memory(s, kind)
            } else if let Some((dim, t)) = self.records_field(&fty, def.module) {
                FieldType::Records(dim, t)
            } else {
                match &f.ty {
                    syn::Type::Path(p) if p.qself.is_none() => {
                        let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
                        match self.src.resolve(def.module, &segs, Ns::Type) {
                            Res::Type(inner)
                                if self.src.types[inner].structure.is_some() || self.src.types[inner].is_enum =>
                            {
                                match self.type_path_out(inner).or_else(|| self.src.type_path(self.scope, inner)) {
                                    Some(path) => FieldType::Record(path),
                                    None => FieldType::Other,
                                }
                            }
                            _ => FieldType::Other,
                        }
                    }
                    _ => FieldType::Other,
                }
            };
            out.push((name, ty));
        }
        Some(out)
    }

    /// A container of structs of the crate or of tuples (`Vec<Spring>`, `[(usize, usize); 6]`),
    /// its element type as generated code names it.
    fn records_field(&self, ty: &syn::Type, module: ModId) -> Option<(cotan_ir::Dim, String)> {
        let (dim, elem) = cotan_syntax::container_of(ty).filter(|(d, _)| *d != cotan_ir::Dim::Slice)?;
        let text = match elem {
            syn::Type::Tuple(t) if t.elems.iter().all(|e| cotan_syntax::scalar_type(e).is_some()) => {
                // (Tokens made from the sources' tokens, in their mode.)
                crate::sources::with_fallback(|| quote::ToTokens::to_token_stream(t).to_string().replace(" ,", ","))
            }
            syn::Type::Path(p) if p.qself.is_none() => {
                let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
                let Res::Type(inner) = self.src.resolve(module, &segs, Ns::Type) else { return None };
                self.src.types[inner].structure.as_ref()?;
                self.type_path_out(inner).or_else(|| self.src.type_path(self.scope, inner))?
            }
            _ => return None,
        };
        Some((dim, text))
    }

    fn type_named(&self, ty: &syn::Path) -> Option<TypeId> {
        let segs: Vec<String> = ty.segments.iter().map(|s| s.ident.to_string()).collect();
        if ty.segments.iter().any(|s| !s.arguments.is_none()) {
            return None;
        }
        match (segs.as_slice(), self.imp) {
            ([s], Some(i)) if s == "Self" => self.src.impl_type(i),
            ([s], _) if self.type_param(s).is_some() => self.type_param(s),
            _ => match self.src.resolve(self.scope, &segs, Ns::Type) {
                Res::Type(t) => Some(t),
                _ => None,
            },
        }
    }
}

/// How function `f` takes and returns structs of numbers field by field, if it does (so
/// that its IR signature differs from its Rust one and callers call a copy of it).
pub(crate) fn flat_shape(src: &Sources, f: FnId) -> Option<CalleeShape> {
    callee_shape(src, f).filter(CalleeShape::flattens)
}

/// How function `f`, whose body cotan differentiates (no exported derivatives, no type
/// parameters), takes and returns its values.
fn callee_shape(src: &Sources, f: FnId) -> Option<CalleeShape> {
    let def = &src.fns[f];
    if def.item.sig.generics.params.iter().any(|g| !matches!(g, syn::GenericParam::Lifetime(_))) {
        return None;
    }
    let of_type = |ty: &syn::Type| -> Option<Structure> {
        let inner = match ty {
            syn::Type::Reference(r) if r.mutability.is_none() => &*r.elem,
            syn::Type::Reference(_) => return None,
            t => t,
        };
        let syn::Type::Path(p) = inner else { return None };
        if p.qself.is_some() {
            return None;
        }
        let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
        let t = match (segs.as_slice(), def.imp) {
            ([s], Some(i)) if s == "Self" => src.impl_type(i)?,
            _ => match src.resolve(def.module, &segs, Ns::Type) {
                Res::Type(t) => t,
                _ => return None,
            },
        };
        let mut s = structure(src, t, &mut vec![])?;
        s.path = path_text(&p.path);
        Some(s)
    };
    let params: Vec<Option<Structure>> = def
        .item
        .sig
        .inputs
        .iter()
        .map(|a| match a {
            syn::FnArg::Receiver(r) if r.mutability.is_some() && r.reference.is_some() => None,
            syn::FnArg::Receiver(r) => of_type(&r.ty),
            syn::FnArg::Typed(t) => of_type(&without_aliases(src, def.module, &t.ty)),
        })
        .collect();
    // Values the IR takes by reference: structs (not of numbers), enums, tuples, arrays;
    // pointers are passed as they are.
    let by_value = |ty: &syn::Type| match ty {
        syn::Type::Reference(_) | syn::Type::Ptr(_) => false,
        ty => cotan_syntax::scalar_type(ty).is_none() && cotan_syntax::param_type(ty).is_none_or(|t| t.mem().is_some()),
    };
    let by_ref = def
        .item
        .sig
        .inputs
        .iter()
        .zip(&params)
        .map(|(a, st)| {
            st.is_none()
                && match a {
                    syn::FnArg::Receiver(r) => r.reference.is_none(),
                    syn::FnArg::Typed(t) => {
                        let ty = without_aliases(src, def.module, &t.ty);
                        by_value(&ty) && !matches!(ty, syn::Type::ImplTrait(_))
                    }
                }
        })
        .collect();
    let (ret, results, ret_array) = match &def.item.sig.output {
        syn::ReturnType::Default => (None, 0, None),
        syn::ReturnType::Type(_, t) => match (of_type(t), &without_aliases(src, def.module, t)) {
            (Some(s), _) => (Some(s), 0, None),
            (None, syn::Type::Tuple(tt)) => (None, tt.elems.len(), None),
            (None, t @ syn::Type::Array(_)) => match cotan_syntax::container_type(t) {
                Some((s, cotan_ir::MemKind::Array(n))) => (None, 0, Some((s, n))),
                _ => (None, 1, None),
            },
            _ => (None, 1, None),
        },
    };
    let ret_scalars = match &def.item.sig.output {
        syn::ReturnType::Default => None,
        syn::ReturnType::Type(_, t) => match without_aliases(src, def.module, t) {
            syn::Type::Tuple(tt) => tt.elems.iter().map(cotan_syntax::scalar_type).collect(),
            t => cotan_syntax::scalar_type(&t).map(|s| vec![s]),
        },
    };
    let mut_receiver = matches!(def.item.sig.inputs.first(), Some(syn::FnArg::Receiver(r)) if r.reference.is_some() && r.mutability.is_some());
    let param_scalars = def
        .item
        .sig
        .inputs
        .iter()
        .map(|a| match a {
            syn::FnArg::Receiver(_) => None,
            syn::FnArg::Typed(t) => cotan_syntax::scalar_type(&without_aliases(src, def.module, &t.ty)),
        })
        .collect();
    Some(CalleeShape { params, ret, results, by_ref, ret_array, ret_scalars, mut_receiver, param_scalars })
}

/// Type `t` as a struct of numbers: a struct without generics whose fields are numbers or
/// structs of numbers (`seen`: the structs around it, against recursion).
fn structure(src: &Sources, t: TypeId, seen: &mut Vec<TypeId>) -> Option<Structure> {
    let def = &src.types[t];
    let fields = def.structure.clone()?;
    if seen.contains(&t) {
        return None;
    }
    seen.push(t);
    let mut out = vec![];
    for (k, f) in fields.iter().enumerate() {
        let name = f.ident.as_ref().map_or_else(|| k.to_string(), |i| i.to_string());
        let fty = without_aliases(src, def.module, &f.ty);
        let shape = match cotan_syntax::scalar_type(&fty) {
            Some(s) => FieldShape::Number(s),
            None => {
                let syn::Type::Path(p) = &fty else { return None };
                let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
                match src.resolve(def.module, &segs, Ns::Type) {
                    Res::Type(inner) => FieldShape::Struct(structure(src, inner, seen)?),
                    _ => return None,
                }
            }
        };
        out.push((name, shape));
    }
    seen.pop();
    Some(Structure { path: def.name.clone(), fields: out })
}

/// `ty` (written in `module`) with the crate's type aliases replaced by what they stand for.
pub(crate) fn without_aliases(src: &Sources, module: ModId, ty: &syn::Type) -> syn::Type {
    struct Aliases<'a> {
        src: &'a Sources,
        module: ModId,
        depth: usize,
    }
    impl syn::visit_mut::VisitMut for Aliases<'_> {
        fn visit_type_mut(&mut self, t: &mut syn::Type) {
            if let syn::Type::Path(p) = &*t {
                let plain = p.qself.is_none() && p.path.segments.iter().all(|s| s.arguments.is_none());
                let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
                if plain && self.depth < 8 {
                    if let Res::Type(id) = self.src.resolve(self.module, &segs, Ns::Type) {
                        if let Some(alias) = self.src.types[id].alias.clone() {
                            *t = (*alias).clone();
                            let module = std::mem::replace(&mut self.module, self.src.types[id].module);
                            self.depth += 1;
                            self.visit_type_mut(t);
                            self.depth -= 1;
                            self.module = module;
                            return;
                        }
                    }
                }
            }
            syn::visit_mut::visit_type_mut(self, t);
            // `[f64; N]` of a constant of the crate (`const N: usize = 2;`): its value, as
            // rustc reads it.
            if let syn::Type::Array(a) = t {
                if let syn::Expr::Path(p) = &a.len {
                    let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
                    if let Res::Const(c) = self.src.resolve(self.module, &segs, Ns::Value) {
                        if let syn::Expr::Lit(lit @ syn::ExprLit { lit: syn::Lit::Int(_), .. }) =
                            &self.src.consts[c].expr
                        {
                            a.len = syn::Expr::Lit(lit.clone());
                        }
                    }
                }
            }
        }
    }
    let mut t = ty.clone();
    syn::visit_mut::VisitMut::visit_type_mut(&mut Aliases { src, module, depth: 0 }, &mut t);
    t
}

fn path_text(p: &syn::Path) -> String {
    p.segments.iter().map(|s| s.ident.to_string()).collect::<Vec<_>>().join("::")
}
