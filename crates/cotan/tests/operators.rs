//! Operators on structs of the crate (`impl Sub for V3`, `impl Mul<f64> for V3`, `Neg`,
//! `AddAssign`, an operator giving a number): on struct values, on elements of
//! slices of structs, on results of calls and folds, and the operator methods called by
//! name (`p[i].sub(p[j])`, which is not pointer arithmetic). Every derivative is checked
//! against finite differences, forward mode against reverse mode (dot-product test), and
//! the Hessian-vector product against finite differences of the gradient.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

mod common;

use cotan::{autodiff_forward, autodiff_reverse, hvp};
use std::ops::{Add, AddAssign, Mul, Neg, Sub};

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct V3 {
    pub x: f64,
    pub y: f64,
    pub z: f64,
}

impl V3 {
    fn new(x: f64, y: f64, z: f64) -> Self {
        V3 { x, y, z }
    }
    fn dot(self, o: V3) -> f64 {
        self.x * o.x + self.y * o.y + self.z * o.z
    }
    fn norm(self) -> f64 {
        self.dot(self).sqrt()
    }
}

impl Add for V3 {
    type Output = V3;
    fn add(self, o: V3) -> V3 {
        V3::new(self.x + o.x, self.y + o.y, self.z + o.z)
    }
}

impl Sub for V3 {
    type Output = V3;
    fn sub(self, o: V3) -> V3 {
        V3::new(self.x - o.x, self.y - o.y, self.z - o.z)
    }
}

impl Mul<f64> for V3 {
    type Output = V3;
    fn mul(self, s: f64) -> V3 {
        V3::new(self.x * s, self.y * s, self.z * s)
    }
}

/// `a % b` of two vectors: their dot product (a number from an operator).
impl std::ops::Rem for V3 {
    type Output = f64;
    fn rem(self, o: V3) -> f64 {
        self.dot(o)
    }
}

impl Neg for V3 {
    type Output = V3;
    fn neg(self) -> V3 {
        V3::new(-self.x, -self.y, -self.z)
    }
}

impl AddAssign for V3 {
    fn add_assign(&mut self, o: V3) {
        self.x += o.x;
        self.y += o.y;
        self.z += o.z;
    }
}

/// A tuple struct with `Add` and `Sub`.
#[derive(Clone, Copy, Debug, Default)]
struct W2(f64, f64);

impl Add for W2 {
    type Output = W2;
    fn add(self, o: W2) -> W2 {
        W2(self.0 + o.0, self.1 + o.1)
    }
}

impl Sub for W2 {
    type Output = W2;
    fn sub(self, o: W2) -> W2 {
        W2(self.0 - o.0, self.1 - o.1)
    }
}

#[autodiff_forward(values_fwd, Dual, Dual)]
#[autodiff_reverse(values_rev, Duplicated, Active)]
#[hvp(values_hvp)]
fn values(x: &[f64]) -> f64 {
    let a = V3::new(x[0], x[1], x[2]);
    let b = V3::new(x[3], x[4], x[5]);
    let d = a - b;
    let m = (a + b) * 0.5;
    let mut acc = V3::default();
    acc += d;
    acc += m * x[0];
    let back = -(acc - m);
    let mut w = W2(x[0], x[1]);
    w = w + W2(x[2] * x[3], 1.0);
    w = w - W2(0.5, x[4]);
    d.norm() + m % acc + back.y * back.z + (a - b + m).dot(a) + w.0 * w.1
}

#[autodiff_reverse(bonds_rev, Duplicated, Active)]
fn bonds(p: &[V3]) -> f64 {
    let mut e = 0.0;
    for i in 0..p.len() - 1 {
        let d = p[i + 1] - p[i];
        e += (d.norm() - 1.0).powi(2);
    }
    let c = p.iter().fold(V3::default(), |a, &b| a + b) * (1.0 / p.len() as f64);
    let mut s = V3::default();
    for q in p {
        s += *q * q.x;
    }
    let t = p[1].sub(p[0]).add(p[2]).mul(2.0);
    e + c.dot(c) + s % c + t.norm()
}

/// Checks `f: &[f64] -> f64` through its forward and reverse derivatives at `x`.
fn check(
    src: &'static str,
    f: &dyn Fn(&[f64]) -> f64,
    fwd: &dyn Fn(&[f64], &[f64]) -> (f64, f64),
    rev: &dyn Fn(&[f64], &mut [f64]) -> f64,
    x: &[f64],
) {
    let case = common::Case {
        src,
        shape: common::Shape::Slice,
        primal: &|x| vec![f(x)],
        jvp: &|x, u| {
            let (y, t) = fwd(x, u);
            (vec![y], vec![t])
        },
        vjp: &|x, w| {
            let mut g = vec![0.0; x.len()];
            let y = rev(x, &mut g);
            (vec![y], g.iter().map(|v| v * w[0]).collect())
        },
    };
    common::check_compiled(&case, x);
}

#[test]
fn operators_on_struct_values() {
    let f = |x: &[f64]| values(x);
    let fwd = |x: &[f64], u: &[f64]| values_fwd(x, u);
    let rev = |x: &[f64], g: &mut [f64]| values_rev(x, g, 1.0);
    for x in [[0.7, -0.4, 1.3, 0.2, -1.1, 0.9], [1.2, 0.3, 0.8, -0.6, 0.4, -0.2]] {
        check("values", &f, &fwd, &rev, &x);
    }
    // Second order: against finite differences of the gradient.
    let x = [0.7, -0.4, 1.3, 0.2, -1.1, 0.9];
    let v = [0.3, 1.0, -0.5, 0.8, -0.2, 0.6];
    let (mut g, mut hv) = ([0.0; 6], [0.0; 6]);
    values_hvp(&x, &v, &mut g, &mut hv);
    let grad = |x: &[f64]| {
        let mut g = vec![0.0; 6];
        values_rev(x, &mut g, 1.0);
        g
    };
    let h = 1e-4;
    let xp: Vec<f64> = x.iter().zip(&v).map(|(a, b)| a + h * b).collect();
    let xm: Vec<f64> = x.iter().zip(&v).map(|(a, b)| a - h * b).collect();
    for k in 0..6 {
        let want = (grad(&xp)[k] - grad(&xm)[k]) / (2.0 * h);
        assert!((hv[k] - want).abs() <= 1e-6 * want.abs().max(1.0), "hv[{k}]: {} vs {want}", hv[k]);
    }
}

#[test]
fn operators_on_elements_of_a_slice_of_structs() {
    let p = vec![V3::new(0.0, 0.1, -0.2), V3::new(1.1, 0.2, 0.0), V3::new(1.9, 0.9, 0.3), V3::new(2.4, 1.7, 0.1)];
    let mut dp = vec![V3::default(); p.len()];
    let value = bonds_rev(&p, &mut dp, 1.0);
    assert_eq!(value, bonds(&p));
    let flat: Vec<f64> = p.iter().flat_map(|v| [v.x, v.y, v.z]).collect();
    let of_flat = |f: &[f64]| bonds(&f.chunks(3).map(|c| V3::new(c[0], c[1], c[2])).collect::<Vec<_>>());
    let h = 1e-6;
    for k in 0..flat.len() {
        let (mut up, mut down) = (flat.clone(), flat.clone());
        up[k] += h;
        down[k] -= h;
        let want = (of_flat(&up) - of_flat(&down)) / (2.0 * h);
        let got = [dp[k / 3].x, dp[k / 3].y, dp[k / 3].z][k % 3];
        assert!((got - want).abs() <= 1e-6 * want.abs().max(1.0), "d/dp[{k}]: {got} vs {want}");
    }
}
