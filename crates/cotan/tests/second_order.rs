//! Hessian-vector products and Hessians by forward-over-reverse, checked against finite
//! differences of the reverse-mode gradient.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

use cotan::{autodiff_reverse, hessian, hvp};

#[hvp(rosen_hvp)]
#[hessian(rosen_hess)]
#[autodiff_reverse(rosen_grad, Duplicated, Active)]
fn rosenbrock(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        s += 100.0 * (x[i + 1] - x[i] * x[i]).powi(2) + (1.0 - x[i]).powi(2);
    }
    s
}

/// A function with loops, branches, a while loop and constant data.
#[hvp(model_hvp)]
#[hessian(model_hess)]
#[autodiff_reverse(model_grad, Duplicated, Const, Const, Active)]
fn model(p: &[f64], t: &[f64], scale: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..t.len() {
        let mut z = p[0] * t[i] + p[1];
        let mut k = 0;
        while k < 3 {
            z = z.tanh() * p[2] + z * 0.5;
            k += 1;
        }
        if z > 0.0 {
            s += z * z * scale;
        } else {
            s += (z * p[1]).exp();
        }
    }
    let lse = p.iter().map(|v| v.exp()).sum::<f64>().ln();
    s + lse
}

/// Finite differences of a gradient along v (central, with one Richardson step).
fn fd_hvp(grad: &dyn Fn(&[f64]) -> Vec<f64>, x: &[f64], v: &[f64]) -> Vec<f64> {
    let d = |h: f64| -> Vec<f64> {
        let xp: Vec<f64> = x.iter().zip(v).map(|(a, b)| a + h * b).collect();
        let xm: Vec<f64> = x.iter().zip(v).map(|(a, b)| a - h * b).collect();
        grad(&xp).iter().zip(grad(&xm)).map(|(p, m)| (p - m) / (2.0 * h)).collect()
    };
    let (a, b) = (d(1e-4), d(5e-5));
    a.iter().zip(&b).map(|(a, b)| (4.0 * b - a) / 3.0).collect()
}

fn assert_close(got: &[f64], want: &[f64], what: &str) {
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 1e-6 * w.abs().max(1.0), "{what}[{k}]: {g} vs {w}");
    }
}

#[test]
fn rosenbrock_hvp_matches_finite_differences_of_the_gradient() {
    let x: Vec<f64> = (0..7).map(|i| 0.3 + 0.2 * (i as f64).sin()).collect();
    let v: Vec<f64> = (0..7).map(|i| (i as f64 * 0.7).cos()).collect();
    let grad = |x: &[f64]| {
        let mut g = vec![0.0; x.len()];
        rosen_grad(x, &mut g, 1.0);
        g
    };
    let mut g = vec![9.0; 7];
    let mut hv = vec![9.0; 7];
    let value = rosen_hvp(&x, &v, &mut g, &mut hv);
    assert_eq!(value, rosenbrock(&x));
    assert_close(&g, &grad(&x), "gradient");
    assert_close(&hv, &fd_hvp(&grad, &x, &v), "hvp");
}

#[test]
fn hessian_is_exactly_symmetric_and_matches_hvps() {
    let x: Vec<f64> = (0..5).map(|i| 0.5 - 0.3 * i as f64).collect();
    let n = x.len();
    let mut g = vec![0.0; n];
    let mut h = vec![0.0; n * n];
    let value = rosen_hess(&x, &mut g, &mut h);
    assert_eq!(value, rosenbrock(&x));
    for i in 0..n {
        for j in 0..n {
            assert_eq!(h[i * n + j], h[j * n + i], "H[{i},{j}] != H[{j},{i}]");
        }
    }
    // Rosenbrock's Hessian, written out.
    for i in 0..n {
        for j in 0..n {
            let mut want = 0.0;
            if i == j {
                if i + 1 < n {
                    want += 1200.0 * x[i] * x[i] - 400.0 * x[i + 1] + 2.0;
                }
                if i > 0 {
                    want += 200.0;
                }
            } else if j == i + 1 || i == j + 1 {
                want = -400.0 * x[i.min(j)];
            }
            assert!(
                (h[i * n + j] - want).abs() <= 1e-9 * want.abs().max(1.0),
                "H[{i},{j}] = {} vs {want}",
                h[i * n + j]
            );
        }
    }
}

#[test]
fn second_order_through_loops_branches_and_constant_arguments() {
    let p = [0.7, -0.3, 1.2];
    let t: Vec<f64> = (0..9).map(|i| i as f64 * 0.25 - 1.0).collect();
    let grad = |p: &[f64]| {
        let mut g = vec![0.0; 3];
        model_grad(p, &mut g, &t, 0.8, 1.0);
        g
    };
    let v = [0.3, -1.1, 0.4];
    let mut g = [0.0; 3];
    let mut hv = [0.0; 3];
    let value = model_hvp(&p, &v, &t, 0.8, &mut g, &mut hv);
    assert_eq!(value, model(&p, &t, 0.8));
    assert_close(&g, &grad(&p), "gradient");
    assert_close(&hv, &fd_hvp(&grad, &p, &v), "hvp");
    let mut h = [0.0; 9];
    model_hess(&p, &t, 0.8, &mut g, &mut h);
    for j in 0..3 {
        let mut e = [0.0; 3];
        e[j] = 1.0;
        let col = fd_hvp(&grad, &p, &e);
        for i in 0..3 {
            assert!((h[i * 3 + j] - col[i]).abs() <= 1e-6 * col[i].abs().max(1.0), "H[{i},{j}]");
            assert_eq!(h[i * 3 + j], h[j * 3 + i]);
        }
    }
}

/// Constant parameters named like the Hessian's own locals (`n`, `value`, `c0`, `dirs`,
/// `j0`, `e0`): the Hessian passes the caller's values on, not its locals.
#[hessian(named_like_locals_hess)]
#[autodiff_reverse(named_like_locals_grad, Duplicated, Const, Const, Const, Const, Const, Const, Active)]
fn named_like_locals(x: &[f64], n: usize, value: f64, c0: f64, dirs: f64, j0: usize, e0: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        s += x[i % x.len()] * x[(i + j0) % x.len()] * value;
    }
    s + c0 * x[0] * x[0] * x[1] + dirs * e0 * x[2].sin()
}

#[test]
fn hessian_passes_parameters_named_like_its_locals() {
    let x = [0.2, 0.9, -0.4];
    let (n, value, c0, dirs, j0, e0) = (5, 3.0, 0.5, 1.5, 1, -2.0);
    let grad = |x: &[f64]| {
        let mut g = vec![0.0; x.len()];
        named_like_locals_grad(x, &mut g, n, value, c0, dirs, j0, e0, 1.0);
        g
    };
    let mut g = vec![0.0; 3];
    let mut h = vec![0.0; 9];
    let got = named_like_locals_hess(&x, n, value, c0, dirs, j0, e0, &mut g, &mut h);
    assert_eq!(got, named_like_locals(&x, n, value, c0, dirs, j0, e0));
    assert_close(&g, &grad(&x), "gradient");
    for j in 0..3 {
        let mut unit = vec![0.0; 3];
        unit[j] = 1.0;
        let column: Vec<f64> = (0..3).map(|i| h[i * 3 + j]).collect();
        assert_close(&column, &fd_hvp(&grad, &x, &unit), "Hessian column");
    }
}
