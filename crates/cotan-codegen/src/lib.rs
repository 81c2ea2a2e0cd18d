//! cotan's code generator: IR back to Rust tokens.
//!
//! The output should read like code a person wrote: single-use temporaries are folded
//! into the expression that uses them, `x = x + y` is written `x += y`, loops stay loops,
//! and names come from the user's own variables.

mod bulk;
mod generic;
mod par;
mod pointers;
mod rows;
mod sums;
pub mod wgsl;

use cotan_ir::{HashMap, HashSet, IdMap, IdSet};

use cotan_ir::{
    Access, BinOp, CmpOp, Const, Function, MemKind, MemTy, Op, OpKind, Region, Scalar, Ty, UnOp, Value, Var,
};
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};

/// Rust precedence levels, lowest first, enough to decide where parentheses go.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Prec {
    /// `if .. { } else { }` and blocks: an operand needs parentheses, or at the start of a
    /// statement Rust would end the statement after the block.
    Block,
    Cmp,
    BitOr,
    BitXor,
    BitAnd,
    Shift,
    Add,
    Mul,
    Cast,
    Unary,
    Atom,
}

/// Emits `f` as a Rust function item. `vis` is placed before `fn`.
pub fn emit_fn(f: &Function, vis: TokenStream) -> TokenStream {
    emit_fn_spanned(f, vis, &[], quote!(::cotan))
}

/// Like `emit_fn`, with the source spans of the IR's span ids, so that an error about a
/// call in the generated code (a callee that is not differentiable) points at the call.
/// `krate` is the path of the `cotan` crate in the user's crate, whose runtime the code uses.
pub fn emit_fn_spanned(f: &Function, vis: TokenStream, spans: &[Span], krate: TokenStream) -> TokenStream {
    emit_fn_nested(f, vis, spans, krate, TokenStream::new())
}

/// Like `emit_fn_spanned`, with `nested` (the functions it calls, and checks) as statements
/// at the start of its body, where only it sees them.
pub fn emit_fn_nested(
    f: &Function,
    vis: TokenStream,
    spans: &[Span],
    krate: TokenStream,
    nested: TokenStream,
) -> TokenStream {
    let mut f = f.clone();
    cotan_ir::simplify::dead_code(&mut f);
    let mut g = Gen::new(&f);
    g.spans = spans.to_vec();
    g.krate = krate.clone();
    let name = format_ident!("{}", f.name);
    let mut params: Vec<TokenStream> = f
        .params
        .iter()
        .map(|&p| {
            let n = g.name(p);
            let t = param_ty_tokens(&f, f.ty(p));
            quote!(#n: #t)
        })
        .collect();
    if f.tape_param {
        params.push(quote!(__cotan_tape: &mut #krate::rt::Tape));
    }
    let ret = ret_tokens(&f);
    let mut body = g.region(&f.body, true);
    // (Nested `unsafe` blocks, or one in an `unsafe fn`, are fine.)
    let unsafe_allowed = if g.wrapped.get() { quote!(#[allow(unused_unsafe)]) } else { quote!() };
    if g.owns_tape() {
        let release = if f.returns.is_empty() { quote!(__cotan_tape.release();) } else { quote!() };
        body = quote! {
            let mut __cotan_tape = #krate::rt::Tape::acquire();
            #body
            #release
        };
    }
    let generics = generics_tokens(&f, &krate);
    let head = quote! {
        #[allow(unused, non_snake_case, clippy::all, clippy::pedantic, clippy::nursery)]
        #unsafe_allowed
        #vis fn #name #generics(#(#params),*) #ret
    };
    // The generic rewriting is the outer function's only: `nested` goes in after it.
    let (head, body) = match &f.generic_float {
        Some(t) => {
            let t = format_ident!("{}", t);
            (generic::generic_tokens(head, &t), generic::generic_tokens(body, &t))
        }
        None => (head, body),
    };
    quote! {
        #head {
            #nested
            #body
        }
    }
}

/// `-> T`, `-> (T, U)` or nothing.
fn ret_tokens(f: &Function) -> TokenStream {
    match f.returns.as_slice() {
        [] => quote!(),
        [t] => {
            let t = ty_tokens(*t);
            quote!(-> #t)
        }
        ts => {
            let ts = ts.iter().map(|t| ty_tokens(*t));
            quote!(-> (#(#ts),*))
        }
    }
}

/// `<T: cotan::Real, M: Model>` for a function generic over its float type or other types
/// (also the generics of a function that wraps derivative `f`: batched or tuple results).
pub fn generics_tokens(f: &Function, krate: &TokenStream) -> TokenStream {
    let mut type_params: Vec<TokenStream> = vec![];
    if let Some(t) = &f.generic_float {
        let t = format_ident!("{}", t);
        type_params.push(quote!(#t: #krate::Real));
    }
    for t in &f.type_params {
        type_params.push(t.parse().expect("cotan codegen: a type parameter"));
    }
    if type_params.is_empty() {
        quote!()
    } else {
        quote!(<#(#type_params),*>)
    }
}

/// The head of a function that wraps derivative `f`, written with `f64`: in generic float
/// code, with the float type in place of `f64`, as `f`'s own head is written.
pub fn wrapper_head(f: &Function, head: TokenStream) -> TokenStream {
    match &f.generic_float {
        Some(t) => generic::generic_tokens(head, &format_ident!("{}", t)),
        None => head,
    }
}

/// `fn NAME<..>(params) -> ret` of `f`, for a declaration (parameters by their names, a
/// receiver named `self` as `this`).
pub fn signature_tokens(f: &Function, krate: &TokenStream) -> TokenStream {
    let name = format_ident!("{}", f.name);
    let mut taken = HashSet::default();
    let mut params: Vec<TokenStream> = f
        .params
        .iter()
        .enumerate()
        .map(|(k, &p)| {
            let mut n = match f.value(p).name.as_deref() {
                Some("self") | None | Some("") => {
                    if k == 0 {
                        "this".to_string()
                    } else {
                        format!("arg{k}")
                    }
                }
                Some(n) => n.to_string(),
            };
            while !taken.insert(n.clone()) {
                n.push('_');
            }
            let n = format_ident!("{}", n);
            let t = param_ty_tokens(f, f.ty(p));
            quote!(#n: #t)
        })
        .collect();
    if f.tape_param {
        params.push(quote!(__cotan_tape: &mut #krate::rt::Tape));
    }
    let generics = generics_tokens(f, krate);
    let ret = ret_tokens(f);
    quote!(fn #name #generics(#(#params),*) #ret)
}

/// `fn NAME(params) -> R { TARGET(params) without the first result }`, with the parameters
/// of derivative `f`, which is named `target` and returns the value first: `ActiveOnly` and
/// `DualOnly` beside `Active` and `Dual`. `f` takes no receiver and has no type parameters.
pub fn emit_without_value(f: &Function, name: &Ident, vis: TokenStream, target: &str) -> TokenStream {
    // (A parameter named like the function it calls would hide it.)
    let mut taken: HashSet<String> = [target.to_string()].into_iter().collect();
    let (names, params): (Vec<Ident>, Vec<TokenStream>) = f
        .params
        .iter()
        .enumerate()
        .map(|(k, &p)| {
            let base = f.value(p).name.clone().filter(|n| !n.is_empty()).unwrap_or_else(|| format!("arg{k}"));
            let (mut n, mut j) = (base.clone(), 1);
            while is_keyword(&n) || !taken.insert(n.clone()) {
                n = format!("{base}_{j}");
                j += 1;
            }
            let n = format_ident!("{}", n);
            let t = param_ty_tokens(f, f.ty(p));
            (n.clone(), quote!(#n: #t))
        })
        .unzip();
    let target = format_ident!("{}", target);
    let call = quote!(#target(#(#names),*));
    let (ret, body) = match &f.returns[..] {
        [] | [_] => (quote!(), quote!(#call;)),
        [_, t] => {
            let t = ty_tokens(*t);
            (quote!(-> #t), quote!(#call.1))
        }
        [_, ts @ ..] => {
            let tys = ts.iter().map(|t| ty_tokens(*t));
            let fields = (1..=ts.len()).map(syn::Index::from);
            (quote!(-> (#(#tys),*)), quote!(let r = #call; (#(r.#fields),*)))
        }
    };
    quote! {
        #[allow(unused, non_snake_case, clippy::all, clippy::pedantic, clippy::nursery)]
        #vis fn #name(#(#params),*) #ret {
            #body
        }
    }
}

struct Gen<'f> {
    f: &'f Function,
    names: IdMap<Value, Ident>,
    var_names: IdMap<Var, Ident>,
    inline: IdSet<Value>,
    def: IdMap<Value, &'f Op>,
    used: IdSet<Value>,
    /// The function uses a tape: its own, or its caller's (`tape_param`).
    tape: bool,
    spans: Vec<Span>,
    /// The path of the `cotan` crate.
    krate: TokenStream,
    /// Buffers moved into nested memory as its rows.
    moved: IdSet<Value>,
    /// Memory whose use goes through a raw pointer (see `pointers.rs`).
    unsafe_mem: IdSet<Value>,
    /// The code being written goes through a raw pointer: it goes in an `unsafe` block.
    touched: std::cell::Cell<bool>,
    /// Some code was written in an `unsafe` block.
    wrapped: std::cell::Cell<bool>,
    /// Inside a parallel loop (`par.rs`): its index and the memory it writes through
    /// `ParSlice` views.
    par: std::cell::RefCell<Option<(Value, IdSet<Value>)>>,
    /// Loads and sums an atomic accumulation of a parallel loop replaces (`par.rs`).
    par_skip: std::cell::RefCell<IdSet<Value>>,
    /// Stores of a parallel loop that leave their element as it was (`par.rs`).
    par_skip_ops: std::cell::RefCell<HashSet<*const Op>>,
    /// The views of the parallel loop being written that need atomic accumulations.
    par_shared: std::cell::RefCell<IdSet<Value>>,
    /// How many operands name each value.
    uses: IdMap<Value, usize>,
    /// Accesses served by a row slice or a local (`rows.rs`): (buffer, index) → place.
    rows: std::cell::RefCell<HashMap<(Value, Value), TokenStream>>,
    /// Indices that only accesses through row slices used: not written out.
    dropped: std::cell::RefCell<IdSet<Value>>,
    /// Memory that some view, field or row is taken of.
    viewed: IdSet<Value>,
    /// Every local name in the function.
    taken: std::cell::RefCell<HashSet<String>>,
    /// Folded values written once into a local of this name instead (a loop's bounds
    /// that read memory it takes row slices of: `rows.rs`).
    bound: std::cell::RefCell<IdMap<Value, Ident>>,
}

impl<'f> Gen<'f> {
    /// The function takes a tape from the pool (and gives it back before it returns).
    fn owns_tape(&self) -> bool {
        self.tape && !self.f.tape_param
    }

    fn new(f: &'f Function) -> Gen<'f> {
        let mut g = Gen {
            f,
            names: IdMap::default(),
            var_names: IdMap::default(),
            inline: IdSet::default(),
            def: IdMap::default(),
            used: IdSet::default(),
            tape: false,
            spans: vec![],
            krate: quote!(::cotan),
            moved: IdSet::default(),
            unsafe_mem: pointers::unsafe_memory(f),
            touched: std::cell::Cell::new(false),
            wrapped: std::cell::Cell::new(false),
            par: std::cell::RefCell::new(None),
            par_skip: std::cell::RefCell::new(IdSet::default()),
            par_skip_ops: std::cell::RefCell::new(HashSet::default()),
            par_shared: std::cell::RefCell::new(IdSet::default()),
            uses: IdMap::default(),
            rows: Default::default(),
            dropped: Default::default(),
            viewed: IdSet::default(),
            taken: Default::default(),
            bound: Default::default(),
        };
        collect_defs(&f.body, &mut g.def);
        f.walk(&mut |op| {
            if matches!(op.kind, OpKind::Push(_) | OpKind::Pop | OpKind::Call { tape: true, .. }) {
                g.tape = true;
            }
            if let OpKind::Alloc { init, .. } = op.kind {
                if f.ty(init).mem().is_some() {
                    // A row moved into nested memory is not the pool's to take back.
                    g.moved.insert(init);
                }
            }
        });
        f.walk(&mut |op| {
            if let (OpKind::Alloc { .. }, Some(r)) = (&op.kind, op.result) {
                if g.pool(r).is_some() {
                    g.tape = true;
                }
            }
        });
        g.tape |= f.tape_param;
        f.walk(&mut |op| g.viewed.extend(op.kind.view_base()));
        let uses = cotan_ir::simplify::use_counts(f);
        g.used = uses.keys().collect();
        g.choose_inlines(&f.body, &uses, None);
        g.uses = uses;
        g.limit_inlined_size();
        g.assign_names();
        g
    }

    /// Decides which values are folded into their single user.
    /// `terminal` is a value used right after the region (a `while` condition).
    fn choose_inlines(&mut self, r: &'f Region, uses: &IdMap<Value, usize>, terminal: Option<Value>) {
        // Position of each op's first use of a value in this region.
        let mut user: IdMap<Value, usize> = IdMap::default();
        for (j, op) in r.ops.iter().enumerate() {
            for v in op.kind.operands() {
                user.get_or_insert_with(v, || j);
            }
        }
        if let Some(t) = terminal {
            user.insert(t, r.ops.len());
        }
        // Where an op's value is really computed: at its final (non-folded) user.
        let mut effective: Vec<usize> = (0..=r.ops.len()).collect();
        for i in (0..r.ops.len()).rev() {
            let op = &r.ops[i];
            let Some(v) = op.result else { continue };
            if let OpKind::Const(_) = op.kind {
                // Literals are written where they are used, however often.
                self.inline.insert(v);
                continue;
            }
            let Some(&j) = user.get(&v) else { continue };
            // A sub-slice is written out at each of its uses, and its bounds with it. A call
            // that lends memory `&mut` gets its other arguments computed before it: written
            // inside the call, a read of that memory (`f(&mut *x, x.len() / 2)`) would
            // borrow it while it is lent.
            let user_kind = r.ops.get(j).map(|o| &o.kind);
            let lends_mut = matches!(user_kind, Some(OpKind::Call { args, .. }) if args.iter().any(|a| a.1));
            let view = user_kind.is_some_and(|k| k.view_base().is_some());
            if uses.get(&v) != Some(&1) || view || lends_mut {
                continue;
            }
            let named = self.f.value(v).name.is_some();
            let ok = match &op.kind {
                k if k.is_pure() => !named,
                OpKind::Load { .. } | OpKind::GetVar(_) => {
                    !named
                        && r.ops[i + 1..effective[j]].iter().all(|o| {
                            o.kind.is_pure() || self.inline.contains(&o.result.unwrap_or(cotan_ir::Value(u32::MAX)))
                        })
                }
                _ => false,
            };
            if ok {
                self.inline.insert(v);
                effective[i] = effective[j];
            }
        }
        for op in &r.ops {
            if let OpKind::While { cond_region, cond, body, .. } = &op.kind {
                self.choose_inlines(cond_region, uses, Some(*cond));
                self.choose_inlines(body, uses, None);
                continue;
            }
            for sub in op.kind.regions() {
                self.choose_inlines(sub, uses, None);
            }
        }
    }

    /// Folded expressions stay short: a value whose expression would hold more than
    /// `MAX_FOLDED` ops gets a `let` of its own (long chains read better, and their tokens
    /// are not copied again at every level).
    fn limit_inlined_size(&mut self) {
        const MAX_FOLDED: usize = 12;
        let mut size: IdMap<Value, usize> = IdMap::default();
        let inline = &mut self.inline;
        self.f.walk(&mut |op| {
            let Some(r) = op.result else { return };
            if !inline.contains(&r) || matches!(op.kind, OpKind::Const(_)) {
                return;
            }
            let n = 1 + op.kind.operands().iter().map(|o| size.get(o).copied().unwrap_or(0)).sum::<usize>();
            if n > MAX_FOLDED {
                inline.remove(&r);
            } else {
                size.insert(r, n);
            }
        });
    }

    fn assign_names(&mut self) {
        // A local named like a function the code calls by its bare name would hide it.
        let mut taken: HashSet<String> = HashSet::default();
        self.f.walk(&mut |op| {
            if let OpKind::Call { callee, .. } = &op.kind {
                if !callee.contains("::") && !callee.contains('<') {
                    taken.insert(callee.clone());
                }
            }
        });
        // The next suffix to try per base name (a long function has many `t`s).
        let mut next: HashMap<String, usize> = HashMap::default();
        let mut fresh = |base: &str| -> Ident {
            let base = if base.is_empty() { "t" } else { base };
            let mut name = base.to_string();
            let k = next.entry(base.to_string()).or_insert(1);
            while taken.contains(&name) || is_keyword(&name) {
                name = format!("{base}_{k}");
                *k += 1;
            }
            taken.insert(name.clone());
            Ident::new(&name, Span::call_site())
        };
        for &p in &self.f.params {
            let n = match self.f.value(p).name.as_deref() {
                // A method's receiver, declared as `self: &Self`.
                Some("self") if p == self.f.params[0] => Ident::new("self", Span::call_site()),
                name => fresh(name.unwrap_or("arg")),
            };
            self.names.insert(p, n);
        }
        for (k, var) in self.f.vars.iter().enumerate() {
            self.var_names.insert(Var(k as u32), fresh(&var.name));
        }
        let mut order = vec![];
        self.f.walk(&mut |op| {
            order.extend(op.kind.inner_defs());
            order.extend(op.result);
        });
        for v in order {
            if !self.inline.contains(&v) {
                let n = fresh(self.f.value(v).name.as_deref().unwrap_or("t"));
                self.names.insert(v, n);
            }
        }
        *self.taken.get_mut() = taken;
    }

    fn name(&self, v: Value) -> Ident {
        self.names[&v].clone()
    }

    fn var(&self, v: Var) -> Ident {
        self.var_names[&v].clone()
    }

    /// The expression for `v`, with its precedence.
    fn expr(&self, v: Value) -> (TokenStream, Prec) {
        if let Some(n) = self.bound.borrow().get(&v) {
            return (quote!(#n), Prec::Atom);
        }
        if !self.inline.contains(&v) {
            let n = self.name(v);
            return (quote!(#n), Prec::Atom);
        }
        self.op_expr(self.def[&v])
    }

    /// `v` as an operand that needs at least precedence `min`.
    fn operand(&self, v: Value, min: Prec) -> TokenStream {
        let (ts, p) = self.expr(v);
        if p < min {
            quote!((#ts))
        } else {
            ts
        }
    }

    /// `v` as a method receiver: literals get a type suffix, compound expressions parentheses.
    fn receiver(&self, v: Value) -> TokenStream {
        if self.inline.contains(&v) {
            if let OpKind::Const(c) = &self.def[&v].kind {
                let lit = literal(*c, self.f.ty(v), true);
                return if literal_is_negated(*c, self.f.ty(v)) { quote!((#lit)) } else { lit };
            }
        }
        self.operand(v, Prec::Atom)
    }

    /// The left operand of a binary op or comparison. Where both sides are `usize`
    /// literals (`1 < 2`), Rust would take them for `i32`s: the left one gets its suffix.
    fn left_operand(&self, x: Value, y: Value, min: Prec) -> TokenStream {
        if self.untyped_usize(x) && self.untyped_usize(y) {
            self.typed(x, min)
        } else {
            self.operand(x, min)
        }
    }

    /// Whether `v` is written as `usize` literals only (no type in the text).
    fn untyped_usize(&self, v: Value) -> bool {
        if !self.inline.contains(&v) {
            return false;
        }
        match &self.def[&v].kind {
            OpKind::Const(Const::Int(_)) => self.f.ty(v) == Ty::USIZE,
            OpKind::Binary(_, x, y) => self.untyped_usize(*x) && self.untyped_usize(*y),
            OpKind::Unary(_, a) => self.untyped_usize(*a),
            _ => false,
        }
    }

    /// `v` with a type suffix on its first literal (see `left_operand`).
    fn typed(&self, v: Value, min: Prec) -> TokenStream {
        let (ts, p) = match &self.def[&v].kind {
            OpKind::Const(c) => (literal(*c, self.f.ty(v), true), Prec::Atom),
            OpKind::Binary(b, x, y) => {
                let (p, tok) = bin_info(*b);
                let x = self.typed(*x, p);
                let y = self.operand(*y, next(p));
                (quote!(#x #tok #y), p)
            }
            _ => return self.operand(v, min),
        };
        if p < min {
            quote!((#ts))
        } else {
            ts
        }
    }

    fn op_expr(&self, op: &Op) -> (TokenStream, Prec) {
        let r = op.result.unwrap();
        match &op.kind {
            OpKind::Const(c) => {
                let p = if literal_is_negated(*c, self.f.ty(r)) { Prec::Unary } else { Prec::Atom };
                (literal(*c, self.f.ty(r), false), p)
            }
            OpKind::Unary(u, a) => {
                let a = self.operand(*a, Prec::Unary);
                match u {
                    UnOp::Neg => (quote!(-#a), Prec::Unary),
                    UnOp::Not => (quote!(!#a), Prec::Unary),
                }
            }
            OpKind::Binary(b, x, y) => {
                let (p, tok) = bin_info(*b);
                let x = self.left_operand(*x, *y, p);
                let x = if *b == BinOp::Shl { cast_closed(x) } else { x };
                let y = self.operand(*y, next(p));
                (quote!(#x #tok #y), p)
            }
            OpKind::Cmp(c, x, y) => {
                let tok = match c {
                    CmpOp::Eq => quote!(==),
                    CmpOp::Ne => quote!(!=),
                    CmpOp::Lt => quote!(<),
                    CmpOp::Le => quote!(<=),
                    CmpOp::Gt => quote!(>),
                    CmpOp::Ge => quote!(>=),
                };
                let x = self.left_operand(*x, *y, Prec::BitOr);
                let x = if matches!(c, CmpOp::Lt | CmpOp::Le) { cast_closed(x) } else { x };
                let y = self.operand(*y, Prec::BitOr);
                (quote!(#x #tok #y), Prec::Cmp)
            }
            OpKind::Cast(a)
                if self.f.generic_float.is_some() && (self.f.ty(r).is_float() || self.f.ty(*a).is_float()) =>
            {
                // `as` does not convert to or from a type parameter.
                let a = self.expr(*a).0;
                let t = ty_tokens(self.f.ty(r));
                let krate = &self.krate;
                (quote!(#krate::rt::cast::<_, #t>(#a)), Prec::Atom)
            }
            OpKind::Cast(a) => {
                let a = self.operand(*a, Prec::Cast);
                let t = ty_tokens(self.f.ty(r));
                (quote!(#a as #t), Prec::Cast)
            }
            OpKind::Math(m, args) => {
                let recv = self.receiver(args[0]);
                let method = format_ident!("{}", m.name());
                let rest = args[1..].iter().map(|a| self.expr(*a).0);
                (quote!(#recv.#method(#(#rest),*)), Prec::Atom)
            }
            OpKind::Select(c, a, b) => {
                let c = self.expr(*c).0;
                let a = self.expr(*a).0;
                let b = self.expr(*b).0;
                (quote!(if #c { #a } else { #b }), Prec::Block)
            }
            OpKind::Load { mem, index } => {
                let place = self.place(*mem, *index);
                // `*p.add(i)`, `*x`: a method called on it needs parentheses.
                let deref = matches!(place.clone().into_iter().next(), Some(proc_macro2::TokenTree::Punct(p)) if p.as_char() == '*');
                (place, if deref { Prec::Unary } else { Prec::Atom })
            }
            OpKind::Len(m) if self.pointee_len(*m).is_some() => {
                let n = proc_macro2::Literal::u64_unsuffixed(self.pointee_len(*m).unwrap());
                (quote!(#n), Prec::Atom)
            }
            OpKind::Len(m) => match self.view_of(*m) {
                Some((_, start, end)) => {
                    let (s, e) = (self.operand(start, Prec::Mul), self.operand(end, Prec::Add));
                    (quote!(#e - #s), Prec::Add)
                }
                None => {
                    let m = self.mem_ref(*m);
                    (quote!(#m.len()), Prec::Atom)
                }
            },
            OpKind::VariantField { value, variant, field } => {
                let v = self.mem_ref(*value);
                let path: TokenStream = variant.parse().expect("lowering checked the variant");
                let member: syn::Member = match field.parse::<u32>() {
                    Ok(k) => syn::Member::Unnamed(syn::Index { index: k, span: Span::call_site() }),
                    Err(_) => syn::Member::Named(format_ident!("{}", field)),
                };
                let e = quote! {
                    match &#v { #path { #member: __cotan_field, .. } => *__cotan_field, _ => unreachable!("cotan: the variant was matched") }
                };
                (e, Prec::Atom)
            }
            OpKind::Matches { value, pattern } => {
                let v = self.mem_ref(*value);
                let p: TokenStream = pattern.parse().expect("lowering checked the pattern");
                (quote!(matches!(#v, #p)), Prec::Atom)
            }
            OpKind::GetVar(v) => {
                let n = self.var(*v);
                (quote!(#n), Prec::Atom)
            }
            OpKind::Pop => {
                let wide = matches!(self.f.ty(r).scalar(), Some(Scalar::I128 | Scalar::U128));
                (pop(self.f.ty(r)), if wide { Prec::Block } else { Prec::Atom })
            }
            OpKind::CopyRecords { src, zero, zeroed } => {
                let n = self.mem_ref(*src);
                let zero: TokenStream = zero.parse().expect("lowering wrote the zeroing statements");
                match zeroed {
                    true => (quote!({ let mut z = #n.to_vec(); for e in z.iter_mut() { #zero } z }), Prec::Block),
                    false => (quote!(#n.to_vec()), Prec::Atom),
                }
            }
            OpKind::AllocRecords { len, fields } => {
                let MemKind::Records(dim, id) = self.f.ty(r).mem().expect("verified: memory").kind else {
                    unreachable!("verified: a vector or an array of structs")
                };
                let ty: TokenStream = self.f.records[id as usize].parse().expect("lowering wrote a Rust type");
                let len = self.expr(*len).0;
                let fields = fields.iter().map(|(name, f)| {
                    let name: TokenStream = name.parse().expect("a field name");
                    let zero = |s: Scalar| match s {
                        Scalar::Bool => quote!(false),
                        s => literal(Const::Int(0), Ty::Scalar(s), false),
                    };
                    match *f {
                        cotan_ir::ZeroField::Number(s) => {
                            let z = zero(s);
                            quote!(#name: #z)
                        }
                        cotan_ir::ZeroField::Array(s, k) => {
                            let (z, k) = (zero(s), proc_macro2::Literal::u64_unsuffixed(k));
                            quote!(#name: [#z; #k])
                        }
                    }
                });
                match dim {
                    // (On the stack: a struct lent to a call, `lend.rs`.)
                    cotan_ir::Dim::Array(n) => {
                        let n = proc_macro2::Literal::u64_unsuffixed(n);
                        (quote!([(); #n].map(|_| #ty { #(#fields),* })), Prec::Atom)
                    }
                    _ => (quote!((0..#len).map(|_| #ty { #(#fields),* }).collect::<Vec<#ty>>()), Prec::Atom),
                }
            }
            OpKind::ZeroRecord(v) => {
                let n = self.mem_ref(*v);
                let krate = &self.krate;
                (quote!(#krate::Differentiable::zero_like(&*#n)), Prec::Atom)
            }
            OpKind::Alloc { len, init } => {
                let row_kind = self.f.ty(*init).mem().map(|m| m.kind);
                let init = self.expr(*init).0;
                let mt = self.f.ty(r).mem().unwrap();
                match (mt.kind, self.pool(r)) {
                    // Rows that are not `Copy`: each a clone.
                    (MemKind::Nested(cotan_ir::Dim::Array(_), ..), _)
                        if !matches!(row_kind, Some(MemKind::Array(_))) =>
                    {
                        (quote!(::core::array::from_fn(|_| #init.clone())), Prec::Atom)
                    }
                    (MemKind::Array(n) | MemKind::Nested(cotan_ir::Dim::Array(n), ..), _) => {
                        let n = proc_macro2::Literal::u64_unsuffixed(n);
                        (quote!([#init; #n]), Prec::Atom)
                    }
                    (_, Some(t)) => {
                        let len = self.expr(*len).0;
                        let take = format_ident!("take_{}", t);
                        (quote!(__cotan_tape.#take(#len, #init)), Prec::Atom)
                    }
                    _ => {
                        let len = self.expr(*len).0;
                        (quote!(vec![#init; #len]), Prec::Atom)
                    }
                }
            }
            k => unreachable!("cotan codegen: {k:?} has no expression form"),
        }
    }

    /// `mem[index]`, or `*mem` for a single float behind a reference.
    fn place(&self, mem: Value, index: Option<Value>) -> TokenStream {
        if let Some(p) = index.and_then(|i| self.row_place(mem, i)) {
            return p;
        }
        if let Some(p) = self.ptr_place(mem, index) {
            return p;
        }
        let m = self.mem_ref(mem);
        match index {
            Some(i) => {
                let i = self.expr(i).0;
                quote!(#m[#i])
            }
            None if self.field_of(mem).is_some() || self.offset_of(mem).is_some() => m,
            None => quote!(*#m),
        }
    }

    /// A buffer of its own name: a parameter or a local (`vec!`, array) that is a slice, a
    /// vector or an array, not a view, a field or a pointer.
    fn named_buffer(&self, mem: Value) -> bool {
        let named = match self.def.get(&mem) {
            None => self.f.params.contains(&mem),
            Some(o) => matches!(o.kind, OpKind::Alloc { .. }),
        };
        named
            && self.f.ty(mem).mem().is_some_and(|m| matches!(m.kind, MemKind::Slice | MemKind::Vec | MemKind::Array(_)))
    }

    /// `(base, name)` if `v` is a field of a record.
    fn field_of(&self, v: Value) -> Option<(Value, &'f str)> {
        match &self.def.get(&v)?.kind {
            OpKind::Field { base, name } => Some((*base, name.as_str())),
            _ => None,
        }
    }

    /// `(base, start, end)` if `v` is a sub-slice.
    fn view_of(&self, v: Value) -> Option<(Value, Value, Value)> {
        match self.def.get(&v)?.kind {
            OpKind::Slice { base, start, end } => Some((base, start, end)),
            _ => None,
        }
    }

    /// `(base, index)` if `v` is a row of nested memory.
    fn row_of(&self, v: Value) -> Option<(Value, Value)> {
        match self.def.get(&v)?.kind {
            OpKind::Elem { base, index } => Some((base, index)),
            _ => None,
        }
    }

    /// Memory as a place expression: its name, the field path (`p.layer.w`) of a field,
    /// the range of a sub-slice (`x[a..b]`) or a row (`m[i]`), which are written out at each
    /// use so that the record or buffer stays free to be lent again.
    fn mem_ref(&self, v: Value) -> TokenStream {
        if let Some((base, index)) = self.row_of(v) {
            let b = self.mem_ref(base);
            let i = self.expr(index).0;
            return quote!(#b[#i]);
        }
        if let Some(t) = self.pointer_ref(v) {
            return t;
        }
        if self.f.unsafe_code && self.field_of(v).is_some() {
            // (A union's fields are read in `unsafe` blocks.)
            self.touched.set(true);
        }
        if let Some((base, start, end)) = self.view_of(v) {
            let b = self.mem_ref(base);
            let (s, e) = (self.operand(start, Prec::Add), self.operand(end, Prec::Add));
            return quote!(#b[#s..#e]);
        }
        match self.field_of(v) {
            Some((base, name)) => {
                let mut b = self.mem_ref(base);
                if let Some(MemKind::Record(id)) = self.f.ty(base).mem().map(|m| m.kind) {
                    if self.f.records[id as usize].starts_with('*') {
                        // A struct read through a `*const S`.
                        b = quote!((*#b));
                        self.touched.set(true);
                    }
                }
                let member: syn::Member = match name.parse::<u32>() {
                    Ok(k) => syn::Member::Unnamed(syn::Index { index: k, span: Span::call_site() }),
                    Err(_) => syn::Member::Named(format_ident!("{}", name)),
                };
                quote!(#b.#member)
            }
            None => {
                let n = self.name(v);
                quote!(#n)
            }
        }
    }

    fn region(&self, r: &Region, top: bool) -> TokenStream {
        let mut out = TokenStream::new();
        let mut pooled_here = vec![];
        for op in &r.ops {
            if let (OpKind::Alloc { .. }, Some(v)) = (&op.kind, op.result) {
                if let Some(t) = self.pool(v) {
                    pooled_here.push((self.name(v), t));
                }
            }
            if let (OpKind::Return(vals), true) = (&op.kind, top) {
                let vals: Vec<TokenStream> = vals.iter().map(|v| self.root(*v)).collect();
                let ret = if vals.len() == 1 { vals[0].clone() } else { quote!((#(#vals),*)) };
                if !pooled_here.is_empty() {
                    // The result may read pooled buffers: compute it before giving them back.
                    out.extend(quote!(let __result = #ret;));
                    out.extend(self.give_back(&pooled_here));
                    if self.owns_tape() {
                        out.extend(quote!(__cotan_tape.release();));
                    }
                    out.extend(quote!(__result));
                } else if self.owns_tape() {
                    out.extend(quote!(__cotan_tape.release(); #ret));
                } else {
                    out.extend(ret);
                }
                pooled_here.clear();
                continue;
            }
            out.extend(self.stmt(op));
        }
        out.extend(self.give_back(&pooled_here));
        out
    }

    fn give_back(&self, bufs: &[(Ident, &str)]) -> TokenStream {
        bufs.iter()
            .map(|(n, t)| {
                let give = format_ident!("give_{}", t);
                quote!(__cotan_tape.#give(#n);)
            })
            .collect()
    }

    fn stmt(&self, op: &Op) -> TokenStream {
        if self.par_skip_ops.borrow().contains(&(op as *const Op)) {
            return quote!();
        }
        if matches!(op.kind, OpKind::Field { .. }) || op.kind.view_base().is_some() {
            // Written out where used (`mem_ref`).
            return quote!();
        }
        if let OpKind::VecPush { mem, value } = &op.kind {
            let m = self.name(*mem);
            let x = self.root(*value);
            return match op.result.and_then(|r| self.names.get(&r)) {
                Some(k) if self.used.contains(&op.result.unwrap()) => quote!(let #k = #m.len(); #m.push(#x);),
                _ => quote!(#m.push(#x);),
            };
        }
        if let Some(v) = op.result {
            if self.inline.contains(&v) || self.par_skip.borrow().contains(&v) || self.dropped.borrow().contains(&v) {
                return quote!();
            }
            let n = self.name(v);
            let e = self.guard(false, || self.op_expr(op).0);
            let m = match self.f.ty(v) {
                Ty::Mem(m) if m.access == Access::Owned => quote!(mut),
                _ => quote!(),
            };
            return quote!(let #m #n = #e;);
        }
        match &op.kind {
            OpKind::Store { .. }
            | OpKind::Fill { .. }
            | OpKind::SetVar(..)
            | OpKind::Assert { .. }
            | OpKind::Print { .. }
            | OpKind::Push(_)
            | OpKind::Return(_) => self.guard(false, || self.simple_stmt(op)),
            OpKind::Call { .. } => self.guard(self.f.unsafe_code, || self.simple_stmt(op)),
            _ => self.simple_stmt(op),
        }
    }

    /// A statement without a result, whose parts go in `unsafe` blocks as `stmt` decides.
    fn simple_stmt(&self, op: &Op) -> TokenStream {
        match &op.kind {
            OpKind::Store { mem, index, value } if self.par_viewed(*mem) => self.par_store(*mem, *index, *value),
            OpKind::Store { mem, index, value } => {
                let place = self.place(*mem, *index);
                if let Some((tok, rhs)) =
                    self.compound(*value, |k| matches!(k, OpKind::Load { mem: m, index: i } if m == mem && i == index))
                {
                    return quote!(#place #tok #rhs;);
                }
                let v = self.expr(*value).0;
                quote!(#place = #v;)
            }
            OpKind::Fill { mem, value, resize: None } => {
                let m = self.mem_ref(*mem);
                let v = self.expr(*value).0;
                quote!(#m.fill(#v);)
            }
            OpKind::Fill { mem, value, resize: Some([len, _]) } => {
                let m = self.name(*mem);
                let (v, n) = (self.expr(*value).0, self.expr(*len).0);
                quote!(#m.resize(#n, #v);)
            }
            OpKind::DeclVar { var, init } => {
                let n = self.var(*var);
                let t = scalar_tokens(self.f.var(*var).ty);
                let v = self.root(*init);
                quote!(let mut #n: #t = #v;)
            }
            OpKind::SetVar(var, value) => {
                let n = self.var(*var);
                if let Some((tok, rhs)) = self.compound(*value, |k| matches!(k, OpKind::GetVar(x) if x == var)) {
                    return quote!(#n #tok #rhs;);
                }
                let v = self.expr(*value).0;
                quote!(#n = #v;)
            }
            OpKind::If { cond, then_region, else_region } => {
                let c = self.root(*cond);
                let t = self.region(then_region, false);
                if else_region.ops.is_empty() {
                    quote!(if #c { #t })
                } else {
                    let e = self.region(else_region, false);
                    quote!(if #c { #t } else { #e })
                }
            }
            OpKind::For { index, lo, hi, step: Some(k), inclusive, reverse: true, body, exit } => {
                // `(lo..hi).step_by(k).rev()` needs an exact-size range, which inclusive and
                // 64-bit ranges are not: walk the iteration numbers backwards instead.
                let i = self.names.get(index).cloned().unwrap_or_else(|| format_ident!("_"));
                let t = scalar_tokens(self.f.ty(*index).scalar().unwrap_or(Scalar::Usize));
                let lo = self.root_operand(*lo, Prec::Cast);
                let hi = self.root_operand(*hi, Prec::Cast);
                let k = self.root_operand(*k, Prec::Cast);
                let count = if *inclusive {
                    quote!(if #hi >= #lo { (#hi - #lo) / #k + 1 } else { 0 })
                } else {
                    quote!(if #hi > #lo { (#hi - #lo - 1) / #k + 1 } else { 0 })
                };
                let b = self.region(body, false);
                let exit = self.exit(*exit);
                quote! {
                    let __cotan_count: #t = #count;
                    for __cotan_step in (0..__cotan_count).rev() {
                        let #i = #lo + __cotan_step * #k;
                        #b #exit
                    }
                }
            }
            OpKind::For { index, lo, hi, step: None, inclusive: false, reverse: false, body, exit: None }
                if self.f.par_loops.contains(index) && self.par.borrow().is_none() =>
            {
                match self.par_plan(*index, body) {
                    Some(plan) => self.par_for(*index, *lo, *hi, body, plan, op.span),
                    None => self.seq_for(*index, *lo, *hi, body),
                }
            }
            OpKind::For { index, lo, hi, step, inclusive, reverse, body, exit } => {
                // A snapshot loop as a slice copy.
                if let Some(copy) = self.bulk_tape(op) {
                    return copy;
                }
                let rows = self.row_slices(op);
                // A loop that adds to adjoints as partial sums.
                if let Some(sums) = self.summed_for(op) {
                    return self.with_rows(op, rows, sums);
                }
                let i = self.names.get(index).cloned().unwrap_or_else(|| format_ident!("_"));
                let lo = self.root_operand(*lo, Prec::Cast);
                let hi = self.root_operand(*hi, Prec::Cast);
                let mut range = if *inclusive { quote!(#lo..=#hi) } else { quote!(#lo..#hi) };
                if step.is_some() || *reverse {
                    range = quote!((#range));
                }
                if let Some(s) = step {
                    let s = self.root_operand(*s, Prec::Cast);
                    let s = if self.f.ty(*index) == Ty::USIZE { s } else { quote!(#s as usize) };
                    range = quote!(#range.step_by(#s));
                }
                if *reverse {
                    range = quote!(#range.rev());
                }
                let b = self.region(body, false);
                let exit = self.exit(*exit);
                self.with_rows(op, rows, quote!(for #i in #range { #b #exit }))
            }
            OpKind::While { cond_region, cond, body, exit } => {
                let b = self.region(body, false);
                let exit = self.exit(*exit);
                let always = matches!(self.def.get(cond).map(|o| &o.kind), Some(OpKind::Const(Const::Bool(true))));
                let cond_stmts = self.region(cond_region, false);
                if always {
                    quote!(loop { #b #exit })
                } else if cond_stmts.is_empty() {
                    let c = self.root(*cond);
                    quote!(while #c { #b #exit })
                } else {
                    let c = self.root_operand(*cond, Prec::Unary);
                    quote!(loop { #cond_stmts if !#c { break; } #b #exit })
                }
            }
            OpKind::Call { callee, args, outs, tape } => {
                // A path, or `<Type as Trait>::method`.
                let mut path: syn::ExprPath =
                    syn::parse_str(callee).unwrap_or_else(|_| panic!("cotan codegen: `{callee}` is not a path"));
                if let Some(span) = self.spans.get(op.span.0 as usize).filter(|_| op.span.0 != 0) {
                    for seg in path.path.segments.iter_mut() {
                        seg.ident.set_span(*span);
                    }
                }
                let (split, mut arg_tokens) = self.split_views(args);
                if is_other_crate(&path) {
                    // An integer whose type nothing here decided (a literal: `i32`) takes
                    // the type of the other crate's parameter, which cotan cannot see.
                    for (t, &(v, _)) in arg_tokens.iter_mut().zip(args.iter()) {
                        if self.f.ty(v).scalar().is_some_and(|s| s.is_int()) {
                            *t = quote!(#t as _);
                        }
                    }
                }
                if *tape {
                    arg_tokens.push(if self.f.tape_param {
                        quote!(&mut *__cotan_tape)
                    } else {
                        quote!(&mut __cotan_tape)
                    });
                }
                let call = quote!(#path(#(#arg_tokens),*));
                let outs: Vec<Ident> = outs.iter().map(|v| self.var(*v)).collect();
                let stmt = match outs.as_slice() {
                    [] => quote!(#call;),
                    [one] => quote!(#one = #call;),
                    many => quote!((#(#many),*) = #call;),
                };
                if split.is_empty() {
                    stmt
                } else {
                    quote!({ #split #stmt })
                }
            }
            OpKind::Assert { cond, message } => {
                let c = self.expr(*cond).0;
                quote!(assert!(#c, "{}", #message);)
            }
            OpKind::Print { mac, format, args } => {
                let mac = format_ident!("{}", mac);
                let args: Vec<TokenStream> = args.iter().map(|a| self.expr(*a).0).collect();
                quote!(#mac!(#format #(, #args)*);)
            }
            OpKind::Push(v) => push(self.f.ty(*v), self.expr(*v).0),
            OpKind::Return(vals) => {
                let vals: Vec<TokenStream> = vals.iter().map(|v| self.expr(*v).0).collect();
                quote!(return (#(#vals),*);)
            }
            k => unreachable!("cotan codegen: unexpected statement {k:?}"),
        }
    }

    /// A call's arguments. Sub-slices of one buffer that the call writes are lent together
    /// by `get_disjoint_mut` (a buffer lends one `&mut` at a time); the first result is
    /// the `let` that does so, or nothing.
    fn split_views(&self, args: &[(Value, bool)]) -> (TokenStream, Vec<TokenStream>) {
        let mut tokens: Vec<TokenStream> = args.iter().map(|&(v, by_mut)| self.call_arg(v, by_mut)).collect();
        let mut lets = TokenStream::new();
        let mut done: Vec<Value> = vec![];
        for &(v, _) in args {
            let Some((root, ..)) = self.view_range(v) else { continue };
            if done.contains(&root) {
                continue;
            }
            done.push(root);
            let group: Vec<usize> =
                (0..args.len()).filter(|&k| self.view_range(args[k].0).is_some_and(|(r, ..)| r == root)).collect();
            if group.len() < 2 || !group.iter().any(|&k| args[k].1) {
                continue;
            }
            let names: Vec<Ident> =
                (0..group.len()).map(|n| format_ident!("__cotan_part{}_{}", done.len(), n)).collect();
            let ranges = group.iter().map(|&k| {
                let (_, s, e) = self.view_range(args[k].0).unwrap();
                quote!(#s..#e)
            });
            let root_ref = self.mem_ref(root);
            lets.extend(quote! {
                let [#(#names),*] = #root_ref
                    .get_disjoint_mut([#(#ranges),*])
                    .expect("sub-slices lent `&mut` to one call do not overlap");
            });
            for (&k, n) in group.iter().zip(&names) {
                tokens[k] = if args[k].1 { quote!(&mut *#n) } else { quote!(&*#n) };
            }
        }
        // Rows of one nested buffer, the same way.
        let mut bases: Vec<Value> = vec![];
        for &(v, _) in args {
            let Some((base, _)) = self.row_of(v) else { continue };
            if bases.contains(&base) {
                continue;
            }
            bases.push(base);
            let group: Vec<usize> =
                (0..args.len()).filter(|&k| self.row_of(args[k].0).is_some_and(|(b, _)| b == base)).collect();
            if group.len() < 2 || !group.iter().any(|&k| args[k].1) {
                continue;
            }
            let names: Vec<Ident> =
                (0..group.len()).map(|n| format_ident!("__cotan_row{}_{}", bases.len(), n)).collect();
            let indices = group.iter().map(|&k| self.expr(self.row_of(args[k].0).unwrap().1).0);
            let base_ref = self.mem_ref(base);
            lets.extend(quote! {
                let [#(#names),*] = #base_ref
                    .get_disjoint_mut([#(#indices),*])
                    .expect("rows lent `&mut` to one call are different rows");
            });
            for (&k, n) in group.iter().zip(&names) {
                tokens[k] = if args[k].1 { quote!(&mut *#n) } else { quote!(&*#n) };
            }
        }
        (lets, tokens)
    }

    /// A sub-slice as `(buffer, start, end)` in the buffer it is finally part of.
    fn view_range(&self, v: Value) -> Option<(Value, TokenStream, TokenStream)> {
        let (base, start, end) = self.view_of(v)?;
        if self.unsafe_mem.contains(&base) {
            // A slice of a pointer's memory is lent as it is.
            return None;
        }
        let (s, e) = (self.operand(start, Prec::Add), self.operand(end, Prec::Add));
        Some(match self.view_range(base) {
            Some((root, b, _)) => (root, quote!(#b + #s), quote!(#b + #e)),
            None => (base, s, e),
        })
    }

    /// A call argument: owned buffers are lent (`&x`, `&mut x`); references and numbers
    /// are passed as they are.
    fn call_arg(&self, v: Value, by_mut: bool) -> TokenStream {
        if self.f.ty(v).mem().is_some_and(|m| m.is_ptr()) {
            // Raw pointers are passed by value.
            return self.ptr_expr(v);
        }
        if let (Some(_), Some(m)) = (self.view_of(v), self.f.ty(v).mem()) {
            if let MemKind::Array(_) = m.kind {
                // A sub-slice taken as an array (`first_chunk::<3>()`).
                let path = self.mem_ref(v);
                let t = kind_tokens(m.kind, scalar_tokens(m.elem));
                return match by_mut {
                    true => quote!(<&mut #t>::try_from(&mut #path).unwrap()),
                    false => quote!(<&#t>::try_from(&#path).unwrap()),
                };
            }
        }
        if self.field_of(v).is_some()
            || self.view_of(v).is_some()
            || self.offset_of(v).is_some()
            || self.row_of(v).is_some()
        {
            let path = self.mem_ref(v);
            return if by_mut { quote!(&mut #path) } else { quote!(&#path) };
        }
        match self.f.ty(v) {
            Ty::Mem(m) if m.access == Access::Owned => {
                let n = self.name(v);
                if by_mut {
                    quote!(&mut #n)
                } else {
                    quote!(&#n)
                }
            }
            Ty::Mem(m) if m.access == Access::Mut => {
                // Reborrow, so that the reference can be used again after the call.
                let n = self.name(v);
                if by_mut {
                    quote!(&mut *#n)
                } else {
                    quote!(&*#n)
                }
            }
            _ => self.expr(v).0,
        }
    }

    fn exit(&self, exit: Option<Var>) -> TokenStream {
        match exit {
            Some(v) => {
                let n = self.var(v);
                quote!(if #n { break; })
            }
            None => quote!(),
        }
    }

    /// `x = x op y` as `(op=, y)` when `value` is a folded `op` whose left side satisfies `same`.
    fn compound(&self, value: Value, same: impl Fn(&OpKind) -> bool) -> Option<(TokenStream, TokenStream)> {
        if !self.inline.contains(&value) {
            return None;
        }
        let OpKind::Binary(b, x, y) = &self.def[&value].kind else {
            return None;
        };
        if !self.inline.contains(x) || !same(&self.def[x].kind) {
            return None;
        }
        let tok = match b {
            BinOp::Add => quote!(+=),
            BinOp::Sub => quote!(-=),
            BinOp::Mul => quote!(*=),
            BinOp::Div => quote!(/=),
            _ => return None,
        };
        Some((tok, self.expr(*y).0))
    }
}

fn collect_defs<'f>(r: &'f Region, defs: &mut IdMap<Value, &'f Op>) {
    for op in &r.ops {
        if let Some(v) = op.result {
            defs.insert(v, op);
        }
        for sub in op.kind.regions() {
            collect_defs(sub, defs);
        }
    }
}

fn bin_info(b: BinOp) -> (Prec, TokenStream) {
    match b {
        BinOp::Add => (Prec::Add, quote!(+)),
        BinOp::Sub => (Prec::Add, quote!(-)),
        BinOp::Mul => (Prec::Mul, quote!(*)),
        BinOp::Div => (Prec::Mul, quote!(/)),
        BinOp::Rem => (Prec::Mul, quote!(%)),
        BinOp::BitAnd => (Prec::BitAnd, quote!(&)),
        BinOp::BitOr => (Prec::BitOr, quote!(|)),
        BinOp::BitXor => (Prec::BitXor, quote!(^)),
        BinOp::Shl => (Prec::Shift, quote!(<<)),
        BinOp::Shr => (Prec::Shift, quote!(>>)),
    }
}

/// `ts` in parentheses if it ends in a cast (`i as f64`): before `<`, `<=` or `<<`, Rust
/// would read the type's `<` as the start of generic arguments.
fn cast_closed(ts: TokenStream) -> TokenStream {
    let tokens: Vec<proc_macro2::TokenTree> = ts.clone().into_iter().collect();
    match tokens.len().checked_sub(2).map(|k| &tokens[k]) {
        Some(proc_macro2::TokenTree::Ident(i)) if i == "as" => quote!((#ts)),
        _ => ts,
    }
}

/// The next tighter precedence: right operands of left-associative operators need it.
fn next(p: Prec) -> Prec {
    match p {
        Prec::Block => Prec::Cmp,
        Prec::Cmp => Prec::BitOr,
        Prec::BitOr => Prec::BitXor,
        Prec::BitXor => Prec::BitAnd,
        Prec::BitAnd => Prec::Shift,
        Prec::Shift => Prec::Add,
        Prec::Add => Prec::Mul,
        Prec::Mul => Prec::Cast,
        Prec::Cast => Prec::Unary,
        Prec::Unary | Prec::Atom => Prec::Atom,
    }
}

fn is_keyword(s: &str) -> bool {
    // Rust's strict and reserved keywords (every edition), and `_`: names no binding can
    // take. (A list, not `syn::parse_str`: that lexes through the compiler for each name.)
    const KEYWORDS: [&str; 52] = [
        "_", "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false",
        "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self",
        "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where", "while", "abstract",
        "become", "box", "do", "final", "gen", "macro", "override", "priv", "try", "typeof", "unsized", "virtual",
    ];
    KEYWORDS.contains(&s) || s == "yield"
}

/// The element type name of buffers taken from the tape's pool (`f64`, `f32`), if pooled.
impl Gen<'_> {
    /// The pool buffer `v` is taken from, if it is one (see `pooled`).
    fn pool(&self, v: Value) -> Option<&'static str> {
        if self.moved.contains(&v) {
            return None;
        }
        pooled(self.f.ty(v))
    }
}

fn pooled(t: Ty) -> Option<&'static str> {
    match t {
        Ty::Mem(MemTy { kind: MemKind::Vec, access: Access::Owned, elem }) if elem.is_float() => Some(elem.name()),
        _ => None,
    }
}

fn push(t: Ty, v: TokenStream) -> TokenStream {
    match t.scalar() {
        Some(Scalar::F64) => quote!(__cotan_tape.push_f64(#v);),
        Some(Scalar::F32) => quote!(__cotan_tape.push_f32(#v);),
        Some(Scalar::Bool) => quote!(__cotan_tape.push_bool(#v);),
        // 128-bit integers travel as two halves, the low one first.
        Some(Scalar::I128 | Scalar::U128) => quote! {
            { let w = (#v) as u128; __cotan_tape.push_int(w as u64); __cotan_tape.push_int((w >> 64) as u64); }
        },
        _ => quote!(__cotan_tape.push_int((#v) as u64);),
    }
}

fn pop(t: Ty) -> TokenStream {
    match t.scalar() {
        Some(Scalar::F64) => quote!(__cotan_tape.pop_f64()),
        Some(Scalar::F32) => quote!(__cotan_tape.pop_f32()),
        Some(Scalar::Bool) => quote!(__cotan_tape.pop_bool()),
        Some(s @ (Scalar::I128 | Scalar::U128)) => {
            let s = scalar_tokens(s);
            quote!({ let high = __cotan_tape.pop_int() as u128; (((high << 64) | __cotan_tape.pop_int() as u128) as #s) })
        }
        Some(s) => {
            let s = scalar_tokens(s);
            quote!((__cotan_tape.pop_int() as #s))
        }
        None => unreachable!("cotan codegen: pop of memory"),
    }
}

fn scalar_tokens(s: Scalar) -> TokenStream {
    let i = format_ident!("{}", s.name());
    quote!(#i)
}

/// The Rust type of a parameter of `f` (structs by their name).
pub fn param_ty_tokens(f: &Function, t: Ty) -> TokenStream {
    record_ty_tokens(f, t).unwrap_or_else(|| ty_tokens(t))
}

/// The Rust type of a record (struct or tuple) parameter, `None` for other types.
fn record_ty_tokens(f: &Function, t: Ty) -> Option<TokenStream> {
    let m = t.mem()?;
    let (MemKind::Record(id) | MemKind::Records(_, id)) = m.kind else { return None };
    let record: syn::Type = syn::parse_str(f.records.get(id as usize)?).ok()?;
    let inner = match m.kind.dim() {
        Some(dim) => dim_tokens(dim, quote!(#record)),
        None => quote!(#record),
    };
    Some(match m.access {
        Access::Shared => quote!(&#inner),
        Access::Mut => quote!(&mut #inner),
        Access::Owned => quote!(#inner),
    })
}

/// The Rust type of an IR type.
pub fn ty_tokens(t: Ty) -> TokenStream {
    match t {
        Ty::Scalar(s) => scalar_tokens(s),
        Ty::Mem(m) => {
            if m.kind.is_ptr() {
                let e = scalar_tokens(m.elem);
                let pointee = match m.kind {
                    MemKind::ArrayPtr(n) => {
                        let n = proc_macro2::Literal::u64_unsuffixed(n);
                        quote!([#e; #n])
                    }
                    _ => e,
                };
                return match m.access {
                    Access::Mut => quote!(*mut #pointee),
                    _ => quote!(*const #pointee),
                };
            }
            let inner = kind_tokens(m.kind, scalar_tokens(m.elem));
            match m.access {
                Access::Shared => quote!(&#inner),
                Access::Mut => quote!(&mut #inner),
                Access::Owned => inner,
            }
        }
    }
}

/// `[T]`, `[T; N]` or `Vec<T>` around `inner`.
fn dim_tokens(dim: cotan_ir::Dim, inner: TokenStream) -> TokenStream {
    match dim {
        cotan_ir::Dim::Slice => quote!([#inner]),
        cotan_ir::Dim::Array(n) => {
            let n = proc_macro2::Literal::u64_unsuffixed(n);
            quote!([#inner; #n])
        }
        cotan_ir::Dim::Vec => quote!(Vec<#inner>),
    }
}

/// The Rust type of memory of `kind` holding numbers of type `e` (without the reference).
fn kind_tokens(kind: MemKind, e: TokenStream) -> TokenStream {
    let around = dim_tokens;
    match kind {
        MemKind::Slice | MemKind::Array(_) | MemKind::Vec => around(kind.dim().unwrap(), e),
        MemKind::Cell => e,
        // Records are named by `record_ty_tokens`; a nested one is never declared.
        MemKind::Record(_) => quote!(_),
        MemKind::Nested(outer, ..) => around(outer, kind_tokens(kind.row().unwrap(), e)),
        MemKind::Records(outer, _) => around(outer, quote!(_)),
        // (Pointers are written by `ty_tokens`.)
        MemKind::Ptr | MemKind::ArrayPtr(_) => quote!(_),
    }
}

/// A literal of type `t`; `suffixed` forces the type suffix (for method receivers).
/// Whether [`literal`] writes `c` with a leading `-` (not asking the tokens: in a proc
/// macro, printing them is a call into the compiler).
fn literal_is_negated(c: Const, t: Ty) -> bool {
    let float = t.scalar().unwrap_or(Scalar::F64).is_float();
    match c {
        Const::Bool(_) => false,
        Const::Int(i) if float => literal_is_negated(Const::Float(i as f64), t),
        Const::Int(i) => i < 0,
        Const::Float(x) => x.is_finite() && x.is_sign_negative(),
    }
}

/// Whether a called path is another crate's (`dep::f__aug`), not this crate's
/// (`crate::m::f`, a local function, a type's `Normal::new`).
fn is_other_crate(path: &syn::ExprPath) -> bool {
    let segs = &path.path.segments;
    let first = segs[0].ident.to_string();
    // (`::cotan::rt::..` is cotan's runtime, whose types the generated code matches.)
    path.qself.is_none()
        && path.path.leading_colon.is_none()
        && segs.len() > 1
        && first.starts_with(|c: char| c.is_ascii_lowercase())
        && !matches!(first.as_str(), "crate" | "self" | "super" | "cotan")
}

fn literal(c: Const, t: Ty, suffixed: bool) -> TokenStream {
    let s = t.scalar().unwrap_or(Scalar::F64);
    match c {
        Const::Bool(b) => quote!(#b),
        Const::Int(i) if s.is_float() => literal(Const::Float(i as f64), t, suffixed),
        Const::Int(i) => {
            let lit = if suffixed || !matches!(s, Scalar::I32 | Scalar::Usize) {
                format!("{}{}", i.unsigned_abs(), s.name())
                    .parse()
                    .unwrap_or_else(|_| proc_macro2::Literal::u128_unsuffixed(i.unsigned_abs()))
            } else {
                proc_macro2::Literal::u128_unsuffixed(i.unsigned_abs())
            };
            if i < 0 {
                quote!(-#lit)
            } else {
                quote!(#lit)
            }
        }
        Const::Float(x) => {
            let ty = scalar_tokens(s);
            if x.is_nan() {
                return quote!(#ty::NAN);
            }
            if x.is_infinite() {
                return if x > 0.0 { quote!(#ty::INFINITY) } else { quote!(#ty::NEG_INFINITY) };
            }
            let text = if s == Scalar::F32 { format!("{:?}", (x as f32).abs()) } else { format!("{:?}", x.abs()) };
            let text = if suffixed || s == Scalar::F32 { format!("{text}{}", s.name()) } else { text };
            let lit: proc_macro2::Literal =
                text.parse().unwrap_or_else(|_| proc_macro2::Literal::f64_unsuffixed(x.abs()));
            if x.is_sign_negative() {
                quote!(-#lit)
            } else {
                quote!(#lit)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `literal_is_negated` says what the printed literal starts with.
    #[test]
    fn negated_literals_are_known_without_printing() {
        let consts = [
            Const::Float(-1.5),
            Const::Float(1.5),
            Const::Float(-0.0),
            Const::Float(0.0),
            Const::Float(f64::NAN),
            Const::Float(f64::INFINITY),
            Const::Float(f64::NEG_INFINITY),
            Const::Int(-3),
            Const::Int(3),
            Const::Int(0),
            Const::Bool(true),
        ];
        for c in consts {
            for t in [Ty::F64, Ty::F32, Ty::USIZE, Ty::Scalar(Scalar::I32), Ty::Scalar(Scalar::I64), Ty::BOOL] {
                if matches!(c, Const::Bool(_)) != (t == Ty::BOOL) || (matches!(c, Const::Float(_)) && !t.is_float()) {
                    continue;
                }
                let printed = literal(c, t, false).to_string().starts_with('-');
                assert_eq!(literal_is_negated(c, t), printed, "{c:?} as {t:?}");
            }
        }
    }
}
