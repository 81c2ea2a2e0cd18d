//! Checkpointing (`cotan::checkpoint`) on a long time-stepping loop: an explicit midpoint
//! (RK2) integrator of a ring of 100 nonlinear oscillators over 10⁵ steps, its reverse-mode
//! gradient (with respect to the initial state and the 4 parameters) recorded whole and
//! with several schedules. For each: the peak of the bytes allocated during the derivative
//! call beyond what was allocated before it (the tape, the snapshots, the shadows and the
//! buffer pool, as the counting global allocator sees them), the time against the primal,
//! the iterations run per iteration of the loop (recording runs and recomputations
//! included), and the gradient's largest relative difference from the whole record.
//!
//! The models are here rather than in `models/` because `cotan::checkpoint` is a function
//! of cotan, which `models/` must compile without.

use std::hint::black_box;
use std::time::Instant;

use cotan::{checkpoint, Binomial, Every};

use crate::bench::{peak_bytes, rel_err, reset_peak, Rng, TOLERANCE};
use crate::report::{format_ns, format_ratio};

/// The system's size and the loop's length.
pub const N: usize = 100;
pub const STEPS: usize = 100_000;

/// One component of the right-hand side: diffusion along the ring, a nonlinear coupling,
/// damping and a nonlinear restoring term; `p` holds their 4 coefficients.
fn rhs(x: &[f64], p: &[f64], i: usize) -> f64 {
    let n = x.len();
    let l = x[(i + n - 1) % n];
    let r = x[(i + 1) % n];
    p[0] * (l + r - 2.0 * x[i]) + p[1] * (l - r).tanh() - p[2] * x[i] + (p[3] * x[i]).sin()
}

macro_rules! integrator {
    ($(#[$doc:meta])* $name:ident, $rev:ident, $steps:ident, [$($iter:tt)*]) => {
        $(#[$doc])*
        #[cotan::autodiff_reverse($rev, Duplicated, Duplicated, Const, Active)]
        pub fn $name(x: &mut [f64], p: &[f64], $steps: usize) -> f64 {
            let n = x.len();
            let dt = 1e-4;
            for _t in $($iter)* {
                let mut mid = vec![0.0; n];
                for i in 0..n {
                    mid[i] = x[i] + 0.5 * dt * rhs(x, p, i);
                }
                for i in 0..n {
                    x[i] += dt * rhs(&mid, p, i);
                }
            }
            x.iter().map(|v| v * v).sum::<f64>()
        }
    };
}

integrator!(
    /// The loop recorded whole.
    plain, plain_rev, steps, [0..steps]
);
integrator!(every_10, every_10_rev, steps, [checkpoint(0..steps, Every(10))]);
integrator!(every_316, every_316_rev, steps, [checkpoint(0..steps, Every(316))]);
integrator!(every_3162, every_3162_rev, steps, [checkpoint(0..steps, Every(3162))]);
integrator!(binomial_10, binomial_10_rev, steps, [checkpoint(0..steps, Binomial(10))]);
integrator!(binomial_30, binomial_30_rev, steps, [checkpoint(0..steps, Binomial(30))]);
integrator!(binomial_316, binomial_316_rev, steps, [checkpoint(0..steps, Binomial(316))]);

type Rev = fn(&mut [f64], &mut [f64], &[f64], &mut [f64], usize, f64) -> f64;

#[derive(Clone, Copy)]
enum Sched {
    Plain,
    Every(usize),
    Binomial(usize),
}

const SCHEDULES: [(&str, Sched, Rev); 7] = [
    ("whole record", Sched::Plain, plain_rev),
    ("`Every(10)`", Sched::Every(10), every_10_rev),
    ("`Every(316)`", Sched::Every(316), every_316_rev),
    ("`Every(3162)`", Sched::Every(3162), every_3162_rev),
    ("`Binomial(10)`", Sched::Binomial(10), binomial_10_rev),
    ("`Binomial(30)`", Sched::Binomial(30), binomial_30_rev),
    ("`Binomial(316)`", Sched::Binomial(316), binomial_316_rev),
];

/// Iterations the derivative runs (primal and recording runs) and the most snapshots it
/// holds at once, for `n` iterations: the generated code's schedule, replayed.
fn schedule_counts(s: Sched, n: usize) -> (usize, usize) {
    match s {
        Sched::Plain => (n, 0),
        Sched::Every(k) => (2 * n, n.div_ceil(k)),
        Sched::Binomial(_) if n == 0 => (0, 0),
        Sched::Binomial(c) => {
            // Segments (start, end, free snapshots, start stored).
            let mut stack = vec![(0, n, c - 1, true)];
            let (mut run, mut held, mut most) = (0, 1, 1);
            // The forward sweep's descent, then the rest of the loop.
            loop {
                let (a, b, s, _) = *stack.last().unwrap();
                if b - a <= 1 || s == 0 {
                    break;
                }
                let m = cotan::rt::binomial_split(a, b, s);
                run += m - a;
                stack.last_mut().unwrap().1 = m;
                stack.push((m, b, s - 1, true));
                held += 1;
                most = most.max(held);
            }
            // The rest of the loop, its last iteration recorded.
            run += n - stack.last().unwrap().0;
            // The reverse sweep: back through the last iteration, then the segments.
            let top = stack.last_mut().unwrap();
            top.1 = n - 1;
            if top.0 == top.1 {
                held -= usize::from(top.3);
                stack.pop();
            }
            while let Some(&(a, b, s, stored)) = stack.last() {
                if b - a == 1 {
                    run += 1;
                    stack.pop();
                    held -= usize::from(stored);
                    continue;
                }
                let m = if s > 0 { cotan::rt::binomial_split(a, b, s) } else { b - 1 };
                run += m - a;
                stack.last_mut().unwrap().1 = m;
                stack.push((m, b, s.saturating_sub(1), s > 0));
                held += usize::from(s > 0);
                most = most.max(held);
            }
            (run, most)
        }
    }
}

fn format_bytes(b: usize) -> String {
    let b = b as f64;
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else {
        format!("{:.0} kB", b / 1e3)
    }
}

/// One schedule in a thread of its own (whose tape pool starts empty): the peak extra bytes
/// of the first call, the fastest of `runs` calls, and the gradient.
fn run(rev: Rev, x0: &[f64], p: &[f64], runs: usize) -> (usize, f64, Vec<f64>) {
    let (x0, p) = (x0.to_vec(), p.to_vec());
    std::thread::spawn(move || {
        let (mut x, mut dx, mut dp) = (x0.clone(), vec![0.0; N], vec![0.0; p.len()]);
        let mut best = f64::INFINITY;
        let mut peak = 0;
        let mut grad = vec![];
        for k in 0..runs {
            x.copy_from_slice(&x0);
            dx.fill(0.0);
            dp.fill(0.0);
            let before = reset_peak();
            let t = Instant::now();
            black_box(rev(black_box(&mut x), &mut dx, black_box(&p), &mut dp, black_box(STEPS), 1.0));
            let ns = t.elapsed().as_secs_f64() * 1e9;
            if k == 0 {
                peak = peak_bytes() - before;
                grad = dx.iter().chain(&dp).copied().collect();
            }
            best = best.min(ns);
        }
        (peak, best, grad)
    })
    .join()
    .expect("the derivative panicked")
}

/// The checkpointing table, as markdown.
pub fn table(quick: bool) -> String {
    let runs = if quick { 2 } else { 5 };
    let mut rng = Rng::new(0xC4E);
    let x0 = rng.normals(N, 0.5);
    let p = vec![0.5, 0.3, 1.0, 0.8];
    let objective = |x0: &[f64], p: &[f64]| plain(&mut x0.to_vec(), p, STEPS);
    // The fastest primal call, of `runs` before the derivatives and `runs` after them.
    let time_primal = |best: f64| {
        (0..runs).fold(best, |best, _| {
            let t = Instant::now();
            black_box(objective(black_box(&x0), black_box(&p)));
            best.min(t.elapsed().as_secs_f64() * 1e9)
        })
    };
    let primal = time_primal(f64::INFINITY);
    let mut rows = vec![];
    let mut whole: Vec<f64> = vec![];
    for (name, sched, rev) in SCHEDULES {
        let (peak, ns, grad) = run(rev, &x0, &p, runs);
        let (iters, held) = schedule_counts(sched, STEPS);
        let diff = if whole.is_empty() {
            // The whole record against central differences along a random direction.
            let v = rng.normals(N + p.len(), 1.0);
            let h = 1e-6;
            let at = |s: f64| {
                let x: Vec<f64> = x0.iter().zip(&v).map(|(a, b)| a + s * h * b).collect();
                let q: Vec<f64> = p.iter().zip(&v[N..]).map(|(a, b)| a + s * h * b).collect();
                objective(&x, &q)
            };
            let fd = (at(1.0) - at(-1.0)) / (2.0 * h);
            let gv: f64 = grad.iter().zip(&v).map(|(a, b)| a * b).sum();
            let err = rel_err(gv, fd, fd.abs().max(1.0));
            if err.is_nan() || err > TOLERANCE {
                return format!(
                    "| {name} | FAILED: the gradient along a direction is {gv}, finite differences {fd} | | | | |\n"
                );
            }
            whole = grad;
            format!("(against finite differences: {err:.1e})")
        } else {
            let d = grad
                .iter()
                .zip(&whole)
                .map(|(a, b)| (a - b).abs() / b.abs().max(f64::MIN_POSITIVE))
                .fold(0.0, f64::max);
            if d.is_nan() || d > 1e-12 {
                format!("FAILED: {d:.1e}")
            } else {
                format!("{d:.1e}")
            }
        };
        rows.push((name, held, peak, ns, iters, diff));
    }
    let primal = time_primal(primal);
    let mut out = format!(
        "| {STEPS} steps of {N} variables (primal {}) | snapshots held | peak extra memory | derivative / primal | iterations run / iterations | max rel. difference from the whole record |\n|---|--:|--:|--:|--:|--:|\n",
        format_ns(primal)
    );
    for (name, held, peak, ns, iters, diff) in rows {
        out.push_str(&format!(
            "| {name} | {held} | {} | {} | {} | {diff} |\n",
            format_bytes(peak),
            format_ratio(ns / primal),
            format_ratio(iters as f64 / STEPS as f64)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The schedule's counts on small loops, and the derivative of each schedule equal to
    /// the whole record on a short run.
    #[test]
    fn schedules_on_short_loops() {
        // One snapshot: the forward sweep runs the loop (recording its last iteration), then
        // iteration k < 4 is reached again from the start (k runs) and recorded.
        assert_eq!(schedule_counts(Sched::Binomial(1), 5), (5 + (3 + 1) + (2 + 1) + (1 + 1) + 1, 1));
        // Griewank's minimum, r·T − β(c + 1, r − 1) runs besides the T recording runs, for
        // the least r with β(c, r) = (c + r)! / (c! r!) ≥ T.
        let binomial = |n: usize, k: usize| (1..=k.min(n - k)).fold(1usize, |b, j| b * (n + 1 - j) / j);
        for (n, c) in [(5, 1), (10, 2), (100, 3), (1000, 5), (100_000, 10), (100_000, 30), (100_000, 316)] {
            let r = (0..).find(|&r| binomial(c + r, c) >= n).unwrap();
            let least = r * n - binomial(c + r, c + 1);
            assert_eq!(schedule_counts(Sched::Binomial(c), n).0, least + n, "{n} iterations, {c} snapshots");
        }
        for n in [1, 2, 7, 100, 1000] {
            for c in [1, 2, 3, 10] {
                let (_, held) = schedule_counts(Sched::Binomial(c), n);
                assert!(held <= c, "{n} iterations, {c} snapshots: {held} held");
            }
        }
        let x0: Vec<f64> = (0..N).map(|i| (i as f64 * 0.37).sin()).collect();
        let p = [0.5, 0.3, 1.0, 0.8];
        let grad = |rev: Rev| {
            let (mut x, mut dx, mut dp) = (x0.clone(), vec![0.0; N], vec![0.0; 4]);
            rev(&mut x, &mut dx, &p, &mut dp, 777, 1.0);
            (x, dx, dp)
        };
        let whole = grad(plain_rev);
        for (name, _, rev) in SCHEDULES {
            assert_eq!(grad(rev), whole, "{name}");
        }
    }
}
