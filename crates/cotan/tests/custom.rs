//! Custom derivatives and zero derivatives, used from differentiated callers in both modes.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

use cotan::{autodiff_forward, autodiff_reverse, custom_derivative, zero_derivative};

// ---- a straight-through estimator: round with derivative 1 ----

#[custom_derivative(forward = round_fwd, reverse = round_rev)]
fn ste_round(x: f64) -> f64 {
    x.round()
}
fn round_fwd(x: f64, dx: f64) -> (f64, f64) {
    (x.round(), dx)
}
fn round_rev(x: f64, dret: f64) -> (f64, f64) {
    (x.round(), dret)
}

#[autodiff_reverse(d_quantized, Duplicated, Active)]
#[autodiff_forward(t_quantized, Dual, Dual)]
fn quantized(w: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..w.len() {
        let q = ste_round(w[i] * 4.0) / 4.0;
        s += q * q;
    }
    s
}

#[test]
fn straight_through_estimator() {
    let w = [0.3, -1.1, 0.62];
    let mut g = [0.0; 3];
    let v = d_quantized(&w, &mut g, 1.0);
    assert_eq!(v, quantized(&w));
    for i in 0..3 {
        // d/dw (round(4w)/4)^2 with round' = 1: 2 q.
        let q = (w[i] * 4.0).round() / 4.0;
        assert_eq!(g[i], 2.0 * q);
        let mut e = [0.0; 3];
        e[i] = 1.0;
        assert_eq!(t_quantized(&w, &e).1, 2.0 * q);
    }
}

// ---- a numerically stable rule for logsumexp over a slice ----

#[custom_derivative(reverse = lse_rev, forward = lse_fwd)]
fn logsumexp(x: &[f64]) -> f64 {
    let m = x.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    m + x.iter().map(|v| (v - m).exp()).sum::<f64>().ln()
}
fn lse_fwd(x: &[f64], dx: &[f64]) -> (f64, f64) {
    let y = logsumexp(x);
    let t: f64 = x.iter().zip(dx).map(|(v, d)| (v - y).exp() * d).sum();
    (y, t)
}
fn lse_rev(x: &[f64], dx: &mut [f64], dret: f64) -> f64 {
    let y = logsumexp(x);
    for i in 0..x.len() {
        dx[i] += (x[i] - y).exp() * dret;
    }
    y
}

#[autodiff_reverse(d_nll, Duplicated, Active)]
#[autodiff_forward(t_nll, Dual, Dual)]
fn nll(logits: &[f64]) -> f64 {
    logsumexp(logits) - logits[0]
}

#[test]
fn stable_logsumexp_rule_with_huge_inputs() {
    // The naive formula overflows; the rule does not.
    let x = [1000.0, 999.0, 998.0];
    let mut g = [0.0; 3];
    let v = d_nll(&x, &mut g, 1.0);
    assert!(v.is_finite());
    let z: f64 = x.iter().map(|v| (v - 1000.0).exp()).sum();
    let p: Vec<f64> = x.iter().map(|v| (v - 1000.0).exp() / z).collect();
    assert!((g[0] - (p[0] - 1.0)).abs() < 1e-12);
    assert!((g[1] - p[1]).abs() < 1e-12 && (g[2] - p[2]).abs() < 1e-12);
    let (_, t) = t_nll(&x, &[0.0, 1.0, 0.0]);
    assert!((t - p[1]).abs() < 1e-12);
}

// ---- a solve with a hand-written adjoint (as for a call into a linear-algebra crate) ----

/// Solves the 2×2 system A x = b (A row-major), standing in for an external solver.
#[custom_derivative(reverse = solve_rev)]
fn solve(a: &[f64; 4], b: &[f64; 2], x: &mut [f64; 2]) {
    let det = a[0] * a[3] - a[1] * a[2];
    x[0] = (a[3] * b[0] - a[1] * b[1]) / det;
    x[1] = (a[0] * b[1] - a[2] * b[0]) / det;
}

/// Adjoint of x = A⁻¹ b: with x̄ the adjoint of the solution, b̄ += A⁻ᵀ x̄, Ā -= b̄ xᵀ.
fn solve_rev(a: &[f64; 4], da: &mut [f64; 4], b: &[f64; 2], db: &mut [f64; 2], x: &mut [f64; 2], dx: &mut [f64; 2]) {
    solve(a, b, x);
    let at = [a[0], a[2], a[1], a[3]];
    let mut w = [0.0; 2];
    solve(&at, dx, &mut w);
    db[0] += w[0];
    db[1] += w[1];
    for i in 0..2 {
        for j in 0..2 {
            da[2 * i + j] -= w[i] * x[j];
        }
    }
    dx[0] = 0.0;
    dx[1] = 0.0;
}

#[autodiff_reverse(d_energy, Duplicated, Duplicated, Active)]
fn energy(a: &[f64; 4], b: &[f64; 2]) -> f64 {
    let mut x = [0.0; 2];
    solve(a, b, &mut x);
    x[0] * x[0] + 3.0 * x[1]
}

#[test]
fn linear_solve_with_hand_written_adjoint_matches_finite_differences() {
    let a = [3.0, 1.0, 0.5, 2.0];
    let b = [1.0, -2.0];
    let mut da = [0.0; 4];
    let mut db = [0.0; 2];
    let v = d_energy(&a, &mut da, &b, &mut db, 1.0);
    assert_eq!(v, energy(&a, &b));
    let h = 1e-6;
    for k in 0..4 {
        let (mut p, mut m) = (a, a);
        p[k] += h;
        m[k] -= h;
        let fd = (energy(&p, &b) - energy(&m, &b)) / (2.0 * h);
        assert!((da[k] - fd).abs() < 1e-6, "dA[{k}] {} vs {fd}", da[k]);
    }
    for k in 0..2 {
        let (mut p, mut m) = (b, b);
        p[k] += h;
        m[k] -= h;
        let fd = (energy(&a, &p) - energy(&a, &m)) / (2.0 * h);
        assert!((db[k] - fd).abs() < 1e-6, "db[{k}] {} vs {fd}", db[k]);
    }
}

// ---- zero derivative ----

#[zero_derivative]
fn stop_gradient(x: f64) -> f64 {
    x
}

#[autodiff_reverse(d_g, Active, Active)]
#[autodiff_forward(t_g, Dual, Dual)]
fn g(x: f64) -> f64 {
    x * stop_gradient(x)
}

#[test]
fn zero_derivative_treats_the_result_as_a_constant() {
    assert_eq!(d_g(3.0, 1.0), (9.0, 3.0));
    assert_eq!(t_g(3.0, 1.0), (9.0, 3.0));
}

// A zero derivative of a function returning a bool or an integer: what cotan cannot read
// (`Result`'s `is_ok`), wrapped as the message at `.is_ok()` says.
#[derive(Debug)]
pub enum InputError {
    NegativeVol,
    Expired,
}

fn check_inputs(vol: f64, t: f64) -> Result<(), InputError> {
    if vol < 0.0 {
        return Err(InputError::NegativeVol);
    }
    if t <= 0.0 {
        return Err(InputError::Expired);
    }
    Ok(())
}

#[cotan::zero_derivative]
fn inputs_ok(vol: f64, t: f64) -> bool {
    check_inputs(vol, t).is_ok()
}

#[cotan::zero_derivative]
fn bucket(x: f64) -> usize {
    (x.abs() * 10.0) as usize % 3
}

#[autodiff_reverse(d_guarded_price, Active, Active, Active)]
#[autodiff_forward(t_guarded_price, Dual, Dual, Dual)]
fn guarded_price(vol: f64, t: f64) -> f64 {
    if !inputs_ok(vol, t) {
        return f64::NAN;
    }
    let k = bucket(vol) as f64;
    vol * t.sqrt() * (1.0 + k)
}

#[test]
fn zero_derivatives_of_functions_returning_bools_and_integers() {
    let (y, dv, dt) = d_guarded_price(0.23, 1.5, 1.0);
    assert_eq!(y, guarded_price(0.23, 1.5));
    // bucket(0.23) = 2: the price is 3 vol √t.
    assert!((dv - 3.0 * 1.5f64.sqrt()).abs() < 1e-14);
    assert!((dt - 3.0 * 0.23 * 0.5 / 1.5f64.sqrt()).abs() < 1e-14);
    assert_eq!(t_guarded_price(0.23, 1.0, 1.5, 0.0).1, dv);
    assert!(d_guarded_price(-0.2, 1.5, 1.0).0.is_nan());
}

/// An index found by a method cotan does not lower (`partition_point`), in a helper marked
/// `#[cotan::zero_derivative]`, as the message at such a method says.
#[cotan::zero_derivative]
fn locate(xs: &[f64], x: f64) -> usize {
    xs.partition_point(|&v| v <= x).saturating_sub(1).min(xs.len() - 2)
}

#[autodiff_reverse(d_interp, Const, Const, Active, Active)]
#[autodiff_forward(t_interp, Const, Const, Dual, Dual)]
fn interp(xs: &[f64], ys: &[f64], x: f64) -> f64 {
    let i = locate(xs, x);
    let t = (x - xs[i]) / (xs[i + 1] - xs[i]);
    ys[i] * (1.0 - t) + ys[i + 1] * t
}

#[test]
fn an_index_from_a_zero_derivative_helper() {
    let (xs, ys) = ([0.0, 1.0, 2.0, 4.0], [0.0, 2.0, 3.0, 7.0]);
    for (x, slope) in [(0.5, 2.0), (1.5, 1.0), (2.5, 2.0)] {
        assert_eq!(d_interp(&xs, &ys, x, 1.0), (interp(&xs, &ys, x), slope));
        assert_eq!(t_interp(&xs, &ys, x, 1.0), (interp(&xs, &ys, x), slope));
    }
}
