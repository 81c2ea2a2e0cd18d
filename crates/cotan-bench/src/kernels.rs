//! Kernels (`#[cotan::kernel]`, `cotan::par`) on CPU threads: each kernel against the same
//! function without the attribute (its parallel loops then plain sequential loops), primal
//! and reverse-mode gradient, on rayon's pool of this machine's threads. For each: the
//! sequential primal's time, the speed-ups of the kernel's primal and gradient over the
//! sequential ones, reverse/primal of both, and the heap allocations of a steady-state
//! gradient call.
//!
//! The gradients are checked before timing: the kernel's against the sequential one's
//! (1e-9), the sequential one against central differences along a random direction.

#![allow(clippy::needless_range_loop)]

use std::hint::black_box;

use cotan::{autodiff_reverse, kernel, par};

use crate::bench::{allocs_per_call, fd_directional, rel_err, time_ns, Budget, Rng, TOLERANCE};
use crate::report::{format_ns, format_ratio};

/// A primal `f(x, y)` (it writes `y`, of `x`'s length) and its gradient `df(x, dx, y, dy, seed)`.
type Primal = fn(&[f64], &mut [f64]) -> f64;
type Reverse = fn(&[f64], &mut [f64], &mut [f64], &mut [f64], f64) -> f64;

/// Defines the kernel `$k` and the same function `$s` without `#[kernel]`, with their
/// reverse derivatives.
macro_rules! twins {
    ($k:ident, $kr:ident, $s:ident, $sr:ident; $($f:tt)*) => {
        #[kernel]
        #[autodiff_reverse($kr, Duplicated, Duplicated, Active)]
        pub fn $k $($f)*
        #[autodiff_reverse($sr, Duplicated, Duplicated, Active)]
        pub fn $s $($f)*
    };
}

fn smooth(l: f64, c: f64, r: f64) -> f64 {
    (l - 2.0 * c + r).sin() + 0.5 * c * c + (0.1 * c).exp()
}

// A stencil: neighbours read, a helper, a write at the loop's index.
twins!(stencil, stencil_rev, stencil_seq, stencil_seq_rev;
(x: &[f64], y: &mut [f64]) -> f64 {
    let n = x.len();
    for i in par(0..n) {
        let l = if i > 0 { x[i - 1] } else { x[n - 1] };
        let r = if i + 1 < n { x[i + 1] } else { x[0] };
        y[i] = smooth(l, x[i], r);
    }
    let mut s = 0.0;
    for i in 0..n {
        s += y[i] * y[i];
    }
    s
});

// A loop-carried value through an inner loop whose trip count (0 to 30) is known at run
// time only: each iteration records its own steps.
twins!(dynamic, dynamic_rev, dynamic_seq, dynamic_seq_rev;
(x: &[f64], y: &mut [f64]) -> f64 {
    let n = x.len();
    for i in par(0..n) {
        let mut s = x[i];
        for k in 0..(i * 7) % 31 {
            s = 0.5 * (s * x[(i + k) % n]).sin() + 0.9 * s;
        }
        y[i] = s;
    }
    let mut t = 0.0;
    for i in 0..n {
        t += y[i] * y[i];
    }
    t
});

// Accumulations into elements other iterations add to: atomic in the primal, and a
// gather's reverse in the gradient.
twins!(scatter, scatter_rev, scatter_seq, scatter_seq_rev;
(x: &[f64], y: &mut [f64]) -> f64 {
    let n = x.len();
    for i in par(0..n) {
        let w = (0.3 * x[i]).exp();
        y[(i * 7) % n] += w;
        y[(i + 1) % n] -= 0.5 * w * x[i];
    }
    let mut s = 0.0;
    for i in 0..n {
        s += y[i] * y[i];
    }
    s
});

/// The force of a spring of rest length 0.1 stretched to `d`.
fn spring(d: f64) -> f64 {
    let e = d - 0.1;
    8.0 * e + 20.0 * e * e * e
}

// A mass-spring chain over 20 steps: each particle gathers the forces of its springs, then
// moves. The parallel loops are inside the time loop, so the gradient runs them in order.
twins!(springs, springs_rev, springs_seq, springs_seq_rev;
(x: &[f64], y: &mut [f64]) -> f64 {
    let n = x.len();
    let mut p = x.to_vec();
    let mut v = vec![0.0; n];
    let mut f = vec![0.0; n];
    for _step in 0..20 {
        for i in par(0..n) {
            let mut fi = -0.5 * v[i];
            for k in [1, 3] {
                fi += spring(p[(i + k) % n] - p[i]) - spring(p[i] - p[(i + 3 * n - k) % n]);
            }
            f[i] = fi;
        }
        for i in par(0..n) {
            v[i] += 0.02 * f[i];
            p[i] += 0.02 * v[i];
        }
    }
    for i in par(0..n) {
        y[i] = p[i];
    }
    let mut s = 0.0;
    for i in 0..n {
        s += (p[i] - 0.05 * i as f64).powi(2);
    }
    s
});

struct Case {
    name: &'static str,
    what: &'static str,
    n: usize,
    kernel: (Primal, Reverse),
    plain: (Primal, Reverse),
}

fn cases(quick: bool) -> Vec<Case> {
    let big = if quick { 20_000 } else { 1_000_000 };
    let mid = if quick { 5_000 } else { 200_000 };
    vec![
        Case {
            name: "stencil",
            what: "neighbours, a helper",
            n: big,
            kernel: (stencil, stencil_rev),
            plain: (stencil_seq, stencil_seq_rev),
        },
        Case {
            name: "dynamic",
            what: "inner loop, 0-30 steps",
            n: mid,
            kernel: (dynamic, dynamic_rev),
            plain: (dynamic_seq, dynamic_seq_rev),
        },
        Case {
            name: "scatter",
            what: "atomic `+=`",
            n: big,
            kernel: (scatter, scatter_rev),
            plain: (scatter_seq, scatter_seq_rev),
        },
        Case {
            name: "springs",
            what: "20 steps, gather",
            n: mid,
            kernel: (springs, springs_rev),
            plain: (springs_seq, springs_seq_rev),
        },
    ]
}

/// The gradient of `rev` at `x`.
fn gradient(rev: Reverse, x: &[f64]) -> Vec<f64> {
    let (mut dx, mut y, mut dy) = (vec![0.0; x.len()], vec![0.0; x.len()], vec![0.0; x.len()]);
    rev(x, &mut dx, &mut y, &mut dy, 1.0);
    dx
}

/// Checks `c` at a small size: the kernel's gradient against the sequential one (to 1e-9),
/// and that against central differences along a random direction (to `TOLERANCE`).
fn check(c: &Case, rng: &mut Rng) -> Result<String, String> {
    let x = rng.uniforms(257, -0.5, 0.5);
    let (gk, gs) = (gradient(c.kernel.1, &x), gradient(c.plain.1, &x));
    let scale = gs.iter().fold(0.0f64, |m, g| m.max(g.abs()));
    let twins = gk.iter().zip(&gs).map(|(a, b)| rel_err(*a, *b, scale)).fold(0.0, f64::max);
    let v = rng.normals(x.len(), 1.0);
    let f = |x: &[f64]| (c.plain.0)(x, &mut vec![0.0; x.len()]);
    let fd = fd_directional(&f, &x, &v, 1e-6);
    let dot: f64 = gs.iter().zip(&v).map(|(g, v)| g * v).sum();
    let fd_err = rel_err(dot, fd, fd.abs().max(1.0));
    let text = format!("{twins:.0e} / {fd_err:.0e}");
    if twins <= 1e-9 && fd_err <= TOLERANCE {
        Ok(text)
    } else {
        Err(text)
    }
}

/// Heap allocations per steady-state call of the gradient `rev` at `x`.
fn allocations(rev: Reverse, x: &[f64]) -> f64 {
    let n = x.len();
    let mut s = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
    allocs_per_call(&mut s, &mut |(dx, y, dy)| {
        black_box(rev(black_box(x), dx, y, dy, 1.0));
    })
}

/// Median time of the primal `f` and of the gradient `rev` at `x`.
fn times(f: Primal, rev: Reverse, x: &[f64], budget: Budget) -> (f64, f64) {
    let n = x.len();
    let mut y = vec![0.0; n];
    let primal = time_ns(
        &mut y,
        &mut |y| {
            black_box(f(black_box(x), y));
        },
        &mut |_| {},
        budget,
    );
    let mut s = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
    let reverse = time_ns(
        &mut s,
        &mut |(dx, y, dy)| {
            black_box(rev(black_box(x), dx, y, dy, 1.0));
        },
        &mut |(dx, _, dy)| {
            dx.fill(0.0);
            dy.fill(0.0);
        },
        budget,
    );
    (primal, reverse)
}

/// The kernels table, as markdown.
pub fn table(budget: Budget, quick: bool) -> String {
    // (rayon's pool has one thread per available core unless RAYON_NUM_THREADS says otherwise.)
    let threads = std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
    let mut out = format!(
        "{threads} threads. Speed-up: the sequential function's time over the kernel's. \
         Reverse/primal: each version's gradient time over its own primal's.\n\n\
         | kernel | what | n | primal (sequential) | primal speed-up | gradient speed-up | reverse/primal, sequential | reverse/primal, kernel | allocs: kernel / sequential gradient | check: kernel vs sequential / FD |\n\
         |---|---|---|---|---|---|---|---|---|---|\n"
    );
    let mut rng = Rng::new(0x9A7);
    for c in cases(quick) {
        let checked = check(&c, &mut rng);
        let x = rng.uniforms(c.n, -0.5, 0.5);
        let (ps, rs) = times(c.plain.0, c.plain.1, &x, budget);
        let (pk, rk) = times(c.kernel.0, c.kernel.1, &x, budget);
        let allocs = format!("{} / {}", allocations(c.kernel.1, &x), allocations(c.plain.1, &x));
        let ok = match checked {
            Ok(t) => format!("ok ({t})"),
            Err(t) => format!("FAILED ({t})"),
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            c.name,
            c.what,
            c.n,
            format_ns(ps),
            format_ratio(ps / pk),
            format_ratio(rs / rk),
            format_ratio(rs / ps),
            format_ratio(rk / pk),
            allocs,
            ok
        ));
    }
    out
}
