//! Helpers generic over constants (`fn dot<const N: usize>(a: &[f64; N], b: &[f64; N])`),
//! the way numeric Rust writes fixed-size vector code: cotan lowers each call with the
//! constants the call gives (the lengths of the arrays passed, or a turbofish). Every
//! function is checked for its value, against finite differences, forward mode against
//! reverse mode (dot-product test), one for second order; helpers returning a derivative
//! that is an `if` (`clamp`, `max`) as their whole body are here too: their reverse once
//! started with that `if`, which Rust ended as a statement.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

mod common;

use common::{check_hvp_against_gradient, check_slice_fn as check};
use cotan::{autodiff_forward, autodiff_reverse, hvp};

fn dot<const N: usize>(a: &[f64; N], b: &[f64; N]) -> f64 {
    let mut s = 0.0;
    for i in 0..N {
        s += a[i] * b[i];
    }
    s
}

fn norm<const N: usize>(v: [f64; N]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

fn scale<const N: usize>(v: &mut [f64; N], k: f64) {
    for x in v.iter_mut() {
        *x *= k;
    }
}

fn cross_sum<const R: usize, const C: usize>(m: &[[f64; C]; R]) -> f64 {
    let mut s = 0.0;
    for r in 0..R {
        for c in 0..C {
            s += m[r][c] * (1.0 + (r * C + c) as f64);
        }
    }
    s
}

fn rows_total<const N: usize>(rows: &[[f64; N]]) -> f64 {
    let mut s = 0.0;
    for r in rows {
        for j in 0..N {
            s += r[j] * (j + 1) as f64;
        }
    }
    s
}

/// Uses `N` as a number and builds an array of length `N`.
fn mean_shift<const N: usize>(v: &[f64; N]) -> f64 {
    let mean = v.iter().sum::<f64>() / N as f64;
    let mut d = [0.0; N];
    for i in 0..N {
        d[i] = v[i] - mean;
    }
    dot(&d, &d)
}

fn ones<const N: usize>() -> [f64; N] {
    [1.0; N]
}

#[autodiff_reverse(d_vectors, Duplicated, Active)]
#[autodiff_forward(t_vectors, Dual, Dual)]
fn vectors(p: &[f64]) -> f64 {
    let mut a = [p[0], p[1], p[2]];
    let b = [p[3], 2.0 * p[0], p[1] * p[1]];
    scale(&mut a, p[3]);
    dot(&a, &b) + norm(b) + norm([p[0], p[3]]) + mean_shift(&a)
}

#[autodiff_reverse(d_matrices, Duplicated, Active)]
#[autodiff_forward(t_matrices, Dual, Dual)]
fn matrices(p: &[f64]) -> f64 {
    let m = [[p[0], p[1], p[2]], [p[3], p[0] * p[1], 1.0]];
    let w = ones::<3>();
    cross_sum(&m) + dot::<3>(&w, &[p[2], p[3], p[0]]) + rows_total(&m)
}

#[hvp(hvp_energy)]
#[autodiff_reverse(d_energy, Duplicated, Active)]
#[autodiff_forward(t_energy, Dual, Dual)]
fn energy(p: &[f64]) -> f64 {
    let x = [p[0], p[1]];
    let v = [p[2], p[3]];
    let mut e = 0.0;
    let mut s = x;
    for _ in 0..5 {
        let n = norm(s);
        e += 0.5 * dot(&v, &v) + n * n * n;
        scale(&mut s, 0.9);
    }
    e
}

fn clamp01(v: f64) -> f64 {
    v.clamp(0.0, 1.0)
}

fn relu(v: f64) -> f64 {
    v.max(0.0)
}

fn smallest(a: f64, b: f64) -> f64 {
    a.min(b)
}

#[autodiff_reverse(d_piecewise, Duplicated, Active)]
#[autodiff_forward(t_piecewise, Dual, Dual)]
fn piecewise(p: &[f64]) -> f64 {
    p.iter().map(|&v| clamp01(v)).sum::<f64>() + relu(p[1] * p[2]) + smallest(p[0], p[3]) * p[2]
}

#[test]
fn const_generic_helpers_get_the_lengths_of_the_arrays_they_are_given() {
    let x = [0.7, -0.4, 1.3, 0.2];
    check("vectors", vectors, d_vectors, t_vectors, &x);
    check("vectors", vectors, d_vectors, t_vectors, &[-1.1, 0.3, 0.8, -2.0]);
    // vectors = Σ aᵢbᵢ + ‖b‖ + ‖(p₀, p₃)‖ + ..: ∂/∂p₃ of ‖(p₀, p₃)‖ alone is p₃ / ‖(p₀, p₃)‖,
    // and the rest is checked against finite differences above.
    check("matrices", matrices, d_matrices, t_matrices, &x);
    // matrices is linear in p₂: ∂/∂p₂ = 3 (m[0][2]'s weight in cross_sum) + 1 (w · (p₂, ..))
    // + 3 (its weight in rows_total).
    let mut g = [0.0f64; 4];
    d_matrices(&x, &mut g, 1.0);
    assert!((g[2] - 7.0).abs() < 1e-15, "∂ matrices / ∂p₂ = {}", g[2]);
}

#[test]
fn const_generic_helpers_in_second_order() {
    let x = [0.6, -0.8, 0.3, 1.1];
    check("energy", energy, d_energy, t_energy, &x);
    check_hvp_against_gradient(
        &|x, g| {
            d_energy(&x[..4], &mut g[..4], 1.0);
        },
        &|x, v, g, hv| {
            hvp_energy(&x[..4], &v[..4], &mut g[..4], &mut hv[..4]);
        },
    );
}

#[test]
fn helpers_whose_derivative_is_an_if() {
    // Inside (0, 1) for clamp, both signs for relu and min.
    check("piecewise", piecewise, d_piecewise, t_piecewise, &[0.7, 0.4, 0.3, 0.2]);
    check("piecewise", piecewise, d_piecewise, t_piecewise, &[1.7, -0.4, 0.5, 2.0]);
    let mut g = [0.0; 4];
    d_piecewise(&[0.7, -0.4, 0.5, 2.0], &mut g, 1.0);
    // p₀ in (0, 1) and the smaller of (p₀, p₃): 1 + p₂; p₁ clamped away; p₃ not the min.
    assert_eq!(g, [1.5, 0.0, 1.0 + 0.7, 0.0]);
}

/// A helper returning an array whose length is a constant of the crate.
const STATE: usize = 2;

fn rotate_step(s: [f64; STATE], a: f64) -> [f64; STATE] {
    [s[0] + a * s[1], s[1] - a * s[0]]
}

#[autodiff_reverse(d_rotate_three, Duplicated, Active)]
#[autodiff_forward(t_rotate_three, Dual, Dual)]
fn rotate_three(x: &[f64]) -> f64 {
    let mut s = [x[0], x[1]];
    for _ in 0..3 {
        s = rotate_step(s, x[2]);
    }
    s[0] * s[1]
}

#[test]
fn a_helper_returning_an_array_of_a_constant_length() {
    check("rotate_three", rotate_three, d_rotate_three, t_rotate_three, &[0.3, 0.7, 0.4]);
}
