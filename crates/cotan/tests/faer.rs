//! faer values in differentiated functions (feature `faer`): `&Mat`, `MatRef`, `MatMut`,
//! `&Col`, `&mut Col` parameters with shadows of the same types; indexing, products
//! (`&a * &b`, `&a * &x`), `transpose`, `norm_l2`, `squared_norm_l2`, `sum`, element-wise
//! arithmetic and `Mat::from_fn` maps, `partial_piv_lu().solve`, `llt(..).unwrap()` with its
//! `solve` and `L()`. Every derivative is checked against central finite differences
//! (relative tolerance 1e-6), reverse against forward mode (dot-product test, 1e-10), the
//! values the derivatives return against the primal's (1e-13: faer sums in its own order),
//! and the runtime's rules against the same functions written as loops on slices.
#![cfg(feature = "faer")]
#![allow(clippy::all, dead_code)]

mod common;

use cotan::{autodiff_forward, autodiff_reverse};
use faer::linalg::solvers::Solve;
use faer::{Col, ColMut, ColRef, Mat, MatMut, MatRef, Scale, Side};

/// Forward `J·u` and reverse `<∇f, u>` against finite differences, and each other.
fn check(
    what: &str,
    f: &dyn Fn(&[f64]) -> f64,
    jvp: &dyn Fn(&[f64], &[f64]) -> f64,
    grad: &dyn Fn(&[f64]) -> Vec<f64>,
    x: &[f64],
) {
    common::check_scalar(what, f, jvp, grad, x, 3);
}

/// The value a derivative returns against the primal's: faer's `sum` and norms add in
/// their own (SIMD) order, cotan's loops in storage order, so they agree to rounding.
fn same_value(value: f64, primal: f64) {
    assert!((value - primal).abs() <= 1e-13 * primal.abs().max(1.0), "derivative's value {value} vs primal {primal}");
}

fn input(n: usize) -> Vec<f64> {
    common::smooth_input(n)
}

fn mat(m: usize, n: usize, v: &[f64]) -> Mat<f64> {
    Mat::from_fn(m, n, |i, j| v[i + j * m])
}

fn col(v: &[f64]) -> Col<f64> {
    Col::from_fn(v.len(), |i| v[i])
}

fn entries(m: &Mat<f64>) -> Vec<f64> {
    (0..m.ncols()).flat_map(|j| (0..m.nrows()).map(move |i| m[(i, j)])).collect()
}

fn col_entries(c: &Col<f64>) -> Vec<f64> {
    (0..c.nrows()).map(|i| c[i]).collect()
}

#[autodiff_reverse(d_products, Duplicated, Duplicated, Duplicated, Active)]
#[autodiff_forward(t_products, Dual, Dual, Dual, Dual)]
fn products(a: &Mat<f64>, b: &Mat<f64>, x: &Col<f64>) -> f64 {
    let c = a * b;
    let y = &c * x;
    let g = c.transpose() * &c;
    let z = a.transpose() * &y;
    let s = Mat::from_fn(g.nrows(), g.ncols(), |i, j| g[(i, j)].sin() * (i + 2 * j) as f64);
    let w = (&y + &y) * 0.5 - Scale(2.0) * &y;
    s.sum() + y.norm_l2() + z.squared_norm_l2() + c[(1, 0)] * x[2] + w.sum() + (&g / 3.0)[(0, 1)]
}

#[test]
fn matrix_products() {
    let (m, k, n) = (3, 2, 4);
    let split = |v: &[f64]| (mat(m, k, &v[..m * k]), mat(k, n, &v[m * k..m * k + k * n]), col(&v[m * k + k * n..]));
    let x = input(m * k + k * n + n);
    let f = |v: &[f64]| {
        let (a, b, x) = split(v);
        products(&a, &b, &x)
    };
    let jvp = |v: &[f64], u: &[f64]| {
        let ((a, b, x), (da, db, dx)) = (split(v), split(u));
        let (value, t) = t_products(&a, &da, &b, &db, &x, &dx);
        same_value(value, products(&a, &b, &x));
        t
    };
    let grad = |v: &[f64]| {
        let (a, b, x) = split(v);
        let (mut da, mut db, mut dx) = (Mat::zeros(m, k), Mat::zeros(k, n), Col::zeros(n));
        let value = d_products(&a, &mut da, &b, &mut db, &x, &mut dx, 1.0);
        same_value(value, products(&a, &b, &x));
        entries(&da).into_iter().chain(entries(&db)).chain(col_entries(&dx)).collect()
    };
    check("faer products", &f, &jvp, &grad, &x);
}

/// Views by value (`MatRef` with a `MatMut` shadow) and a result written into a `MatMut`.
#[autodiff_reverse(d_layer, Duplicated, Duplicated, Duplicated)]
#[autodiff_forward(t_layer, Dual, Dual, Dual)]
fn layer(a: MatRef<'_, f64>, x: MatRef<'_, f64>, mut out: MatMut<'_, f64>) {
    let y = a * x;
    for i in 0..out.nrows() {
        for j in 0..out.ncols() {
            out[(i, j)] = y[(i, j)].tanh();
        }
    }
}

#[test]
fn views_and_mutable_output() {
    let (m, k, n) = (3, 2, 2);
    let split = |v: &[f64]| (mat(m, k, &v[..m * k]), mat(k, n, &v[m * k..]));
    let x = input(m * k + k * n);
    let w = mat(m, n, &[0.3, -1.2, 0.7, 1.1, 0.2, -0.4]);
    let weigh = |o: &Mat<f64>| entries(o).iter().zip(entries(&w)).map(|(p, q)| p * q).sum::<f64>();
    let f = |v: &[f64]| {
        let (a, x) = split(v);
        let mut out = Mat::zeros(m, n);
        layer(a.as_ref(), x.as_ref(), out.as_mut());
        weigh(&out)
    };
    let jvp = |v: &[f64], u: &[f64]| {
        let ((a, x), (da, dx)) = (split(v), split(u));
        let (mut out, mut dout) = (Mat::zeros(m, n), Mat::zeros(m, n));
        t_layer(a.as_ref(), da.as_ref(), x.as_ref(), dx.as_ref(), out.as_mut(), dout.as_mut());
        let mut o = Mat::zeros(m, n);
        layer(a.as_ref(), x.as_ref(), o.as_mut());
        assert_eq!(entries(&out), entries(&o));
        weigh(&dout)
    };
    let grad = |v: &[f64]| {
        let (a, x) = split(v);
        let (mut da, mut dx) = (Mat::zeros(m, k), Mat::zeros(k, n));
        let (mut out, mut dout) = (Mat::zeros(m, n), w.clone());
        d_layer(a.as_ref(), da.as_mut(), x.as_ref(), dx.as_mut(), out.as_mut(), dout.as_mut());
        entries(&da).into_iter().chain(entries(&dx)).collect()
    };
    check("faer views", &f, &jvp, &grad, &x);
}

/// Vector views by value (`ColRef` with a `ColMut` shadow) and results written into a
/// `ColMut` and a `&mut Col`.
#[autodiff_reverse(d_columns, Duplicated, Duplicated, Duplicated, Duplicated)]
#[autodiff_forward(t_columns, Dual, Dual, Dual, Dual)]
fn columns(a: &Mat<f64>, x: ColRef<'_, f64>, mut out: ColMut<'_, f64>, y: &mut Col<f64>) {
    let z = a.transpose() * x;
    for i in 0..out.nrows() {
        out[i] = z[i] * x[0];
    }
    for i in 0..y.nrows() {
        y[i] = y[i] * z[i] + x[i].sin();
    }
}

#[test]
fn column_views_and_outputs() {
    let (m, n) = (3, 2);
    let split = |v: &[f64]| (mat(m, n, &v[..m * n]), col(&v[m * n..m * n + m]), col(&v[m * n + m..]));
    let x = input(m * n + m + n);
    let (w1, w2) = (col(&[0.3, -1.2]), col(&[0.7, 1.1]));
    let weigh = |o: &Col<f64>, p: &Col<f64>| {
        col_entries(o)
            .iter()
            .zip(col_entries(&w1))
            .chain(col_entries(p).iter().zip(col_entries(&w2)))
            .map(|(a, b)| a * b)
            .sum::<f64>()
    };
    let f = |v: &[f64]| {
        let (a, x, y0) = split(v);
        let (mut out, mut y) = (Col::zeros(n), y0);
        columns(&a, x.as_ref(), out.as_mut(), &mut y);
        weigh(&out, &y)
    };
    let jvp = |v: &[f64], u: &[f64]| {
        let ((a, x, mut y), (da, dx, mut dy)) = (split(v), split(u));
        let (mut out, mut dout) = (Col::zeros(n), Col::zeros(n));
        t_columns(&a, &da, x.as_ref(), dx.as_ref(), out.as_mut(), dout.as_mut(), &mut y, &mut dy);
        weigh(&dout, &dy)
    };
    let grad = |v: &[f64]| {
        let (a, x, mut y) = split(v);
        let (mut da, mut dx) = (Mat::zeros(m, n), Col::zeros(m));
        let (mut out, mut dout, mut dy) = (Col::zeros(n), w1.clone(), w2.clone());
        d_columns(&a, &mut da, x.as_ref(), dx.as_mut(), out.as_mut(), dout.as_mut(), &mut y, &mut dy);
        // The seed of `y` came back as the gradient of its initial value.
        entries(&da).into_iter().chain(col_entries(&dx)).chain(col_entries(&dy)).collect()
    };
    check("faer column views", &f, &jvp, &grad, &x);
}

/// `partial_piv_lu().solve`, also of a transpose, and the Cholesky factor (`llt`) with its
/// `solve` and `L()` (the log-determinant from `L`'s diagonal), of a matrix made symmetric
/// positive definite and of the parameter (lower triangle, and upper by `Side::Upper`).
#[autodiff_reverse(d_solves, Duplicated, Duplicated, Active)]
#[autodiff_forward(t_solves, Dual, Dual, Dual)]
fn solves(a: &Mat<f64>, b: &Col<f64>) -> f64 {
    let n = a.nrows();
    let x = a.partial_piv_lu().solve(b);
    let y = a.transpose().partial_piv_lu().solve(&x);
    let m = Mat::from_fn(n, n, |i, j| if i == j { 1.0 } else { 0.0 }) + a * a.transpose();
    let c = m.llt(Side::Lower).unwrap();
    let z = c.solve(b);
    let l = c.L();
    let log_det = (0..n).map(|i| l[(i, i)].ln()).sum::<f64>() * 2.0;
    let p = a.llt(Side::Lower).expect("positive definite");
    let q = a.llt(Side::Upper).unwrap();
    let pl = p.L();
    let ql = q.L();
    x.squared_norm_l2() + y.sum() + z.sum() + log_det + l[(2, 0)] + p.solve(&y).sum() + pl[(1, 0)] + ql[(2, 1)]
}

fn spd_input(n: usize) -> Vec<f64> {
    let mut x = input(n * n + n);
    for i in 0..n {
        x[i * n + i] += 3.0; // well conditioned, and its own Cholesky factor exists
    }
    x
}

#[test]
fn solve_and_cholesky() {
    let n = 3;
    let split = |v: &[f64]| (mat(n, n, &v[..n * n]), col(&v[n * n..]));
    let f = |v: &[f64]| {
        let (a, b) = split(v);
        solves(&a, &b)
    };
    let jvp = |v: &[f64], u: &[f64]| {
        let ((a, b), (da, db)) = (split(v), split(u));
        let (value, t) = t_solves(&a, &da, &b, &db);
        same_value(value, solves(&a, &b));
        t
    };
    let grad = |v: &[f64]| {
        let (a, b) = split(v);
        let (mut da, mut db) = (Mat::zeros(n, n), Col::zeros(n));
        let value = d_solves(&a, &mut da, &b, &mut db, 1.0);
        same_value(value, solves(&a, &b));
        entries(&da).into_iter().chain(col_entries(&db)).collect()
    };
    check("faer solves", &f, &jvp, &grad, &spd_input(n));
}

fn indefinite() -> Mat<f64> {
    let a = Mat::from_fn(3, 3, |i, j| {
        if i == j {
            if i == 1 {
                -1.0
            } else {
                1.0
            }
        } else {
            0.0
        }
    });
    assert!(a.llt(Side::Lower).is_err());
    a
}

#[test]
#[should_panic(expected = "positive definite")]
fn llt_of_indefinite_matrix_panics_as_expect() {
    // `I + a aᵀ` is positive definite; `a` itself is not.
    let (mut da, mut db) = (Mat::zeros(3, 3), Col::zeros(3));
    d_solves(&indefinite(), &mut da, &Col::from_fn(3, |_| 1.0), &mut db, 1.0);
}

#[autodiff_forward(t_log_det, Dual, Dual)]
fn log_det(a: &Mat<f64>) -> f64 {
    let c = a.llt(Side::Lower).unwrap();
    let l = c.L();
    (0..a.nrows()).map(|i| l[(i, i)].ln()).sum::<f64>() * 2.0
}

#[test]
#[should_panic(expected = "called `Result::unwrap()` on an `Err` value")]
fn llt_of_indefinite_matrix_panics_as_unwrap() {
    let a = indefinite();
    t_log_det(&a, &a.clone());
}

/// The same products and solve as loops on slices, which cotan differentiates statement by
/// statement: the runtime's rules (`gemm`, `gemv`, `solve`) must agree with them.
#[autodiff_reverse(d_loops, Duplicated, Duplicated, Duplicated, Const, Active)]
fn loops(a: &[f64], b: &[f64], x: &[f64], n: usize) -> f64 {
    // c = a b (n×n, column-major), y = c x, then solve a s = y by Gaussian elimination.
    let mut c = vec![0.0; n * n];
    for j in 0..n {
        for i in 0..n {
            let mut s = 0.0;
            for k in 0..n {
                s += a[i + k * n] * b[k + j * n];
            }
            c[i + j * n] = s;
        }
    }
    let mut y = vec![0.0; n];
    for i in 0..n {
        let mut s = 0.0;
        for j in 0..n {
            s += c[i + j * n] * x[j];
        }
        y[i] = s;
    }
    let mut m = a.to_vec();
    let mut r = y.clone();
    for k in 0..n {
        for i in k + 1..n {
            let f = m[i + k * n] / m[k + k * n];
            for j in k..n {
                m[i + j * n] -= f * m[k + j * n];
            }
            r[i] -= f * r[k];
        }
    }
    let mut s = vec![0.0; n];
    for ii in 0..n {
        let i = n - 1 - ii;
        let mut t = r[i];
        for j in i + 1..n {
            t -= m[i + j * n] * s[j];
        }
        s[i] = t / m[i + i * n];
    }
    let mut out = 0.0;
    for i in 0..n {
        out += s[i] * s[i] + y[i];
    }
    out
}

#[autodiff_reverse(d_rules, Duplicated, Duplicated, Duplicated, Active)]
fn rules(a: &Mat<f64>, b: &Mat<f64>, x: &Col<f64>) -> f64 {
    let y = &(a * b) * x;
    let s = a.partial_piv_lu().solve(&y);
    s.squared_norm_l2() + y.sum()
}

#[test]
fn rules_agree_with_loops() {
    let n = 4;
    let v = spd_input(n);
    let (a, b, x) = (mat(n, n, &v[..n * n]), mat(n, n, &input(n * n)), col(&v[n * n..]));
    let (mut da, mut db, mut dx) = (Mat::zeros(n, n), Mat::zeros(n, n), Col::zeros(n));
    let value = d_rules(&a, &mut da, &b, &mut db, &x, &mut dx, 1.0);
    let (mut da2, mut db2, mut dx2) = (vec![0.0; n * n], vec![0.0; n * n], vec![0.0; n]);
    let value2 = d_loops(&entries(&a), &mut da2, &entries(&b), &mut db2, &col_entries(&x), &mut dx2, n, 1.0);
    assert!((value - value2).abs() <= 1e-10 * value.abs().max(1.0), "values {value} vs {value2}");
    let got: Vec<f64> = entries(&da).into_iter().chain(entries(&db)).chain(col_entries(&dx)).collect();
    let want: Vec<f64> = da2.iter().chain(&db2).chain(&dx2).copied().collect();
    for (k, (g, h)) in got.iter().zip(&want).enumerate() {
        assert!((g - h).abs() <= 1e-9 * h.abs().max(1.0), "gradient entry {k}: rules {g} vs loops {h}");
    }
}

#[test]
#[should_panic(expected = "the shadow of `a` is")]
fn shadow_of_another_shape() {
    let (a, b, x) = (Mat::zeros(3, 2), Mat::zeros(2, 4), Col::zeros(4));
    let (mut da, mut db, mut dx) = (Mat::zeros(2, 3), Mat::zeros(2, 4), Col::zeros(4));
    d_products(&a, &mut da, &b, &mut db, &x, &mut dx, 1.0);
}

/// Locals (`Mat::zeros`, `Col::zeros`, `clone`, `to_owned`), `shape`, `fill`, `as_ref`,
/// `iter`.
#[autodiff_reverse(d_locals, Duplicated, Duplicated, Active)]
#[autodiff_forward(t_locals, Dual, Dual, Dual)]
fn locals(a: &Mat<f64>, x: &Col<f64>) -> f64 {
    let (r, c) = a.shape();
    let mut m = Mat::zeros(r, c);
    let mut v = Col::zeros(x.nrows());
    for i in 0..r {
        for j in 0..c {
            m[(i, j)] = a[(i, j)] * (i + j + 1) as f64;
        }
    }
    v.fill(x[0]);
    let b = m.clone();
    let w = x.to_owned();
    let y = b.as_ref() * w.as_ref();
    let mut s = 0.0;
    for t in y.iter() {
        s += t * t;
    }
    s + v.sum() + (&m + &b).squared_norm_l2() + x.as_ref().sum() + y.norm_l2()
}

#[test]
fn local_values() {
    let (m, n) = (3, 2);
    let split = |v: &[f64]| (mat(m, n, &v[..m * n]), col(&v[m * n..]));
    let f = |v: &[f64]| {
        let (a, x) = split(v);
        locals(&a, &x)
    };
    let jvp = |v: &[f64], u: &[f64]| {
        let ((a, x), (da, dx)) = (split(v), split(u));
        let (value, t) = t_locals(&a, &da, &x, &dx);
        same_value(value, locals(&a, &x));
        t
    };
    let grad = |v: &[f64]| {
        let (a, x) = split(v);
        let (mut da, mut dx) = (Mat::zeros(m, n), Col::zeros(n));
        let value = d_locals(&a, &mut da, &x, &mut dx, 1.0);
        same_value(value, locals(&a, &x));
        entries(&da).into_iter().chain(col_entries(&dx)).collect()
    };
    check("faer locals", &f, &jvp, &grad, &input(m * n + n));
}
