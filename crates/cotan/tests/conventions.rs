//! Derivatives at kinks and domain edges follow one documented convention (README,
//! "Derivative conventions"); these tests pin it, in both modes.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

use cotan::{autodiff_forward, autodiff_reverse};

macro_rules! unary {
    ($name:ident, |$x:ident| $body:expr) => {
        mod $name {
            use super::*;
            #[autodiff_reverse(rev, Active, Active)]
            #[autodiff_forward(fwd, Dual, Dual)]
            pub fn f($x: f64) -> f64 {
                $body
            }
        }
    };
}

macro_rules! binary {
    ($name:ident, |$x:ident, $y:ident| $body:expr) => {
        mod $name {
            use super::*;
            #[autodiff_reverse(rev, Active, Active, Active)]
            #[autodiff_forward(fwd, Dual, Dual, Dual)]
            pub fn f($x: f64, $y: f64) -> f64 {
                $body
            }
        }
    };
}

unary!(abs, |x| x.abs());
unary!(sqrt, |x| x.sqrt());
unary!(cbrt, |x| x.cbrt());
unary!(floor, |x| x.floor());
unary!(signum, |x| x.signum());
binary!(max, |x, y| x.max(y));
binary!(min, |x, y| x.min(y));
binary!(powf, |x, y| x.powf(y));
binary!(hypot, |x, y| x.hypot(y));

/// Both modes give `expected` for the derivative of a one-argument function at `x`.
fn d1(rev: fn(f64, f64) -> (f64, f64), fwd: fn(f64, f64) -> (f64, f64), x: f64, expected: f64) {
    let (_, g) = rev(x, 1.0);
    let (_, t) = fwd(x, 1.0);
    assert!(g == expected || (g.is_nan() && expected.is_nan()), "reverse at {x}: {g}, expected {expected}");
    assert!(t == expected || (t.is_nan() && expected.is_nan()), "forward at {x}: {t}, expected {expected}");
}

/// Both modes give the gradient `expected` of a two-argument function at `(x, y)`.
fn d2(
    rev: fn(f64, f64, f64) -> (f64, f64, f64),
    fwd: fn(f64, f64, f64, f64) -> (f64, f64),
    x: f64,
    y: f64,
    expected: (f64, f64),
) {
    let (_, gx, gy) = rev(x, y, 1.0);
    assert_eq!((gx, gy), expected, "reverse at ({x}, {y})");
    assert_eq!(fwd(x, 1.0, y, 0.0).1, expected.0, "forward d/dx at ({x}, {y})");
    assert_eq!(fwd(x, 0.0, y, 1.0).1, expected.1, "forward d/dy at ({x}, {y})");
}

#[test]
fn abs_has_zero_derivative_at_zero() {
    d1(abs::rev, abs::fwd, 0.0, 0.0);
    d1(abs::rev, abs::fwd, -2.0, -1.0);
    d1(abs::rev, abs::fwd, 2.0, 1.0);
}

#[test]
fn roots_have_infinite_derivative_at_zero() {
    d1(sqrt::rev, sqrt::fwd, 0.0, f64::INFINITY);
    d1(cbrt::rev, cbrt::fwd, 0.0, f64::INFINITY);
    d1(sqrt::rev, sqrt::fwd, -1.0, f64::NAN);
}

#[test]
fn piecewise_constant_functions_have_zero_derivative() {
    d1(floor::rev, floor::fwd, 1.0, 0.0);
    d1(floor::rev, floor::fwd, 1.5, 0.0);
    d1(signum::rev, signum::fwd, 0.0, 0.0);
}

#[test]
fn max_and_min_split_ties_between_their_arguments() {
    d2(max::rev, max::fwd, 1.0, 1.0, (0.5, 0.5));
    d2(max::rev, max::fwd, 1.0, 2.0, (0.0, 1.0));
    d2(max::rev, max::fwd, 3.0, 2.0, (1.0, 0.0));
    d2(min::rev, min::fwd, 1.0, 1.0, (0.5, 0.5));
    d2(min::rev, min::fwd, 3.0, 2.0, (0.0, 1.0));
    d2(min::rev, min::fwd, 1.0, 2.0, (1.0, 0.0));
}

/// The stable softplus, `max(x, 0) + ln(1 + e^-|x|)`: differentiable at 0 (derivative 1/2),
/// which its kinks' conventions give together.
#[autodiff_reverse(d_softplus, Active, Active)]
#[autodiff_forward(t_softplus, Dual, Dual)]
fn softplus(x: f64) -> f64 {
    x.max(0.0) + (-x.abs()).exp().ln_1p()
}

#[test]
fn the_stable_softplus_has_its_derivative_at_zero() {
    for x in [0.0, 1e-3, -1e-3, 2.0, -2.0] {
        let want = 1.0 / (1.0 + (-x as f64).exp());
        let (value, dx) = d_softplus(x, 1.0);
        assert_eq!(value, softplus(x));
        assert!((dx - want).abs() < 1e-12, "x = {x}: {dx} vs {want}");
        assert_eq!(t_softplus(x, 1.0), (value, dx));
    }
}

#[test]
fn max_and_min_follow_the_argument_they_return_past_nan() {
    d2(max::rev, max::fwd, 1.0, f64::NAN, (1.0, 0.0));
    d2(max::rev, max::fwd, f64::NAN, 1.0, (0.0, 1.0));
    d2(min::rev, min::fwd, 1.0, f64::NAN, (1.0, 0.0));
}

#[test]
fn powf_has_zero_exponent_derivative_at_zero_base() {
    d2(powf::rev, powf::fwd, 0.0, 2.0, (0.0, 0.0));
    let (_, gx, gy) = powf::rev(2.0, 3.0, 1.0);
    assert_eq!(gx, 12.0);
    assert!((gy - 8.0 * 2f64.ln()).abs() < 1e-14);
}

#[test]
fn hypot_has_zero_derivative_at_the_origin() {
    d2(hypot::rev, hypot::fwd, 0.0, 0.0, (0.0, 0.0));
    d2(hypot::rev, hypot::fwd, 3.0, 4.0, (0.6, 0.8));
}

#[autodiff_reverse(d_clamp, Active, Active, Active, Active)]
fn clamp(x: f64, lo: f64, hi: f64) -> f64 {
    x.clamp(lo, hi)
}

#[test]
fn clamp_gives_the_derivative_to_x_at_the_bounds() {
    assert_eq!(d_clamp(0.0, 0.0, 1.0, 1.0), (0.0, 1.0, 0.0, 0.0));
    assert_eq!(d_clamp(1.0, 0.0, 1.0, 1.0), (1.0, 1.0, 0.0, 0.0));
    assert_eq!(d_clamp(-1.0, 0.0, 1.0, 1.0), (0.0, 0.0, 1.0, 0.0));
    assert_eq!(d_clamp(2.0, 0.0, 1.0, 1.0), (1.0, 0.0, 0.0, 1.0));
}

#[autodiff_reverse(d_relu_loop, Duplicated, Active)]
fn relu_loop(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i].max(0.0);
    }
    s
}

#[test]
fn a_kink_inside_a_loop_follows_the_same_convention() {
    let mut g = [0.0; 3];
    d_relu_loop(&[-1.0, 0.0, 2.0], &mut g, 1.0);
    assert_eq!(g, [0.0, 0.5, 1.0]);
}

// Strong zero: a derivative that is zero times an infinite slope is zero, not NaN. The
// full truncation `v.max(0.0).sqrt()` of a variance (Heston's scheme) is constant for
// `v < 0`: its derivative there is 0, in both modes, whichever way the floor is written.
unary!(floored_sqrt, |v| 1.0 + v.max(0.0).sqrt());
unary!(branch_floored_sqrt, |v| 1.0 + (if v > 0.0 { v } else { 0.0 }).sqrt());
unary!(clamped_sqrt, |v| 1.0 + v.clamp(0.0, 10.0).sqrt());
binary!(abs_sqrt_max, |z, x| z.abs().sqrt().max(0.5) * x);

#[test]
fn a_zero_derivative_times_an_infinite_slope_is_zero() {
    for (rev, fwd) in [
        (floored_sqrt::rev as fn(f64, f64) -> (f64, f64), floored_sqrt::fwd as fn(f64, f64) -> (f64, f64)),
        (branch_floored_sqrt::rev, branch_floored_sqrt::fwd),
        (clamped_sqrt::rev, clamped_sqrt::fwd),
    ] {
        assert_eq!(rev(-1.0, 1.0).1, 0.0);
        assert_eq!(fwd(-1.0, 1.0).1, 0.0);
        assert_eq!(rev(0.25, 1.0).1, 1.0);
        assert_eq!(fwd(0.25, 1.0).1, 1.0);
    }
    // At 0 itself the slope is infinite where the floor passes `v` on (`max` on a tie).
    assert_eq!(floored_sqrt::rev(0.0, 1.0).1, f64::INFINITY);
    assert_eq!(abs_sqrt_max::rev(0.0, 2.0, 1.0), (1.0, 0.0, 0.5));
    assert_eq!(abs_sqrt_max::fwd(0.0, 1.0, 2.0, 1.0).1, 0.5);
}
