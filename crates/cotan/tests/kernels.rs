//! `#[cotan::kernel]` and `cotan::par`: each kernel against the same function without the
//! attribute (a plain sequential loop: primal and derivatives equal to 1e-12, the
//! accumulations' order aside), against central finite differences (step 1e-6 relative,
//! tolerance 1e-6), and forward mode against reverse mode by the dot-product test (1e-10).
//! The kernels' loops run on rayon's pool (checked by the thread indices they see); the
//! derivatives run them in order.

#![allow(clippy::all, clippy::pedantic, dead_code, unused_mut, unused_variables)]

use cotan::{autodiff_forward, autodiff_reverse};

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
}

fn assert_close(what: &str, a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len(), "{what}");
    for (k, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(close(*x, *y, tol), "{what}[{k}]: {x} against {y}");
    }
}

/// Deterministic values in [-1, 1].
fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

type Primal = fn(&[f64], &mut [f64]) -> f64;
type Reverse = fn(&[f64], &mut [f64], &mut [f64], &mut [f64], f64) -> f64;
type Forward = fn(&[f64], &[f64], &mut [f64], &mut [f64]) -> (f64, f64);

/// A kernel and its sequential twin, each with reverse and forward derivatives.
struct Pair {
    name: &'static str,
    kernel: (Primal, Reverse, Forward),
    plain: (Primal, Reverse, Forward),
}

fn run(f: Primal, x: &[f64]) -> (f64, Vec<f64>) {
    let mut y = vec![0.0; x.len()];
    let v = f(x, &mut y);
    (v, y)
}

fn gradient(r: Reverse, x: &[f64]) -> (f64, Vec<f64>) {
    let (mut dx, mut y, mut dy) = (vec![0.0; x.len()], vec![0.0; x.len()], vec![0.0; x.len()]);
    let v = r(x, &mut dx, &mut y, &mut dy, 1.0);
    (v, dx)
}

fn tangent(f: Forward, x: &[f64], u: &[f64]) -> (f64, f64) {
    let (mut y, mut dy) = (vec![0.0; x.len()], vec![0.0; x.len()]);
    f(x, u, &mut y, &mut dy)
}

fn check(p: &Pair, n: usize, seed: u64) {
    let name = p.name;
    let x = values(n, seed);
    let u = values(n, seed + 1);
    // Primal: the kernel against its sequential twin.
    let (vk, yk) = run(p.kernel.0, &x);
    let (vp, yp) = run(p.plain.0, &x);
    assert!(close(vk, vp, 1e-12), "{name} n={n}: primal {vk} against {vp}");
    assert_close(&format!("{name} n={n}: written"), &yk, &yp, 1e-12);
    // Reverse: against the twin's, and against finite differences.
    let (rk, gk) = gradient(p.kernel.1, &x);
    let (rp, gp) = gradient(p.plain.1, &x);
    assert!(close(rk, vp, 1e-12) && close(rp, vp, 1e-12), "{name} n={n}: reverse's primal");
    assert_close(&format!("{name} n={n}: gradient against the sequential one"), &gk, &gp, 1e-12);
    if n <= 64 {
        let fd: Vec<f64> = (0..n)
            .map(|k| {
                let h = 1e-6 * (1.0 + x[k].abs());
                let (mut a, mut b) = (x.clone(), x.clone());
                a[k] += h;
                b[k] -= h;
                (run(p.plain.0, &a).0 - run(p.plain.0, &b).0) / (2.0 * h)
            })
            .collect();
        assert_close(&format!("{name} n={n}: gradient against finite differences"), &gk, &fd, 1e-6);
    }
    // Forward: against the twin's, and the dot-product test against reverse.
    let (fk, tk) = tangent(p.kernel.2, &x, &u);
    let (fp, tp) = tangent(p.plain.2, &x, &u);
    assert!(close(fk, vp, 1e-12) && close(fp, vp, 1e-12), "{name} n={n}: forward's primal");
    assert!(close(tk, tp, 1e-12), "{name} n={n}: tangent {tk} against the sequential {tp}");
    let dot: f64 = gk.iter().zip(&u).map(|(g, u)| g * u).sum();
    assert!(close(tk, dot, 1e-10), "{name} n={n}: dot-product test: forward {tk}, reverse {dot}");
}

/// Defines `$k` with `#[cotan::kernel]` (above the autodiff attributes, or below them with
/// `below`) and `$p`, the same function without it, each with `_rev` and `_fwd`.
macro_rules! pair {
    (above $k:ident, $kr:ident, $kf:ident; $p:ident, $pr:ident, $pf:ident; $($f:tt)*) => {
        #[cotan::kernel]
        #[autodiff_reverse($kr, Duplicated, Duplicated, Active)]
        #[autodiff_forward($kf, Dual, Dual, Dual)]
        fn $k $($f)*
        #[autodiff_reverse($pr, Duplicated, Duplicated, Active)]
        #[autodiff_forward($pf, Dual, Dual, Dual)]
        fn $p $($f)*
    };
    (below $k:ident, $kr:ident, $kf:ident; $p:ident, $pr:ident, $pf:ident; $($f:tt)*) => {
        #[autodiff_reverse($kr, Duplicated, Duplicated, Active)]
        #[autodiff_forward($kf, Dual, Dual, Dual)]
        #[cotan::kernel]
        fn $k $($f)*
        #[autodiff_reverse($pr, Duplicated, Duplicated, Active)]
        #[autodiff_forward($pf, Dual, Dual, Dual)]
        fn $p $($f)*
    };
}

fn smooth(l: f64, c: f64, r: f64) -> f64 {
    (l - 2.0 * c + r).sin() + 0.5 * c * c
}

// A stencil: reads of neighbours, a helper, writes at the loop's index.
pair!(above stencil, stencil_rev, stencil_fwd; stencil_seq, stencil_seq_rev, stencil_seq_fwd;
(x: &[f64], y: &mut [f64]) -> f64 {
    let n = x.len();
    for i in cotan::par(0..n) {
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

// Accumulations into elements other iterations also add to (atomic in the primal).
pair!(below scatter, scatter_rev, scatter_fwd; scatter_seq, scatter_seq_rev, scatter_seq_fwd;
(x: &[f64], y: &mut [f64]) -> f64 {
    let n = x.len();
    for i in cotan::par(0..n) {
        let w = 0.1 * x[i].exp();
        y[(i * 7) % n] += w;
        y[(i + 1) % n] -= 0.5 * w * x[i];
    }
    let mut s = 0.0;
    for i in 0..n {
        s += y[i] * y[i] * (i as f64 + 1.0);
    }
    s
});

// Inner loops whose trip counts are known at run time only, bounded by the outer index:
// one under an `if`, a sibling after it.
pair!(above dynamic, dynamic_rev, dynamic_fwd; dynamic_seq, dynamic_seq_rev, dynamic_seq_fwd;
(x: &[f64], y: &mut [f64]) -> f64 {
    let n = x.len();
    for i in cotan::par(0..n) {
        let mut s = x[i];
        if i % 3 != 1 {
            for k in 0..(i % 5).min(i) {
                s = (s * x[i - k - 1]).sin() + s;
            }
        }
        let mut t = 0.0;
        for k in 0..i % 4 {
            t += (s + x[(i + k) % n]).cos();
        }
        y[i] = s * t + s;
    }
    let mut s = 0.0;
    for i in 0..n {
        s += y[i];
    }
    s
});

// Two parallel loops in sequence (the second reads what the first wrote, at neighbours), a
// local array in the body, a local vector written by a parallel loop, `continue`.
pair!(below two_loops, two_loops_rev, two_loops_fwd; two_loops_seq, two_loops_seq_rev, two_loops_seq_fwd;
(x: &[f64], y: &mut [f64]) -> f64 {
    let n = x.len();
    for i in cotan::par(0..n) {
        let mut loc = [0.0; 3];
        for k in 0..3 {
            loc[k] = x[(i + k) % n] * (k as f64 + 1.0);
        }
        y[i] = loc[0] * loc[1] + loc[2];
    }
    let mut z = vec![0.0; n];
    for i in cotan::par(0..n) {
        if i % 5 == 0 {
            continue;
        }
        z[i] = y[(i + n - 1) % n] * y[i];
        z[i] *= 2.0;
    }
    let mut s = 0.0;
    for i in 0..n {
        s += z[i];
    }
    s
});

// One iteration records 10^5 steps of an inner loop (its reverse on one thread's tape),
// the others a few.
pair!(above long, long_rev, long_fwd; long_seq, long_seq_rev, long_seq_fwd;
(x: &[f64], y: &mut [f64]) -> f64 {
    let n = x.len();
    for i in cotan::par(0..n) {
        let steps = if i == 0 { 100_000 } else { i % 3 };
        let mut s = x[i];
        for _k in 0..steps {
            s = 0.5 * (s * 0.999 + x[(i + 1) % n]).sin() + 0.5 * s;
        }
        y[i] = s;
    }
    let mut t = 0.0;
    for i in 0..n {
        t += y[i] * (i as f64 + 1.0);
    }
    t
});

fn around(x: &[f64], i: usize) -> f64 {
    let n = x.len();
    let mut s = 0.0;
    for k in 0..3 {
        s += x[(i + k) % n] * x[(i + 3 * n - k) % n];
    }
    s
}

// A parallel loop inside a sequential one (its reverse runs in order: not at the top level)
// and a helper given a slice (reverse mode lends it the shadow to write: in order too).
pair!(below inner, inner_rev, inner_fwd; inner_seq, inner_seq_rev, inner_seq_fwd;
(x: &[f64], y: &mut [f64]) -> f64 {
    let n = x.len();
    for t in 0..3 {
        for i in cotan::par(0..n) {
            y[i] += (x[i] * (t as f64 + 1.0)).sin();
        }
    }
    let mut z = vec![0.0; n];
    for i in cotan::par(0..n) {
        z[i] = around(x, i) * y[i];
    }
    let mut s = 0.0;
    for i in 0..n {
        s += z[i];
    }
    s
});

// An output the loop only writes (its reverse sweep's runs write it again, no snapshot)
// next to one the loop reads at its own index before writing it and one a statement
// after the loop overwrites (snapshots kept); accumulations at the loop's index only
// (plain) and at others too (atomic).
pair!(below outputs, outputs_rev, outputs_fwd; outputs_seq, outputs_seq_rev, outputs_seq_fwd;
(x: &[f64], y: &mut [f64]) -> f64 {
    let n = x.len();
    let mut z = vec![1.0; n];
    let mut w = vec![0.5; n];
    let mut own = vec![1.0; n];
    let mut shared = vec![0.0; n];
    for i in cotan::par(0..n) {
        y[i] = (2.0 * x[i]).sin();
        z[i] = z[i] * x[i] + x[(i + 1) % n];
        w[i] = x[i] * x[i];
        // Only at the loop's index (plain), and also at others (atomic, both).
        own[i] += x[i].cos();
        own[i] -= 0.25 * x[i];
        shared[i] += x[i];
        shared[(i + 1) % n] += 0.5 * x[i] * x[i];
    }
    w[n - 1] = w[0] * y[n - 1];
    let mut s = 0.0;
    for i in 0..n {
        s += y[i] * x[i] + z[i] * w[i] + own[i] * shared[i];
    }
    s
});

/// The force of a spring of rest length 0.1 stretched to `d`: stiff, and cubic beyond.
fn spring(d: f64) -> f64 {
    let e = d - 0.1;
    8.0 * e + 20.0 * e * e * e
}

// A mass-spring system over many steps: each particle gathers the forces of the springs to
// its neighbours (ahead and behind, near and far, periodic; so its reverse scatters), then
// moves (damped, semi-implicit Euler). The gradient is that of the loss at the end with
// respect to the initial positions. The parallel loops are inside the time loop: their
// reverses run in parallel too, once per step, last step first.
pair!(above springs, springs_rev, springs_fwd; springs_seq, springs_seq_rev, springs_seq_fwd;
(x: &[f64], y: &mut [f64]) -> f64 {
    let n = x.len();
    let mut p = x.to_vec();
    let mut v = vec![0.0; n];
    let mut f = vec![0.0; n];
    let dt = 0.02;
    for step in 0..40 {
        // A number of the time loop's body, used in the parallel loops (saved for their
        // reverse like any other value), and a parallel loop under an `if`.
        let damp = 0.5 + 0.1 * (step as f64 * 0.3 + p[0]).sin();
        for i in cotan::par(0..n) {
            let mut fi = -damp * v[i];
            for k in [1, 3] {
                let ahead = p[(i + k) % n] - p[i];
                let behind = p[i] - p[(i + 3 * n - k) % n];
                fi += spring(ahead) - spring(behind);
            }
            f[i] = fi;
        }
        for i in cotan::par(0..n) {
            v[i] += dt * f[i];
            p[i] += dt * v[i];
        }
        if step % 10 == 9 {
            for i in cotan::par(0..n) {
                v[i] *= 1.0 - 0.1 * damp;
            }
        }
    }
    for i in cotan::par(0..n) {
        y[i] = p[i];
    }
    let mut s = 0.0;
    for i in 0..n {
        s += (p[i] - 0.05 * i as f64).powi(2) + 0.1 * v[i] * v[i];
    }
    s
});

// A vector made, grown and assigned anew in each iteration (its shadow sized per iteration).
pair!(above local_vectors, local_vectors_rev, local_vectors_fwd; local_vectors_seq, local_vectors_seq_rev, local_vectors_seq_fwd;
(x: &[f64], y: &mut [f64]) -> f64 {
    let n = x.len();
    for i in cotan::par(0..n) {
        let mut v = Vec::new();
        for j in 0..3 {
            v.push(x[(i + j) % n] * (j as f64 + 1.0));
        }
        v = v.iter().map(|e| e.sin()).collect();
        y[i] = v.iter().sum::<f64>() * v[0];
    }
    y.iter().map(|e| e * e).sum()
});

fn pairs() -> Vec<Pair> {
    vec![
        Pair {
            name: "stencil",
            kernel: (stencil, stencil_rev, stencil_fwd),
            plain: (stencil_seq, stencil_seq_rev, stencil_seq_fwd),
        },
        Pair {
            name: "scatter",
            kernel: (scatter, scatter_rev, scatter_fwd),
            plain: (scatter_seq, scatter_seq_rev, scatter_seq_fwd),
        },
        Pair {
            name: "dynamic",
            kernel: (dynamic, dynamic_rev, dynamic_fwd),
            plain: (dynamic_seq, dynamic_seq_rev, dynamic_seq_fwd),
        },
        Pair {
            name: "two_loops",
            kernel: (two_loops, two_loops_rev, two_loops_fwd),
            plain: (two_loops_seq, two_loops_seq_rev, two_loops_seq_fwd),
        },
        Pair { name: "long", kernel: (long, long_rev, long_fwd), plain: (long_seq, long_seq_rev, long_seq_fwd) },
        Pair { name: "inner", kernel: (inner, inner_rev, inner_fwd), plain: (inner_seq, inner_seq_rev, inner_seq_fwd) },
        Pair {
            name: "outputs",
            kernel: (outputs, outputs_rev, outputs_fwd),
            plain: (outputs_seq, outputs_seq_rev, outputs_seq_fwd),
        },
        Pair {
            name: "local_vectors",
            kernel: (local_vectors, local_vectors_rev, local_vectors_fwd),
            plain: (local_vectors_seq, local_vectors_seq_rev, local_vectors_seq_fwd),
        },
        Pair {
            name: "springs",
            kernel: (springs, springs_rev, springs_fwd),
            plain: (springs_seq, springs_seq_rev, springs_seq_fwd),
        },
    ]
}

#[test]
fn kernels_against_sequential_finite_differences_and_each_mode() {
    for p in pairs() {
        for (n, seed) in [(1, 1), (2, 2), (7, 3), (33, 4), (64, 5)] {
            check(&p, n, seed);
        }
    }
}

#[test]
fn large_kernels_against_sequential() {
    for p in pairs() {
        check(&p, 100_000, 9);
    }
}

// ---- the primal runs on rayon's pool

fn busy(i: usize) -> f64 {
    let mut s = i as f64;
    for k in 0..2000 {
        s = (s + k as f64).sqrt();
    }
    s
}

#[cotan::kernel]
fn where_run(ids: &mut [usize], work: &mut [f64]) {
    for i in cotan::par(0..ids.len()) {
        work[i] = busy(i);
        ids[i] = cotan::rt::thread_index().unwrap_or(usize::MAX);
    }
}

#[test]
fn parallel_loops_run_on_the_thread_pool() {
    let n = 4000;
    let (mut ids, mut work) = (vec![0; n], vec![0.0; n]);
    where_run(&mut ids, &mut work);
    assert!(ids.iter().all(|&t| t != usize::MAX), "an iteration ran outside rayon's pool");
    for (i, w) in work.iter().enumerate() {
        assert_eq!(*w, busy(i));
    }
    let mut seen: Vec<usize> = ids.clone();
    seen.sort();
    seen.dedup();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if threads > 1 {
        assert!(seen.len() > 1, "every iteration ran on one thread of {threads}");
    }
}

// ---- accumulations of integers and `f32`, own-index compound assignments

#[cotan::kernel]
fn histogram(x: &[f64], counts: &mut [usize], mass: &mut [f32], scaled: &mut [f64]) {
    let bins = counts.len();
    for i in cotan::par(0..x.len()) {
        let b = ((x[i] + 1.0) * 0.5 * bins as f64) as usize;
        let b = b.min(bins - 1);
        counts[b] += 1;
        mass[b] += x[i] as f32;
        scaled[i] = x[i];
        scaled[i] *= 3.0;
        scaled[i] -= 1.0;
    }
}

#[test]
fn accumulations_are_atomic() {
    let n = 200_000;
    let x = values(n, 11);
    let bins = 8;
    let (mut counts, mut mass, mut scaled) = (vec![0; bins], vec![0.0f32; bins], vec![0.0; n]);
    histogram(&x, &mut counts, &mut mass, &mut scaled);
    let (mut c2, mut m2) = (vec![0usize; bins], vec![0.0f64; bins]);
    for &v in &x {
        let b = (((v + 1.0) * 0.5 * bins as f64) as usize).min(bins - 1);
        c2[b] += 1;
        m2[b] += v;
    }
    assert_eq!(counts, c2, "a lost update");
    assert_eq!(counts.iter().sum::<usize>(), n);
    for b in 0..bins {
        assert!((mass[b] as f64 - m2[b]).abs() < 1e-3 * (1.0 + m2[b].abs()), "bin {b}: {} against {}", mass[b], m2[b]);
    }
    for i in 0..n {
        assert_eq!(scaled[i], x[i] * 3.0 - 1.0);
    }
}

#[test]
fn par_alone_is_a_range() {
    let mut v = vec![];
    for i in cotan::par(2..5) {
        v.push(i);
    }
    assert_eq!(v, [2, 3, 4]);
}

#[cotan::kernel]
fn out_of_bounds(y: &mut [f64]) {
    for i in cotan::par(0..y.len() + 1) {
        y[i] = 1.0;
    }
}

#[test]
fn bounds_are_checked() {
    let r = std::panic::catch_unwind(|| {
        let mut y = vec![0.0; 10];
        out_of_bounds(&mut y);
    });
    assert!(r.is_err());
}

// ---- the derivatives run the loops on the pool too

/// 1 on a thread of rayon's pool, 0 elsewhere (a constant for differentiation).
#[cotan::zero_derivative]
fn on_pool() -> f64 {
    if cotan::rt::thread_index().is_some() {
        1.0
    } else {
        0.0
    }
}

macro_rules! pooled {
    ($($f:tt)*) => {
        #[cotan::kernel]
        #[autodiff_forward(pooled_fwd, Dual, Dual, Dual)]
        #[autodiff_reverse(pooled_rev, Duplicated, Duplicated, Active)]
        fn pooled $($f)*
        #[autodiff_forward(pooled_seq_fwd, Dual, Dual, Dual)]
        #[autodiff_reverse(pooled_seq_rev, Duplicated, Duplicated, Active)]
        fn pooled_seq $($f)*
    };
}

pooled!((x: &[f64], y: &mut [f64]) -> f64 {
    let n = x.len();
    for i in cotan::par(0..n) {
        y[i] = x[i] * x[i] * (1.0 + on_pool());
    }
    let mut s = 0.0;
    for i in 0..n {
        s += y[i];
    }
    s
});

// The same inside a time loop, under an `if`: the reverse of each step's parallel loop
// runs on the pool too.
#[cotan::kernel]
#[autodiff_reverse(stepped_rev, Duplicated, Duplicated, Active)]
fn stepped(x: &[f64], y: &mut [f64]) -> f64 {
    let n = x.len();
    for t in 0..3 {
        if t != 1 {
            for i in cotan::par(0..n) {
                y[i] += x[i] * x[i] * (1.0 + on_pool());
            }
        }
    }
    let mut s = 0.0;
    for i in 0..n {
        s += y[i];
    }
    s
}

#[test]
fn reverse_mode_runs_loops_inside_a_time_loop_on_the_pool() {
    let n = 1000;
    let x = values(n, 22);
    let (mut dx, mut y, mut dy) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
    let r = stepped_rev(&x, &mut dx, &mut y, &mut dy, 1.0);
    let v: f64 = x.iter().map(|x| 4.0 * x * x).sum();
    assert!(close(r, v, 1e-12), "the forward sweep ran a step's loop outside the pool: {r} against {v}");
    for i in 0..n {
        // Two steps, each 2·(2 x): every step's replay ran on the pool.
        assert!(close(dx[i], 8.0 * x[i], 1e-12), "a reverse step's iteration {i} ran outside the pool");
    }
}

#[test]
fn forward_mode_runs_on_the_pool() {
    let n = 1000;
    let x = values(n, 21);
    let u = vec![1.0; n];
    let (mut y, mut dy) = (vec![0.0; n], vec![0.0; n]);
    let (v, t) = pooled_fwd(&x, &u, &mut y, &mut dy);
    for i in 0..n {
        // Twice the square: the iteration ran on the pool.
        assert_eq!(y[i], 2.0 * x[i] * x[i], "the tangent loop's iteration {i} ran outside the pool");
        assert_eq!(dy[i], 4.0 * x[i]);
    }
    let (vs, ts) = pooled_seq_fwd(&x, &u, &mut y, &mut dy);
    assert!(close(vs * 2.0, v, 1e-12) && close(ts * 2.0, t, 1e-12), "the sequential twin runs in order");
    assert_eq!(y[0], x[0] * x[0]);
    // The kernel's own primal runs on the pool, and so do both loops of reverse mode: the
    // forward sweep's primal and the reverse sweep's replay of each iteration.
    assert!(close(pooled(&x, &mut y), v, 1e-12));
    let (mut dx, mut dy) = (vec![0.0; n], vec![0.0; n]);
    let r = pooled_rev(&x, &mut dx, &mut y, &mut dy, 1.0);
    assert!(close(r, v, 1e-12), "reverse mode's forward sweep ran the loop outside the pool");
    for i in 0..n {
        assert_eq!(dx[i], 4.0 * x[i], "reverse mode's iteration {i} ran outside the pool");
    }
    let (mut dx, mut dy) = (vec![0.0; n], vec![0.0; n]);
    pooled_seq_rev(&x, &mut dx, &mut y, &mut dy, 1.0);
    assert_eq!(dx[0], 2.0 * x[0]);
}

// ---- second order through a kernel (forward mode over the parallel reverse sweep)

macro_rules! energy {
    ($($f:tt)*) => {
        #[cotan::kernel]
        #[cotan::hvp(energy_hvp)]
        fn energy $($f)*
        #[cotan::hvp(energy_seq_hvp)]
        fn energy_seq $($f)*
    };
}

energy!((x: &[f64]) -> f64 {
    let n = x.len();
    let mut e = vec![0.0; n];
    for i in cotan::par(0..n) {
        let r = x[(i + 1) % n] - x[i];
        let mut s = 0.0;
        for k in 0..i % 3 + 1 {
            s += (r * (k as f64 + 1.0)).sin();
        }
        e[i] = s * s + x[i].powi(3);
    }
    let mut t = 0.0;
    for i in 0..n {
        t += e[i];
    }
    t
});

#[test]
fn hessian_vector_products_of_a_kernel() {
    for n in [1, 2, 7, 40] {
        let x = values(n, 31);
        let v = values(n, 32);
        let (mut g, mut hv) = (vec![0.0; n], vec![0.0; n]);
        let e = energy_hvp(&x, &v, &mut g, &mut hv);
        let (mut gs, mut hvs) = (vec![0.0; n], vec![0.0; n]);
        let es = energy_seq_hvp(&x, &v, &mut gs, &mut hvs);
        assert!(close(e, es, 1e-12) && close(e, energy(&x), 1e-12));
        assert_close("gradient", &g, &gs, 1e-12);
        assert_close("Hessian-vector product", &hv, &hvs, 1e-12);
        // Against central differences of the gradient along `v`.
        let h = 1e-6;
        let (xp, xm): (Vec<f64>, Vec<f64>) =
            (x.iter().zip(&v).map(|(a, b)| a + h * b).collect(), x.iter().zip(&v).map(|(a, b)| a - h * b).collect());
        let (mut gp, mut gm, mut scratch) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
        energy_seq_hvp(&xp, &v, &mut gp, &mut scratch);
        energy_seq_hvp(&xm, &v, &mut gm, &mut scratch);
        let fd: Vec<f64> = gp.iter().zip(&gm).map(|(a, b)| (a - b) / (2.0 * h)).collect();
        assert_close("Hessian-vector product against finite differences", &hv, &fd, 1e-6);
    }
}
