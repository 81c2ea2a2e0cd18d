//! The gradient check: reverse mode, forward mode and central finite differences of one
//! function, all run by the IR interpreter, with every float argument active (the
//! all-active callable variant, exactly as the macros generate it).
//!
//! The checked quantity is J = w0 * result + sum_k w_k * out_k over the float result and
//! the final contents of `&mut` float memory, with fixed weights, so one reverse sweep
//! gives the whole gradient.

use cotan_expand::tools::{all_active, derivation, primal, second_order, Derivation};
use cotan_expand::Mode;
use cotan_ir::{Access, Arg, Function, MemKind, Ty, Val};

use crate::inputs;
use crate::source::Source;
use crate::CliError;

/// Steps (ops) an interpreter run may take: a reduction step that makes a loop endless fails.
pub const STEP_LIMIT: u64 = 2_000_000;
/// A derivative may take many times the primal's steps (reverse mode re-runs calls).
const DERIVATIVE_STEP_LIMIT: u64 = 20 * STEP_LIMIT;
const FD_RTOL: f64 = 1e-6;
const FD_ATOL: f64 = 1e-6;
const AD_RTOL: f64 = 1e-9;
const AD_ATOL: f64 = 1e-9;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A derivative that disagrees with another method.
    Wrong,
    /// A NaN or infinite derivative where finite differences are finite.
    NonFinite,
    /// The engine rejects the function, or a derivative fails when run.
    Error,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Wrong => "wrong value",
            Kind::NonFinite => "NaN or infinity",
            Kind::Error => "error",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Failure {
    pub kind: Kind,
    /// The parameter it concerns (`-` when none).
    pub arg: String,
    /// Which method is wrong: `reverse`, `forward`, both, or neither against finite
    /// differences (`reverse vs forward`), `dot-product test`, or a stage for errors.
    pub how: &'static str,
    pub detail: String,
}

/// What must stay the same while a failing program is minimized.
pub type Signature = (Kind, String, &'static str);

impl Failure {
    pub fn signature(&self) -> Signature {
        (self.kind, self.arg.clone(), self.how)
    }
}

/// The worst disagreement for one parameter.
#[derive(Clone, Debug, Default)]
pub struct Row {
    pub arg: String,
    pub abs_err: f64,
    pub rel_err: f64,
}

pub struct Report {
    pub rows: Vec<Row>,
    pub failures: Vec<Failure>,
    /// Where the first failure happened (or the last point checked), as `--at` JSON.
    pub point: String,
    pub points: usize,
}

impl Report {
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

/// The function and its all-active derivatives, ready to run with what they call.
pub struct Prepared {
    primal_run: Derivation,
    pub primal: Function,
    /// Forward mode (absent where a custom derivative has only a reverse rule) and reverse mode.
    derivs: Result<(Option<Derivation>, Derivation), String>,
    /// Forward over reverse mode (second order), where forward mode exists.
    hvp: Option<Result<Derivation, String>>,
    names: Vec<(String, Ty)>,
}

/// Lowers `name` (an error here is bad input: exit 2) and differentiates it, with every
/// float argument active, exactly as the macros would (an error here is a finding).
pub fn prepare(src: &Source, name: &str) -> Result<Prepared, CliError> {
    let item = src.function(name)?;
    let primal_run = primal(&src.set, &item).map_err(|e| CliError::lowering(name, &e))?;
    let primal = primal_run.function.clone();
    let derive = |mode: Mode| {
        let spec = all_active(&primal, mode);
        let which = if mode == Mode::Forward { "forward" } else { "reverse" };
        derivation(&src.set, &item, &spec, &format!("d_{name}")).map_err(|e| format!("{which} mode: {e}"))
    };
    // A custom derivative with only a reverse rule makes forward mode unavailable (as it is
    // for compiled callers): then reverse mode is checked against differences alone.
    let fwd = match derive(Mode::Forward) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.contains("custom derivative without a forward rule") => Ok(None),
        Err(e) => Err(e),
    };
    let derivs = fwd.and_then(|f| Ok((f, derive(Mode::Reverse)?)));
    let hvp = matches!(derivs, Ok((Some(_), _)))
        .then(|| second_order(&src.set, &item, &format!("hvp_{name}")).map_err(|e| format!("second order: {e}")));
    let names = inputs::params(&primal);
    Ok(Prepared { primal_run, primal, derivs, hvp, names })
}

/// Where a float input lives: parameter `param`, then fields `path` of a struct, then
/// element `elem` (0 for a number).
#[derive(Clone)]
struct Slot {
    param: usize,
    path: Vec<usize>,
    elem: usize,
}

/// The argument a slot's path leads to.
fn leaf<'a>(a: &'a Arg, path: &[usize]) -> Option<&'a Arg> {
    match (a, path.split_first()) {
        (_, None) => Some(a),
        (Arg::Record(fields), Some((k, rest))) => leaf(&fields.get(*k)?.1, rest),
        _ => None,
    }
}

fn leaf_mut<'a>(a: &'a mut Arg, path: &[usize]) -> Option<&'a mut Arg> {
    match (a, path.split_first()) {
        (a, None) => Some(a),
        (Arg::Record(fields), Some((k, rest))) => leaf_mut(&mut fields.get_mut(*k)?.1, rest),
        _ => None,
    }
}

fn get(args: &[Arg], s: &Slot) -> f64 {
    match leaf(&args[s.param], &s.path) {
        Some(Arg::Scalar(v)) => v.as_f64().unwrap_or(0.0),
        Some(Arg::Mem(m)) => m.get(s.elem).and_then(|v| v.as_f64()).unwrap_or(f64::NAN),
        _ => f64::NAN,
    }
}

fn set(args: &mut [Arg], s: &Slot, x: f64) {
    let cell = match leaf_mut(&mut args[s.param], &s.path) {
        Some(Arg::Scalar(v)) => v,
        Some(Arg::Mem(m)) if s.elem < m.len() => &mut m[s.elem],
        _ => return,
    };
    *cell = float_like(cell, x);
}

/// The float slots inside an argument (recursing into structs).
fn float_slots(a: &Arg, param: usize, path: &mut Vec<usize>, out: &mut Vec<Slot>) {
    match a {
        Arg::Scalar(v) if v.as_f64().is_some() => out.push(Slot { param, path: path.clone(), elem: 0 }),
        Arg::Mem(m) => {
            for (e, v) in m.iter().enumerate() {
                if v.as_f64().is_some() {
                    out.push(Slot { param, path: path.clone(), elem: e });
                }
            }
        }
        Arg::Record(fields) => {
            for (k, (_, f)) in fields.iter().enumerate() {
                path.push(k);
                float_slots(f, param, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

/// A copy of `a` with every float replaced by `value(k)`, k counting the floats.
fn floats_replaced(a: &Arg, value: &mut dyn FnMut() -> f64) -> Arg {
    match a {
        Arg::Scalar(v) if v.as_f64().is_some() => Arg::Scalar(float_like(v, value())),
        Arg::Mem(m) => {
            Arg::Mem(m.iter().map(|x| if x.as_f64().is_some() { float_like(x, value()) } else { *x }).collect())
        }
        Arg::Record(fields) => {
            Arg::Record(fields.iter().map(|(n, f)| (n.clone(), floats_replaced(f, value))).collect())
        }
        other => other.clone(),
    }
}

/// The floats of an argument, in order.
fn floats_of(a: &Arg) -> Vec<f64> {
    let mut out = vec![];
    let mut slots = vec![];
    float_slots(a, 0, &mut vec![], &mut slots);
    for s in &slots {
        out.push(get(std::slice::from_ref(a), s));
    }
    out
}

/// `p.w[2]`: a slot as the report names it.
fn slot_name(args: &[Arg], s: &Slot, param_name: &str) -> String {
    let mut name = param_name.to_string();
    let mut a = &args[s.param];
    for &k in &s.path {
        if let Arg::Record(fields) = a {
            name = format!("{name}.{}", fields[k].0);
            a = &fields[k].1;
        }
    }
    if matches!(a, Arg::Mem(_)) {
        name = format!("{name}[{}]", s.elem);
    }
    name
}

fn float_like(v: &Val, x: f64) -> Val {
    match v {
        Val::F32(_) => Val::F32(x as f32),
        _ => Val::F64(x),
    }
}

/// A fixed weight per output, so runs are reproducible.
fn weight(k: usize) -> f64 {
    0.5 + ((k as f64 + 1.0) * 0.618_033_988_749_895).fract()
}

/// What a primal run gives: J, or why it failed.
enum Primal {
    Value(f64),
    Failed(String),
}

impl Prepared {
    fn slots(&self, args: &[Arg]) -> Vec<Slot> {
        let mut out = vec![];
        for (k, a) in args.iter().enumerate() {
            match (self.names[k].1, a) {
                (Ty::Scalar(s), _) if s.is_float() => out.push(Slot { param: k, path: vec![], elem: 0 }),
                (Ty::Mem(m), _) if m.elem.is_float() => float_slots(a, k, &mut vec![], &mut out),
                _ => {}
            }
        }
        out
    }

    fn ret_is_float(&self) -> bool {
        self.primal.returns.first().is_some_and(|t| t.is_float())
    }

    fn mut_float_mem(&self, k: usize) -> bool {
        self.names[k].1.mem().is_some_and(|m| m.elem.is_float() && m.access == Access::Mut)
    }

    /// J from a run's results and final arguments.
    fn objective(&self, outs: &[Arg], args: &[Arg]) -> f64 {
        let mut j = 0.0;
        if self.ret_is_float() {
            if let Some(Arg::Scalar(v)) = outs.first() {
                j += weight(0) * v.as_f64().unwrap_or(f64::NAN);
            }
        }
        let mut w = 1;
        for (k, a) in args.iter().enumerate() {
            if self.mut_float_mem(k) {
                for x in floats_of(a) {
                    j += weight(w) * x;
                    w += 1;
                }
            }
        }
        j
    }

    fn primal(&self, args: &[Arg]) -> Primal {
        let mut a = args.to_vec();
        match cotan_ir::exec_with(&self.primal, &mut a, STEP_LIMIT, &self.primal_run) {
            Ok(outs) => Primal::Value(self.objective(&outs, &a)),
            Err(e) => Primal::Failed(e.to_string()),
        }
    }

    /// Checks at one point. `Err` if the primal itself fails or is not finite there.
    fn check_at(&self, args: &[Arg], rows: &mut [Row]) -> Result<Vec<Failure>, String> {
        let j0 = match self.primal(args) {
            Primal::Value(j) if j.is_finite() => j,
            Primal::Value(j) => return Err(format!("the function's result is {j} there")),
            Primal::Failed(e) => return Err(e),
        };
        let (fwd, rev) = match &self.derivs {
            Ok(d) => d,
            Err(e) => {
                return Ok(vec![Failure {
                    kind: Kind::Error,
                    arg: "-".into(),
                    how: "differentiation",
                    detail: e.clone(),
                }])
            }
        };
        let slots = self.slots(args);
        let mut failures = vec![];
        let grad = match self.reverse(rev, args, &slots) {
            Ok(g) => g,
            Err(e) => {
                return Ok(vec![Failure {
                    kind: Kind::Error,
                    arg: "-".into(),
                    how: "reverse",
                    detail: format!("reverse: {e}"),
                }])
            }
        };
        let mut tangents = vec![];
        let forward_available = fwd.is_some();
        if !forward_available {
            tangents = grad.clone();
        }
        for k in 0..slots.len() {
            let Some(fwd) = fwd else { break };
            let mut dir = vec![0.0; slots.len()];
            dir[k] = 1.0;
            match self.forward(fwd, args, &slots, &dir) {
                Ok(t) => tangents.push(t),
                Err(e) => {
                    return Ok(vec![Failure {
                        kind: Kind::Error,
                        arg: "-".into(),
                        how: "forward",
                        detail: format!("forward: {e}"),
                    }])
                }
            }
        }
        // Per parameter: which methods disagree, and the first disagreement seen.
        let mut per_arg: Vec<(String, Kind, bool, bool, String)> = vec![];
        for (k, s) in slots.iter().enumerate() {
            let name = &self.names[s.param].0;
            let fd = self.finite_difference(args, s, grad[k]);
            // Rounding in finite differences grows with |J|.
            let fd_atol = FD_ATOL + 1e-9 * j0.abs();
            let (g, t) = (grad[k], tangents[k]);
            let what = slot_name(args, s, name);
            let mut note = |kind: Kind, rev: bool, fwd: bool, detail: String| match per_arg
                .iter_mut()
                .find(|p| p.0 == *name && p.1 == kind)
            {
                Some(p) => {
                    p.2 |= rev;
                    p.3 |= fwd;
                }
                None => per_arg.push((name.clone(), kind, rev, fwd, detail)),
            };
            // Both modes agreeing against differences that do not converge (a chaotic or
            // badly scaled function) is no finding.
            let modes_agree = g.is_finite() && t.is_finite() && close(g, t, AD_RTOL, AD_ATOL);
            if let Some((fd, converged)) = fd.filter(|(_, c)| *c || !modes_agree) {
                let _ = converged;
                for (label, ad, rev) in [("reverse", g, true), ("forward", t, false)] {
                    if !rev && !forward_available {
                        continue;
                    }
                    if !ad.is_finite() {
                        note(
                            Kind::NonFinite,
                            rev,
                            !rev,
                            format!("{label} gives {ad} for {what}, finite differences {fd}"),
                        );
                    } else if !close(ad, fd, FD_RTOL, fd_atol) {
                        note(Kind::Wrong, rev, !rev, format!("{label} gives {ad} for {what}, finite differences {fd}"));
                    }
                }
                record(rows, name, g, fd);
                record(rows, name, t, fd);
            }
            if g.is_finite() && t.is_finite() && !close(g, t, AD_RTOL, AD_ATOL) {
                note(Kind::Wrong, false, false, format!("reverse gives {g} for {what}, forward {t}"));
            }
        }
        for (arg, kind, rev, fwd, detail) in per_arg {
            let how = match (rev, fwd) {
                (true, true) => "reverse and forward",
                (true, false) => "reverse",
                (false, true) => "forward",
                (false, false) => "reverse vs forward",
            };
            failures.push(Failure { kind, arg, how, detail });
        }
        // The dot-product test: <grad, v> = J'(x) v for a fixed direction v.
        if let (false, true, Some(fwd)) = (slots.is_empty(), failures.is_empty(), fwd) {
            let v: Vec<f64> = (0..slots.len()).map(|k| weight(k + 7) - 1.0).collect();
            match self.forward(fwd, args, &slots, &v) {
                Ok(jv) => {
                    let gv: f64 = grad.iter().zip(&v).map(|(g, v)| g * v).sum();
                    if !close(gv, jv, 1e-8, 1e-8) {
                        failures.push(Failure {
                            kind: Kind::Wrong,
                            arg: "-".into(),
                            how: "dot-product test",
                            detail: format!("dot-product test: <grad, v> = {gv} but forward gives {jv}"),
                        });
                    }
                }
                Err(e) => failures.push(Failure {
                    kind: Kind::Error,
                    arg: "-".into(),
                    how: "forward",
                    detail: format!("forward: {e}"),
                }),
            }
        }
        if let (true, false, Some(hvp)) = (failures.is_empty(), slots.is_empty(), &self.hvp) {
            failures.extend(self.check_second_order(hvp, rev, args, &slots));
        }
        Ok(failures)
    }

    /// Forward over reverse mode along a fixed direction against central differences of the
    /// reverse-mode gradient.
    fn check_second_order(
        &self,
        hvp: &Result<Derivation, String>,
        rev: &Derivation,
        args: &[Arg],
        slots: &[Slot],
    ) -> Option<Failure> {
        let fail = |kind, detail: String| Some(Failure { kind, arg: "-".into(), how: "second order", detail });
        let hvp = match hvp {
            Ok(h) => h,
            Err(e) => return fail(Kind::Error, e.clone()),
        };
        let v: Vec<f64> = (0..slots.len()).map(|k| weight(k + 3) - 1.0).collect();
        let hv = match self.hessian_vector(hvp, args, slots, &v) {
            Ok(hv) => hv,
            Err(e) => return fail(Kind::Error, format!("second order: {e}")),
        };
        let at = |h: f64| -> Option<Vec<f64>> {
            let mut a = args.to_vec();
            for (s, d) in slots.iter().zip(&v) {
                let x = get(args, s);
                set(&mut a, s, x + h * d);
            }
            self.reverse(rev, &a, slots).ok()
        };
        // Central differences of the gradient with a Richardson step, at several steps: one
        // must agree, and differences that do not converge cannot judge.
        let diff = |h: f64| -> Option<Vec<f64>> {
            let (gp, gm) = (at(h)?, at(-h)?);
            Some(gp.iter().zip(&gm).map(|(p, m)| (p - m) / (2.0 * h)).collect())
        };
        let mut best = f64::INFINITY;
        let mut worst_fd = vec![];
        let mut previous: Option<Vec<f64>> = None;
        let mut converged = false;
        for h in [1e-2, 1e-3, 1e-4, 1e-5] {
            let (Some(d1), Some(d2)) = (diff(h), diff(h / 2.0)) else { return None };
            let fd: Vec<f64> = d1.iter().zip(&d2).map(|(a, b)| (4.0 * b - a) / 3.0).collect();
            if fd.iter().any(|d| !d.is_finite()) {
                continue;
            }
            let distance = |a: &[f64], b: &[f64]| {
                a.iter().zip(b).map(|(a, b)| (a - b).abs() / (1e-4 * a.abs().max(b.abs()) + 1e-5)).fold(0.0, f64::max)
            };
            converged |= previous.as_deref().is_some_and(|p| distance(p, &fd) <= 1.0);
            let err = distance(&hv, &fd);
            if err < best {
                best = err;
                worst_fd = fd.clone();
            }
            previous = Some(fd);
        }
        if !converged {
            return None;
        }
        if best <= 1.0 {
            return None;
        }
        let k = (0..hv.len()).max_by(|&i, &j| (hv[i] - worst_fd[i]).abs().total_cmp(&(hv[j] - worst_fd[j]).abs()))?;
        fail(
            Kind::Wrong,
            format!("second order: (H·v)[{k}] = {} but differences of the gradient give {}", hv[k], worst_fd[k]),
        )
    }

    /// H·v per slot from forward over reverse mode: every float argument and shadow with its
    /// tangent (the direction for arguments, zero for shadows), the seeds as in `reverse`.
    fn hessian_vector(&self, hvp: &Derivation, args: &[Arg], slots: &[Slot], v: &[f64]) -> Result<Vec<f64>, String> {
        let mut call = vec![];
        let mut tangent_pos = vec![None; args.len()];
        let mut shadow_tangent_pos = vec![None; args.len()];
        let mut w = 1;
        for (k, a) in args.iter().enumerate() {
            call.push(a.clone());
            let ty = self.names[k].1;
            if ty.is_float() || ty.mem().is_some_and(|m| m.elem.is_float()) {
                tangent_pos[k] = Some(call.len());
                call.push(floats_replaced(a, &mut || 0.0));
            }
            if let Some(m) = ty.mem().filter(|m| m.elem.is_float()) {
                let seed = floats_replaced(a, &mut || {
                    if m.access == Access::Mut {
                        w += 1;
                        weight(w - 1)
                    } else {
                        0.0
                    }
                });
                call.push(seed);
                shadow_tangent_pos[k] = Some(call.len());
                call.push(floats_replaced(a, &mut || 0.0));
            }
        }
        for (s, d) in slots.iter().zip(v) {
            let p = tangent_pos[s.param].expect("a float slot has a tangent");
            set(&mut call, &Slot { param: p, ..s.clone() }, *d);
        }
        if self.ret_is_float() {
            call.push(Arg::Scalar(float_like(&ret_val(&self.primal), weight(0))));
        }
        let outs =
            cotan_ir::exec_with(&hvp.function, &mut call, DERIVATIVE_STEP_LIMIT, hvp).map_err(|e| e.to_string())?;
        // The results: the value and each scalar gradient, each followed by its tangent.
        let n_scalars = slots.iter().filter(|s| matches!(args[s.param], Arg::Scalar(_))).count();
        if outs.len() < 2 * n_scalars {
            return Err(format!(
                "forward over reverse returned {} values, expected {} tangents",
                outs.len(),
                n_scalars
            ));
        }
        let mut scalar_tangents = outs[outs.len() - 2 * n_scalars..].iter().skip(1).step_by(2);
        let mut hv = vec![];
        for s in slots {
            hv.push(match (&args[s.param], shadow_tangent_pos[s.param]) {
                (Arg::Scalar(_), _) => match scalar_tangents.next() {
                    Some(Arg::Scalar(v)) => v.as_f64().unwrap_or(f64::NAN),
                    _ => f64::NAN,
                },
                (_, Some(p)) => get(&call, &Slot { param: p, ..s.clone() }),
                _ => f64::NAN,
            });
        }
        Ok(hv)
    }

    /// The reverse sweep seeded with the weights: the gradient of J per slot.
    fn reverse(&self, rev: &Derivation, args: &[Arg], slots: &[Slot]) -> Result<Vec<f64>, String> {
        let mut call = vec![];
        let mut shadow_pos = vec![None; args.len()];
        let mut w = 1;
        for (k, a) in args.iter().enumerate() {
            call.push(a.clone());
            if let Some(m) = self.names[k].1.mem().filter(|m| m.elem.is_float()) {
                // The shadow starts at the weights of J for memory the function writes.
                let seed = floats_replaced(a, &mut || {
                    if m.access == Access::Mut {
                        w += 1;
                        weight(w - 1)
                    } else {
                        0.0
                    }
                });
                shadow_pos[k] = Some(call.len());
                call.push(seed);
            }
        }
        if self.ret_is_float() {
            call.push(Arg::Scalar(float_like(&ret_val(&self.primal), weight(0))));
        }
        let outs =
            cotan_ir::exec_with(&rev.function, &mut call, DERIVATIVE_STEP_LIMIT, rev).map_err(|e| e.to_string())?;
        let n_scalars = slots.iter().filter(|s| matches!(args[s.param], Arg::Scalar(_))).count();
        if outs.len() < n_scalars {
            return Err(format!(
                "the reverse derivative returned {} values, expected {n_scalars} gradients",
                outs.len()
            ));
        }
        let mut scalar_grads = outs[outs.len() - n_scalars..].iter();
        let mut grad = vec![];
        for s in slots {
            grad.push(match (&args[s.param], shadow_pos[s.param]) {
                (Arg::Scalar(_), _) => match scalar_grads.next() {
                    Some(Arg::Scalar(v)) => v.as_f64().unwrap_or(f64::NAN),
                    _ => f64::NAN,
                },
                (_, Some(p)) => get(&call, &Slot { param: p, ..s.clone() }),
                _ => f64::NAN,
            });
        }
        Ok(grad)
    }

    /// Forward mode along `dir` (one entry per slot): the directional derivative of J.
    fn forward(&self, fwd: &Derivation, args: &[Arg], slots: &[Slot], dir: &[f64]) -> Result<f64, String> {
        let mut call = vec![];
        let mut tangent_pos = vec![None; args.len()];
        for (k, a) in args.iter().enumerate() {
            call.push(a.clone());
            let ty = self.names[k].1;
            if ty.is_float() || ty.mem().is_some_and(|m| m.elem.is_float()) {
                tangent_pos[k] = Some(call.len());
                call.push(floats_replaced(a, &mut || 0.0));
            }
        }
        for (s, d) in slots.iter().zip(dir) {
            let p = tangent_pos[s.param].expect("a float slot has a tangent");
            set(&mut call, &Slot { param: p, ..s.clone() }, *d);
        }
        let outs =
            cotan_ir::exec_with(&fwd.function, &mut call, DERIVATIVE_STEP_LIMIT, fwd).map_err(|e| e.to_string())?;
        let mut jt = 0.0;
        if self.ret_is_float() {
            match outs.get(1) {
                Some(Arg::Scalar(v)) => jt += weight(0) * v.as_f64().unwrap_or(f64::NAN),
                _ => return Err("the forward derivative returned no tangent".into()),
            }
        }
        let mut w = 1;
        for (k, pos) in tangent_pos.iter().enumerate() {
            if let (true, Some(p)) = (self.mut_float_mem(k), pos) {
                for x in floats_of(&call[*p]) {
                    jt += weight(w) * x;
                    w += 1;
                }
            }
        }
        Ok(jt)
    }

    /// Central differences at several steps: the one closest to `ad` (any that agrees
    /// passes), and whether two neighbouring steps agree with each other (if none do, the
    /// differences have not converged and cannot judge a derivative).
    fn finite_difference(&self, args: &[Arg], s: &Slot, ad: f64) -> Option<(f64, bool)> {
        let x = get(args, s);
        let mut best: Option<f64> = None;
        let mut previous: Option<f64> = None;
        let mut converged = false;
        for h in [1e-3, 1e-4, 1e-5, 1e-6, 1e-7] {
            let h = h * x.abs().max(1.0);
            let mut a = args.to_vec();
            set(&mut a, s, x + h);
            let Primal::Value(jp) = self.primal(&a) else { continue };
            set(&mut a, s, x - h);
            let Primal::Value(jm) = self.primal(&a) else { continue };
            let fd = (jp - jm) / (2.0 * h);
            if !fd.is_finite() {
                continue;
            }
            converged |= previous.is_some_and(|p| close(p, fd, 1e-5, FD_ATOL));
            previous = Some(fd);
            let better = match best {
                None => true,
                Some(b) => (fd - ad).abs() < (b - ad).abs() || !ad.is_finite(),
            };
            if better {
                best = Some(fd);
            }
        }
        best.map(|b| (b, converged))
    }
}

fn ret_val(f: &Function) -> Val {
    match f.returns.first().and_then(|t| t.scalar()) {
        Some(cotan_ir::Scalar::F32) => Val::F32(0.0),
        _ => Val::F64(0.0),
    }
}

pub fn close(a: f64, b: f64, rtol: f64, atol: f64) -> bool {
    (a - b).abs() <= rtol * a.abs().max(b.abs()) + atol
}

fn record(rows: &mut [Row], name: &str, ad: f64, fd: f64) {
    if let Some(r) = rows.iter_mut().find(|r| r.arg == name) {
        let abs = if ad.is_finite() { (ad - fd).abs() } else { f64::INFINITY };
        let rel = abs / fd.abs().max(ad.abs()).max(1e-300);
        r.abs_err = r.abs_err.max(abs);
        r.rel_err = r.rel_err.max(if abs == 0.0 { 0.0 } else { rel });
    }
}

/// How to choose points.
pub struct Points<'a> {
    pub at: Option<&'a str>,
    pub trials: usize,
    pub seed: u64,
    pub len: usize,
}

/// Checks `p` at the given point, or at `trials` random points (retrying points where the
/// function itself fails). Stops at the first point with a failure.
pub fn check(p: &Prepared, points: &Points) -> Result<Report, CliError> {
    let mut rows: Vec<Row> = p
        .names
        .iter()
        .filter(|(_, t)| t.is_float() || t.mem().is_some_and(|m| m.elem.is_float()))
        .map(|(n, _)| Row { arg: n.clone(), ..Row::default() })
        .collect();
    if let Some(at) = points.at {
        let args = inputs::from_json(&p.primal, at)?;
        let failures = p
            .check_at(&args, &mut rows)
            .map_err(|e| CliError::new(format!("the function itself fails at this point: {e}")))?;
        return Ok(Report { rows, failures, point: inputs::to_json(&args), points: 1 });
    }
    if let Some((name, _)) = p.names.iter().find(|(_, t)| t.mem().is_some_and(|m| matches!(m.kind, MemKind::Record(_))))
    {
        return Err(CliError::new(format!(
            "`{name}` is a struct, whose fields cotan cannot choose at random: give the point with --at (a JSON object for `{name}`)"
        )));
    }
    let mut rng = fastrand::Rng::with_seed(points.seed);
    let mut checked = 0;
    let mut last_point = String::from("[]");
    let mut last_err = String::new();
    let mut attempts = 0;
    while checked < points.trials && attempts < points.trials * 50 {
        attempts += 1;
        let args = inputs::random(&p.primal, &mut rng, points.len);
        match p.check_at(&args, &mut rows) {
            Err(e) => last_err = e,
            Ok(failures) => {
                checked += 1;
                last_point = inputs::to_json(&args);
                if !failures.is_empty() {
                    return Ok(Report { rows, failures, point: last_point, points: checked });
                }
            }
        }
    }
    if checked == 0 {
        return Err(CliError::new(format!(
            "the function fails at every random point tried ({attempts}); the last error: {last_err}; give a point with --at"
        )));
    }
    Ok(Report { rows, failures: vec![], point: last_point, points: checked })
}

/// The report as a table.
pub fn render(r: &Report) -> String {
    let mut s = format!("{:<16} {:>14} {:>14}\n", "argument", "max abs err", "max rel err");
    for row in &r.rows {
        s += &format!("{:<16} {:>14.3e} {:>14.3e}\n", row.arg, row.abs_err, row.rel_err);
    }
    if r.passed() {
        s += &format!("ok: reverse, forward and finite differences agree at {} point(s)\n", r.points);
    } else {
        for f in &r.failures {
            s += &format!("FAIL [{}, {}] {}: {}\n", f.kind.name(), f.how, f.arg, f.detail);
        }
        s += &format!("at: {}\n", r.point);
    }
    s
}
