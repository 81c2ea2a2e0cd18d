//! ndarray values in differentiated functions (feature `ndarray`): `&Array1`, `&mut Array1`,
//! `&Array2`, `ArrayView1`, `ArrayView2` parameters with shadows of the same types;
//! indexing (`a[[i, j]]`), `dot` (vector-vector, matrix-vector, vector-matrix,
//! matrix-matrix), `t()`, `sum`, `map`/`mapv`, element-wise arithmetic, `arr1`/`arr2` and
//! `Array1::zeros` locals. Every derivative is checked against central finite differences
//! (relative tolerance 1e-6), reverse against forward mode (dot-product test, 1e-10), and the
//! values the derivatives return against the primal's.
#![cfg(feature = "ndarray")]
#![allow(clippy::all, dead_code)]

mod common;

use cotan::{autodiff_forward, autodiff_reverse};
use ndarray::{arr1, arr2, Array1, Array2, ArrayView1, ArrayView2};

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

fn matrix(m: usize, n: usize, v: &[f64]) -> Array2<f64> {
    Array2::from_shape_vec((m, n), v.to_vec()).unwrap()
}

#[autodiff_reverse(d_quadratic, Duplicated, Duplicated, Active)]
#[autodiff_forward(t_quadratic, Dual, Dual, Dual)]
fn quadratic(a: &Array2<f64>, x: &Array1<f64>) -> f64 {
    let y = a.dot(x);
    let z = a.t().dot(&y);
    let w = y.dot(a);
    y.dot(&y) + x.dot(x).sqrt() + z.dot(x) + a[[1, 0]] * y[2] + w.sum()
}

#[test]
fn matrix_vector() {
    let (m, n) = (3, 2);
    let split = |v: &[f64]| (matrix(m, n, &v[..m * n]), Array1::from(v[m * n..].to_vec()));
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
        let (mut da, mut dx) = (Array2::zeros((m, n)), Array1::zeros(n));
        let value = d_quadratic(&a, &mut da, &x, &mut dx, 1.0);
        assert_eq!(value, quadratic(&a, &x));
        da.iter().chain(dx.iter()).copied().collect()
    };
    check("matrix-vector", &f, &jvp, &grad, &x);
}

#[autodiff_reverse(d_products, Duplicated, Duplicated, Active)]
#[autodiff_forward(t_products, Dual, Dual, Dual)]
fn products(a: ArrayView2<f64>, b: ArrayView2<f64>) -> f64 {
    let c = a.dot(&b);
    let g = c.t().dot(&c);
    let h = a.t().dot(&a);
    let (r, k) = g.dim();
    let mut s = 0.0;
    for i in 0..r {
        for j in 0..k {
            s += g[[i, j]].sin() * (i + 2 * j) as f64;
        }
    }
    s + h.mapv(|t| t * t).sum() + c.dot(&b.t()).sum() + c[[1, 2]] * a.nrows() as f64 + b.shape()[1] as f64
}

#[test]
fn matrix_matrix() {
    let (m, k, n) = (3, 2, 4);
    let split = |v: &[f64]| (matrix(m, k, &v[..m * k]), matrix(k, n, &v[m * k..]));
    let x = input(m * k + k * n);
    let f = |v: &[f64]| {
        let (a, b) = split(v);
        products(a.view(), b.view())
    };
    let jvp = |v: &[f64], u: &[f64]| {
        let ((a, b), (da, db)) = (split(v), split(u));
        let (value, t) = t_products(a.view(), da.view(), b.view(), db.view());
        assert_eq!(value, products(a.view(), b.view()));
        t
    };
    let grad = |v: &[f64]| {
        let (a, b) = split(v);
        let (mut da, mut db) = (Array2::zeros((m, k)), Array2::zeros((k, n)));
        let value = d_products(a.view(), da.view_mut(), b.view(), db.view_mut(), 1.0);
        assert_eq!(value, products(a.view(), b.view()));
        da.iter().chain(db.iter()).copied().collect()
    };
    check("matrix-matrix", &f, &jvp, &grad, &x);
}

#[autodiff_reverse(d_elementwise, Duplicated, Duplicated, Active, Active)]
#[autodiff_forward(t_elementwise, Dual, Dual, Dual, Dual)]
fn elementwise(v: ArrayView1<f64>, w: &Array1<f64>, k: f64) -> f64 {
    let z = (&v + w).mapv(f64::sin);
    let q = &v * w * k;
    let mut r = Array1::zeros(v.len());
    for i in 0..r.len() {
        r[i] = v[i] * (i as f64) - w[i];
    }
    r += &q;
    r *= 0.5;
    r -= 1.0;
    let d = -(&r - &z) / 3.0 + 2.0;
    let mut s = 0.0;
    for x in v.iter() {
        s += x * x;
    }
    let e = arr1(&[1.0, k, 2.0]);
    let m = arr2(&[[1.0, 2.0], [k, 0.5], [0.0, 1.0]]);
    let p = m.t().dot(&e);
    s + z.sum() + q.map(|t| t.exp()).sum() + d.dot(&r) + v[1] * w.len() as f64 + e.dot(w) + p[1]
}

#[test]
fn element_wise() {
    let n = 3;
    let split = |v: &[f64]| (Array1::from(v[..n].to_vec()), Array1::from(v[n..2 * n].to_vec()), v[2 * n]);
    let x = input(2 * n + 1);
    let f = |v: &[f64]| {
        let (a, b, k) = split(v);
        elementwise(a.view(), &b, k)
    };
    let jvp = |v: &[f64], u: &[f64]| {
        let ((a, b, k), (da, db, dk)) = (split(v), split(u));
        let (value, t) = t_elementwise(a.view(), da.view(), &b, &db, k, dk);
        assert_eq!(value, elementwise(a.view(), &b, k));
        t
    };
    let grad = |v: &[f64]| {
        let (a, b, k) = split(v);
        let (mut da, mut db) = (Array1::zeros(n), Array1::zeros(n));
        let (value, dk) = d_elementwise(a.view(), da.view_mut(), &b, &mut db, k, 1.0);
        assert_eq!(value, elementwise(a.view(), &b, k));
        da.iter().chain(db.iter()).copied().chain([dk]).collect()
    };
    check("element-wise", &f, &jvp, &grad, &x);
}

/// A result written into a `&mut Array1`.
#[autodiff_reverse(d_layer, Duplicated, Duplicated, Duplicated)]
#[autodiff_forward(t_layer, Dual, Dual, Dual)]
fn layer(a: &Array2<f64>, x: &Array1<f64>, out: &mut Array1<f64>) {
    let y = a.dot(x);
    for i in 0..out.len() {
        out[i] = y[i].tanh();
    }
}

#[test]
fn mutable_output() {
    let (m, n) = (3, 2);
    let split = |v: &[f64]| (matrix(m, n, &v[..m * n]), Array1::from(v[m * n..].to_vec()));
    let x = input(m * n + n);
    let w = arr1(&[0.3, -1.2, 0.7]);
    let f = |v: &[f64]| {
        let (a, x) = split(v);
        let mut out = Array1::zeros(m);
        layer(&a, &x, &mut out);
        out.dot(&w)
    };
    let jvp = |v: &[f64], u: &[f64]| {
        let ((a, x), (da, dx)) = (split(v), split(u));
        let (mut out, mut dout) = (Array1::zeros(m), Array1::zeros(m));
        t_layer(&a, &da, &x, &dx, &mut out, &mut dout);
        let mut o = Array1::zeros(m);
        layer(&a, &x, &mut o);
        assert_eq!(out, o);
        dout.dot(&w)
    };
    let grad = |v: &[f64]| {
        let (a, x) = split(v);
        let (mut da, mut dx) = (Array2::zeros((m, n)), Array1::zeros(n));
        let (mut out, mut dout) = (Array1::zeros(m), w.clone());
        d_layer(&a, &mut da, &x, &mut dx, &mut out, &mut dout);
        da.iter().chain(dx.iter()).copied().collect()
    };
    check("&mut Array1", &f, &jvp, &grad, &x);
}

#[test]
#[should_panic(expected = "is not in standard (row-major, contiguous) layout")]
fn non_contiguous_view_panics() {
    let a = matrix(2, 3, &input(6));
    let b = matrix(2, 2, &input(4));
    let (mut da, mut db) = (Array2::zeros((3, 2)), Array2::zeros((2, 2)));
    // A transposed view is not contiguous in row-major order.
    d_products(a.t(), da.view_mut(), b.view(), db.view_mut(), 1.0);
}

fn softplus_sum(x: &[f64]) -> f64 {
    x.iter().map(|v| (1.0 + v.exp()).ln()).sum()
}

/// A recurrence: products inside a loop, a value reassigned, a transposed view, a name
/// shadowed by a value computed from it, a helper of slices, iteration and in-place updates.
#[autodiff_reverse(d_recurrent, Duplicated, Duplicated, Duplicated, Active)]
#[autodiff_forward(t_recurrent, Dual, Dual, Dual, Dual)]
fn recurrent(w: &Array2<f64>, x: &Array1<f64>, h0: &mut Array1<f64>) -> f64 {
    let mut h = h0.clone();
    let wt = w.t();
    for step in 0..3 {
        let z = wt.dot(&h) + x * (step as f64);
        h = z.mapv(|t| t.tanh());
        if h[0] > 2.0 {
            break;
        }
    }
    let h = w.t().dot(&h);
    for v in h0.iter_mut() {
        *v *= 0.5;
    }
    let mut s = 0.0;
    for v in &h {
        s += v * v;
    }
    s + softplus_sum(h.as_slice().unwrap()) + wt[[0, 1]] * w.len() as f64 + h0.sum()
}

#[test]
fn recurrence() {
    let n = 3;
    let split = |v: &[f64]| {
        (matrix(n, n, &v[..n * n]), Array1::from(v[n * n..n * n + n].to_vec()), Array1::from(v[n * n + n..].to_vec()))
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
        let (mut dw, mut dx, mut dh) = (Array2::zeros((n, n)), Array1::zeros(n), Array1::zeros(n));
        let value = d_recurrent(&w, &mut dw, &x, &mut dx, &mut h, &mut dh, 1.0);
        assert_eq!(value, f(v));
        dw.iter().chain(dx.iter()).chain(dh.iter()).copied().collect()
    };
    check("recurrence", &f, &jvp, &grad, &x);
}

/// Locals made every way cotan supports, `fill`, `assign`, `mapv` by a function.
#[autodiff_reverse(d_locals, Duplicated, Active)]
#[autodiff_forward(t_locals, Dual, Dual)]
fn locals(x: &Array1<f64>) -> f64 {
    let n = x.len();
    let mut a = Array1::from_elem(n, 0.5);
    let b = Array1::from_shape_fn(n, |i| x[i] * (i as f64 + 1.0));
    let mut c = Array1::zeros(n);
    c.assign(&b);
    c[0] += x[1];
    a.fill(x[0]);
    let v = Array1::from_vec(vec![x[0], 1.0, x[2]]);
    let m = Array2::from_elem((2, 3), x[1]);
    let h = m.dot(&v).mapv(f64::exp);
    a.dot(&c) + b.sum() + h.sum() + h[1]
}

#[test]
fn local_values() {
    let f = |v: &[f64]| locals(&Array1::from(v.to_vec()));
    let jvp = |v: &[f64], u: &[f64]| {
        let (value, t) = t_locals(&Array1::from(v.to_vec()), &Array1::from(u.to_vec()));
        assert_eq!(value, f(v));
        t
    };
    let grad = |v: &[f64]| {
        let mut dx = Array1::zeros(v.len());
        let value = d_locals(&Array1::from(v.to_vec()), &mut dx, 1.0);
        assert_eq!(value, f(v));
        dx.to_vec()
    };
    check("locals", &f, &jvp, &grad, &input(3));
}
