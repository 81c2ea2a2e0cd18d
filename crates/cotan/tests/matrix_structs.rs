//! Structs whose fields are arrays of arrays, the way small-matrix code is written:
//! `struct Mat3 { m: [[f64; 3]; 3] }` and the tuple struct `M2([[f64; 2]; 2])`, made by
//! constructors and literals, returned by functions and methods, methods chained on a
//! returned one (`Mat3::rot_z(t).transpose()`), chosen by an `if`, assigned again in a loop
//! (`r = r * step`), passed by value and by reference, and `impl Mul for Mat3` beside
//! `impl Mul<[f64; 3]> for Mat3`. Every derivative is checked against finite differences
//! and forward mode against reverse mode (dot-product test).

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

mod common;

use cotan::{autodiff_forward, autodiff_reverse};
use std::ops::Mul;

#[derive(Clone, Copy, Debug)]
struct Mat3 {
    m: [[f64; 3]; 3],
}

impl Mat3 {
    fn identity() -> Self {
        let mut m = [[0.0; 3]; 3];
        for i in 0..3 {
            m[i][i] = 1.0;
        }
        Mat3 { m }
    }

    fn rot_x(t: f64) -> Mat3 {
        let (s, c) = t.sin_cos();
        Mat3 { m: [[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]] }
    }

    fn rot_z(t: f64) -> Mat3 {
        let (s, c) = t.sin_cos();
        Mat3 { m: [[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]] }
    }

    fn scale(k: f64) -> Self {
        let mut m = [[0.0; 3]; 3];
        for i in 0..3 {
            m[i][i] = k;
        }
        Self { m }
    }

    fn transpose(&self) -> Mat3 {
        let mut r = self.m;
        for i in 0..3 {
            for j in 0..3 {
                r[i][j] = self.m[j][i];
            }
        }
        Mat3 { m: r }
    }

    fn apply(&self, v: [f64; 3]) -> [f64; 3] {
        let mut r = [0.0; 3];
        for i in 0..3 {
            for k in 0..3 {
                r[i] += self.m[i][k] * v[k];
            }
        }
        r
    }

    fn trace(&self) -> f64 {
        self.m[0][0] + self.m[1][1] + self.m[2][2]
    }
}

impl Mul for Mat3 {
    type Output = Mat3;
    fn mul(self, o: Mat3) -> Mat3 {
        let mut r = [[0.0; 3]; 3];
        for i in 0..3 {
            for j in 0..3 {
                for k in 0..3 {
                    r[i][j] += self.m[i][k] * o.m[k][j];
                }
            }
        }
        Mat3 { m: r }
    }
}

impl Mul<[f64; 3]> for Mat3 {
    type Output = [f64; 3];
    fn mul(self, v: [f64; 3]) -> [f64; 3] {
        self.apply(v)
    }
}

fn det(m: &Mat3) -> f64 {
    let a = &m.m;
    a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) - a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0])
        + a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0])
}

fn frobenius(m: Mat3) -> f64 {
    let mut s = 0.0;
    for row in m.m.iter() {
        for v in row {
            s += v * v;
        }
    }
    s
}

/// Rotations composed in a loop, each chosen by an `if`.
fn chain(angles: &[f64]) -> Mat3 {
    let mut r = Mat3::identity();
    for (i, &a) in angles.iter().enumerate() {
        let step = if i % 2 == 0 { Mat3::rot_z(a) } else { Mat3::rot_x(a) };
        r = r * step;
    }
    r
}

#[derive(Clone, Copy)]
struct M2([[f64; 2]; 2]);

impl M2 {
    fn new(a: f64, b: f64) -> M2 {
        M2([[a, b], [-b, a * a]])
    }
    fn det(&self) -> f64 {
        self.0[0][0] * self.0[1][1] - self.0[0][1] * self.0[1][0]
    }
}

#[autodiff_reverse(rotations_rev, Duplicated, Active)]
#[autodiff_forward(rotations_fwd, Dual, Dual)]
fn rotations(x: &[f64]) -> f64 {
    let r = chain(x);
    let mut s = r;
    s.m[0][0] += x[0] * x[1];
    let p = r * [1.0, x[2], 3.0];
    let t = Mat3::rot_z(x[1]).transpose() * Mat3::scale(x[3]);
    p[0] + 2.0 * p[2] + det(&s) + frobenius(s) + t.trace() * t.apply([x[0], 1.0, 0.5])[1]
}

#[autodiff_reverse(small_rev, Duplicated, Active)]
#[autodiff_forward(small_fwd, Dual, Dual)]
fn small(x: &[f64]) -> f64 {
    let m = M2::new(x[0], x[1]);
    let n = M2([[x[1], x[0]], [x[0] * x[1], 2.0]]);
    m.det() * n.det() + n.0[1][0]
}

#[test]
fn matrices_as_structs_of_arrays_of_arrays() {
    for x in [[0.3, 0.7, 1.3, -0.4], [-1.1, 0.2, 0.6, 0.9]] {
        common::check_slice_fn("rotations", rotations, rotations_rev, rotations_fwd, &x);
    }
    common::check_slice_fn("small", small, small_rev, small_fwd, &[0.4, -0.3]);
}

/// A constructor returning `Self` for a struct with a vector field, with a method chained
/// on its result.
pub struct Poly {
    c: Vec<f64>,
}

impl Poly {
    pub fn new(c: &[f64]) -> Self {
        Self { c: c.to_vec() }
    }
    pub fn eval(&self, x: f64) -> f64 {
        self.c.iter().rev().fold(0.0, |a, &ci| a * x + ci)
    }
}

/// Tuple structs of arrays with `impl Mul for T3` and `impl Mul<V3t> for T3`.
#[derive(Clone, Copy)]
pub struct T3(pub [[f64; 3]; 3]);

#[derive(Clone, Copy)]
pub struct V3t(pub [f64; 3]);

impl T3 {
    pub fn transpose(&self) -> T3 {
        let mut r = [[0.0; 3]; 3];
        for i in 0..3 {
            for j in 0..3 {
                r[i][j] = self.0[j][i];
            }
        }
        T3(r)
    }
}

impl Mul for T3 {
    type Output = T3;
    fn mul(self, o: T3) -> T3 {
        let mut r = [[0.0; 3]; 3];
        for i in 0..3 {
            for j in 0..3 {
                for k in 0..3 {
                    r[i][j] += self.0[i][k] * o.0[k][j];
                }
            }
        }
        T3(r)
    }
}

impl Mul<V3t> for T3 {
    type Output = V3t;
    fn mul(self, v: V3t) -> V3t {
        let mut r = [0.0; 3];
        for i in 0..3 {
            for k in 0..3 {
                r[i] += self.0[i][k] * v.0[k];
            }
        }
        V3t(r)
    }
}

#[autodiff_reverse(poly_and_gram_rev, Duplicated, Active)]
#[autodiff_forward(poly_and_gram_fwd, Dual, Dual)]
fn poly_and_gram(x: &[f64]) -> f64 {
    let p = Poly::new(&x[..3]).eval(x[3]);
    let f = T3([[x[0], x[1], 0.5], [x[2], x[3], x[0]], [1.0, x[1], x[2]]]);
    let ff = f;
    let c = f.transpose() * ff;
    let v = c * V3t([1.0, x[3], 3.0]);
    p + c.0[0][1] + v.0[2]
}

#[test]
fn constructors_returning_self_and_tuple_structs_of_arrays() {
    for x in [[0.3, 0.7, -0.2, 0.9], [-1.1, 0.4, 0.6, -0.3]] {
        common::check_slice_fn("poly_and_gram", poly_and_gram, poly_and_gram_rev, poly_and_gram_fwd, &x);
    }
}
