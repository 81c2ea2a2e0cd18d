//! Gradient checking helpers, independent of cotan.
#![allow(dead_code, clippy::neg_cmp_op_on_partial_ord)]

use cotan_user_models::Rng;

/// Relative step of the central differences: h_i = FD_STEP * max(1, |x_i|).
pub const FD_STEP: f64 = 1e-5;

/// Central finite-difference gradient of `f` at `x`.
pub fn fd_gradient(f: impl Fn(&[f64]) -> f64, x: &[f64]) -> Vec<f64> {
    fd_gradient_step(f, x, FD_STEP)
}

pub fn fd_gradient_step(f: impl Fn(&[f64]) -> f64, x: &[f64], step: f64) -> Vec<f64> {
    let mut xp = x.to_vec();
    (0..x.len())
        .map(|i| {
            let h = step * x[i].abs().max(1.0);
            let orig = xp[i];
            xp[i] = orig + h;
            let fp = f(&xp);
            xp[i] = orig - h;
            let fm = f(&xp);
            xp[i] = orig;
            (fp - fm) / (2.0 * h)
        })
        .collect()
}

/// Central finite-difference derivative of a scalar function.
pub fn fd_derivative(f: impl Fn(f64) -> f64, x: f64) -> f64 {
    let h = FD_STEP * x.abs().max(1.0);
    (f(x + h) - f(x - h)) / (2.0 * h)
}

/// Asserts |a_i - b_i| <= atol + rtol * max(|a_i|, |b_i|) for every component.
#[track_caller]
pub fn assert_close(what: &str, ad: &[f64], fd: &[f64], rtol: f64, atol: f64) {
    assert_eq!(ad.len(), fd.len(), "{what}: lengths differ");
    let mut worst = (0usize, 0.0f64);
    for (i, (a, b)) in ad.iter().zip(fd).enumerate() {
        let err = (a - b).abs();
        let tol = atol + rtol * a.abs().max(b.abs());
        if !(err <= tol) {
            let excess = err / tol;
            if excess > worst.1 || worst.1.is_nan() {
                worst = (i, excess);
            }
        }
    }
    if worst.1 > 0.0 {
        let i = worst.0;
        panic!(
            "{what}: derivative disagrees at component {i}: AD {:e}, reference {:e} (rtol {rtol:e}, atol {atol:e})\n  AD : {ad:?}\n  ref: {fd:?}",
            ad[i], fd[i]
        );
    }
}

#[track_caller]
pub fn assert_close_scalar(what: &str, ad: f64, reference: f64, rtol: f64, atol: f64) {
    assert_close(what, &[ad], &[reference], rtol, atol);
}

/// A deterministic random direction with entries in [-1, 1).
pub fn direction(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| rng.range(-1.0, 1.0)).collect()
}

/// Dot-product test: the forward directional derivative `tangent` along `v` must equal
/// `grad · v` (to rounding: 1e-10 relative to the sum of |grad_i v_i|).
#[track_caller]
pub fn assert_dot_product(what: &str, grad: &[f64], v: &[f64], tangent: f64) {
    let gv: f64 = grad.iter().zip(v).map(|(g, v)| g * v).sum();
    let scale: f64 = grad.iter().zip(v).map(|(g, v)| (g * v).abs()).sum::<f64>().max(tangent.abs()).max(1.0);
    assert!(
        (gv - tangent).abs() <= 1e-10 * scale,
        "{what}: forward tangent {tangent:e} != reverse gradient . v = {gv:e}"
    );
}

#[track_caller]
pub fn assert_same_value(what: &str, from_derivative: f64, primal: f64) {
    assert!(
        (from_derivative - primal).abs() <= 1e-12 * primal.abs().max(1.0),
        "{what}: derivative returned value {from_derivative:e}, primal {primal:e}"
    );
}
