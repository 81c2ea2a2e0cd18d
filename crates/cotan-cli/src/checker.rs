//! The gradient check: reverse mode, forward mode and central finite differences of one
//! function, all run by the IR interpreter, with every float argument active (the
//! all-active callable variant, exactly as the macros generate it).
//!
//! The checked quantity is J = sum_r w_r * result_r + sum_k w_k * out_k over the floats of
//! the result (a tuple or an array has several, each with its seed) and the final contents
//! of `&mut` float memory, with fixed weights, so one reverse sweep gives the whole
//! gradient.
//!
//! Tolerances and finite-difference steps follow the precision the function computes in:
//! a function with `f32` arguments or results is compared with `f32`'s (its finite
//! differences take the steps that rounding to `f32` leaves, larger and extrapolated).
//! Where those differences disagree with a derivative, the function is also run in `f64`
//! (its text with `f32` read as `f64`): an `f32` function whose intermediate values are
//! large, or that oscillates fast, has differences in `f32` that no step makes accurate.
//! The `f64` version's derivative against its differences then says whether the transform
//! is right, and the `f32` derivative must be the `f64` one to within `f32` rounding.

use cotan_ad::Activity;
use cotan_expand::tools::{all_active, derivation, primal, second_order, Derivation};
use cotan_expand::Mode;
use cotan_ir::{Access, Arg, Function, MemKind, Scalar, Ty, Val};

use crate::inputs;
use crate::source::Source;
use crate::CliError;

/// Steps (ops) an interpreter run may take: a reduction step that makes a loop endless fails.
pub const STEP_LIMIT: u64 = 2_000_000;
/// A derivative may take many times the primal's steps (reverse mode re-runs calls).
const DERIVATIVE_STEP_LIMIT: u64 = 20 * STEP_LIMIT;

/// Tolerances and steps for the precision a function computes in.
#[derive(Clone, Copy, Debug)]
pub struct Precision {
    /// A derivative agrees with finite differences within `fd_rtol` relative and `fd_atol`
    /// plus `fd_jtol` times the size of J's terms (rounding in J grows with them).
    fd_rtol: f64,
    fd_atol: f64,
    fd_jtol: f64,
    /// Steps of central differences, relative to `max(1, |x|)`.
    steps: &'static [f64],
    /// Differences at two neighbouring steps that agree within `fd_converged_rtol` relative
    /// and `fd_converged_atol` times the comparison's absolute tolerance have converged
    /// (and may judge a derivative that both modes agree on, or that is not finite).
    fd_converged_rtol: f64,
    fd_converged_atol: f64,
    /// Each step's difference is extrapolated with the half step (Richardson).
    richardson: bool,
    /// Two derivatives (reverse and forward, the dot-product test) agree within these.
    ad_rtol: f64,
    ad_atol: f64,
    dot_rtol: f64,
    /// Second order: steps of the differences of the gradient, and the agreement needed.
    so_steps: &'static [f64],
    so_rtol: f64,
    so_atol: f64,
}

/// For functions computing in `f64`.
pub const F64: Precision = Precision {
    fd_rtol: 1e-6,
    fd_atol: 1e-6,
    fd_jtol: 1e-9,
    steps: &[1e-3, 1e-4, 1e-5, 1e-6, 1e-7],
    fd_converged_rtol: 1e-5,
    fd_converged_atol: 1.0,
    richardson: false,
    ad_rtol: 1e-9,
    ad_atol: 1e-9,
    dot_rtol: 1e-8,
    so_steps: &[1e-2, 1e-3, 1e-4, 1e-5],
    so_rtol: 1e-4,
    so_atol: 1e-5,
};

/// For functions computing in `f32` (epsilon 1.2e-7): differences at larger steps,
/// extrapolated, agree to about 1e-5 of J's size; the two modes round differently, to
/// about 1e-6 relative per operation.
pub const F32: Precision = Precision {
    fd_rtol: 2e-3,
    fd_atol: 1e-4,
    fd_jtol: 2e-4,
    steps: &[1e-1, 3e-2, 1e-2, 3e-3, 1e-3],
    // Stricter than the comparison: a function whose intermediate values are much larger
    // than its result loses digits to rounding in `f32` that no step recovers, and large
    // steps cross the kinks of `max`, branches and early exits.
    fd_converged_rtol: 5e-4,
    fd_converged_atol: 0.25,
    richardson: true,
    ad_rtol: 2e-4,
    ad_atol: 2e-5,
    dot_rtol: 2e-4,
    so_steps: &[1e-1, 3e-2, 1e-2],
    so_rtol: 1e-2,
    so_atol: 1e-3,
};

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

/// How the all-active derivatives take a parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// No derivative (integers, bools, structs by value).
    Const,
    /// A float by value: `Active` (its gradient is returned) and `Dual` (a tangent follows).
    Scalar,
    /// An array of floats by value: `Active` (its gradient is returned as an array) and
    /// `Dual` (a tangent array by value follows).
    Array,
    /// A reference to floats: `Duplicated` (a shadow follows) and `Dual` (a tangent follows).
    Shadowed,
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
    roles: Vec<Role>,
    /// The floats of the result that are in J, each with its seed: all of the result's,
    /// or none when it is not all floats.
    seeds: usize,
    precision: Precision,
    /// For an `f32` function: the same function computing in `f64`, whose differences
    /// judge a derivative that the `f32` differences disagree with.
    wide: Option<Wide>,
}

/// An `f32` function computing in `f64`: its primal, and its reverse derivative.
struct Wide {
    primal: Derivation,
    rev: Option<Derivation>,
}

/// The `f64` version at one point: the arguments in `f64` and its gradient there.
struct WideAt<'p> {
    wide: &'p Wide,
    args: Vec<Arg>,
    grad: Vec<f64>,
}

/// Lowers `name` (an error here is bad input: exit 2) and differentiates it, with every
/// float argument active, exactly as the macros would (an error here is a finding).
pub fn prepare(src: &Source, name: &str) -> Result<Prepared, CliError> {
    let item = src.function(name)?;
    let primal_run = primal(&src.set, &item).map_err(|e| CliError::lowering(name, &e))?;
    let primal = primal_run.function.clone();
    let fname = item.sig.ident.to_string();
    let derive = |mode: Mode| {
        let spec = all_active(&primal, mode);
        let which = if mode == Mode::Forward { "forward" } else { "reverse" };
        guarded(|| derivation(&src.set, &item, &spec, &format!("d_{fname}")).map_err(|e| e.to_string()))
            .map_err(|e| format!("{which} mode: {e}"))
    };
    // A custom derivative with only a reverse rule makes forward mode unavailable (as it is
    // for compiled callers): then reverse mode is checked against differences alone.
    let fwd = match derive(Mode::Forward) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.contains("custom derivative without a forward rule") => Ok(None),
        Err(e) => Err(e),
    };
    let derivs = fwd.and_then(|f| Ok((f, derive(Mode::Reverse)?)));
    let spec = all_active(&primal, Mode::Reverse);
    let roles: Vec<Role> = spec
        .inputs
        .iter()
        .zip(&primal.params)
        .map(|(a, p)| match (a, primal.ty(*p)) {
            (Activity::Const, _) => Role::Const,
            (_, Ty::Scalar(_)) => Role::Scalar,
            (Activity::Active, Ty::Mem(_)) => Role::Array,
            (_, Ty::Mem(_)) => Role::Shadowed,
        })
        .collect();
    let seeds = cotan_expand::tools::seeds(&primal);
    // Forward over reverse mode needs the tangents of every result of the reverse
    // derivative, which it gives for floats only (not for the gradient of an array by value,
    // nor next to an integer result).
    let returned_grads = roles.contains(&Role::Scalar);
    let second_order_fits = !roles.contains(&Role::Array) && (!returned_grads || primal.returns.len() == seeds);
    let hvp = (matches!(derivs, Ok((Some(_), _))) && second_order_fits).then(|| {
        guarded(|| second_order(&src.set, &item, &format!("hvp_{fname}")).map_err(|e| e.to_string()))
            .map_err(|e| format!("second order: {e}"))
    });
    let names = inputs::params(&primal);
    let f32 = names.iter().map(|(_, t)| *t).chain(primal.returns.iter().copied()).any(|t| match t {
        Ty::Scalar(s) => s == Scalar::F32,
        Ty::Mem(m) => m.elem == Scalar::F32,
    });
    let precision = if f32 { F32 } else { F64 };
    let wide = f32.then(|| widened(src, name, &primal)).flatten();
    Ok(Prepared { primal_run, primal, derivs, hvp, names, roles, seeds, precision, wide })
}

/// `name` computing in `f64`: the file's text with every `f32` (type or literal suffix)
/// read as `f64`. `None` where that does not lower, or lowers to another signature (a
/// function whose callees are in other files of a crate, or that depends on `f32` by name).
fn widened(src: &Source, name: &str, narrow: &Function) -> Option<Wide> {
    let text = widen_text(&prettyplease::unparse(&src.file));
    let wide = Source::parse(&text).ok()?;
    let item = wide.function(name).ok()?;
    let run = guarded(|| primal(&wide.set, &item).map_err(|e| e.to_string())).ok()?;
    if run.function.params.len() != narrow.params.len() || run.function.returns.len() != narrow.returns.len() {
        return None;
    }
    let spec = all_active(&run.function, Mode::Reverse);
    let rev = guarded(|| derivation(&wide.set, &item, &spec, &format!("d_{name}")).map_err(|e| e.to_string())).ok();
    Some(Wide { primal: run, rev })
}

/// `text` with the word `f32`, and the suffix `f32` of a number, replaced by `f64`.
fn widen_text(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut k = 0;
    while k < text.len() {
        let word_before = k > 0 && (bytes[k - 1].is_ascii_alphabetic() || bytes[k - 1] == b'_');
        let word_after = bytes.get(k + 3).is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_');
        if text[k..].starts_with("f32") && !word_before && !word_after {
            out.push_str("f64");
            k += 3;
        } else {
            let c = text[k..].chars().next().unwrap_or_default();
            out.push(c);
            k += c.len_utf8();
        }
    }
    out
}

/// How an error reports a panic of cotan's pipeline.
const PANICKED: &str = "cotan panicked";

/// Runs a step of cotan's pipeline, with a panic (a bug of cotan) as an error that says so,
/// so that it is reported and minimized like any failure.
fn guarded<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    std::panic::set_hook(previous);
    r.unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Err(format!("{PANICKED}: {msg}"))
    })
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
        (Arg::Rows(rows), Some((k, rest))) => leaf(rows.get(*k)?, rest),
        _ => None,
    }
}

fn leaf_mut<'a>(a: &'a mut Arg, path: &[usize]) -> Option<&'a mut Arg> {
    match (a, path.split_first()) {
        (a, None) => Some(a),
        (Arg::Record(fields), Some((k, rest))) => leaf_mut(&mut fields.get_mut(*k)?.1, rest),
        (Arg::Rows(rows), Some((k, rest))) => leaf_mut(rows.get_mut(*k)?, rest),
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
        Arg::Rows(rows) => {
            for (k, r) in rows.iter().enumerate() {
                path.push(k);
                float_slots(r, param, path, out);
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
        Arg::Rows(rows) => Arg::Rows(rows.iter().map(|r| floats_replaced(r, value)).collect()),
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
        match a {
            Arg::Record(fields) => {
                name = format!("{name}.{}", fields[k].0);
                a = &fields[k].1;
            }
            Arg::Rows(rows) => {
                name = format!("{name}[{k}]");
                a = &rows[k];
            }
            _ => {}
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

/// What a primal run gives: J and the size of its terms (the sum of their magnitudes,
/// which bounds its rounding), or why it failed.
enum Primal {
    Value(f64, f64),
    Failed(String),
}

/// Element `elem` of the argument at `path` in `a` (a number, or memory).
fn at_path(a: Option<&Arg>, path: &[usize], elem: usize) -> f64 {
    as_f64(a.and_then(|a| leaf(a, path)), elem)
}

fn as_f64(a: Option<&Arg>, elem: usize) -> f64 {
    match a {
        Some(Arg::Scalar(v)) => v.as_f64(),
        Some(Arg::Mem(m)) => m.get(elem).and_then(|v| v.as_f64()),
        _ => None,
    }
    .unwrap_or(f64::NAN)
}

impl Prepared {
    fn slots(&self, args: &[Arg]) -> Vec<Slot> {
        let mut out = vec![];
        for (k, a) in args.iter().enumerate() {
            match self.roles[k] {
                Role::Const => {}
                Role::Scalar => out.push(Slot { param: k, path: vec![], elem: 0 }),
                Role::Array | Role::Shadowed => float_slots(a, k, &mut vec![], &mut out),
            }
        }
        out
    }

    /// The weight of the first float of `&mut` memory in J: the results' come first.
    fn first_memory_weight(&self) -> usize {
        self.seeds.max(1)
    }

    fn mut_float_mem(&self, k: usize) -> bool {
        self.roles[k] == Role::Shadowed && self.names[k].1.mem().is_some_and(|m| m.access == Access::Mut)
    }

    /// The parameters whose gradients the reverse derivative returns, in order.
    fn returned_gradients(&self) -> Vec<usize> {
        (0..self.roles.len()).filter(|k| matches!(self.roles[*k], Role::Scalar | Role::Array)).collect()
    }

    /// The seeds of the reverse derivative: the weights of the result's floats.
    fn seed_args(&self) -> Vec<Arg> {
        (0..self.seeds).map(|r| Arg::Scalar(float_like(&zero_of(self.primal.returns[r]), weight(r)))).collect()
    }

    /// The shadow of memory parameter `k` on entry to the reverse sweep: the weights of J
    /// for memory the function writes, zero for memory it reads.
    fn shadow_seed(&self, k: usize, a: &Arg, w: &mut usize) -> Arg {
        let writes = self.mut_float_mem(k);
        floats_replaced(a, &mut || {
            if writes {
                *w += 1;
                weight(*w - 1)
            } else {
                0.0
            }
        })
    }

    /// J from a run's results and final arguments, and the size of its terms.
    fn objective(&self, outs: &[Arg], args: &[Arg]) -> (f64, f64) {
        let (mut j, mut size) = (0.0, 0.0);
        let mut add = |w: f64, x: f64| {
            j += w * x;
            size += (w * x).abs();
        };
        for r in 0..self.seeds {
            add(weight(r), as_f64(outs.get(r), 0));
        }
        let mut w = self.first_memory_weight();
        for (k, a) in args.iter().enumerate() {
            if self.mut_float_mem(k) {
                for x in floats_of(a) {
                    add(weight(w), x);
                    w += 1;
                }
            }
        }
        (j, size)
    }

    /// The primal's results and its arguments after the call (what its `&mut` memory then
    /// holds), as the interpreter runs the lowered function.
    pub fn run_lowered(&self, args: &[Arg]) -> Result<(Vec<Arg>, Vec<Arg>), String> {
        let mut a = args.to_vec();
        let run = &self.primal_run;
        let outs = cotan_ir::exec_with(&run.function, &mut a, STEP_LIMIT, run).map_err(|e| e.to_string())?;
        Ok((outs, a))
    }

    fn primal(&self, args: &[Arg]) -> Primal {
        self.run_primal(&self.primal_run, args)
    }

    /// J from a run of `run` (the function or its `f64` version) on `args`.
    fn run_primal(&self, run: &Derivation, args: &[Arg]) -> Primal {
        let mut a = args.to_vec();
        match cotan_ir::exec_with(&run.function, &mut a, STEP_LIMIT, run) {
            Ok(outs) => {
                let (j, size) = self.objective(&outs, &a);
                Primal::Value(j, size)
            }
            Err(e) => Primal::Failed(e.to_string()),
        }
    }

    /// Checks at one point. `Err` if the primal itself fails or is not finite there.
    fn check_at(&self, args: &[Arg], rows: &mut [Row]) -> Result<Vec<Failure>, String> {
        let pr = self.precision;
        let j_size = match self.primal(args) {
            Primal::Value(j, size) if j.is_finite() => size,
            Primal::Value(j, _) => return Err(format!("the function's result is {j} there")),
            Primal::Failed(e) => return Err(e),
        };
        let (fwd, rev) = match &self.derivs {
            Ok(d) => d,
            Err(e) => {
                let how = if e.contains(PANICKED) { "differentiation (panic)" } else { "differentiation" };
                return Ok(vec![Failure { kind: Kind::Error, arg: "-".into(), how, detail: e.clone() }]);
            }
        };
        let slots = self.slots(args);
        let mut failures = vec![];
        let grad = match self.reverse(rev, args, &slots, false) {
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
        // Rounding in finite differences grows with the size of J's terms.
        let fd_atol = pr.fd_atol + pr.fd_jtol * j_size;
        // The `f64` version of an `f32` function at this point, where it is needed.
        let wide_grad = std::cell::OnceCell::new();
        // Per parameter: which methods disagree, and the first disagreement seen.
        let mut per_arg: Vec<(String, Kind, bool, bool, String)> = vec![];
        for (k, s) in slots.iter().enumerate() {
            let name = &self.names[s.param].0;
            let (g, t) = (grad[k], tangents[k]);
            let mut fd = self.finite_difference(args, s, g, fd_atol);
            // Differences of an `f32` function that disagree with a derivative: those of its
            // `f64` version judge instead.
            let disagree = fd.is_none_or(|(d, _)| [g, t].iter().any(|ad| !close(*ad, d, pr.fd_rtol, fd_atol)));
            if self.wide.is_some() && disagree {
                let wide = wide_grad.get_or_init(|| self.wide_gradient(args, &slots));
                if let Some(verdict) = wide.as_ref().and_then(|w| self.wide_verdict(w, k, s, g, t, fd_atol)) {
                    fd = Some(verdict);
                }
            } else if disagree && !pr.richardson {
                // Differences that disagree by a little: a function of large third
                // derivative leaves each step's an error above the tolerance, which
                // extrapolating with the half step (Richardson) removes.
                let extrapolated = Precision { richardson: true, ..pr };
                let closer =
                    |(r, converged): (f64, bool)| converged && fd.is_none_or(|(d, _)| (r - g).abs() < (d - g).abs());
                if let Some(r) =
                    differences(args, s, g, fd_atol, extrapolated, &|a| self.primal(a)).filter(|r| closer(*r))
                {
                    fd = Some(r);
                }
            }
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
            // Nor is a derivative that is not finite against differences that do not converge
            // either (a derivative too large for a float, of a chaotic function).
            let modes_agree = g.is_finite() && t.is_finite() && close(g, t, pr.ad_rtol, pr.ad_atol);
            let finite = g.is_finite() && t.is_finite();
            if let Some((fd, _)) = fd.filter(|(_, converged)| *converged || (!modes_agree && finite)) {
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
                    } else if !close(ad, fd, pr.fd_rtol, fd_atol) {
                        note(Kind::Wrong, rev, !rev, format!("{label} gives {ad} for {what}, finite differences {fd}"));
                    }
                }
                record(rows, name, g, fd);
                record(rows, name, t, fd);
            }
            if g.is_finite() && t.is_finite() && !close(g, t, pr.ad_rtol, pr.ad_atol) {
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
                    let size: f64 = grad.iter().zip(&v).map(|(g, v)| (g * v).abs()).sum();
                    // Both not finite: the derivative is too large for a float here (the
                    // comparisons with differences judge whether it should be).
                    let judged = gv.is_finite() || jv.is_finite();
                    if judged && !close(gv, jv, pr.dot_rtol, pr.dot_rtol * (1.0 + size)) {
                        failures.push(Failure {
                            kind: if gv.is_finite() && jv.is_finite() { Kind::Wrong } else { Kind::NonFinite },
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
        let pr = self.precision;
        let fail = |kind, detail: String| Some(Failure { kind, arg: "-".into(), how: "second order", detail });
        let hvp = match hvp {
            Ok(h) => h,
            Err(e) if e.contains(PANICKED) => {
                return Some(Failure {
                    kind: Kind::Error,
                    arg: "-".into(),
                    how: "second order (panic)",
                    detail: e.clone(),
                })
            }
            Err(e) => return fail(Kind::Error, e.clone()),
        };
        let v: Vec<f64> = (0..slots.len()).map(|k| weight(k + 3) - 1.0).collect();
        let hv = match self.hessian_vector(hvp, args, slots, &v) {
            Ok(hv) => hv,
            Err(e) => return fail(Kind::Error, format!("second order: {e}")),
        };
        // Central differences of the gradient, with a Richardson step, at several steps: one
        // must agree, and differences that do not converge cannot judge. For an `f32`
        // function that they find wrong, its `f64` version's differences judge instead.
        let mut verdict = self.gradient_differences(rev, args, slots, &v, &hv, pr.so_steps, false)?;
        if verdict.0 && verdict.1 > 1.0 {
            if let Some((Wide { rev: Some(rev), .. }, wide_args)) = self.wide_at(args) {
                if let Some(w) = self.gradient_differences(rev, &wide_args, slots, &v, &hv, F64.so_steps, true) {
                    verdict = w;
                }
            }
        }
        let (converged, best, worst_fd) = verdict;
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

    /// Central differences of the gradient (from `rev`, the `f64` version's if `wide`)
    /// along `v` at `steps`, each extrapolated with the half step: whether two neighbouring
    /// steps agree, the distance to `hv` of the closest (in units of the tolerance; at most
    /// 1 agrees), and that one. `None` where the gradient cannot be taken.
    #[allow(clippy::too_many_arguments)]
    fn gradient_differences(
        &self,
        rev: &Derivation,
        args: &[Arg],
        slots: &[Slot],
        v: &[f64],
        hv: &[f64],
        steps: &[f64],
        wide: bool,
    ) -> Option<(bool, f64, Vec<f64>)> {
        let pr = self.precision;
        // The gradient at x + h v, and the step taken (rounding to `f32` changes it).
        let at = |h: f64| -> Option<(Vec<f64>, f64)> {
            let mut a = args.to_vec();
            for (s, d) in slots.iter().zip(v) {
                let x = get(args, s);
                set(&mut a, s, x + h * d);
            }
            // The step, measured on the largest component of the direction.
            let k = (0..v.len()).max_by(|&i, &j| v[i].abs().total_cmp(&v[j].abs()))?;
            let taken = (get(&a, &slots[k]) - get(args, &slots[k])) / v[k];
            Some((self.reverse(rev, &a, slots, wide).ok()?, taken))
        };
        let diff = |h: f64| -> Option<Vec<f64>> {
            let ((gp, hp), (gm, hm)) = (at(h)?, at(-h)?);
            Some(gp.iter().zip(&gm).map(|(p, m)| (p - m) / (hp - hm)).collect())
        };
        let distance = |a: &[f64], b: &[f64]| {
            a.iter()
                .zip(b)
                .map(|(a, b)| (a - b).abs() / (pr.so_rtol * a.abs().max(b.abs()) + pr.so_atol))
                .fold(0.0, f64::max)
        };
        let mut best = f64::INFINITY;
        let mut worst_fd = vec![];
        let mut previous: Option<Vec<f64>> = None;
        let mut converged = false;
        for &h in steps {
            let (d1, d2) = (diff(h)?, diff(h / 2.0)?);
            let fd: Vec<f64> = d1.iter().zip(&d2).map(|(a, b)| (4.0 * b - a) / 3.0).collect();
            if fd.iter().any(|d| !d.is_finite()) {
                continue;
            }
            converged |= previous.as_deref().is_some_and(|p| distance(p, &fd) <= 1.0);
            let err = distance(hv, &fd);
            if err < best {
                best = err;
                worst_fd = fd.clone();
            }
            previous = Some(fd);
        }
        Some((converged, best, worst_fd))
    }

    /// H·v per slot from forward over reverse mode: every float argument and shadow with its
    /// tangent (the direction for arguments, zero for shadows), the seeds as in `reverse`.
    fn hessian_vector(&self, hvp: &Derivation, args: &[Arg], slots: &[Slot], v: &[f64]) -> Result<Vec<f64>, String> {
        let mut call = vec![];
        let mut tangent_pos = vec![None; args.len()];
        let mut shadow_tangent_pos = vec![None; args.len()];
        let mut w = self.first_memory_weight();
        for (k, a) in args.iter().enumerate() {
            call.push(a.clone());
            if self.roles[k] != Role::Const {
                tangent_pos[k] = Some(call.len());
                call.push(floats_replaced(a, &mut || 0.0));
            }
            if self.roles[k] == Role::Shadowed {
                call.push(self.shadow_seed(k, a, &mut w));
                shadow_tangent_pos[k] = Some(call.len());
                call.push(floats_replaced(a, &mut || 0.0));
            }
        }
        for (s, d) in slots.iter().zip(v) {
            let p = tangent_pos[s.param].expect("a float slot has a tangent");
            set(&mut call, &Slot { param: p, ..s.clone() }, *d);
        }
        call.extend(self.seed_args());
        let outs =
            cotan_ir::exec_with(&hvp.function, &mut call, DERIVATIVE_STEP_LIMIT, hvp).map_err(|e| e.to_string())?;
        // The results: the values and each returned gradient, each followed by its tangent.
        let n_grads = self.returned_gradients().len();
        if outs.len() < 2 * n_grads {
            return Err(format!("forward over reverse returned {} values, expected {n_grads} tangents", outs.len()));
        }
        let tangents: Vec<&Arg> = outs[outs.len() - 2 * n_grads..].iter().skip(1).step_by(2).collect();
        let returned = self.returned_gradients();
        let mut hv = vec![];
        for s in slots {
            hv.push(match (self.roles[s.param], shadow_tangent_pos[s.param]) {
                (Role::Shadowed, Some(p)) => get(&call, &Slot { param: p, ..s.clone() }),
                (Role::Scalar | Role::Array, _) => {
                    let r = returned.iter().position(|k| *k == s.param).expect("a returned gradient");
                    at_path(tangents.get(r).copied(), &s.path, s.elem)
                }
                _ => f64::NAN,
            });
        }
        Ok(hv)
    }

    /// The reverse sweep seeded with the weights: the gradient of J per slot. `wide`: `rev`
    /// is the `f64` version's (the seeds are then `f64` too).
    fn reverse(&self, rev: &Derivation, args: &[Arg], slots: &[Slot], wide: bool) -> Result<Vec<f64>, String> {
        let mut call = vec![];
        let mut shadow_pos = vec![None; args.len()];
        let mut w = self.first_memory_weight();
        for (k, a) in args.iter().enumerate() {
            call.push(a.clone());
            if self.roles[k] == Role::Shadowed {
                shadow_pos[k] = Some(call.len());
                call.push(self.shadow_seed(k, a, &mut w));
            }
        }
        call.extend(self.seed_args());
        if wide {
            // The `f64` version of an `f32` function: seeds in `f64` too.
            call = call.iter().map(widen_arg).collect();
        }
        let outs =
            cotan_ir::exec_with(&rev.function, &mut call, DERIVATIVE_STEP_LIMIT, rev).map_err(|e| e.to_string())?;
        let returned = self.returned_gradients();
        if outs.len() < returned.len() {
            return Err(format!(
                "the reverse derivative returned {} values, expected {} gradients",
                outs.len(),
                returned.len()
            ));
        }
        let grads = &outs[outs.len() - returned.len()..];
        let mut grad = vec![];
        for s in slots {
            grad.push(match (self.roles[s.param], shadow_pos[s.param]) {
                (Role::Shadowed, Some(p)) => get(&call, &Slot { param: p, ..s.clone() }),
                (Role::Scalar | Role::Array, _) => {
                    let r = returned.iter().position(|k| *k == s.param).expect("a returned gradient");
                    at_path(grads.get(r), &s.path, s.elem)
                }
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
            if self.roles[k] != Role::Const {
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
        // Each float of the result comes followed by its tangent.
        for r in 0..self.seeds {
            match outs.get(2 * r + 1) {
                Some(t @ Arg::Scalar(_)) => jt += weight(r) * as_f64(Some(t), 0),
                _ => return Err("the forward derivative returned no tangent".into()),
            }
        }
        let mut w = self.first_memory_weight();
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

    /// Central differences at the precision's steps (extrapolated with the half step where
    /// it says): the one closest to `ad` (any that agrees passes), and whether two
    /// neighbouring steps agree with each other (if none do, the differences have not
    /// converged and cannot judge a derivative). The step is the one the argument's type
    /// can hold: `x + h` rounds in `f32`.
    fn finite_difference(&self, args: &[Arg], s: &Slot, ad: f64, atol: f64) -> Option<(f64, bool)> {
        differences(args, s, ad, atol, self.precision, &|a| self.primal(a))
    }

    /// The `f64` version of an `f32` function, if it computes the same J at `args` (within
    /// the `f32` tolerances): where rounding decides a branch, the two versions can take
    /// different paths, and the `f64` one cannot judge the other's derivative.
    fn wide_at(&self, args: &[Arg]) -> Option<(&Wide, Vec<Arg>)> {
        let wide = self.wide.as_ref()?;
        let pr = self.precision;
        let Primal::Value(j, size) = self.primal(args) else { return None };
        let wide_args: Vec<Arg> = args.iter().map(widen_arg).collect();
        let Primal::Value(wide_j, _) = self.run_primal(&wide.primal, &wide_args) else { return None };
        close(j, wide_j, pr.fd_rtol, pr.fd_atol + pr.fd_jtol * size).then_some((wide, wide_args))
    }

    /// The `f64` version of an `f32` function where it judges at `args` (`wide_at`), the
    /// arguments in `f64`, and its reverse-mode gradient at each slot.
    fn wide_gradient(&self, args: &[Arg], slots: &[Slot]) -> Option<WideAt<'_>> {
        let (wide, wide_args) = self.wide_at(args)?;
        let grad = self.reverse(wide.rev.as_ref()?, &wide_args, slots, true).ok()?;
        Some(WideAt { wide, args: wide_args, grad })
    }

    /// Judges the derivatives `g` (reverse) and `t` (forward) of an `f32` function in slot
    /// `s` (the `k`-th), which its `f32` differences disagree with, by its `f64` version:
    /// the `f64` gradient the `f64` differences (converged). Where they agree, the
    /// transform is right and `g`, `t` are accepted if they are the `f64` derivative to
    /// within what `f32` rounding can do to a derivative (1%): the verdict is `g` itself.
    /// Where they do not, the `f64` differences judge. `None` where they have not converged.
    fn wide_verdict(&self, at: &WideAt, k: usize, s: &Slot, g: f64, t: f64, atol: f64) -> Option<(f64, bool)> {
        let wide_g = at.grad[k];
        let (d, _) = differences(&at.args, s, wide_g, atol, F64, &|a| self.run_primal(&at.wide.primal, a))
            .filter(|(_, converged)| *converged)?;
        let transform_right = close(wide_g, d, F64.fd_rtol, atol);
        let rounding_only = [g, t].iter().all(|ad| !ad.is_finite() || close(*ad, wide_g, 1e-2, atol));
        Some(if transform_right && rounding_only { (g, true) } else { (d, true) })
    }
}

/// `a` with its `f32`s as `f64`s.
fn widen_arg(a: &Arg) -> Arg {
    let wide = |v: &Val| match v {
        Val::F32(x) => Val::F64(f64::from(*x)),
        v => *v,
    };
    match a {
        Arg::Scalar(v) => Arg::Scalar(wide(v)),
        Arg::Mem(m) => Arg::Mem(m.iter().map(wide).collect()),
        Arg::Record(fields) => Arg::Record(fields.iter().map(|(n, f)| (n.clone(), widen_arg(f))).collect()),
        Arg::Rows(rows) => Arg::Rows(rows.iter().map(widen_arg).collect()),
    }
}

/// Central differences of `primal` in slot `s` at the precision's steps (extrapolated with
/// the half step where it says so): the one closest to `ad`, and whether neighbouring steps
/// agree (converged).
fn differences(
    args: &[Arg],
    s: &Slot,
    ad: f64,
    atol: f64,
    pr: Precision,
    primal: &dyn Fn(&[Arg]) -> Primal,
) -> Option<(f64, bool)> {
    let x = get(args, s);
    let diff = |h: f64| -> Option<f64> {
        let mut a = args.to_vec();
        set(&mut a, s, x + h);
        let xp = get(&a, s);
        let Primal::Value(jp, _) = primal(&a) else { return None };
        set(&mut a, s, x - h);
        let xm = get(&a, s);
        let Primal::Value(jm, _) = primal(&a) else { return None };
        let d = (jp - jm) / (xp - xm);
        d.is_finite().then_some(d)
    };
    let mut best: Option<f64> = None;
    let mut previous: Option<f64> = None;
    let mut converged = false;
    for &h in pr.steps {
        let h = h * x.abs().max(1.0);
        let Some(mut fd) = diff(h) else { continue };
        if pr.richardson {
            let Some(half) = diff(h / 2.0) else { continue };
            fd = (4.0 * half - fd) / 3.0;
        }
        converged |= previous.is_some_and(|p| close(p, fd, pr.fd_converged_rtol, pr.fd_converged_atol * atol));
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

fn zero_of(t: Ty) -> Val {
    match t.scalar() {
        Some(Scalar::F32) => Val::F32(0.0),
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
        .zip(&p.roles)
        .filter(|(_, r)| **r != Role::Const)
        .map(|((n, _), _)| Row { arg: n.clone(), ..Row::default() })
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
            // A function it calls that cotan cannot lower fails the same way at every point.
            Err(e) if unsupported(&e) => {
                return Err(CliError::new(format!("cotan cannot run a function `{}` calls: {e}", p.primal.name)))
            }
            Err(e) => last_err = e,
            Ok(failures) => {
                checked += 1;
                crate::progress::check_tick();
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

/// Whether an interpreter error is cotan refusing a construct (in a function the checked one
/// calls, lowered when it is first called) rather than the function failing at a point.
fn unsupported(e: &str) -> bool {
    e.contains("cotan supports") || e.contains("cotan cannot") || e.contains("cotan does not")
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

#[cfg(test)]
mod tests {
    use super::widen_text;

    #[test]
    fn widening_replaces_the_type_and_literal_suffixes_only() {
        assert_eq!(
            widen_text("fn f(x: &[f32], k: f32) -> f32 { let f32x = 1.0f32; x[0] * k as f32 + my_f32 + f32::EPSILON }"),
            "fn f(x: &[f64], k: f64) -> f64 { let f32x = 1.0f64; x[0] * k as f64 + my_f32 + f64::EPSILON }"
        );
        assert_eq!(widen_text("// ünïcode f32\nf32"), "// ünïcode f64\nf64");
    }
}
