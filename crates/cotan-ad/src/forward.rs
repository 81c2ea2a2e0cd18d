//! Forward mode (JVP): every active value gets a tangent computed right after it.

use cotan_ir::HashMap;

use cotan_ir::{Access, Function, MemKind, MemTy, Op, OpKind, Region, Ty, Value, Var};

use crate::activity::{analyze_spec, differentiable_operands, ActivityInfo};
use crate::emit::{remap, Emitter};
use crate::link::{passed_ty, CallSite, Linker, Need};
use crate::rules::{combine, partials};
use crate::spec::{Activity, AdError, Spec};

/// The derivative of memory: a buffer (or reference), or a variable for a single float.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Shadow {
    Mem(Value),
    Var(Var),
}

/// Forward mode carries `width` tangents per active value ("lanes"): batched mode shares
/// the primal and the partial derivatives between all directions.
struct Fwd<'a> {
    f: &'a Function,
    linker: &'a mut dyn Linker,
    act: ActivityInfo,
    width: usize,
    e: Emitter,
    map: HashMap<Value, Value>,
    tan: HashMap<Value, Vec<Value>>,
    tan_mem: HashMap<Value, Vec<Shadow>>,
    tan_var: HashMap<Var, Vec<Var>>,
    ret: Vec<Value>,
    errors: Vec<AdError>,
}

/// The name of a derivative: `dx` for `x`.
pub(crate) fn d_name(name: &str) -> String {
    format!("d{name}")
}

/// The name of lane `k` of `width` of a derivative.
fn lane_name(name: &str, k: usize, width: usize) -> String {
    if width == 1 {
        d_name(name)
    } else {
        format!("d{name}_{k}")
    }
}

/// Builds the forward-mode derivative `name` of `f` with std::autodiff's signature:
/// `width` tangent parameters after each `Dual` input; the result as `Dual` (primal, then
/// the tangents), `DualOnly` (the tangents) or `Const` (primal). Calls are linked to the
/// callees' derivatives by `linker`. A function that shares its caller's tape
/// (`tape_param`) keeps sharing it, and every float on that tape carries its tangents.
pub fn forward(f: &Function, spec: &Spec, name: &str, linker: &mut dyn Linker) -> Result<Function, AdError> {
    let act = analyze_spec(f, spec);
    let mut out = Function::new(name);
    out.vars = f.vars.clone();
    out.records = f.records.clone();
    out.generic_float = f.generic_float.clone();
    out.tape_param = f.tape_param;
    out.unsafe_code = f.unsafe_code;
    out.type_params = f.type_params.clone();
    let mut fw = Fwd {
        f,
        linker,
        act,
        width: spec.width.max(1),
        e: Emitter::new(out),
        map: HashMap::default(),
        tan: HashMap::default(),
        tan_mem: HashMap::default(),
        tan_var: HashMap::default(),
        ret: vec![],
        errors: vec![],
    };
    fw.params(spec);
    fw.internal_shadows();
    if let Some(e) = fw.errors.pop() {
        return Err(e);
    }
    for op in &f.body.ops {
        fw.op(op);
    }
    let ret = std::mem::take(&mut fw.ret);
    let mut outs = vec![];
    // Several results (a generated derivative differentiated again) come out interleaved:
    // each value, then its tangents.
    if let Some(act) = spec.ret {
        for &r in &ret {
            if act != Activity::DualOnly {
                outs.push(fw.map[&r]);
            }
            if act != Activity::Const && f.ty(r).is_float() {
                outs.extend(fw.tangents_or_zero(r));
            }
        }
    }
    fw.e.out.returns = outs.iter().map(|v| fw.e.out.ty(*v)).collect();
    if !outs.is_empty() {
        fw.e.effect(OpKind::Return(outs));
    }
    match fw.errors.pop() {
        Some(e) => Err(e),
        None => Ok(fw.e.finish()),
    }
}

impl Fwd<'_> {
    fn params(&mut self, spec: &Spec) {
        for (&p, &a) in self.f.params.iter().zip(&spec.inputs) {
            let data = self.f.value(p).clone();
            let name = data.name.clone().unwrap_or_default();
            let np = self.e.out.add_param(data.ty, name.clone(), data.span);
            self.map.insert(p, np);
            if a.is_active() {
                let lanes: Vec<Value> = (0..self.width)
                    .map(|k| self.e.out.add_param(data.ty, lane_name(&name, k, self.width), data.span))
                    .collect();
                if !data.ty.carries_derivative() {
                    // An integer marked `Dual`: std's signature, a tangent nobody reads.
                    continue;
                }
                if data.ty.mem().is_some() {
                    self.tan_mem.insert(p, lanes.into_iter().map(Shadow::Mem).collect());
                } else {
                    self.tan.insert(p, lanes);
                }
            }
        }
    }

    /// Active memory parameters the user gave no tangent for get zeroed local ones.
    fn internal_shadows(&mut self) {
        for &p in &self.f.params.clone() {
            if self.act.mem(p) && !self.tan_mem.contains_key(&p) {
                let m = self.f.ty(p).mem().unwrap();
                if let MemKind::Record(_) | MemKind::Nested(..) | MemKind::Records(..) = m.kind {
                    self.errors.push(AdError {
                        span: self.f.value(p).span,
                        message:
                            "this argument gets derivatives written into it, so it needs a tangent: mark it `Dual`"
                                .into(),
                    });
                    continue;
                }
                if m.is_ptr() {
                    self.errors.push(AdError {
                        span: self.f.value(p).span,
                        message: "derivatives are written through this pointer, so it needs a tangent (cotan cannot make one for memory of unknown length): mark it `Dual`".into(),
                    });
                    continue;
                }
                let name = self.f.value(p).name.clone().unwrap_or_else(|| "mem".into());
                let mut lanes = vec![];
                for k in 0..self.width {
                    let zero = self.zero(Ty::Scalar(m.elem));
                    lanes.push(if m.kind == MemKind::Cell {
                        let var = self.e.out.new_var(m.elem, lane_name(&name, k, self.width));
                        self.e.effect(OpKind::DeclVar { var, init: zero });
                        Shadow::Var(var)
                    } else {
                        let np = self.map[&p];
                        let len = self.e.emit(OpKind::Len(np), Ty::USIZE);
                        Shadow::Mem(self.e.emit(OpKind::Alloc { len, init: zero }, Ty::Mem(owned(m))))
                    });
                }
                self.tan_mem.insert(p, lanes);
            }
        }
    }

    fn zero(&mut self, ty: Ty) -> Value {
        self.e.build(|b| crate::rules::zero(b, ty))
    }

    /// A zeroed buffer shaped like `v`, a buffer of `f` made by `Alloc` (for nested memory,
    /// by `Alloc`s of `Alloc`s), or `None` for other memory.
    fn zero_like(&mut self, v: Value) -> Option<Value> {
        let mut def = None;
        self.f.walk(&mut |op| {
            if op.result == Some(v) {
                def = Some(op.kind.clone());
            }
        });
        let Some(OpKind::Alloc { len, init }) = def else { return None };
        let ty = self.f.ty(v);
        let init = match self.f.ty(init).mem() {
            Some(_) => self.zero_like(init)?,
            None => self.zero(self.f.ty(init)),
        };
        Some(self.e.emit(OpKind::Alloc { len: self.map[&len], init }, ty))
    }

    /// The tangents of `v`, one per lane, or zeros if it has none.
    fn tangents_or_zero(&mut self, v: Value) -> Vec<Value> {
        match self.tan.get(&v) {
            Some(t) => t.clone(),
            None => {
                let z = self.zero(self.f.ty(v));
                vec![z; self.width]
            }
        }
    }

    fn tvars(&mut self, var: Var) -> Vec<Var> {
        if let Some(t) = self.tan_var.get(&var) {
            return t.clone();
        }
        let data = self.f.var(var).clone();
        let t: Vec<Var> =
            (0..self.width).map(|k| self.e.out.new_var(data.ty, lane_name(&data.name, k, self.width))).collect();
        self.tan_var.insert(var, t.clone());
        t
    }

    fn region(&mut self, r: &Region) -> Region {
        self.e.push_region();
        for op in &r.ops {
            self.op(op);
        }
        self.e.pop_region()
    }

    fn new_result(&mut self, v: Value) -> Value {
        let data = self.f.value(v).clone();
        let nv = self.e.out.new_value(data.ty, data.name, data.span);
        self.map.insert(v, nv);
        nv
    }

    fn op(&mut self, op: &Op) {
        self.e.span = op.span;
        if let OpKind::VariantField { value, .. } = &op.kind {
            if self.act.mem(*value) {
                self.errors.push(AdError { span: op.span, message: "cotan reads the fields of enum variants as constants, but this enum carries derivatives; mark it `Const`".into() });
            }
        }
        let m = |fw: &Self, v: Value| fw.map[&v];
        let kind = match &op.kind {
            OpKind::If { cond, then_region, else_region } => {
                let t = self.region(then_region);
                let e = self.region(else_region);
                OpKind::If { cond: m(self, *cond), then_region: t, else_region: e }
            }
            OpKind::For { index, lo, hi, step, inclusive, reverse, body, exit } => {
                let ni = self.new_result(*index);
                if self.f.par_loops.contains(index) {
                    // The tangent loop's iterations are as independent as the primal's.
                    self.e.out.par_loops.push(ni);
                }
                let body = self.region(body);
                OpKind::For {
                    index: ni,
                    lo: m(self, *lo),
                    hi: m(self, *hi),
                    step: step.map(|s| m(self, s)),
                    inclusive: *inclusive,
                    reverse: *reverse,
                    body,
                    exit: *exit,
                }
            }
            OpKind::While { cond_region, cond, body, exit } => {
                let c = self.region(cond_region);
                let body = self.region(body);
                OpKind::While { cond_region: c, cond: m(self, *cond), body, exit: *exit }
            }
            OpKind::Return(vals) => {
                self.ret = vals.clone();
                return;
            }
            OpKind::Call { callee, args, outs, tape } if self.act.op_is_active(self.f, op) => {
                self.call(callee, args, outs, *tape, op);
                return;
            }
            OpKind::Push(v) if self.act.tape(self.f.ty(*v).scalar()) => {
                // The tangents go first, so that the primal comes off the stack first.
                for t in self.tangents_or_zero(*v) {
                    self.e.effect(OpKind::Push(t));
                }
                OpKind::Push(self.map[v])
            }
            k => remap(k, |v| self.map[&v]),
        };
        let result = op.result.map(|r| self.new_result(r));
        self.e.push_op(Op { kind, result, span: op.span });
        self.tangent(op);
    }

    /// A call with active arguments becomes a call of the callee's forward derivative (see
    /// [`crate::link`]), which returns each result followed by its tangents.
    fn call(&mut self, callee: &str, args: &[(Value, bool)], outs: &[Var], tape: bool, op: &Op) {
        let mut active = vec![];
        let mut call_args = vec![];
        for &(a, by_mut) in args {
            call_args.push((self.map[&a], by_mut));
            match self.f.ty(a) {
                Ty::Scalar(s) if s.is_float() && self.tan.contains_key(&a) => {
                    active.push(true);
                    call_args.extend(self.tan[&a].clone().into_iter().map(|t| (t, false)));
                }
                Ty::Mem(m) if m.elem.is_float() => match self.tan_mem.get(&a).map(|l| l[0]) {
                    Some(Shadow::Mem(_)) => {
                        active.push(true);
                        for sh in self.tan_mem[&a].clone() {
                            let Shadow::Mem(s) = sh else { unreachable!("lanes are alike") };
                            call_args.push((s, by_mut));
                        }
                    }
                    Some(Shadow::Var(_)) => {
                        self.errors.push(AdError {
                            span: op.span,
                            message: "cotan cannot pass a derivative through a `&mut f64` that is `Const` to a call; mark the argument `Dual`".into(),
                        });
                        return;
                    }
                    None => active.push(false),
                },
                _ => active.push(false),
            }
        }
        let ret_active = outs.iter().any(|v| self.act.var(*v));
        let site = CallSite {
            callee: callee.to_string(),
            need: Need::Forward { width: self.width },
            active,
            avail: vec![],
            ret_active,
            arg_tys: args.iter().map(|&(a, m)| passed_ty(self.f.ty(a), m)).collect(),
            ret_tys: outs.iter().map(|v| Ty::Scalar(self.f.var(*v).ty)).collect(),
            records: self.f.records.clone(),
            tape,
        };
        let name = match self.linker.link(&site, op.span) {
            Ok(n) => n,
            Err(message) => {
                self.errors.push(AdError { span: op.span, message });
                return;
            }
        };
        let mut new_outs = vec![];
        for &out in outs {
            new_outs.push(out);
            let ty = self.f.var(out).ty;
            if ty.is_float() && ret_active {
                if self.act.var(out) {
                    new_outs.extend(self.tvars(out));
                } else {
                    // Tangents nobody needs, which the call returns with the others.
                    for _ in 0..self.width {
                        let var = self.e.out.new_var(ty, "unused");
                        let z = self.zero(Ty::Scalar(ty));
                        self.e.effect(OpKind::DeclVar { var, init: z });
                        new_outs.push(var);
                    }
                }
            }
        }
        self.e.push_op(Op {
            kind: OpKind::Call { callee: name, args: call_args, outs: new_outs, tape },
            result: None,
            span: op.span,
        });
    }

    /// Emits the tangents of a non-region op.
    fn tangent(&mut self, op: &Op) {
        if let (OpKind::Field { base, name }, Some(r)) = (&op.kind, op.result) {
            // The tangent of a field is the same field of the tangent.
            if let Some(lanes) = self.tan_mem.get(base).cloned() {
                let ty = self.f.ty(r);
                let lanes = lanes
                    .iter()
                    .map(|l| match *l {
                        Shadow::Mem(t) => {
                            let access = self.e.out.ty(t).mem().unwrap().access;
                            let ty = Ty::Mem(MemTy { access, ..ty.mem().unwrap() });
                            Shadow::Mem(self.e.emit(OpKind::Field { base: t, name: name.clone() }, ty))
                        }
                        s => s,
                    })
                    .collect();
                self.tan_mem.insert(r, lanes);
            }
            return;
        }
        if let (Some(base), Some(r)) = (op.kind.view_base(), op.result) {
            // The tangent of a sub-slice (or an offset) is the same sub-slice of the tangent.
            if let Some(lanes) = self.tan_mem.get(&base).cloned() {
                let ty = self.f.ty(r);
                let lanes = lanes
                    .iter()
                    .map(|l| match *l {
                        Shadow::Mem(t) => {
                            let kind = remap(&op.kind, |v| if v == base { t } else { self.map[&v] });
                            Shadow::Mem(self.e.emit(kind, ty))
                        }
                        s => s,
                    })
                    .collect();
                self.tan_mem.insert(r, lanes);
            }
            return;
        }
        if let (OpKind::Pop, Some(r)) = (&op.kind, op.result) {
            // Every pop of an active stack takes the tangents pushed with the value.
            if self.act.tape(self.f.ty(r).scalar()) {
                let mut lanes: Vec<Value> = (0..self.width).map(|_| self.e.emit(OpKind::Pop, self.f.ty(r))).collect();
                lanes.reverse();
                self.tan.insert(r, lanes);
            }
            return;
        }
        if !self.act.op_is_active(self.f, op) || !op.kind.regions().is_empty() {
            return;
        }
        let w = self.width;
        match &op.kind {
            OpKind::Load { mem, index } => {
                let r = op.result.unwrap();
                let idx = index.map(|i| self.map[&i]);
                let lanes: Vec<Value> = self.tan_mem[mem]
                    .clone()
                    .into_iter()
                    .map(|sh| match sh {
                        Shadow::Mem(s) => self.e.emit(OpKind::Load { mem: s, index: idx }, self.f.ty(r)),
                        Shadow::Var(var) => self.e.emit(OpKind::GetVar(var), self.f.ty(r)),
                    })
                    .collect();
                self.tan.insert(r, lanes);
            }
            OpKind::Store { mem, index, value } => {
                let ts = self.tangents_or_zero(*value);
                let idx = index.map(|i| self.map[&i]);
                for (sh, t) in self.tan_mem[mem].clone().into_iter().zip(ts) {
                    match sh {
                        Shadow::Mem(s) => self.e.effect(OpKind::Store { mem: s, index: idx, value: t }),
                        Shadow::Var(var) => self.e.effect(OpKind::SetVar(var, t)),
                    }
                }
            }
            OpKind::VecPush { mem, value } => {
                let ts = self.tangents_or_zero(*value);
                for (sh, t) in self.tan_mem[mem].clone().into_iter().zip(ts) {
                    if let Shadow::Mem(s) = sh {
                        self.e.emit(OpKind::VecPush { mem: s, value: t }, Ty::USIZE);
                    }
                }
            }
            OpKind::Fill { mem, value, resize } => {
                let ts = self.tangents_or_zero(*value);
                let resize = resize.map(|r| r.map(|n| self.map[&n]));
                for (sh, t) in self.tan_mem[mem].clone().into_iter().zip(ts) {
                    if let Shadow::Mem(s) = sh {
                        self.e.effect(OpKind::Fill { mem: s, value: t, resize });
                    }
                }
            }
            OpKind::Alloc { len, init } if self.f.ty(*init).mem().is_some() => {
                // Nested memory: copies of the row's tangent, or of zeros shaped like it.
                let r = op.result.unwrap();
                let rows: Vec<Option<Value>> = match self.tan_mem.get(init).cloned() {
                    Some(lanes) => lanes.iter().map(|l| if let Shadow::Mem(t) = l { Some(*t) } else { None }).collect(),
                    None => (0..self.width).map(|_| self.zero_like(*init)).collect(),
                };
                let mut lanes = vec![];
                for row in rows {
                    let Some(row) = row else {
                        self.errors.push(AdError {
                            span: op.span,
                            message: "cotan builds nested vectors from rows it allocates (`vec![vec![0.0; m]; n]`, `vec![[0.0; 3]; n]`); build this one that way".into(),
                        });
                        return;
                    };
                    lanes.push(Shadow::Mem(self.e.emit(OpKind::Alloc { len: self.map[len], init: row }, self.f.ty(r))));
                }
                self.tan_mem.insert(r, lanes);
            }
            OpKind::Alloc { len, init } => {
                let r = op.result.unwrap();
                let ts = self.tangents_or_zero(*init);
                let lanes = ts
                    .into_iter()
                    .map(|t| Shadow::Mem(self.e.emit(OpKind::Alloc { len: self.map[len], init: t }, self.f.ty(r))))
                    .collect();
                self.tan_mem.insert(r, lanes);
            }
            OpKind::DeclVar { var, init: v } | OpKind::SetVar(var, v) => {
                let ts = self.tangents_or_zero(*v);
                let declare = matches!(op.kind, OpKind::DeclVar { .. });
                for (tv, t) in self.tvars(*var).into_iter().zip(ts) {
                    self.e.effect(if declare { OpKind::DeclVar { var: tv, init: t } } else { OpKind::SetVar(tv, t) });
                }
            }
            OpKind::GetVar(var) => {
                let r = op.result.unwrap();
                let lanes =
                    self.tvars(*var).into_iter().map(|tv| self.e.emit(OpKind::GetVar(tv), self.f.ty(r))).collect();
                self.tan.insert(r, lanes);
            }
            OpKind::Cast(a) => {
                let r = op.result.unwrap();
                let lanes =
                    self.tan[a].clone().into_iter().map(|ta| self.e.emit(OpKind::Cast(ta), self.f.ty(r))).collect();
                self.tan.insert(r, lanes);
            }
            // The tangents of a pushed value were pushed with it (see `op`).
            OpKind::Push(_) => {}
            // A copy of structs: zeroed copies, whose floats the `Store`s after it write.
            OpKind::CopyRecords { src, zero, .. } => {
                let r = op.result.unwrap();
                let kind = OpKind::CopyRecords { src: self.map[src], zero: zero.clone(), zeroed: true };
                let lanes = (0..w).map(|_| Shadow::Mem(self.e.emit(kind.clone(), self.f.ty(r)))).collect();
                self.tan_mem.insert(r, lanes);
            }
            // Structs made in the function start as zeros: so do their tangents.
            OpKind::AllocRecords { len, fields } => {
                let r = op.result.unwrap();
                let kind = OpKind::AllocRecords { len: self.map[len], fields: fields.clone() };
                let lanes = (0..w).map(|_| Shadow::Mem(self.e.emit(kind.clone(), self.f.ty(r)))).collect();
                self.tan_mem.insert(r, lanes);
            }
            // A zeroed struct is a constant: its tangents are zeroed structs too.
            OpKind::ZeroRecord(v) => {
                let r = op.result.unwrap();
                let lanes =
                    (0..w).map(|_| Shadow::Mem(self.e.emit(OpKind::ZeroRecord(self.map[v]), self.f.ty(r)))).collect();
                self.tan_mem.insert(r, lanes);
            }
            kind => {
                let Some(r) = op.result else { return };
                let ty = self.f.ty(r).scalar().unwrap();
                let operands = differentiable_operands(self.f, kind);
                let (map, tan) = (&self.map, &self.tan);
                // The partials are computed once and shared by every lane.
                let lanes = self.e.build(|b| {
                    let ps = partials(b, kind, r, ty, &mut |v| map[&v]);
                    (0..w)
                        .map(|k| {
                            let terms: Vec<_> =
                                ps.iter().zip(&operands).filter_map(|(p, a)| tan.get(a).map(|t| (*p, t[k]))).collect();
                            combine(b, &terms)
                        })
                        .collect::<Option<Vec<Value>>>()
                });
                if let Some(lanes) = lanes {
                    self.tan.insert(r, lanes);
                }
            }
        }
    }
}

/// The type of a local buffer shaped like `m`.
pub(crate) fn owned(m: MemTy) -> MemTy {
    let kind = match m.kind {
        MemKind::Array(n) => MemKind::Array(n),
        // Rows are kept; a slice of them becomes a vector of them.
        MemKind::Nested(cotan_ir::Dim::Slice, r, rr) => MemKind::Nested(cotan_ir::Dim::Vec, r, rr),
        k @ MemKind::Nested(..) => k,
        _ => MemKind::Vec,
    };
    MemTy { elem: m.elem, kind, access: Access::Owned }
}
