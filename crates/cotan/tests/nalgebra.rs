//! nalgebra values in differentiated functions (feature `nalgebra`): `&DVector`,
//! `&mut DVector`, `&DMatrix`, `&SVector` parameters with shadows of the same types; indexing,
//! products (`&a * &x`, `a * b`, `tr_mul`), `transpose`, `dot`, `norm`, `sum`, `map`,
//! element-wise arithmetic, locals. Every derivative is checked against central finite
//! differences (relative tolerance 1e-6), reverse against forward mode (dot-product test,
//! 1e-10), and the values the derivatives return against the primal's.
#![cfg(feature = "nalgebra")]
#![allow(clippy::all, dead_code)]

mod common;

use cotan::{autodiff_forward, autodiff_reverse};
use nalgebra::{DMatrix, DVector, SVector};

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

fn input(n: usize) -> Vec<f64> {
    common::smooth_input(n)
}

#[autodiff_reverse(d_quadratic, Duplicated, Duplicated, Active)]
#[autodiff_forward(t_quadratic, Dual, Dual, Dual)]
fn quadratic(a: &DMatrix<f64>, x: &DVector<f64>) -> f64 {
    let y = a * x;
    let z = &a.transpose() * &y;
    y.dot(&y) + x.norm() + z.dot(x) + a[(1, 0)] * y[2] + a.tr_mul(&y).sum()
}

#[test]
fn matrix_vector() {
    let (m, n) = (3, 2);
    let split = |v: &[f64]| (DMatrix::from_column_slice(m, n, &v[..m * n]), DVector::from_column_slice(&v[m * n..]));
    let x = input(m * n + n);
    let f = |v: &[f64]| {
        let (a, x) = split(v);
        quadratic(&a, &x)
    };
    let jvp = |v: &[f64], u: &[f64]| {
        let ((a, x), (da, dx)) = (split(v), split(u));
        let (value, t) = t_quadratic(&a, &da, &x, &dx);
        assert_eq!(value, quadratic(&a, &x));
        t
    };
    let grad = |v: &[f64]| {
        let (a, x) = split(v);
        let (mut da, mut dx) = (DMatrix::zeros(m, n), DVector::zeros(n));
        let value = d_quadratic(&a, &mut da, &x, &mut dx, 1.0);
        assert_eq!(value, quadratic(&a, &x));
        da.as_slice().iter().chain(dx.as_slice()).copied().collect()
    };
    check("matrix-vector", &f, &jvp, &grad, &x);
}

#[autodiff_reverse(d_products, Duplicated, Duplicated, Active)]
#[autodiff_forward(t_products, Dual, Dual, Dual)]
fn products(a: &DMatrix<f64>, b: &DMatrix<f64>) -> f64 {
    let c = a * b;
    let g = c.transpose() * &c;
    let h = a.transpose() * a;
    let mut s = 0.0;
    for i in 0..g.nrows() {
        for j in 0..g.ncols() {
            s += g[(i, j)].sin() * (i + 2 * j) as f64;
        }
    }
    s + h.norm_squared() + (&c * b.transpose()).sum() + c[4]
}

#[test]
fn matrix_matrix() {
    let (m, k, n) = (3, 2, 4);
    let split =
        |v: &[f64]| (DMatrix::from_column_slice(m, k, &v[..m * k]), DMatrix::from_column_slice(k, n, &v[m * k..]));
    let x = input(m * k + k * n);
    let f = |v: &[f64]| {
        let (a, b) = split(v);
        products(&a, &b)
    };
    let jvp = |v: &[f64], u: &[f64]| {
        let ((a, b), (da, db)) = (split(v), split(u));
        let (value, t) = t_products(&a, &da, &b, &db);
        assert_eq!(value, products(&a, &b));
        t
    };
    let grad = |v: &[f64]| {
        let (a, b) = split(v);
        let (mut da, mut db) = (DMatrix::zeros(m, k), DMatrix::zeros(k, n));
        let value = d_products(&a, &mut da, &b, &mut db, 1.0);
        assert_eq!(value, products(&a, &b));
        da.as_slice().iter().chain(db.as_slice()).copied().collect()
    };
    check("matrix-matrix", &f, &jvp, &grad, &x);
}

#[autodiff_reverse(d_elementwise, Duplicated, Duplicated, Active, Active)]
#[autodiff_forward(t_elementwise, Dual, Dual, Dual, Dual)]
fn elementwise(v: &DVector<f64>, w: &DVector<f64>, k: f64) -> f64 {
    let z = (v + w).map(|t| t.sin());
    let q = v.component_mul(w) * k;
    let mut r = DVector::zeros(v.len());
    for i in 0..r.len() {
        r[i] = v[i] * (i as f64) - w[i];
    }
    r += &q;
    r *= 0.5;
    let d = -(&r - &z) / 3.0;
    let mut s = 0.0;
    for x in v.iter() {
        s += x * x;
    }
    let e = DVector::from_vec(vec![1.0, k, 2.0]);
    s + z.sum() + q.norm_squared() + d.dot(&r) + v[1] * w.len() as f64 + e.dot(w) + r.scale(k).norm()
}

#[test]
fn element_wise() {
    let n = 3;
    let split = |v: &[f64]| (DVector::from_column_slice(&v[..n]), DVector::from_column_slice(&v[n..2 * n]), v[2 * n]);
    let x = input(2 * n + 1);
    let f = |v: &[f64]| {
        let (a, b, k) = split(v);
        elementwise(&a, &b, k)
    };
    let jvp = |v: &[f64], u: &[f64]| {
        let ((a, b, k), (da, db, dk)) = (split(v), split(u));
        let (value, t) = t_elementwise(&a, &da, &b, &db, k, dk);
        assert_eq!(value, elementwise(&a, &b, k));
        t
    };
    let grad = |v: &[f64]| {
        let (a, b, k) = split(v);
        let (mut da, mut db) = (DVector::zeros(n), DVector::zeros(n));
        let (value, dk) = d_elementwise(&a, &mut da, &b, &mut db, k, 1.0);
        assert_eq!(value, elementwise(&a, &b, k));
        da.iter().chain(db.iter()).copied().chain([dk]).collect()
    };
    check("element-wise", &f, &jvp, &grad, &x);
}

/// A result written into a `&mut DVector`.
#[autodiff_reverse(d_layer, Duplicated, Duplicated, Duplicated)]
#[autodiff_forward(t_layer, Dual, Dual, Dual)]
fn layer(a: &DMatrix<f64>, x: &DVector<f64>, out: &mut DVector<f64>) {
    let y = a * x;
    for i in 0..out.len() {
        out[i] = y[i].tanh();
    }
}

#[test]
fn mutable_output() {
    let (m, n) = (3, 2);
    let split = |v: &[f64]| (DMatrix::from_column_slice(m, n, &v[..m * n]), DVector::from_column_slice(&v[m * n..]));
    let x = input(m * n + n);
    let w = DVector::from_vec(vec![0.3, -1.2, 0.7]);
    let f = |v: &[f64]| {
        let (a, x) = split(v);
        let mut out = DVector::zeros(m);
        layer(&a, &x, &mut out);
        out.dot(&w)
    };
    let jvp = |v: &[f64], u: &[f64]| {
        let ((a, x), (da, dx)) = (split(v), split(u));
        let (mut out, mut dout) = (DVector::zeros(m), DVector::zeros(m));
        t_layer(&a, &da, &x, &dx, &mut out, &mut dout);
        let mut o = DVector::zeros(m);
        layer(&a, &x, &mut o);
        assert_eq!(out, o);
        dout.dot(&w)
    };
    let grad = |v: &[f64]| {
        let (a, x) = split(v);
        let (mut da, mut dx) = (DMatrix::zeros(m, n), DVector::zeros(n));
        let (mut out, mut dout) = (DVector::zeros(m), w.clone());
        d_layer(&a, &mut da, &x, &mut dx, &mut out, &mut dout);
        da.as_slice().iter().chain(dx.as_slice()).copied().collect()
    };
    check("&mut DVector", &f, &jvp, &grad, &x);
}

#[autodiff_reverse(d_fixed, Duplicated, Active)]
#[autodiff_forward(t_fixed, Dual, Dual)]
fn fixed(x: &SVector<f64, 3>) -> f64 {
    x.norm_squared() * x[0] + x[2].exp()
}

#[test]
fn static_vector() {
    let f = |v: &[f64]| fixed(&SVector::<f64, 3>::from_column_slice(v));
    let jvp = |v: &[f64], u: &[f64]| {
        let (value, t) = t_fixed(&SVector::from_column_slice(v), &SVector::from_column_slice(u));
        assert_eq!(value, f(v));
        t
    };
    let grad = |v: &[f64]| {
        let mut dx = SVector::<f64, 3>::zeros();
        d_fixed(&SVector::from_column_slice(v), &mut dx, 1.0);
        dx.as_slice().to_vec()
    };
    check("SVector", &f, &jvp, &grad, &input(3));
}

#[autodiff_reverse(d_with_const, Const, Duplicated, Active)]
fn with_const(a: &DMatrix<f64>, x: &DVector<f64>) -> f64 {
    let m = DMatrix::from_row_slice(2, 2, &[1.0, 2.0, 3.0, 4.0]);
    let y = &m * x;
    (a * &y).norm_squared()
}

#[test]
fn constant_matrix_and_local_matrix() {
    let a = DMatrix::from_row_slice(3, 2, &[1.0, -1.0, 0.5, 2.0, 0.0, 1.5]);
    let f = |v: &[f64]| with_const(&a, &DVector::from_column_slice(v));
    let jvp = |v: &[f64], u: &[f64]| {
        let g = {
            let mut dx = DVector::zeros(2);
            d_with_const(&a, &DVector::from_column_slice(v), &mut dx, 1.0);
            dx
        };
        g.dot(&DVector::from_column_slice(u))
    };
    let grad = |v: &[f64]| {
        let mut dx = DVector::zeros(2);
        d_with_const(&a, &DVector::from_column_slice(v), &mut dx, 1.0);
        dx.as_slice().to_vec()
    };
    // (reverse only: the dot-product test is against itself, finite differences decide)
    check("Const matrix", &f, &jvp, &grad, &input(2));
}

#[test]
#[should_panic(expected = "the shadow of `a` is")]
fn shadow_of_another_shape() {
    let a = DMatrix::zeros(3, 2);
    let mut da = DMatrix::zeros(2, 3);
    let x = DVector::zeros(2);
    let mut dx = DVector::zeros(2);
    d_quadratic(&a, &mut da, &x, &mut dx, 1.0);
}

fn softplus_sum(x: &[f64]) -> f64 {
    x.iter().map(|v| (1.0 + v.exp()).ln()).sum()
}

/// A recurrence: products inside a loop, a value reassigned, a transposed local, a name
/// shadowed by a value computed from it, a helper of slices, iteration and in-place updates.
#[autodiff_reverse(d_recurrent, Duplicated, Duplicated, Duplicated, Active)]
#[autodiff_forward(t_recurrent, Dual, Dual, Dual, Dual)]
fn recurrent(w: &DMatrix<f64>, x: &DVector<f64>, h0: &mut DVector<f64>) -> f64 {
    let mut h = h0.clone();
    let wt = w.transpose();
    for step in 0..3 {
        let z = &wt * &h + x * (step as f64);
        h = z.map(|t| t.tanh());
        if h[0] > 2.0 {
            break;
        }
    }
    let h = &w.transpose() * &h;
    for v in h0.iter_mut() {
        *v *= 0.5;
    }
    *h0 = h0.map(|t| t + 1.0);
    let mut s = 0.0;
    for v in &h {
        s += v * v;
    }
    s + softplus_sum(h.as_slice()) + wt[(0, 1)] * w.len() as f64 + h0.sum()
}

#[test]
fn recurrence() {
    let n = 3;
    let split = |v: &[f64]| {
        (
            DMatrix::from_column_slice(n, n, &v[..n * n]),
            DVector::from_column_slice(&v[n * n..n * n + n]),
            DVector::from_column_slice(&v[n * n + n..]),
        )
    };
    let x = input(n * n + 2 * n);
    let f = |v: &[f64]| {
        let (w, x, mut h) = split(v);
        recurrent(&w, &x, &mut h)
    };
    let jvp = |v: &[f64], u: &[f64]| {
        let ((w, x, mut h), (dw, dx, mut dh)) = (split(v), split(u));
        let (value, t) = t_recurrent(&w, &dw, &x, &dx, &mut h, &mut dh);
        assert_eq!(value, f(v));
        t
    };
    let grad = |v: &[f64]| {
        let (w, x, mut h) = split(v);
        let (mut dw, mut dx, mut dh) = (DMatrix::zeros(n, n), DVector::zeros(n), DVector::zeros(n));
        let value = d_recurrent(&w, &mut dw, &x, &mut dx, &mut h, &mut dh, 1.0);
        assert_eq!(value, f(v));
        dw.iter().chain(dx.iter()).chain(dh.iter()).copied().collect()
    };
    check("recurrence", &f, &jvp, &grad, &x);
}

/// A linear solve (`lu().solve()`), with a transposed matrix and a matrix stored by rows.
#[autodiff_reverse(d_solved, Duplicated, Duplicated, Active)]
#[autodiff_forward(t_solved, Dual, Dual, Dual)]
fn solved(a: &DMatrix<f64>, b: &DVector<f64>) -> f64 {
    let x = a.clone().lu().solve(b).unwrap();
    let y = a.transpose().lu().solve(&x).expect("invertible");
    let m = DMatrix::from_row_slice(3, 3, &[4.0, 1.0, 0.0, 1.0, 3.0, 1.0, 0.0, 1.0, 2.0]);
    let z = m.clone().lu().solve(&(&y * 2.0)).unwrap();
    x.dot(b) + y.norm_squared() + z.sum()
}

#[test]
fn linear_solve() {
    let n = 3;
    let split = |v: &[f64]| (DMatrix::from_column_slice(n, n, &v[..n * n]), DVector::from_column_slice(&v[n * n..]));
    let mut x = input(n * n + n);
    for i in 0..n {
        x[i * n + i] += 3.0; // well conditioned
    }
    let f = |v: &[f64]| {
        let (a, b) = split(v);
        solved(&a, &b)
    };
    let jvp = |v: &[f64], u: &[f64]| {
        let ((a, b), (da, db)) = (split(v), split(u));
        let (value, t) = t_solved(&a, &da, &b, &db);
        assert_eq!(value, solved(&a, &b));
        t
    };
    let grad = |v: &[f64]| {
        let (a, b) = split(v);
        let (mut da, mut db) = (DMatrix::zeros(n, n), DVector::zeros(n));
        let value = d_solved(&a, &mut da, &b, &mut db, 1.0);
        assert_eq!(value, solved(&a, &b));
        da.iter().chain(db.iter()).copied().collect()
    };
    check("solve", &f, &jvp, &grad, &x);
}

/// nalgebra values beside slices and numbers, a constant matrix, and `DualOnly`.
#[autodiff_reverse(d_mixed, Const, Duplicated, Duplicated, Active, Active)]
#[autodiff_forward(t_mixed, Const, Dual, Dual, Dual, DualOnly)]
fn mixed(a: &DMatrix<f64>, x: &DVector<f64>, w: &[f64], k: f64) -> f64 {
    let y = a * x;
    let mut s = 0.0;
    for i in 0..w.len() {
        s += w[i] * y[i] * k;
    }
    s + x.norm_squared() * k
}

#[test]
fn beside_slices() {
    let a = DMatrix::from_row_slice(2, 2, &[1.0, -1.0, 0.5, 2.0]);
    let split = |v: &[f64]| (DVector::from_column_slice(&v[..2]), v[2..4].to_vec(), v[4]);
    let f = |v: &[f64]| {
        let (x, w, k) = split(v);
        mixed(&a, &x, &w, k)
    };
    let jvp = |v: &[f64], u: &[f64]| {
        let ((x, w, k), (dx, dw, dk)) = (split(v), split(u));
        t_mixed(&a, &x, &dx, &w, &dw, k, dk)
    };
    let grad = |v: &[f64]| {
        let (x, w, k) = split(v);
        let (mut dx, mut dw) = (DVector::zeros(2), vec![0.0; 2]);
        let (value, dk) = d_mixed(&a, &x, &mut dx, &w, &mut dw, k, 1.0);
        assert_eq!(value, f(v));
        dx.iter().chain(dw.iter()).copied().chain([dk]).collect()
    };
    check("beside slices", &f, &jvp, &grad, &input(5));
}

/// Locals made every way cotan supports, `fill`, `copy_from`, `mean`.
#[autodiff_reverse(d_locals, Duplicated, Active)]
#[autodiff_forward(t_locals, Dual, Dual)]
fn locals(x: &DVector<f64>) -> f64 {
    let n = x.len();
    let mut a = DVector::from_element(n, 0.5);
    let b = DVector::from_fn(n, |i, _| x[i] * (i as f64 + 1.0));
    let mut c = DVector::zeros(n);
    c.copy_from(&b);
    c[0] += x[1];
    a.fill(x[0]);
    let m = DMatrix::from_vec(2, 2, vec![x[0], 1.0, x[2], 2.0]);
    let e = DMatrix::from_element(2, 2, x[1]);
    let g = DMatrix::from_fn(2, 3, |k, i| x[k] * i as f64);
    let h = (&m + &e) * &g;
    a.dot(&c) + b.mean() + h.sum() + h[(1, 2)]
}

#[test]
fn local_values() {
    let f = |v: &[f64]| locals(&DVector::from_column_slice(v));
    let jvp = |v: &[f64], u: &[f64]| {
        let (value, t) = t_locals(&DVector::from_column_slice(v), &DVector::from_column_slice(u));
        assert_eq!(value, f(v));
        t
    };
    let grad = |v: &[f64]| {
        let mut dx = DVector::zeros(v.len());
        let value = d_locals(&DVector::from_column_slice(v), &mut dx, 1.0);
        assert_eq!(value, f(v));
        dx.as_slice().to_vec()
    };
    check("locals", &f, &jvp, &grad, &input(3));
}

/// A Cholesky factor of a symmetric positive definite matrix made from `a` (a product, a
/// transposed view and a diagonal shift), its `solve`, `l()`, `diagonal()` and both
/// determinants; and the factor of the parameter itself (nalgebra reads its lower
/// triangle: the derivatives of the upper one are zero, as finite differences see).
#[autodiff_reverse(d_cholesky_uses, Duplicated, Duplicated, Active)]
#[autodiff_forward(t_cholesky_uses, Dual, Dual, Dual)]
fn cholesky_uses(a: &DMatrix<f64>, b: &DVector<f64>) -> f64 {
    let n = a.nrows();
    let mut m = a * a.transpose();
    for i in 0..n {
        m[(i, i)] += 1.0;
    }
    let c = m.clone().cholesky().unwrap();
    let x = c.solve(b);
    let l = c.l();
    let log_det = l.diagonal().iter().map(|d| d.ln()).sum::<f64>() * 2.0;
    let p = a.clone().cholesky().expect("positive definite");
    let y = p.solve(&x);
    x.dot(b) + log_det + c.ln_determinant() + c.determinant().sqrt() + l[(2, 0)] * l[(1, 1)] + y.sum() + p.l().sum()
}

fn spd_input(n: usize) -> Vec<f64> {
    let mut x = input(n * n + n);
    for i in 0..n {
        x[i * n + i] += 3.0; // positive definite: its own Cholesky factor exists
    }
    x
}

#[test]
fn cholesky() {
    let n = 3;
    let split = |v: &[f64]| (DMatrix::from_column_slice(n, n, &v[..n * n]), DVector::from_column_slice(&v[n * n..]));
    let f = |v: &[f64]| {
        let (a, b) = split(v);
        cholesky_uses(&a, &b)
    };
    let jvp = |v: &[f64], u: &[f64]| {
        let ((a, b), (da, db)) = (split(v), split(u));
        let (value, t) = t_cholesky_uses(&a, &da, &b, &db);
        assert_eq!(value, cholesky_uses(&a, &b));
        t
    };
    let grad = |v: &[f64]| {
        let (a, b) = split(v);
        let (mut da, mut db) = (DMatrix::zeros(n, n), DVector::zeros(n));
        let value = d_cholesky_uses(&a, &mut da, &b, &mut db, 1.0);
        assert_eq!(value, cholesky_uses(&a, &b));
        // Above the diagonal of `a` only `m = a aᵀ` reads it; the derivative is not zero there.
        da.iter().chain(db.iter()).copied().collect()
    };
    check("cholesky", &f, &jvp, &grad, &spd_input(n));
}

/// The same log-determinant and solve by the textbook loops on slices, which cotan
/// differentiates statement by statement: the runtime's rules must agree with them.
#[autodiff_reverse(d_chol_loops, Duplicated, Duplicated, Const, Active)]
fn chol_loops(a: &[f64], b: &[f64], n: usize) -> f64 {
    // L, column-major, from the lower triangle of `a` (column-major too), as nalgebra does.
    let mut l = vec![0.0; n * n];
    for j in 0..n {
        let mut d = a[j * n + j];
        for k in 0..j {
            d -= l[k * n + j] * l[k * n + j];
        }
        let djj = d.sqrt();
        l[j * n + j] = djj;
        for i in j + 1..n {
            let mut s = a[j * n + i];
            for k in 0..j {
                s -= l[k * n + i] * l[k * n + j];
            }
            l[j * n + i] = s / djj;
        }
    }
    // L y = b, Lᵀ x = y.
    let mut y = vec![0.0; n];
    for i in 0..n {
        let mut s = b[i];
        for k in 0..i {
            s -= l[k * n + i] * y[k];
        }
        y[i] = s / l[i * n + i];
    }
    let mut x = vec![0.0; n];
    for ii in 0..n {
        let i = n - 1 - ii;
        let mut s = y[i];
        for k in i + 1..n {
            s -= l[i * n + k] * x[k];
        }
        x[i] = s / l[i * n + i];
    }
    let mut r = 0.0;
    for i in 0..n {
        r += x[i] * b[i] + 2.0 * l[i * n + i].ln() + l[i];
    }
    r
}

#[autodiff_reverse(d_chol_rules, Duplicated, Duplicated, Active)]
fn chol_rules(a: &DMatrix<f64>, b: &DVector<f64>) -> f64 {
    let c = a.clone().cholesky().unwrap();
    let x = c.solve(b);
    let l = c.l();
    let mut first_column = 0.0;
    for i in 0..l.nrows() {
        first_column += l[(i, 0)];
    }
    x.dot(b) + c.ln_determinant() + first_column
}

#[test]
fn cholesky_rules_agree_with_loops() {
    let n = 4;
    let mut v = spd_input(n);
    // A symmetric matrix: the loops read the lower triangle as nalgebra does, and the
    // gradients of both are of the lower triangle only.
    for j in 0..n {
        for i in 0..j {
            v[j * n + i] = v[i * n + j];
        }
    }
    let (a, b) = (DMatrix::from_column_slice(n, n, &v[..n * n]), DVector::from_column_slice(&v[n * n..]));
    let (mut da, mut db) = (DMatrix::zeros(n, n), DVector::zeros(n));
    let value = d_chol_rules(&a, &mut da, &b, &mut db, 1.0);
    let (mut da2, mut db2) = (vec![0.0; n * n], vec![0.0; n]);
    let value2 = d_chol_loops(a.as_slice(), &mut da2, b.as_slice(), &mut db2, n, 1.0);
    assert!((value - value2).abs() <= 1e-12 * value.abs().max(1.0), "values {value} vs {value2}");
    for (k, (g, h)) in da.iter().chain(db.iter()).zip(da2.iter().chain(&db2)).enumerate() {
        assert!((g - h).abs() <= 1e-10 * h.abs().max(1.0), "gradient entry {k}: rules {g} vs loops {h}");
    }
    assert!(da[(0, n - 1)] == 0.0 && da[(n - 1, 0)] != 0.0, "only the lower triangle is read");
}

#[test]
#[should_panic(expected = "called `Option::unwrap()` on a `None` value")]
fn cholesky_of_indefinite_matrix_panics_as_unwrap() {
    let a = DMatrix::from_row_slice(2, 2, &[1.0, 2.0, 2.0, 1.0]);
    let (mut da, mut db) = (DMatrix::zeros(2, 2), DVector::zeros(2));
    assert!(a.clone().cholesky().is_none());
    d_chol_rules(&a, &mut da, &DVector::from_element(2, 1.0), &mut db, 1.0);
}

#[test]
#[should_panic(expected = "positive definite")]
fn cholesky_of_indefinite_matrix_panics_as_expect() {
    // `m = a aᵀ + I` is positive definite; `a` itself is not.
    let a = DMatrix::from_row_slice(3, 3, &[1.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 1.0]);
    let (mut da, mut db) = (DMatrix::zeros(3, 3), DVector::zeros(3));
    t_cholesky_uses(&a, &da.clone(), &DVector::from_element(3, 1.0), &db.clone());
    d_cholesky_uses(&a, &mut da, &DVector::from_element(3, 1.0), &mut db, 1.0);
}
