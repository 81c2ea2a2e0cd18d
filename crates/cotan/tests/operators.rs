//! Operators on structs of the crate (`impl Sub for V3`, `impl Mul<f64> for V3`, `Neg`,
//! `AddAssign`, an operator giving a number, `impl Mul<V3> for f64`): on struct values, on elements of
//! slices of structs, on results of calls and folds, and the operator methods called by
//! name (`p[i].sub(p[j])`, which is not pointer arithmetic); structs written into memory
//! (`pos[i] = pos[i] + vel[i] * dt`, `vel[i] += a * dt`, `b.pos = ..` of a struct field),
//! and `&mut self` methods on elements of a slice of structs. Every derivative is checked
//! against finite differences, forward mode against reverse mode (dot-product test), and
//! the Hessian-vector product against finite differences of the gradient.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

mod common;

use cotan::{autodiff_forward, autodiff_reverse, hvp};
use std::ops::{Add, AddAssign, Mul, Neg, Sub};

#[derive(Clone, Copy, Debug, Default, PartialEq, cotan::Differentiable)]
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
    /// A `&mut self` method, called on elements of a slice of structs.
    fn bump(&mut self, d: f64) {
        self.x += d * self.y;
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

/// A number times a vector, `2.0 * v`.
impl Mul<V3> for f64 {
    type Output = V3;
    fn mul(self, v: V3) -> V3 {
        v * self
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

/// A tuple struct with `Add` and `Sub`, and `Mul<f64>` by its full path.
#[derive(Clone, Copy, Debug, Default)]
struct W2(f64, f64);

impl std::ops::Mul<f64> for W2 {
    type Output = W2;
    fn mul(self, s: f64) -> W2 {
        W2(self.0 * s, self.1 * s)
    }
}

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
    w = (w - W2(0.5, x[4])) * 1.5;
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

#[test]
fn operators_on_struct_values() {
    for x in [[0.7, -0.4, 1.3, 0.2, -1.1, 0.9], [1.2, 0.3, 0.8, -0.6, 0.4, -0.2]] {
        common::check_slice_fn("values", values, values_rev, values_fwd, &x);
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

/// A body of a simulation: struct fields that are structs.
#[derive(Clone, Copy, Debug, Default)]
pub struct Body {
    pub pos: V3,
    pub vel: V3,
    pub m: f64,
}

/// Leapfrog over slices of structs: `+=` on elements, elements assigned whole, a `&mut self`
/// method on an element.
#[autodiff_reverse(leapfrog_rev, Duplicated, Duplicated, Active)]
#[autodiff_forward(leapfrog_fwd, Dual, Dual, Dual)]
fn leapfrog(pos: &mut [V3], vel: &mut [V3]) -> f64 {
    let dt = 0.1;
    for _ in 0..3 {
        for i in 0..pos.len() {
            let a = -1.0 * pos[i];
            vel[i] += dt * a;
        }
        for i in 0..pos.len() {
            pos[i] = pos[i] + vel[i] * dt;
        }
    }
    vel[0].bump(pos[1].z);
    pos[0].norm() + vel[1].x * pos[1].y + vel[0].x
}

/// Bodies: `b.vel += ..` and `b.pos = ..` on struct fields of the elements.
#[autodiff_reverse(bodies_rev, Duplicated, Active)]
fn bodies(bs: &mut [Body]) -> f64 {
    let dt = 0.05;
    for b in bs.iter_mut() {
        b.vel += b.pos * (-dt * b.m);
        b.pos = b.pos + b.vel * dt;
    }
    bs[0].pos.norm() * bs[1].vel.y
}

fn flat(p: &[V3]) -> Vec<f64> {
    p.iter().flat_map(|v| [v.x, v.y, v.z]).collect()
}

fn unflat(f: &[f64]) -> Vec<V3> {
    f.chunks(3).map(|c| V3::new(c[0], c[1], c[2])).collect()
}

/// Central differences of `f` at `x`, each against `got` (relative tolerance 1e-6).
fn check_fd(what: &str, f: &dyn Fn(&[f64]) -> f64, x: &[f64], got: &[f64]) {
    let h = 1e-6;
    for k in 0..x.len() {
        let (mut up, mut down) = (x.to_vec(), x.to_vec());
        up[k] += h;
        down[k] -= h;
        let want = (f(&up) - f(&down)) / (2.0 * h);
        assert!((got[k] - want).abs() <= 1e-6 * want.abs().max(1.0), "{what} [{k}]: {} vs {want}", got[k]);
    }
}

#[test]
fn structs_written_into_slices_of_structs() {
    let p = vec![V3::new(0.3, 1.2, -0.5), V3::new(0.7, -0.4, 2.0)];
    let v = vec![V3::new(0.1, 0.0, 0.2), V3::new(-0.3, 0.5, 0.1)];
    let (mut pp, mut vv) = (p.clone(), v.clone());
    let (mut dp, mut dv) = (vec![V3::default(); 2], vec![V3::default(); 2]);
    let value = leapfrog_rev(&mut pp, &mut dp, &mut vv, &mut dv, 1.0);
    assert_eq!(value, leapfrog(&mut p.clone(), &mut v.clone()));
    let all: Vec<f64> = flat(&p).into_iter().chain(flat(&v)).collect();
    let grad: Vec<f64> = flat(&dp).into_iter().chain(flat(&dv)).collect();
    let f = |a: &[f64]| leapfrog(&mut unflat(&a[..6]), &mut unflat(&a[6..]));
    check_fd("leapfrog", &f, &all, &grad);
    // Forward mode agrees (the dot-product test).
    let u: Vec<f64> = (0..12).map(|k| ((k * 7 % 5) as f64 - 2.0) * 0.3).collect();
    let (mut pp, mut vv) = (p.clone(), v.clone());
    let (mut tp, mut tv) = (unflat(&u[..6]), unflat(&u[6..]));
    let (v2, t) = leapfrog_fwd(&mut pp, &mut tp, &mut vv, &mut tv);
    assert_eq!(v2, value);
    let want: f64 = grad.iter().zip(&u).map(|(a, b)| a * b).sum();
    assert!((t - want).abs() <= 1e-10 * want.abs().max(1.0), "{t} vs {want}");
}

#[test]
fn structs_written_into_fields_of_elements() {
    let bs = vec![
        Body { pos: V3::new(0.3, 1.2, -0.5), vel: V3::new(0.1, 0.0, 0.2), m: 2.0 },
        Body { pos: V3::new(0.7, -0.4, 2.0), vel: V3::new(-0.3, 0.5, 0.1), m: 0.5 },
    ];
    let mut db = vec![Body::default(); 2];
    let value = bodies_rev(&mut bs.clone(), &mut db, 1.0);
    assert_eq!(value, bodies(&mut bs.clone()));
    let flat_bodies = |b: &[Body]| -> Vec<f64> {
        b.iter().flat_map(|b| [b.pos.x, b.pos.y, b.pos.z, b.vel.x, b.vel.y, b.vel.z, b.m]).collect()
    };
    let of_flat = |f: &[f64]| -> f64 {
        let mut b: Vec<Body> = f
            .chunks(7)
            .map(|c| Body { pos: V3::new(c[0], c[1], c[2]), vel: V3::new(c[3], c[4], c[5]), m: c[6] })
            .collect();
        bodies(&mut b)
    };
    check_fd("bodies", &of_flat, &flat_bodies(&bs), &flat_bodies(&db));
}

/// Helpers dereferencing a `&V3` (`*v`, `-*v`), given a local struct or an element.
fn product_of(v: &V3) -> f64 {
    let w = *v;
    w.x * w.y
}

fn negated(v: &V3) -> f64 {
    let n = -*v;
    n.x * v.z
}

/// Struct locals copied from elements and assigned anew (`c = c + p[1]`, `best = *q`).
#[autodiff_reverse(copies_rev, Duplicated, Active)]
fn copies(p: &[V3]) -> f64 {
    let a = V3::new(p[0].y, p[1].z, p[0].x);
    let mut c = p[0];
    c = c + p[1];
    let mut best = p[0];
    for q in p {
        if q.x > best.x {
            best = *q;
        }
    }
    product_of(&a) + negated(&a) + product_of(&p[1]) + negated(&p[0]) + c.x * c.y + best.x * best.z
}

#[test]
fn struct_copies_and_references_in_helpers() {
    let p = vec![V3::new(0.3, -1.2, 0.8), V3::new(2.0, 0.5, -0.7), V3::new(-0.4, 0.9, 1.1)];
    let mut dp = vec![V3::default(); 3];
    assert_eq!(copies_rev(&p, &mut dp, 1.0), copies(&p));
    check_fd("copies", &|f| copies(&unflat(f)), &flat(&p), &flat(&dp));
}

/// A struct parameter assigned whole through its reference (`*s = *s + p[0]`).
#[autodiff_reverse(through_reference_rev, Duplicated, Duplicated, Active)]
fn through_reference(s: &mut V3, p: &[V3]) -> f64 {
    *s = *s + p[0];
    s.x * s.y + s.z
}

#[test]
fn a_struct_assigned_through_its_reference() {
    let p = [V3::new(0.3, -1.2, 0.8)];
    let mut s = V3::new(1.0, 2.0, 3.0);
    let (mut ds, mut dp) = (V3::default(), [V3::default(); 1]);
    let value = through_reference_rev(&mut s, &mut ds, &p, &mut dp, 1.0);
    assert_eq!(s, V3::new(1.3, 0.8, 3.8));
    assert_eq!(value, through_reference(&mut V3::new(1.0, 2.0, 3.0), &p));
    // f = (s.x + p.x)(s.y + p.y) + s.z + p.z
    assert_eq!((ds.x, ds.y, ds.z), (0.8, 1.3, 1.0));
    assert_eq!((dp[0].x, dp[0].y, dp[0].z), (0.8, 1.3, 1.0));
}

/// Velocity Verlet with the accelerations in a vector of structs it makes
/// (`vec![V3::default(); n]`), springs between neighbours.
fn accelerations(pos: &[V3], acc: &mut [V3]) {
    for i in 0..pos.len() {
        acc[i] = -1.0 * pos[i];
        if i > 0 {
            acc[i] += (pos[i - 1] - pos[i]) * 0.5;
        }
    }
}

#[autodiff_reverse(verlet_rev, Duplicated, Duplicated, Active)]
#[autodiff_forward(verlet_fwd, Dual, Dual, Dual)]
fn verlet(pos: &mut [V3], vel: &mut [V3]) -> f64 {
    let n = pos.len();
    let dt = 0.05;
    let mut acc = vec![V3::default(); n];
    accelerations(pos, &mut acc);
    for _ in 0..4 {
        for i in 0..n {
            pos[i] = pos[i] + vel[i] * dt + acc[i] * (0.5 * dt * dt);
        }
        let old = acc.clone();
        accelerations(pos, &mut acc);
        for i in 0..n {
            vel[i] += (old[i] + acc[i]) * (0.5 * dt);
        }
    }
    let mut e = 0.0;
    for i in 0..n {
        e += 0.5 * vel[i].dot(vel[i]) + 0.5 * pos[i].dot(pos[i]);
    }
    e
}

#[test]
fn velocity_verlet_with_a_vector_of_structs_it_makes() {
    let p = vec![V3::new(0.3, 1.2, -0.5), V3::new(0.7, -0.4, 2.0), V3::new(-1.0, 0.2, 0.4)];
    let v = vec![V3::new(0.1, 0.0, 0.2), V3::new(-0.3, 0.5, 0.1), V3::new(0.0, -0.2, 0.3)];
    let (mut dp, mut dv) = (vec![V3::default(); 3], vec![V3::default(); 3]);
    let value = verlet_rev(&mut p.clone(), &mut dp, &mut v.clone(), &mut dv, 1.0);
    assert_eq!(value, verlet(&mut p.clone(), &mut v.clone()));
    let all: Vec<f64> = flat(&p).into_iter().chain(flat(&v)).collect();
    let grad: Vec<f64> = flat(&dp).into_iter().chain(flat(&dv)).collect();
    check_fd("verlet", &|a| verlet(&mut unflat(&a[..9]), &mut unflat(&a[9..])), &all, &grad);
    let u: Vec<f64> = (0..18).map(|k| ((k * 5 % 7) as f64 - 3.0) * 0.2).collect();
    let (mut tp, mut tv) = (unflat(&u[..9]), unflat(&u[9..]));
    let (v2, t) = verlet_fwd(&mut p.clone(), &mut tp, &mut v.clone(), &mut tv);
    assert_eq!(v2, value);
    let want: f64 = grad.iter().zip(&u).map(|(a, b)| a * b).sum();
    assert!((t - want).abs() <= 1e-10 * want.abs().max(1.0), "{t} vs {want}");
}

/// A camera with struct fields: methods of a struct field called in a helper that takes
/// the struct (field by field), and in a method.
#[derive(Clone, Copy, Debug, Default, cotan::Differentiable)]
pub struct Cam {
    pub pos: V3,
    pub focal: f64,
}

impl Cam {
    fn reach(&self) -> f64 {
        self.pos.norm() * self.focal
    }
}

fn reach_of(c: &Cam) -> f64 {
    c.pos.norm() * c.focal + c.pos.dot(c.pos)
}

/// Products of a number and a struct inside larger expressions (`2.0 * v * 3.0`,
/// `-(2.0 * v)`, `(2.0 * v).norm()`), and fields' methods.
#[autodiff_reverse(scaled_rev, Duplicated, Active)]
#[autodiff_forward(scaled_fwd, Dual, Dual)]
fn scaled(c: &Cam) -> f64 {
    let v = c.pos;
    let w = 2.0 * v * 3.0;
    let u = 2.0 * v + v;
    let n = -(2.0 * v);
    let m = -1.0 * v * v.norm();
    w.x + u.y + n.z + m.x + (2.0 * v).norm() + reach_of(c) + c.reach()
}

#[test]
fn products_with_numbers_and_methods_of_fields() {
    let c = Cam { pos: V3::new(0.3, -1.2, 0.8), focal: 2.0 };
    let mut dc = Cam::default();
    let value = scaled_rev(&c, &mut dc, 1.0);
    assert_eq!(value, scaled(&c));
    let of = |a: &[f64]| scaled(&Cam { pos: V3::new(a[0], a[1], a[2]), focal: a[3] });
    let x = [0.3, -1.2, 0.8, 2.0];
    let grad = [dc.pos.x, dc.pos.y, dc.pos.z, dc.focal];
    check_fd("scaled", &of, &x, &grad);
    let u = Cam { pos: V3::new(0.5, 0.1, -0.4), focal: 0.7 };
    let (v2, t) = scaled_fwd(&c, &u);
    assert_eq!(v2, value);
    let want = 0.5 * grad[0] + 0.1 * grad[1] - 0.4 * grad[2] + 0.7 * grad[3];
    assert!((t - want).abs() <= 1e-10 * want.abs().max(1.0), "{t} vs {want}");
}

/// An operator whose argument is another struct of the crate (`impl Mul<V3> for Scale3`).
#[derive(Clone, Copy)]
struct Scale3 {
    sx: f64,
    sy: f64,
    sz: f64,
}

impl Mul<V3> for Scale3 {
    type Output = V3;
    fn mul(self, v: V3) -> V3 {
        V3::new(self.sx * v.x, self.sy * v.y, self.sz * v.z)
    }
}

#[autodiff_reverse(scaled_by_rev, Duplicated, Active)]
fn scaled_by(p: &[V3]) -> f64 {
    let s = Scale3 { sx: p[1].x, sy: 2.0, sz: p[1].z };
    let w = s * p[0];
    w.x * w.y + w.z
}

#[test]
fn an_operator_taking_another_struct() {
    let p = vec![V3::new(0.3, -1.2, 0.8), V3::new(2.0, 0.5, -0.7)];
    let mut dp = vec![V3::default(); 2];
    assert_eq!(scaled_by_rev(&p, &mut dp, 1.0), scaled_by(&p));
    check_fd("scaled_by", &|f| scaled_by(&unflat(f)), &flat(&p), &flat(&dp));
}

/// `+=` of a struct field of a local struct (`b.pos += b.vel * dt`, `impl AddAssign`).
#[autodiff_reverse(local_body_rev, Duplicated, Active)]
#[autodiff_forward(local_body_fwd, Dual, Dual)]
fn local_body(x: &[f64]) -> f64 {
    let mut b = Body { pos: V3::new(x[0], x[1], x[2]), vel: V3::new(x[3], x[4], x[5]), m: 1.5 };
    for _ in 0..3 {
        b.vel += b.pos * (-0.1 * b.m);
        b.pos += b.vel * x[0];
    }
    b.pos.x * b.vel.y + b.pos.z
}

#[test]
fn compound_assignment_of_a_field_of_a_local_struct() {
    for x in [[0.3, -1.2, 0.8, 0.5, 0.4, 0.1], [0.9, 0.2, -0.4, -0.3, 0.7, 1.1]] {
        common::check_slice_fn("local_body", local_body, local_body_rev, local_body_fwd, &x);
    }
}

/// A struct with several impls of one operator, chosen by the right operand's type as
/// Rust chooses: `Mul<f64>` (scaling), `Mul` (the dot product, a number), `MulAssign<f64>`
/// and `MulAssign<P3>` (element by element).
#[derive(Clone, Copy, Debug)]
struct P3 {
    x: f64,
    y: f64,
    z: f64,
}

impl Add for P3 {
    type Output = P3;
    fn add(self, o: P3) -> P3 {
        P3 { x: self.x + o.x, y: self.y + o.y, z: self.z + o.z }
    }
}

impl Sub for P3 {
    type Output = P3;
    fn sub(self, o: P3) -> P3 {
        P3 { x: self.x - o.x, y: self.y - o.y, z: self.z - o.z }
    }
}

impl Mul<f64> for P3 {
    type Output = P3;
    fn mul(self, k: f64) -> P3 {
        P3 { x: self.x * k, y: self.y * k, z: self.z * k }
    }
}

impl Mul for P3 {
    type Output = f64;
    fn mul(self, o: P3) -> f64 {
        self.x * o.x + self.y * o.y + self.z * o.z
    }
}

impl std::ops::MulAssign<f64> for P3 {
    fn mul_assign(&mut self, k: f64) {
        self.x *= k;
        self.y *= k;
        self.z *= k;
    }
}

impl std::ops::MulAssign<P3> for P3 {
    fn mul_assign(&mut self, o: P3) {
        self.x *= o.x;
        self.y *= o.y;
        self.z *= o.z;
    }
}

impl P3 {
    fn scaled(self, k: f64) -> P3 {
        self * k
    }
}

fn spread(k: f64) -> f64 {
    1.0 + 0.5 * k
}

/// The elastic energy of a chain of points: an array of structs made from a literal
/// (`[a, b, c]`), passed as a slice.
fn chain_energy(p: &[P3], k: f64) -> f64 {
    let mut e = 0.0;
    for i in 1..p.len() {
        let d = p[i] - p[i - 1];
        e += k * (d * d);
    }
    e
}

#[autodiff_reverse(several_impls_rev, Duplicated, Active)]
#[autodiff_forward(several_impls_fwd, Dual, Dual)]
fn several_impls(x: &[f64]) -> f64 {
    let a = P3 { x: x[0], y: x[1], z: x[2] };
    let b = P3 { x: x[3], y: x[0], z: x[1] };
    let mut c = a * 2.0 + b.scaled(x[2]) * spread(x[3]);
    c *= 0.5;
    c *= a;
    let w = x[1];
    let pts = [a, b, c];
    let more = vec![c, a * x[0].sin()];
    (c * a) + (a - b) * (b * w) * a.y + chain_energy(&pts, x[0]) + chain_energy(&more, 0.5)
}

#[test]
fn several_impls_of_an_operator_chosen_by_the_operand() {
    for x in [[0.3, 0.7, 1.3, -0.4], [-0.8, 0.2, 0.5, 1.1]] {
        common::check_slice_fn("several_impls", several_impls, several_impls_rev, several_impls_fwd, &x);
    }
}

/// Generic helpers over a type with operators (`T: Add<Output = T> + Mul<f64, Output = T>`),
/// called with structs: lowered at their calls with `T` the struct.
fn lerp<T: Add<Output = T> + Sub<Output = T> + Mul<f64, Output = T> + Copy>(a: T, b: T, t: f64) -> T {
    a + (b - a) * t
}

fn total<T>(items: &[T], zero: T) -> T
where
    T: Add<Output = T> + Copy,
{
    let mut s = zero;
    for &it in items {
        s = s + it;
    }
    s
}

#[autodiff_reverse(generic_over_structs_rev, Duplicated, Active)]
#[autodiff_forward(generic_over_structs_fwd, Dual, Dual)]
fn generic_over_structs(x: &[f64]) -> f64 {
    let a = P3 { x: x[0], y: x[1], z: x[2] };
    let b = P3 { x: x[3], y: x[0] * x[1], z: 1.0 };
    let c = lerp(a, b, x[2]);
    let pts = [a, b, c];
    let s = total(&pts, P3 { x: 0.0, y: 0.0, z: 0.0 });
    c.x * c.y + s * c
}

#[test]
fn generic_helpers_called_with_structs() {
    for x in [[0.3, 0.7, 1.3, -0.4], [-0.8, 0.2, 0.5, 1.1]] {
        common::check_slice_fn(
            "generic_over_structs",
            generic_over_structs,
            generic_over_structs_rev,
            generic_over_structs_fwd,
            &x,
        );
    }
}

/// Operators implemented for references (`impl Add<&R2> for &R2`), beside and instead of the
/// impls for values: `&a + &b` takes the impl for references.
#[derive(Clone, Copy, Debug, Default, PartialEq, cotan::Differentiable)]
pub struct R2 {
    pub x: f64,
    pub y: f64,
}

impl Add for R2 {
    type Output = R2;
    fn add(self, o: R2) -> R2 {
        R2 { x: self.x + o.x, y: self.y + o.y }
    }
}

impl<'a> Add<&'a R2> for &'a R2 {
    type Output = R2;
    fn add(self, o: &R2) -> R2 {
        R2 { x: self.x + o.x, y: self.y + o.y }
    }
}

impl<'a> Sub<&'a R2> for &'a R2 {
    type Output = R2;
    fn sub(self, o: &R2) -> R2 {
        R2 { x: self.x - o.x, y: self.y - o.y }
    }
}

impl Mul<f64> for &R2 {
    type Output = R2;
    fn mul(self, k: f64) -> R2 {
        R2 { x: self.x * k, y: self.y * k }
    }
}

#[autodiff_reverse(by_reference_rev, Duplicated, Active)]
fn by_reference(p: &[R2]) -> f64 {
    let s = &p[0] + &p[1];
    let d = &(&s - &p[1]) * 2.0;
    let t = s + d;
    t.x * t.y + (&d + &s).x
}

#[test]
fn operators_implemented_for_references() {
    let p = vec![R2 { x: 0.3, y: -1.2 }, R2 { x: 0.8, y: 2.0 }];
    let mut dp = vec![R2::default(); 2];
    assert_eq!(by_reference_rev(&p, &mut dp, 1.0), by_reference(&p));
    let flat2 = |p: &[R2]| p.iter().flat_map(|v| [v.x, v.y]).collect::<Vec<f64>>();
    let unflat2 = |f: &[f64]| f.chunks(2).map(|c| R2 { x: c[0], y: c[1] }).collect::<Vec<R2>>();
    check_fd("by_reference", &|f| by_reference(&unflat2(f)), &flat2(&p), &flat2(&dp));
}
