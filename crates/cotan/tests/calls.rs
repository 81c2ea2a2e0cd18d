//! Calls between differentiable functions, in any module, with any mix of active and
//! constant arguments, recursion included; checked against finite differences.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

mod common;

mod physics {
    /// Kinetic energy of particles, marked callable.
    #[cotan::differentiable]
    pub fn energy(v: &[f64], mass: f64) -> f64 {
        let mut e = 0.0;
        for i in 0..v.len() {
            e += 0.5 * mass * v[i] * v[i];
        }
        e
    }

    /// Writes a result through `&mut`, returns nothing.
    #[cotan::differentiable]
    pub fn smooth(x: &[f64], out: &mut [f64]) {
        for i in 0..x.len() {
            let left = if i > 0 { x[i - 1] } else { x[i] };
            out[i] = 0.25 * left + 0.75 * x[i].sin();
        }
    }
}

#[cotan::differentiable]
fn square(x: f64) -> f64 {
    x * x
}

/// Recursive: x^n by repeated squaring.
#[cotan::differentiable]
fn power(x: f64, n: u32) -> f64 {
    if n == 0 {
        return 1.0;
    }
    let h = power(x, n / 2);
    if n % 2 == 0 {
        h * h
    } else {
        h * h * x
    }
}

/// A function with its own autodiff attributes is callable too, in the modes they name.
#[cotan::autodiff_reverse(d_logistic, Active, Active)]
#[cotan::autodiff_forward(t_logistic, Dual, Dual)]
fn logistic(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

slice_case!(
    calls_across_modules_with_mixed_activity,
    [[0.3, -1.2, 2.5, 0.8]],
    fn f(x: &[f64]) -> f64 {
        let mut y = vec![0.0; x.len()];
        physics::smooth(x, &mut y);
        let constant = [1.0, 2.0, 3.0, 4.0];
        let e1 = physics::energy(&y, x[0]);
        let e2 = physics::energy(&constant, x[1]);
        let e3 = physics::energy(x, 2.0);
        square(e1) * 0.1 + e2 + e3 + logistic(x[2])
    }
);

slice_case!(
    recursion_and_calls_in_loops,
    [[0.3, -1.2, 0.9]],
    fn f(x: &[f64]) -> f64 {
        let mut s = 0.0;
        for i in 0..x.len() {
            s += power(x[i], 5) + square(x[i] * s);
        }
        s
    }
);

slice_case!(
    a_constant_call_costs_nothing,
    [[0.3, -1.2, 0.9]],
    fn f(x: &[f64]) -> f64 {
        let c = power(2.0, 3);
        x[0] * c + square(x[1])
    }
);

mod imported {
    #[cotan::differentiable]
    pub fn cube(x: f64) -> f64 {
        x * x * x
    }
}

use imported::cube as cubed;

/// A function imported by name (and renamed) is called with its derivatives.
#[cotan::autodiff_reverse(d_uses_import, Active, Active)]
fn uses_import(x: f64) -> f64 {
    cubed(x) + 2.0 * x
}

#[test]
fn functions_imported_by_name() {
    let (y, dx) = d_uses_import(1.5, 1.0);
    assert_eq!(y, 1.5f64.powi(3) + 3.0);
    assert!((dx - (3.0 * 1.5 * 1.5 + 2.0)).abs() < 1e-12);
}

fn square_f32(a: f32) -> f32 {
    a * a
}

/// An `f32` helper's result used by a method before any other use fixes its type
/// (`square_f32(..).powi(2)`): the result has the helper's type, as in rustc.
#[cotan::autodiff_reverse(d_f32_results, Active, Active)]
#[cotan::autodiff_forward(t_f32_results, Dual, Dual)]
fn f32_results(a: f32) -> f32 {
    let s = square_f32(square_f32(2.0 * a).powi(2));
    s.sqrt() + square_f32(a).sin()
}

#[test]
fn results_of_f32_helpers_keep_their_type() {
    for a in [0.3f32, -0.7, 1.1] {
        let (y, d) = d_f32_results(a, 1.0);
        assert_eq!(y, f32_results(a));
        // d/da [(2a)^4 + sin(a²)] = 64 a³ + 2a cos(a²) (sqrt of (2a)^8 is (2a)^4).
        let want = 64.0 * a.powi(3) + 2.0 * a * (a * a).cos();
        assert!((d - want).abs() < 1e-4 * want.abs().max(1.0), "{d} vs {want}");
        let (y2, t) = t_f32_results(a, 1.0);
        assert_eq!(y2, y);
        assert!((t - d).abs() < 1e-5 * d.abs().max(1.0), "forward {t} vs reverse {d}");
    }
}

/// Helpers returning an `Option` (lowered at their calls): an index found in a loop, a
/// number that may be missing; used with `match`, `if let` and `unwrap_or`.
fn safe_sqrt(x: f64) -> Option<f64> {
    if x >= 0.0 {
        Some(x.sqrt())
    } else {
        None
    }
}

fn peak(xs: &[f64]) -> Option<usize> {
    let mut best = None;
    let mut top = f64::NEG_INFINITY;
    for (i, &x) in xs.iter().enumerate() {
        if x > top {
            top = x;
            best = Some(i);
        }
    }
    best
}

fn scaled_peak(xs: &[f64], t: f64) -> Option<(usize, f64)> {
    match peak(xs) {
        Some(i) if xs[i] > t => Some((i, xs[i] * t)),
        _ => None,
    }
}

#[cotan::autodiff_reverse(d_with_options, Duplicated, Active, Active)]
#[cotan::autodiff_forward(t_with_options, Dual, Dual, Dual)]
fn with_options(xs: &[f64], a: f64) -> f64 {
    let mut s = 0.0;
    for &x in xs {
        s += safe_sqrt(x * a).unwrap_or(0.0);
        if let Some(r) = safe_sqrt(x - a) {
            s += r * r * r;
        }
    }
    let top = match peak(xs) {
        Some(i) => xs[i],
        None => 0.0,
    };
    match scaled_peak(xs, a) {
        Some((i, v)) => s + v * (i as f64 + 1.0) + top,
        None => s - top,
    }
}

/// `f(xs, a)` checked with its reverse derivative `rev` (`Duplicated, Active, Active`) and
/// forward derivative `fwd` (`Dual, Dual, Dual`) at `x`, which is `xs` followed by `a`.
fn check_slice_and_number(
    what: &str,
    f: fn(&[f64], f64) -> f64,
    rev: fn(&[f64], &mut [f64], f64, f64) -> (f64, f64),
    fwd: fn(&[f64], &[f64], f64, f64) -> (f64, f64),
    x: &[f64],
) {
    let n = x.len() - 1;
    let grad = |x: &[f64]| {
        let mut g = vec![0.0; n];
        let (v, da) = rev(&x[..n], &mut g, x[n], 1.0);
        assert_eq!(v, f(&x[..n], x[n]));
        g.push(da);
        g
    };
    let jvp = |x: &[f64], u: &[f64]| fwd(&x[..n], &u[..n], x[n], u[n]).1;
    common::check_scalar(what, &|x| f(&x[..n], x[n]), &jvp, &grad, x, 3);
}

#[test]
fn helpers_returning_options() {
    // The peak above `a`, and (a = 2.5) none.
    for a in [0.8, 2.5] {
        check_slice_and_number(
            "with_options",
            with_options,
            d_with_options,
            t_with_options,
            &[0.3, 1.2, -0.4, 0.9, 2.0, a],
        );
    }
}

/// Marked functions (`#[cotan::differentiable]`, which export their derivatives to other
/// crates) take arrays and structs of numbers by value from callers in the crate as
/// unmarked ones do (they were refused before).
#[derive(Clone, Copy)]
struct Cfg {
    k: f64,
}

#[cotan::differentiable]
fn by_value_term(c: Cfg, p: [f64; 2], x: f64) -> f64 {
    c.k * x * x + p[0] * p[1]
}

#[cotan::autodiff_reverse(d_by_value_caller, Const, Active, Active)]
#[cotan::autodiff_forward(t_by_value_caller, Const, Dual, Dual)]
fn by_value_caller(c: Cfg, x: f64) -> f64 {
    by_value_term(c, [x, 2.0 * x], x.sin())
}

#[test]
fn marked_functions_take_arrays_and_structs_by_value() {
    let c = Cfg { k: 1.5 };
    let x = 0.7;
    let (v, g) = d_by_value_caller(c, x, 1.0);
    assert_eq!(v, by_value_caller(c, x));
    // d/dx (k sin²x + 2x²) = 2k sin x cos x + 4x.
    let want = 2.0 * c.k * x.sin() * x.cos() + 4.0 * x;
    assert!((g - want).abs() <= 1e-14 * want.abs(), "{g} vs {want}");
    let (_, t) = t_by_value_caller(c, x, 1.0);
    assert!((t - want).abs() <= 1e-14 * want.abs(), "{t} vs {want}");
}

/// Helpers lowered at their calls that `return` early: an `Option` helper whose first
/// `return` is `None` (the declared type shapes it), and a helper that takes a closure.
fn first_above(xs: &[f64], t: f64) -> Option<(usize, f64)> {
    if xs.is_empty() {
        return None;
    }
    for i in 0..xs.len() {
        if xs[i] > t {
            return Some((i, xs[i] * t));
        }
    }
    None
}

fn apply_clamped<F: Fn(f64) -> f64>(f: F, x: f64) -> f64 {
    if x < 0.0 {
        return f(-x) * 0.5;
    }
    let y = f(x);
    if y > 2.0 {
        return 2.0 + (y - 2.0).tanh();
    }
    y
}

#[cotan::autodiff_reverse(d_early_returns, Duplicated, Active, Active)]
#[cotan::autodiff_forward(t_early_returns, Dual, Dual, Dual)]
fn early_returns(xs: &[f64], a: f64) -> f64 {
    let mut s = 0.0;
    for &v in xs {
        s += apply_clamped(|z| z * a + z.sin(), v - 0.5);
    }
    match first_above(xs, a) {
        Some((i, v)) => s + v * (i as f64 + 1.0),
        None => s,
    }
}

#[test]
fn helpers_lowered_at_their_calls_return_early() {
    // A value above `a` is found at index 1, at index 4, and (a = 2.5) none is.
    for a in [0.8, 1.7, 2.5] {
        check_slice_and_number(
            "early_returns",
            early_returns,
            d_early_returns,
            t_early_returns,
            &[0.3, 1.2, -0.4, 0.9, 2.0, a],
        );
    }
}
