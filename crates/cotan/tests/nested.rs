//! Nesting, as std documents it: `#[autodiff_forward]` on a function that calls a generated
//! derivative. Forward over reverse gives Hessian-vector products; forward over forward
//! has no perturbation confusion.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

mod common;

use cotan::{autodiff_forward, autodiff_reverse};

// D(x -> x * D(y -> x + y)(1))(1) == 1: the inner derivative does not depend on x.
#[autodiff_forward(d_inner, Const, Dual, DualOnly)]
fn inner(x: f64, y: f64) -> f64 {
    x + y
}

#[autodiff_forward(d_outer, Dual, DualOnly)]
fn outer(x: f64) -> f64 {
    x * d_inner(x, 1.0, 1.0)
}

#[test]
fn forward_over_forward_has_no_perturbation_confusion() {
    assert_eq!(outer(5.0), 5.0);
    assert_eq!(d_outer(5.0, 1.0), 1.0);
}

// Forward over reverse: the gradient of f, then its directional derivative.
#[autodiff_reverse(df, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        s += 100.0 * (x[i + 1] - x[i] * x[i]).powi(2) + (1.0 - x[i]).powi(2);
    }
    s
}

#[autodiff_forward(hvp_fwd, Dual, Dual)]
fn gradient(x: &[f64], grad: &mut [f64]) {
    grad.fill(0.0);
    df(x, grad, 1.0);
}

#[autodiff_forward(d_gy, Dual, Dual, DualOnly)]
fn gy(x: f64, y: f64) -> f64 {
    let (_, _, g) = d_g(x, y, 1.0);
    g
}

#[autodiff_reverse(d_g, Active, Active, Active)]
fn g(x: f64, y: f64) -> f64 {
    x * x * y + y.sin() * x
}

#[test]
fn forward_over_reverse_gives_hessian_vector_products() {
    let x = [0.7, -0.4, 1.3, 0.2];
    let v = [0.3, 1.0, -0.5, 2.0];
    let mut grad = [0.0; 4];
    let mut hv = [0.0; 4];
    hvp_fwd(&x, &v, &mut grad, &mut hv);
    // The exact Hessian of Rosenbrock.
    let n = x.len();
    for i in 0..n {
        let mut want = 0.0;
        for j in 0..n {
            let h = if i == j {
                (if i + 1 < n { 1200.0 * x[i] * x[i] - 400.0 * x[i + 1] + 2.0 } else { 0.0 })
                    + if i > 0 { 200.0 } else { 0.0 }
            } else if j == i + 1 || i == j + 1 {
                -400.0 * x[i.min(j)]
            } else {
                0.0
            };
            want += h * v[j];
        }
        assert!((hv[i] - want).abs() <= 1e-10 * want.abs().max(1.0), "hv[{i}] = {} vs {want}", hv[i]);
    }
    // ∂/∂x and ∂/∂y of ∂g/∂y = x² + x cos y.
    let (x, y) = (0.8, -0.3);
    assert!((d_gy(x, 1.0, y, 0.0) - (2.0 * x + y.cos())).abs() < 1e-14);
    assert!((d_gy(x, 0.0, y, 1.0) - (-x * y.sin())).abs() < 1e-14);
}

/// A 2-D grid as an array of arrays, assigned whole from a helper's result in a loop.
const NX: usize = 4;

fn diffuse(u: &[[f64; NX]; 3], r: f64) -> [[f64; NX]; 3] {
    let mut n = *u;
    for i in 1..2 {
        for j in 1..NX - 1 {
            n[i][j] = u[i][j] + r * (u[i - 1][j] + u[i + 1][j] + u[i][j - 1] + u[i][j + 1] - 4.0 * u[i][j]);
        }
    }
    n
}

#[autodiff_reverse(d_grid_steps, Duplicated, Active)]
#[autodiff_forward(t_grid_steps, Dual, Dual)]
fn grid_steps(x: &[f64]) -> f64 {
    let mut u = [[0.0; NX]; 3];
    for j in 0..NX {
        u[1][j] = x[j];
        u[0][j] = 0.5 * x[j];
    }
    for _ in 0..3 {
        u = diffuse(&u, 0.1);
    }
    u[1][1] * u[1][2] + u[0][3]
}

#[test]
fn an_array_of_arrays_assigned_whole() {
    common::check_slice_fn("grid_steps", grid_steps, d_grid_steps, t_grid_steps, &[0.3, 0.7, 0.2, 0.9]);
}

/// Copies of slices of rows that are arrays (`copy_from_slice`, `to_vec`), and the integer
/// methods of periodic indexing (`rem_euclid`, `saturating_sub`, `clamp`, `abs_diff`).
#[autodiff_reverse(d_row_copies, Duplicated, Active)]
#[autodiff_forward(t_row_copies, Dual, Dual)]
fn row_copies(pos0: &[[f64; 3]]) -> f64 {
    let mut pos = vec![[0.0; 3]; pos0.len()];
    pos.copy_from_slice(pos0);
    let mut q = pos0.to_vec();
    q[1][2] *= 2.0;
    let n = pos0.len() as i64;
    let mut s = 0.0;
    for i in 0..pos0.len() {
        let j = ((i as i64) - 1).rem_euclid(n) as usize;
        let k = i.saturating_sub(1).clamp(0, 1);
        let d = i.abs_diff(k);
        s += pos[j][0] * q[k][2] + d as f64 * pos[i][1];
    }
    s + pos[0][0] * pos[1][2]
}

#[test]
fn copies_of_rows_and_periodic_indices() {
    let p = [[0.3, 0.7, 0.2], [1.1, -0.4, 0.5], [0.9, 0.1, -0.6]];
    let rows = |v: &[f64]| v.chunks(3).map(|c| [c[0], c[1], c[2]]).collect::<Vec<[f64; 3]>>();
    let flat: Vec<f64> = p.iter().flatten().copied().collect();
    let mut dp = [[0.0; 3]; 3];
    assert_eq!(d_row_copies(&p, &mut dp, 1.0), row_copies(&p));
    let grad: Vec<f64> = dp.iter().flatten().copied().collect();
    let h = 1e-6;
    for k in 0..flat.len() {
        let (mut a, mut b) = (flat.clone(), flat.clone());
        a[k] += h;
        b[k] -= h;
        let fd = (row_copies(&rows(&a)) - row_copies(&rows(&b))) / (2.0 * h);
        assert!((grad[k] - fd).abs() < 1e-8, "{k}: {} vs {fd}", grad[k]);
    }
    let u = [[0.5, -0.2, 0.1], [0.3, 0.9, -0.4], [0.2, 0.6, 0.8]];
    let (v, t) = t_row_copies(&p, &u);
    assert_eq!(v, row_copies(&p));
    let want: f64 = grad.iter().zip(u.iter().flatten()).map(|(g, u)| g * u).sum();
    assert!((t - want).abs() < 1e-12, "{t} vs {want}");
}

/// `rows.iter().copied().collect()` (and `.map(|p| *p)`) of a slice of arrays: its copy.
#[autodiff_reverse(d_collected_rows, Duplicated, Active)]
fn collected_rows(pos0: &[[f64; 3]]) -> f64 {
    let mut a: Vec<[f64; 3]> = pos0.iter().copied().collect();
    let b = pos0.iter().map(|p| *p).collect::<Vec<[f64; 3]>>();
    a[0][0] *= 3.0;
    a[0][0] * b[1][2] + pos0[0][0]
}

#[test]
fn rows_collected_from_copies() {
    let p = [[0.3, 0.7, 0.2], [1.1, -0.4, 0.5]];
    let mut dp = [[0.0; 3]; 2];
    assert_eq!(d_collected_rows(&p, &mut dp, 1.0), collected_rows(&p));
    assert_eq!(dp, [[3.0 * 0.5 + 1.0, 0.0, 0.0], [0.0, 0.0, 3.0 * 0.3]]);
}
