//! Aggregates: tuples and `Option`s, which the IR does not have. Lowering keeps them as
//! trees of IR values: a tuple is its elements, an `Option` a bool flag (`Some`?) and a
//! payload (a zero of the payload's type for `None`). A tuple local is one binding per
//! element (one variable each when it is `mut`), so `t.0 += x` is an ordinary assignment;
//! choosing between aggregates (`if`, `match`) assigns each leaf to a variable of its own.

use crate::span::Spanned;
use cotan_ir::{Access, Const, MemKind, OpKind, Scalar, Value, Var};
use proc_macro2::Span;

use crate::infer::{Class, STy};
use crate::lower::{err, err_at, Binding, Lower};

#[derive(Clone, Debug)]
pub(crate) enum Tree<L> {
    Leaf(L),
    Tuple(Vec<Tree<L>>),
    /// `Option<T>`: whether it is `Some`, and the payload.
    Option(L, Box<Tree<L>>),
    /// A value of a fieldless enum made in the function (`Mode::A`): a `usize` numbering
    /// the variant names the function uses (see `Lower::variant`).
    Enum(L),
    /// A struct of numbers (see `env.rs`): its type's path, as the function writes it, and
    /// its fields by name, in declaration order.
    Struct(String, Vec<(String, Tree<L>)>),
}

/// An aggregate value.
pub(crate) type Agg = Tree<Value>;

/// A leaf of a bound aggregate: an immutable value or a mutable local.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Slot {
    Value(Value),
    Var(Var),
}

impl<L: Copy> Tree<L> {
    pub(crate) fn leaves(&self) -> Vec<L> {
        let mut out = vec![];
        self.each_leaf(&mut |l| out.push(l));
        out
    }

    fn each_leaf(&self, f: &mut impl FnMut(L)) {
        match self {
            Tree::Leaf(l) | Tree::Enum(l) => f(*l),
            Tree::Tuple(es) => es.iter().for_each(|e| e.each_leaf(f)),
            Tree::Option(flag, p) => {
                f(*flag);
                p.each_leaf(f)
            }
            Tree::Struct(_, fs) => fs.iter().for_each(|(_, e)| e.each_leaf(f)),
        }
    }

    pub(crate) fn map<M>(&self, f: &mut impl FnMut(L) -> M) -> Tree<M> {
        match self {
            Tree::Leaf(l) => Tree::Leaf(f(*l)),
            Tree::Enum(l) => Tree::Enum(f(*l)),
            Tree::Tuple(es) => Tree::Tuple(es.iter().map(|e| e.map(f)).collect()),
            Tree::Option(flag, p) => {
                let flag = f(*flag);
                Tree::Option(flag, Box::new(p.map(f)))
            }
            Tree::Struct(ty, fs) => Tree::Struct(ty.clone(), fs.iter().map(|(n, e)| (n.clone(), e.map(f))).collect()),
        }
    }

    pub(crate) fn try_map<M>(&self, f: &mut impl FnMut(L) -> syn::Result<M>) -> syn::Result<Tree<M>> {
        Ok(match self {
            Tree::Leaf(l) => Tree::Leaf(f(*l)?),
            Tree::Enum(l) => Tree::Enum(f(*l)?),
            Tree::Tuple(es) => Tree::Tuple(es.iter().map(|e| e.try_map(f)).collect::<syn::Result<_>>()?),
            Tree::Option(flag, p) => {
                let flag = f(*flag)?;
                Tree::Option(flag, Box::new(p.try_map(f)?))
            }
            Tree::Struct(ty, fs) => Tree::Struct(
                ty.clone(),
                fs.iter().map(|(n, e)| Ok((n.clone(), e.try_map(f)?))).collect::<syn::Result<_>>()?,
            ),
        })
    }

    pub(crate) fn same_shape<M: Copy>(&self, other: &Tree<M>) -> bool {
        match (self, other) {
            (Tree::Leaf(_), Tree::Leaf(_)) | (Tree::Enum(_), Tree::Enum(_)) => true,
            (Tree::Tuple(a), Tree::Tuple(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same_shape(y)),
            (Tree::Option(_, a), Tree::Option(_, b)) => a.same_shape(b),
            // (One struct may be named by several paths, `V` and `crate::V`; rustc has
            // checked that the types agree.)
            (Tree::Struct(s, a), Tree::Struct(t, b)) => {
                s.rsplit("::").next() == t.rsplit("::").next()
                    && a.len() == b.len()
                    && a.iter().zip(b).all(|((m, x), (n, y))| m == n && x.same_shape(y))
            }
            _ => false,
        }
    }

    /// What the value is, for messages.
    pub(crate) fn describe(&self) -> &'static str {
        match self {
            Tree::Leaf(_) => "a number",
            Tree::Tuple(_) => "a tuple",
            Tree::Option(..) => "an `Option`",
            Tree::Enum(_) => "an enum value",
            Tree::Struct(..) => "a struct",
        }
    }

    /// The shape, for messages: `(number, Option<number>)`.
    pub(crate) fn shape_text(&self) -> String {
        match self {
            Tree::Leaf(_) => "number".into(),
            Tree::Enum(_) => "enum value".into(),
            Tree::Tuple(es) => format!("({})", es.iter().map(|e| e.shape_text()).collect::<Vec<_>>().join(", ")),
            Tree::Option(_, p) => format!("Option<{}>", p.shape_text()),
            Tree::Struct(ty, _) => ty.clone(),
        }
    }

    /// The element `k` of a tuple.
    pub(crate) fn element(&self, member: &syn::Member) -> syn::Result<&Tree<L>> {
        match (self, member) {
            (Tree::Tuple(es), syn::Member::Unnamed(i)) if (i.index as usize) < es.len() => Ok(&es[i.index as usize]),
            (Tree::Tuple(es), _) => err_at(member, format!("this tuple has the fields 0 to {}", es.len().max(1) - 1)),
            (Tree::Struct(ty, fs), m) => {
                let name = crate::record::member_name(m);
                match fs.iter().find(|(n, _)| *n == name) {
                    Some((_, e)) => Ok(e),
                    None => err_at(member, format!("`{ty}` has no field `{name}`")),
                }
            }
            (t, _) => err_at(member, format!("this is {}, which has no fields", t.describe())),
        }
    }
}

/// The variables a choice between aggregates assigns (the result of an `if` or `match`),
/// declared in the region at `depth` when the first branch gives its value. An array by
/// value (`if c { [a, b] } else { f(x) }`, the array fields of a struct the branches make)
/// is a local array of its own instead, into which each branch copies its value.
pub(crate) struct Merge {
    depth: usize,
    slots: Option<Tree<Slot>>,
}

impl Merge {
    pub(crate) fn new(depth: usize) -> Merge {
        Merge { depth, slots: None }
    }

    /// Declares the variables (and arrays), of the shape of `a`, if they are not yet.
    pub(crate) fn declare(&mut self, l: &mut Lower, a: &Agg, span: Span) -> syn::Result<()> {
        if self.slots.is_some() {
            return Ok(());
        }
        let depth = self.depth;
        self.slots = Some(a.try_map(&mut |v| match l.mem_ty(v) {
            Some(_) => l.zeros_like_at(depth, v).map(Slot::Value).ok_or_else(|| syn::Error::new(span, CHOSEN_BUFFERS)),
            None => {
                let t = l.scalar_sty(v, span)?;
                let zero = l.zero_at(depth, t);
                let var = l.new_var("value", t);
                l.effect_at(depth, OpKind::DeclVar { var, init: zero });
                Ok(Slot::Var(var))
            }
        })?);
        Ok(())
    }

    /// Assigns a branch's value.
    pub(crate) fn set(&mut self, l: &mut Lower, a: &Agg, span: Span) -> syn::Result<()> {
        self.declare(l, a, span)?;
        let slots = self.slots.as_ref().expect("declared");
        if let Some(vars) = as_vars(slots) {
            return l.set_vars(&vars, a, span);
        }
        l.assign_slots(slots, a.clone(), span, |have, found| {
            format!("mismatched types: expected {have}, found {found}")
        })
    }

    /// The value assigned so far (read where the code is now).
    pub(crate) fn current(&self, l: &mut Lower) -> Option<Agg> {
        self.slots.as_ref().map(|s| l.read_slots(s))
    }

    pub(crate) fn get(self, l: &mut Lower) -> Option<Agg> {
        self.slots.map(|s| l.read_slots(&s))
    }
}

/// `slots` when they are all variables.
fn as_vars(slots: &Tree<Slot>) -> Option<Tree<Var>> {
    if !slots.leaves().iter().all(|s| matches!(s, Slot::Var(_))) {
        return None;
    }
    Some(slots.map(&mut |s| match s {
        Slot::Var(var) => var,
        Slot::Value(_) => unreachable!("all variables"),
    }))
}

/// Why an `if`, a `match` or a helper's `return` cannot give a vector or a slice.
pub(crate) const CHOSEN_BUFFERS: &str = "cotan chooses numbers, tuples, structs of numbers and arrays by value (in an `if`, a `match` or by `return` from a helper it lowers at its call), not vectors or slices, whose lengths may differ; choose per element instead (`x.iter().map(|&v| if c { .. } else { .. }).collect()`)";

impl Lower {
    /// The value of a bound aggregate.
    pub(crate) fn read_slots(&mut self, t: &Tree<Slot>) -> Agg {
        t.map(&mut |s| match s {
            Slot::Value(v) => v,
            Slot::Var(var) => {
                let st = self.var_sty(var);
                self.emit_s(OpKind::GetVar(var), st)
            }
        })
    }

    pub(crate) fn get_vars(&mut self, t: &Tree<Var>) -> Agg {
        self.read_slots(&t.map(&mut Slot::Var))
    }

    /// Mutable locals holding an aggregate, declared here with its value.
    pub(crate) fn declare_vars(&mut self, name: &str, a: &Agg, span: Span) -> syn::Result<Tree<Var>> {
        a.try_map(&mut |v| {
            let t = self.scalar_sty(v, span)?;
            let var = self.new_var(name, t);
            self.effect(OpKind::DeclVar { var, init: v });
            Ok(var)
        })
    }

    /// Assigns an aggregate to variables of the same shape.
    pub(crate) fn set_vars(&mut self, vars: &Tree<Var>, a: &Agg, span: Span) -> syn::Result<()> {
        let a = &self.fit_none(a.clone(), vars);
        if !vars.same_shape(a) {
            let (have, found) = (vars.shape_text(), a.shape_text());
            // Variables made from a `None` hold an `Option` of a number.
            let hint = if matches!((vars, a), (Tree::Option(..), Tree::Option(..))) {
                "; cotan takes the shape of an `Option` from its first value: write the `Some(..)` branch before the `None` one, or give the variable its type where it is declared (`let best: Option<(usize, f64)> = None;`)"
            } else {
                ""
            };
            return err(span, format!("mismatched types: expected `{have}`, found `{found}`{hint}"));
        }
        for (var, v) in vars.leaves().into_iter().zip(a.leaves()) {
            let t = self.scalar_sty(v, span)?;
            let have = self.var_sty(var);
            self.unify(have, t, span)?;
            self.effect(OpKind::SetVar(var, v));
        }
        Ok(())
    }

    /// Assigns an aggregate to a binding's slots (`t = (a, b)`, `s = S { .. }`): numbers to
    /// its variables, arrays copied into the arrays a `let mut` binding owns.
    pub(crate) fn set_slots(&mut self, slots: &Tree<Slot>, a: Agg, target: &syn::Expr) -> syn::Result<()> {
        if let Some(vars) = as_vars(slots) {
            return self.set_vars(&vars, &a, target.span());
        }
        self.assign_slots(slots, a, target.span(), |_, _| {
            "cannot assign twice to an immutable tuple; declare it with `let mut`".into()
        })
    }

    /// Assigns `a` to `slots` of the same shape: numbers to variables, arrays copied into
    /// the arrays of slots that hold them; `mismatch` says what an array slot given another
    /// value is (what it holds, what it is given).
    pub(crate) fn assign_slots(
        &mut self,
        slots: &Tree<Slot>,
        a: Agg,
        span: Span,
        mismatch: impl Fn(&str, &str) -> String,
    ) -> syn::Result<()> {
        let a = self.fit_none(a, slots);
        if !slots.same_shape(&a) {
            let (have, found) = (slots.shape_text(), a.shape_text());
            return err(span, format!("mismatched types: expected `{have}`, found `{found}`"));
        }
        for (slot, v) in slots.leaves().into_iter().zip(a.leaves()) {
            match slot {
                Slot::Var(var) => {
                    let t = self.scalar_sty(v, span)?;
                    let have = self.var_sty(var);
                    self.unify(have, t, span)?;
                    self.effect(OpKind::SetVar(var, v));
                }
                Slot::Value(m) => {
                    if !self.copy_array_into(m, v, span)? {
                        return err(span, mismatch(&self.what_is(m), &self.what_is(v)));
                    }
                }
            }
        }
        Ok(())
    }

    /// What `v` is, for messages: `a number`, `an array of 3 numbers`.
    fn what_is(&self, v: Value) -> String {
        match self.mem_ty(v).map(|m| m.kind) {
            None => "a number".into(),
            Some(MemKind::Array(n)) => format!("an array of {n} numbers"),
            Some(MemKind::Nested(..)) => "an array of arrays".into(),
            Some(MemKind::Vec) => "a vector".into(),
            Some(_) => "a reference".into(),
        }
    }

    /// Copies the memory `src` into `dst` of the same kind (an array of numbers or of
    /// arrays, or a vector of numbers, which takes `src`'s length); false when they differ
    /// or `dst` is not writable.
    pub(crate) fn copy_array_into(&mut self, dst: Value, src: Value, span: Span) -> syn::Result<bool> {
        let (Some(d), Some(s)) = (self.mem_ty(dst), self.mem_ty(src)) else { return Ok(false) };
        if !d.is_writable() || d.kind != s.kind {
            return Ok(false);
        }
        let (dt, st) = (self.elem_sty(dst), self.elem_sty(src));
        self.unify(dt, st, span)?;
        let usize_t = STy::Known(cotan_ir::Scalar::Usize);
        match d.kind {
            MemKind::Array(_) => {
                let n = self.emit_s(OpKind::Len(dst), usize_t);
                self.copy_loop(dst, src, n);
            }
            MemKind::Nested(cotan_ir::Dim::Array(_), cotan_ir::Dim::Array(_), None) => {
                let n = self.emit_s(OpKind::Len(src), usize_t);
                self.copy_rows(dst, src, n);
            }
            MemKind::Vec if d.access == cotan_ir::Access::Owned => {
                let len = self.emit_s(OpKind::Len(src), usize_t);
                let old = self.emit_s(OpKind::Len(dst), usize_t);
                let zero = self.zero(dt);
                self.effect(OpKind::Fill { mem: dst, value: zero, resize: Some([len, old]) });
                self.copy_loop(dst, src, len);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// `None`: its payload's type is known from where it meets a `Some`.
    pub(crate) fn none(&mut self) -> Agg {
        let flag = self.bool_const(false);
        let t = self.infer.fresh(Class::Any);
        let payload = self.pending_zero(t);
        self.none_payloads.insert(payload);
        Tree::Option(flag, Box::new(Tree::Leaf(payload)))
    }

    /// A `None` takes the shape of the `Option` it meets (its payload is never read).
    fn fit_none<L: Copy>(&mut self, a: Agg, like: &Tree<L>) -> Agg {
        match (&a, like) {
            (Tree::Option(flag, p), Tree::Option(_, shape)) if !matches!(**shape, Tree::Leaf(_)) => match **p {
                Tree::Leaf(v) if self.none_payloads.contains(&v) => {
                    let zeros = shape.map(&mut |_| ());
                    let zeros = self.zeros_like(&zeros);
                    Tree::Option(*flag, Box::new(zeros))
                }
                _ => a,
            },
            _ => a,
        }
    }

    /// Placeholder zeros of a shape, their types to be inferred.
    fn zeros_like(&mut self, shape: &Tree<()>) -> Agg {
        shape.map(&mut |_| {
            let t = self.infer.fresh(Class::Any);
            let z = self.pending_zero(t);
            self.none_payloads.insert(z);
            z
        })
    }

    /// `let best: Option<(usize, f64)> = None;`: the type gives a `None` its shape.
    pub(crate) fn shape_none_by_type(&mut self, ty: &syn::Type, a: Agg) -> Agg {
        fn shape_of(env: &dyn crate::Env, ty: &syn::Type) -> Tree<()> {
            match ty {
                syn::Type::Tuple(t) if !t.elems.is_empty() => {
                    Tree::Tuple(t.elems.iter().map(|e| shape_of(env, e)).collect())
                }
                syn::Type::Paren(p) => shape_of(env, &p.elem),
                // A fieldless enum of the crate (`Option<Kind>`).
                syn::Type::Path(p) if p.qself.is_none() && env.is_enum(&p.path) => Tree::Enum(()),
                // A struct of numbers (`Result<Normal, E>`).
                syn::Type::Path(p) if p.qself.is_none() => match env.structure(&p.path) {
                    Some(st) => of_structure(&st),
                    None => Tree::Leaf(()),
                },
                _ => Tree::Leaf(()),
            }
        }
        fn of_structure(st: &crate::env::Structure) -> Tree<()> {
            let fields = st.fields.iter().map(|(name, f)| {
                let shape = match f {
                    crate::env::FieldShape::Number(_) => Tree::Leaf(()),
                    crate::env::FieldShape::Struct(inner) => of_structure(inner),
                };
                (name.clone(), shape)
            });
            Tree::Struct(st.path.clone(), fields.collect())
        }
        let syn::Type::Path(p) = ty else { return a };
        let Some(last) = p.path.segments.last().filter(|s| s.ident == "Option" || s.ident == "Result") else {
            return a;
        };
        let syn::PathArguments::AngleBracketed(args) = &last.arguments else { return a };
        let Some(syn::GenericArgument::Type(inner)) = args.args.first() else { return a };
        let like = Tree::Option((), Box::new(shape_of(&*self.env, inner)));
        self.fit_none(a, &like)
    }

    /// `if cond { mem[index] }` as an `Option`, without reading out of bounds.
    pub(crate) fn guarded_load(&mut self, cond: Value, mem: Value, index: Value) -> Agg {
        let t = self.elem_sty(mem);
        let zero = self.pending_zero(t);
        let var = self.new_var("elem", t);
        self.effect(OpKind::DeclVar { var, init: zero });
        self.push_region();
        let v = self.emit_s(OpKind::Load { mem, index: Some(index) }, t);
        self.effect(OpKind::SetVar(var, v));
        let then_region = self.pop_region();
        self.effect(OpKind::If { cond, then_region, else_region: Default::default() });
        let v = self.emit_s(OpKind::GetVar(var), t);
        Tree::Option(cond, Box::new(Tree::Leaf(v)))
    }

    /// Binds a pattern that always matches (`let`, closure and loop parameters) to an aggregate.
    pub(crate) fn bind_agg(&mut self, pat: &syn::Pat, a: Agg) -> syn::Result<()> {
        match (pat, a) {
            (syn::Pat::Type(pt), a) => {
                let a = self.shape_none_by_type(&pt.ty, a);
                self.annotate(&pt.ty, &a)?;
                self.bind_agg(&pt.pat, a)
            }
            (syn::Pat::Reference(r), a) => {
                // `&mut x` of an element reference binds a copy of the element.
                let a = a.map(&mut |v| self.elem_copy(v));
                self.bind_agg(&r.pat, a)
            }
            (syn::Pat::Paren(p), a) => self.bind_agg(&p.pat, a),
            (syn::Pat::Wild(_), _) => Ok(()),
            (syn::Pat::Ident(_), Tree::Leaf(v)) => self.bind_pat(pat, v),
            (syn::Pat::Ident(pi), a) if pi.subpat.is_none() && pi.by_ref.is_none() => {
                let name = pi.ident.to_string();
                let slots = if pi.mutability.is_some() {
                    // Numbers in variables; arrays stay the memory the binding owns (`let`
                    // copied what it read out of places: `copies.rs`).
                    a.try_map(&mut |v| match self.mem_ty(v) {
                        Some(_) => Ok(Slot::Value(v)),
                        None => {
                            let t = self.scalar_sty(v, pi.span())?;
                            let var = self.new_var(&name, t);
                            self.effect(OpKind::DeclVar { var, init: v });
                            Ok(Slot::Var(var))
                        }
                    })?
                } else {
                    a.map(&mut Slot::Value)
                };
                self.bind(name, Binding::Agg(slots));
                Ok(())
            }
            // A tuple parameter (a record): its elements.
            (syn::Pat::Tuple(t), Tree::Leaf(m)) if crate::record::is_record(self.func.ty(m)) => {
                match self.tuple_record(m, t.span()) {
                    Some(a) => self.bind_agg(pat, a),
                    None => {
                        err_at(t, "cotan destructures tuples of numbers and slices; read the elements with `.0`, `.1`")
                    }
                }
            }
            (syn::Pat::Tuple(t), Tree::Tuple(es)) => {
                let pats: Vec<&syn::Pat> = t.elems.iter().collect();
                for (p, e) in spread(&pats, es.len(), t.span())?.into_iter().zip(es) {
                    if let Some(p) = p {
                        self.bind_agg(p, e)?;
                    }
                }
                Ok(())
            }
            (syn::Pat::Slice(s), Tree::Leaf(m)) if self.mem_ty(m).is_some() => {
                let pats: Vec<&syn::Pat> = s.elems.iter().collect();
                let n = self.array_len_of(m, s.span())?;
                for (k, p) in spread(&pats, n, s.span())?.into_iter().enumerate() {
                    if let Some(p) = p {
                        let i = self.emit_s(OpKind::Const(Const::Int(k as i128)), STy::Known(Scalar::Usize));
                        let t = self.elem_sty(m);
                        let v = self.emit_s(OpKind::Load { mem: m, index: Some(i) }, t);
                        self.bind_agg(p, Tree::Leaf(v))?;
                    }
                }
                Ok(())
            }
            (p, a) => err_at(
                p,
                format!(
                    "cotan cannot bind this pattern to {}; bind a name (`let t = ..`) and read its parts (`t.0`)",
                    a.describe()
                ),
            ),
        }
    }

    /// Binds `[x, y]` to a `&mut [f64; 2]`: each name is a `&mut` to its element (a place),
    /// as Rust's binding modes make it; other sub-patterns (`mut x`) bind copies.
    pub(crate) fn bind_elem_refs(&mut self, s: &syn::PatSlice, m: Value) -> syn::Result<()> {
        let pats: Vec<&syn::Pat> = s.elems.iter().collect();
        let n = self.array_len_of(m, s.span())?;
        for (k, p) in spread(&pats, n, s.span())?.into_iter().enumerate() {
            let Some(p) = p else { continue };
            let i = self.emit_s(OpKind::Const(Const::Int(k as i128)), STy::Known(Scalar::Usize));
            match p {
                syn::Pat::Ident(pi) if pi.mutability.is_none() && pi.by_ref.is_none() && pi.subpat.is_none() => {
                    self.bind(pi.ident.to_string(), Binding::Place(m, i));
                }
                p => {
                    let t = self.elem_sty(m);
                    let v = self.emit_s(OpKind::Load { mem: m, index: Some(i) }, t);
                    self.bind_agg(p, Tree::Leaf(v))?;
                }
            }
        }
        Ok(())
    }

    /// Whether `m` is a `&mut` to an array of numbers, which a slice pattern binds as
    /// references to its elements.
    pub(crate) fn is_mut_array(&self, m: Value) -> bool {
        self.mem_ty(m).is_some_and(|t| t.access == Access::Mut && matches!(t.kind, MemKind::Array(_)))
    }

    /// Whether `e`, which gave `m`, is a `&mut` to an array (a name bound to one, or
    /// `&mut ..`) rather than an array Rust copies (`x[i]`, `*r`).
    pub(crate) fn is_array_ref(&self, e: &syn::Expr, m: Value) -> bool {
        self.is_mut_array(m)
            && match crate::lower::strip_parens(e) {
                syn::Expr::Path(_) => true,
                syn::Expr::Reference(r) => r.mutability.is_some(),
                _ => false,
            }
    }

    /// The length of a fixed-size array, for a slice pattern.
    pub(crate) fn array_len_of(&self, m: Value, span: Span) -> syn::Result<usize> {
        match self.mem_ty(m).map(|t| t.kind) {
            Some(MemKind::Array(n)) => Ok(n as usize),
            _ => err(span, "cotan destructures fixed-size arrays only (`[f64; N]`); index a slice's elements instead"),
        }
    }

    /// Checks a type annotation (`let t: (f64, usize) = ..`) against an aggregate.
    pub(crate) fn annotate(&mut self, ty: &syn::Type, a: &Agg) -> syn::Result<()> {
        match (ty, a) {
            (syn::Type::Paren(p), a) => self.annotate(&p.elem, a),
            (syn::Type::Tuple(t), Tree::Tuple(es)) if t.elems.len() == es.len() => {
                for (ty, e) in t.elems.iter().zip(es) {
                    self.annotate(ty, e)?;
                }
                Ok(())
            }
            (ty, Tree::Leaf(v)) => {
                let v = *v;
                if let (Some(s), Some(_)) = (crate::signature::elem_type(ty), self.func.ty(v).mem()) {
                    let have = self.elem_sty(v);
                    self.unify(STy::Known(s), have, ty.span())?;
                }
                if let Some(s) = crate::signature::scalar_type(ty) {
                    let vt = self.scalar_sty(v, ty.span())?;
                    self.unify(STy::Known(s), vt, ty.span())?;
                }
                Ok(())
            }
            // (A `Result` is held as an `Option` of its `Ok` value.)
            (syn::Type::Path(p), Tree::Option(_, payload))
                if p.path.segments.last().is_some_and(|s| s.ident == "Option" || s.ident == "Result") =>
            {
                if let Some(syn::PathArguments::AngleBracketed(args)) = p.path.segments.last().map(|s| &s.arguments) {
                    if let Some(syn::GenericArgument::Type(t)) = args.args.first() {
                        return self.annotate(t, payload);
                    }
                }
                Ok(())
            }
            // A struct of numbers: its type, as the crate names it, has its fields' types.
            (syn::Type::Path(p), Tree::Struct(..)) if p.qself.is_none() => match self.env.structure(&p.path) {
                Some(st) => self.leaves_of(a.clone(), &st, ty.span()).map(|_| ()),
                None => err_at(ty, format!("this type does not fit {}", a.describe())),
            },
            (syn::Type::Reference(r), Tree::Struct(..)) => self.annotate(&r.elem, a),
            // A fieldless enum of the crate: its value is the number of its variant.
            (syn::Type::Path(p), Tree::Enum(_)) if p.qself.is_none() && self.env.is_enum(&p.path) => Ok(()),
            (ty, a) => err_at(ty, format!("this type does not fit {}", a.describe())),
        }
    }
}

/// The sub-pattern of each of `n` elements, `None` for those a `..` skips.
pub(crate) fn spread<'p>(pats: &[&'p syn::Pat], n: usize, span: Span) -> syn::Result<Vec<Option<&'p syn::Pat>>> {
    let rest = pats.iter().position(|p| matches!(p, syn::Pat::Rest(_)));
    let fixed = pats.len() - usize::from(rest.is_some());
    if fixed > n || (rest.is_none() && fixed != n) {
        return err(span, format!("this pattern has {fixed} elements but the value has {n}"));
    }
    Ok(match rest {
        None => pats.iter().map(|p| Some(*p)).collect(),
        Some(r) => {
            let mut out: Vec<Option<&syn::Pat>> = pats[..r].iter().map(|p| Some(*p)).collect();
            out.extend(std::iter::repeat_n(None, n - fixed));
            out.extend(pats[r + 1..].iter().map(|p| Some(*p)));
            out
        }
    })
}

/// The slice pattern of a `let` (`let [x, y]: [f64; 2] = ..`), if it is one.
pub(crate) fn slice_pat(p: &syn::Pat) -> Option<&syn::PatSlice> {
    match p {
        syn::Pat::Slice(s) => Some(s),
        syn::Pat::Type(t) => slice_pat(&t.pat),
        syn::Pat::Paren(p) => slice_pat(&p.pat),
        _ => None,
    }
}
