//! The runner's machinery: rows as sets of closures, the gradient check against finite
//! differences, timing (median of batched samples), and allocation counting.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A global allocator that counts allocations (installed by the runner binary).
pub struct CountingAlloc;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);
/// Bytes allocated and not yet freed, and the most there have been since [`reset_peak`].
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grow(bytes: usize) {
    let live = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        grow(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        grow(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // (Counted as the new block allocated before the old one is freed, as it may be.)
        grow(new_size);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Allocations so far (0 unless [`CountingAlloc`] is the global allocator).
pub fn allocations() -> usize {
    ALLOCATIONS.load(Ordering::Relaxed)
}

/// Starts a peak measurement: returns the bytes allocated now, and makes them the peak.
pub fn reset_peak() -> usize {
    let live = LIVE.load(Ordering::Relaxed);
    PEAK.store(live, Ordering::Relaxed);
    live
}

/// The most bytes allocated at once since [`reset_peak`] (0 unless [`CountingAlloc`] is
/// the global allocator).
pub fn peak_bytes() -> usize {
    PEAK.load(Ordering::Relaxed)
}

/// The columns of the tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Column {
    /// cotan reverse, `Active` result (value and gradient).
    Rev,
    /// cotan reverse, `ActiveOnly` (gradient only).
    RevOnly,
    /// One cotan forward-mode JVP.
    Fwd,
    /// Hand-written adjoint.
    Hand,
    /// num-dual, one JVP.
    NdJvp,
    /// num-dual, the full gradient in one pass of `DualSVec64<n>`.
    NdGrad,
    /// echidna's tape-based reverse mode (or its HVP).
    Tape,
    /// Central finite differences, full gradient (2n primal calls).
    Fd,
    /// cotan `#[cotan::hvp]`.
    Hvp,
}

impl Column {
    pub const FIRST_ORDER: [Column; 8] = [
        Column::Rev,
        Column::RevOnly,
        Column::Fwd,
        Column::Hand,
        Column::NdJvp,
        Column::NdGrad,
        Column::Tape,
        Column::Fd,
    ];
    pub const SECOND_ORDER: [Column; 4] = [Column::Hvp, Column::Hand, Column::Tape, Column::NdJvp];

    pub fn id(self) -> &'static str {
        match self {
            Column::Rev => "cotan_rev",
            Column::RevOnly => "cotan_rev_only",
            Column::Fwd => "cotan_fwd",
            Column::Hand => "hand",
            Column::NdJvp => "num_dual_jvp",
            Column::NdGrad => "num_dual_grad",
            Column::Tape => "echidna",
            Column::Fd => "fd",
            Column::Hvp => "cotan_hvp",
        }
    }

    pub fn title(self, second_order: bool) -> &'static str {
        match (self, second_order) {
            (Column::Rev, _) => "cotan rev",
            (Column::RevOnly, _) => "cotan rev (ActiveOnly)",
            (Column::Fwd, _) => "cotan fwd (1 JVP)",
            (Column::Hand, false) => "hand adjoint",
            (Column::Hand, true) => "hand HVP",
            (Column::NdJvp, false) => "num-dual JVP",
            (Column::NdJvp, true) => "num-dual",
            (Column::NdGrad, _) => "num-dual grad",
            (Column::Tape, false) => "echidna (tape)",
            (Column::Tape, true) => "echidna HVP",
            (Column::Fd, _) => "central FD",
            (Column::Hvp, _) => "cotan hvp",
        }
    }
}

/// A full-gradient call: adds ∇f into `g` and returns f (NaN if it does not compute it).
pub type GradFn = Box<dyn Fn(&[f64], &mut [f64]) -> f64>;
/// The primal: f(x).
pub type PrimalFn = Box<dyn Fn(&[f64]) -> f64>;
/// A JVP call: returns the directional derivative along `v`.
pub type JvpFn = Box<dyn Fn(&[f64], &[f64]) -> f64>;
/// A Hessian-vector product: overwrites `grad` with ∇f and `hv` with ∇²f·v, returns f
/// (NaN if it does not compute it).
pub type HvpFn = Box<dyn Fn(&[f64], &[f64], &mut [f64], &mut [f64]) -> f64>;

pub enum Kind {
    Grad(GradFn),
    Jvp(JvpFn),
    Hvp(HvpFn),
    NotApplicable(&'static str),
}

/// One row: its differentiated inputs, flattened, the primal and the derivative columns.
pub struct Row {
    pub name: &'static str,
    pub x: Vec<f64>,
    pub primal: PrimalFn,
    pub columns: Vec<(Column, Kind)>,
    /// Finite-difference step, relative to max(1, |xᵢ|).
    pub fd_step: f64,
    /// Step for the directional difference that checks JVPs (default: `fd_step`).
    pub fd_dir_step: Option<f64>,
    pub second_order: bool,
}

impl Row {
    pub fn new(name: &'static str, x: Vec<f64>, primal: impl Fn(&[f64]) -> f64 + 'static) -> Row {
        Row {
            name,
            x,
            primal: Box::new(primal),
            columns: vec![],
            fd_step: 1e-4,
            fd_dir_step: None,
            second_order: false,
        }
    }
    pub fn grad(mut self, c: Column, f: impl Fn(&[f64], &mut [f64]) -> f64 + 'static) -> Row {
        self.columns.push((c, Kind::Grad(Box::new(f))));
        self
    }
    pub fn jvp(mut self, c: Column, f: impl Fn(&[f64], &[f64]) -> f64 + 'static) -> Row {
        self.columns.push((c, Kind::Jvp(Box::new(f))));
        self
    }
    pub fn hvp(mut self, c: Column, f: impl Fn(&[f64], &[f64], &mut [f64], &mut [f64]) -> f64 + 'static) -> Row {
        self.second_order = true;
        self.columns.push((c, Kind::Hvp(Box::new(f))));
        self
    }
    pub fn na(mut self, c: Column, reason: &'static str) -> Row {
        self.columns.push((c, Kind::NotApplicable(reason)));
        self
    }
    pub fn fd_step(mut self, h: f64) -> Row {
        self.fd_step = h;
        self
    }
    pub fn fd_dir_step(mut self, h: f64) -> Row {
        self.fd_dir_step = Some(h);
        self
    }
}

/// What a cell of the table holds.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// Median time of one call, ns.
    Time(f64),
    NotApplicable(String),
    /// The derivative did not match finite differences (relative error given).
    Failed(String),
}

pub struct RowResult {
    pub name: &'static str,
    pub n: usize,
    pub second_order: bool,
    pub primal_ns: f64,
    pub cells: Vec<(Column, Cell)>,
    /// Heap allocations per steady-state derivative call (cotan rev, or cotan hvp) minus
    /// those of the primal call.
    pub extra_allocs: Option<f64>,
    /// Heap allocations per primal call.
    pub primal_allocs: f64,
    /// The largest relative error seen by the check, per column.
    pub check_errors: Vec<(Column, f64)>,
}

impl RowResult {
    pub fn ratio(&self, c: Column) -> Option<f64> {
        self.cells.iter().find(|(k, _)| *k == c).and_then(|(_, cell)| match cell {
            Cell::Time(t) => Some(t / self.primal_ns),
            _ => None,
        })
    }
}

/// A small deterministic RNG (SplitMix64), so every run sees the same inputs.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let u = 1.0 - self.uniform();
        let v = self.uniform();
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
    pub fn normals(&mut self, n: usize, scale: f64) -> Vec<f64> {
        (0..n).map(|_| scale * self.normal()).collect()
    }
    pub fn uniforms(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f64> {
        (0..n).map(|_| lo + (hi - lo) * self.uniform()).collect()
    }
}

/// Relative error tolerated by the gradient check.
pub const TOLERANCE: f64 = 1e-6;

/// Derivative of `f` at `x` along `v` by central differences with one Richardson step
/// (error O(h⁴)).
pub fn fd_directional(f: &dyn Fn(&[f64]) -> f64, x: &[f64], v: &[f64], h: f64) -> f64 {
    let at = |t: f64| {
        let y: Vec<f64> = x.iter().zip(v).map(|(a, b)| a + t * b).collect();
        f(&y)
    };
    let d1 = (at(h) - at(-h)) / (2.0 * h);
    let d2 = (at(2.0 * h) - at(-2.0 * h)) / (4.0 * h);
    (4.0 * d1 - d2) / 3.0
}

fn unit(n: usize, i: usize, scale: f64) -> Vec<f64> {
    let mut e = vec![0.0; n];
    e[i] = scale;
    e
}

/// Relative error of `got` against the reference `want`, with `scale` the largest reference
/// magnitude (entries far below it are compared against a thousandth of it).
pub fn rel_err(got: f64, want: f64, scale: f64) -> f64 {
    if !got.is_finite() {
        return f64::INFINITY;
    }
    (got - want).abs() / (want.abs() + 1e-3 * scale + 1e-300)
}

/// The coordinates the check looks at: all of them for small rows, else 12 spread at random
/// plus the first and the last.
pub fn check_coords(n: usize, rng: &mut Rng) -> Vec<usize> {
    if n <= 40 {
        return (0..n).collect();
    }
    let mut c: Vec<usize> = (0..12).map(|_| (rng.next_u64() % n as u64) as usize).collect();
    c.push(0);
    c.push(n - 1);
    c.sort_unstable();
    c.dedup();
    c
}

/// Checks every derivative column of `row` against finite differences; returns the
/// largest relative error per column.
pub fn check_row(row: &Row, v: &[f64], rng: &mut Rng) -> Vec<(Column, f64)> {
    let n = row.x.len();
    let coords = check_coords(n, rng);
    let x = &row.x;
    let scaled = |i: usize| row.fd_step * x[i].abs().max(1.0);
    let mut out = vec![];
    if row.second_order {
        // Reference Hv: finite differences of the gradient (taken from the cotan hvp column,
        // whose gradient output is checked against differences of the primal first).
        let Some(reference) = row.columns.iter().find_map(|(c, k)| match k {
            Kind::Hvp(f) if *c == Column::Hvp => Some(f),
            _ => None,
        }) else {
            return out;
        };
        let (mut g, mut hv) = (vec![0.0; n], vec![0.0; n]);
        reference(x, v, &mut g, &mut hv);
        let gfd: Vec<f64> =
            coords.iter().map(|&i| fd_directional(&*row.primal, x, &unit(n, i, 1.0), scaled(i))).collect();
        let gscale = gfd.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let gerr = coords.iter().zip(&gfd).map(|(&i, &w)| rel_err(g[i], w, gscale)).fold(0.0, f64::max);
        let vnorm = v.iter().fold(0.0f64, |m, a| m.max(a.abs()));
        let h = row.fd_step * x.iter().fold(1.0f64, |m, a| m.max(a.abs())) / vnorm.max(1e-300);
        let grad_at = |t: f64| {
            let y: Vec<f64> = x.iter().zip(v).map(|(a, b)| a + t * b).collect();
            let (mut g, mut hv) = (vec![0.0; n], vec![0.0; n]);
            reference(&y, v, &mut g, &mut hv);
            g
        };
        let (p1, m1, p2, m2) = (grad_at(h), grad_at(-h), grad_at(2.0 * h), grad_at(-2.0 * h));
        let hfd: Vec<f64> =
            coords.iter().map(|&i| (4.0 * (p1[i] - m1[i]) / (2.0 * h) - (p2[i] - m2[i]) / (4.0 * h)) / 3.0).collect();
        let hscale = hfd.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for (c, k) in &row.columns {
            if let Kind::Hvp(f) = k {
                let (mut g, mut hv) = (vec![0.0; n], vec![0.0; n]);
                f(x, v, &mut g, &mut hv);
                let herr = coords.iter().zip(&hfd).map(|(&i, &w)| rel_err(hv[i], w, hscale)).fold(0.0, f64::max);
                let gerr_c = coords.iter().zip(&gfd).map(|(&i, &w)| rel_err(g[i], w, gscale)).fold(0.0, f64::max);
                out.push((*c, herr.max(gerr_c).max(if *c == Column::Hvp { gerr } else { 0.0 })));
            }
        }
        return out;
    }
    let gfd: Vec<f64> = coords.iter().map(|&i| fd_directional(&*row.primal, x, &unit(n, i, 1.0), scaled(i))).collect();
    let scale = gfd.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let vscale = x.iter().fold(1.0f64, |m, a| m.max(a.abs()));
    let dfd = fd_directional(&*row.primal, x, v, row.fd_dir_step.unwrap_or(row.fd_step) * vscale);
    let value = (row.primal)(x);
    for (c, k) in &row.columns {
        let err = match k {
            Kind::Grad(f) => {
                let mut g = vec![0.0; n];
                let val = f(x, &mut g);
                let verr = if val.is_nan() { 0.0 } else { rel_err(val, value, value.abs()) };
                coords.iter().zip(&gfd).map(|(&i, &w)| rel_err(g[i], w, scale)).fold(verr, f64::max)
            }
            Kind::Jvp(f) => rel_err(f(x, v), dfd, dfd.abs()),
            _ => continue,
        };
        out.push((*c, err));
    }
    out
}

/// How long to measure.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Target duration of one sample (a batch of calls).
    pub sample: Duration,
    /// Samples wanted per cell (fewer if `per_cell` runs out, at least 3).
    pub samples: usize,
    pub per_cell: Duration,
    pub warmup: Duration,
}

impl Budget {
    pub fn full() -> Budget {
        Budget {
            sample: Duration::from_millis(1),
            samples: 41,
            per_cell: Duration::from_millis(3000),
            warmup: Duration::from_millis(100),
        }
    }
    pub fn quick() -> Budget {
        Budget {
            sample: Duration::from_micros(50),
            samples: 7,
            per_cell: Duration::from_millis(120),
            warmup: Duration::from_millis(5),
        }
    }
}

/// Median time of one call of `f`, ns: warm-up, then samples of batches of calls, each
/// batch lasting at least `budget.sample`; `reset` runs on the state before each sample,
/// untimed (shadows are re-zeroed there; within a batch gradients accumulate, which does
/// not change the cost).
pub fn time_ns<S>(state: &mut S, f: &mut dyn FnMut(&mut S), reset: &mut dyn FnMut(&mut S), budget: Budget) -> f64 {
    let t0 = Instant::now();
    let mut calls = 0u32;
    while calls == 0 || t0.elapsed() < budget.warmup {
        reset(state);
        f(state);
        calls += 1;
    }
    let per = t0.elapsed().as_secs_f64() / calls as f64;
    let batch = ((budget.sample.as_secs_f64() / per).ceil() as usize).max(1);
    let affordable = (budget.per_cell.as_secs_f64() / (per * batch as f64)) as usize;
    let samples = affordable.clamp(3, budget.samples.max(3));
    let mut times: Vec<f64> = (0..samples)
        .map(|_| {
            reset(state);
            let t = Instant::now();
            for _ in 0..batch {
                f(state);
            }
            t.elapsed().as_secs_f64() * 1e9 / batch as f64
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[samples / 2]
}

/// Allocations per call of `f` in steady state (after two warm-up calls).
pub fn allocs_per_call<S>(state: &mut S, f: &mut dyn FnMut(&mut S)) -> f64 {
    f(state);
    f(state);
    let reps = 5;
    let before = allocations();
    for _ in 0..reps {
        f(state);
    }
    (allocations() - before) as f64 / reps as f64
}

/// Rows with at most this many inputs get the full-gradient forward-mode and FD columns.
pub const SMALL: usize = 100;

/// Central finite differences for the full gradient: 2n primal calls (plain two-point
/// formula, step 1e-6·max(1, |xᵢ|)); the cost FD would have in practice.
pub fn fd_gradient(f: &dyn Fn(&[f64]) -> f64, x: &[f64], g: &mut [f64], work: &mut Vec<f64>) {
    work.clear();
    work.extend_from_slice(x);
    for i in 0..x.len() {
        let h = 1e-6 * x[i].abs().max(1.0);
        work[i] = x[i] + h;
        let up = f(work);
        work[i] = x[i] - h;
        let down = f(work);
        work[i] = x[i];
        g[i] += (up - down) / (2.0 * h);
    }
}

/// Checks and measures one row.
pub fn run_row(row: &Row, budget: Budget, seed: u64) -> RowResult {
    let mut rng = Rng::new(seed);
    let n = row.x.len();
    let v = rng.normals(n, 1.0);
    let check_errors = check_row(row, &v, &mut rng);
    let failed = |c: Column| check_errors.iter().find(|(k, _)| *k == c).filter(|(_, e)| e.is_nan() || *e > TOLERANCE);
    let x = row.x.clone();
    let no_reset = &mut |_: &mut ()| {};
    let mut primal = |_: &mut ()| {
        black_box((row.primal)(black_box(&x)));
    };
    // The primal is timed before and after the derivatives (the mean of both medians), so
    // that a change of load on the machine during the row shows less in the ratios.
    let primal_before = time_ns(&mut (), &mut primal, no_reset, budget);
    let primal_allocs = allocs_per_call(&mut (), &mut primal);
    let mut cells = vec![];
    let mut extra_allocs = None;
    let zero = &mut |g: &mut Vec<f64>| g.fill(0.0);
    for (c, k) in &row.columns {
        if let Some((_, e)) = failed(*c) {
            cells.push((*c, Cell::Failed(format!("relative error {e:.1e} against finite differences"))));
            continue;
        }
        let cell = match k {
            Kind::NotApplicable(why) => Cell::NotApplicable(why.to_string()),
            Kind::Grad(f) => {
                let mut call = |g: &mut Vec<f64>| {
                    black_box(f(black_box(&x), black_box(g)));
                };
                let mut g = vec![0.0; n];
                let t = time_ns(&mut g, &mut call, zero, budget);
                if *c == Column::Rev {
                    extra_allocs = Some(allocs_per_call(&mut g, &mut call) - primal_allocs);
                }
                Cell::Time(t)
            }
            Kind::Jvp(f) => {
                let mut call = |_: &mut ()| {
                    black_box(f(black_box(&x), black_box(&v)));
                };
                Cell::Time(time_ns(&mut (), &mut call, no_reset, budget))
            }
            Kind::Hvp(f) => {
                let mut call = |s: &mut (Vec<f64>, Vec<f64>)| {
                    black_box(f(black_box(&x), black_box(&v), black_box(&mut s.0), black_box(&mut s.1)));
                };
                let mut s = (vec![0.0; n], vec![0.0; n]);
                let t = time_ns(&mut s, &mut call, &mut |_| {}, budget);
                if *c == Column::Hvp {
                    extra_allocs = Some(allocs_per_call(&mut s, &mut call) - primal_allocs);
                }
                Cell::Time(t)
            }
        };
        cells.push((*c, cell));
    }
    if !row.second_order {
        let cell = if n <= SMALL {
            let mut call = |s: &mut (Vec<f64>, Vec<f64>)| {
                fd_gradient(&*row.primal, black_box(&x), &mut s.0, &mut s.1);
                black_box(&mut s.0);
            };
            let mut s = (vec![0.0; n], vec![]);
            Cell::Time(time_ns(&mut s, &mut call, &mut |s| s.0.fill(0.0), budget))
        } else {
            Cell::NotApplicable(format!("more than {SMALL} inputs"))
        };
        cells.push((Column::Fd, cell));
    }
    let primal_ns = 0.5 * (primal_before + time_ns(&mut (), &mut primal, no_reset, budget));
    RowResult {
        name: row.name,
        n,
        second_order: row.second_order,
        primal_ns,
        cells,
        extra_allocs,
        primal_allocs,
        check_errors,
    }
}
