//! A differentiated function and everything it calls. The transforms ask for the
//! derivative each call site needs ([`cotan_ad::Linker`]); the program finds the callee's
//! source in the crate (`sources.rs`), lowers it, differentiates it for exactly that
//! pattern of activity, once per pattern, recursion included, and keeps what it made, to be
//! emitted inside the derivative the attribute generates.
//!
//! Callees are written for the scope of that derivative: the paths in their bodies become
//! paths that reach the same items from there (`crate::model::helper`), and `Self` the
//! type it stands for.

use cotan_ir::{HashMap, HashSet};
use std::rc::Rc;

use cotan_ad::{CallSite, Linker, Need};
use cotan_ir::{Function, OpKind, SpanId};
use proc_macro2::{Span, TokenStream};

use crate::sources::{with_fallback, DerivedId, FnId, ImplId, ModId, Ns, Res, Sources};

/// Where a callee's IR comes from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Origin {
    /// The function the attribute is on (called recursively).
    Root,
    Def(FnId),
    /// A function this program generated (differentiated again: second order).
    Made(String),
    /// A derivative an autodiff attribute generates (differentiated again).
    Derived(DerivedId),
    /// A function cotan cannot read, whose derivatives its mark exported (by path).
    Exported(String),
}

/// How a callee is differentiated.
#[derive(Clone)]
pub(crate) enum Rule {
    /// Its body is.
    Body,
    /// `#[cotan::custom_derivative(forward = F, reverse = R)]`: paths to F and R.
    Custom { forward: Option<String>, reverse: Option<String> },
    /// `#[cotan::zero_derivative]`.
    Zero,
    /// A function whose source cotan cannot read, marked where it is defined (in another
    /// crate, say): its derivatives are exported beside it as `{path}__fwd`, `{path}__aug`
    /// and `{path}__rev`.
    Exported(String),
}

pub(crate) struct Callee {
    /// Its IR (for custom and zero derivatives, only the signature).
    pub func: Rc<Function>,
    pub rule: Rule,
    /// The path that calls the primal function from the derivative's scope.
    pub path: String,
    /// How messages name it: `energy (src/model.rs:12)`.
    pub shown: String,
    /// The source spans of its IR (for the lines of errors in it).
    spans: Vec<Span>,
}

/// The names of what a key made.
#[derive(Clone)]
enum Made {
    Forward(String),
    Split { aug: String, rev: String },
}

type Key = (Origin, Need, Vec<bool>, Vec<cotan_ad::Avail>, bool);

pub(crate) struct Program {
    src: Option<Rc<Sources>>,
    /// The scope the derivative is written for, and the `impl` it is in.
    scope: Option<ModId>,
    root_impl: Option<ImplId>,
    root_def: Option<FnId>,
    root: Rc<Function>,
    root_rule: Rule,
    root_spans: Vec<Span>,
    callees: HashMap<Origin, Result<Rc<Callee>, String>>,
    keys: HashMap<Key, Result<Made, String>>,
    /// What it made, in order.
    pub made: Vec<Function>,
    by_name: HashMap<String, Rc<Function>>,
    names: HashSet<String>,
    /// The paths written for functions of the crate, and for derivatives.
    path_fns: HashMap<String, FnId>,
    path_derived: HashMap<String, DerivedId>,
    /// Nesting of `link` calls: 0 while the attribute's own function is transformed.
    depth: usize,
    /// Callees with fields cotan took for integers (`p.n` in `p.n as f64`), which the
    /// generated code has rustc check: the callee and the fields' paths.
    pub assumed_int: Vec<(Rc<Function>, Vec<String>)>,
    /// The functions known only by their exports that the program calls.
    pub exported: HashSet<String>,
    /// The copies made of functions that take or return structs of numbers field by field.
    flat_copies: HashMap<FnId, String>,
    /// Tools: callees' literals are typed by the functions they call, as rustc types them
    /// (`tools::type_literals_by_callees`).
    pub literals_by_callees: bool,
}

impl Program {
    /// A program around `root` (the lowered function with the attribute, whose spans are
    /// the compiler's), in the crate's sources if they can be read.
    pub(crate) fn new(
        root: &cotan_syntax::Lowered,
        rule: Rule,
        src: Option<Rc<Sources>>,
        at: Option<(ModId, Option<FnId>)>,
    ) -> Self {
        let (scope, root_def) = match at {
            Some((m, f)) => {
                // The function the attribute is on, if it is the one the line is in.
                let f = f.filter(|f| src.as_ref().is_some_and(|s| s.fns[*f].name == root.func.name));
                (Some(m), f)
            }
            None => (None, None),
        };
        let root_impl = root_def.and_then(|f| src.as_ref().and_then(|s| s.fns[f].imp));
        let mut names: HashSet<String> = HashSet::default();
        names.insert(root.func.name.clone());
        Program {
            src,
            scope,
            root_impl,
            root_def,
            root: Rc::new(root.func.clone()),
            root_rule: rule,
            root_spans: root.spans.clone(),
            callees: HashMap::default(),
            keys: HashMap::default(),
            made: vec![],
            by_name: HashMap::default(),
            names,
            flat_copies: HashMap::default(),
            path_fns: HashMap::default(),
            path_derived: HashMap::default(),
            depth: 0,
            assumed_int: vec![],
            exported: HashSet::default(),
            literals_by_callees: false,
        }
    }

    /// The IR the interpreter runs for a call of `path`: a function this program made, or a
    /// function of the crate as written (for tools).
    pub(crate) fn runnable(&mut self, path: &str) -> Result<Rc<Function>, String> {
        if let Some(f) = self.by_name.get(path) {
            return Ok(f.clone());
        }
        let origin = self.origin(path)?;
        let c = match &origin {
            Origin::Exported(p) => return Err(format!("cotan cannot run `{p}`: its source is not in the file")),
            o => self.callee(o)?,
        };
        if matches!(c.rule, Rule::Body) {
            return Ok(c.func.clone());
        }
        // A custom or zero derivative's own body, which derivatives call for the primal.
        let (src, f) = match (&self.src, &origin) {
            (Some(src), Origin::Def(f)) => (src.clone(), *f),
            _ => return Err(format!("cotan cannot run {}", c.shown)),
        };
        let def = &src.fns[f];
        let item = def.item.clone();
        let env = std::rc::Rc::new(crate::env::SourceEnv::new(src.clone(), def.scope, def.imp));
        let lowered = with_fallback(|| {
            let item = crate::constants::substitute(&item, &src, def.scope, def.imp)?;
            cotan_syntax::lower_fn_in(&item.sig, &item.block, env, true)
        })
        .map_err(|e| in_callee(&c.shown, &e.span(), &e.to_string()))?;
        let mut func = lowered.func;
        // A callee's `cotan::par` loops run in order (only the function with the attribute
        // is checked as a kernel).
        func.par_loops.clear();
        self.rewrite(&mut func, def.module, def.imp)?;
        Ok(Rc::new(func))
    }

    /// A function this program made.
    pub(crate) fn made_fn(&self, name: &str) -> Rc<Function> {
        self.by_name[name].clone()
    }

    /// The functions this program made that `f` calls, directly or not.
    pub(crate) fn reachable(&self, f: &Function) -> Vec<&Function> {
        let mut seen: HashSet<String> = HashSet::default();
        let mut work = vec![f];
        while let Some(g) = work.pop() {
            g.walk(&mut |op| {
                if let OpKind::Call { callee, .. } = &op.kind {
                    if let Some(h) = self.by_name.get(callee) {
                        if seen.insert(callee.clone()) {
                            work.push(h);
                        }
                    }
                }
            });
        }
        self.made.iter().filter(|g| seen.contains(&g.name)).collect()
    }

    /// Reserves a name for generated code (the derivative itself, say).
    pub(crate) fn reserve(&mut self, name: &str) {
        self.names.insert(name.to_string());
    }

    fn fresh(&mut self, base: &str) -> String {
        let mut name = base.to_string();
        let mut k = 2;
        while self.names.contains(&name) {
            name = format!("{base}{k}");
            k += 1;
        }
        self.names.insert(name.clone());
        name
    }

    /// What a callee path (as a `Call` op of the program names it) refers to.
    fn origin(&self, callee: &str) -> Result<Origin, String> {
        if self.by_name.contains_key(callee) {
            return Ok(Origin::Made(callee.to_string()));
        }
        if let Some(&f) = self.path_fns.get(callee) {
            return Ok(self.def_or_root(f));
        }
        if let Some(&d) = self.path_derived.get(callee) {
            return Ok(Origin::Derived(d));
        }
        if let (Some(src), Some(scope)) = (&self.src, self.scope) {
            let segs: Vec<String> = callee.split("::").map(str::to_string).collect();
            let res = match (segs.first().map(String::as_str), self.root_impl) {
                (Some("Self"), Some(i)) if segs.len() == 2 => match src.impl_type(i) {
                    Some(t) => src.method(t, &segs[1]),
                    None => Res::Outside,
                },
                _ => src.resolve(scope, &segs, Ns::Value),
            };
            if let Res::Fn(f) = res {
                return Ok(self.def_or_root(f));
            }
            if let Res::Derived(d) = res {
                return Ok(Origin::Derived(d));
            }
            if let Res::Type(_) = res {
                return Err(format!("cotan cannot differentiate through `{callee}`, which is not a function"));
            }
        }
        let simple = callee.rsplit("::").next().unwrap_or(callee);
        if simple == self.root.name && (callee == simple || callee == format!("Self::{simple}")) {
            return Ok(Origin::Root);
        }
        // A method of a type parameter's trait: its derivatives are the trait's exports.
        if let Some((param, method)) = callee.split_once("::").filter(|(_, m)| !m.contains("::")) {
            if let Some(bounds) = self.type_param_bounds(param) {
                let traits: Vec<&String> = bounds.iter().filter(|b| !STD_TRAITS.contains(&b.as_str())).collect();
                // The trait's definition, when cotan reads the crate (`Some(None)`: a name that
                // is not one of its types).
                let trait_def = |t: &str| match (&self.src, self.scope) {
                    (Some(src), Some(scope)) => {
                        let segs: Vec<String> = t.split("::").map(str::to_string).collect();
                        Some(match src.resolve(scope, &segs, Ns::Type) {
                            Res::Type(d) => Some(&src.types[d]),
                            _ => None,
                        })
                    }
                    _ => None,
                };
                let declares = |t: &&&String| {
                    trait_def(t).is_none_or(|d| d.is_some_and(|d| d.methods.iter().any(|m| m == method)))
                };
                let marked = |t: &String| trait_def(t).is_none_or(|d| d.is_none_or(|d| d.marked));
                return match traits.iter().find(declares) {
                    // (Its derivatives are the trait's methods `marked` adds.)
                    Some(t) if !marked(t) => Err(format!("a function generic over `{param}: {t}` gets the derivatives of `{method}` from the trait, and `{t}` is not marked: mark the trait and its impls `#[cotan::differentiable]`, or take the type itself here instead of `{param}`")),
                    Some(t) => Ok(Origin::Exported(format!("<{param} as {t}>::{method}"))),
                    None => Err(format!("cotan cannot find the trait of `{param}` that declares `{method}`")),
                };
            }
        }
        // Another crate's function, or one cotan cannot read: its mark exported derivatives.
        match (&self.src, self.scope) {
            (Some(src), Some(scope)) => {
                let first = callee.split("::").next().unwrap_or_default();
                if callee.contains("::") && !src.is_local(scope, first) {
                    return external(callee);
                }
                if let Some(path) = src.import_path(scope, first).filter(|p| !src.is_local(scope, &p[0])) {
                    let rest: Vec<&str> = callee.split("::").skip(1).collect();
                    let full =
                        path.into_iter().chain(rest.into_iter().map(str::to_string)).collect::<Vec<_>>().join("::");
                    return external(&full);
                }
                Err(self.not_found(callee))
            }
            _ => Ok(Origin::Exported(callee.to_string())),
        }
    }

    /// The trait bounds of the root's type parameter `name` (`M: Model + Clone` gives
    /// `Model`, `Clone`).
    fn type_param_bounds(&self, name: &str) -> Option<Vec<String>> {
        self.root.type_params.iter().find_map(|decl| {
            let (n, bounds) = decl.split_once(':')?;
            (n.trim() == name).then(|| bounds.split('+').map(|b| b.trim().replace(' ', "")).collect())
        })
    }

    fn def_or_root(&self, f: FnId) -> Origin {
        if Some(f) == self.root_def {
            Origin::Root
        } else {
            Origin::Def(f)
        }
    }

    fn not_found(&self, callee: &str) -> String {
        let first = callee.split("::").next().unwrap_or_default();
        if self.src.is_none() {
            return format!("cotan cannot read this crate's sources here, so it cannot differentiate through `{callee}`; give `{callee}` a custom derivative (`#[cotan::custom_derivative(..)]`), or differentiate code that is in a file of the crate");
        }
        if callee.contains("::") && !["crate", "self", "super", "Self"].contains(&first) {
            return format!("cotan cannot differentiate through `{callee}`: it is not a function of this crate, so cotan cannot read its source; wrap it in a function of your own with `#[cotan::custom_derivative(forward = .., reverse = ..)]` (or `#[cotan::zero_derivative]` if its result is a constant)");
        }
        format!("cotan cannot find the function `{callee}` in this crate's sources (a function generated by a macro, or from another crate?); write it in a file of the crate, or wrap it in a function of your own with `#[cotan::custom_derivative(forward = .., reverse = ..)]` (or `#[cotan::zero_derivative]`)")
    }

    /// The callee's IR, lowered and written for the derivative's scope (once).
    fn callee(&mut self, origin: &Origin) -> Result<Rc<Callee>, String> {
        if let Some(c) = self.callees.get(origin) {
            return c.clone();
        }
        let c = self.make_callee(origin).map(|mut c| {
            // Its derivatives are functions, not methods: `self` is a parameter like the others.
            let mut func = (*c.func).clone();
            for v in func.values.iter_mut() {
                if v.name.as_deref() == Some("self") {
                    v.name = Some("this".into());
                }
            }
            c.func = Rc::new(func);
            Rc::new(c)
        });
        self.callees.insert(origin.clone(), c.clone());
        c
    }

    fn make_callee(&mut self, origin: &Origin) -> Result<Callee, String> {
        match origin {
            Origin::Made(name) => Ok(Callee {
                func: self.by_name[name].clone(),
                rule: Rule::Body,
                path: name.clone(),
                shown: made_shown(name),
                spans: vec![],
            }),
            Origin::Root => {
                let mut func = (*self.root).clone();
                if let Some(scope) = self.scope {
                    let imp = self.root_impl;
                    self.rewrite(&mut func, scope, imp)?;
                }
                let path = match (self.root_impl, &self.src) {
                    (Some(i), Some(src)) => self.method_path(src, i, &func.name)?,
                    _ => func.name.clone(),
                };
                let rule = self.root_rule.clone();
                Ok(Callee {
                    func: Rc::new(func),
                    rule,
                    path,
                    shown: format!("`{}`", self.root.name),
                    spans: self.root_spans.clone(),
                })
            }
            Origin::Def(f) => self.lower_def(*f),
            Origin::Derived(d) => self.lower_derived(*d),
            Origin::Exported(_) => unreachable!("exported callees are made per call site"),
        }
    }

    /// The derivative an autodiff attribute generates, as IR.
    fn lower_derived(&mut self, d: DerivedId) -> Result<Callee, String> {
        let src = self.src.clone().expect("derivatives come from sources");
        let dd = &src.derived[d];
        let of = self.callee(&self.def_or_root(dd.of)).map_err(|e| {
            if !e.contains("generic over a type other than its float type") {
                return e;
            }
            let primal = &src.fns[dd.of].name;
            format!("cotan cannot differentiate `{}` again: it is the derivative of `{primal}`, which is generic over a type other than its float type; for second order, put `#[cotan::hvp]` (or `#[cotan::hessian]`) on a function that takes the inputs first and the concrete model after (`fn f(x: &[f64], m: &MyModel) -> f64 {{ {primal}(m, x) }}`)", dd.name)
        })?;
        if crate::env::flat_shape(&src, dd.of).is_some() {
            // (Its callers would pass the structs whole; its IR takes them field by field.)
            let primal = &src.fns[dd.of].name;
            return Err(format!("cotan cannot differentiate `{}` again: `{primal}` takes structs (or arrays by value), which its derivatives take apart; for second order, put `#[cotan::hvp]` (or `#[cotan::hessian]`) on a function that takes the inputs first and the struct after (`fn f(x: &[f64], m: &MyModel) -> f64`), or pass the struct's numbers as separate arguments", dd.name));
        }
        let shown = format!("`{}` (the derivative of {})", dd.name, of.shown);
        let args: TokenStream =
            dd.args.parse().map_err(|_| format!("cotan cannot read the attribute of {}", of.shown))?;
        let args = crate::parse_args(dd.mode, args).map_err(|e| format!("in {shown}: {e}"))?;
        let f = &of.func;
        let mut acts: Vec<cotan_ad::Activity> = args.acts.iter().map(|a| a.0).collect();
        let has_ret = !f.returns.is_empty();
        if acts.len() != f.params.len() + usize::from(has_ret) {
            return Err(format!("{shown} has the wrong number of activities"));
        }
        let ret = if has_ret { acts.pop() } else { None };
        if args.width > 1 {
            return Err(format!("cotan cannot differentiate {shown} again: it is batched (width {})", args.width));
        }
        let spec = cotan_ad::Spec { mode: dd.mode, inputs: acts, ret, width: 1 };
        cotan_ad::check(f, &spec).map_err(|e| format!("in {shown}: {}", e.message))?;
        let func = of.func.clone();
        let derived = match dd.mode {
            cotan_ad::Mode::Forward => cotan_ad::forward(&func, &spec, &dd.name, self),
            cotan_ad::Mode::Reverse => cotan_ad::reverse(&func, &spec, &dd.name, self),
        }
        .map_err(|e| in_callee_at(&of.shown, of.spans.get(e.span.0 as usize), &e.message))?;
        check(&derived)?;
        let mut derived = derived;
        cotan_ir::simplify::cse(&mut derived);
        cotan_ir::dead_stores::dead_stores(&mut derived);
        let path = match src.fns[dd.of].imp {
            Some(i) => self.method_path(&src, i, &dd.name)?,
            None => src
                .path_to(self.scope.expect("sources"), src.fns[dd.of].module, &dd.name)
                .ok_or_else(|| format!("cotan cannot name {shown} from here"))?,
        };
        Ok(Callee { func: Rc::new(derived), rule: Rule::Body, path, shown, spans: vec![] })
    }

    fn lower_def(&mut self, f: FnId) -> Result<Callee, String> {
        let src = self.src.clone().expect("definitions come from sources");
        let def = &src.fns[f];
        let shown = format!("`{}` ({})", def.name, src.location(f));
        let path = self.fn_path(&src, f)?;
        let rule = with_fallback(|| rule_of(&def.item.attrs));
        let item = with_fallback(|| crate::constants::substitute(&def.item, &src, def.scope, def.imp))
            .map_err(|e| in_callee(&shown, &e.span(), &e.to_string()))?;
        let mut assumed = vec![];
        let (mut func, spans) = match rule {
            Rule::Body => {
                let env = std::rc::Rc::new(crate::env::SourceEnv::new(src.clone(), def.scope, def.imp));
                let lowered = with_fallback(|| cotan_syntax::lower_fn_in(&item.sig, &item.block, env, true))
                    .map_err(|e| in_callee(&shown, &e.span(), &e.to_string()))?;
                let mut func = lowered.func;
                func.par_loops.clear();
                if self.literals_by_callees {
                    let (scope, imp) = (def.scope, def.imp);
                    crate::tools::type_literals_by_callees(&mut func, &mut |p| {
                        crate::tools::callee_signature(&src, scope, imp, p)
                    });
                }
                if !func.type_params.is_empty() {
                    return Err(format!("cotan cannot yet differentiate calls of {shown}, which is generic over a type other than its float type; make it take the concrete type, or mark a trait it calls through `#[cotan::differentiable]` and call it from the function with the attribute"));
                }
                cotan_ir::simplify::cse(&mut func);
                assumed = lowered.assumed_int.into_iter().map(|(p, _)| p).collect();
                (func, lowered.spans)
            }
            _ => {
                let func = with_fallback(|| cotan_syntax::lower_signature(&item.sig))
                    .map_err(|e| in_callee(&shown, &e.span(), &e.to_string()))?;
                (func, vec![])
            }
        };
        self.rewrite(&mut func, def.module, def.imp).map_err(|e| format!("in {shown}: {e}"))?;
        let rule = match rule {
            Rule::Custom { forward, reverse } => {
                let mut find = |p: Option<String>| -> Result<Option<String>, String> {
                    let Some(p) = p else { return Ok(None) };
                    let segs: Vec<String> = p.split("::").map(str::to_string).collect();
                    match src.resolve(def.module, &segs, Ns::Value) {
                        Res::Fn(g) => Ok(Some(self.fn_path(&src, g)?)),
                        _ => Err(format!("cotan cannot find `{p}`, the rule of {shown}, in this crate's sources")),
                    }
                };
                Rule::Custom { forward: find(forward)?, reverse: find(reverse)? }
            }
            r => r,
        };
        let func = Rc::new(func);
        if !assumed.is_empty() {
            self.assumed_int.push((func.clone(), assumed));
        }
        Ok(Callee { func, rule, path, shown, spans })
    }

    /// The path that reaches function `f` from the derivative's scope.
    fn fn_path(&mut self, src: &Sources, f: FnId) -> Result<String, String> {
        let def = &src.fns[f];
        let scope = self.scope.expect("definitions come from sources");
        let path = match def.imp {
            Some(i) => self.method_path(src, i, &def.name)?,
            None => src.path_to(scope, def.module, &def.name).ok_or_else(|| {
                format!("cotan cannot name `{}` from here: it is declared inside another function", def.name)
            })?,
        };
        self.path_fns.insert(path.clone(), f);
        Ok(path)
    }

    /// `Type::name`, or `<Type as Trait>::name` for a method of a trait impl.
    fn method_path(&self, src: &Sources, i: ImplId, name: &str) -> Result<String, String> {
        let scope = self.scope.expect("methods come from sources");
        let imp = &src.impls[i];
        let ty = src.impl_type(i).filter(|_| !imp.generic).and_then(|t| src.type_path(scope, t)).ok_or_else(|| {
            let shown = with_fallback(|| quote::ToTokens::to_token_stream(&imp.self_ty).to_string());
            format!("cotan cannot name the type of `impl {shown}` from here (generic, or not a type of this crate)")
        })?;
        match imp.trait_path.as_ref() {
            None => Ok(format!("{ty}::{name}")),
            Some(tp) => {
                let shown = with_fallback(|| quote::ToTokens::to_token_stream(tp).to_string().replace(' ', ""));
                let tr = src
                    .impl_trait(i)
                    .and_then(|t| src.type_path(scope, t))
                    .or_else(|| {
                        let self_name = match &imp.self_ty {
                            syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default(),
                            _ => String::new(),
                        };
                        // A struct of the crate as the operator's argument (`impl Mul<V2> for
                        // M2`), as the derivative's scope names it.
                        let name_type = |p: &syn::Path| src.type_path(scope, src.type_at(imp.module, p)?);
                        std_trait_path(tp, &self_name, &ty, &name_type)
                    })
                    .ok_or_else(|| format!("cotan cannot name the trait `{shown}` from here (it names the crate's traits, std's prelude traits, and std's operators whose argument is a number type or `Self`); call the method through a function of your own"))?;
                Ok(format!("<{ty} as {tr}>::{name}"))
            }
        }
    }

    /// Rewrites the paths of a callee's IR (calls and struct types), which are written
    /// for scope `module` (and `impl` block `imp`), for the derivative's scope.
    fn rewrite(&mut self, f: &mut Function, module: ModId, imp: Option<ImplId>) -> Result<(), String> {
        let src = self.src.clone().expect("rewriting needs sources");
        let self_ty = imp.and_then(|i| src.impl_type(i));
        let mut calls = vec![];
        f.walk(&mut |op| {
            if let OpKind::Call { callee, .. } = &op.kind {
                calls.push(callee.clone());
            }
        });
        let mut map: HashMap<String, String> = HashMap::default();
        for callee in calls {
            if map.contains_key(&callee) {
                continue;
            }
            let segs: Vec<String> = callee.split("::").map(str::to_string).collect();
            let res = match (segs.as_slice(), self_ty) {
                ([s, m], Some(t)) if s == "Self" => src.method(t, m),
                _ => src.resolve(module, &segs, Ns::Value),
            };
            match res {
                Res::Fn(g) if crate::env::flat_shape(&src, g).is_some() => {
                    let name = self.flat_copy(g)?;
                    map.insert(callee, name);
                }
                Res::Fn(g) => {
                    let p = self.fn_path(&src, g)?;
                    map.insert(callee, p);
                }
                Res::Derived(d) => {
                    let c = self.callee(&Origin::Derived(d))?;
                    self.path_derived.insert(c.path.clone(), d);
                    map.insert(callee, c.path.clone());
                }
                _ => {}
            }
        }
        f.body.walk_mut(&mut |op| {
            if let OpKind::Call { callee, .. } = &mut op.kind {
                if let Some(p) = map.get(callee.as_str()) {
                    *callee = p.clone();
                }
            }
        });
        let scope = self.scope.expect("rewriting needs a scope");
        for r in f.records.iter_mut() {
            *r = rewrite_type(&src, r, module, scope, self_ty)?;
        }
        Ok(())
    }

    /// The gradient of a function's generated code: checks that everything it names is
    /// visible from the derivative's scope.
    pub(crate) fn check_visibility(&self) -> Result<(), String> {
        let (Some(src), Some(scope)) = (&self.src, self.scope) else { return Ok(()) };
        // The structs of the crate by the paths generated code names them with.
        let types: HashMap<String, &crate::sources::TypeDef> =
            (0..src.types.len()).filter_map(|t| Some((src.type_path(scope, t)?, &src.types[t]))).collect();
        let private = |what: String| {
            format!(
                "the derivative, generated here, reads {what}, which is private to its module; make it `pub(crate)`"
            )
        };
        // (The function with the attribute too: it reads the fields of structs it passes
        // field by field.)
        for g in self.made.iter().chain(std::iter::once(&*self.root)) {
            let mut bad = None;
            g.walk(&mut |op| {
                if bad.is_some() {
                    return;
                }
                match &op.kind {
                    OpKind::Call { callee, .. } => {
                        if let Some(&f) = self.path_fns.get(callee) {
                            if !src.visible(scope, &src.fns[f].vis) {
                                bad = Some(format!(
                                    "the derivative, generated here, calls `{}` ({}), which is private to its module; make it `pub(crate)`",
                                    src.fns[f].name,
                                    src.location(f)
                                ));
                            }
                        }
                    }
                    OpKind::Field { base, name } => {
                        let Some(cotan_ir::MemKind::Record(r)) = g.ty(*base).mem().map(|m| m.kind) else { return };
                        let Some(t) = types.get(&g.records[r as usize]) else { return };
                        if !src.visible(scope, &t.vis) {
                            bad = Some(private(format!("the struct `{}`", t.name)));
                        } else if let Some((_, v)) = t.fields.iter().find(|(n, _)| n == name) {
                            if !src.visible(scope, v) {
                                bad = Some(private(format!("the field `{name}` of `{}`", t.name)));
                            }
                        }
                    }
                    _ => {}
                }
            });
            if let Some(message) = bad {
                return Err(message);
            }
        }
        Ok(())
    }

    fn variant_name(&mut self, origin: &Origin, kind: &str, site: &CallSite, func: &Function) -> String {
        let base = match origin {
            Origin::Root => self.root.name.clone(),
            Origin::Made(n) => n.clone(),
            Origin::Derived(d) => self.src.as_ref().unwrap().derived[*d].name.clone(),
            Origin::Exported(p) => p.rsplit("::").next().unwrap_or(p).trim_start_matches('<').to_string(),
            Origin::Def(f) => {
                let src = self.src.as_ref().unwrap();
                let def = &src.fns[*f];
                match def.imp.and_then(|i| src.impl_type(i)) {
                    Some(t) => format!("{}_{}", src.types[t].name, def.name),
                    None => def.name.clone(),
                }
            }
        };
        let pattern: String = func
            .params
            .iter()
            .zip(&site.active)
            .filter(|(p, _)| func.ty(**p).carries_derivative())
            .map(|(_, a)| if *a { 'd' } else { 'c' })
            .collect();
        let width = match site.need {
            Need::Forward { width } if width > 1 => width.to_string(),
            _ => String::new(),
        };
        self.fresh(&format!("{base}__{kind}{width}_{pattern}"))
    }

    /// Points the calls of `f` (the function with the attribute, as lowered in its own
    /// scope) at the copies of functions that take structs of numbers field by field, as
    /// the calls of every function the program lowers are. A failure is at the call's span.
    pub(crate) fn redirect_flat(&mut self, f: &mut Function) -> Result<(), (cotan_ir::SpanId, String)> {
        let (Some(src), Some(scope)) = (self.src.clone(), self.scope) else { return Ok(()) };
        let self_ty = self.root_impl.and_then(|i| src.impl_type(i));
        let mut calls = vec![];
        f.walk(&mut |op| {
            if let OpKind::Call { callee, .. } = &op.kind {
                calls.push((callee.clone(), op.span));
            }
        });
        let mut map: HashMap<String, String> = HashMap::default();
        for (callee, span) in calls {
            if map.contains_key(&callee) {
                continue;
            }
            let segs: Vec<String> = callee.split("::").map(str::to_string).collect();
            let res = match (segs.as_slice(), self_ty) {
                ([s, m], Some(t)) if s == "Self" => src.method(t, m),
                _ => src.resolve(scope, &segs, Ns::Value),
            };
            if let Res::Fn(g) = res {
                if crate::env::flat_shape(&src, g).is_some() {
                    let name = self.flat_copy(g).map_err(|e| (span, e))?;
                    map.insert(callee, name);
                }
            }
        }
        if map.is_empty() {
            return Ok(());
        }
        f.body.walk_mut(&mut |op| {
            if let OpKind::Call { callee, .. } = &mut op.kind {
                if let Some(p) = map.get(callee.as_str()) {
                    *callee = p.clone();
                }
            }
        });
        self.root = Rc::new(f.clone());
        Ok(())
    }

    /// Function `g` takes or returns structs of numbers field by field (see `env.rs`), so
    /// that its own signature is not the one its callers use: they call a copy of it that
    /// the program makes (and differentiates like any function of the crate).
    fn flat_copy(&mut self, g: FnId) -> Result<String, String> {
        if let Some(name) = self.flat_copies.get(&g) {
            return Ok(name.clone());
        }
        let src = self.src.clone().expect("copies are of functions of the sources");
        let name = self.fresh(&format!("{}_by_fields", src.fns[g].name));
        // Named before it is lowered: it may call itself.
        self.flat_copies.insert(g, name.clone());
        let c = self.callee(&Origin::Def(g))?;
        let mut f = (*c.func).clone();
        f.name = name.clone();
        self.add(f)?;
        Ok(name)
    }

    fn add(&mut self, mut f: Function) -> Result<(), String> {
        // A function of the root's type parameters (a derivative of a trait method called on
        // one) is generic over them too.
        if f.type_params.is_empty() && !self.root.type_params.is_empty() {
            let mut names: Vec<String> = f.records.clone();
            f.walk(&mut |op| {
                if let OpKind::Call { callee, .. } = &op.kind {
                    names.push(callee.clone());
                }
            });
            f.type_params = self
                .root
                .type_params
                .iter()
                .filter(|decl| {
                    let n = decl.split(':').next().unwrap_or_default().trim();
                    names.iter().any(|t| mentions(t, n))
                })
                .cloned()
                .collect();
        }
        check(&f)?;
        cotan_ir::simplify::cse(&mut f);
        cotan_ir::dead_stores::dead_stores(&mut f);
        check(&f)?;
        self.by_name.insert(f.name.clone(), Rc::new(f.clone()));
        self.made.push(f);
        Ok(())
    }

    fn generate(&mut self, origin: &Origin, site: &CallSite) -> Result<Made, String> {
        let callee = match origin {
            Origin::Exported(path) => {
                self.exported.insert(path.clone());
                Rc::new(exported_callee(path, site))
            }
            o => self.callee(o)?,
        };
        let func = callee.func.clone();
        if site.active.len() != func.params.len() {
            return Err(format!(
                "{} takes {} argument(s), but the call passes {}",
                callee.shown,
                func.params.len(),
                site.active.len()
            ));
        }
        let spec = site.spec(&func);
        let wrap = |e: cotan_ad::AdError| in_callee_at(&callee.shown, callee.spans.get(e.span.0 as usize), &e.message);
        match site.need {
            Need::Forward { .. } => {
                let name = self.variant_name(origin, "fwd", site, &func);
                let made = Made::Forward(name.clone());
                self.keys.insert(key(origin, site), Ok(made.clone()));
                let g = match &callee.rule {
                    Rule::Body => cotan_ad::forward(&func, &spec, &name, self).map_err(wrap)?,
                    _ => crate::custom::forward(&callee, site, &name, self)?,
                };
                self.add(g)?;
                Ok(made)
            }
            Need::Augmented | Need::Reverse => {
                let aug = self.variant_name(origin, "aug", site, &func);
                let rev = self.variant_name(origin, "rev", site, &func);
                let made = Made::Split { aug: aug.clone(), rev: rev.clone() };
                self.keys.insert(key(origin, site), Ok(made.clone()));
                let (a, r) = match &callee.rule {
                    Rule::Body => {
                        cotan_ad::reverse_split(&func, &spec, &site.avail, (&aug, &rev), self).map_err(wrap)?
                    }
                    _ => crate::custom::split(&callee, site, (&aug, &rev), self)?,
                };
                self.add(a)?;
                self.add(r)?;
                Ok(made)
            }
        }
    }
}

fn key(origin: &Origin, site: &CallSite) -> Key {
    let need = match site.need {
        Need::Reverse => Need::Augmented,
        n => n,
    };
    (origin.clone(), need, site.active.clone(), site.avail.clone(), site.ret_active)
}

impl Linker for Program {
    fn link(&mut self, site: &CallSite, _span: SpanId) -> Result<String, String> {
        let origin = self.origin(&site.callee)?;
        let k = key(&origin, site);
        let made = match self.keys.get(&k) {
            Some(m) => m.clone(),
            None => {
                self.depth += 1;
                let m = self.generate(&origin, site);
                self.depth -= 1;
                if m.is_err() {
                    self.keys.insert(k, m.clone());
                }
                m
            }
        }?;
        Ok(match (made, site.need) {
            (Made::Forward(n), _) => n,
            (Made::Split { aug, .. }, Need::Augmented) => aug,
            (Made::Split { rev, .. }, _) => rev,
        })
    }
}

/// A function named `name` with `inner`'s signature that calls `inner`.
pub(crate) fn forwarding(inner: &Function, name: &str) -> Function {
    let mut f = Function::new(name);
    f.records = inner.records.clone();
    f.generic_float = inner.generic_float.clone();
    f.type_params = inner.type_params.clone();
    f.tape_param = inner.tape_param;
    let params: Vec<(cotan_ir::Value, bool)> = inner
        .params
        .iter()
        .map(|&p| {
            let v = f.add_param(inner.ty(p), inner.value(p).name.clone().unwrap_or_default(), SpanId::NONE);
            (v, inner.ty(p).mem().is_some_and(|m| m.access == cotan_ir::Access::Mut))
        })
        .collect();
    let mut b = cotan_ir::Builder::new(&mut f);
    let outs: Vec<cotan_ir::Var> = inner
        .returns
        .iter()
        .map(|t| {
            let s = t.scalar().expect("derivatives return numbers");
            let var = b.func.new_var(s, "r");
            let z = b.op(
                OpKind::Const(if s.is_float() { cotan_ir::Const::Float(0.0) } else { cotan_ir::Const::Int(0) }),
                *t,
            );
            b.effect(OpKind::DeclVar { var, init: z });
            var
        })
        .collect();
    b.effect(OpKind::Call { callee: inner.name.clone(), args: params, outs: outs.clone(), tape: inner.tape_param });
    let vals: Vec<cotan_ir::Value> =
        outs.iter().zip(&inner.returns).map(|(v, t)| b.op(OpKind::GetVar(*v), *t)).collect();
    if !vals.is_empty() {
        b.effect(OpKind::Return(vals));
    }
    f.body = b.finish();
    f.returns = inner.returns.clone();
    f
}

/// A function of another crate: differentiated through its exports if its mark made them
/// (checked in its source when cotan can find it), else an error naming it.
fn external(path: &str) -> Result<Origin, String> {
    let segs: Vec<String> = path.trim_start_matches("::").split("::").map(str::to_string).collect();
    let krate = segs[0].as_str();
    let wrap = "wrap it in a function of your own with `#[cotan::custom_derivative(forward = .., reverse = ..)]` (or `#[cotan::zero_derivative]` if its result is a constant)";
    if ["std", "core", "alloc"].contains(&krate) {
        return Err(format!("cotan cannot differentiate through `{path}`, which is in the standard library: write it with the operations cotan supports, or {wrap}"));
    }
    if let Some(dep) = crate::sources::dependency(krate) {
        if let Res::Fn(f) = dep.resolve(0, &segs[1..], Ns::Value) {
            if !dep.exports(f) {
                return Err(format!(
                    "cotan cannot differentiate through `{path}` ({}): cotan differentiates another crate's functions through the derivatives they export, and `{krate}` does not mark it; mark it `#[cotan::differentiable]` in `{krate}`, or {wrap}",
                    dep.location(f)
                ));
            }
        }
    }
    Ok(Origin::Exported(path.to_string()))
}

/// A callee known only by the call: its signature is the call's.
fn exported_callee(path: &str, site: &CallSite) -> Callee {
    let mut f = Function::new(path.rsplit("::").next().unwrap_or(path));
    for (k, &t) in site.arg_tys.iter().enumerate() {
        f.add_param(t, format!("a{k}"), SpanId::NONE);
    }
    f.returns = site.ret_tys.clone();
    f.records = site.records.clone();
    f.tape_param = site.tape;
    Callee {
        func: Rc::new(f),
        rule: Rule::Exported(path.to_string()),
        path: path.to_string(),
        shown: format!("`{path}`"),
        spans: vec![],
    }
}

/// Traits of the standard library that bound type parameters without giving methods cotan
/// calls.
const STD_TRAITS: [&str; 8] = ["Clone", "Copy", "Debug", "Default", "Send", "Sync", "Sized", "PartialEq"];

/// Whether a path or type's text names the identifier `name`.
fn mentions(text: &str, name: &str) -> bool {
    text.split(|c: char| !c.is_alphanumeric() && c != '_').any(|w| w == name)
}

/// The IR verifier's verdict, as an internal error.
fn check(f: &Function) -> Result<(), String> {
    cotan_ir::verify(f).map_err(|errs| {
        format!(
            "internal error in cotan (a derivative of a called function is invalid IR: {}); please report this with the function",
            errs.first().map(|e| e.to_string()).unwrap_or_default()
        )
    })
}

/// An error in a callee, with where it is (its spans are from the file, not the compiler).
fn in_callee(shown: &str, span: &Span, message: &str) -> String {
    let at = span.start();
    if at.line == 0 {
        format!("in {shown}: {message}")
    } else {
        format!("in {shown}, line {}, column {}: {message}", at.line, at.column + 1)
    }
}

/// An error in a callee at a span of its own, if it has one (functions cotan made have
/// none: the error's place is the call).
fn in_callee_at(shown: &str, span: Option<&Span>, message: &str) -> String {
    match span {
        Some(span) => in_callee(shown, span, message),
        None => format!("in {shown}: {message}"),
    }
}

/// How a function cotan made (`cube__rev_d`) is named in messages: after the function it
/// was made from, never by its generated name.
fn made_shown(name: &str) -> String {
    let of = name.split("__").next().unwrap_or(name);
    format!("the derivative of `{of}`")
}

/// How a function's own cotan attributes say it is differentiated.
fn rule_of(attrs: &[syn::Attribute]) -> Rule {
    for a in attrs {
        match crate::attr_name(a).as_str() {
            "zero_derivative" => return Rule::Zero,
            "custom_derivative" => {
                let (mut forward, mut reverse) = (None, None);
                let _ = a.parse_nested_meta(|m| {
                    let v: syn::Path = m.value()?.parse()?;
                    let v = quote::ToTokens::to_token_stream(&v).to_string().replace(' ', "");
                    if m.path.is_ident("forward") {
                        forward = Some(v);
                    } else if m.path.is_ident("reverse") {
                        reverse = Some(v);
                    }
                    Ok(())
                });
                return Rule::Custom { forward, reverse };
            }
            _ => {}
        }
    }
    Rule::Body
}

/// A struct type's text (`Params`, `Self`, `(f64, model::State)`) written for `scope`.
fn rewrite_type(
    src: &Sources,
    text: &str,
    module: ModId,
    scope: ModId,
    self_ty: Option<crate::sources::TypeId>,
) -> Result<String, String> {
    with_fallback(|| rewrite_type_in(src, text, module, scope, self_ty))
}

fn rewrite_type_in(
    src: &Sources,
    text: &str,
    module: ModId,
    scope: ModId,
    self_ty: Option<crate::sources::TypeId>,
) -> Result<String, String> {
    let Ok(mut ty) = syn::parse_str::<syn::Type>(text) else { return Ok(text.to_string()) };
    struct Paths<'a> {
        src: &'a Sources,
        module: ModId,
        scope: ModId,
        self_ty: Option<crate::sources::TypeId>,
        err: Option<String>,
    }
    impl syn::visit_mut::VisitMut for Paths<'_> {
        fn visit_type_path_mut(&mut self, tp: &mut syn::TypePath) {
            syn::visit_mut::visit_type_path_mut(self, tp);
            if tp.qself.is_some() {
                return;
            }
            let segs: Vec<String> = tp.path.segments.iter().map(|s| s.ident.to_string()).collect();
            let t = match (segs.as_slice(), self.self_ty) {
                ([s], Some(t)) if s == "Self" => Some(t),
                _ => match self.src.resolve(self.module, &segs, Ns::Type) {
                    Res::Type(t) => Some(t),
                    _ => None,
                },
            };
            let Some(t) = t else { return };
            match self.src.type_path(self.scope, t) {
                Some(p) => {
                    let args = tp.path.segments.last().map(|s| s.arguments.clone());
                    if let Ok(mut np) = syn::parse_str::<syn::Path>(&p) {
                        if let (Some(a), Some(last)) = (args, np.segments.last_mut()) {
                            last.arguments = a;
                        }
                        tp.path = np;
                    }
                }
                None => self.err = Some(format!("cotan cannot name the type `{}` from here", segs.join("::"))),
            }
        }
    }
    let mut v = Paths { src, module, scope, self_ty, err: None };
    syn::visit_mut::VisitMut::visit_type_mut(&mut v, &mut ty);
    if let Some(e) = v.err {
        return Err(e);
    }
    let text = quote::ToTokens::to_token_stream(&ty).to_string();
    Ok(text
        .replace(" :: ", "::")
        .replace(":: ", "::")
        .replace(" < ", "<")
        .replace(" >", ">")
        .replace(" ,", ",")
        .replace("< ", "<"))
}

/// A trait of the standard library that an `impl` names and any module can name too: one
/// of the prelude's (`Default`, `Clone`, `From`, ...) or a path from `std`, `core` or
/// `alloc`.
/// std's operator traits, which a crate implements for its own structs.
const OPERATORS: [&str; 11] =
    ["Add", "Sub", "Mul", "Div", "Rem", "Neg", "AddAssign", "SubAssign", "MulAssign", "DivAssign", "RemAssign"];

/// std's trait `tp` as the derivative's scope names it, for an impl of it for type `ty` (as
/// named there; `self_name` as the impl names it); `name_type` names the crate's other
/// types there.
fn std_trait_path(
    tp: &syn::Path,
    self_name: &str,
    ty: &str,
    name_type: &dyn Fn(&syn::Path) -> Option<String>,
) -> Option<String> {
    const PRELUDE: [&str; 16] = [
        "Default",
        "Clone",
        "Copy",
        "PartialEq",
        "PartialOrd",
        "Eq",
        "Ord",
        "From",
        "Into",
        "TryFrom",
        "TryInto",
        "AsRef",
        "AsMut",
        "Iterator",
        "IntoIterator",
        "ToOwned",
    ];
    let segs: Vec<String> = tp.segments.iter().map(|s| s.ident.to_string()).collect();
    let operator = match segs.as_slice() {
        [op] => Some(op),
        [root, ops, op] if matches!(root.as_str(), "std" | "core") && ops == "ops" => Some(op),
        _ => None,
    };
    if let Some(op) = operator.filter(|op| OPERATORS.contains(&op.as_str())) {
        // `impl Mul<f64> for V3` (with `use std::ops::Mul;`, or `std::ops::Mul<f64>`): std's
        // trait, with its argument, if that is a number type or the type itself.
        let args = match &tp.segments.last()?.arguments {
            syn::PathArguments::None => String::new(),
            syn::PathArguments::AngleBracketed(a) => match a.args.iter().collect::<Vec<_>>().as_slice() {
                [syn::GenericArgument::Type(t)] if cotan_syntax::scalar_type(t).is_some() => {
                    format!("<{}>", with_fallback(|| quote::ToTokens::to_token_stream(t).to_string()))
                }
                [syn::GenericArgument::Type(syn::Type::Path(t))]
                    if t.qself.is_none() && (t.path.is_ident("Self") || t.path.is_ident(self_name)) =>
                {
                    format!("<{ty}>")
                }
                [syn::GenericArgument::Type(syn::Type::Path(t))] if t.qself.is_none() => {
                    format!("<{}>", name_type(&t.path)?)
                }
                _ => return None,
            },
            syn::PathArguments::Parenthesized(_) => return None,
        };
        return Some(format!("::core::ops::{op}{args}"));
    }
    let plain = tp.segments.iter().all(|s| s.arguments.is_none());
    match segs.as_slice() {
        [one] if plain && PRELUDE.contains(&one.as_str()) => Some(one.clone()),
        [root, ..] if plain && matches!(root.as_str(), "std" | "core" | "alloc") => {
            Some(format!("::{}", segs.join("::")))
        }
        _ => None,
    }
}
