//! Checks derivatives in your own tests: against central finite differences, reverse
//! against forward, accumulation into shadows, and (optionally) heap allocations.
//!
//! For `fn f(x: &[f64]) -> f64` with a generated `df`, one line:
//!
//! ```
//! use cotan::{autodiff_reverse, check};
//!
//! #[autodiff_reverse(df, Duplicated, Active)]
//! fn f(x: &[f64]) -> f64 {
//!     x[0] * x[1].sin()
//! }
//!
//! check::gradient(f, df, &[0.5, 2.0]).unwrap(); // panics with a readable report on failure
//! ```
//!
//! Any other signature goes through [`Check`]: name the arguments, then adapt the primal
//! and its derivatives with closures that read them by name from [`Args`]. Constants
//! (integers, configuration) are simply captured by the closures.
//!
//! ```
//! use cotan::{autodiff_forward, autodiff_reverse, check::Check};
//!
//! #[autodiff_forward(jf, Dual, Dual, Const, Dual)]
//! #[autodiff_reverse(df, Duplicated, Active, Const, Active)]
//! fn f(x: &[f64], y: f64, n: usize) -> f64 {
//!     let mut s = 0.0;
//!     for i in 0..n {
//!         s += (x[i] * y).exp();
//!     }
//!     s
//! }
//!
//! Check::new()
//!     .arg("x", &[0.1, 0.2, 0.3])
//!     .scalar("y", 0.7)
//!     .primal(|a| f(a.slice("x"), a.scalar("y"), 3))
//!     // Duplicated slices accumulate into their shadow; Active scalars' gradients are returned.
//!     .reverse(|a, d, dret| {
//!         let (value, dy) = df(a.slice("x"), d.slice_mut("x"), a.scalar("y"), 3, dret);
//!         *d.scalar_mut("y") += dy;
//!         value
//!     })
//!     .forward(|a, t| jf(a.slice("x"), t.slice("x"), a.scalar("y"), t.scalar("y"), 3))
//!     .run()
//!     .unwrap();
//! ```
//!
//! What [`Check::run`] checks, in order:
//!
//! 1. the value each derivative returns (or writes to the output buffer) equals the primal's;
//! 2. reverse mode accumulates: a second call on the same shadows adds the gradient again
//!    (catches custom rules that write `=` where they should write `+=`);
//! 3. the inner-product test: `<w, J v>` for a seeded random direction `v` (and output
//!    weights `w`) against central differences with one Richardson step, for each step
//!    size in turn (see [`Check::steps`]); it passes if one of them agrees. On failure the
//!    gradient is compared component by component to name the worst one;
//! 4. with both modes, the dot-product test `<J v, w> = <v, Jᵀ w>` to rounding;
//! 5. the primal gives the same value after the derivative calls as before (the point is
//!    passed by shared reference, so only state the closures capture could change it);
//! 6. with [`Check::no_allocations`], a steady-state derivative call allocates nothing.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::fmt;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Default relative tolerance of AD against finite differences.
pub const RTOL: f64 = 1e-6;
/// Relative tolerance of identities that hold to rounding: the dot-product test,
/// accumulation, and the value a derivative returns against the primal's.
pub const EXACT_RTOL: f64 = 1e-10;
/// Default step sizes, relative to `max(1, max |x_i|)`: large steps are the most accurate
/// on smooth functions, small ones the only valid ones near a kink or a domain edge.
pub const STEPS: [f64; 5] = [1e-2, 1e-3, 1e-4, 1e-5, 1e-6];

#[derive(Debug)]
struct Slot {
    name: String,
    start: usize,
    len: usize,
    scalar: bool,
}

/// Values of the named arguments, stored as one flat vector; the same layout is used for
/// the point, tangents and gradients.
#[derive(Clone, Debug)]
pub struct Args {
    slots: Rc<Vec<Slot>>,
    vals: Vec<f64>,
}

impl Args {
    fn slot(&self, name: &str, scalar: bool) -> &Slot {
        let Some(s) = self.slots.iter().find(|s| s.name == name) else {
            let names: Vec<&str> = self.slots.iter().map(|s| s.name.as_str()).collect();
            panic!("cotan::check: no argument named `{name}` (arguments: {})", names.join(", "));
        };
        if s.scalar != scalar {
            let (is, use_) = if s.scalar { ("a scalar", "scalar") } else { ("a slice", "slice") };
            panic!("cotan::check: argument `{name}` is {is}: read it with `{use_}(\"{name}\")`");
        }
        s
    }
    fn range(&self, name: &str, scalar: bool) -> std::ops::Range<usize> {
        let s = self.slot(name, scalar);
        s.start..s.start + s.len
    }

    /// The slice argument `name`.
    pub fn slice(&self, name: &str) -> &[f64] {
        &self.vals[self.range(name, false)]
    }
    /// The slice argument `name` as a mutable slice (a shadow, in reverse mode).
    pub fn slice_mut(&mut self, name: &str) -> &mut [f64] {
        let r = self.range(name, false);
        &mut self.vals[r]
    }
    /// The slice argument `name` as an array, for `&[f64; N]` parameters.
    pub fn array<const N: usize>(&self, name: &str) -> &[f64; N] {
        self.slice(name).try_into().unwrap_or_else(|_| panic!("cotan::check: argument `{name}` is not of length {N}"))
    }
    /// The slice argument `name` as a mutable array, for `&mut [f64; N]` shadows.
    pub fn array_mut<const N: usize>(&mut self, name: &str) -> &mut [f64; N] {
        self.slice_mut(name)
            .try_into()
            .unwrap_or_else(|_| panic!("cotan::check: argument `{name}` is not of length {N}"))
    }
    /// The scalar argument `name`.
    pub fn scalar(&self, name: &str) -> f64 {
        self.vals[self.range(name, true).start]
    }
    /// The scalar argument `name`, mutable: in reverse mode, add an `Active` argument's
    /// returned gradient to it (`*d.scalar_mut("y") += dy`).
    pub fn scalar_mut(&mut self, name: &str) -> &mut f64 {
        let i = self.range(name, true).start;
        &mut self.vals[i]
    }
    /// Several slice arguments, mutable at once: the shadows of a derivative with several
    /// `Duplicated` arguments (`let [dx, dz] = d.slices_mut(["x", "z"]);`).
    pub fn slices_mut<const N: usize>(&mut self, names: [&str; N]) -> [&mut [f64]; N] {
        let ranges = names.map(|n| self.range(n, false));
        let mut order: [usize; N] = std::array::from_fn(|i| i);
        order.sort_unstable_by_key(|&i| ranges[i].start);
        let mut out: [Option<&mut [f64]>; N] = std::array::from_fn(|_| None);
        let (mut rest, mut offset): (&mut [f64], usize) = (&mut self.vals, 0);
        for i in order {
            let r = &ranges[i];
            assert!(r.start >= offset, "cotan::check: argument `{}` named twice", names[i]);
            let (mine, tail) = std::mem::take(&mut rest)[r.start - offset..].split_at_mut(r.len());
            out[i] = Some(mine);
            (rest, offset) = (tail, r.end);
        }
        out.map(|s| s.expect("every name has a slice"))
    }
    /// All values, arguments in the order they were added.
    pub fn as_slice(&self) -> &[f64] {
        &self.vals
    }
    /// All values, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [f64] {
        &mut self.vals
    }

    /// Argument and component of flat index `i`.
    fn locate(&self, i: usize) -> Component {
        let s = self.slots.iter().find(|s| s.start <= i && i < s.start + s.len).expect("index in range");
        Component { arg: s.name.clone(), index: (!s.scalar).then_some(i - s.start) }
    }
    fn with_vals(&self, vals: Vec<f64>) -> Args {
        Args { slots: self.slots.clone(), vals }
    }
}

/// An argument and, for a slice, the index in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Component {
    /// The argument's name.
    pub arg: String,
    /// The index in a slice argument; `None` for a scalar argument.
    pub index: Option<usize>,
}

impl fmt::Display for Component {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self.index {
            Some(i) => write!(f, "{}[{i}]", self.arg),
            None => write!(f, "{}", self.arg),
        }
    }
}

/// Which derivative a result is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Forward mode (the derivative given with [`Check::forward`] or [`Check::forward_into`]).
    Forward,
    /// Reverse mode (the derivative given with [`Check::reverse`] or [`Check::reverse_into`]).
    Reverse,
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(match self {
            Mode::Forward => "forward",
            Mode::Reverse => "reverse",
        })
    }
}

type PrimalFn<'f> = Box<dyn FnMut(&Args, &mut [f64]) + 'f>;
type ForwardFn<'f> = Box<dyn FnMut(&Args, &Args, &mut [f64], &mut [f64]) + 'f>;
type ReverseFn<'f> = Box<dyn FnMut(&Args, &mut Args, &mut [f64], &mut [f64]) + 'f>;

/// A derivative check: arguments, the primal, one or both derivatives, and options.
/// Build it with the methods below, then call [`run`](Check::run).
pub struct Check<'f> {
    slots: Vec<Slot>,
    vals: Vec<f64>,
    outputs: Option<usize>,
    primal: Option<PrimalFn<'f>>,
    forward: Option<(ForwardFn<'f>, Option<usize>)>,
    reverse: Option<(ReverseFn<'f>, Option<usize>)>,
    rtol: f64,
    atol: Option<f64>,
    steps: Vec<f64>,
    seed: u64,
    no_allocations: bool,
}

impl Default for Check<'_> {
    fn default() -> Self {
        Check::new()
    }
}

impl<'f> Check<'f> {
    /// A check with no arguments yet, the default tolerances ([`RTOL`]), steps ([`STEPS`])
    /// and seed.
    pub fn new() -> Self {
        Check {
            slots: vec![],
            vals: vec![],
            outputs: None,
            primal: None,
            forward: None,
            reverse: None,
            rtol: RTOL,
            atol: None,
            steps: STEPS.to_vec(),
            seed: 0x636f_7461_6e21,
            no_allocations: false,
        }
    }

    fn push(mut self, name: &str, vals: &[f64], scalar: bool) -> Self {
        assert!(self.slots.iter().all(|s| s.name != name), "cotan::check: argument `{name}` given twice");
        self.slots.push(Slot { name: name.to_string(), start: self.vals.len(), len: vals.len(), scalar });
        self.vals.extend_from_slice(vals);
        self
    }
    /// A slice argument (`&[f64]`, `&[f64; N]`, `&Vec<f64>`) at the point `x`.
    pub fn arg(self, name: &str, x: &[f64]) -> Self {
        self.push(name, x, false)
    }
    /// A scalar argument (`f64`) at the point `x`.
    pub fn scalar(self, name: &str, x: f64) -> Self {
        self.push(name, &[x], true)
    }

    /// The primal of a scalar-valued function.
    pub fn primal(mut self, mut f: impl FnMut(&Args) -> f64 + 'f) -> Self {
        self.outputs = Some(1);
        self.primal = Some(Box::new(move |a, out| out[0] = f(a)));
        self
    }
    /// The primal of a function with `outputs` results, written into `out`
    /// (for `fn f(x: &[f64], out: &mut [f64])`).
    pub fn primal_into(mut self, outputs: usize, f: impl FnMut(&Args, &mut [f64]) + 'f) -> Self {
        self.outputs = Some(outputs);
        self.primal = Some(Box::new(f));
        self
    }
    /// Forward mode of a scalar-valued function: given the point and a tangent (same
    /// arguments), returns `(value, directional derivative)`, as `Dual, ..., Dual` does.
    pub fn forward(mut self, mut jf: impl FnMut(&Args, &Args) -> (f64, f64) + 'f) -> Self {
        self.forward = Some((
            Box::new(move |a, t, out, dout| {
                let (y, dy) = jf(a, t);
                (out[0], dout[0]) = (y, dy);
            }),
            Some(1),
        ));
        self
    }
    /// Forward mode of a function with results in `out`: given the point and a tangent,
    /// writes the results to `out` and their tangent to `dout` (both start at zero).
    pub fn forward_into(mut self, jf: impl FnMut(&Args, &Args, &mut [f64], &mut [f64]) + 'f) -> Self {
        self.forward = Some((Box::new(jf), None));
        self
    }
    /// Reverse mode of a scalar-valued function: given the point, shadows `d` (zero at
    /// the first call) and the seed `dret`, adds `dret * gradient` into `d` and returns
    /// the value.
    pub fn reverse(mut self, mut df: impl FnMut(&Args, &mut Args, f64) -> f64 + 'f) -> Self {
        self.reverse = Some((Box::new(move |a, d, out, dout| out[0] = df(a, d, dout[0])), Some(1)));
        self
    }
    /// Reverse mode of a function with results in `out`: given the point, shadows `d`, and
    /// the seed `dout` of the results, writes the results to `out` and adds `Jᵀ dout` into
    /// `d` (std's `Duplicated` convention for `out: &mut [f64]`).
    pub fn reverse_into(mut self, df: impl FnMut(&Args, &mut Args, &mut [f64], &mut [f64]) + 'f) -> Self {
        self.reverse = Some((Box::new(df), None));
        self
    }

    /// Relative tolerance against finite differences (default [`RTOL`]).
    pub fn rtol(mut self, rtol: f64) -> Self {
        self.rtol = rtol;
        self
    }
    /// Absolute tolerance against finite differences (default `1e-8 * max(1, max |f_k(x)|)`).
    pub fn atol(mut self, atol: f64) -> Self {
        self.atol = Some(atol);
        self
    }
    /// Step sizes to try, relative to `max(1, max |x_i|)` (default [`STEPS`]).
    pub fn steps(mut self, steps: &[f64]) -> Self {
        self.steps = steps.to_vec();
        self
    }
    /// Seed of the random directions.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }
    /// Also fail if a steady-state call of a derivative (after a warm-up call) allocates
    /// on the heap. Needs [`CountingAllocator`] installed as the test binary's global
    /// allocator; without it the check fails with [`Failure::AllocatorNotInstalled`].
    pub fn no_allocations(mut self) -> Self {
        self.no_allocations = true;
        self
    }

    /// Runs the checks. The error's `Debug` is its report, so `.unwrap()` in a test panics
    /// with a readable message.
    pub fn run(self) -> Result<Report, Failure> {
        Runner::new(self).run()
    }
}

/// Checks the gradient of `fn f(x: &[f64]) -> f64` by its reverse derivative
/// `df(x, dx, dret) -> f64` (`#[autodiff_reverse(df, Duplicated, Active)]`).
pub fn gradient(
    mut f: impl FnMut(&[f64]) -> f64,
    mut df: impl FnMut(&[f64], &mut [f64], f64) -> f64,
    x: &[f64],
) -> Result<Report, Failure> {
    Check::new()
        .arg("x", x)
        .primal(|a| f(a.slice("x")))
        .reverse(|a, d, dret| df(a.slice("x"), d.slice_mut("x"), dret))
        .run()
}

/// Checks the directional derivatives of `fn f(x: &[f64]) -> f64` by its forward
/// derivative `jf(x, dx) -> (f64, f64)` (`#[autodiff_forward(jf, Dual, Dual)]`).
pub fn jvp(
    mut f: impl FnMut(&[f64]) -> f64,
    mut jf: impl FnMut(&[f64], &[f64]) -> (f64, f64),
    x: &[f64],
) -> Result<Report, Failure> {
    Check::new().arg("x", x).primal(|a| f(a.slice("x"))).forward(|a, t| jf(a.slice("x"), t.slice("x"))).run()
}

/// An AD value against finite differences at each step tried.
#[derive(Clone, Debug)]
pub struct Comparison {
    /// The AD value.
    pub ad: f64,
    /// The finite-difference estimate at each step.
    pub fd: Vec<f64>,
    /// Absolute steps tried.
    pub steps: Vec<f64>,
}

impl Comparison {
    /// Index of the step whose estimate is closest to the AD value.
    pub fn best(&self) -> usize {
        let err = |k: usize| if self.fd[k].is_nan() { f64::INFINITY } else { (self.fd[k] - self.ad).abs() };
        (0..self.fd.len()).min_by(|a, b| err(*a).total_cmp(&err(*b))).unwrap_or(0)
    }
    /// The finite-difference estimate closest to the AD value.
    pub fn best_fd(&self) -> f64 {
        self.fd.get(self.best()).copied().unwrap_or(f64::NAN)
    }
    /// The most trustworthy estimate when AD disagrees: the one that changes least to a
    /// neighbouring step (truncation error shrinks and rounding error grows with the step,
    /// so estimates are most stable near the best step).
    pub fn fd_estimate(&self) -> f64 {
        let change = |k: usize| {
            let near = [k.checked_sub(1), Some(k + 1)];
            let d = near.iter().flatten().filter_map(|&j| self.fd.get(j)).map(|e| (e - self.fd[k]).abs());
            d.fold(f64::INFINITY, f64::min)
        };
        let k = (0..self.fd.len()).min_by(|a, b| change(*a).total_cmp(&change(*b)));
        k.map_or(f64::NAN, |k| self.fd[k])
    }
    /// Absolute error of the closest estimate.
    pub fn error(&self) -> f64 {
        let e = (self.best_fd() - self.ad).abs();
        if e.is_nan() {
            f64::INFINITY
        } else {
            e
        }
    }
}

/// What passed.
#[derive(Clone, Debug)]
pub struct Report {
    /// Each argument's name and length (`None` for a scalar).
    pub args: Vec<(String, Option<usize>)>,
    /// Number of results.
    pub outputs: usize,
    /// Inner-product tests, by mode.
    pub inner_products: Vec<(Mode, Comparison)>,
    /// `(<J v, w>, <v, Jᵀ w>)` when both modes were given.
    pub dot_product: Option<(f64, f64)>,
    /// Heap allocations of one steady-state call, by mode, if counted.
    pub allocations: Vec<(Mode, u64)>,
}

/// Why a check failed. Its `Display` (and `Debug`) is a readable report.
#[derive(Clone)]
#[non_exhaustive]
pub enum Failure {
    /// The function's value at the point is not finite, so nothing can be compared.
    NotFinite {
        /// Which output (0 for a scalar function).
        output: usize,
        /// Its value.
        value: f64,
    },
    /// A derivative returned (or wrote to `out`) a value other than the primal's.
    PrimalValue {
        /// The derivative's mode.
        mode: Mode,
        /// Which output (0 for a scalar function).
        output: usize,
        /// The primal's value.
        primal: f64,
        /// The value the derivative returned or wrote.
        derivative: f64,
    },
    /// A second reverse call on the same shadows did not add the gradient again.
    NotAccumulated {
        /// The shadow's component.
        component: Component,
        /// Its value after one reverse call.
        first: f64,
        /// Its value after a second call on the same shadow (should be twice `first`).
        second: f64,
    },
    /// The inner-product test against finite differences failed at every step.
    FiniteDifferences {
        /// The derivative's mode.
        mode: Mode,
        /// `<w, J v>` by AD and by finite differences.
        inner_product: Box<Comparison>,
        /// The component with the largest error, with its own comparison: the partial
        /// derivative (weighted by `w` for several outputs) by AD and by finite differences.
        worst: Component,
        /// The comparison at that component.
        worst_comparison: Box<Comparison>,
    },
    /// `<J v, w> != <v, Jᵀ w>`: forward and reverse disagree.
    DotProduct {
        /// `<J v, w>` by forward mode.
        forward: f64,
        /// `<v, Jᵀ w>` by reverse mode.
        reverse: f64,
        /// The component where `<w, J e_i>` and `(Jᵀ w)_i` differ most, and both values.
        worst: Component,
        /// `<w, J e_i>` at that component, by forward mode.
        worst_forward: f64,
        /// `(Jᵀ w)_i` at that component, by reverse mode.
        worst_reverse: f64,
    },
    /// The primal gave a different result after the derivative calls than before.
    PrimalChanged {
        /// Which output (0 for a scalar function).
        output: usize,
        /// The primal's value before the derivative calls.
        before: f64,
        /// Its value after them.
        after: f64,
    },
    /// A steady-state derivative call allocated.
    Allocations {
        /// The derivative's mode.
        mode: Mode,
        /// Heap allocations of one steady-state call.
        count: u64,
    },
    /// [`Check::no_allocations`] was asked for but [`CountingAllocator`] is not installed.
    AllocatorNotInstalled,
}

impl Failure {
    /// The argument component the failure is about, if it names one.
    pub fn component(&self) -> Option<&Component> {
        match self {
            Failure::NotAccumulated { component, .. } => Some(component),
            Failure::FiniteDifferences { worst, .. } | Failure::DotProduct { worst, .. } => Some(worst),
            _ => None,
        }
    }
}

fn write_steps(f: &mut fmt::Formatter, c: &Comparison) -> fmt::Result {
    writeln!(f, "    {:>10}  {:>24}  {:>24}  {:>10}", "step h", "finite differences", "AD", "rel. error")?;
    for (h, fd) in c.steps.iter().zip(&c.fd) {
        let rel = (fd - c.ad).abs() / fd.abs().max(c.ad.abs());
        writeln!(f, "    {h:>10.0e}  {fd:>24.16e}  {:>24.16e}  {rel:>10.1e}", c.ad)?;
    }
    Ok(())
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "cotan::check failed: ")?;
        match self {
            Failure::NotFinite { output, value } => {
                writeln!(f, "the primal's result {output} is {value} at the point: choose a point where it is finite")
            }
            Failure::PrimalValue { mode, output, primal, derivative } => writeln!(
                f,
                "the {mode} derivative's value of result {output} is {derivative:e}, the primal's is {primal:e}"
            ),
            Failure::NotAccumulated { component, first, second } => writeln!(
                f,
                "reverse mode does not accumulate into the shadow of {component}: it held {first:e} after one \
                 call and {second:e} after a second call, not {:e} (a rule writes `=` where it should write `+=`, \
                 or clears the shadow)",
                2.0 * first
            ),
            Failure::FiniteDifferences { mode, inner_product, worst, worst_comparison } => {
                let what = match mode {
                    Mode::Reverse => "reverse-mode gradient",
                    Mode::Forward => "forward-mode directional derivative",
                };
                writeln!(f, "the {what} disagrees with finite differences")?;
                writeln!(
                    f,
                    "  largest error at {worst}: AD {:e}, finite differences {:e} (the most stable estimate below)",
                    worst_comparison.ad,
                    worst_comparison.fd_estimate()
                )?;
                write_steps(f, worst_comparison)?;
                writeln!(f, "  inner-product test <w, J v> along a random direction v:")?;
                write_steps(f, inner_product)
            }
            Failure::DotProduct { forward, reverse, worst, worst_forward, worst_reverse } => {
                writeln!(f, "forward and reverse mode disagree (dot-product test)")?;
                writeln!(f, "  <J v, w> = {forward:e} (forward), <v, Jᵀ w> = {reverse:e} (reverse)")?;
                writeln!(f, "  largest difference at {worst}: forward {worst_forward:e}, reverse {worst_reverse:e}")
            }
            Failure::PrimalChanged { output, before, after } => writeln!(
                f,
                "the primal's result {output} was {before:e} before the derivative calls and {after:e} after: \
                 a derivative changed state that the primal reads"
            ),
            Failure::Allocations { mode, count } => {
                writeln!(f, "a steady-state {mode} derivative call made {count} heap allocation(s)")
            }
            Failure::AllocatorNotInstalled => writeln!(
                f,
                "no_allocations() cannot count allocations: install the counter in the test binary with \
                 `#[global_allocator] static A: cotan::check::CountingAllocator = cotan::check::CountingAllocator;`"
            ),
        }
    }
}

// Debug is the report too, so that `.unwrap()` prints it readably.
impl fmt::Debug for Failure {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        writeln!(f)?;
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for Failure {}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let args: Vec<String> = self
            .args
            .iter()
            .map(|(n, len)| match len {
                Some(l) => format!("{n}[{l}]"),
                None => n.clone(),
            })
            .collect();
        writeln!(f, "cotan::check passed: arguments {}, {} result(s)", args.join(", "), self.outputs)?;
        writeln!(f, "  {:<32}  {:>24}  {:>24}", "check", "AD", "reference")?;
        for (mode, c) in &self.inner_products {
            let label = format!("{mode}: <w, J v> vs FD h={:.0e}", c.steps.get(c.best()).copied().unwrap_or(0.0));
            writeln!(f, "  {label:<32}  {:>24.16e}  {:>24.16e}", c.ad, c.best_fd())?;
        }
        if let Some((fw, rv)) = self.dot_product {
            writeln!(f, "  {:<32}  {fw:>24.16e}  {rv:>24.16e}", "<J v, w> vs <v, Jᵀ w>")?;
        }
        for (mode, n) in &self.allocations {
            writeln!(f, "  {:<32}  {n:>24}", format!("{mode}: allocations"))?;
        }
        Ok(())
    }
}

/// splitmix64: deterministic directions without a dependency.
struct Rng(u64);

impl Rng {
    /// Uniform in [-1, 1).
    fn signed(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn close(a: f64, b: f64, rtol: f64, atol: f64) -> bool {
    a == b || (a - b).abs() <= (rtol * a.abs().max(b.abs())).max(atol)
}

struct Runner<'f> {
    c: Check<'f>,
    x: Args,
    m: usize,
    y: Vec<f64>,
    steps: Vec<f64>,
    atol: f64,
    out: Vec<f64>,
    dout: Vec<f64>,
}

impl<'f> Runner<'f> {
    fn new(mut c: Check<'f>) -> Self {
        let m = c.outputs.expect("cotan::check: give the primal with .primal(..) or .primal_into(..)");
        assert!(
            c.forward.is_some() || c.reverse.is_some(),
            "cotan::check: give a derivative with .forward(..), .reverse(..) or their _into forms"
        );
        for (mode, k) in [
            (Mode::Forward, c.forward.as_ref().and_then(|f| f.1)),
            (Mode::Reverse, c.reverse.as_ref().and_then(|r| r.1)),
        ] {
            if let Some(k) = k {
                assert!(k == m, "cotan::check: the {mode} derivative is scalar-valued but the primal has {m} results");
            }
        }
        let x = Args { slots: Rc::new(std::mem::take(&mut c.slots)), vals: std::mem::take(&mut c.vals) };
        let scale = x.vals.iter().fold(1.0f64, |s, v| s.max(v.abs()));
        let steps = c.steps.iter().map(|h| h * scale).collect();
        Runner { c, x, m, y: vec![0.0; m], steps, atol: 0.0, out: vec![0.0; m], dout: vec![0.0; m] }
    }

    fn primal_at(&mut self, vals: &Args) -> &[f64] {
        self.out.fill(0.0);
        (self.c.primal.as_mut().unwrap())(vals, &mut self.out);
        &self.out
    }

    /// `<w, (F(x + h d) - F(x - h d)) / 2h>` with one Richardson step, at each step.
    fn fd(&mut self, dir: &[f64], w: &[f64]) -> Vec<f64> {
        let mut shifted = self.x.clone();
        let mut at = |this: &mut Self, h: f64| {
            for (s, (x, d)) in shifted.vals.iter_mut().zip(this.x.vals.iter().zip(dir)) {
                *s = x + h * d;
            }
            let p = dot(w, this.primal_at(&shifted));
            for (s, (x, d)) in shifted.vals.iter_mut().zip(this.x.vals.iter().zip(dir)) {
                *s = x - h * d;
            }
            (p - dot(w, this.primal_at(&shifted))) / (2.0 * h)
        };
        let steps = self.steps.clone();
        steps
            .iter()
            .map(|&h| {
                let (d1, d2) = (at(self, h), at(self, h / 2.0));
                (4.0 * d2 - d1) / 3.0
            })
            .collect()
    }

    fn compare(&mut self, ad: f64, dir: &[f64], w: &[f64]) -> (Comparison, bool) {
        let fd = self.fd(dir, w);
        let ok = fd.iter().any(|e| close(ad, *e, self.c.rtol, self.atol));
        (Comparison { ad, fd, steps: self.steps.clone() }, ok)
    }

    fn unit(&self, i: usize) -> Vec<f64> {
        let mut e = vec![0.0; self.x.vals.len()];
        e[i] = 1.0;
        e
    }

    /// The component whose AD value (given by `ad_i`) is furthest from finite differences.
    fn worst(&mut self, w: &[f64], mut ad_i: impl FnMut(&mut Self, usize) -> f64) -> (Component, Comparison) {
        let mut worst: Option<(usize, Comparison)> = None;
        for i in 0..self.x.vals.len() {
            let ad = ad_i(self, i);
            let e = self.unit(i);
            let (c, _) = self.compare(ad, &e, w);
            if !matches!(&worst, Some((_, b)) if b.error() >= c.error()) {
                worst = Some((i, c));
            }
        }
        let (i, c) = worst.expect("at least one argument");
        (self.x.locate(i), c)
    }

    fn check_value(&self, mode: Mode, got: &[f64]) -> Result<(), Failure> {
        let scale = self.y.iter().fold(0.0f64, |s, v| s.max(v.abs()));
        for (k, (p, d)) in self.y.iter().zip(got).enumerate() {
            if !close(*p, *d, EXACT_RTOL, EXACT_RTOL * scale) {
                return Err(Failure::PrimalValue { mode, output: k, primal: *p, derivative: *d });
            }
        }
        Ok(())
    }

    /// Derivative calls get the point by shared reference; only captured state can change,
    /// and then the primal sees it.
    fn check_unchanged(&mut self) -> Result<(), Failure> {
        let x = self.x.clone();
        let again = self.primal_at(&x).to_vec();
        for (k, (before, after)) in self.y.iter().zip(&again).enumerate() {
            if before.to_bits() != after.to_bits() {
                return Err(Failure::PrimalChanged { output: k, before: *before, after: *after });
            }
        }
        Ok(())
    }

    fn call_reverse(&mut self, g: &mut Args, w: &[f64]) {
        self.out.fill(0.0);
        self.dout.copy_from_slice(w);
        (self.c.reverse.as_mut().unwrap().0)(&self.x, g, &mut self.out, &mut self.dout);
    }

    fn call_forward(&mut self, t: &Args) {
        self.out.fill(0.0);
        self.dout.fill(0.0);
        (self.c.forward.as_mut().unwrap().0)(&self.x, t, &mut self.out, &mut self.dout);
    }

    fn run(mut self) -> Result<Report, Failure> {
        let n = self.x.vals.len();
        let x = self.x.clone();
        self.y = self.primal_at(&x).to_vec();
        if let Some((k, v)) = self.y.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(Failure::NotFinite { output: k, value: *v });
        }
        let yscale = self.y.iter().fold(1.0f64, |s, v| s.max(v.abs()));
        self.atol = self.c.atol.unwrap_or(1e-8 * yscale);
        let mut rng = Rng(self.c.seed);
        let v: Vec<f64> = (0..n).map(|_| rng.signed()).collect();
        // One result: the plain gradient; several: random weights.
        let w: Vec<f64> = if self.m == 1 { vec![1.0] } else { (0..self.m).map(|_| rng.signed()).collect() };
        let mut report = Report {
            args: x.slots.iter().map(|s| (s.name.clone(), (!s.scalar).then_some(s.len))).collect(),
            outputs: self.m,
            inner_products: vec![],
            dot_product: None,
            allocations: vec![],
        };
        let zeros = x.with_vals(vec![0.0; n]);

        // Reverse: value, accumulation, then finite differences.
        let mut grad = None;
        if self.c.reverse.is_some() {
            let mut g = zeros.clone();
            self.call_reverse(&mut g, &w);
            self.check_value(Mode::Reverse, &self.out.clone())?;
            let mut g2 = g.clone();
            self.call_reverse(&mut g2, &w);
            self.check_unchanged()?;
            let gscale = g.vals.iter().fold(0.0f64, |s, v| s.max(v.abs()));
            for i in 0..n {
                let (first, second) = (g.vals[i], g2.vals[i]);
                if !close(second, 2.0 * first, EXACT_RTOL, EXACT_RTOL * gscale) {
                    return Err(Failure::NotAccumulated { component: x.locate(i), first, second });
                }
            }
            let (cmp, ok) = self.compare(dot(&g.vals, &v), &v, &w);
            if !ok {
                let (worst, worst_comparison) = self.worst(&w, |_, i| g.vals[i]);
                return Err(Failure::FiniteDifferences {
                    mode: Mode::Reverse,
                    inner_product: Box::new(cmp),
                    worst,
                    worst_comparison: Box::new(worst_comparison),
                });
            }
            report.inner_products.push((Mode::Reverse, cmp));
            grad = Some(g);
        }

        // Forward: value, dot-product test against reverse (exact, so first), then finite differences.
        if self.c.forward.is_some() {
            let t = x.with_vals(v.clone());
            self.call_forward(&t);
            self.check_value(Mode::Forward, &self.out.clone())?;
            let jv_vec = self.dout.clone();
            self.check_unchanged()?;
            let jv = dot(&w, &jv_vec);
            let forward_i = |this: &mut Self, i: usize| {
                this.call_forward(&x.with_vals(this.unit(i)));
                dot(&w, &this.dout)
            };
            if let Some(g) = &grad {
                let rev = dot(&v, &g.vals);
                let mag = jv_vec.iter().zip(&w).map(|(a, b)| (a * b).abs()).sum::<f64>();
                let mag = mag.max(v.iter().zip(&g.vals).map(|(a, b)| (a * b).abs()).sum());
                if !close(jv, rev, EXACT_RTOL, EXACT_RTOL * mag) {
                    let (mut worst, mut largest) = ((0, 0.0, 0.0), -1.0);
                    for i in 0..n {
                        let (fw, rv) = (forward_i(&mut self, i), g.vals[i]);
                        let d = (fw - rv).abs();
                        if d.is_nan() || d > largest {
                            (worst, largest) = ((i, fw, rv), if d.is_nan() { f64::INFINITY } else { d });
                        }
                    }
                    return Err(Failure::DotProduct {
                        forward: jv,
                        reverse: rev,
                        worst: x.locate(worst.0),
                        worst_forward: worst.1,
                        worst_reverse: worst.2,
                    });
                }
                report.dot_product = Some((jv, rev));
            }
            let (cmp, ok) = self.compare(jv, &v, &w);
            if !ok {
                let (worst, worst_comparison) = self.worst(&w, forward_i);
                return Err(Failure::FiniteDifferences {
                    mode: Mode::Forward,
                    inner_product: Box::new(cmp),
                    worst,
                    worst_comparison: Box::new(worst_comparison),
                });
            }
            report.inner_products.push((Mode::Forward, cmp));
        }

        self.check_unchanged()?;

        if self.c.no_allocations {
            if !CountingAllocator::is_installed() {
                return Err(Failure::AllocatorNotInstalled);
            }
            // Every derivative has run at least once above: this is a steady-state call.
            if self.c.reverse.is_some() {
                let mut g = zeros.clone();
                let before = CountingAllocator::count();
                self.call_reverse(&mut g, &w);
                let count = CountingAllocator::count() - before;
                if count > 0 {
                    return Err(Failure::Allocations { mode: Mode::Reverse, count });
                }
                report.allocations.push((Mode::Reverse, count));
            }
            if self.c.forward.is_some() {
                let t = x.with_vals(v.clone());
                let before = CountingAllocator::count();
                self.call_forward(&t);
                let count = CountingAllocator::count() - before;
                if count > 0 {
                    return Err(Failure::Allocations { mode: Mode::Forward, count });
                }
                report.allocations.push((Mode::Forward, count));
            }
        }
        Ok(report)
    }
}

/// A global allocator that counts heap allocations per thread, for
/// [`Check::no_allocations`]. Install it in a test binary:
///
/// ```
/// #[global_allocator]
/// static A: cotan::check::CountingAllocator = cotan::check::CountingAllocator;
/// ```
pub struct CountingAllocator;

thread_local! {
    // Const-initialised and without a destructor, so using it never allocates.
    static COUNT: Cell<u64> = const { Cell::new(0) };
}
static INSTALLED: AtomicBool = AtomicBool::new(false);

impl CountingAllocator {
    fn note(&self) {
        if !INSTALLED.load(Ordering::Relaxed) {
            INSTALLED.store(true, Ordering::Relaxed);
        }
        let _ = COUNT.try_with(|c| c.set(c.get() + 1));
    }
    /// Allocations (and reallocations) made by this thread so far.
    pub fn count() -> u64 {
        COUNT.try_with(|c| c.get()).unwrap_or(0)
    }
    /// Whether this is the global allocator (it has served an allocation).
    pub fn is_installed() -> bool {
        INSTALLED.load(Ordering::Relaxed)
    }
}

// SAFETY: every call is forwarded unchanged to the system allocator.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.note();
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        self.note();
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        self.note();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
