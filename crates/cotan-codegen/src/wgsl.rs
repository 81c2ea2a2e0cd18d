//! IR to WGSL: a kernel (`#[cotan::kernel(gpu)]`, or a derivative of one) as compute
//! shaders that wgpu runs, one module per dispatch.
//!
//! The function's top-level operations are cut into steps: each parallel loop
//! (`Function::par_loops`) whose body allows it is a dispatch of 64-wide workgroups, one
//! invocation per iteration; the operations between them run in one invocation (a step of
//! its own), which also writes the next loop's dispatch size (an indirect dispatch, so the
//! host never waits). Numbers that live at the top level (parameters, top-level values and
//! variables, buffer lengths, results) are fields of one state struct in a storage buffer,
//! which every step reads and the sequential steps write. A loop body may store at its own
//! index or accumulate (`x[e] += v`): an accumulation is an atomic add (a compare-and-swap
//! loop on the bits for `f32`); a loop that needs more, or accumulates `f64` (WGSL has no
//! 64-bit atomics), runs in order in one invocation, the same result. Index errors and
//! failed asserts are reported through a status buffer, not clamped silently.
//!
//! What WGSL cannot express here (views, vectors of run-time length, records, tapes, calls
//! with memory, `f64` transcendental functions, ...) is an error with the op's span.

use cotan_ir::{HashMap, HashSet};
use std::collections::BTreeSet;
use std::fmt::Write;
use std::rc::Rc;

use cotan_ir::{Access, BinOp, CmpOp, Const, Function, MathFn, MemKind, Op, OpKind, Region, Scalar, SpanId, Ty, UnOp};
use cotan_ir::{Value, Var};

/// A kernel as GPU steps, and where its numbers are in the state buffer.
#[derive(Debug)]
pub struct GpuKernel {
    pub steps: Vec<GpuStep>,
    /// Bytes of the state struct.
    pub state_bytes: u32,
    pub params: Vec<GpuParam>,
    /// The results: their types and offsets.
    pub returns: Vec<(Scalar, u32)>,
    /// The parallel loops that are dispatches.
    pub loops: u32,
    /// The failure messages, by code - 1 (`{0}`, `{1}`: the numbers reported).
    pub sites: Vec<String>,
    pub f64: bool,
    /// Where the AD stack's numbers are, if the kernel records one (reverse mode).
    pub tape: Option<TapeLayout>,
    /// The vectors the kernel makes at its top level (`vec![x; n]`): their numbers and the
    /// offset of their length in the state.
    pub allocs: Vec<(Scalar, u32)>,
    /// Validation mode (feature `validate`): per side table, the buffer parameter a parallel
    /// loop writes, its name, and the loop's line (`{file}:LINE`). Table `j` is bound after
    /// the vectors; per element it holds, for writes, reads and accumulations, the largest
    /// iteration + 1 and `u32::MAX -` the smallest (`atomicMax` both).
    pub checks: Vec<(u32, String, String)>,
}

/// The state fields of the AD stack (offsets), for the host's count run and real run.
#[derive(Debug)]
pub struct TapeLayout {
    /// The sequential stack's depth, its maximum, and its capacity (count run) or size.
    pub tp: u32,
    pub tmax: u32,
    pub scap: u32,
    /// The next free entry of the per-iteration counts, and their capacity.
    pub cursor: u32,
    pub ccap: u32,
    /// Per dispatched loop: the offsets of its first entry and of its iteration count.
    pub loops: Vec<(u32, u32)>,
}

#[derive(Debug)]
pub struct GpuStep {
    pub wgsl: String,
    /// The same step for the count run (pushes counted, not stored), if the kernel records
    /// an AD stack.
    pub count_wgsl: Option<String>,
    pub count_bindings: Vec<u32>,
    /// The same step with native f32 atomics (for devices with SHADER_FLOAT32_ATOMIC), if
    /// it accumulates into f32.
    pub native_wgsl: Option<String>,
    /// 0 the state, 1 the status, 2 the dispatch sizes, 3 the AD stack, 4 the per-iteration
    /// stack counts (count run) or offsets, `BUF0 + k` the `k`-th buffer parameter, then the
    /// vectors the kernel makes (`GpuKernel::allocs`).
    pub bindings: Vec<u32>,
    /// `Some(k)`: the dispatch of parallel loop `k`; `None`: one invocation.
    pub loop_index: Option<u32>,
}

#[derive(Debug)]
pub enum GpuParam {
    /// A number, at this offset of the state.
    Number { scalar: Scalar, offset: u32 },
    /// An array: its numbers, whether the kernel writes it, the offset of its length.
    Buffer { elem: Scalar, writable: bool, len_offset: u32 },
}

/// Why a function cannot run on the GPU: at `span`, a sentence saying what to do.
#[derive(Debug)]
pub struct WgslError {
    pub span: SpanId,
    pub message: String,
}

type Res<T> = Result<T, WgslError>;

/// The binding of the first buffer parameter.
pub const BUF0: u32 = 5;

fn err<T>(span: SpanId, message: impl Into<String>) -> Res<T> {
    Err(WgslError { span, message: message.into() })
}

/// The WGSL type of a number.
fn wty(s: Scalar, span: SpanId) -> Res<&'static str> {
    Ok(match s {
        Scalar::F32 => "f32",
        Scalar::F64 => "f64",
        Scalar::I32 | Scalar::Isize => "i32",
        Scalar::U32 | Scalar::Usize => "u32",
        Scalar::Bool => "bool",
        other => {
            return err(
                span,
                format!("`{other}` has no GPU type: a GPU kernel computes with f32, f64, i32, u32, usize (32 bits on the GPU), isize and bool; use one of those"),
            )
        }
    })
}

/// The WGSL type of a state field or buffer element (`bool` as `u32`).
fn stored(s: Scalar, span: SpanId) -> Res<&'static str> {
    Ok(if s == Scalar::Bool { "u32" } else { wty(s, span)? })
}

/// Writes `f` (a kernel, or a forward-mode derivative of one) as GPU steps. `callee` gives
/// the IR of a called function; `site` the source location of a span, for messages.
pub fn wgsl_kernel(
    f: &Function,
    callee: &mut dyn FnMut(&str) -> Result<Rc<Function>, String>,
    site: &dyn Fn(SpanId) -> String,
) -> Res<GpuKernel> {
    if let Some(t) = &f.generic_float {
        return err(
            SpanId::NONE,
            format!("a `gpu` kernel is written for f32 or f64, not generic over `{t}`: WGSL has no generics; write it for the float type the GPU uses"),
        );
    }
    let mut k = Kernel::new(f)?;
    k.plan(callee, site)
}

/// What every step shares: the state's fields, the messages, the callees.
struct Kernel<'f> {
    f: &'f Function,
    /// Field name, stored type, offset.
    fields: Vec<(String, &'static str, u32)>,
    field_of: HashMap<String, usize>,
    top_values: HashSet<Value>,
    top_vars: HashSet<Var>,
    /// Buffer parameters: the value, its number among them.
    buffers: HashMap<Value, u32>,
    uses: HashMap<Value, usize>,
    sites: Vec<String>,
    callees: HashMap<String, Rc<Function>>,
    /// Callees written so far, for unique WGSL names.
    fn_count: usize,
    f64: bool,
    /// The function records an AD stack (pushes, pops, calls that share it).
    tape: bool,
    /// Top-level arrays and vectors: their number among them and their length.
    allocs: HashMap<Value, (u32, Value)>,
    /// Validation's side tables (see `GpuKernel::checks`).
    checks: Vec<(u32, String, String)>,
}

impl<'f> Kernel<'f> {
    fn new(f: &'f Function) -> Res<Self> {
        let mut k = Kernel {
            f,
            fields: vec![],
            field_of: HashMap::default(),
            top_values: HashSet::default(),
            top_vars: HashSet::default(),
            buffers: HashMap::default(),
            uses: HashMap::default(),
            sites: vec![],
            callees: HashMap::default(),
            fn_count: 0,
            f64: false,
            tape: false,
            allocs: HashMap::default(),
            checks: vec![],
        };
        f.walk(&mut |op| {
            k.tape |= matches!(op.kind, OpKind::Push(_) | OpKind::Pop | OpKind::Call { tape: true, .. });
        });
        f.walk(&mut |op| {
            for v in op.kind.operands() {
                *k.uses.entry(v).or_default() += 1;
            }
        });
        let mut wanted: Vec<(String, Scalar)> = vec![];
        for &p in &f.params {
            let span = f.value(p).span;
            match f.ty(p) {
                Ty::Scalar(s) => {
                    wty(s, span)?;
                    k.top_values.insert(p);
                    wanted.push((format!("v{}", p.0), s));
                }
                Ty::Mem(m) if m.kind == MemKind::Slice && m.access != Access::Owned => {
                    if !matches!(m.elem, Scalar::F32 | Scalar::F64 | Scalar::I32 | Scalar::U32) {
                        return err(span, format!("a GPU kernel's arrays hold f32, f64, i32 or u32, not `{}`; convert the array on the host", m.elem));
                    }
                    let n = k.buffers.len() as u32;
                    k.buffers.insert(p, n);
                    wanted.push((format!("l{n}"), Scalar::U32));
                }
                Ty::Mem(m) => {
                    return err(
                        span,
                        format!("a GPU kernel takes numbers and slices (`&[T]`, `&mut [T]`), not `{m}`; pass a slice"),
                    )
                }
            }
        }
        for op in &f.body.ops {
            if let (Some(r), Ty::Scalar(s)) = (op.result, op.result.map_or(Ty::BOOL, |r| f.ty(r))) {
                wty(s, op.span)?;
                k.top_values.insert(r);
                wanted.push((format!("v{}", r.0), s));
            }
            if let OpKind::DeclVar { var, .. } = op.kind {
                k.top_vars.insert(var);
                wanted.push((format!("w{}", var.0), f.var(var).ty));
            }
        }
        // Device buffers: the arrays and vectors made outside the top-level parallel loops'
        // bodies (which may be dispatches, each iteration with its own fixed-size arrays):
        // at the top level (steps may be cut between their uses) and any of run-time
        // length (reverse mode's snapshots inside time loops, say). A vector made again
        // (in a loop) reuses its buffer: the one before it is out of scope.
        let mut found = vec![];
        collect_allocs(f, &f.body, true, &mut found);
        for (r, len, span) in found {
            let m = f.ty(r).mem().unwrap();
            if !matches!(m.elem, Scalar::F32 | Scalar::F64 | Scalar::I32 | Scalar::U32 | Scalar::Usize) {
                return err(span, "on the GPU, a kernel's arrays and vectors hold f32, f64, i32 or u32 (usize)");
            }
            let j = k.allocs.len() as u32;
            k.allocs.insert(r, (j, len));
            // Its current length, and the largest it had (the count run's, for its size).
            wanted.push((format!("al{j}"), Scalar::U32));
            wanted.push((format!("am{j}"), Scalar::U32));
        }
        if k.tape {
            for name in ["tp", "tmax", "scap", "cursor", "ccap"] {
                wanted.push((name.to_string(), Scalar::U32));
            }
            let dispatched = f.body.ops.iter().filter(|op| k.parallel(op).is_some()).count();
            for j in 0..dispatched {
                wanted.push((format!("cb{j}"), Scalar::U32));
                wanted.push((format!("cn{j}"), Scalar::U32));
            }
        }
        for (j, r) in f.returns.iter().enumerate() {
            match r {
                Ty::Scalar(s) => wanted.push((format!("r{j}"), *s)),
                Ty::Mem(_) => {
                    return err(
                        SpanId::NONE,
                        "a GPU kernel returns numbers only; write arrays through `&mut [T]` parameters",
                    )
                }
            }
        }
        f.walk(&mut |op| {
            if let Some(r) = op.result {
                if f.ty(r).scalar() == Some(Scalar::F64) || f.ty(r).mem().is_some_and(|m| m.elem == Scalar::F64) {
                    k.f64 = true;
                }
            }
        });
        k.f64 |= f.params.iter().any(|&p| {
            matches!(f.ty(p), Ty::Scalar(Scalar::F64)) || f.ty(p).mem().is_some_and(|m| m.elem == Scalar::F64)
        });
        // 8-byte fields first: no padding between fields.
        wanted.sort_by_key(|(_, s)| *s != Scalar::F64);
        let mut offset = 0;
        for (name, s) in wanted {
            let t = stored(s, SpanId::NONE)?;
            k.field_of.insert(name.clone(), k.fields.len());
            k.fields.push((name, t, offset));
            offset += if s == Scalar::F64 { 8 } else { 4 };
        }
        Ok(k)
    }

    fn offset(&self, name: &str) -> u32 {
        self.fields[self.field_of[name]].2
    }

    fn state_bytes(&self) -> u32 {
        let end = self.fields.last().map_or(0, |f| f.2 + if f.1 == "f64" { 8 } else { 4 });
        // The struct's size: its fields and a `pad` field, rounded to its alignment.
        (end + 4).next_multiple_of(if self.f64 { 8 } else { 4 })
    }

    fn state_decl(&self) -> String {
        let mut s = String::from("struct State {\n");
        for (name, t, _) in &self.fields {
            let _ = writeln!(s, "    {name}: {t},");
        }
        s.push_str("    pad: u32,\n}\n@group(0) @binding(0) var<storage, read_write> st: State;\n");
        s
    }

    fn site(&mut self, message: String) -> u32 {
        self.sites.push(message);
        self.sites.len() as u32
    }

    fn plan(
        &mut self,
        callee: &mut dyn FnMut(&str) -> Result<Rc<Function>, String>,
        site: &dyn Fn(SpanId) -> String,
    ) -> Res<GpuKernel> {
        let f = self.f;
        let mut steps = vec![];
        let mut pending: Vec<&Op> = vec![];
        let mut loops = 0;
        // Each step twice when there is an AD stack: as it runs, and for the count run.
        let modes: &[bool] = if self.tape { &[false, true] } else { &[false] };
        for op in &f.body.ops {
            if self.parallel(op).is_some() {
                let mut texts = vec![];
                for &count in modes {
                    let mut m = Module::new(self, callee, site, f);
                    m.count = count;
                    for o in &pending {
                        m.op(o)?;
                    }
                    m.sizes(op, loops)?;
                    texts.push(m.finish_once());
                }
                steps.push(pair(texts));
                pending.clear();
                let mut texts = vec![];
                let tables = if cfg!(feature = "validate") { self.tables(op, site) } else { HashMap::default() };
                for &count in modes {
                    let plan = self.parallel(op).unwrap();
                    let mut m = Module::new(self, callee, site, f);
                    m.count = count;
                    m.in_loop = true;
                    m.atomic = plan.atomic;
                    m.skip = plan.accum.values().flat_map(|&(_, _, load, sum)| [load, sum]).collect();
                    m.accum = plan.accum;
                    m.private = plan.private;
                    if !count {
                        m.tables = tables.clone();
                    }
                    texts.push(m.finish_loop(op, loops)?);
                }
                let mut step = pair(texts);
                let plan = self.parallel(op).unwrap();
                if plan.atomic.iter().any(|m| f.ty(*m).mem().is_some_and(|m| m.elem == Scalar::F32)) {
                    let mut m = Module::new(self, callee, site, f);
                    m.in_loop = true;
                    m.native_f32 = true;
                    m.atomic = plan.atomic;
                    m.skip = plan.accum.values().flat_map(|&(_, _, load, sum)| [load, sum]).collect();
                    m.accum = plan.accum;
                    m.private = plan.private;
                    m.tables = tables.clone();
                    step.native_wgsl = Some(m.finish_loop(op, loops)?.wgsl);
                }
                steps.push(step);
                loops += 1;
            } else {
                pending.push(op);
                // A top-level loop ends its step: each invocation runs fewer loops (llvmpipe
                // ends an invocation's loops after 65535 iterations in all). Everything
                // top-level is in the state or a buffer, so steps may be cut anywhere.
                if matches!(op.kind, OpKind::For { .. } | OpKind::While { .. }) {
                    let mut texts = vec![];
                    for &count in modes {
                        let mut m = Module::new(self, callee, site, f);
                        m.count = count;
                        for o in &pending {
                            m.op(o)?;
                        }
                        texts.push(m.finish_once());
                    }
                    steps.push(pair(texts));
                    pending.clear();
                }
            }
        }
        if !pending.is_empty() || steps.is_empty() {
            let mut texts = vec![];
            for &count in modes {
                let mut m = Module::new(self, callee, site, f);
                m.count = count;
                for o in &pending {
                    m.op(o)?;
                }
                texts.push(m.finish_once());
            }
            steps.push(pair(texts));
        }
        let params = f
            .params
            .iter()
            .map(|&p| match f.ty(p) {
                Ty::Scalar(s) => GpuParam::Number { scalar: s, offset: self.offset(&format!("v{}", p.0)) },
                Ty::Mem(m) => {
                    let n = self.buffers[&p];
                    GpuParam::Buffer {
                        elem: m.elem,
                        writable: m.access == Access::Mut,
                        len_offset: self.offset(&format!("l{n}")),
                    }
                }
            })
            .collect();
        let returns =
            f.returns.iter().enumerate().map(|(j, t)| (t.scalar().unwrap(), self.offset(&format!("r{j}")))).collect();
        let tape = self.tape.then(|| TapeLayout {
            tp: self.offset("tp"),
            tmax: self.offset("tmax"),
            scap: self.offset("scap"),
            cursor: self.offset("cursor"),
            ccap: self.offset("ccap"),
            loops: (0..loops).map(|j| (self.offset(&format!("cb{j}")), self.offset(&format!("cn{j}")))).collect(),
        });
        let mut allocs: Vec<(&Value, &(u32, Value))> = self.allocs.iter().collect();
        allocs.sort_by_key(|(_, (j, _))| *j);
        let allocs = allocs
            .into_iter()
            .map(|(&v, &(j, _))| (f.ty(v).mem().unwrap().elem, self.offset(&format!("am{j}"))))
            .collect();
        Ok(GpuKernel {
            steps,
            state_bytes: self.state_bytes(),
            params,
            returns,
            loops,
            sites: self.sites.clone(),
            f64: self.f64,
            tape,
            allocs,
            checks: self.checks.clone(),
        })
    }

    /// `Some` when `op` is a parallel loop that runs as a dispatch: every store into a buffer
    /// parameter at the loop's own index or an accumulation (not of `f64`), nothing else
    /// written outside the body but variables it sets before reading them in each iteration.
    fn parallel(&self, op: &Op) -> Option<LoopPlan> {
        let OpKind::For { index, step: None, inclusive: false, reverse: false, body, exit: None, .. } = &op.kind else {
            return None;
        };
        if !self.f.par_loops.contains(index) {
            return None;
        }
        let mut plan = LoopPlan::default();
        let mut ok = true;
        let mut first_use: HashMap<Var, bool> = HashMap::default();
        body.walk(&mut |o| match &o.kind {
            OpKind::SetVar(v, _) if self.top_vars.contains(v) => {
                first_use.entry(*v).or_insert(true);
            }
            OpKind::GetVar(v) if self.top_vars.contains(v) => {
                first_use.entry(*v).or_insert(false);
            }
            OpKind::Call { outs, .. } => {
                for v in outs {
                    if self.top_vars.contains(v) {
                        first_use.entry(*v).or_insert(true);
                    }
                }
            }
            OpKind::Fill { mem, .. } if self.buffers.contains_key(mem) || self.allocs.contains_key(mem) => ok = false,
            OpKind::Fill { resize: Some(_), .. } => ok = false,
            _ => {}
        });
        // A top-level variable set before any read in the body is the iteration's own.
        for (v, set_first) in first_use {
            let set_at_start = body.ops.iter().position(|o| matches!(o.kind, OpKind::SetVar(w, _) if w == v));
            let read_at = body.ops.iter().position(|o| {
                let mut reads = false;
                let mut check = |x: &Op| reads |= matches!(x.kind, OpKind::GetVar(w) if w == v);
                check(o);
                for r in o.kind.regions() {
                    r.walk(&mut check);
                }
                reads
            });
            match (set_first, set_at_start, read_at) {
                (true, Some(s), r) if r.is_none_or(|r| s < r) => {
                    plan.private.insert(v);
                }
                (false, ..) if !self.sets_var(body, v) => {}
                _ => ok = false,
            }
        }
        ok &= self.stores_ok(body, *index, &mut plan);
        ok.then_some(plan)
    }

    /// Validation mode: a side table for each buffer parameter the loop `op` writes.
    fn tables(&mut self, op: &Op, site: &dyn Fn(SpanId) -> String) -> HashMap<Value, u32> {
        let OpKind::For { body, .. } = &op.kind else { return HashMap::default() };
        let mut written = vec![];
        body.walk(&mut |o| {
            if let OpKind::Store { mem, .. } = o.kind {
                if self.buffers.contains_key(&mem) && !written.contains(&mem) {
                    written.push(mem);
                }
            }
        });
        let mut tables = HashMap::default();
        for mem in written {
            let name = self.f.value(mem).name.clone().unwrap_or_else(|| "an array".into());
            tables.insert(mem, self.checks.len() as u32);
            self.checks.push((self.buffers[&mem], name, site(op.span)));
        }
        tables
    }

    fn sets_var(&self, r: &Region, v: Var) -> bool {
        let mut sets = false;
        r.walk(&mut |o| match &o.kind {
            OpKind::SetVar(w, _) => sets |= *w == v,
            OpKind::Call { outs, .. } => sets |= outs.contains(&v),
            _ => {}
        });
        sets
    }

    fn stores_ok(&self, r: &Region, index: Value, plan: &mut LoopPlan) -> bool {
        for (at, op) in r.ops.iter().enumerate() {
            for inner in op.kind.regions() {
                if !self.stores_ok(inner, index, plan) {
                    return false;
                }
            }
            let OpKind::Store { mem, index: i, value } = op.kind else { continue };
            if self.allocs.contains_key(&mem) {
                // (A vector the kernel made: the loop runs in order, as simple as correct.)
                return false;
            }
            let Some(_) = self.buffers.get(&mem) else { continue };
            let Some(i) = i else { return false };
            if let Some((add, y, load)) = self.accumulation(r, at, mem, i, value) {
                let elem = self.f.ty(mem).mem().unwrap().elem;
                if elem == Scalar::F64 {
                    return false;
                }
                plan.atomic.insert(mem);
                plan.accum.insert(op as *const Op, (add, y, load, value));
                continue;
            }
            if i != index {
                return false;
            }
        }
        true
    }

    /// `Some((add, y, load))` when the store at `at`, `mem[i] = value`, is `mem[i] += y`
    /// (`-=`: `add` false) with the load and the sum used by it only, the load earlier in the
    /// same region with nothing between that writes `mem` or calls.
    fn accumulation(&self, r: &Region, at: usize, mem: Value, i: Value, value: Value) -> Option<(bool, Value, Value)> {
        let sum = r.ops[..at].iter().find(|o| o.result == Some(value))?;
        let OpKind::Binary(b @ (BinOp::Add | BinOp::Sub), x, y) = sum.kind else { return None };
        let from = r.ops[..at].iter().position(|o| o.result == Some(x))?;
        let same = matches!(r.ops[from].kind, OpKind::Load { mem: m, index: Some(j) } if m == mem && j == i);
        let once = |v: Value| self.uses.get(&v) == Some(&1);
        if !same || !once(x) || !once(value) || x == y {
            return None;
        }
        let mut clear = true;
        for o in &r.ops[from + 1..at] {
            let mut check = |o: &Op| match &o.kind {
                OpKind::Store { mem: m, .. } | OpKind::Fill { mem: m, .. } if *m == mem => clear = false,
                OpKind::Call { .. } => clear = false,
                _ => {}
            };
            check(o);
            for rr in o.kind.regions() {
                rr.walk(&mut check);
            }
        }
        clear.then_some((b == BinOp::Add, y, x))
    }
}

/// An f64 on the AD stack of 32-bit words, exactly: three words, the low 26 bits of its
/// 53-bit mantissa as an integer, the high 27 with the sign in bit 31, and the power of two
/// it is scaled by (WGSL has no bitcast of f64). NaN and infinities have their own words.
const PUSH64: &str = "fn cotan_push64(x: f64) {
    if (x != x) { cotan_push(0u); cotan_push(0u); cotan_push(0x80000001u); return; }
    if (abs(x) > f64(1.7976931348623157e308)) {
        cotan_push(0u); cotan_push(select(0u, 1u, x < f64(0.0))); cotan_push(0x80000002u); return;
    }
    // The mantissa as an integer in [2^52, 2^53), by exact scalings by powers of two (naga's
    // f64 `frexp` needs 64-bit integers).
    var a = abs(x);
    var e = 0i;
    if (a != f64(0.0)) {
        while (a >= f64(9007199254740992.0)) {
            if (a >= f64(39614081257132168796771975168.0)) { a = a * f64(2.3283064365386963e-10); e += 32; }
            else if (a >= f64(2305843009213693952.0)) { a = a * f64(0.00390625); e += 8; }
            else { a = a * f64(0.5); e += 1; }
        }
        while (a < f64(4503599627370496.0)) {
            if (a < f64(1048576.0)) { a = a * f64(4294967296.0); e -= 32; }
            else if (a < f64(17592186044416.0)) { a = a * f64(256.0); e -= 8; }
            else { a = a * f64(2.0); e -= 1; }
        }
    }
    let hi = floor(a / f64(67108864.0));
    let lo = a - hi * f64(67108864.0);
    cotan_push(u32(lo));
    // (The sign of a zero too: 1 / -0 is -inf.)
    let negative = x < f64(0.0) || (x == f64(0.0) && f64(1.0) / x < f64(0.0));
    cotan_push(u32(hi) | select(0u, 0x80000000u, negative));
    cotan_push(bitcast<u32>(e));
}
fn cotan_pop64() -> f64 {
    let e = cotan_pop();
    let h = cotan_pop();
    let l = cotan_pop();
    // (Zero from the stack pointer, not a constant: WGSL folds constants and rejects 0/0.)
    let zero = f64(cotan_tp & 0u);
    if (e == 0x80000001u) { return zero / zero; }
    if (e == 0x80000002u) { return select(f64(1.0), f64(-1.0), h == 1u) / zero; }
    let m = f64(h & 0x7fffffffu) * f64(67108864.0) + f64(l);
    let v = ldexp(m, bitcast<i32>(e));
    return select(v, -v, (h & 0x80000000u) != 0u);
}
";

/// The `Alloc`s of `r` that become device buffers (see `Kernel::new`): with `top`, `r` is
/// the function's body.
fn collect_allocs(f: &Function, r: &Region, top: bool, out: &mut Vec<(Value, Value, SpanId)>) {
    for op in &r.ops {
        if let (OpKind::Alloc { len, .. }, Some(v)) = (&op.kind, op.result) {
            let fixed = matches!(f.ty(v).mem().map(|m| m.kind), Some(MemKind::Array(_)));
            if top || !fixed {
                out.push((v, *len, op.span));
            }
        }
        let par = matches!(&op.kind, OpKind::For { index, .. } if top && f.par_loops.contains(index));
        if !par {
            for inner in op.kind.regions() {
                collect_allocs(f, inner, false, out);
            }
        }
    }
}

/// A step from its real and (if any) count-run texts.
fn pair(mut texts: Vec<GpuStep>) -> GpuStep {
    let count = (texts.len() > 1).then(|| texts.pop().unwrap());
    let mut step = texts.pop().unwrap();
    if let Some(c) = count {
        step.count_wgsl = Some(c.wgsl);
        step.count_bindings = c.bindings;
    }
    step
}

#[derive(Default)]
struct LoopPlan {
    /// Buffers accumulated into: atomic in the loop's module.
    atomic: HashSet<Value>,
    /// Accumulating stores: add or subtract, the value added, the load and sum they replace.
    accum: HashMap<*const Op, (bool, Value, Value, Value)>,
    /// Top-level variables each iteration sets before reading: declared in the invocation.
    private: HashSet<Var>,
}

/// One shader module: one step, or a callee.
struct Module<'k, 'kf, 'c, 'f> {
    k: &'k mut Kernel<'kf>,
    callee: &'c mut dyn FnMut(&str) -> Result<Rc<Function>, String>,
    site: &'c dyn Fn(SpanId) -> String,
    f: &'f Function,
    body: String,
    depth: usize,
    bindings: BTreeSet<u32>,
    atomic: HashSet<Value>,
    accum: HashMap<*const Op, (bool, Value, Value, Value)>,
    private: HashSet<Var>,
    /// Values not written (loads and sums that accumulations replace).
    skip: HashSet<Value>,
    /// Local arrays made in this module: their lengths.
    arrays: HashMap<Value, u64>,
    helpers: BTreeSet<String>,
    /// Callees written: their WGSL names and text.
    functions: Vec<(String, String)>,
    fn_names: HashMap<String, String>,
    /// Callees being written (WGSL has no recursion).
    calling: Vec<String>,
    /// In a callee: its own values and variables are all locals.
    in_callee: bool,
    /// In a callee with several results: the struct they are returned in.
    ret_struct: Option<String>,
    /// The count run's text: pushes counted (and, in one invocation, stored while they fit).
    count: bool,
    /// A parallel loop's dispatch (its pushes on the iteration's own stack).
    in_loop: bool,
    /// Pushes or pops are written.
    uses_tape: bool,
    /// The failure code of a stack overflow.
    overflow_site: u32,
    /// Validation mode: the side table of each buffer the loop writes.
    tables: HashMap<Value, u32>,
    /// f32 accumulations as `atomicAdd` on `atomic<f32>` (devices with
    /// SHADER_FLOAT32_ATOMIC), not a compare-and-swap loop.
    native_f32: bool,
    /// The loop's iteration (its index value), for the side tables.
    iteration: String,
    tmp: usize,
}

impl<'k, 'kf, 'c, 'f> Module<'k, 'kf, 'c, 'f> {
    fn new(
        k: &'k mut Kernel<'kf>,
        callee: &'c mut dyn FnMut(&str) -> Result<Rc<Function>, String>,
        site: &'c dyn Fn(SpanId) -> String,
        f: &'f Function,
    ) -> Self {
        Module {
            k,
            callee,
            site,
            f,
            body: String::new(),
            depth: 1,
            bindings: BTreeSet::new(),
            atomic: HashSet::default(),
            accum: HashMap::default(),
            private: HashSet::default(),
            skip: HashSet::default(),
            arrays: HashMap::default(),
            helpers: BTreeSet::new(),
            functions: vec![],
            fn_names: HashMap::default(),
            calling: vec![],
            in_callee: false,
            ret_struct: None,
            count: false,
            in_loop: false,
            uses_tape: false,
            overflow_site: 0,
            tables: HashMap::default(),
            native_f32: false,
            iteration: String::new(),
            tmp: 0,
        }
    }

    fn line(&mut self, s: impl AsRef<str>) {
        for _ in 0..self.depth {
            self.body.push_str("    ");
        }
        self.body.push_str(s.as_ref());
        self.body.push('\n');
    }

    fn fresh(&mut self, what: &str) -> String {
        self.tmp += 1;
        format!("{what}_{}", self.tmp)
    }

    fn header(&self) -> String {
        let mut s = String::new();
        if self.k.f64 {
            // (naga takes `f64` where the device has SHADER_F64; no `enable` directive.)
        }
        if self.bindings.contains(&0) {
            s.push_str(&self.k.state_decl());
        }
        if self.bindings.contains(&1) {
            s.push_str(
                "@group(0) @binding(1) var<storage, read_write> cotan_status: array<atomic<u32>, 4>;\n\
                 fn cotan_fail(site: u32, a: u32, b: u32) {\n    loop {\n        let r = atomicCompareExchangeWeak(&cotan_status[0], 0u, site);\n        if (r.exchanged) { atomicStore(&cotan_status[1], a); atomicStore(&cotan_status[2], b); break; }\n        if (r.old_value != 0u) { break; }\n    }\n}\n",
            );
        }
        if self.bindings.contains(&2) {
            s.push_str("@group(0) @binding(2) var<storage, read_write> cotan_sizes: array<u32>;\n");
        }
        let mut bufs: Vec<(&Value, &u32)> = self.k.buffers.iter().collect();
        bufs.sort_by_key(|(_, n)| **n);
        for (&v, &n) in bufs {
            if !self.bindings.contains(&(BUF0 + n)) {
                continue;
            }
            let m = self.f.ty(v).mem().unwrap();
            let elem = stored(m.elem, SpanId::NONE).unwrap();
            let (access, t) = if self.atomic.contains(&v) {
                (
                    "read_write",
                    match m.elem {
                        Scalar::I32 => "atomic<i32>".to_string(),
                        Scalar::F32 if self.native_f32 => "atomic<f32>".to_string(),
                        _ => "atomic<u32>".to_string(),
                    },
                )
            } else {
                (if m.access == Access::Mut { "read_write" } else { "read" }, elem.to_string())
            };
            let _ = writeln!(s, "@group(0) @binding({}) var<storage, {access}> b{n}: array<{t}>;", BUF0 + n);
        }
        let mut allocs: Vec<(&Value, &(u32, Value))> = self.k.allocs.iter().collect();
        allocs.sort_by_key(|(_, (j, _))| *j);
        let nbuf = self.k.buffers.len() as u32;
        for (&v, &(j, _)) in allocs {
            if self.bindings.contains(&(BUF0 + nbuf + j)) {
                let elem = stored(self.f.ty(v).mem().map_or(Scalar::U32, |m| m.elem), SpanId::NONE).unwrap();
                let _ = writeln!(
                    s,
                    "@group(0) @binding({}) var<storage, read_write> c{j}: array<{elem}>;",
                    BUF0 + nbuf + j
                );
            }
        }
        let nalloc = self.k.allocs.len() as u32;
        let mut tables: Vec<&u32> = self.tables.values().collect();
        tables.sort();
        for &j in tables {
            let _ = writeln!(
                s,
                "@group(0) @binding({}) var<storage, read_write> vt{j}: array<atomic<u32>>;",
                BUF0 + nbuf + nalloc + j
            );
        }
        if self.uses_tape {
            s.push_str("var<private> cotan_tp: u32;\nvar<private> cotan_tmax: u32;\nvar<private> cotan_tend: u32;\n");
            let overflow = self.overflow_site;
            match (self.count, self.in_loop) {
                (false, _) => {
                    let _ = write!(
                        s,
                        "@group(0) @binding(3) var<storage, read_write> cotan_tape: array<u32>;\n\
                         fn cotan_push(x: u32) {{\n    if (cotan_tp >= cotan_tend) {{ cotan_fail({overflow}u, cotan_tp, cotan_tend); }} else {{ cotan_tape[cotan_tp] = x; }}\n    cotan_tp += 1u;\n}}\n\
                         fn cotan_pop() -> u32 {{\n    cotan_tp -= 1u;\n    return cotan_tape[cotan_tp];\n}}\n"
                    );
                }
                (true, false) => s.push_str(
                    "@group(0) @binding(3) var<storage, read_write> cotan_tape: array<u32>;\n\
                     fn cotan_push(x: u32) {\n    if (cotan_tp < st.scap) { cotan_tape[cotan_tp] = x; }\n    cotan_tp += 1u;\n    cotan_tmax = max(cotan_tmax, cotan_tp);\n}\n\
                     fn cotan_pop() -> u32 {\n    if (cotan_tp == 0u) { return 0u; }\n    cotan_tp -= 1u;\n    if (cotan_tp < st.scap) { return cotan_tape[cotan_tp]; }\n    return 0u;\n}\n",
                ),
                (true, true) => s.push_str(
                    "fn cotan_push(x: u32) {\n    cotan_tp += 1u;\n    cotan_tmax = max(cotan_tmax, cotan_tp);\n}\n\
                     fn cotan_pop() -> u32 {\n    if (cotan_tp > 0u) { cotan_tp -= 1u; }\n    return 0u;\n}\n",
                ),
            }
            if self.in_loop {
                if self.count {
                    s.push_str("@group(0) @binding(4) var<storage, read_write> cotan_counts: array<u32>;\n");
                } else {
                    s.push_str("@group(0) @binding(4) var<storage, read> cotan_offsets: array<u32>;\n");
                }
            }
        }
        for h in &self.helpers {
            s.push_str(h);
        }
        for (_, text) in &self.functions {
            s.push_str(text);
        }
        s
    }

    fn finish_once(mut self) -> GpuStep {
        self.bindings.insert(0);
        let mut body = std::mem::take(&mut self.body);
        if self.uses_tape {
            // The sequential stack's depth carries over from step to step.
            self.tape_bindings();
            body = format!(
                "    cotan_tp = st.tp;\n    cotan_tend = st.scap;\n{body}    st.tp = cotan_tp;\n    st.tmax = max(st.tmax, cotan_tmax);\n"
            );
        }
        let wgsl = format!("{}@compute @workgroup_size(1)\nfn main() {{\n{body}}}\n", self.header());
        let bindings = self.used_bindings(&wgsl);
        GpuStep { wgsl, count_wgsl: None, count_bindings: vec![], native_wgsl: None, bindings, loop_index: None }
    }

    /// The dispatch size of parallel loop `k` (`op`), at the end of the step before it.
    fn sizes(&mut self, op: &Op, k: u32) -> Res<()> {
        let OpKind::For { lo, hi, .. } = op.kind else { unreachable!("a parallel loop is a `for`") };
        self.bindings.insert(2);
        let (lo, hi) = (self.val(lo), self.val(hi));
        self.line("{");
        self.line(format!("    var n: u32 = 0u;\n        if ({lo} < {hi}) {{ n = u32({hi} - {lo}); }}"));
        self.line("    let g = (n + 63u) / 64u;\n        let gx = min(g, 65535u);\n        var gy = 1u;\n        if (gx > 0u) { gy = (g + gx - 1u) / gx; }");
        self.line(format!(
            "    cotan_sizes[{}] = gx;\n        cotan_sizes[{}] = gy;\n        cotan_sizes[{}] = 1u;",
            3 * k,
            3 * k + 1,
            3 * k + 2
        ));
        if self.k.tape {
            // Room for the loop's per-iteration stack counts (then offsets).
            self.line(format!(
                "    st.cb{k} = st.cursor;\n        st.cn{k} = n;\n        st.cursor = st.cursor + n + 1u;"
            ));
        }
        self.line("}");
        Ok(())
    }

    /// The bindings the entry point uses: wgpu's layout derived from the shader leaves out
    /// those declared but not used (by `main` or a function it calls), and the bind group
    /// must match.
    fn used_bindings(&self, wgsl: &str) -> Vec<u32> {
        // The module's functions (each `fn NAME(` to its `}` at the start of a line).
        let mut fns: Vec<(String, String)> = vec![];
        let mut current: Option<(String, String)> = None;
        for line in wgsl.lines() {
            if let Some((_, body)) = &mut current {
                body.push_str(line);
                body.push('\n');
                if line == "}" {
                    fns.push(current.take().unwrap());
                }
            } else if let Some(rest) = line.strip_prefix("fn ") {
                let name = rest.split('(').next().unwrap_or("").to_string();
                current = Some((name, String::new()));
            }
        }
        let mut seen: HashSet<&str> = ["main"].into_iter().collect();
        let mut work = vec!["main"];
        let mut used = String::new();
        while let Some(name) = work.pop() {
            let Some((_, body)) = fns.iter().find(|(n, _)| n == name) else { continue };
            used.push_str(body);
            for (other, _) in &fns {
                if body.contains(&format!("{other}(")) && seen.insert(other) {
                    work.push(other);
                }
            }
        }
        let nbuf = self.k.buffers.len() as u32;
        let nalloc = self.k.allocs.len() as u32;
        let last = BUF0 + nbuf + nalloc + self.k.checks.len() as u32;
        (0..last)
            .filter(|b| wgsl.contains(&format!("@binding({b})")))
            .filter(|&b| match b {
                0 => used.contains("st."),
                1 => used.contains("cotan_status["),
                2 => used.contains("cotan_sizes["),
                3 => used.contains("cotan_tape["),
                4 => used.contains("cotan_counts[") || used.contains("cotan_offsets["),
                b if b < BUF0 + nbuf => used.contains(&format!("b{}[", b - BUF0)),
                b if b < BUF0 + nbuf + nalloc => used.contains(&format!("c{}[", b - BUF0 - nbuf)),
                b => used.contains(&format!("vt{}[", b - BUF0 - nbuf - nalloc)),
            })
            .collect()
    }

    fn tape_bindings(&mut self) {
        self.bindings.insert(1);
        if !(self.count && self.in_loop) {
            self.bindings.insert(3);
        }
        if self.in_loop {
            self.bindings.insert(4);
        }
    }

    /// A parallel loop's dispatch: invocation `t` runs iteration `lo + t`.
    fn finish_loop(mut self, op: &Op, k: u32) -> Res<GpuStep> {
        let OpKind::For { index, lo, hi, body, .. } = &op.kind else { unreachable!("a parallel loop is a `for`") };
        self.bindings.insert(0);
        let it = wty(self.f.ty(*index).scalar().unwrap(), op.span)?;
        let (lo, hi) = (self.val(*lo), self.val(*hi));
        let mut vars: Vec<&Var> = self.private.iter().collect();
        vars.sort();
        let decls: Vec<String> = vars
            .iter()
            .map(|v| Ok(format!("    var w{}: {};\n", v.0, wty(self.f.var(**v).ty, op.span)?)))
            .collect::<Res<_>>()?;
        self.iteration = format!("u32(v{})", index.0);
        for o in &body.ops {
            self.op(o)?;
        }
        let mut inner = std::mem::take(&mut self.body);
        if self.uses_tape {
            // The iteration's own stack: where the count run found room for it.
            self.tape_bindings();
            inner = if self.count {
                format!("    cotan_tp = 0u;\n    cotan_tmax = 0u;\n{inner}    if (st.cb{k} + t < st.ccap) {{ cotan_counts[st.cb{k} + t] = cotan_tmax; }}\n")
            } else {
                format!("    cotan_tp = cotan_offsets[st.cb{k} + t];\n    cotan_tend = cotan_offsets[st.cb{k} + t + 1u];\n{inner}")
            };
        }
        let wgsl = format!(
            "{}@compute @workgroup_size(64)\nfn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{\n    let t = gid.x + gid.y * nwg.x * 64u;\n    let lo = {lo};\n    let hi = {hi};\n    if (!(lo < hi) || t >= u32(hi - lo)) {{ return; }}\n    let v{}: {it} = lo + {it}(t);\n{}{inner}}}\n",
            self.header(),
            index.0,
            decls.concat()
        );
        let bindings = self.used_bindings(&wgsl);
        Ok(GpuStep { wgsl, count_wgsl: None, count_bindings: vec![], native_wgsl: None, bindings, loop_index: Some(k) })
    }

    /// A number's expression.
    fn val(&mut self, v: Value) -> String {
        if !self.in_callee && self.k.top_values.contains(&v) {
            self.bindings.insert(0);
            if self.f.ty(v) == Ty::BOOL {
                return format!("(st.v{} != 0u)", v.0);
            }
            return format!("st.v{}", v.0);
        }
        format!("v{}", v.0)
    }

    fn var(&mut self, v: Var) -> String {
        if !self.in_callee && self.k.top_vars.contains(&v) && !self.private.contains(&v) {
            self.bindings.insert(0);
            return format!("st.w{}", v.0);
        }
        format!("w{}", v.0)
    }

    fn var_get(&mut self, v: Var) -> String {
        let name = self.var(v);
        if name.starts_with("st.") && self.f.var(v).ty == Scalar::Bool {
            return format!("({name} != 0u)");
        }
        name
    }

    fn var_set(&mut self, v: Var, x: String) {
        let name = self.var(v);
        let x = if name.starts_with("st.") && self.f.var(v).ty == Scalar::Bool {
            format!("select(0u, 1u, {x})")
        } else {
            x
        };
        self.line(format!("{name} = {x};"));
    }

    fn scalar_of(&self, v: Value) -> Scalar {
        self.f.ty(v).scalar().unwrap_or(Scalar::U32)
    }

    /// Binds the result `r` of `op` to `e`.
    fn bind(&mut self, r: Value, e: String, span: SpanId) -> Res<()> {
        let s = self.scalar_of(r);
        if !self.in_callee && self.k.top_values.contains(&r) {
            self.bindings.insert(0);
            let e = if s == Scalar::Bool { format!("select(0u, 1u, {e})") } else { e };
            self.line(format!("st.v{} = {e};", r.0));
        } else {
            let t = wty(s, span)?;
            self.line(format!("let v{}: {t} = {e};", r.0));
        }
        Ok(())
    }

    fn float_lit(&self, x: f64, s: Scalar) -> String {
        if s == Scalar::F32 {
            let x = x as f32;
            if x.is_nan() {
                return "bitcast<f32>(0x7fc00000u)".into();
            }
            if x.is_infinite() {
                return if x > 0.0 { "bitcast<f32>(0x7f800000u)".into() } else { "bitcast<f32>(0xff800000u)".into() };
            }
            return format!("f32({x:?})");
        }
        format!("f64({x:?})")
    }

    fn lit(&self, c: Const, s: Scalar, span: SpanId) -> Res<String> {
        Ok(match c {
            Const::Bool(b) => b.to_string(),
            Const::Float(x) => {
                if s == Scalar::F64 && !x.is_finite() {
                    return err(span, "an infinite or NaN f64 constant has no WGSL literal; use a finite bound here");
                }
                self.float_lit(x, s)
            }
            Const::Int(i) => match wty(s, span)? {
                "u32" if (0..=u32::MAX as i128).contains(&i) => format!("{i}u"),
                "i32" if (i32::MIN as i128..=i32::MAX as i128).contains(&i) => format!("i32({i})"),
                "f32" | "f64" => self.float_lit(i as f64, s),
                _ => {
                    return err(
                        span,
                        format!("the constant {i} does not fit the GPU's 32-bit `{s}`; use a smaller number"),
                    )
                }
            },
        })
    }

    /// A buffer element's place, after a bounds check that reports an error.
    fn element(&mut self, mem: Value, index: Option<Value>, span: SpanId) -> Res<String> {
        let Some(i) = index else {
            return err(span, "a GPU kernel reads and writes arrays by element; a reference to one number is not supported, pass a slice");
        };
        let iv = self.val(i);
        let (name, len, what) = if let Some(&n) = self.k.buffers.get(&mem) {
            self.bindings.insert(0);
            self.bindings.insert(BUF0 + n);
            (
                format!("b{n}"),
                format!("st.l{n}"),
                self.f.value(mem).name.clone().unwrap_or_else(|| format!("buffer {n}")),
            )
        } else if let Some(&(j, _)) = self.k.allocs.get(&mem).filter(|_| !self.in_callee) {
            self.bindings.insert(0);
            self.bindings.insert(BUF0 + self.k.buffers.len() as u32 + j);
            (format!("c{j}"), format!("st.al{j}"), self.f.value(mem).name.clone().unwrap_or_else(|| "a vector".into()))
        } else if let Some(&n) = self.arrays.get(&mem) {
            (
                format!("a{}", mem.0),
                format!("{n}u"),
                self.f.value(mem).name.clone().unwrap_or_else(|| "a local array".into()),
            )
        } else {
            return err(
                span,
                "on the GPU, a kernel's arrays are its slice parameters and fixed-size local arrays (`[0.0; 3]`) made where they are used; pass this one as a `&mut [T]` parameter",
            );
        };
        let at = (self.site)(span);
        let code =
            self.k.site(format!("index out of bounds: the len is {{1}} but the index is {{0}}, in `{what}` at {at}"));
        self.bindings.insert(1);
        self.line(format!("if ({iv} >= {len}) {{ cotan_fail({code}u, u32({iv}), {len}); }}"));
        Ok(format!("{name}[{iv}]"))
    }

    fn helper(&mut self, name: &str, t: &str, text: &str) -> String {
        let full = format!("cotan_{name}_{t}");
        let nan = if t == "f32" { "bitcast<f32>(0x7fc00000u)" } else { "(f64(0.0) / f64(0.0))" };
        let text = text.replace("NAME", &full).replace("NAN", nan).replace('T', t);
        self.helpers.insert(text);
        full
    }

    fn math(&mut self, m: MathFn, a: &[String], s: Scalar, span: SpanId) -> Res<String> {
        let t = wty(s, span)?;
        let x = a[0].clone();
        let f64_ok = matches!(
            m,
            MathFn::Abs
                | MathFn::Sqrt
                | MathFn::Powi
                | MathFn::Hypot
                | MathFn::Recip
                | MathFn::MulAdd
                | MathFn::Max
                | MathFn::Min
                | MathFn::Clamp
                | MathFn::Signum
                | MathFn::Floor
                | MathFn::Ceil
                | MathFn::Round
                | MathFn::Trunc
        );
        if s == Scalar::F64 && !f64_ok {
            return err(
                span,
                format!("`f64::{}` has no GPU instruction (Vulkan and Metal have transcendental functions in f32 only); write the GPU kernel in f32", m.name()),
            );
        }
        let one = format!("{t}(1.0)");
        Ok(match m {
            MathFn::Abs => format!("abs({x})"),
            MathFn::Sqrt => format!("sqrt({x})"),
            MathFn::Cbrt => format!("(sign({x}) * pow(abs({x}), {t}(1.0 / 3.0)))"),
            MathFn::Exp => format!("exp({x})"),
            MathFn::Exp2 => format!("exp2({x})"),
            MathFn::ExpM1 => {
                // Kahan's: accurate near 0, where exp(x) - 1 cancels.
                let h = self.helper("expm1", t, "fn NAME(x: T) -> T {\n    let u = exp(x);\n    if (u == T(1.0)) { return x; }\n    if (u - T(1.0) == T(-1.0)) { return T(-1.0); }\n    return (u - T(1.0)) * x / log(u);\n}\n");
                format!("{h}({x})")
            }
            MathFn::Ln => format!("log({x})"),
            MathFn::Log => format!("(log({x}) / log({}))", a[1]),
            MathFn::Log2 => format!("log2({x})"),
            MathFn::Log10 => format!("(log({x}) * {t}(0.4342944819032518))"),
            MathFn::Ln1p => {
                let h = self.helper("ln1p", t, "fn NAME(x: T) -> T {\n    let u = T(1.0) + x;\n    if (u == T(1.0)) { return x; }\n    return log(u) * x / (u - T(1.0));\n}\n");
                format!("{h}({x})")
            }
            MathFn::Powi => {
                let h = self.helper("powi", t, "fn NAME(x: T, n: i32) -> T {\n    var b = x;\n    var e = n;\n    if (e < 0) { b = T(1.0) / b; e = -e; }\n    var r = T(1.0);\n    loop {\n        if (e == 0) { break; }\n        if ((e & 1) == 1) { r = r * b; }\n        b = b * b;\n        e = e >> 1u;\n    }\n    return r;\n}\n");
                format!("{h}({x}, {})", a[1])
            }
            MathFn::Powf => {
                // Rust's: x^0 = 1, a negative base to an integer power.
                let h = self.helper("powf", t, "fn NAME(x: T, y: T) -> T {\n    if (y == T(0.0)) { return T(1.0); }\n    if (x < T(0.0)) {\n        if (trunc(y) != y) { return NAN; }\n        let r = pow(-x, y);\n        if (trunc(y * T(0.5)) != y * T(0.5)) { return -r; }\n        return r;\n    }\n    return pow(x, y);\n}\n");
                format!("{h}({x}, {})", a[1])
            }
            MathFn::Sin => format!("sin({x})"),
            MathFn::Cos => format!("cos({x})"),
            MathFn::Tan => format!("tan({x})"),
            MathFn::Asin => format!("asin({x})"),
            MathFn::Acos => format!("acos({x})"),
            MathFn::Atan => format!("atan({x})"),
            MathFn::Atan2 => format!("atan2({x}, {})", a[1]),
            MathFn::Sinh => format!("sinh({x})"),
            MathFn::Cosh => format!("cosh({x})"),
            MathFn::Tanh => format!("tanh({x})"),
            MathFn::Asinh => format!("asinh({x})"),
            MathFn::Acosh => format!("acosh({x})"),
            MathFn::Atanh => format!("atanh({x})"),
            MathFn::Hypot => format!("sqrt({x} * {x} + {} * {})", a[1], a[1]),
            MathFn::Recip => format!("({one} / {x})"),
            MathFn::MulAdd => format!("fma({x}, {}, {})", a[1], a[2]),
            MathFn::Max => format!("max({x}, {})", a[1]),
            MathFn::Min => format!("min({x}, {})", a[1]),
            MathFn::Clamp => format!("clamp({x}, {}, {})", a[1], a[2]),
            MathFn::Signum => {
                let h = self.helper("signum", t, "fn NAME(x: T) -> T {\n    if (x != x) { return x; }\n    return select(T(1.0), T(-1.0), x < T(0.0));\n}\n");
                format!("{h}({x})")
            }
            MathFn::Floor => format!("floor({x})"),
            MathFn::Ceil => format!("ceil({x})"),
            MathFn::Round => {
                // Half away from zero, as Rust (WGSL's `round` is half to even).
                let h = self.helper("round", t, "fn NAME(x: T) -> T {\n    let t = trunc(x);\n    if (abs(x - t) >= T(0.5)) { return t + sign(x); }\n    return t;\n}\n");
                format!("{h}({x})")
            }
            MathFn::Trunc => format!("trunc({x})"),
        })
    }

    fn region(&mut self, r: &Region) -> Res<()> {
        self.depth += 1;
        for op in &r.ops {
            self.op(op)?;
        }
        self.depth -= 1;
        Ok(())
    }

    fn op(&mut self, op: &Op) -> Res<()> {
        let span = op.span;
        if let Some(r) = op.result {
            if self.skip.contains(&r) {
                return Ok(());
            }
        }
        if let Some(&(add, y, _, _)) = self.accum.get(&(op as *const Op)) {
            return self.accumulate(op, add, y);
        }
        let s = op.result.and_then(|r| self.f.ty(r).scalar());
        let e = match &op.kind {
            OpKind::Const(c) => self.lit(*c, s.unwrap(), span)?,
            OpKind::Unary(u, a) => {
                let x = self.val(*a);
                match (u, self.scalar_of(*a)) {
                    (UnOp::Neg, _) => format!("(-{x})"),
                    (UnOp::Not, Scalar::Bool) => format!("(!{x})"),
                    (UnOp::Not, _) => format!("(~{x})"),
                }
            }
            OpKind::Binary(b, a, c) => {
                let (x, y) = (self.val(*a), self.val(*c));
                let bool_ = self.scalar_of(*a) == Scalar::Bool;
                match b {
                    BinOp::Add => format!("({x} + {y})"),
                    BinOp::Sub => format!("({x} - {y})"),
                    BinOp::Mul => format!("({x} * {y})"),
                    BinOp::Div => format!("({x} / {y})"),
                    BinOp::Rem => format!("({x} % {y})"),
                    BinOp::BitAnd => format!("({x} & {y})"),
                    BinOp::BitOr => format!("({x} | {y})"),
                    BinOp::BitXor if bool_ => format!("({x} != {y})"),
                    BinOp::BitXor => format!("({x} ^ {y})"),
                    BinOp::Shl => format!("({x} << u32({y}))"),
                    BinOp::Shr => format!("({x} >> u32({y}))"),
                }
            }
            OpKind::Cmp(c, a, b) => {
                let (x, y) = (self.val(*a), self.val(*b));
                let o = match c {
                    CmpOp::Eq => "==",
                    CmpOp::Ne => "!=",
                    CmpOp::Lt => "<",
                    CmpOp::Le => "<=",
                    CmpOp::Gt => ">",
                    CmpOp::Ge => ">=",
                };
                format!("({x} {o} {y})")
            }
            OpKind::Cast(a) => {
                let from = self.scalar_of(*a);
                let to = s.unwrap();
                let x = self.val(*a);
                let t = wty(to, span)?;
                if wty(from, span)? == t {
                    x
                } else if from == Scalar::Bool {
                    format!("select({t}(0), {t}(1), {x})")
                } else {
                    format!("{t}({x})")
                }
            }
            OpKind::Math(m, args) => {
                let a: Vec<String> = args.iter().map(|v| self.val(*v)).collect();
                self.math(*m, &a, s.unwrap(), span)?
            }
            OpKind::Select(c, a, b) => {
                let (c, a, b) = (self.val(*c), self.val(*a), self.val(*b));
                format!("select({b}, {a}, {c})")
            }
            OpKind::Load { mem, index } => {
                let place = self.element(*mem, *index, span)?;
                self.note(*mem, *index, 1);
                let elem = self.f.ty(*mem).mem().unwrap().elem;
                if self.atomic.contains(mem) {
                    if elem == Scalar::F32 && !self.native_f32 {
                        format!("bitcast<f32>(atomicLoad(&{place}))")
                    } else {
                        format!("atomicLoad(&{place})")
                    }
                } else {
                    place
                }
            }
            OpKind::Len(mem) => {
                if let Some(&n) = self.k.buffers.get(mem) {
                    self.bindings.insert(0);
                    format!("st.l{n}")
                } else if let Some(&n) = self.arrays.get(mem) {
                    format!("{n}u")
                } else if let Some(&(j, _)) = self.k.allocs.get(mem).filter(|_| !self.in_callee) {
                    self.bindings.insert(0);
                    format!("st.al{j}")
                } else {
                    return err(span, "on the GPU, only a kernel's slice parameters and its fixed-size local arrays have a length");
                }
            }
            OpKind::Store { mem, index, value } => {
                let x = self.val(*value);
                let place = self.element(*mem, *index, span)?;
                self.note(*mem, *index, 0);
                let elem = self.f.ty(*mem).mem().unwrap().elem;
                if self.atomic.contains(mem) {
                    let x = if elem == Scalar::F32 && !self.native_f32 { format!("bitcast<u32>({x})") } else { x };
                    self.line(format!("atomicStore(&{place}, {x});"));
                } else {
                    self.line(format!("{place} = {x};"));
                }
                return Ok(());
            }
            OpKind::Alloc { len, init } if !self.in_callee && self.k.allocs.contains_key(&op.result.unwrap()) => {
                // A vector of run-time length: a buffer the host makes, as long as the count
                // run found.
                let r = op.result.unwrap();
                let j = self.k.allocs[&r].0;
                let b = BUF0 + self.k.buffers.len() as u32 + j;
                self.bindings.insert(b);
                let (n, x) = (self.val(*len), self.val(*init));
                let k = self.fresh("k");
                self.bindings.insert(0);
                self.line(format!("st.al{j} = u32({n});"));
                self.line(format!("st.am{j} = max(st.am{j}, st.al{j});"));
                self.line(format!("for (var {k} = 0u; {k} < st.al{j}; {k}++) {{ c{j}[{k}] = {x}; }}"));
                return Ok(());
            }
            OpKind::Alloc { len, init } => {
                let r = op.result.unwrap();
                let m = self.f.ty(r).mem().unwrap();
                let n = match (m.kind, self.const_int(*len)) {
                    (MemKind::Array(n), _) => n,
                    (MemKind::Vec, Some(n)) => n as u64,
                    _ => {
                        return err(
                            span,
                            "on the GPU, a kernel's local arrays have a size known at compile time (`[0.0; 3]`); pass a longer one as a `&mut [T]` parameter",
                        )
                    }
                };
                let t = wty(m.elem, span)?;
                let x = self.val(*init);
                self.arrays.insert(r, n);
                self.line(format!("var a{}: array<{t}, {n}>;", r.0));
                let k = self.fresh("k");
                self.line(format!("for (var {k} = 0u; {k} < {n}u; {k}++) {{ a{}[{k}] = {x}; }}", r.0));
                return Ok(());
            }
            OpKind::Fill { mem, value, .. } => {
                let x = self.val(*value);
                let len = if let Some(&n) = self.k.buffers.get(mem) {
                    self.bindings.insert(BUF0 + n);
                    format!("st.l{n}")
                } else if let Some(&n) = self.arrays.get(mem) {
                    format!("{n}u")
                } else {
                    return err(span, "on the GPU, `fill` applies to a kernel's slice parameters and fixed-size local arrays");
                };
                let k = self.fresh("k");
                let name = if let Some(&n) = self.k.buffers.get(mem) { format!("b{n}") } else { format!("a{}", mem.0) };
                if self.atomic.contains(mem) {
                    return err(span, "a parallel loop that fills an array it accumulates into cannot run on the GPU");
                }
                self.line(format!("for (var {k} = 0u; {k} < {len}; {k}++) {{ {name}[{k}] = {x}; }}"));
                return Ok(());
            }
            OpKind::DeclVar { var, init } => {
                let x = self.val(*init);
                let name = self.var(*var);
                if name.starts_with("st.") {
                    self.var_set(*var, x);
                } else {
                    let t = wty(self.f.var(*var).ty, span)?;
                    self.line(format!("var {name}: {t} = {x};"));
                }
                return Ok(());
            }
            OpKind::GetVar(v) => self.var_get(*v),
            OpKind::SetVar(v, x) => {
                let x = self.val(*x);
                self.var_set(*v, x);
                return Ok(());
            }
            OpKind::If { cond, then_region, else_region } => {
                let c = self.val(*cond);
                self.line(format!("if ({c}) {{"));
                self.region(then_region)?;
                if !else_region.ops.is_empty() {
                    self.line("} else {");
                    self.region(else_region)?;
                }
                self.line("}");
                return Ok(());
            }
            OpKind::For { index, lo, hi, step, inclusive, reverse, body, exit } => {
                let t = wty(self.scalar_of(*index), span)?;
                let (lo, hi) = (self.val(*lo), self.val(*hi));
                let step = match step {
                    Some(s) => self.val(*s),
                    None => format!("{t}(1)"),
                };
                let n = self.fresh("n");
                let k = self.fresh("k");
                let count = if *inclusive {
                    format!("if ({lo} <= {hi}) {{ {n} = ({hi} - {lo}) / {step} + {t}(1); }}")
                } else {
                    format!("if ({lo} < {hi}) {{ {n} = ({hi} - {t}(1) - {lo}) / {step} + {t}(1); }}")
                };
                self.line(format!("var {n}: {t} = {t}(0);"));
                self.line(count);
                // A loop that ends before its count without its exit flag was ended by the
                // driver (llvmpipe, Mesa's lavapipe, ends loops after 65535 iterations): an
                // error, never a silently shorter loop.
                let done = self.fresh("done");
                self.line(format!("var {done} = false;"));
                self.line(format!("var {k}: {t} = {t}(0);"));
                self.line(format!("for (; {k} < {n}; {k}++) {{"));
                let at = if *reverse { format!("({n} - {t}(1) - {k})") } else { k.clone() };
                self.line(format!("    let v{}: {t} = {lo} + {at} * {step};", index.0));
                self.region(body)?;
                if let Some(x) = exit {
                    let e = self.var_get(*x);
                    self.line(format!("    if ({e}) {{ {done} = true; break; }}"));
                }
                self.line("}");
                let code = self.cut_site(span);
                self.line(format!("if (!{done} && {k} < {n}) {{ cotan_fail({code}u, u32({k}), u32({n})); }}"));
                return Ok(());
            }
            OpKind::While { cond_region, cond, body, exit } => {
                let done = self.fresh("done");
                self.line(format!("var {done} = false;"));
                self.line("loop {");
                self.region(cond_region)?;
                let cv = self.val(*cond);
                self.line(format!("    if (!{cv}) {{ {done} = true; break; }}"));
                self.region(body)?;
                if let Some(x) = exit {
                    let e = self.var_get(*x);
                    self.line(format!("    if ({e}) {{ {done} = true; break; }}"));
                }
                self.line("}");
                let code = self.cut_site(span);
                self.line(format!("if (!{done}) {{ cotan_fail({code}u, 0u, 0u); }}"));
                return Ok(());
            }
            OpKind::Assert { cond, message } => {
                let c = self.val(*cond);
                let at = (self.site)(span);
                let code = self.k.site(format!("assertion failed: {message}, at {at}"));
                self.bindings.insert(1);
                self.line(format!("if (!{c}) {{ cotan_fail({code}u, 0u, 0u); }}"));
                return Ok(());
            }
            OpKind::Call { callee, args, outs, tape } => {
                if *tape {
                    self.use_tape();
                }
                let name = self.function(callee, span)?;
                let mut a = vec![];
                for (v, m) in args {
                    if *m || self.f.ty(*v).mem().is_some() {
                        return err(span, format!("on the GPU, a kernel passes numbers only to the functions it calls (WGSL has no pointers to buffers as arguments); inline `{callee}`'s body here by hand"));
                    }
                    a.push(self.val(*v));
                }
                let call = format!("{name}({})", a.join(", "));
                match outs.as_slice() {
                    [] => self.line(format!("{call};")),
                    [v] => self.var_set(*v, call),
                    several => {
                        let t = self.fresh("t");
                        self.line(format!("let {t} = {call};"));
                        for (j, v) in several.iter().enumerate() {
                            self.var_set(*v, format!("{t}.o{j}"));
                        }
                    }
                }
                return Ok(());
            }
            OpKind::Return(vs) => {
                if self.in_callee {
                    let xs: Vec<String> = vs.iter().map(|v| self.val(*v)).collect();
                    match (xs.as_slice(), &self.ret_struct) {
                        ([], _) => self.line("return;"),
                        ([x], None) => self.line(format!("return {x};")),
                        (xs, Some(name)) => self.line(format!("return {name}({});", xs.join(", "))),
                        _ => unreachable!("one result, or a struct of them"),
                    }
                } else {
                    self.bindings.insert(0);
                    for (j, v) in vs.iter().enumerate() {
                        let x = self.val(*v);
                        let x = if self.scalar_of(*v) == Scalar::Bool { format!("select(0u, 1u, {x})") } else { x };
                        self.line(format!("st.r{j} = {x};"));
                    }
                }
                return Ok(());
            }
            OpKind::Push(v) => {
                let x = self.val(*v);
                let word = match self.scalar_of(*v) {
                    Scalar::Bool => format!("select(0u, 1u, {x})"),
                    Scalar::F64 => {
                        self.use_tape();
                        self.helpers.insert(PUSH64.to_string());
                        self.line(format!("cotan_push64({x});"));
                        return Ok(());
                    }
                    _ => format!("bitcast<u32>({x})"),
                };
                self.use_tape();
                self.line(format!("cotan_push({word});"));
                return Ok(());
            }
            OpKind::Pop => {
                self.use_tape();
                match s.unwrap() {
                    Scalar::Bool => "(cotan_pop() != 0u)".to_string(),
                    Scalar::F64 => {
                        self.helpers.insert(PUSH64.to_string());
                        "cotan_pop64()".to_string()
                    }
                    other => format!("bitcast<{}>(cotan_pop())", wty(other, span)?),
                }
            }
            OpKind::Print { .. } => return err(span, "`println!` and the like do not run on the GPU; remove them from a `gpu` kernel"),
            _ => {
                return err(
                    span,
                    "this cannot run on the GPU: a `gpu` kernel uses numbers, slice parameters (by element and `.len()`), fixed-size local arrays, loops, branches and calls of functions of numbers; rewrite it so, or drop `gpu`",
                )
            }
        };
        if let Some(r) = op.result {
            self.bind(r, e, span)?;
        }
        Ok(())
    }

    /// Validation mode: records that this iteration does access `kind` (0 write, 1 read, 2
    /// accumulate) to element `e` of `mem`, if the loop writes `mem`.
    fn note(&mut self, mem: Value, index: Option<Value>, kind: u32) {
        let (Some(&j), Some(i)) = (self.tables.get(&mem), index) else { return };
        let e = self.val(i);
        let it = self.iteration.clone();
        self.bindings.insert(BUF0 + self.k.buffers.len() as u32 + self.k.allocs.len() as u32 + j);
        self.line(format!(
            "atomicMax(&vt{j}[6u * u32({e}) + {}u], {it} + 1u);\n{}atomicMax(&vt{j}[6u * u32({e}) + {}u], 0xffffffffu - {it});",
            2 * kind,
            "    ".repeat(self.depth),
            2 * kind + 1
        ));
    }

    fn use_tape(&mut self) {
        if !self.uses_tape {
            self.uses_tape = true;
            let at = self.k.f.name.clone();
            self.overflow_site = self.k.site(format!(
                "the AD stack of `{at}` overflowed at entry {{0}} of {{1}}: the count run found fewer pushes than the real run made (a data-dependent branch that atomic accumulations' order changed?)"
            ));
        }
        self.bindings.insert(1);
    }

    /// The message of a loop the driver ended early.
    fn cut_site(&mut self, span: SpanId) -> u32 {
        let at = (self.site)(span);
        self.bindings.insert(1);
        self.k.site(format!(
            "the GPU driver ended the loop at {at} early, after {{0}} iterations (llvmpipe, Mesa's software Vulkan device, ends an invocation's loops after 65535 iterations in all, counted over nested loops and branches); run this kernel on a hardware GPU or on the CPU"
        ))
    }

    fn const_int(&self, v: Value) -> Option<i128> {
        let mut found = None;
        self.f.walk(&mut |o| {
            if o.result == Some(v) {
                if let OpKind::Const(Const::Int(i)) = o.kind {
                    found = Some(i);
                }
            }
        });
        found
    }

    /// `mem[i] += y` (`-=`) as an atomic add.
    fn accumulate(&mut self, op: &Op, add: bool, y: Value) -> Res<()> {
        let OpKind::Store { mem, index, .. } = op.kind else { unreachable!("an accumulation is a store") };
        let place = self.element(mem, index, op.span)?;
        self.note(mem, index, 2);
        let y = self.val(y);
        let elem = self.f.ty(mem).mem().unwrap().elem;
        if elem == Scalar::F32 && !self.native_f32 {
            let sign = if add { "+" } else { "-" };
            let old = self.fresh("old");
            let r = self.fresh("r");
            self.line(format!("var {old} = atomicLoad(&{place});"));
            self.line(format!(
                "loop {{\n        let {r} = atomicCompareExchangeWeak(&{place}, {old}, bitcast<u32>(bitcast<f32>({old}) {sign} {y}));\n        if ({r}.exchanged) {{ break; }}\n        {old} = {r}.old_value;\n    }}"
            ));
        } else {
            let f = if add { "atomicAdd" } else { "atomicSub" };
            self.line(format!("{f}(&{place}, {y});"));
        }
        Ok(())
    }

    /// The WGSL function for a call of `path`, written once per module.
    fn function(&mut self, path: &str, span: SpanId) -> Res<String> {
        if let Some(n) = self.fn_names.get(path) {
            return Ok(n.clone());
        }
        if self.calling.iter().any(|c| c == path) {
            return err(
                span,
                format!(
                    "`{path}` calls itself; WGSL has no recursion, so a GPU kernel cannot call it: write it as a loop"
                ),
            );
        }
        let g = match self.k.callees.get(path) {
            Some(g) => g.clone(),
            None => {
                let g = (self.callee)(path).map_err(|m| WgslError { span, message: m })?;
                self.k.callees.insert(path.to_string(), g.clone());
                g
            }
        };
        self.k.fn_count += 1;
        let name = format!("cotan_fn{}", self.k.fn_count);
        let mut params = vec![];
        for &p in &g.params {
            match g.ty(p) {
                Ty::Scalar(s) => params.push(format!("v{}: {}", p.0, wty(s, span)?)),
                Ty::Mem(_) => {
                    return err(span, format!("on the GPU, a kernel calls functions of numbers only (WGSL has no pointers to buffers as arguments); inline `{path}`'s body here by hand"))
                }
            }
        }
        let mut out_struct = None;
        let ret = match g.returns.as_slice() {
            [] => String::new(),
            [Ty::Scalar(s)] => format!(" -> {}", wty(*s, span)?),
            several => {
                // Several results: a struct of them.
                let sname = format!("{name}_out");
                let mut text = format!("struct {sname} {{\n");
                for (j, t) in several.iter().enumerate() {
                    let Ty::Scalar(s) = t else {
                        return err(span, format!("on the GPU, a kernel calls functions that return numbers; `{path}` returns memory: inline it by hand"));
                    };
                    text.push_str(&format!("    o{j}: {},\n", wty(*s, span)?));
                }
                text.push_str("}\n");
                self.helpers.insert(text);
                out_struct = Some(sname.clone());
                format!(" -> {sname}")
            }
        };
        // The callee in a module of its own values, whose callees and helpers join this one.
        let mut sub = Module::new(&mut *self.k, &mut *self.callee, self.site, &g);
        sub.in_callee = true;
        sub.count = self.count;
        sub.in_loop = self.in_loop;
        sub.ret_struct = out_struct;
        sub.calling = self.calling.clone();
        sub.calling.push(path.to_string());
        sub.fn_names = self.fn_names.clone();
        let result = g.body.ops.iter().try_for_each(|op| sub.op(op));
        let (body, helpers, functions, fn_names, bindings, tape) =
            (sub.body, sub.helpers, sub.functions, sub.fn_names, sub.bindings, sub.uses_tape);
        if tape {
            self.use_tape();
        }
        result
            .map_err(|e| WgslError { span, message: format!("in `{path}`, which the kernel calls: {}", e.message) })?;
        self.helpers.extend(helpers);
        self.bindings.extend(bindings);
        for (n, text) in functions {
            if !self.functions.iter().any(|(m, _)| *m == n) {
                self.functions.push((n, text));
            }
        }
        self.fn_names.extend(fn_names);
        self.fn_names.insert(path.to_string(), name.clone());
        self.functions.push((name.clone(), format!("fn {name}({}){ret} {{\n{body}}}\n", params.join(", "))));
        Ok(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` (the IR's text form) with its `for` loops over `i` parallel.
    fn kernel(text: &str) -> Function {
        let mut f = cotan_ir::parse(text).unwrap_or_else(|e| panic!("{e}"));
        let mut loops = vec![];
        f.walk(&mut |op| {
            if let OpKind::For { index, .. } = op.kind {
                if f.value(index).name.as_deref() == Some("i") {
                    loops.push(index);
                }
            }
        });
        f.par_loops = loops;
        f
    }

    fn wgsl(f: &Function) -> Res<GpuKernel> {
        wgsl_kernel(f, &mut |p: &str| Err(format!("no callee {p}")), &|_| "{file}:1".to_string())
    }

    const SCATTER: &str = r#"fn k(%0 "x": &[f32], %1 "y": &mut [f32]) -> (f32) {
  %2: usize = len %0
  %3: usize = const 0
  for %4 "i": usize in %3..%2 {
    %5: f32 = load %0[%4]
    store %1[%4], %5
    %6: usize = const 3
    %7: usize = rem %4, %6
    %8: f32 = load %1[%7]
    %9: f32 = add %8, %5
    store %1[%7], %9
  }
  %10: f32 = load %1[%3]
  return %10
}"#;

    #[test]
    fn a_parallel_loop_is_a_dispatch_with_atomic_accumulations() {
        let k = wgsl(&kernel(SCATTER)).unwrap();
        // The sizing step, the loop, the step after it.
        assert_eq!(k.steps.len(), 3);
        assert_eq!(k.steps.iter().map(|s| s.loop_index).collect::<Vec<_>>(), [None, Some(0), None]);
        let body = &k.steps[1].wgsl;
        assert!(body.contains("@workgroup_size(64)"), "{body}");
        assert!(body.contains("atomicCompareExchangeWeak"), "{body}");
        assert!(body.contains("var<storage, read_write> b1: array<atomic<u32>>"), "{body}");
        let native = k.steps[1].native_wgsl.as_deref().unwrap();
        assert!(native.contains("array<atomic<f32>>") && native.contains("atomicAdd("), "{native}");
        // Bounds checks report, they do not clamp.
        assert!(body.contains("cotan_fail("), "{body}");
        assert!(k.sites.iter().any(|s| s.contains("index out of bounds")));
        assert!(k.tape.is_none() && k.returns.len() == 1);
    }

    #[test]
    fn a_store_at_another_index_runs_in_order() {
        let text = SCATTER.replace("store %1[%4], %5", "store %1[%7], %5");
        let k = wgsl(&kernel(&text)).unwrap();
        assert!(k.steps.iter().all(|s| s.loop_index.is_none()), "{k:?}");
        assert_eq!(k.loops, 0);
    }

    #[test]
    fn f64_transcendental_functions_are_refused() {
        let text = r#"fn k(%0 "x": &[f64], %1 "y": &mut [f64]) {
  %2: usize = len %0
  %3: usize = const 0
  for %4 "i": usize in %3..%2 {
    %5: f64 = load %0[%4]
    %6: f64 = sin %5
    store %1[%4], %6
  }
  return
}"#;
        let e = wgsl(&kernel(text)).unwrap_err();
        assert!(e.message.contains("`f64::sin` has no GPU instruction"), "{}", e.message);
    }
}
