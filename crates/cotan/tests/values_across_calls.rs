//! Values that cross calls the way users write them: arrays returned by helpers
//! (`-> [f64; 2]`) and assigned whole (`state = step(state)`), tuples returned and kept
//! (`let p = pair(x); p.0`), tuple parameters destructured (`let (n, m) = shape;`), and
//! `split_first`/`split_last`, arrays chosen by `if` and `match` (also in a helper that takes
//! a closure). Each checked against finite differences, forward against
//! reverse mode.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

use cotan::{autodiff_forward, autodiff_reverse};

type State = [f64; 2];

fn step(s: State, h: f64, k: f64) -> State {
    let [x, v] = s;
    [x + h * v, v - h * k * x.sin()]
}

fn pair(x: f64) -> (f64, f64) {
    (x.sin(), x.cos() * x)
}

#[autodiff_reverse(d_f, Active, Active, Const, Active)]
#[autodiff_forward(t_f, Dual, Dual, Const, Dual)]
fn f(x0: f64, k: f64, shape: (usize, f64)) -> f64 {
    let (n, h) = shape;
    let mut s = [x0, 0.0];
    for _ in 0..n {
        s = step(s, h, k);
    }
    let p = pair(s[0]);
    let w = [p.0, p.1, s[1]];
    let (first, rest) = w.split_first().expect("three elements");
    let (last, _) = w.split_last().unwrap();
    first * rest[1] + last + p.1 * s[1]
}

#[test]
fn arrays_tuples_and_splits_across_calls() {
    let shape = (5, 0.1);
    for (x0, k) in [(0.7, 2.0), (-1.2, 0.5)] {
        let (v, dx0, dk) = d_f(x0, k, shape, 1.0);
        assert_eq!(v, f(x0, k, shape));
        let h = 1e-6;
        let fx = (f(x0 + h, k, shape) - f(x0 - h, k, shape)) / (2.0 * h);
        let fk = (f(x0, k + h, shape) - f(x0, k - h, shape)) / (2.0 * h);
        assert!((dx0 - fx).abs() < 1e-7 * fx.abs().max(1.0), "{dx0} vs {fx}");
        assert!((dk - fk).abs() < 1e-7 * fk.abs().max(1.0), "{dk} vs {fk}");
        let (v2, t) = t_f(x0, 0.3, k, -0.4, shape);
        assert_eq!(v2, v);
        let want = 0.3 * dx0 - 0.4 * dk;
        assert!((t - want).abs() < 1e-12 * want.abs().max(1.0), "{t} vs {want}");
    }
}

/// A whole array assigned through `&mut [f64; 2]`, from values that read it.
#[autodiff_reverse(d_rotate, Duplicated, Active)]
fn rotate(out: &mut [f64; 2], y: f64) {
    *out = [out[1] * y, out[0] + 2.0 * y];
    let tmp = *out;
    *out = [tmp[0] * tmp[1], tmp[0]];
}

#[test]
fn whole_arrays_assigned_through_references() {
    let (x, y) = ([0.5, -1.5], 0.8);
    let run = |x: [f64; 2], y: f64| {
        let mut o = x;
        rotate(&mut o, y);
        o
    };
    let mut o = x;
    let mut d = [1.0, 0.0];
    let dy = d_rotate(&mut o, &mut d, y);
    assert_eq!(o, run(x, y));
    let h = 1e-6;
    let fd_y = (run(x, y + h)[0] - run(x, y - h)[0]) / (2.0 * h);
    assert!((dy - fd_y).abs() < 1e-7 * fd_y.abs().max(1.0), "{dy} vs {fd_y}");
    for k in 0..2 {
        let (mut xp, mut xm) = (x, x);
        xp[k] += h;
        xm[k] -= h;
        let fd = (run(xp, y)[0] - run(xm, y)[0]) / (2.0 * h);
        assert!((d[k] - fd).abs() < 1e-7 * fd.abs().max(1.0), "d[{k}] = {} vs {fd}", d[k]);
    }
}

type V3 = [f64; 3];

#[derive(Clone, Copy)]
enum Method {
    Euler,
    Rk4,
}

fn lorenz(s: V3, p: &[f64]) -> V3 {
    [p[0] * (s[1] - s[0]), s[0] * (p[1] - s[2]) - s[1], s[0] * s[1] - p[2] * s[2]]
}

fn axpy(a: f64, x: V3, y: V3) -> V3 {
    [y[0] + a * x[0], y[1] + a * x[1], y[2] + a * x[2]]
}

/// A step chosen by `match`, each arm an array, in a helper that takes the right-hand side
/// as a closure.
fn integrate<F: Fn(V3) -> V3>(f: F, s: V3, h: f64, m: Method) -> V3 {
    match m {
        Method::Euler => axpy(h, f(s), s),
        Method::Rk4 => {
            let k1 = f(s);
            let k2 = f(axpy(0.5 * h, k1, s));
            let k3 = f(axpy(0.5 * h, k2, s));
            let k4 = f(axpy(h, k3, s));
            let mut out = s;
            for i in 0..3 {
                out[i] += h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
            }
            out
        }
    }
}

#[autodiff_reverse(d_chosen_arrays, Duplicated, Const, Active)]
#[autodiff_forward(t_chosen_arrays, Dual, Const, Dual)]
fn chosen_arrays(p: &[f64], m: Method) -> f64 {
    let mut s = [1.0, 1.0, 1.0];
    for k in 0..30 {
        s = integrate(|z| lorenz(z, p), s, 0.01, m);
        // An array chosen by `if`, then written in place.
        let mut t = if k % 3 == 0 { axpy(0.1, s, s) } else { s };
        t[1] *= 0.99;
        s = t;
    }
    s.iter().map(|v| v * v).sum::<f64>().sqrt()
}

#[test]
fn arrays_chosen_by_if_and_match() {
    let p = [10.0, 28.0, 8.0 / 3.0];
    let u = [0.3, -0.2, 0.5];
    for m in [Method::Euler, Method::Rk4] {
        let mut dp = [0.0; 3];
        let v = d_chosen_arrays(&p, &mut dp, m, 1.0);
        assert_eq!(v, chosen_arrays(&p, m));
        let h = 1e-6;
        for i in 0..3 {
            let (mut a, mut b) = (p, p);
            a[i] += h;
            b[i] -= h;
            let fd = (chosen_arrays(&a, m) - chosen_arrays(&b, m)) / (2.0 * h);
            assert!((dp[i] - fd).abs() < 1e-6 * fd.abs().max(1.0), "dp[{i}] = {} vs {fd}", dp[i]);
        }
        let (v2, t) = t_chosen_arrays(&p, &u, m);
        assert_eq!(v2, v);
        let want: f64 = dp.iter().zip(&u).map(|(a, b)| a * b).sum();
        assert!((t - want).abs() < 1e-12 * want.abs().max(1.0), "{t} vs {want}");
    }
}
