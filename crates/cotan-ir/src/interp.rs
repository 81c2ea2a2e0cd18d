//! A reference interpreter with Rust's semantics: the ground truth that transformed code is
//! tested against. Where Rust would panic (overflow, division by zero, out-of-bounds
//! indexing, a failed assertion) it returns an [`InterpError`].
//!
//! Memory values are ids into a table of buffers (the parameters' buffers first, then local
//! allocations), so two values can refer to the same buffer, as references do.

use std::cmp::Ordering;
use std::fmt;
use std::rc::Rc;

use crate::print::{binop_name, print_op, print_ty, unop_name};
use crate::{BinOp, CmpOp, Const, Function, MathFn, MemKind, MemTy, Op, OpKind, Region, Scalar, Ty, UnOp, Value, Var};

/// A scalar at run time. An `Int` always lies in the range of its type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Val {
    F32(f32),
    F64(f64),
    Int(i128, Scalar),
    Bool(bool),
}

impl Val {
    pub fn scalar(&self) -> Scalar {
        match self {
            Val::F32(_) => Scalar::F32,
            Val::F64(_) => Scalar::F64,
            Val::Int(_, s) => *s,
            Val::Bool(_) => Scalar::Bool,
        }
    }

    /// The value of a float (an `f32` is widened exactly).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Val::F32(x) => Some(f64::from(*x)),
            Val::F64(x) => Some(*x),
            _ => None,
        }
    }

    pub fn as_int(&self) -> Option<i128> {
        match self {
            Val::Int(i, _) => Some(*i),
            _ => None,
        }
    }
}

/// An argument: a scalar, or the contents of the memory a memory parameter refers to
/// (a cell is a one-element `Vec`).
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    Scalar(Val),
    Mem(Vec<Val>),
    /// A struct or tuple, field by field (a scalar field may be given as a scalar or as a
    /// one-element `Mem`; it comes back as the latter).
    Record(Vec<(String, Arg)>),
    /// Nested memory (`&[Vec<f64>]`, `[[f64; 3]; 4]`), row by row.
    Rows(Vec<Arg>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InterpError {
    /// The first line of the op that failed, as printed.
    pub op: Option<String>,
    pub message: String,
}

impl fmt::Display for InterpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.op {
            Some(op) => write!(f, "{} (in `{op}`)", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for InterpError {}

/// How many ops [`run`] executes before giving up.
pub const DEFAULT_STEP_LIMIT: u64 = 100_000_000;

/// Runs `f`; memory arguments are updated in place. Returns the returned scalars.
pub fn run(f: &Function, args: &mut [Arg]) -> Result<Vec<Val>, InterpError> {
    run_with_limit(f, args, DEFAULT_STEP_LIMIT)
}

/// [`run`], giving up after `limit` steps (an op, a loop iteration or an element allocated).
pub fn run_with_limit(f: &Function, args: &mut [Arg], limit: u64) -> Result<Vec<Val>, InterpError> {
    let results = exec(f, args, limit)?;
    let scalar = |a: Arg| match a {
        Arg::Scalar(v) => Ok(v),
        Arg::Mem(_) | Arg::Record(_) | Arg::Rows(_) => {
            Err(InterpError { op: None, message: "the function returns memory; use `exec`".into() })
        }
    };
    results.into_iter().map(scalar).collect()
}

/// The functions a program calls, by the Rust path in `Call` ops.
pub trait Callees {
    fn function(&self, path: &str) -> Result<Rc<Function>, String>;
}

/// No callees: a call is an error.
pub struct NoCallees;

impl Callees for NoCallees {
    fn function(&self, path: &str) -> Result<Rc<Function>, String> {
        Err(format!("the interpreter cannot run the call to `{path}` without the functions it calls"))
    }
}

/// How deep calls may nest before the interpreter gives up (as a stack overflow would).
pub const MAX_CALL_DEPTH: usize = 200;

/// Like [`run_with_limit`], but returned memory values are returned too (as their contents).
pub fn exec(f: &Function, args: &mut [Arg], limit: u64) -> Result<Vec<Arg>, InterpError> {
    exec_with(f, args, limit, &NoCallees)
}

/// [`exec`], running `Call` ops with the functions `callees` gives. The step limit covers
/// the callees' steps too.
pub fn exec_with(f: &Function, args: &mut [Arg], limit: u64, callees: &dyn Callees) -> Result<Vec<Arg>, InterpError> {
    exec_nested(f, args, limit, callees, 0, new_tapes()).0
}

fn new_tapes() -> Vec<Vec<Val>> {
    vec![vec![]; Scalar::ALL.len()]
}

/// Runs `f` at call depth `depth` with the tape `tapes` (its own, or its caller's for a
/// function with `tape_param`); also returns the steps it took and the tape.
fn exec_nested(
    f: &Function,
    args: &mut [Arg],
    limit: u64,
    callees: &dyn Callees,
    depth: usize,
    tapes: Vec<Vec<Val>>,
) -> (Result<Vec<Arg>, InterpError>, u64, Vec<Vec<Val>>) {
    let mut m = Machine {
        f,
        values: vec![None; f.values.len()],
        vars: vec![None; f.vars.len()],
        mems: vec![],
        recs: vec![],
        rows: vec![],
        tapes,
        steps: 0,
        limit,
        callees,
        depth,
    };
    let result = m.take_args(args).and_then(|()| m.region(&f.body));
    let result = result.and_then(|flow| match flow {
        Flow::Return(slots) => Ok(slots.into_iter().map(|s| m.to_arg(s)).collect()),
        Flow::Next if f.returns.is_empty() => Ok(vec![]),
        Flow::Next => Err(InterpError { op: None, message: "the function ended without `return`".into() }),
    });
    m.give_back(args);
    (result, m.steps, m.tapes)
}

/// The run-time content of an SSA value.
#[derive(Clone, Copy, Debug)]
enum Slot {
    Scalar(Val),
    /// An index into `Machine::mems`.
    Mem(usize),
    /// Part of a buffer of `Machine::mems`: `mems[id][start..start + len]`.
    View {
        id: usize,
        start: usize,
        len: usize,
    },
    /// An index into `Machine::recs`.
    Rec(usize),
    /// An index into `Machine::rows`: nested memory.
    Rows(usize),
}

enum Flow {
    Next,
    Return(Vec<Slot>),
}

/// Why an op stopped: a problem with the op itself, or an error already located in a nested op.
enum Stop {
    Here(String),
    Nested(InterpError),
}

impl From<String> for Stop {
    fn from(message: String) -> Stop {
        Stop::Here(message)
    }
}

impl From<InterpError> for Stop {
    fn from(e: InterpError) -> Stop {
        Stop::Nested(e)
    }
}

type Res<T> = Result<T, String>;

struct Machine<'f> {
    f: &'f Function,
    values: Vec<Option<Slot>>,
    vars: Vec<Option<Val>>,
    mems: Vec<Vec<Val>>,
    /// Records: their fields' slots, by name.
    recs: Vec<Vec<(String, Slot)>>,
    /// The rows of nested memory.
    rows: Vec<Vec<Slot>>,
    /// One LIFO stack per scalar type, in the order of `Scalar::ALL`.
    tapes: Vec<Vec<Val>>,
    steps: u64,
    limit: u64,
    callees: &'f dyn Callees,
    depth: usize,
}

fn tape_index(s: Scalar) -> usize {
    Scalar::ALL.iter().position(|&t| t == s).unwrap()
}

fn int_range(s: Scalar) -> (i128, i128) {
    s.int_range()
}

/// Two's complement truncation to the width of `s`, as `as` does.
fn wrap(v: i128, s: Scalar) -> i128 {
    let bits = s.int_bits();
    if bits == 128 {
        // (`u128` values above `i128::MAX` are out of the IR's range.)
        return if s.is_signed() { v } else { v.max(0) };
    }
    let low = (v as u128) & ((1u128 << bits) - 1);
    if s.is_signed() && low >> (bits - 1) == 1 {
        low as i128 - (1i128 << bits)
    } else {
        low as i128
    }
}

/// An integer result, or Rust's overflow panic message.
fn checked(v: Option<i128>, s: Scalar, verb: &str) -> Res<Val> {
    let (lo, hi) = int_range(s);
    match v {
        Some(v) if (lo..=hi).contains(&v) => Ok(Val::Int(v, s)),
        _ => Err(format!("attempt to {verb} with overflow ({s})")),
    }
}

fn check_val(v: Val, s: Scalar) -> Res<()> {
    if v.scalar() != s {
        return Err(format!("expected a {s}, got {v:?}"));
    }
    if let Val::Int(i, _) = v {
        let (lo, hi) = int_range(s);
        if !(lo..=hi).contains(&i) {
            return Err(format!("{i} does not fit in {s}"));
        }
    }
    Ok(())
}

impl Machine<'_> {
    fn take_args(&mut self, args: &mut [Arg]) -> Result<(), InterpError> {
        let f = self.f;
        let err = |message: String| InterpError { op: None, message };
        if args.len() != f.params.len() {
            return Err(err(format!("{} takes {} arguments, got {}", f.name, f.params.len(), args.len())));
        }
        for (k, (&p, arg)) in f.params.iter().zip(args.iter_mut()).enumerate() {
            let ty = f
                .values
                .get(p.0 as usize)
                .ok_or_else(|| err(format!("parameter %{} is not in the value table", p.0)))?
                .ty;
            let slot = match (ty, arg) {
                (Ty::Scalar(s), Arg::Scalar(v)) => {
                    check_val(*v, s).map_err(|m| err(format!("argument {k}: {m}")))?;
                    Slot::Scalar(*v)
                }
                (Ty::Mem(mt), Arg::Mem(buf)) => {
                    for v in buf.iter() {
                        check_val(*v, mt.elem).map_err(|m| err(format!("argument {k}: {m}")))?;
                    }
                    let want = match mt.kind {
                        MemKind::Array(n) | MemKind::ArrayPtr(n) => Some(n),
                        MemKind::Cell => Some(1),
                        _ => None,
                    };
                    if want.is_some_and(|n| n != buf.len() as u64) {
                        return Err(err(format!(
                            "argument {k}: {} needs {} elements, got {}",
                            print_ty(ty),
                            want.unwrap(),
                            buf.len()
                        )));
                    }
                    self.mems.push(std::mem::take(buf));
                    Slot::Mem(self.mems.len() - 1)
                }
                (Ty::Mem(MemTy { kind: MemKind::Record(_), .. }), arg @ Arg::Record(_)) => self.lend_in(arg),
                (Ty::Mem(MemTy { kind: MemKind::Nested(..) | MemKind::Records(..), .. }), arg @ Arg::Rows(_)) => {
                    self.lend_in(arg)
                }
                (_, arg) => return Err(err(format!("argument {k}: expected {}, got {arg:?}", print_ty(ty)))),
            };
            self.values[p.0 as usize] = Some(slot);
        }
        Ok(())
    }

    /// Moves the parameters' buffers back into `args`, also after an error.
    fn give_back(&mut self, args: &mut [Arg]) {
        for (&p, arg) in self.f.params.iter().zip(args.iter_mut()) {
            if let Some(Some(slot)) = self.values.get(p.0 as usize).copied() {
                self.hand_back(slot, arg);
            }
        }
    }

    /// Takes the buffers of a memory or record argument into the machine (a scalar field
    /// becomes a cell); the field types are checked where `Field` reaches them.
    fn lend_in(&mut self, arg: &mut Arg) -> Slot {
        match arg {
            Arg::Scalar(v) => {
                self.mems.push(vec![*v]);
                Slot::Mem(self.mems.len() - 1)
            }
            Arg::Mem(buf) => {
                self.mems.push(std::mem::take(buf));
                Slot::Mem(self.mems.len() - 1)
            }
            Arg::Rows(rs) => {
                let slots = rs.iter_mut().map(|a| self.lend_in(a)).collect();
                self.rows.push(slots);
                Slot::Rows(self.rows.len() - 1)
            }
            Arg::Record(fields) => {
                let slots = fields.iter_mut().map(|(n, a)| (n.clone(), self.lend_in(a))).collect();
                self.recs.push(slots);
                Slot::Rec(self.recs.len() - 1)
            }
        }
    }

    /// The inverse of [`Machine::lend_in`]: the buffers go back into `arg`.
    fn hand_back(&mut self, slot: Slot, arg: &mut Arg) {
        match (slot, arg) {
            (Slot::Mem(id), Arg::Mem(buf)) => *buf = std::mem::take(&mut self.mems[id]),
            (Slot::Mem(id), a @ Arg::Scalar(_)) => *a = Arg::Mem(std::mem::take(&mut self.mems[id])),
            (Slot::Rec(id), Arg::Record(fields)) => {
                let slots = self.recs[id].clone();
                for ((_, s), (_, a)) in slots.into_iter().zip(fields.iter_mut()) {
                    self.hand_back(s, a);
                }
            }
            (Slot::Rows(id), Arg::Rows(rs)) => {
                let slots = self.rows[id].clone();
                for (s, a) in slots.into_iter().zip(rs.iter_mut()) {
                    self.hand_back(s, a);
                }
            }
            _ => {}
        }
    }

    /// The inverse of [`Machine::lend_out`]: a callee's buffers come back to the caller.
    fn take_back(&mut self, slot: Slot, arg: &mut Arg) {
        match (slot, arg) {
            (Slot::Mem(id), Arg::Mem(buf)) => self.mems[id] = std::mem::take(buf),
            (Slot::View { id, start, len }, Arg::Mem(buf)) if buf.len() == len => {
                self.mems[id][start..start + len].copy_from_slice(buf);
            }
            (Slot::Rec(id), Arg::Record(fields)) => {
                let slots = self.recs[id].clone();
                for ((_, s), (_, a)) in slots.into_iter().zip(fields.iter_mut()) {
                    self.take_back(s, a);
                }
            }
            (Slot::Rows(id), Arg::Rows(rs)) => {
                let slots = self.rows[id].clone();
                for (s, a) in slots.into_iter().zip(rs.iter_mut()) {
                    self.take_back(s, a);
                }
            }
            _ => {}
        }
    }

    /// An argument that refers to the caller's memory, lent to a callee.
    fn lend_out(&mut self, slot: Slot) -> Arg {
        match slot {
            Slot::Scalar(v) => Arg::Scalar(v),
            Slot::Mem(id) => Arg::Mem(std::mem::take(&mut self.mems[id])),
            // (A copy, written back by `take_back`, as a reborrow of part of a buffer.)
            Slot::View { id, start, len } => Arg::Mem(self.mems[id][start..start + len].to_vec()),
            Slot::Rec(id) => {
                let fields = self.recs[id].clone();
                Arg::Record(fields.into_iter().map(|(n, s)| (n, self.lend_out(s))).collect())
            }
            Slot::Rows(id) => {
                let rows = self.rows[id].clone();
                Arg::Rows(rows.into_iter().map(|s| self.lend_out(s)).collect())
            }
        }
    }

    fn to_arg(&self, s: Slot) -> Arg {
        match s {
            Slot::Scalar(v) => Arg::Scalar(v),
            Slot::Mem(id) => Arg::Mem(self.mems[id].clone()),
            Slot::View { id, start, len } => Arg::Mem(self.mems[id][start..start + len].to_vec()),
            Slot::Rec(id) => Arg::Record(self.recs[id].iter().map(|(n, s)| (n.clone(), self.to_arg(*s))).collect()),
            Slot::Rows(id) => Arg::Rows(self.rows[id].iter().map(|s| self.to_arg(*s)).collect()),
        }
    }

    /// A copy of memory `s` (the rows of nested memory are copied too).
    fn deep_copy(&mut self, s: Slot) -> Res<Slot> {
        Ok(match s {
            Slot::Mem(id) => {
                let buf = self.mems[id].clone();
                self.charge(buf.len() as u64)?;
                self.mems.push(buf);
                Slot::Mem(self.mems.len() - 1)
            }
            Slot::View { id, start, len } => {
                let buf = self.mems[id][start..start + len].to_vec();
                self.mems.push(buf);
                Slot::Mem(self.mems.len() - 1)
            }
            Slot::Rows(id) => {
                let rows = self.rows[id].clone();
                let copies = rows.into_iter().map(|r| self.deep_copy(r)).collect::<Res<Vec<Slot>>>()?;
                self.rows.push(copies);
                Slot::Rows(self.rows.len() - 1)
            }
            s => return Err(format!("cannot copy {s:?} as a row")),
        })
    }

    /// Whether memory `a` and `b` overlap (the same buffer, or one a row of the other).
    fn same_slot(&self, a: Slot, b: Slot) -> bool {
        match (a, b) {
            (Slot::Rows(x), Slot::Rows(y)) if x == y => true,
            (Slot::Rows(x), s) | (s, Slot::Rows(x)) => self.rows[x].iter().any(|r| self.same_slot(*r, s)),
            (a, b) => same_slot(a, b),
        }
    }

    /// Runs a callee on the caller's buffers (moved in and back, as a borrow would).
    fn call(&mut self, callee: &str, args: &[(Value, bool)], outs: &[Var], tape: bool) -> Res<()> {
        if callee == "::cotan::rt::binomial_split" {
            // The runtime's schedule of checkpointed loops, which generated code calls.
            let mut n = [0usize; 3];
            for (k, (a, _)) in args.iter().enumerate().take(3) {
                n[k] = match self.scalar(*a)? {
                    Val::Int(i, _) => usize::try_from(i).map_err(|e| e.to_string())?,
                    v => return Err(format!("`binomial_split` takes integers, not {v:?}")),
                };
            }
            let m = crate::binomial_split(n[0], n[1], n[2]);
            *self.var(outs[0])? = Some(Val::Int(m as i128, Scalar::Usize));
            return Ok(());
        }
        if self.depth >= MAX_CALL_DEPTH {
            return Err(format!("calls nest deeper than {MAX_CALL_DEPTH} levels"));
        }
        let g = self.callees.function(callee)?;
        if g.tape_param != tape {
            return Err(format!(
                "`{callee}` is called {}with the caller's tape, but it takes {}",
                if tape { "" } else { "without " },
                if g.tape_param { "one" } else { "none" }
            ));
        }
        let slots = args.iter().map(|&(a, _)| self.get(a)).collect::<Res<Vec<Slot>>>()?;
        // The same memory passed twice (`dot(x, x)`, shared borrows): the second gets a copy.
        let first: Vec<Option<usize>> = (0..slots.len())
            .map(|k| match slots[k] {
                Slot::Scalar(_) => None,
                s => (0..k).find(|&j| self.same_slot(slots[j], s)),
            })
            .collect();
        // Copies of the repeated ones (their own part of the buffer), made while every
        // buffer is still here.
        let copies: Vec<Option<Arg>> = (0..slots.len()).map(|k| first[k].map(|_| self.to_arg(slots[k]))).collect();
        let mut call_args: Vec<Arg> = vec![];
        for (k, &s) in slots.iter().enumerate() {
            let arg = match (first[k], &copies[k]) {
                (Some(j), _) if args[k].1 || args[j].1 => {
                    return Err(format!("`{callee}` gets the same memory twice, once as `&mut`"))
                }
                (Some(_), Some(copy)) => copy.clone(),
                _ => self.lend_out(s),
            };
            call_args.push(arg);
        }
        let budget = self.limit.saturating_sub(self.steps);
        let tapes = if tape { std::mem::take(&mut self.tapes) } else { new_tapes() };
        let (result, steps, tapes) = exec_nested(&g, &mut call_args, budget, self.callees, self.depth + 1, tapes);
        if tape {
            self.tapes = tapes;
        }
        for (k, (slot, arg)) in slots.into_iter().zip(call_args.iter_mut()).enumerate() {
            if first[k].is_none() {
                self.take_back(slot, arg);
            }
        }
        self.charge(steps)?;
        let results = result.map_err(|e| format!("in `{callee}`: {e}"))?;
        if results.len() != outs.len() {
            return Err(format!("`{callee}` returns {} values, the call expects {}", results.len(), outs.len()));
        }
        for (&out, r) in outs.iter().zip(results) {
            let Arg::Scalar(v) = r else { return Err(format!("`{callee}` returns memory")) };
            check_val(v, self.f.var(out).ty)?;
            *self.var(out)? = Some(v);
        }
        Ok(())
    }

    fn error(&self, op: &Op, message: String) -> InterpError {
        let line = print_op(self.f, op).lines().next().unwrap_or_default().to_string();
        InterpError { op: Some(line), message }
    }

    fn charge(&mut self, n: u64) -> Res<()> {
        self.steps = self.steps.saturating_add(n);
        if self.steps > self.limit {
            return Err(format!("step limit of {} exceeded", self.limit));
        }
        Ok(())
    }

    fn get(&self, v: Value) -> Res<Slot> {
        match self.values.get(v.0 as usize) {
            Some(Some(s)) => Ok(*s),
            Some(None) => Err(format!("%{} is used before it is computed", v.0)),
            None => Err(format!("%{} is not in the value table", v.0)),
        }
    }

    fn set(&mut self, v: Value, s: Slot) -> Res<()> {
        let slot = self.values.get_mut(v.0 as usize).ok_or(format!("%{} is not in the value table", v.0))?;
        *slot = Some(s);
        Ok(())
    }

    fn scalar(&self, v: Value) -> Res<Val> {
        match self.get(v)? {
            Slot::Scalar(x) => Ok(x),
            Slot::Mem(_) | Slot::View { .. } | Slot::Rec(_) | Slot::Rows(_) => {
                Err(format!("%{} is memory, not a scalar", v.0))
            }
        }
    }

    fn mem(&self, v: Value) -> Res<usize> {
        match self.get(v)? {
            Slot::Mem(id) => Ok(id),
            Slot::Scalar(_) => Err(format!("%{} is a scalar, not memory", v.0)),
            Slot::Rec(_) => Err(format!("%{} is a struct; reach its fields with `field`", v.0)),
            Slot::View { .. } => Err(format!("%{} is part of a buffer, not a whole one", v.0)),
            Slot::Rows(_) => Err(format!("%{} is nested memory; reach its rows with `elem`", v.0)),
        }
    }

    fn bool(&self, v: Value) -> Res<bool> {
        match self.scalar(v)? {
            Val::Bool(b) => Ok(b),
            x => Err(format!("%{} should be a bool, got {x:?}", v.0)),
        }
    }

    fn usize(&self, v: Value) -> Res<usize> {
        match self.scalar(v)? {
            Val::Int(i, Scalar::Usize) => {
                usize::try_from(i).map_err(|_| format!("{i} does not fit in this machine's usize"))
            }
            x => Err(format!("%{} should be a usize, got {x:?}", v.0)),
        }
    }

    fn result_ty(&self, op: &Op) -> Res<Ty> {
        let r = op.result.ok_or("the op has no result")?;
        self.f.values.get(r.0 as usize).map(|d| d.ty).ok_or(format!("%{} is not in the value table", r.0))
    }

    fn result_scalar(&self, op: &Op) -> Res<Scalar> {
        self.result_ty(op)?.scalar().ok_or_else(|| "the result should be a scalar".to_string())
    }

    fn var(&mut self, var: Var) -> Res<&mut Option<Val>> {
        self.vars.get_mut(var.0 as usize).ok_or(format!("${} is not in the var table", var.0))
    }

    /// True when a loop's exit var is set.
    fn exit_set(&mut self, exit: Option<Var>) -> Res<bool> {
        let Some(var) = exit else { return Ok(false) };
        match *self.var(var)? {
            Some(Val::Bool(b)) => Ok(b),
            Some(x) => Err(format!("exit var ${} holds {x:?}, not a bool", var.0)),
            None => Err(format!("exit var ${} is read before it is assigned", var.0)),
        }
    }

    /// The buffer and element a load or store refers to, bounds-checked.
    fn place(&self, mem: Value, index: Option<Value>) -> Res<(usize, usize)> {
        let (id, start, len) = self.range(mem)?;
        let i = index.map_or(Ok(0), |i| self.usize(i))?;
        if i >= len && self.f.ty(mem).mem().is_some_and(|m| m.is_ptr()) {
            // (As Miri says it: the pointer does not reach that far into its buffer.)
            return Err(format!("memory access out of bounds: element {i} through a pointer to {len} element(s)"));
        }
        if i >= len {
            return Err(format!("index out of bounds: the len is {len} but the index is {i}"));
        }
        Ok((id, start + i))
    }

    /// The buffer memory `v` is in, and where in it.
    fn range(&self, v: Value) -> Res<(usize, usize, usize)> {
        match self.get(v)? {
            Slot::View { id, start, len } => Ok((id, start, len)),
            _ => {
                let id = self.mem(v)?;
                Ok((id, 0, self.mems[id].len()))
            }
        }
    }

    fn region(&mut self, r: &Region) -> Result<Flow, InterpError> {
        for op in &r.ops {
            if let Flow::Return(vs) = self.op(op)? {
                return Ok(Flow::Return(vs));
            }
        }
        Ok(Flow::Next)
    }

    fn op(&mut self, op: &Op) -> Result<Flow, InterpError> {
        self.step(op).map_err(|stop| match stop {
            Stop::Here(message) => self.error(op, message),
            Stop::Nested(e) => e,
        })
    }

    fn step(&mut self, op: &Op) -> Result<Flow, Stop> {
        self.charge(1)?;
        match &op.kind {
            OpKind::If { cond, then_region, else_region } => {
                let c = self.bool(*cond)?;
                Ok(self.region(if c { then_region } else { else_region })?)
            }
            OpKind::For { index, lo, hi, step, inclusive, reverse, body, exit } => {
                let (lo, s) = match self.scalar(*lo)? {
                    Val::Int(i, s) => (i, s),
                    x => return Err(format!("the lower bound should be an integer, got {x:?}").into()),
                };
                let int = |m: &Self, v: Value| match m.scalar(v)? {
                    Val::Int(i, t) if t == s => Ok(i),
                    x => Err(format!("%{} should be a {s}, got {x:?}", v.0)),
                };
                let hi = int(self, *hi)?;
                let step = step.map_or(Ok(1), |v| int(self, v))?;
                if step <= 0 {
                    return Err(format!("step_by needs a positive step, got {step}").into());
                }
                // The same indices as `(lo..hi).step_by(step)`, counted so that `rev` is easy.
                let last = if *inclusive { hi } else { hi - 1 };
                let count = if last < lo { 0 } else { (last - lo) / step + 1 };
                for k in 0..count {
                    let k = if *reverse { count - 1 - k } else { k };
                    self.set(*index, Slot::Scalar(Val::Int(lo + k * step, s)))?;
                    if let Flow::Return(vs) = self.region(body)? {
                        return Ok(Flow::Return(vs));
                    }
                    self.charge(1)?;
                    if self.exit_set(*exit)? {
                        break;
                    }
                }
                Ok(Flow::Next)
            }
            OpKind::While { cond_region, cond, body, exit } => loop {
                if let Flow::Return(vs) = self.region(cond_region)? {
                    return Ok(Flow::Return(vs));
                }
                if !self.bool(*cond)? {
                    return Ok(Flow::Next);
                }
                if let Flow::Return(vs) = self.region(body)? {
                    return Ok(Flow::Return(vs));
                }
                self.charge(1)?;
                if self.exit_set(*exit)? {
                    return Ok(Flow::Next);
                }
            },
            OpKind::Return(vs) => {
                let slots = vs.iter().map(|&v| self.get(v)).collect::<Res<Vec<_>>>()?;
                Ok(Flow::Return(slots))
            }
            _ => {
                let slot = self.simple(op)?;
                if let (Some(r), Some(slot)) = (op.result, slot) {
                    self.set(r, slot)?;
                }
                Ok(Flow::Next)
            }
        }
    }

    /// An op without regions; returns its result.
    fn simple(&mut self, op: &Op) -> Res<Option<Slot>> {
        use OpKind::*;
        let val = match &op.kind {
            Const(c) => const_val(*c, self.result_scalar(op)?)?,
            Unary(u, a) => unary(*u, self.scalar(*a)?)?,
            Binary(b, x, y) => binary(*b, self.scalar(*x)?, self.scalar(*y)?)?,
            Cmp(c, x, y) => Val::Bool(compare(*c, self.scalar(*x)?, self.scalar(*y)?)?),
            Cast(a) => cast(self.scalar(*a)?, self.result_scalar(op)?)?,
            Math(m, args) => {
                let args = args.iter().map(|&a| self.scalar(a)).collect::<Res<Vec<_>>>()?;
                math(*m, &args)?
            }
            Select(c, a, b) => return Ok(Some(self.get(if self.bool(*c)? { *a } else { *b })?)),
            Load { mem, index } => {
                let (id, i) = self.place(*mem, *index)?;
                self.mems[id][i]
            }
            Store { mem, index, value } => {
                let (id, i) = self.place(*mem, *index)?;
                let v = self.scalar(*value)?;
                let elem = self.f.ty(*mem).mem().map(|m| m.elem);
                if elem != Some(v.scalar()) {
                    return Err(format!("stores {v:?} into memory of {}", print_ty(self.f.ty(*mem))));
                }
                self.mems[id][i] = v;
                return Ok(None);
            }
            VariantField { variant, .. } => {
                return Err(format!(
                    "the interpreter cannot read the fields of enum variants (`{variant}`); run the compiled code"
                ))
            }
            Matches { pattern, .. } => {
                return Err(format!("the interpreter cannot match enum variants (`{pattern}`); run the compiled code"))
            }
            Field { base, name } => {
                let Slot::Rec(id) = self.get(*base)? else { return Err(format!("%{} is not a struct", base.0)) };
                let slot = self.recs[id].iter().find(|(n, _)| n == name).map(|(_, s)| *s);
                let slot = slot.ok_or_else(|| format!("the struct has no field `{name}`"))?;
                if let (Slot::Mem(m), Some(t)) = (slot, self.result_ty(op)?.mem()) {
                    // Numbers given without their type (from JSON) take the field's.
                    for v in self.mems[m].iter_mut() {
                        *v = match (*v, t.elem) {
                            (Val::Int(i, _), Scalar::F64) => Val::F64(i as f64),
                            (Val::Int(i, _), Scalar::F32) => Val::F32(i as f32),
                            (Val::F64(x), s) if s.is_int() && x.fract() == 0.0 => Val::Int(x as i128, s),
                            (Val::Int(i, _), s) if s.is_int() => Val::Int(i, s),
                            (v, _) => v,
                        };
                        check_val(*v, t.elem).map_err(|e| format!("field `{name}`: {e}"))?;
                    }
                    if t.kind == MemKind::Cell && self.mems[m].len() != 1 {
                        return Err(format!("field `{name}` should be a single number"));
                    }
                }
                return Ok(Some(slot));
            }
            Len(a) => match self.get(*a)? {
                Slot::Rows(id) => Val::Int(self.rows[id].len() as i128, Scalar::Usize),
                _ => Val::Int(self.range(*a)?.2 as i128, Scalar::Usize),
            },
            Elem { base, index } => {
                let Slot::Rows(id) = self.get(*base)? else {
                    return Err(format!("%{} is not nested memory", base.0));
                };
                let i = self.usize(*index)?;
                let n = self.rows[id].len();
                if i >= n {
                    return Err(format!("index out of bounds: the len is {n} but the index is {i}"));
                }
                return Ok(Some(self.rows[id][i]));
            }
            Slice { base, start, end } => {
                let (id, s0, l0) = self.range(*base)?;
                let (s, e) = (self.usize(*start)?, self.usize(*end)?);
                if s > e {
                    return Err(format!("slice index starts at {s} but ends at {e}"));
                }
                if e > l0 {
                    return Err(format!("range end index {e} out of range for slice of length {l0}"));
                }
                return Ok(Some(Slot::View { id, start: s0 + s, len: e - s }));
            }
            Alloc { len, init } if self.result_ty(op)?.mem().is_some_and(|m| m.kind.row().is_some()) => {
                // Nested memory: `n` copies of the row.
                let n = self.usize(*len)?;
                if let Some(MemKind::Nested(crate::Dim::Array(k), ..)) = self.result_ty(op)?.mem().map(|m| m.kind) {
                    if k != n as u64 {
                        return Err(format!("allocates {n} rows for an array of {k}"));
                    }
                }
                let row = self.get(*init)?;
                let rows = (0..n).map(|_| self.deep_copy(row)).collect::<Res<Vec<Slot>>>()?;
                self.rows.push(rows);
                return Ok(Some(Slot::Rows(self.rows.len() - 1)));
            }
            Offset { base, offset } => {
                let (id, s0, l0) = self.range(*base)?;
                let k = match self.scalar(*offset)? {
                    Val::Int(k, Scalar::Usize | Scalar::Isize) => k,
                    x => return Err(format!("%{} should be a usize or an isize, got {x:?}", offset.0)),
                };
                let t = self.result_ty(op)?.mem().ok_or("an offset is memory")?;
                // The part of its buffer the base reaches: `s0..s0 + l0`.
                let (start, end) = (s0 as i128 + k, (s0 + l0) as i128);
                if start < 0 || start > end {
                    return Err(format!(
                        "out-of-bounds pointer arithmetic: offset {k} from a pointer to {l0} element(s)"
                    ));
                }
                let rest = (end - start) as usize;
                let len = match t.kind {
                    MemKind::Cell => 1,
                    MemKind::Array(n) => n as usize,
                    _ => rest,
                };
                if len > rest {
                    return Err(format!(
                        "memory access out of bounds: {len} element(s) at offset {k} of a pointer to {l0} element(s)"
                    ));
                }
                return Ok(Some(Slot::View { id, start: start as usize, len }));
            }
            Alloc { len, init } => {
                let n = self.usize(*len)?;
                let init = self.scalar(*init)?;
                let ty = self.result_ty(op)?;
                match ty.mem().map(|m| m.kind) {
                    Some(MemKind::Array(k)) if k != n as u64 => {
                        return Err(format!("allocates {n} elements for a {}", print_ty(ty)))
                    }
                    Some(_) => {}
                    None => return Err(format!("allocates a {}, which is not memory", print_ty(ty))),
                }
                self.charge(n as u64)?;
                self.mems.push(vec![init; n]);
                return Ok(Some(Slot::Mem(self.mems.len() - 1)));
            }
            Fill { mem, value, resize } => {
                let v = self.scalar(*value)?;
                if let Some([len, _]) = resize {
                    let n = self.usize(*len)?;
                    self.charge(n as u64)?;
                    let id = self.mem(*mem)?;
                    self.mems[id].resize(n, v);
                    return Ok(None);
                }
                let (id, start, len) = self.range(*mem)?;
                self.charge(len as u64)?;
                self.mems[id][start..start + len].fill(v);
                return Ok(None);
            }
            Call { callee, args, outs, tape } => return self.call(callee, args, outs, *tape).map(|()| None),
            VecPush { mem, value } => {
                let id = self.mem(*mem)?;
                let v = self.scalar(*value)?;
                self.mems[id].push(v);
                Val::Int(self.mems[id].len() as i128 - 1, Scalar::Usize)
            }
            DeclVar { var, init: v } | SetVar(var, v) => {
                let v = self.scalar(*v)?;
                *self.var(*var)? = Some(v);
                return Ok(None);
            }
            GetVar(var) => self.var(*var)?.ok_or(format!("${} is read before it is assigned", var.0))?,
            Assert { cond, message } => {
                if !self.bool(*cond)? {
                    return Err(format!("assertion failed: {message}"));
                }
                return Ok(None);
            }
            // Output is not part of what the interpreter checks.
            Print { .. } => return Ok(None),
            Push(v) => {
                let v = self.scalar(*v)?;
                self.tapes[tape_index(v.scalar())].push(v);
                return Ok(None);
            }
            ZeroRecord(v) => {
                let slot = self.get(*v)?;
                let mut copy = zeroed(self.to_arg(slot));
                return Ok(Some(self.lend_in(&mut copy)));
            }
            AllocRecords { len, fields } => {
                let n = self.usize(*len)?;
                self.charge(n as u64)?;
                let zero = |s: Scalar| match s {
                    Scalar::F64 => Val::F64(0.0),
                    Scalar::F32 => Val::F32(0.0),
                    Scalar::Bool => Val::Bool(false),
                    s => Val::Int(0, s),
                };
                let element = Arg::Record(
                    fields
                        .iter()
                        .map(|(name, f)| {
                            let buf = match *f {
                                crate::ZeroField::Number(s) => vec![zero(s)],
                                crate::ZeroField::Array(s, k) => vec![zero(s); k as usize],
                            };
                            (name.clone(), Arg::Mem(buf))
                        })
                        .collect(),
                );
                let mut rows = Arg::Rows(vec![element; n]);
                return Ok(Some(self.lend_in(&mut rows)));
            }
            CopyRecords { src, zeroed: z, .. } => {
                let slot = self.get(*src)?;
                let arg = self.to_arg(slot);
                let mut copy = if *z { zeroed(arg) } else { arg };
                return Ok(Some(self.lend_in(&mut copy)));
            }
            Pop => {
                let s = self.result_scalar(op)?;
                self.tapes[tape_index(s)].pop().ok_or(format!("pop from the empty {s} tape"))?
            }
            If { .. } | For { .. } | While { .. } | Return(_) => {
                unreachable!("handled by Machine::op")
            }
        };
        Ok(Some(Slot::Scalar(val)))
    }
}

/// An argument with its floats set to zero.
fn zeroed(a: Arg) -> Arg {
    let zero = |v: Val| match v {
        Val::F64(_) => Val::F64(0.0),
        Val::F32(_) => Val::F32(0.0),
        v => v,
    };
    match a {
        Arg::Scalar(v) => Arg::Scalar(zero(v)),
        Arg::Mem(m) => Arg::Mem(m.into_iter().map(zero).collect()),
        Arg::Record(fields) => Arg::Record(fields.into_iter().map(|(n, f)| (n, zeroed(f))).collect()),
        Arg::Rows(rs) => Arg::Rows(rs.into_iter().map(zeroed).collect()),
    }
}

fn same_slot(a: Slot, b: Slot) -> bool {
    match (a, b) {
        (Slot::Mem(x), Slot::Mem(y)) | (Slot::Rec(x), Slot::Rec(y)) => x == y,
        (Slot::Mem(x), Slot::View { id, .. }) | (Slot::View { id, .. }, Slot::Mem(x)) => x == id,
        (Slot::View { id: x, start: a, len: n }, Slot::View { id: y, start: b, len: m }) => {
            x == y && a < b + m && b < a + n
        }
        _ => false,
    }
}

fn const_val(c: Const, s: Scalar) -> Res<Val> {
    match (c, s) {
        (Const::Float(x), Scalar::F64) => Ok(Val::F64(x)),
        (Const::Float(x), Scalar::F32) => Ok(Val::F32(x as f32)),
        (Const::Int(i), s) if s.is_int() => checked(Some(i), s, "write a literal"),
        (Const::Bool(b), Scalar::Bool) => Ok(Val::Bool(b)),
        _ => Err(format!("a literal {c:?} cannot be a {s}")),
    }
}

fn mismatch(what: &str, x: Val, y: Val) -> String {
    format!("cannot {what} {x:?} and {y:?}")
}

fn unary(u: UnOp, a: Val) -> Res<Val> {
    match (u, a) {
        (UnOp::Neg, Val::F32(x)) => Ok(Val::F32(-x)),
        (UnOp::Neg, Val::F64(x)) => Ok(Val::F64(-x)),
        (UnOp::Neg, Val::Int(i, s)) if s.is_signed() => checked(Some(-i), s, "negate"),
        (UnOp::Not, Val::Bool(b)) => Ok(Val::Bool(!b)),
        (UnOp::Not, Val::Int(i, s)) => Ok(Val::Int(wrap(!i, s), s)),
        _ => Err(format!("cannot apply `{}` to {a:?}", unop_name(u))),
    }
}

fn float_binary<T>(b: BinOp, x: T, y: T) -> Res<T>
where
    T: std::ops::Add<Output = T> + std::ops::Sub<Output = T> + std::ops::Mul<Output = T>,
    T: std::ops::Div<Output = T> + std::ops::Rem<Output = T>,
{
    match b {
        BinOp::Add => Ok(x + y),
        BinOp::Sub => Ok(x - y),
        BinOp::Mul => Ok(x * y),
        BinOp::Div => Ok(x / y),
        BinOp::Rem => Ok(x % y),
        _ => Err(format!("cannot apply `{}` to floats", binop_name(b))),
    }
}

fn binary(b: BinOp, x: Val, y: Val) -> Res<Val> {
    match (x, y) {
        (Val::F64(p), Val::F64(q)) => float_binary(b, p, q).map(Val::F64),
        (Val::F32(p), Val::F32(q)) => float_binary(b, p, q).map(Val::F32),
        (Val::Int(p, s), Val::Int(q, t)) if s == t || matches!(b, BinOp::Shl | BinOp::Shr) => int_binary(b, p, q, s),
        (Val::Bool(p), Val::Bool(q)) => match b {
            BinOp::BitAnd => Ok(Val::Bool(p & q)),
            BinOp::BitOr => Ok(Val::Bool(p | q)),
            BinOp::BitXor => Ok(Val::Bool(p ^ q)),
            _ => Err(format!("cannot apply `{}` to bools", binop_name(b))),
        },
        _ => Err(mismatch(binop_name(b), x, y)),
    }
}

/// Integer arithmetic in `s`, checked like Rust's debug builds.
fn int_binary(b: BinOp, x: i128, y: i128, s: Scalar) -> Res<Val> {
    match b {
        BinOp::Add => checked(x.checked_add(y), s, "add"),
        BinOp::Sub => checked(x.checked_sub(y), s, "subtract"),
        BinOp::Mul => checked(x.checked_mul(y), s, "multiply"),
        BinOp::Div if y == 0 => Err("attempt to divide by zero".into()),
        BinOp::Div => checked(x.checked_div(y), s, "divide"),
        BinOp::Rem if y == 0 => Err("attempt to calculate the remainder with a divisor of zero".into()),
        // MIN % -1 fits in i128 but overflows in Rust.
        BinOp::Rem if y == -1 && x == int_range(s).0 && s.is_signed() => {
            Err(format!("attempt to calculate the remainder with overflow ({s})"))
        }
        BinOp::Rem => checked(x.checked_rem(y), s, "calculate the remainder"),
        BinOp::BitAnd => Ok(Val::Int(x & y, s)),
        BinOp::BitOr => Ok(Val::Int(x | y, s)),
        BinOp::BitXor => Ok(Val::Int(x ^ y, s)),
        BinOp::Shl | BinOp::Shr => {
            if !(0..i128::from(s.int_bits())).contains(&y) {
                let dir = if b == BinOp::Shl { "left" } else { "right" };
                return Err(format!("attempt to shift {dir} with overflow ({s} by {y})"));
            }
            // Bits shifted out are dropped, as in Rust; `>>` on i128 is arithmetic for signed values.
            let v = if b == BinOp::Shl { wrap(x << y, s) } else { x >> y };
            Ok(Val::Int(v, s))
        }
    }
}

fn compare(c: CmpOp, x: Val, y: Val) -> Res<bool> {
    let ord = match (x, y) {
        (Val::F64(p), Val::F64(q)) => p.partial_cmp(&q),
        (Val::F32(p), Val::F32(q)) => p.partial_cmp(&q),
        (Val::Int(p, s), Val::Int(q, t)) if s == t => Some(p.cmp(&q)),
        (Val::Bool(p), Val::Bool(q)) => Some(p.cmp(&q)),
        _ => return Err(mismatch("compare", x, y)),
    };
    // `None` (a NaN) makes every comparison but `!=` false.
    Ok(match c {
        CmpOp::Eq => ord == Some(Ordering::Equal),
        CmpOp::Ne => ord != Some(Ordering::Equal),
        CmpOp::Lt => ord == Some(Ordering::Less),
        CmpOp::Le => matches!(ord, Some(Ordering::Less | Ordering::Equal)),
        CmpOp::Gt => ord == Some(Ordering::Greater),
        CmpOp::Ge => matches!(ord, Some(Ordering::Greater | Ordering::Equal)),
    })
}

/// `v as to`.
fn cast(v: Val, to: Scalar) -> Res<Val> {
    // Float to int saturates and maps NaN to 0; `as i128` then a clamp does exactly that.
    let float_to_int = |x: f64| {
        let (lo, hi) = int_range(to);
        if x.is_nan() {
            0
        } else {
            (x as i128).clamp(lo, hi)
        }
    };
    Ok(match (v, to) {
        (Val::Bool(b), Scalar::Bool) => Val::Bool(b),
        (Val::Bool(b), s) if s.is_int() => Val::Int(i128::from(b), s),
        (_, Scalar::Bool) | (Val::Bool(_), _) => return Err(format!("cannot cast {v:?} to {to}")),
        (Val::F64(x), Scalar::F64) => Val::F64(x),
        (Val::F64(x), Scalar::F32) => Val::F32(x as f32),
        (Val::F32(x), Scalar::F64) => Val::F64(f64::from(x)),
        (Val::F32(x), Scalar::F32) => Val::F32(x),
        (Val::F64(x), s) => Val::Int(float_to_int(x), s),
        (Val::F32(x), s) => Val::Int(float_to_int(f64::from(x)), s),
        (Val::Int(i, _), Scalar::F64) => Val::F64(i as f64),
        (Val::Int(i, _), Scalar::F32) => Val::F32(i as f32),
        (Val::Int(i, _), s) => Val::Int(wrap(i, s), s),
    })
}

fn math(m: MathFn, args: &[Val]) -> Res<Val> {
    if args.len() != m.arity() {
        return Err(format!("{} takes {} arguments, got {}", m.name(), m.arity(), args.len()));
    }
    // powi's exponent is an i32; every other argument has the receiver's type.
    let (floats, n) = if m == MathFn::Powi {
        match args[1] {
            Val::Int(n, Scalar::I32) => (&args[..1], n as i32),
            x => return Err(format!("powi's exponent should be an i32, got {x:?}")),
        }
    } else {
        (args, 0)
    };
    let wrong = |x: &Val| format!("{}: mixed argument types {:?} and {x:?}", m.name(), args[0]);
    match args[0] {
        Val::F64(_) => {
            let a = floats
                .iter()
                .map(|x| if let Val::F64(v) = x { Ok(*v) } else { Err(wrong(x)) })
                .collect::<Res<Vec<_>>>()?;
            math_f64(m, &a, n).map(Val::F64)
        }
        Val::F32(_) => {
            let a = floats
                .iter()
                .map(|x| if let Val::F32(v) = x { Ok(*v) } else { Err(wrong(x)) })
                .collect::<Res<Vec<_>>>()?;
            math_f32(m, &a, n).map(Val::F32)
        }
        x => Err(format!("{} needs a float receiver, got {x:?}", m.name())),
    }
}

/// The float methods of std, for one float type. `a` holds the float arguments, `n` powi's exponent.
macro_rules! math_for {
    ($fn_name:ident, $t:ty) => {
        fn $fn_name(m: MathFn, a: &[$t], n: i32) -> Res<$t> {
            use MathFn::*;
            let x = a[0];
            Ok(match m {
                Abs => x.abs(),
                Sqrt => x.sqrt(),
                Cbrt => x.cbrt(),
                Exp => x.exp(),
                Exp2 => x.exp2(),
                ExpM1 => x.exp_m1(),
                Ln => x.ln(),
                Log => x.log(a[1]),
                Log2 => x.log2(),
                Log10 => x.log10(),
                Ln1p => x.ln_1p(),
                Powi => x.powi(n),
                Powf => x.powf(a[1]),
                Sin => x.sin(),
                Cos => x.cos(),
                Tan => x.tan(),
                Asin => x.asin(),
                Acos => x.acos(),
                Atan => x.atan(),
                Atan2 => x.atan2(a[1]),
                Sinh => x.sinh(),
                Cosh => x.cosh(),
                Tanh => x.tanh(),
                Asinh => x.asinh(),
                Acosh => x.acosh(),
                Atanh => x.atanh(),
                Hypot => x.hypot(a[1]),
                Recip => x.recip(),
                MulAdd => x.mul_add(a[1], a[2]),
                Max => x.max(a[1]),
                Min => x.min(a[1]),
                Clamp => {
                    let (lo, hi) = (a[1], a[2]);
                    // std's clamp panics on these.
                    if lo.is_nan() || hi.is_nan() || lo > hi {
                        return Err(format!("clamp needs min <= max, got min {lo:?} and max {hi:?}"));
                    }
                    x.clamp(lo, hi)
                }
                Signum => x.signum(),
                Floor => x.floor(),
                Ceil => x.ceil(),
                Round => x.round(),
                Trunc => x.trunc(),
            })
        }
    };
}

math_for!(math_f64, f64);
math_for!(math_f32, f32);
