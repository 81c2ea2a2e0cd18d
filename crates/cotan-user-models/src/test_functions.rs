//! Standard optimisation test functions (as in argmin's `argmin_testfunctions`),
//! written over slices.

use cotan::{autodiff_forward, autodiff_reverse};
use std::f64::consts::{E, PI};

/// n-dimensional Rosenbrock function, minimum 0 at (1, .., 1).
#[autodiff_reverse(rosenbrock_grad, Duplicated, Active)]
#[autodiff_forward(rosenbrock_tangent, Dual, Dual)]
pub fn rosenbrock(x: &[f64]) -> f64 {
    x.windows(2).map(|w| 100.0 * (w[1] - w[0] * w[0]).powi(2) + (1.0 - w[0]).powi(2)).sum()
}

/// Rastrigin function, minimum 0 at the origin.
#[autodiff_reverse(rastrigin_grad, Duplicated, Active)]
#[autodiff_forward(rastrigin_tangent, Dual, Dual)]
pub fn rastrigin(x: &[f64]) -> f64 {
    let a = 10.0;
    a * x.len() as f64 + x.iter().map(|&xi| xi.powi(2) - a * (2.0 * PI * xi).cos()).sum::<f64>()
}

/// Ackley function, minimum 0 at the origin.
#[autodiff_reverse(ackley_grad, Duplicated, Active)]
#[autodiff_forward(ackley_tangent, Dual, Dual)]
pub fn ackley(x: &[f64]) -> f64 {
    const A: f64 = 20.0;
    const B: f64 = 0.2;
    const C: f64 = 2.0 * PI;

    let n = x.len() as f64;
    let sum_sq: f64 = x.iter().map(|xi| xi * xi).sum();
    let sum_cos: f64 = x.iter().map(|&xi| (C * xi).cos()).sum();
    -A * (-B * (sum_sq / n).sqrt()).exp() - (sum_cos / n).exp() + A + E
}

/// Himmelblau's function (2-d), four minima of value 0, e.g. at (3, 2).
#[autodiff_reverse(himmelblau_grad, Duplicated, Active)]
#[autodiff_forward(himmelblau_tangent, Dual, Dual)]
pub fn himmelblau(p: &[f64]) -> f64 {
    assert_eq!(p.len(), 2, "Himmelblau's function is two-dimensional");
    let (x, y) = (p[0], p[1]);
    (x * x + y - 11.0).powi(2) + (x + y * y - 7.0).powi(2)
}

/// Styblinski–Tang function, minimum about -39.166 n at x_i = -2.903534.
#[autodiff_reverse(styblinski_tang_grad, Duplicated, Active)]
#[autodiff_forward(styblinski_tang_tangent, Dual, Dual)]
pub fn styblinski_tang(x: &[f64]) -> f64 {
    x.iter().map(|&xi| xi.powi(4) - 16.0 * xi.powi(2) + 5.0 * xi).sum::<f64>() / 2.0
}

/// Booth function (2-d), minimum 0 at (1, 3).
#[autodiff_reverse(booth_grad, Duplicated, Active)]
#[autodiff_forward(booth_tangent, Dual, Dual)]
pub fn booth(p: &[f64]) -> f64 {
    let [x, y] = [p[0], p[1]];
    (x + 2.0 * y - 7.0).powi(2) + (2.0 * x + y - 5.0).powi(2)
}
