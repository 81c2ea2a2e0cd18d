//! Structs of numbers as values: literals (with `..base`), tuple structs, constructors
//! (`Normal::new(mu, s)`), methods on temporaries (`&self` and `self`), structs passed by
//! value to helpers and returned from them, copies of struct parameters (`*w`), mutable
//! struct locals, structs chosen by `if` and built in loops. Every derivative is checked
//! against finite differences, forward mode against reverse mode (dot-product test), and
//! second order against finite differences of the gradient.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

mod common;

use cotan::{autodiff_forward, autodiff_reverse, hvp};

#[derive(Clone, Copy, Debug)]
pub struct Wishart {
    pub gamma: f64,
    pub m: i32,
}

#[derive(Clone, Copy)]
struct Normal {
    mu: f64,
    s: f64,
}

impl Normal {
    fn new(mu: f64, s: f64) -> Self {
        Normal { mu, s }
    }

    fn logpdf(&self, x: f64) -> f64 {
        let z = (x - self.mu) / self.s;
        -0.5 * z * z - self.s.ln()
    }

    /// By value, returning a new value (functional update).
    fn shifted(self, d: f64) -> Normal {
        Normal { mu: self.mu + d, ..self }
    }
}

#[derive(Clone, Copy)]
struct P(f64, f64);

#[derive(Clone, Copy)]
struct Segment {
    a: P,
    b: P,
    weight: f32,
}

fn prior(w: Wishart, x: f64) -> f64 {
    0.5 * w.gamma * w.gamma * x * x - w.m as f64 * x.ln()
}

fn length(s: &Segment) -> f64 {
    let dx = s.b.0 - s.a.0;
    let dy = s.b.1 - s.a.1;
    (dx * dx + dy * dy).sqrt() * s.weight as f64
}

fn midpoint(s: Segment) -> P {
    P(0.5 * (s.a.0 + s.b.0), 0.5 * (s.a.1 + s.b.1))
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

#[autodiff_forward(literals_fwd, Dual, Dual)]
#[autodiff_reverse(literals_rev, Duplicated, Active)]
#[hvp(literals_hvp)]
fn literals(x: &[f64]) -> f64 {
    let wishart: Wishart = Wishart { gamma: x[0], m: 3 };
    let n = Normal::new(x[1], x[2].exp());
    let seg = Segment { a: P(x[0], x[1]), b: P(x[2], 0.5), weight: 2.0 };
    let mid = midpoint(seg);
    let mut s = Normal { mu: 0.25, ..n };
    s.mu += x[0] * mid.1;
    s.s = s.s * 1.5;
    prior(wishart, x[2])
        + n.logpdf(x[0])
        + Normal::new(0.5, 2.0).shifted(x[1]).logpdf(x[2])
        + length(&seg)
        + s.logpdf(mid.0)
}

#[test]
fn literals_constructors_methods_and_helpers() {
    let f = |x: &[f64]| literals(x);
    let fwd = |x: &[f64], u: &[f64]| literals_fwd(x, u);
    let rev = |x: &[f64], g: &mut [f64]| literals_rev(x, g, 1.0);
    for x in [[0.7, -0.4, 1.3], [1.2, 0.3, 0.8]] {
        check("literals", &f, &fwd, &rev, &x);
    }
    // Second order: against finite differences of the gradient.
    let x = [0.7, -0.4, 1.3];
    let v = [0.3, 1.0, -0.5];
    let (mut g, mut hv) = ([0.0; 3], [0.0; 3]);
    literals_hvp(&x, &v, &mut g, &mut hv);
    let grad = |x: &[f64]| {
        let mut g = vec![0.0; 3];
        literals_rev(x, &mut g, 1.0);
        g
    };
    let h = 1e-4;
    let xp: Vec<f64> = x.iter().zip(&v).map(|(a, b)| a + h * b).collect();
    let xm: Vec<f64> = x.iter().zip(&v).map(|(a, b)| a - h * b).collect();
    for k in 0..3 {
        let want = (grad(&xp)[k] - grad(&xm)[k]) / (2.0 * h);
        assert!((hv[k] - want).abs() <= 1e-6 * want.abs().max(1.0), "hv[{k}]: {} vs {want}", hv[k]);
    }
}

/// A struct parameter copied into a helper that takes it by value, and one built from it.
#[autodiff_reverse(d_from_param, Duplicated, Active, Active)]
#[autodiff_forward(t_from_param, Dual, Dual, Dual)]
fn from_param(w: &Wishart, x: f64) -> f64 {
    let local = *w;
    let doubled = Wishart { gamma: 2.0 * w.gamma, ..local };
    prior(*w, x) + prior(doubled, x * x) + local.gamma
}

#[test]
fn struct_parameters_passed_by_value() {
    let w = Wishart { gamma: 0.8, m: 2 };
    let x = 1.7;
    let mut dw = Wishart { gamma: 0.0, m: 0 };
    let (value, dx) = d_from_param(&w, &mut dw, x, 1.0);
    assert_eq!(value, from_param(&w, x));
    let h = 1e-6;
    let fd_x = (from_param(&w, x + h) - from_param(&w, x - h)) / (2.0 * h);
    let g = |e: f64| from_param(&Wishart { gamma: w.gamma + e, m: 2 }, x);
    let fd_gamma = (g(h) - g(-h)) / (2.0 * h);
    assert!((dx - fd_x).abs() < 1e-6 * fd_x.abs().max(1.0), "{dx} vs {fd_x}");
    assert!((dw.gamma - fd_gamma).abs() < 1e-6 * fd_gamma.abs().max(1.0), "{} vs {fd_gamma}", dw.gamma);
    // Forward mode agrees (the dot-product test with one direction).
    let (v2, t) = t_from_param(&w, &Wishart { gamma: 0.5, m: 0 }, x, -0.25);
    assert_eq!(v2, value);
    let want = 0.5 * dw.gamma - 0.25 * dx;
    assert!((t - want).abs() < 1e-12 * want.abs().max(1.0), "{t} vs {want}");
}

#[autodiff_forward(loops_fwd, Dual, Dual)]
#[autodiff_reverse(loops_rev, Duplicated, Active)]
fn in_loops(x: &[f64]) -> f64 {
    let mut total = 0.0;
    for i in 0..x.len() - 1 {
        let d = if x[i] > 0.0 { Normal::new(x[i], 1.5) } else { Normal { mu: -x[i], s: 0.5 + x[i] * x[i] } };
        total += d.logpdf(x[i + 1]) + d.shifted(0.1).s;
    }
    total
}

#[test]
fn structs_built_in_loops_and_chosen_by_if() {
    let f = |x: &[f64]| in_loops(x);
    let fwd = |x: &[f64], u: &[f64]| loops_fwd(x, u);
    let rev = |x: &[f64], g: &mut [f64]| loops_rev(x, g, 1.0);
    check("in_loops", &f, &fwd, &rev, &[0.7, -0.4, 1.3, 0.2, -1.1]);
}

#[autodiff_forward(batched_fwd, 2, Dual, Dual)]
fn batched(x: &[f64]) -> f64 {
    let n = Normal::new(x[0], x[1]);
    n.logpdf(x[2])
}

#[test]
fn batched_forward_mode_through_struct_values() {
    let x = [0.3, 1.4, -0.2];
    let e0 = [1.0, 0.0, 0.0];
    let u = [0.2, -0.3, 0.5];
    let [y, t0, t1] = batched_fwd(&x, &e0, &u);
    assert_eq!(y, batched(&x));
    let h = 1e-6;
    let fd = |d: &[f64]| {
        let xp: Vec<f64> = x.iter().zip(d).map(|(a, b)| a + h * b).collect();
        let xm: Vec<f64> = x.iter().zip(d).map(|(a, b)| a - h * b).collect();
        (batched(&xp) - batched(&xm)) / (2.0 * h)
    };
    assert!((t0 - fd(&e0)).abs() < 1e-6, "{t0} vs {}", fd(&e0));
    assert!((t1 - fd(&u)).abs() < 1e-6, "{t1} vs {}", fd(&u));
}

/// Fields typed by the struct's definition: `Vec<Vec<f64>>`, `Vec<usize>`, a `String` never
/// read; an enum method taking `self` by value; arrays passed by value.
pub struct Dataset {
    pub x: Vec<Vec<f64>>,
    pub y: Vec<f64>,
    pub idx: Vec<usize>,
    pub name: String,
}

#[derive(Clone, Copy)]
pub enum Act {
    Tanh,
    Relu,
}

impl Act {
    fn apply(self, z: f64) -> f64 {
        match self {
            Act::Tanh => z.tanh(),
            Act::Relu => z.max(0.0),
        }
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(p, q)| p * q).sum()
}

fn norm2(v: [f64; 2]) -> f64 {
    (v[0] * v[0] + v[1] * v[1]).sqrt()
}

fn scaled(mut v: [f64; 2], k: f64) -> f64 {
    v[0] *= k;
    v[0] + v[1]
}

#[autodiff_reverse(d_dataset_loss, Duplicated, Const, Const, Active)]
#[autodiff_forward(t_dataset_loss, Dual, Const, Const, Dual)]
pub fn dataset_loss(w: &[f64], data: &Dataset, act: Act) -> f64 {
    let mut s: f64 = data.x.iter().map(|row| dot(row, w)).sum();
    for row in &data.x {
        s += row[0] * w[0];
    }
    s += data.y.iter().zip(&data.idx).map(|(&y, &i)| y * w[i]).sum::<f64>();
    s + act.apply(w[1]) + norm2([w[0], w[1]]) + scaled([w[1], w[0]], 2.0)
}

#[test]
fn fields_typed_by_their_struct_and_values_passed_by_value() {
    let data =
        Dataset { x: vec![vec![1.0, 2.0], vec![3.0, -4.0]], y: vec![0.5, 0.25], idx: vec![1, 0], name: "d".into() };
    for act in [Act::Tanh, Act::Relu] {
        let f = |w: &[f64]| dataset_loss(w, &data, act);
        let fwd = |w: &[f64], u: &[f64]| t_dataset_loss(w, u, &data, act);
        let rev = |w: &[f64], g: &mut [f64]| d_dataset_loss(w, g, &data, act, 1.0);
        check("dataset_loss", &f, &fwd, &rev, &[0.3, 0.7]);
    }
    assert_eq!(data.name, "d");
}

#[derive(Clone, Copy, Default)]
struct Settings {
    gain: f64,
    bias: f64,
    steps: usize,
    clipped: bool,
}

#[derive(Clone, Copy, Default)]
struct Nested {
    inner: Settings,
    scale: f64,
}

/// A `Default` written by hand: its body runs (`<Start as Default>::default()`).
#[derive(Clone, Copy)]
struct Start {
    a: f64,
    b: f64,
}

impl Default for Start {
    fn default() -> Self {
        Start { a: 1.5, b: -2.0 }
    }
}

fn response(s: &Settings, x: f64) -> f64 {
    s.gain * x.tanh() + s.bias + s.steps as f64
}

/// `S::default()`, `..Default::default()` and `<S as Default>::default()` of structs that
/// derive `Default` are zeros (nested ones too); a hand-written `Default` is called.
#[autodiff_reverse(d_defaults, Duplicated, Active)]
#[autodiff_forward(t_defaults, Dual, Dual)]
fn defaults(x: &[f64]) -> f64 {
    let mut s = Settings::default();
    s.gain = x[0];
    let t = Settings { bias: x[1] * x[2], ..Default::default() };
    let n = Nested { scale: x[2], ..Nested::default() };
    let z = <Settings as Default>::default();
    let st = Start::default();
    let u = Start { a: x[1], ..Start::default() };
    let off = if t.clipped { 1.0 } else { x[0] };
    response(&s, x[1]) * response(&t, x[0]) + n.scale * n.inner.gain + z.bias + st.a * x[0] + u.a * u.b + off
}

#[test]
fn defaults_of_structs() {
    let x = [0.3, 0.7, -0.2];
    common::check_slice_fn("defaults", defaults, d_defaults, t_defaults, &x);
    // ∂/∂x₂ = x₁ · response(s, x₁) · 1 (t.bias) + n.inner.gain (0) ; u.a · u.b has no x₂.
    let mut g = [0.0f64; 3];
    d_defaults(&x, &mut g, 1.0);
    let s = Settings { gain: x[0], ..Default::default() };
    assert!((g[2] - x[1] * response(&s, x[1])).abs() < 1e-14, "∂/∂x₂ = {}", g[2]);
}

/// `..Default::default()` of a hand-written `impl Default`: the struct's own defaults.
#[derive(Clone, Copy)]
pub struct Defaults {
    a: f64,
    b: f64,
    c: f64,
}

impl Default for Defaults {
    fn default() -> Self {
        Defaults { a: 1.0, b: 2.0, c: 3.0 }
    }
}

#[autodiff_reverse(d_with_defaults, Duplicated, Active)]
#[autodiff_forward(t_with_defaults, Dual, Dual)]
fn with_defaults(x: &[f64]) -> f64 {
    let p = Defaults { a: x[0], ..Default::default() };
    let q = Defaults { b: x[1], ..Defaults::default() };
    p.a * p.b + q.b * q.c + p.c * x[1]
}

#[test]
fn struct_update_from_a_hand_written_default() {
    let x = [0.3, 0.7];
    let mut dx = [0.0; 2];
    assert_eq!(d_with_defaults(&x, &mut dx, 1.0), with_defaults(&x));
    assert_eq!(dx, [2.0, 6.0]);
    common::check_slice_fn("with_defaults", with_defaults, d_with_defaults, t_with_defaults, &x);
}
