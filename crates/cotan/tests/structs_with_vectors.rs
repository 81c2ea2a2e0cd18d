//! Structs made in the differentiated function whose fields are vectors (`State { x:
//! p.to_vec(), v: vec![0.0; n], t: 0.0 }`), as simulation code keeps its state: their
//! elements read and written, the struct lent to the crate's methods (`s.step(dt)`,
//! `s.energy()`), its vectors lent to functions (`bump(&mut s.x, k)`), grown by `push`,
//! cloned (a derived `Clone` copies the vectors; a `clone` of the crate's own runs as
//! written), moved, and made by methods (`s.advanced(dt)`). Every function is checked for
//! its value, against finite differences, forward against reverse (dot-product test), and
//! one for second order.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code, unused_mut)]

mod common;

use common::{check_hvp_against_gradient, check_slice_fn as check};
use cotan::{autodiff_forward, autodiff_reverse, hvp};

#[derive(Clone)]
struct State {
    x: Vec<f64>,
    v: Vec<f64>,
    t: f64,
}

impl State {
    fn new(x0: &[f64]) -> State {
        State { x: x0.to_vec(), v: vec![0.0; x0.len()], t: 0.0 }
    }

    fn step(&mut self, dt: f64, k: f64) {
        for i in 0..self.x.len() {
            self.v[i] -= dt * k * self.x[i].sin();
        }
        for i in 0..self.x.len() {
            self.x[i] += dt * self.v[i];
        }
        self.t += dt;
    }

    fn energy(&self) -> f64 {
        self.x.iter().zip(&self.v).map(|(a, b)| a * a + b * b).sum::<f64>() + self.t
    }

    fn advanced(&self, dt: f64) -> State {
        State { x: self.x.iter().zip(&self.v).map(|(a, b)| a + dt * b).collect(), v: self.v.clone(), t: self.t + dt }
    }
}

/// A `Clone` of the crate's own, which does not copy `v`.
struct Reset {
    x: Vec<f64>,
    v: Vec<f64>,
    t: f64,
}

impl Clone for Reset {
    fn clone(&self) -> Self {
        Reset { x: self.x.clone(), v: vec![0.25; self.v.len()], t: 1.0 }
    }
}

fn norm2(v: &[f64]) -> f64 {
    v.iter().map(|a| a * a).sum()
}

fn bump(v: &mut [f64], k: f64) {
    for e in v.iter_mut() {
        *e *= k;
    }
}

#[hvp(hvp_simulate)]
#[autodiff_reverse(d_simulate, Duplicated, Active)]
#[autodiff_forward(t_simulate, Dual, Dual)]
fn simulate(p: &[f64]) -> f64 {
    let k = p[3];
    let mut s = State { x: p[..3].to_vec(), v: vec![0.0; 3], t: 0.0 };
    for _ in 0..4 {
        s.step(0.1, k);
    }
    s.x[0] = s.x[0] * k;
    s.energy()
}

#[autodiff_reverse(d_made_by_new, Duplicated, Active)]
#[autodiff_forward(t_made_by_new, Dual, Dual)]
fn made_by_new(p: &[f64]) -> f64 {
    let mut s = State::new(p);
    s.step(0.1, p[0]);
    let n = s.advanced(0.3);
    n.energy() * s.energy() + n.x[0]
}

#[autodiff_reverse(d_copies, Duplicated, Active)]
#[autodiff_forward(t_copies, Dual, Dual)]
fn copies(p: &[f64]) -> f64 {
    let mut s = State { x: p.to_vec(), v: vec![0.5; p.len()], t: p[0] };
    let a = s.x.clone();
    let c = s.clone();
    s.x[0] = 5.0 * p[1];
    s.step(0.2, 1.5);
    a[0] * s.x[0] + s.energy() - c.energy() + c.x[2] * s.x[2]
}

#[autodiff_reverse(d_moved_and_lent, Duplicated, Active)]
#[autodiff_forward(t_moved_and_lent, Dual, Dual)]
fn moved_and_lent(p: &[f64]) -> f64 {
    let mut x = p.to_vec();
    let mut s = State { x: x.clone(), v: vec![0.5; p.len()], t: 0.0 };
    x[0] = 9.0;
    bump(&mut s.x, p[2]);
    for e in s.v.iter_mut() {
        *e = e.sin() * p[3];
    }
    {
        let r = &mut s.x;
        r[0] = r[1] * p[3];
    }
    let t = s;
    norm2(&t.x) + norm2(&t.v) * p[1] + t.x[0] * x[0]
}

#[autodiff_reverse(d_pushed, Duplicated, Active)]
#[autodiff_forward(t_pushed, Dual, Dual)]
fn pushed(p: &[f64]) -> f64 {
    let mut s = State { x: Vec::new(), v: Vec::new(), t: 0.0 };
    for &a in p {
        s.x.push(a * a);
        s.v.push(a);
    }
    s.energy()
}

#[autodiff_reverse(d_own_clone, Duplicated, Active)]
#[autodiff_forward(t_own_clone, Dual, Dual)]
fn own_clone(p: &[f64]) -> f64 {
    let mut s = Reset { x: p.to_vec(), v: p.to_vec(), t: p[0] };
    let c = s.clone();
    s.x[0] = 3.0;
    c.v[1] * c.x[0] + c.t + s.x[0] * s.v[1]
}

const X: [f64; 4] = [0.7, -0.4, 1.3, 0.2];

#[test]
fn structs_with_vector_fields() {
    check("simulate", simulate, d_simulate, t_simulate, &X);
    check("made_by_new", made_by_new, d_made_by_new, t_made_by_new, &X);
    check("copies", copies, d_copies, t_copies, &X);
    check("moved_and_lent", moved_and_lent, d_moved_and_lent, t_moved_and_lent, &X);
    check("pushed", pushed, d_pushed, t_pushed, &X);
    check("own_clone", own_clone, d_own_clone, t_own_clone, &X);
    // own_clone's clone keeps none of `v`: ∂/∂p₁ comes from s.v[1] · 3 only.
    let mut g = [0.0f64; 4];
    d_own_clone(&X, &mut g, 1.0);
    assert!((g[1] - 3.0).abs() < 1e-15, "∂ own_clone / ∂p₁ = {}", g[1]);
}

#[test]
fn second_order_through_a_state_struct() {
    check_hvp_against_gradient(
        &|x, g| {
            d_simulate(&x[..4], &mut g[..4], 1.0);
        },
        &|x, v, g, hv| {
            hvp_simulate(&x[..4], &v[..4], &mut g[..4], &mut hv[..4]);
        },
    );
}

// Helpers and methods returning vectors in tuples and structs (an LSTM cell's `(h, c)`, a
// max-pool's values and indices, a softmax with its log-sum-exp): lowered at their calls.
fn split_squares(x: &[f64]) -> (Vec<f64>, Vec<f64>) {
    (x.iter().map(|v| v * v).collect(), x.iter().map(|v| v.sin()).collect())
}

fn softmax_lse(x: &[f64]) -> (Vec<f64>, f64) {
    let m = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = x.iter().map(|v| (v - m).exp()).collect();
    let s: f64 = e.iter().sum();
    (e.iter().map(|v| v / s).collect(), m + s.ln())
}

fn max_pool(x: &[f64]) -> (Vec<f64>, Vec<usize>) {
    let mut out = Vec::new();
    let mut idx = Vec::new();
    for w in 0..x.len() / 2 {
        let (a, b) = (x[2 * w], x[2 * w + 1]);
        if a >= b {
            out.push(a);
            idx.push(2 * w);
        } else {
            out.push(b);
            idx.push(2 * w + 1);
        }
    }
    (out, idx)
}

struct Hc {
    h: Vec<f64>,
    c: Vec<f64>,
}

#[derive(Clone, cotan::Differentiable)]
struct Cell {
    w: Vec<f64>,
}

impl Cell {
    fn step(&self, h: &[f64]) -> Hc {
        let hn: Vec<f64> = self.w.iter().zip(h).map(|(w, v)| (w * v).tanh()).collect();
        let cn: Vec<f64> = self.w.iter().zip(h).map(|(w, v)| w.sin() + v).collect();
        Hc { h: hn, c: cn }
    }

    fn pair(&self, h: &[f64]) -> (Vec<f64>, f64) {
        (self.w.iter().zip(h).map(|(a, b)| a * b).collect(), self.w[0].exp())
    }
}

#[autodiff_reverse(returned_rev, Duplicated, Active)]
#[autodiff_forward(returned_fwd, Dual, Dual)]
fn returned(x: &[f64]) -> f64 {
    let (a, b) = split_squares(x);
    let (p, lse) = softmax_lse(x);
    let (o, i) = max_pool(x);
    let cell = Cell { w: vec![x[0], x[1]] };
    let mut h = vec![x[2], x[3]];
    let mut total = 0.0;
    for _ in 0..2 {
        let s = cell.step(&h);
        let (q, e) = cell.pair(&s.c);
        total += s.c[0] * e + q[1];
        h = s.h;
    }
    a[0] + b[1] + p[2] * lse + o[1] * (i[0] as f64 + 1.0) + total + h[0]
}

#[test]
fn vectors_returned_in_tuples_and_structs() {
    check("returned", returned, returned_rev, returned_fwd, &[0.3, -1.1, 0.7, 0.2]);
    check("returned", returned, returned_rev, returned_fwd, &[1.4, 0.5, -0.3, 0.8]);
}

/// The same methods on a struct parameter (`Duplicated`): its gradient.
#[autodiff_reverse(cell_rev, Duplicated, Active)]
fn cell_loss(m: &Cell) -> f64 {
    let mut h = vec![0.5, -0.3];
    let mut total = 0.0;
    for _ in 0..3 {
        let s = m.step(&h);
        let (p, e) = m.pair(&s.h);
        total += s.c[0] * e + p[1];
        h = s.h;
    }
    total
}

#[test]
fn methods_of_a_struct_parameter_returning_vectors() {
    let m = Cell { w: vec![0.7, -1.2] };
    let mut dm = Cell { w: vec![0.0; 2] };
    assert_eq!(cell_rev(&m, &mut dm, 1.0), cell_loss(&m));
    let h = 1e-6;
    for k in 0..2 {
        let (mut up, mut down) = (m.clone(), m.clone());
        up.w[k] += h;
        down.w[k] -= h;
        let want = (cell_loss(&up) - cell_loss(&down)) / (2.0 * h);
        assert!((dm.w[k] - want).abs() <= 1e-6 * want.abs().max(1.0), "d/dw[{k}]: {} vs {want}", dm.w[k]);
    }
}
