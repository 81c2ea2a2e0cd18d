//! Batched forward mode, as std: `#[autodiff_forward(NAME, N, ...)]` takes N shadows per
//! `Dual` input and returns `[primal, t1, .., tN]` (`DualOnly`: `[t1, .., tN]`). Each lane
//! must equal one unbatched forward call.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

use cotan::autodiff_forward;

#[autodiff_forward(f_b3, 3, Dual, Dual, Dual)]
#[autodiff_forward(f_only, 2, Dual, Const, DualOnly)]
#[autodiff_forward(f_1, Dual, Dual, Dual)]
fn f(x: f64, y: f64) -> f64 {
    let mut s = x * y;
    for k in 0..4 {
        s = (s + x).sin() * y + k as f64;
    }
    s
}

#[autodiff_forward(g_b2, 2, Dual, Dual)]
#[autodiff_forward(g_1, Dual, Dual)]
fn g(x: &[f64]) -> f64 {
    let mut s = 0.0;
    let mut i = 0;
    while i < x.len() && s < 10.0 {
        s += x[i].exp() * x[(i + 1) % x.len()];
        i += 1;
    }
    s
}

/// A small vector function: its Jacobian, column by column, in one batched call.
#[autodiff_forward(h_jac, 3, Dual, Dual)]
#[autodiff_forward(h_1, Dual, Dual)]
fn h(x: &[f64], out: &mut [f64]) {
    out[0] = x[0] * x[1];
    out[1] = x[1].sin() + x[2] * x[2];
    out[2] = x[0] / x[2];
}

#[test]
fn scalar_lanes_equal_unbatched_calls() {
    let (x, y) = (0.7, -1.3);
    let dirs = [(1.0, 0.0), (0.0, 1.0), (0.3, -0.8)];
    let [v, t0, t1, t2] = f_b3(x, dirs[0].0, dirs[1].0, dirs[2].0, y, dirs[0].1, dirs[1].1, dirs[2].1);
    assert_eq!(v, f(x, y));
    for (t, d) in [t0, t1, t2].iter().zip(dirs) {
        assert_eq!(*t, f_1(x, d.0, y, d.1).1);
    }
    let [a, b] = f_only(x, 1.0, 0.5, y);
    assert_eq!(a, f_1(x, 1.0, y, 0.0).1);
    assert_eq!(b, f_1(x, 0.5, y, 0.0).1);
}

#[test]
fn slice_lanes_equal_unbatched_calls() {
    let x = [0.3, -0.2, 0.5, 0.1];
    let u0 = [1.0, 0.0, 0.5, -1.0];
    let u1 = [0.0, 2.0, -0.5, 0.25];
    let [v, t0, t1] = g_b2(&x, &u0, &u1);
    assert_eq!(v, g(&x));
    assert_eq!(t0, g_1(&x, &u0).1);
    assert_eq!(t1, g_1(&x, &u1).1);
}

#[test]
fn jacobian_of_a_vector_function_in_one_call() {
    let x = [0.3, -0.2, 0.5];
    let e = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
    let mut out = [0.0; 3];
    let mut cols = [[0.0; 3]; 3];
    let [c0, c1, c2] = &mut cols;
    h_jac(&x, &e[0], &e[1], &e[2], &mut out, c0, c1, c2);
    let exact = [[x[1], x[0], 0.0], [0.0, x[1].cos(), 2.0 * x[2]], [1.0 / x[2], 0.0, -x[0] / (x[2] * x[2])]];
    for j in 0..3 {
        let mut o = [0.0; 3];
        let mut t = [0.0; 3];
        h_1(&x, &e[j], &mut o, &mut t);
        assert_eq!(cols[j], t);
        for i in 0..3 {
            assert!((cols[j][i] - exact[i][j]).abs() < 1e-15);
        }
    }
    assert_eq!(out, [x[0] * x[1], x[1].sin() + x[2] * x[2], x[0] / x[2]]);
}

/// `Dualv`: one tangent buffer per slice holding all the directions, one after the other.
#[cotan::autodiff_forward(lanes_v, 3, Dualv, Dualv)]
#[cotan::autodiff_forward(lanes_d, 3, Dual, Dual)]
fn lanes(x: &[f64], y: &mut [f64]) {
    for i in 0..y.len() {
        y[i] = x[i].sin() * x[(i + 1) % x.len()] + y[i] * x[0];
    }
}

#[test]
fn dualv_takes_one_buffer_of_lanes() {
    let x = [0.3, -1.2, 0.7];
    let u: Vec<f64> = (0..9).map(|k| ((k as f64) * 0.61).cos()).collect();
    let mut y = [0.5, 1.5, -0.5];
    let mut dy = vec![0.0; 9];
    lanes_v(&x, &u, &mut y, &mut dy);
    let mut y2 = [0.5, 1.5, -0.5];
    let (mut d0, mut d1, mut d2) = ([0.0; 3], [0.0; 3], [0.0; 3]);
    lanes_d(&x, &u[0..3], &u[3..6], &u[6..9], &mut y2, &mut d0, &mut d1, &mut d2);
    assert_eq!(y, y2);
    let joined: Vec<f64> = [d0, d1, d2].concat();
    assert_eq!(dy, joined);
}

/// A width in reverse mode: one forward sweep, one reverse sweep per seed.
#[cotan::autodiff_reverse(vjp2, 2, Duplicated, Const, Duplicated)]
#[cotan::autodiff_reverse(vjp1, Duplicated, Const, Duplicated)]
fn model(x: &[f64; 3], a: &[f64; 3], y: &mut [f64; 2]) {
    y[0] = x.iter().map(|v| a[0] * v.powi(2)).sum();
    y[1] = x.windows(2).map(|w| (a[1] - w[0]).powi(2) + a[2] * (w[1] - w[0].powi(2)).powi(2)).sum();
}

#[test]
fn reverse_mode_with_a_width() {
    let x = [3.0, 5.0, 7.0];
    let a = [2.0, 1.0, 100.0];
    let (mut g0, mut g1) = ([0.0; 3], [0.0; 3]);
    let mut y = [0.0; 2];
    let (mut s0, mut s1) = ([1.0, 0.0], [0.0, 1.0]);
    vjp2(&x, &mut g0, &mut g1, &a, &mut y, &mut s0, &mut s1);
    assert_eq!(y, [166.0, 34020.0]);
    // std's documented values.
    assert_eq!(g0, [12.0, 20.0, 28.0]);
    assert_eq!(g1, [4804.0, 35208.0, -3600.0]);
    // The same as two single reverse calls.
    for (seed, want) in [([1.0, 0.0], g0), ([0.0, 1.0], g1)] {
        let mut g = [0.0; 3];
        let mut y = [0.0; 2];
        let mut s = seed;
        vjp1(&x, &mut g, &a, &mut y, &mut s);
        assert_eq!(g, want);
    }
}
