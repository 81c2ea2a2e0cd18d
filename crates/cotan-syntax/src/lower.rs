//! Lowering context: bindings, regions under construction, statements and control flow.
//!
//! Early exits (`break`, `continue`, `return`) become boolean flag variables: the flag is
//! set where the exit happens, loops stop after an iteration whose flag is set, and the
//! statements after a possible exit run under `if !flag { .. }`. The IR stays structured.

use cotan_ir::HashMap;
use std::rc::Rc;

use crate::span::Spanned;
use cotan_ir::{
    Access, Const, Dim, Function, MemKind, MemTy, Op, OpKind, Region, Scalar, SpanId, Ty, UnOp, Value, Var,
};
use proc_macro2::Span;

use crate::agg::{Agg, Merge, Slot, Tree};
use crate::env::{Env, NoEnv};
use crate::exits::{exits_of_block, exits_of_expr, exits_of_stmt, Exit};
use crate::infer::{Class, Infer, STy};
use crate::signature;

/// A function lowered to IR, with the table that maps the IR's span ids back to source spans.
#[derive(Clone)]
pub struct Lowered {
    pub func: Function,
    pub spans: Vec<Span>,
    /// Fields (`p.n`) whose use shows no number type (only `p.n as f64`, say): taken as
    /// integers, which the generated code must check (`rt::not_float`).
    pub assumed_int: Vec<(String, Span)>,
    /// How the results (`func.returns`) make up the Rust result, when it is a tuple or an
    /// array rather than a single value.
    pub ret_shape: Option<crate::signature::ResultShape>,
}

impl Lowered {
    pub fn span(&self, id: SpanId) -> Span {
        self.spans.get(id.0 as usize).copied().unwrap_or_else(Span::call_site)
    }
}

pub(crate) fn err<T>(span: Span, msg: impl std::fmt::Display) -> syn::Result<T> {
    Err(syn::Error::new(span, msg))
}

/// An error covering the whole of `node`, first token to last.
pub(crate) fn err_at<T>(node: &impl quote::ToTokens, msg: impl std::fmt::Display) -> syn::Result<T> {
    Err(syn::Error::new_spanned(node, msg))
}

#[derive(Clone)]
pub(crate) enum Binding {
    Value(Value),
    Var(Var),
    /// An element reached through `iter_mut`: `mem[index]`.
    Place(Value, Value),
    /// A `let mut` slice reference, which assignments point at other parts of the same
    /// buffer: `root[start..end]`, with the bounds in variables.
    SliceVar {
        root: Value,
        start: Var,
        end: Var,
        ty: MemTy,
    },
    /// A `let mut` raw pointer to numbers, which assignments point elsewhere in the same
    /// buffer: `root` offset by `offset` elements (an `isize` variable).
    PtrVar {
        root: Value,
        offset: Var,
        ty: MemTy,
    },
    /// The chunks of `let (chunks, rest) = base.as_chunks::<N>();`: `base` seen as arrays
    /// of `n` numbers, each taken where it is used (see `slices.rs`).
    Chunks {
        base: Value,
        n: u64,
        access: Access,
    },
    /// A tuple or `Option` (see `agg.rs`).
    Agg(Tree<Slot>),
    /// A local closure: an index into `Lower::closures`.
    Closure(usize),
}

pub(crate) struct LoopCtx {
    label: Option<String>,
    brk: Option<Var>,
    cont: Option<Var>,
    /// Receives `break value` of a `loop`.
    result: Option<Var>,
    /// Depth of the region stack outside the loop, where its flags are declared.
    outer_depth: usize,
}

pub(crate) struct Lower {
    pub(crate) func: Function,
    pub(crate) spans: Vec<Span>,
    span: SpanId,
    pub(crate) stack: Vec<Vec<Op>>,
    /// Ops hoisted to the top of the function so far (record fields).
    hoisted: usize,
    /// The field of a record, by record and field name.
    pub(crate) fields: HashMap<(Value, String), Value>,
    /// The fields of `fields` taken where they are used (not hoisted), with the depth of the
    /// region they were taken in: forgotten when it ends.
    pub(crate) local_fields: Vec<(usize, (Value, String))>,
    /// The Rust path of each field value (`self.inner.n`).
    pub(crate) field_paths: HashMap<Value, String>,
    assumed_int: Vec<(String, Span)>,
    /// Values read from number fields (whose type may be known only from their uses).
    pub(crate) field_loads: cotan_ir::HashSet<Value>,
    pub(crate) field_shapes: HashMap<String, crate::record::Shape>,
    pub(crate) scopes: Vec<Vec<(String, Binding)>>,
    pub(crate) infer: Infer,
    sty: HashMap<Value, STy>,
    var_sty: HashMap<Var, STy>,
    /// Element types of local buffers, which may still be inferred.
    mem_elem: HashMap<Value, STy>,
    /// Constants whose kind (float, integer, bool) is known only once types are resolved.
    pending_zeros: Vec<Value>,
    /// Those of them that are ones rather than zeros.
    pending_ones: cotan_ir::HashSet<Value>,
    pub(crate) loops: Vec<LoopCtx>,
    /// Flag and value of an early `return`, when the body has one.
    pub(crate) ret_flag: Option<Var>,
    /// The variables of an early `return`'s value (one per result).
    ret_vars: Vec<Var>,
    /// The types of the results: none for `()`, several for a tuple or an array.
    pub(crate) ret_tys: Vec<STy>,
    ret_shape: Option<crate::signature::ResultShape>,
    /// Local closures, inlined where they are called.
    pub(crate) closures: Vec<crate::closure::ClosureDef>,
    /// The enum variant names the function uses (`Mode::A` is variant `A`), numbered.
    pub(crate) variants: Vec<String>,
    /// The placeholder payloads of `None`s, which take the shape of the `Option` they meet.
    pub(crate) none_payloads: cotan_ir::HashSet<Value>,
    /// The results of calls, with the callee (for messages).
    pub(crate) call_results: HashMap<Value, (String, Span)>,
    /// Local structs lent `&mut` to the call whose arguments are being lowered (`lend.rs`).
    pub(crate) lent: Vec<crate::lend::Lent>,
    /// The values a helper lowered at its call gives by `return` (`inline.rs`), and its
    /// declared result type (which shapes a `None`).
    pub(crate) inline_ret: Option<(crate::agg::Merge, Option<syn::Type>)>,
    /// Sub-slices made so far: `(base, start, end)`.
    pub(crate) views: HashMap<Value, (Value, Value, Value)>,
    /// Offsets (pointer arithmetic, `as_ptr`, `&*p`) made so far: `(base, offset)`.
    pub(crate) offsets: HashMap<Value, (Value, Value)>,
    /// Elements taken by `&mut` (`&mut v[i]`, `v.get_mut(i)`, `v.last_mut()`): the value
    /// read there, with its place `(mem, index)`. A name bound to one is the place itself
    /// (`Binding::Place`), so that it reads and writes the element where it is used.
    pub(crate) elem_refs: HashMap<Value, (Value, Value)>,
    /// The caller's arrays and vectors bound to a reference parameter of a function lowered
    /// at its call (`y: &mut [f64]` given `&mut y`), with whether it is `&mut`: passed on by
    /// name (`g(y)`), each is that reference.
    pub(crate) lent_params: HashMap<Value, bool>,
    /// What the crate says about its structs and functions.
    pub(crate) env: Rc<dyn Env>,
    /// Parameters and results that are structs of numbers are taken field by field (for a
    /// function that cotan calls, whose derivatives only cotan calls).
    pub(crate) flatten: bool,
    /// The struct of numbers the function returns, field by field.
    pub(crate) ret_struct: Option<crate::env::Structure>,
    /// The functions being inlined, innermost last (`inline.rs`).
    pub(crate) inline_stack: Vec<String>,
    /// Fields of parameters (and their fields), taken at the top of the function.
    pub(crate) top_fields: cotan_ir::HashSet<Value>,
}

fn no_env() -> Rc<dyn Env> {
    Rc::new(NoEnv)
}

/// Lowers a free function (or a method without `self`) to IR.
pub fn lower_fn(sig: &syn::Signature, body: &syn::Block) -> syn::Result<Lowered> {
    lower(sig, body, &no_env(), false)
}

/// [`lower_fn`] with what `env` knows of the crate: structs of numbers built and passed
/// around in the body. With `flatten`, the function's own parameters and result that are
/// structs of numbers are taken field by field (see `env.rs`), as for functions that cotan
/// calls; tuple results are lowered too.
pub fn lower_fn_in(sig: &syn::Signature, body: &syn::Block, env: Rc<dyn Env>, flatten: bool) -> syn::Result<Lowered> {
    lower(sig, body, &env, flatten)
}

/// The parameters and results of a function, without its body (for functions whose body
/// is not differentiated: custom and zero derivatives).
pub fn lower_signature(sig: &syn::Signature) -> syn::Result<Function> {
    let empty: syn::Block = syn::parse_quote!({});
    if let Some(g) = crate::generic::monomorphic(sig, &empty)? {
        let mut f = lower_signature(&g.sig)?;
        f.generic_float = g.float;
        f.type_params = g.others;
        return Ok(f);
    }
    let mut l = Lower::new(sig, &empty, Rc::new(NoEnv), false);
    l.func.unsafe_code = sig.unsafety.is_some();
    signature::lower_params(&mut l, sig)?;
    l.func.returns = match signature::tuple_return_types(sig) {
        Some(tys) => tys.iter().map(|s| Ty::Scalar(*s)).collect(),
        None => signature::return_type(sig)?.map(Ty::Scalar).into_iter().collect(),
    };
    l.func.body.ops = l.stack.pop().unwrap_or_default();
    Ok(l.func)
}

fn lower(sig: &syn::Signature, body: &syn::Block, env: &Rc<dyn Env>, flatten: bool) -> syn::Result<Lowered> {
    if let Some(g) = crate::generic::monomorphic(sig, body)? {
        let mut lowered = lower(&g.sig, &g.body, env, flatten)?;
        lowered.func.generic_float = g.float;
        lowered.func.type_params = g.others;
        return Ok(lowered);
    }
    let mut discarded = body.clone();
    discard_values(&mut discarded, matches!(sig.output, syn::ReturnType::Default));
    if let (syn::ReturnType::Type(_, ty), Some(syn::Stmt::Expr(tail, None))) = (&sig.output, discarded.stmts.last_mut())
    {
        // (`std::array::from_fn(..)` as the result takes the declared array type.)
        if matches!(**ty, syn::Type::Array(_)) {
            crate::inline::type_final_nones(tail, ty);
        }
    }
    let body = &discarded;
    let mut l = Lower::new(sig, body, env.clone(), flatten);
    l.func.unsafe_code = sig.unsafety.is_some();
    signature::lower_params(&mut l, sig)?;
    let returned = match &sig.output {
        syn::ReturnType::Type(_, t) => l.flat_struct_type(t),
        syn::ReturnType::Default => None,
    };
    if let Some(st) = returned {
        // A struct of numbers, returned field by field.
        let tys = st.leaves();
        l.ret_tys = tys.iter().map(|s| STy::Known(*s)).collect();
        l.ret_struct = Some(st);
        l.func.returns = tys.into_iter().map(Ty::Scalar).collect();
        l.body(body)?;
        l.finalize();
        return Ok(Lowered { func: l.func, spans: l.spans, assumed_int: l.assumed_int, ret_shape: None });
    }
    let (tys, shape) = signature::result_types(sig)?;
    l.ret_tys = tys.iter().map(|s| STy::Known(*s)).collect();
    l.ret_shape = shape;
    l.func.returns = tys.into_iter().map(Ty::Scalar).collect();
    l.body(body)?;
    l.finalize();
    Ok(Lowered { func: l.func, spans: l.spans, assumed_int: l.assumed_int, ret_shape: shape })
}

impl Lower {
    fn new(sig: &syn::Signature, body: &syn::Block, env: Rc<dyn Env>, flatten: bool) -> Lower {
        Lower {
            func: Function::new(sig.ident.to_string()),
            spans: vec![Span::call_site()],
            span: SpanId::NONE,
            stack: vec![vec![]],
            hoisted: 0,
            fields: HashMap::default(),
            field_paths: HashMap::default(),
            assumed_int: vec![],
            field_loads: Default::default(),
            field_shapes: crate::record::field_shapes(body),
            scopes: vec![vec![]],
            infer: Infer::default(),
            sty: HashMap::default(),
            var_sty: HashMap::default(),
            mem_elem: HashMap::default(),
            pending_zeros: vec![],
            pending_ones: Default::default(),
            loops: vec![],
            ret_flag: None,
            ret_vars: vec![],
            ret_tys: vec![],
            ret_shape: None,
            closures: vec![],
            variants: vec![],
            none_payloads: Default::default(),
            call_results: HashMap::default(),
            lent: vec![],
            inline_ret: None,
            views: HashMap::default(),
            env,
            flatten,
            ret_struct: None,
            inline_stack: vec![],
            top_fields: Default::default(),
            offsets: HashMap::default(),
            elem_refs: HashMap::default(),
            lent_params: HashMap::default(),
            local_fields: vec![],
        }
    }
}

impl Lower {
    // ---- building ----

    pub(crate) fn at(&mut self, span: Span) -> SpanId {
        self.spans.push(span);
        let id = SpanId(self.spans.len() as u32 - 1);
        self.span = id;
        id
    }

    pub(crate) fn emit(&mut self, kind: OpKind, ty: Ty) -> Value {
        let v = self.func.new_value(ty, None, self.span);
        self.stack.last_mut().unwrap().push(Op { kind, result: Some(v), span: self.span });
        v
    }

    /// Emits an op with a scalar result whose type may still be inferred.
    pub(crate) fn emit_s(&mut self, kind: OpKind, t: STy) -> Value {
        let s = self.infer.resolve(t);
        let v = self.emit(kind, Ty::Scalar(s));
        self.sty.insert(v, t);
        v
    }

    /// Puts an op at the top of the function, after those hoisted before it, so that it
    /// dominates every use.
    pub(crate) fn hoist(&mut self, op: Op) {
        self.stack[0].insert(self.hoisted, op);
        self.hoisted += 1;
    }

    pub(crate) fn effect(&mut self, kind: OpKind) {
        self.stack.last_mut().unwrap().push(Op { kind, result: None, span: self.span });
    }

    pub(crate) fn effect_at(&mut self, depth: usize, kind: OpKind) {
        self.stack[depth - 1].push(Op { kind, result: None, span: self.span });
    }

    fn emit_at(&mut self, depth: usize, kind: OpKind, t: STy) -> Value {
        let s = self.infer.resolve(t);
        let v = self.func.new_value(Ty::Scalar(s), None, self.span);
        self.sty.insert(v, t);
        self.stack[depth - 1].push(Op { kind, result: Some(v), span: self.span });
        v
    }

    /// A local array of `n` zeros of `like`'s element type, made in the region at `depth`
    /// (the value of an `if` or `match` that gives arrays).
    pub(crate) fn array_at(&mut self, depth: usize, like: Value, n: u64) -> Value {
        let elem = self.elem_sty(like);
        let zero = self.zero_at(depth, elem);
        let ty = self.mem_ty(like).expect("an array");
        self.alloc_at(depth, n, zero, ty, elem)
    }

    /// `n` copies of `init` (a number, or a row), memory of type `ty` whose numbers are of
    /// type `elem`, made in the region at `depth`.
    fn alloc_at(&mut self, depth: usize, n: u64, init: Value, ty: MemTy, elem: STy) -> Value {
        let len = self.emit_at(depth, OpKind::Const(Const::Int(n as i128)), STy::Known(Scalar::Usize));
        let v = self.func.new_value(Ty::Mem(ty), None, self.span);
        self.stack[depth - 1].push(Op { kind: OpKind::Alloc { len, init }, result: Some(v), span: self.span });
        self.set_elem_sty(v, elem);
        v
    }

    /// A buffer of zeros of `like`'s shape, made in the region at `depth`: `like` an array
    /// of numbers or of arrays (`[[f64; 3]; 3]`) the function owns (an array field of a
    /// struct an `if` gives); `None` for other memory.
    pub(crate) fn zeros_like_at(&mut self, depth: usize, like: Value) -> Option<Value> {
        let m = self.mem_ty(like)?;
        if m.access != Access::Owned {
            return None;
        }
        match m.kind {
            MemKind::Array(n) => Some(self.array_at(depth, like, n)),
            MemKind::Nested(Dim::Array(n), Dim::Array(k), None) => {
                let elem = self.elem_sty(like);
                let zero = self.zero_at(depth, elem);
                let row_ty = MemTy { kind: MemKind::Array(k), elem: m.elem, access: Access::Owned };
                let row = self.alloc_at(depth, k, zero, row_ty, elem);
                Some(self.alloc_at(depth, n, row, m, elem))
            }
            _ => None,
        }
    }

    pub(crate) fn push_region(&mut self) {
        self.stack.push(vec![]);
    }

    pub(crate) fn pop_region(&mut self) -> Region {
        // Fields taken inside the region are not visible after it.
        let depth = self.stack.len();
        while self.local_fields.last().is_some_and(|(d, _)| *d >= depth) {
            let (_, key) = self.local_fields.pop().unwrap();
            self.fields.remove(&key);
        }
        Region { ops: self.stack.pop().unwrap() }
    }

    pub(crate) fn sty(&self, v: Value) -> Option<STy> {
        self.sty.get(&v).copied()
    }

    pub(crate) fn set_sty(&mut self, v: Value, t: STy) {
        self.sty.insert(v, t);
    }

    pub(crate) fn mem_ty(&self, v: Value) -> Option<MemTy> {
        self.func.ty(v).mem()
    }

    pub(crate) fn bool_const(&mut self, b: bool) -> Value {
        self.emit_s(OpKind::Const(Const::Bool(b)), STy::Known(Scalar::Bool))
    }

    pub(crate) fn new_var(&mut self, name: &str, t: STy) -> Var {
        let s = self.infer.resolve(t);
        let var = self.func.new_var(s, name);
        self.var_sty.insert(var, t);
        var
    }

    pub(crate) fn var_sty(&self, var: Var) -> STy {
        self.var_sty[&var]
    }

    /// Declares a bool flag, initially false, in the region at `depth`.
    pub(crate) fn flag_at(&mut self, depth: usize, name: &str) -> Var {
        let var = self.new_var(name, STy::Known(Scalar::Bool));
        let f = self.emit_at(depth, OpKind::Const(Const::Bool(false)), STy::Known(Scalar::Bool));
        self.effect_at(depth, OpKind::DeclVar { var, init: f });
        var
    }

    /// A zero of type `t`, used to initialise variables that are assigned before being read.
    pub(crate) fn zero(&mut self, t: STy) -> Value {
        let depth = self.stack.len();
        self.zero_at(depth, t)
    }

    pub(crate) fn zero_at(&mut self, depth: usize, t: STy) -> Value {
        let c = match self.infer.class_of(t) {
            Some(Class::Float) => Const::Float(0.0),
            Some(Class::Int) => Const::Int(0),
            _ if self.infer.current(t) == STy::Known(Scalar::Bool) => Const::Bool(false),
            _ => {
                let v = self.emit_at(depth, OpKind::Const(Const::Float(0.0)), t);
                self.pending_zeros.push(v);
                return v;
            }
        };
        self.emit_at(depth, OpKind::Const(c), t)
    }

    pub(crate) fn unify(&mut self, a: STy, b: STy, span: Span) -> syn::Result<()> {
        self.infer.unify(a, b).or_else(|(x, y)| err(span, format!("mismatched types: expected `{x}`, found `{y}`")))
    }

    /// The element type of memory, as far as it is known.
    pub(crate) fn elem_sty(&self, m: Value) -> STy {
        self.mem_elem.get(&m).copied().unwrap_or_else(|| STy::Known(self.func.ty(m).mem().unwrap().elem))
    }

    pub(crate) fn set_elem_sty(&mut self, m: Value, t: STy) {
        self.mem_elem.insert(m, t);
    }

    /// Turns a pending zero into a pending one.
    pub(crate) fn mark_one(&mut self, v: Value) {
        self.pending_ones.insert(v);
    }

    pub(crate) fn push_scope(&mut self) {
        self.scopes.push(vec![]);
    }

    pub(crate) fn pop_scope(&mut self) {
        self.scopes.pop();
    }

    /// A zero whose kind is decided when types are resolved.
    pub(crate) fn pending_zero(&mut self, t: STy) -> Value {
        let v = self.emit_s(OpKind::Const(Const::Float(0.0)), t);
        self.pending_zeros.push(v);
        v
    }

    fn finalize(&mut self) {
        let mut fields: Vec<Value> = self.fields.values().copied().collect();
        fields.sort();
        for v in fields {
            let Some(&t) = self.mem_elem.get(&v) else { continue };
            // A number field whose uses show only that it is an integer (`p.n as f64`,
            // `k < p.n`) is taken for a `usize`, and rustc checks it is no float: taking a
            // float for an integer would drop its derivative. Nothing known: a float
            // (wrong guesses there fail to compile).
            if !matches!(self.infer.current(t), STy::Flex(_)) {
                continue;
            }
            match self.infer.class_of(t) {
                Some(Class::Int) => {
                    let _ = self.infer.unify(t, STy::Known(Scalar::Usize));
                    let span = self.spans[self.func.value(v).span.0 as usize];
                    self.assumed_int.push((self.field_paths[&v].clone(), span));
                }
                None => {
                    let _ = self.infer.unify(t, STy::Known(Scalar::F64));
                }
                _ => {}
            }
        }
        for (m, t) in self.mem_elem.clone() {
            let s = self.infer.resolve(t);
            if let Ty::Mem(mt) = &mut self.func.values[m.0 as usize].ty {
                mt.elem = s;
            }
        }
        let pending: cotan_ir::HashSet<Value> = self.pending_zeros.iter().copied().collect();
        let sty = &self.sty;
        let ones = &self.pending_ones;
        let infer = &mut self.infer;
        self.func.body.walk_mut(&mut |op| {
            if let Some(r) = op.result.filter(|r| pending.contains(r)) {
                let s = infer.resolve(sty[&r]);
                let one = ones.contains(&r);
                op.kind = OpKind::Const(if s.is_float() {
                    Const::Float(if one { 1.0 } else { 0.0 })
                } else if s == Scalar::Bool {
                    Const::Bool(one)
                } else {
                    Const::Int(i128::from(one))
                });
            }
        });
        for (v, t) in self.sty.clone() {
            let s = self.infer.resolve(t);
            self.func.values[v.0 as usize].ty = Ty::Scalar(s);
        }
        for (var, t) in self.var_sty.clone() {
            let s = self.infer.resolve(t);
            self.func.vars[var.0 as usize].ty = s;
        }
    }

    // ---- bindings ----

    pub(crate) fn bind(&mut self, name: String, b: Binding) {
        if let Binding::Value(v) = b {
            let data = &mut self.func.values[v.0 as usize];
            if data.name.is_none() && name != "_" {
                data.name = Some(name.clone());
            }
        }
        self.scopes.last_mut().unwrap().push((name, b));
    }

    pub(crate) fn lookup(&self, name: &str) -> Option<Binding> {
        self.scopes.iter().rev().flat_map(|s| s.iter().rev()).find(|(n, _)| n == name).map(|(_, b)| b.clone())
    }

    // ---- function body ----

    fn body(&mut self, body: &syn::Block) -> syn::Result<()> {
        let (stmts, final_return) = split_final_return(&body.stmts);
        if stmts.iter().any(|s| exits_of_stmt(s).contains(&Exit::Return)) {
            self.ret_flag = Some(self.flag_at(1, "returned"));
            for t in self.ret_tys.clone() {
                let z = self.zero(t);
                let var = self.new_var("ret", t);
                self.effect(OpKind::DeclVar { var, init: z });
                self.ret_vars.push(var);
            }
        }
        let tail = match final_return {
            Some(e) => self.stmts_then(stmts, |l| l.agg_opt(e))?,
            None => self.stmts_then(stmts, |_| Ok(None))?,
        };
        let mut ret = vec![];
        match (tail, self.ret_tys.is_empty()) {
            (Some(a), false) => {
                let vals = self.result_values(a, body.span())?;
                match self.ret_flag {
                    Some(flag) => {
                        // The tail is the result only if no early return happened.
                        let bool_t = STy::Known(Scalar::Bool);
                        let returned = self.emit_s(OpKind::GetVar(flag), bool_t);
                        let not = self.emit_s(OpKind::Unary(UnOp::Not, returned), bool_t);
                        self.push_region();
                        for (var, v) in self.ret_vars.clone().into_iter().zip(vals) {
                            self.effect(OpKind::SetVar(var, v));
                        }
                        let then_region = self.pop_region();
                        self.effect(OpKind::If { cond: not, then_region, else_region: Region::default() });
                        for (var, t) in self.ret_vars.clone().into_iter().zip(self.ret_tys.clone()) {
                            ret.push(self.emit_s(OpKind::GetVar(var), t));
                        }
                    }
                    None => ret = vals,
                }
            }
            (None, false) => {
                if !self.ret_vars.is_empty() {
                    for (var, t) in self.ret_vars.clone().into_iter().zip(self.ret_tys.clone()) {
                        ret.push(self.emit_s(OpKind::GetVar(var), t));
                    }
                } else if stmts.last().is_some_and(crate::expr::ends_in_panic) {
                    // `unimplemented!()`: the body panics; placeholder results follow it.
                    for t in self.ret_tys.clone() {
                        ret.push(self.zero(t));
                    }
                } else {
                    return err_at(&body, "cotan could not find the value this function returns");
                }
            }
            (Some(_), true) => return err_at(&body, "this function returns `()` but its body ends in a value"),
            (None, true) => {}
        }
        if !self.func.returns.is_empty() {
            self.effect(OpKind::Return(ret));
        }
        let ops = self.stack.pop().unwrap();
        self.func.body = Region { ops };
        Ok(())
    }

    /// The results a returned value makes, of the function's result types: a number, the
    /// elements of a tuple, or those of an array.
    fn result_values(&mut self, a: Agg, span: Span) -> syn::Result<Vec<Value>> {
        use crate::signature::ResultShape;
        let n = self.ret_tys.len();
        if let Some(st) = self.ret_struct.clone() {
            return self.leaves_of(a, &st, span);
        }
        let vals = match (self.ret_shape, a) {
            (None, Tree::Leaf(v)) if self.func.ty(v).mem().is_none() => vec![v],
            (Some(ResultShape::Tuple), Tree::Tuple(es)) if es.len() == n => {
                let mut vals = vec![];
                for e in es {
                    match e {
                        Tree::Leaf(v) => vals.push(v),
                        e => {
                            return err(
                                span,
                                format!("cotan returns tuples of numbers only; this element is {}", e.describe()),
                            )
                        }
                    }
                }
                vals
            }
            (Some(ResultShape::Array), Tree::Leaf(m)) if self.func.ty(m).mem().is_some() => {
                let t = self.elem_sty(m);
                (0..n)
                    .map(|k| {
                        let i = self.emit_s(OpKind::Const(Const::Int(k as i128)), STy::Known(Scalar::Usize));
                        self.emit_s(OpKind::Load { mem: m, index: Some(i) }, t)
                    })
                    .collect()
            }
            (_, a) => {
                let want = match self.ret_shape {
                    None => "a number".to_string(),
                    Some(ResultShape::Tuple) => format!("a tuple of {n} numbers"),
                    Some(ResultShape::Array) => format!("an array of {n} numbers"),
                };
                return err(span, format!("expected {want} as the result, found {}", a.describe()));
            }
        };
        for (v, t) in vals.iter().zip(self.ret_tys.clone()) {
            let vt = self.scalar_sty(*v, span)?;
            self.unify(t, vt, span)?;
        }
        Ok(vals)
    }

    pub(crate) fn block(&mut self, b: &syn::Block) -> syn::Result<Option<Agg>> {
        self.stmts_then(&b.stmts, |_| Ok(None))
    }

    /// Lowers statements in a new scope, then `tail`; statements after a possible early
    /// exit run only if no exit flag is set. Returns the value of the block, if any.
    fn stmts_then(
        &mut self,
        stmts: &[syn::Stmt],
        tail: impl FnOnce(&mut Self) -> syn::Result<Option<Agg>>,
    ) -> syn::Result<Option<Agg>> {
        self.scopes.push(vec![]);
        let r = self.stmts_inner(stmts, Box::new(tail));
        self.scopes.pop();
        r
    }

    #[allow(clippy::type_complexity)]
    fn stmts_inner(
        &mut self,
        stmts: &[syn::Stmt],
        tail: Box<dyn FnOnce(&mut Self) -> syn::Result<Option<Agg>> + '_>,
    ) -> syn::Result<Option<Agg>> {
        for (k, stmt) in stmts.iter().enumerate() {
            let last = k + 1 == stmts.len();
            if let Some(split) = self.split_at_memory_let(stmt, &stmts[k + 1..]) {
                return self.stmts_inner(std::slice::from_ref(&split), tail);
            }
            let stmt = &crate::chunk_len::with_chunk_len(stmt, &stmts[k + 1..]);
            let value = self.stmt(stmt, last)?;
            if last {
                if value.is_some() {
                    return Ok(value);
                }
                break;
            }
            if !exits_of_stmt(stmt).is_empty() {
                // The rest runs only if this statement did not exit.
                let rest = &stmts[k + 1..];
                let guard = self.guard();
                let not = self.emit_s(OpKind::Unary(UnOp::Not, guard), STy::Known(Scalar::Bool));
                let depth = self.stack.len();
                self.push_region();
                let v = self.stmts_inner(rest, tail)?;
                let mut carried = Merge::new(depth);
                if let Some(v) = v {
                    carried.set(self, &v, stmt.span())?;
                }
                let then_region = self.pop_region();
                self.effect(OpKind::If { cond: not, then_region, else_region: Region::default() });
                return Ok(carried.get(self));
            }
        }
        tail(self)
    }

    /// `let PAT = if c { A } else { B }; rest` where the branches give references into
    /// memory (`x2.as_mut()`, sub-slices of different buffers), which no IR value can hold
    /// whichever branch ran: as `if c { let PAT = A; rest } else { let PAT = B; rest }`, the
    /// same program with the rest of the block in each branch.
    fn split_at_memory_let(&self, stmt: &syn::Stmt, rest: &[syn::Stmt]) -> Option<syn::Stmt> {
        let syn::Stmt::Local(local) = stmt else { return None };
        let init = local.init.as_ref().filter(|i| i.diverge.is_none())?;
        let syn::Expr::If(cond) = strip_parens(&init.expr) else { return None };
        if rest.is_empty() || !self.gives_memory(cond) {
            return None;
        }
        let pat = &local.pat;
        // The rest sees the branch's own bindings once moved there: none may hide a name it uses.
        let mut used = Names::default();
        for s in rest {
            syn::visit::Visit::visit_stmt(&mut used, s);
        }
        let mut bound = Names::default();
        syn::visit::Visit::visit_pat(&mut bound, pat);
        if branch_bindings(cond).iter().any(|n| used.0.contains(n) && !bound.0.contains(n)) {
            return None;
        }
        let branch = |value: &syn::Expr| -> syn::Block {
            syn::parse_quote_spanned!(value.span()=> { let #pat = #value; #(#rest)* })
        };
        let split = split_if(cond, &branch)?;
        let value = matches!(rest.last(), Some(syn::Stmt::Expr(_, None)));
        Some(syn::Stmt::Expr(syn::Expr::If(split), (!value).then(Default::default)))
    }

    /// Whether a branch of an `if` ends in a reference into memory (also in a tuple).
    fn gives_memory(&self, e: &syn::ExprIf) -> bool {
        let tail = |b: &syn::Block| match b.stmts.last() {
            Some(syn::Stmt::Expr(e, None)) => self.is_memory_ref(e),
            _ => false,
        };
        tail(&e.then_branch)
            || match e.else_branch.as_ref().map(|(_, e)| strip_parens(e)) {
                Some(syn::Expr::Block(b)) => tail(&b.block),
                Some(syn::Expr::If(i)) => self.gives_memory(i),
                _ => false,
            }
    }

    fn is_memory_ref(&self, e: &syn::Expr) -> bool {
        match strip_parens(e) {
            syn::Expr::Tuple(t) => t.elems.iter().any(|e| self.is_memory_ref(e)),
            syn::Expr::Reference(r) => self.is_memory(&r.expr),
            syn::Expr::MethodCall(m) => {
                matches!(m.method.to_string().as_str(), "as_mut" | "as_ref" | "as_slice" | "as_mut_slice")
                    && self.is_memory(&m.receiver)
            }
            _ => false,
        }
    }

    /// True when an exit flag that should skip the rest of the current block is set.
    fn guard(&mut self) -> Value {
        let flags: Vec<Var> = match self.loops.last() {
            Some(l) => l.brk.into_iter().chain(l.cont).collect(),
            None => self.ret_flag.into_iter().collect(),
        };
        let b = STy::Known(Scalar::Bool);
        let mut acc: Option<Value> = None;
        for f in flags {
            let v = self.emit_s(OpKind::GetVar(f), b);
            acc = Some(match acc {
                None => v,
                Some(a) => self.emit_s(OpKind::Binary(cotan_ir::BinOp::BitOr, a, v), b),
            });
        }
        acc.unwrap_or_else(|| self.bool_const(false))
    }

    pub(crate) fn stmt(&mut self, stmt: &syn::Stmt, last: bool) -> syn::Result<Option<Agg>> {
        self.at(stmt.span());
        match stmt {
            syn::Stmt::Local(local) => {
                self.local(local)?;
                Ok(None)
            }
            syn::Stmt::Expr(syn::Expr::Call(c), Some(_)) if self.is_user_call(c) => {
                // A call whose result is dropped: it may return `()`.
                self.user_call(c, false)?;
                Ok(None)
            }
            syn::Stmt::Expr(syn::Expr::MethodCall(m), Some(_)) if self.is_record_receiver(&m.receiver) => {
                // A method whose result is dropped: it may return `()`.
                self.record_method(m, Some(0)).expect("checked: the receiver is a record")?;
                Ok(None)
            }
            syn::Stmt::Expr(e, semi) => {
                let v = self.agg_opt(e)?;
                Ok(if semi.is_none() && last { v } else { None })
            }
            syn::Stmt::Macro(m) => {
                crate::expr::statement_macro(self, &m.mac)?;
                Ok(None)
            }
            syn::Stmt::Item(item) => err_at(&item,
                "cotan does not support items (functions, structs, uses, ...) inside a differentiated function; move them outside it",
            ),
        }
    }

    fn local(&mut self, local: &syn::Local) -> syn::Result<()> {
        let Some(init) = &local.init else {
            return self.deferred_let(local);
        };
        if let Some((_, diverge)) = &init.diverge {
            return self.let_else(&local.pat, &init.expr, diverge);
        }
        if let Some(desugared) = array_from_fn(local, &init.expr) {
            return self.local(&desugared);
        }
        let pat = match &local.pat {
            syn::Pat::Type(pt) => &*pt.pat,
            p => p,
        };
        if let (syn::Pat::Tuple(t), syn::Expr::Call(c)) = (pat, &*init.expr) {
            if self.is_user_call(c) {
                // `let (a, b) = g(..)`: a function returning a tuple, as a generated derivative does.
                let vals = self.user_call_n(c, t.elems.len())?;
                for (p, v) in t.elems.iter().zip(vals) {
                    self.bind_pat(p, v)?;
                }
                return Ok(());
            }
        }
        if let (syn::Pat::Tuple(t), syn::Expr::MethodCall(m)) = (pat, strip_parens(&init.expr)) {
            // `let (a, b) = s.method(..)` of a struct: as `Type::method(&s, ..)` is.
            if let Some(vals) = self.record_method(m, Some(t.elems.len())) {
                for (p, v) in t.elems.iter().zip(vals?) {
                    self.bind_pat(p, v)?;
                }
                return Ok(());
            }
        }
        if let (syn::Pat::Ident(pi), syn::Expr::Closure(c)) = (pat, strip_parens(&init.expr)) {
            return self.define_closure(pi, c);
        }
        if let (syn::Pat::Ident(pi), syn::Expr::Path(p)) = (pat, strip_parens(&init.expr)) {
            // `let g = f;` with `f` a local closure: another name for it.
            if let Some(Binding::Closure(id)) = p.path.get_ident().and_then(|i| self.lookup(&i.to_string())) {
                self.bind(pi.ident.to_string(), Binding::Closure(id));
                return Ok(());
            }
        }
        if let Some((m, _)) = crate::slices::as_chunks_call(&init.expr) {
            return self.as_chunks_let(&local.pat, m);
        }
        let a = self.agg(&init.expr)?;
        if let (Some(s), Tree::Leaf(m)) = (crate::agg::slice_pat(&local.pat), &a) {
            if self.is_array_ref(&init.expr, *m) {
                // `let [x, y] = r;` of `r: &mut [f64; 2]`: `x` and `y` are `&mut f64`.
                return self.bind_elem_refs(s, *m);
            }
        }
        // `let b = a;`, `let r = x[i];`: `b` and `r` are arrays of their own.
        let a = self.own_arrays(&init.expr, a, binds_mut(&local.pat))?;
        self.bind_agg(&local.pat, a)
    }

    /// `let y;` (or `let y: f64;`), assigned later: a variable whose first value is a
    /// placeholder that Rust's definite-assignment rule guarantees nobody reads.
    fn deferred_let(&mut self, local: &syn::Local) -> syn::Result<()> {
        let (pat, annot) = match &local.pat {
            syn::Pat::Type(pt) => (&*pt.pat, Some(&*pt.ty)),
            p => (p, None),
        };
        let syn::Pat::Ident(pi) = pat else {
            return err_at(
                pat,
                "cotan needs `let` with a pattern to have an initial value; declare each name with its own `let x;`",
            );
        };
        let t = match annot {
            Some(ty) => match signature::scalar_type(ty) {
                Some(s) => STy::Known(s),
                None => return err_at(ty, "cotan supports `let x;` without a value for numbers and bools only"),
            },
            None => self.infer.fresh(crate::infer::Class::Any),
        };
        let zero = self.pending_zero(t);
        let var = self.new_var(&pi.ident.to_string(), t);
        self.effect(OpKind::DeclVar { var, init: zero });
        self.bind(pi.ident.to_string(), Binding::Var(var));
        Ok(())
    }

    /// Binds a `let` pattern (or a loop variable) to a value.
    pub(crate) fn bind_pat(&mut self, pat: &syn::Pat, v: Value) -> syn::Result<()> {
        match pat {
            syn::Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => {
                let name = pi.ident.to_string();
                if let Some(&(mem, index)) = self.elem_refs.get(&v) {
                    if pi.mutability.is_some() {
                        return err_at(
                            pi,
                            "cotan does not point a reference to an element elsewhere later; bind each element with its own `let x = &mut v[i];` (without `mut`)",
                        );
                    }
                    self.bind(name, Binding::Place(mem, index));
                    return Ok(());
                }
                if pi.mutability.is_some() && self.func.ty(v).mem().is_none() {
                    let t = self.scalar_sty(v, pi.span())?;
                    let var = self.new_var(&name, t);
                    self.effect(OpKind::DeclVar { var, init: v });
                    self.bind(name, Binding::Var(var));
                } else if pi.mutability.is_some() && self.is_slice_ref(v) {
                    let binding = self.slice_var(&name, v);
                    self.bind(name, binding);
                } else if pi.mutability.is_some() && self.mem_ty(v).is_some_and(|m| m.kind == MemKind::Ptr) {
                    let binding = self.ptr_var(&name, v);
                    self.bind(name, binding);
                } else {
                    self.bind(name, Binding::Value(v));
                }
                Ok(())
            }
            syn::Pat::Wild(_) => Ok(()),
            syn::Pat::Reference(r) => {
                // `&mut x` of an element reference binds a copy of the element.
                let v = self.elem_copy(v);
                self.bind_pat(&r.pat, v)
            }
            syn::Pat::Paren(p) => self.bind_pat(&p.pat, v),
            syn::Pat::Type(pt) => self.bind_pat(&pt.pat, v),
            p => err_at(
                &p,
                "cotan supports only simple bindings here (`x`, `mut x`, `&x`, `_`); destructure with separate `let`s",
            ),
        }
    }

    /// The scalar type of a value; an error for memory.
    pub(crate) fn scalar_sty(&mut self, v: Value, span: Span) -> syn::Result<STy> {
        match self.sty(v) {
            Some(t) => Ok(t),
            None => match self.func.ty(v).mem() {
                // A parameter of a type cotan cannot see (`x: Real`) is taken for a struct.
                Some(MemTy { kind: MemKind::Record(id), .. })
                    if syn::parse_str::<syn::Ident>(&self.func.records[id as usize]).is_ok() =>
                {
                    let ty = &self.func.records[id as usize];
                    if self.env.record_fields(ty).is_some() {
                        return err(span, format!("expected a number here, found a `{ty}` (a struct of your crate); cotan takes the operators the crate implements on `{ty}` (`v * 2.0` of `impl Mul<f64> for {ty}`, `2.0 * v` of `impl Mul<{ty}> for f64`, `a + b`, `&a + &b` of `impl Add<&{ty}> for &{ty}`) and the struct's methods: write it so, or call a method of your own"));
                    }
                    err(span, format!("expected a number here, found a value of type `{ty}`, which cotan takes for a struct (it reads the aliases of your crate, not of other crates); if `{ty}` is an alias of `f64` or `f32`, write that type in this function"))
                }
                _ => err(span, "expected a number or a bool here, found an array or reference"),
            },
        }
    }

    // ---- control flow ----

    /// `if cond { a } else { b }` and `if let PAT = e { a } else { b }`, as statements or
    /// as expressions.
    pub(crate) fn if_expr(&mut self, e: &syn::ExprIf) -> syn::Result<Option<Agg>> {
        if let syn::Expr::Let(l) = strip_parens(&e.cond) {
            if let Some((found, inner, element)) = self.struct_element_option(&l.pat, &l.expr) {
                // `if let Some(p) = ps.last() { .. }` of a slice of structs: the element is
                // taken in the branch that has one.
                let stmts = &e.then_branch.stmts;
                let at = l.let_token.span;
                let mut plain: syn::ExprIf =
                    syn::parse_quote_spanned!(at=> if #found { let #inner = #element; #(#stmts)* });
                plain.else_branch = e.else_branch.clone();
                return self.if_expr(&plain);
            }
        }
        let (cond, binder) = match strip_parens(&e.cond) {
            syn::Expr::Let(l) => {
                let scrutinee = self.agg(&l.expr)?;
                let cond = match self.pat_test(&l.pat, &scrutinee)? {
                    Some(c) => c,
                    None => self.bool_const(true),
                };
                (cond, Some((&*l.pat, scrutinee)))
            }
            c => (self.bool_expr(c)?, None),
        };
        let depth = self.stack.len();
        let mut result = Merge::new(depth);
        self.push_region();
        self.push_scope();
        if let Some((pat, scrutinee)) = binder {
            self.pat_bind(pat, scrutinee)?;
        }
        let a = self.block(&e.then_branch);
        self.pop_scope();
        if let Some(a) = a? {
            result.set(self, &a, e.then_branch.span())?;
        }
        let then_region = self.pop_region();
        self.push_region();
        if let Some((_, else_expr)) = &e.else_branch {
            if let Some(b) = self.agg_opt(else_expr)? {
                result.set(self, &b, else_expr.span())?;
            }
        }
        let else_region = self.pop_region();
        self.effect(OpKind::If { cond, then_region, else_region });
        Ok(result.get(self))
    }

    /// A block's or branch's value where a single number (or memory) is expected.
    pub(crate) fn single_value(&mut self, a: Option<Agg>, span: Span) -> syn::Result<Option<Value>> {
        match a {
            None => Ok(None),
            Some(Tree::Leaf(v)) => Ok(Some(v)),
            Some(a) => err(span, format!("expected a number here, found {}", a.describe())),
        }
    }

    pub(crate) fn bool_expr(&mut self, e: &syn::Expr) -> syn::Result<Value> {
        let v = self.expr(e)?;
        let t = self.scalar_sty(v, e.span())?;
        self.unify(STy::Known(Scalar::Bool), t, e.span())?;
        Ok(v)
    }

    fn loop_flags(&mut self, body: &syn::Block, label: &Option<syn::Label>) -> LoopCtx {
        let exits = exits_of_block(body);
        let own = label.as_ref().map(|l| l.name.ident.to_string());
        let depth = self.stack.len();
        let brk = (!exits.is_empty()).then(|| self.flag_at(depth, "broke"));
        let continues_here = exits.iter().any(|x| matches!(x, Exit::Continue(l) if l.is_none() || *l == own));
        let cont = continues_here.then(|| self.flag_at(depth, "continued"));
        LoopCtx { label: own, brk, cont, result: None, outer_depth: depth }
    }

    /// Lowers a loop body with `ctx` on the loop stack; returns the body region.
    fn loop_body(
        &mut self,
        ctx: LoopCtx,
        bind: impl FnOnce(&mut Self) -> syn::Result<()>,
        body: &syn::Block,
    ) -> syn::Result<(Region, LoopCtx)> {
        self.loops.push(ctx);
        self.push_region();
        self.scopes.push(vec![]);
        if let Some(c) = self.loops.last().unwrap().cont {
            let f = self.bool_const(false);
            self.effect(OpKind::SetVar(c, f));
        }
        bind(self)?;
        self.block(body)?;
        self.scopes.pop();
        let region = self.pop_region();
        Ok((region, self.loops.pop().unwrap()))
    }

    pub(crate) fn for_loop(&mut self, e: &syn::ExprForLoop) -> syn::Result<()> {
        if let Some(range) = crate::iter::par_of(&e.expr) {
            // `for i in cotan::par(lo..hi)`: the loop over `lo..hi`, listed as parallel
            // (`#[cotan::kernel]` has checked its body).
            let inner = syn::ExprForLoop { expr: Box::new(range.clone()), ..e.clone() };
            self.for_loop(&inner)?;
            // A `continue` of this loop is no exit from it (its flag is never set).
            let own = e.label.as_ref().map(|l| l.name.ident.to_string());
            let leaves =
                exits_of_block(&e.body).iter().any(|x| !matches!(x, Exit::Continue(l) if l.is_none() || *l == own));
            // The loop's span is its `for` (validation mode names its line).
            self.spans.push(e.for_token.span);
            let at = SpanId(self.spans.len() as u32 - 1);
            if let Some(Op { kind: OpKind::For { index, exit, .. }, span, .. }) =
                self.stack.last_mut().and_then(|r| r.last_mut())
            {
                if !leaves {
                    *exit = None;
                }
                *span = at;
                let index = *index;
                self.func.par_loops.push(index);
            }
            return Ok(());
        }
        if let Some((iter, schedule)) = crate::iter::checkpoint_of(&e.expr)? {
            // `for i in cotan::checkpoint(lo..hi, cotan::Every(k))` (or `Binomial(c)`): the loop
            // over `lo..hi`, marked for reverse mode.
            let span = self.at(e.expr.span());
            let inner = syn::ExprForLoop { expr: Box::new(iter.clone()), ..e.clone() };
            self.for_loop(&inner)?;
            // A `continue` of this loop is no exit from it (its flag is never set).
            let own = e.label.as_ref().map(|l| l.name.ident.to_string());
            let leaves =
                exits_of_block(&e.body).iter().any(|x| !matches!(x, Exit::Continue(l) if l.is_none() || *l == own));
            let Some(Op {
                kind: OpKind::For { index, step: None, inclusive: false, reverse: false, exit, .. }, ..
            }) = self.stack.last_mut().and_then(|r| r.last_mut())
            else {
                return err_at(
                    iter,
                    "cotan checkpoints loops over a plain range `lo..hi` (no `rev`, `step_by` or `..=`); write the loop over such a range",
                );
            };
            if !leaves {
                *exit = None;
            }
            if exit.is_some() {
                return err_at(
                    &e.expr,
                    "cotan cannot checkpoint a loop that `break`s or `return`s out of its body: its segments must run whole; keep the exit outside the checkpointed loop",
                );
            }
            let index = *index;
            self.func.checkpoints.push(cotan_ir::Checkpoint { index, schedule, span });
            return Ok(());
        }
        let Some(spec) = crate::iter::iter_spec(self, &e.expr)? else {
            return self.for_chain(e);
        };
        let ctx = self.loop_flags(&e.body, &e.label);
        let index = self.func.new_value(Ty::Scalar(self.infer.resolve(spec.index_ty)), None, self.span);
        self.set_sty(index, spec.index_ty);
        let (body, ctx) = self.loop_body(ctx, |l| crate::iter::bind_loop_pat(l, &e.pat, &spec, index), &e.body)?;
        self.effect(OpKind::For {
            index,
            lo: spec.lo,
            hi: spec.hi,
            step: spec.step,
            inclusive: spec.inclusive,
            reverse: spec.reverse,
            body,
            exit: ctx.brk,
        });
        Ok(())
    }

    /// A `for` loop over a general iterator chain (`zip`, `map`, `filter`, `chunks`, ...).
    fn for_chain(&mut self, e: &syn::ExprForLoop) -> syn::Result<()> {
        let c = crate::chain::chain(self, &e.expr)?;
        let ctx = self.loop_flags(&e.body, &e.label);
        let usize_t = STy::Known(Scalar::Usize);
        let zero = self.emit_s(OpKind::Const(Const::Int(0)), usize_t);
        let k = self.func.new_value(Ty::USIZE, Some("k".into()), self.span);
        self.set_sty(k, usize_t);
        // The body runs where the chain passes the item (under `if` after a `filter`).
        let bind = |l: &mut Self| {
            (c.item)(l, k, &mut |l, item| {
                crate::chain::bind_item(l, &e.pat, item)?;
                l.block(&e.body).map(|_| ())
            })
        };
        let empty = syn::Block { brace_token: Default::default(), stmts: vec![] };
        let (body, ctx) = self.loop_body(ctx, bind, &empty)?;
        self.effect(OpKind::For {
            index: k,
            lo: zero,
            hi: c.count,
            step: None,
            inclusive: false,
            reverse: false,
            body,
            exit: ctx.brk,
        });
        Ok(())
    }

    pub(crate) fn while_loop(&mut self, e: &syn::ExprWhile) -> syn::Result<()> {
        if let syn::Expr::Let(l) = &*e.cond {
            // `while let P = x { .. }` is `loop { let P = x else { break }; .. }`.
            let (label, pat, init, stmts) = (&e.label, &l.pat, &l.expr, &e.body.stmts);
            let name = e.label.as_ref().map(|l| &l.name);
            let desugared: syn::ExprLoop = syn::parse_quote_spanned!(e.while_token.span=>
                #label loop {
                    let #pat = #init else { break #name; };
                    #(#stmts)*
                }
            );
            return self.loop_expr(&desugared).map(|_| ());
        }
        if !exits_of_expr(&e.cond).is_empty() {
            return err_at(
                &e.cond,
                "cotan does not support `break`, `continue` or `return` inside a `while` condition; write the loop as `loop { ... }` and exit from its body",
            );
        }
        let ctx = self.loop_flags(&e.body, &e.label);
        self.push_region();
        let cond = self.bool_expr(&e.cond)?;
        let cond_region = self.pop_region();
        if writes_outside(&cond_region) {
            return err_at(
                &e.cond,
                "cotan does not support assignments inside a `while` condition; compute the condition in the loop body (`loop { ...; if !cond { break; } ... }`)",
            );
        }
        let (body, ctx) = self.loop_body(ctx, |_| Ok(()), &e.body)?;
        self.effect(OpKind::While { cond_region, cond, body, exit: ctx.brk });
        Ok(())
    }

    /// `loop { .. }`, whose value is that of its `break value`, if any.
    pub(crate) fn loop_expr(&mut self, e: &syn::ExprLoop) -> syn::Result<Option<Value>> {
        let ctx = self.loop_flags(&e.body, &e.label);
        self.push_region();
        let cond = self.bool_const(true);
        let cond_region = self.pop_region();
        let (body, ctx) = self.loop_body(ctx, |_| Ok(()), &e.body)?;
        self.effect(OpKind::While { cond_region, cond, body, exit: ctx.brk });
        Ok(ctx.result.map(|var| {
            let t = self.var_sty(var);
            self.emit_s(OpKind::GetVar(var), t)
        }))
    }

    /// The index in `self.loops` of the loop a `break`/`continue` with `label` targets.
    fn target(&self, label: &Option<syn::Lifetime>, span: Span) -> syn::Result<usize> {
        let found = match label {
            None => self.loops.len().checked_sub(1),
            Some(l) => {
                let name = l.ident.to_string();
                self.loops.iter().rposition(|c| c.label.as_deref() == Some(name.as_str()))
            }
        };
        found.map_or_else(|| err(span, "cotan could not find the loop this `break`/`continue` refers to"), Ok)
    }

    fn set_flag(&mut self, var: Option<Var>) {
        let var = var.expect("exit scan created the flag");
        let t = self.bool_const(true);
        self.effect(OpKind::SetVar(var, t));
    }

    pub(crate) fn break_expr(&mut self, e: &syn::ExprBreak) -> syn::Result<()> {
        let t = self.target(&e.label, e.span())?;
        if let Some(value) = &e.expr {
            let v = self.expr(value)?;
            let vt = self.scalar_sty(v, value.span())?;
            let var = match self.loops[t].result {
                Some(var) => {
                    let have = self.var_sty(var);
                    self.unify(have, vt, value.span())?;
                    var
                }
                None => {
                    let depth = self.loops[t].outer_depth;
                    let zero = self.zero_at(depth, vt);
                    let var = self.new_var("value", vt);
                    self.effect_at(depth, OpKind::DeclVar { var, init: zero });
                    self.loops[t].result = Some(var);
                    var
                }
            };
            self.effect(OpKind::SetVar(var, v));
        }
        for k in t..self.loops.len() {
            self.set_flag(self.loops[k].brk);
        }
        Ok(())
    }

    pub(crate) fn continue_expr(&mut self, e: &syn::ExprContinue) -> syn::Result<()> {
        let t = self.target(&e.label, e.span())?;
        for k in t + 1..self.loops.len() {
            self.set_flag(self.loops[k].brk);
        }
        self.set_flag(self.loops[t].cont);
        Ok(())
    }

    pub(crate) fn return_expr(&mut self, e: &syn::ExprReturn) -> syn::Result<()> {
        if let Some((mut merge, ty)) = self.inline_ret.take() {
            // In a helper lowered at its call: its value, and what follows skipped.
            let r = match &e.expr {
                Some(value) => self
                    .agg(value)
                    .map(|a| match &ty {
                        Some(t) => self.shape_none_by_type(t, a),
                        None => a,
                    })
                    .and_then(|a| match &a {
                        // (A vector or a slice, whose length each `return` may choose.)
                        Tree::Leaf(m)
                            if self
                                .mem_ty(*m)
                                .is_some_and(|t| !matches!(t.kind, MemKind::Array(_)) || t.access != Access::Owned) =>
                        {
                            err_at(value, crate::agg::CHOSEN_BUFFERS)
                        }
                        _ => merge.set(self, &a, value.span()),
                    }),
                None => Ok(()),
            };
            self.inline_ret = Some((merge, ty));
            r?;
            self.set_flag(self.ret_flag);
            for k in 0..self.loops.len() {
                self.set_flag(self.loops[k].brk);
            }
            return Ok(());
        }
        if let Some(value) = &e.expr {
            let a = self.agg(value)?;
            if self.ret_vars.is_empty() {
                return err_at(&e, "this function returns `()`; write `return;`");
            }
            let vals = self.result_values(a, value.span())?;
            for (var, v) in self.ret_vars.clone().into_iter().zip(vals) {
                self.effect(OpKind::SetVar(var, v));
            }
        }
        self.set_flag(self.ret_flag);
        for k in 0..self.loops.len() {
            self.set_flag(self.loops[k].brk);
        }
        Ok(())
    }
}

/// True if a region writes memory or variables it did not declare itself.
fn writes_outside(r: &Region) -> bool {
    let mut own = cotan_ir::HashSet::default();
    let mut outside = false;
    r.walk(&mut |op| match &op.kind {
        OpKind::DeclVar { var, .. } => {
            own.insert(*var);
        }
        OpKind::SetVar(var, _) => outside |= !own.contains(var),
        OpKind::Store { .. } | OpKind::Fill { .. } | OpKind::VecPush { .. } => outside = true,
        OpKind::Call { args, .. } => outside |= args.iter().any(|a| a.1),
        _ => {}
    });
    outside
}

pub(crate) fn strip_parens(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Paren(p) => strip_parens(&p.expr),
        e => e,
    }
}

/// Marks the calls whose values Rust discards as statements (`f(x);`), so that they are
/// lowered as calls that give nothing (a function returning `()` gives no value to take):
/// the tail of a `()` function's body (`fn g(p: *mut f64) { unsafe { helper(p) } }`), of
/// loop bodies and of blocks whose value is dropped (`unsafe { helper(p) };`).
fn discard_values(body: &mut syn::Block, unit_fn: bool) {
    use syn::visit_mut::VisitMut;
    struct Discard;
    impl VisitMut for Discard {
        fn visit_block_mut(&mut self, b: &mut syn::Block) {
            let n = b.stmts.len();
            for (k, s) in b.stmts.iter_mut().enumerate() {
                if let syn::Stmt::Expr(e, semi) = s {
                    if semi.is_some() || k + 1 < n {
                        discard_in(e);
                    }
                }
            }
            syn::visit_mut::visit_block_mut(self, b);
        }
        fn visit_expr_for_loop_mut(&mut self, e: &mut syn::ExprForLoop) {
            discard_tail(&mut e.body);
            syn::visit_mut::visit_expr_for_loop_mut(self, e);
        }
        fn visit_expr_while_mut(&mut self, e: &mut syn::ExprWhile) {
            discard_tail(&mut e.body);
            syn::visit_mut::visit_expr_while_mut(self, e);
        }
        fn visit_expr_loop_mut(&mut self, e: &mut syn::ExprLoop) {
            discard_tail(&mut e.body);
            syn::visit_mut::visit_expr_loop_mut(self, e);
        }
        // A closure's body is its value.
        fn visit_expr_closure_mut(&mut self, _: &mut syn::ExprClosure) {}
        fn visit_item_mut(&mut self, _: &mut syn::Item) {}
    }
    /// The value of `b` is dropped.
    fn discard_tail(b: &mut syn::Block) {
        if let Some(syn::Stmt::Expr(e, semi @ None)) = b.stmts.last_mut() {
            if discard_in(e) {
                *semi = Some(Default::default());
            }
        }
    }
    /// The value of `e` is dropped; true if `e` is a call that can be a statement.
    fn discard_in(e: &mut syn::Expr) -> bool {
        match e {
            syn::Expr::Call(_) | syn::Expr::MethodCall(_) => true,
            syn::Expr::Block(b) => {
                discard_tail(&mut b.block);
                false
            }
            syn::Expr::Unsafe(u) => {
                discard_tail(&mut u.block);
                false
            }
            syn::Expr::If(i) => {
                discard_tail(&mut i.then_branch);
                if let Some((_, other)) = &mut i.else_branch {
                    discard_in(other);
                }
                false
            }
            syn::Expr::Match(m) => {
                for arm in &mut m.arms {
                    if discard_in(&mut arm.body) {
                        // `A => helper(x),` as `A => { helper(x); }`.
                        let body = &arm.body;
                        *arm.body = syn::parse_quote!({ #body; });
                    }
                }
                false
            }
            _ => false,
        }
    }
    if unit_fn {
        discard_tail(body);
    }
    Discard.visit_block_mut(body);
}

/// Splits off a final top-level `return e;`, which needs no flag.
/// `let a: [T; N] = std::array::from_fn(f);` as the array made element by element:
/// `{ let f = ..; let mut a = [f(0); N]; for i in 1..N { a[i] = f(i); } a }` (the length from
/// the type written in the `let`).
fn array_from_fn(local: &syn::Local, init: &syn::Expr) -> Option<syn::Local> {
    let syn::Pat::Type(pt) = &local.pat else { return None };
    let syn::Type::Array(a) = &*pt.ty else { return None };
    let syn::Expr::Call(c) = strip_parens(init) else { return None };
    let args = crate::chain::std_call(c, "array", "from_fn").filter(|a| a.len() == 1)?;
    let empty =
        matches!(&a.len, syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(k), .. }) if k.base10_digits() == "0");
    if empty {
        return None;
    }
    let (f, n, span) = (&args[0], &a.len, init.span());
    let mut out = local.clone();
    *out.init.as_mut()?.expr = syn::parse_quote_spanned!(span=> {
        let element = #f;
        let mut made = [element(0); #n];
        for index in 1..#n {
            made[index] = element(index);
        }
        made
    });
    Some(out)
}

fn split_final_return(stmts: &[syn::Stmt]) -> (&[syn::Stmt], Option<&syn::Expr>) {
    if let Some((syn::Stmt::Expr(syn::Expr::Return(r), _), rest)) = stmts.split_last() {
        if let Some(e) = &r.expr {
            return (rest, Some(e));
        }
    }
    (stmts, None)
}

/// A memory type from its parts.
pub(crate) fn mem(elem: Scalar, kind: MemKind, access: Access) -> Ty {
    Ty::Mem(MemTy { elem, kind, access })
}

/// `if c { A } else { B }` with each branch's value `v` replaced by the block `branch(v)`
/// (an `else if` chain too); `None` if a branch has no value.
fn split_if(e: &syn::ExprIf, branch: &dyn Fn(&syn::Expr) -> syn::Block) -> Option<syn::ExprIf> {
    let with_tail = |b: &syn::Block| -> Option<syn::Block> {
        let (last, init) = b.stmts.split_last()?;
        let syn::Stmt::Expr(value, None) = last else { return None };
        let mut out = b.clone();
        out.stmts = init.to_vec();
        out.stmts.push(syn::Stmt::Expr(
            syn::Expr::Block(syn::ExprBlock { attrs: vec![], label: None, block: branch(value) }),
            None,
        ));
        Some(out)
    };
    let mut out = e.clone();
    out.then_branch = with_tail(&e.then_branch)?;
    let (else_token, other) = e.else_branch.as_ref()?;
    let other = match strip_parens(other) {
        syn::Expr::Block(b) => syn::Expr::Block(syn::ExprBlock { block: with_tail(&b.block)?, ..b.clone() }),
        syn::Expr::If(i) => syn::Expr::If(split_if(i, branch)?),
        _ => return None,
    };
    out.else_branch = Some((*else_token, Box::new(other)));
    Some(out)
}

/// The identifiers a piece of syntax names (paths of one segment, pattern bindings).
#[derive(Default)]
struct Names(cotan_ir::HashSet<String>);

impl<'a> syn::visit::Visit<'a> for Names {
    fn visit_path(&mut self, p: &'a syn::Path) {
        if let Some(i) = p.get_ident() {
            self.0.insert(i.to_string());
        }
        syn::visit::visit_path(self, p);
    }
    fn visit_pat_ident(&mut self, p: &'a syn::PatIdent) {
        self.0.insert(p.ident.to_string());
        syn::visit::visit_pat_ident(self, p);
    }
}

/// The names the statements of an `if`'s branches bind (`let`s at their top level).
fn branch_bindings(e: &syn::ExprIf) -> Vec<String> {
    let mut names = Names::default();
    let mut add = |b: &syn::Block| {
        for s in &b.stmts {
            if let syn::Stmt::Local(l) = s {
                syn::visit::Visit::visit_pat(&mut names, &l.pat);
            }
        }
    };
    add(&e.then_branch);
    let mut other = e.else_branch.as_ref().map(|(_, e)| &**e);
    while let Some(o) = other {
        match strip_parens(o) {
            syn::Expr::Block(b) => {
                add(&b.block);
                other = None;
            }
            syn::Expr::If(i) => {
                add(&i.then_branch);
                other = i.else_branch.as_ref().map(|(_, e)| &**e);
            }
            _ => other = None,
        }
    }
    names.0.into_iter().collect()
}

/// Whether a pattern binds a name `mut`.
fn binds_mut(p: &syn::Pat) -> bool {
    match p {
        syn::Pat::Ident(pi) => pi.mutability.is_some() || pi.subpat.as_ref().is_some_and(|(_, p)| binds_mut(p)),
        syn::Pat::Type(t) => binds_mut(&t.pat),
        syn::Pat::Paren(p) => binds_mut(&p.pat),
        syn::Pat::Reference(r) => binds_mut(&r.pat),
        syn::Pat::Tuple(t) => t.elems.iter().any(binds_mut),
        syn::Pat::TupleStruct(t) => t.elems.iter().any(binds_mut),
        syn::Pat::Slice(s) => s.elems.iter().any(binds_mut),
        syn::Pat::Struct(s) => s.fields.iter().any(|f| binds_mut(&f.pat)),
        _ => false,
    }
}
