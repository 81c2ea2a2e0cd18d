//! Every float method cotan differentiates, in method and `f64::name(..)` form, at
//! ordinary points, checked by the harness (finite differences, dot product, interpreter).

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

mod common;

scalar_case!(
    abs,
    1,
    [[1.3], [-0.7]],
    fn f(x: f64) -> f64 {
        x.abs() * x
    }
);
scalar_case!(
    sqrt,
    1,
    [[2.0], [0.3]],
    fn f(x: f64) -> f64 {
        x.sqrt() + f64::sqrt(x * 3.0)
    }
);
scalar_case!(
    cbrt,
    1,
    [[2.0], [-0.5]],
    fn f(x: f64) -> f64 {
        x.cbrt()
    }
);
scalar_case!(
    exp_family,
    1,
    [[0.4], [-1.2]],
    fn f(x: f64) -> f64 {
        x.exp() + x.exp2() + x.exp_m1() + f64::exp(0.5 * x)
    }
);
scalar_case!(
    logs,
    1,
    [[0.4], [3.2]],
    fn f(x: f64) -> f64 {
        x.ln() + x.log2() + x.log10() + x.ln_1p() + f64::ln(x + 1.0)
    }
);
scalar_case!(
    log_base,
    2,
    [[3.0, 2.5], [0.5, 7.0]],
    fn f(x: f64, b: f64) -> f64 {
        x.log(b)
    }
);
scalar_case!(
    powi,
    1,
    [[1.3], [-0.6]],
    fn f(x: f64) -> f64 {
        x.powi(3) + x.powi(-2) + x.powi(0)
    }
);
scalar_case!(
    powf,
    2,
    [[1.3, 2.5], [0.6, -0.4]],
    fn f(x: f64, y: f64) -> f64 {
        x.powf(y)
    }
);
scalar_case!(
    trig,
    1,
    [[0.4], [-1.1]],
    fn f(x: f64) -> f64 {
        x.sin() * x.cos() + x.tan()
    }
);
scalar_case!(
    inverse_trig,
    1,
    [[0.4], [-0.8]],
    fn f(x: f64) -> f64 {
        x.asin() + x.acos() * 2.0 + x.atan()
    }
);
scalar_case!(
    atan2,
    2,
    [[0.4, -1.3], [-2.0, 0.5]],
    fn f(y: f64, x: f64) -> f64 {
        y.atan2(x) + f64::atan2(x, y)
    }
);
scalar_case!(
    hyperbolic,
    1,
    [[0.4], [-1.1]],
    fn f(x: f64) -> f64 {
        x.sinh() + x.cosh() * 0.5 + x.tanh()
    }
);
scalar_case!(
    inverse_hyperbolic,
    1,
    [[0.4], [-0.8]],
    fn f(x: f64) -> f64 {
        x.asinh() + (x * x + 1.5).acosh() + x.atanh()
    }
);
scalar_case!(
    hypot,
    2,
    [[3.0, 4.0], [-1.0, 0.2]],
    fn f(x: f64, y: f64) -> f64 {
        x.hypot(y)
    }
);
scalar_case!(
    recip,
    1,
    [[0.4], [-3.0]],
    fn f(x: f64) -> f64 {
        x.recip() + f64::recip(x * x)
    }
);
scalar_case!(
    mul_add,
    3,
    [[0.4, 2.0, -1.0], [1.5, -0.5, 3.0]],
    fn f(a: f64, b: f64, c: f64) -> f64 {
        a.mul_add(b, c)
    }
);
scalar_case!(
    max_min,
    2,
    [[0.4, 2.0], [1.5, -0.5]],
    fn f(a: f64, b: f64) -> f64 {
        a.max(b) * 2.0 + a.min(b) + f64::max(a * a, b)
    }
);
scalar_case!(
    clamp,
    3,
    [[0.4, 0.0, 1.0], [1.5, 0.0, 1.0], [-2.0, -1.0, 3.0]],
    fn f(x: f64, lo: f64, hi: f64) -> f64 {
        x.clamp(lo, hi) * x
    }
);
scalar_case!(
    piecewise_constant,
    1,
    [[0.4], [-1.6]],
    fn f(x: f64) -> f64 {
        x * (x.signum() + x.floor() + x.ceil() + x.round() + x.trunc())
    }
);
scalar_case!(
    rem,
    2,
    [[5.3, 2.0], [-7.5, 3.0]],
    fn f(a: f64, b: f64) -> f64 {
        a % b
    }
);
scalar_case!(
    arithmetic,
    2,
    [[5.3, 2.0], [-7.5, 3.0]],
    fn f(a: f64, b: f64) -> f64 {
        -a + b * a - a / b + 2.0 * (a - b)
    }
);
scalar_case!(
    degrees_and_radians,
    1,
    [[1.3], [-0.75]],
    fn f(x: f64) -> f64 {
        x.to_degrees() * 0.01 + (x * 30.0).to_radians().sin() + f64::to_degrees(x).cos() + (x * 3.0).fract()
    }
);
scalar_case!(
    rem_euclid,
    2,
    // Positive and negative `x % y`, each side of a multiple.
    [[2.9, 1.2], [-0.9, 1.2], [-2.5, -0.7], [0.4, -1.1]],
    fn f(x: f64, y: f64) -> f64 {
        x.rem_euclid(y) * x + f64::rem_euclid(y * 3.0, 0.8)
    }
);
scalar_case!(
    copysign,
    2,
    [[1.3, -0.4], [-0.7, 2.0], [0.6, 0.3]],
    fn f(x: f64, y: f64) -> f64 {
        x.copysign(y) * y + (x * y).copysign(x - 1.0)
    }
);
