//! Fieldless enums (issue 11, item 2): `match`, `if let`, `matches!` and `==` on enum
//! parameters (`Const`) and on enum values made in the function, checked against central
//! finite differences in both modes.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

use cotan::{autodiff_forward, autodiff_reverse};

#[derive(Clone, Copy, PartialEq, Debug)]
enum Mode {
    Fast,
    Accurate,
    Off,
}

#[autodiff_reverse(d_f, Active, Const, Active)]
#[autodiff_forward(t_f, Dual, Const, Dual)]
fn f(x: f64, mode: Mode) -> f64 {
    let scale = match mode {
        Mode::Fast => 2.0,
        Mode::Accurate | Mode::Off => 0.5,
    };
    let mut local = if x > 0.0 { Mode::Accurate } else { Mode::Off };
    let m2 = match local {
        Mode::Accurate => x.sin(),
        _ => x * x,
    };
    let extra = if mode == Mode::Off { 1.0 } else { x };
    let y = if matches!(local, Mode::Off) { 3.0 } else { 1.0 };
    if scale > 1.0 {
        local = Mode::Fast;
    }
    let z = if local != Mode::Fast { y } else { 2.0 * y };
    if let Mode::Fast = mode {
        scale * x * m2 * extra * z
    } else {
        m2 * extra * y * z
    }
}

use Mode::*;

/// By reference, with the variants imported (`use Mode::*` makes them bare names).
#[autodiff_reverse(d_g, Active, Const, Active)]
fn g(x: f64, mode: &Mode) -> f64 {
    match *mode {
        Fast | Off => x * x,
        Accurate => x.exp(),
    }
}

#[test]
fn enum_parameters_and_locals() {
    for mode in [Mode::Fast, Mode::Accurate, Mode::Off] {
        for x in [0.7, -1.3] {
            let h = 1e-6;
            let fd = (f(x + h, mode) - f(x - h, mode)) / (2.0 * h);
            let (v, dx) = d_f(x, mode, 1.0);
            assert_eq!(v, f(x, mode));
            assert!((dx - fd).abs() < 1e-7 * fd.abs().max(1.0), "{mode:?} at {x}: {dx} vs {fd}");
            let (v, t) = t_f(x, 1.0, mode);
            assert_eq!(v, f(x, mode));
            assert!((t - dx).abs() < 1e-12 * dx.abs().max(1.0));
            let fd = (g(x + h, &mode) - g(x - h, &mode)) / (2.0 * h);
            let (_, dx) = d_g(x, &mode, 1.0);
            assert!((dx - fd).abs() < 1e-7 * fd.abs().max(1.0), "g {mode:?} at {x}: {dx} vs {fd}");
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Shape {
    Circle(f64),
    Square { side: f64 },
    Rect(f64, f64),
    Empty,
}

/// Enums with number fields, passed by value or by reference (`Const`): each arm reads
/// the fields of its variant.
#[autodiff_reverse(d_area, Active, Const, Const, Active)]
#[autodiff_forward(t_area, Dual, Const, Const, Dual)]
fn area(scale: f64, s: Shape, t: &Shape) -> f64 {
    let a = match s {
        Shape::Circle(r) => std::f64::consts::PI * r * r,
        Shape::Square { side } => side * side,
        Shape::Rect(w, _) if w > 10.0 => 0.0,
        Shape::Rect(w, h) => w * h,
        Shape::Empty => 0.0,
    };
    let b = if let Shape::Rect(_, h) = *t { h } else { 1.0 };
    scale * scale * a + scale * b
}

#[test]
fn enums_with_number_fields() {
    let shapes =
        [Shape::Circle(0.5), Shape::Square { side: 2.0 }, Shape::Rect(2.0, 3.0), Shape::Rect(20.0, 3.0), Shape::Empty];
    for s in shapes {
        for t in shapes {
            let x = 0.7;
            let h = 1e-6;
            let fd = (area(x + h, s, &t) - area(x - h, s, &t)) / (2.0 * h);
            let (v, dx) = d_area(x, s, &t, 1.0);
            assert_eq!(v, area(x, s, &t));
            assert!((dx - fd).abs() < 1e-7 * fd.abs().max(1.0), "{s:?} {t:?}: {dx} vs {fd}");
            let (_, tx) = t_area(x, 1.0, s, &t);
            assert!((tx - dx).abs() < 1e-12 * dx.abs().max(1.0));
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Act {
    Relu,
    Tanh,
    Identity,
}

fn apply(a: Act, v: f64) -> f64 {
    match a {
        Act::Relu => v.max(0.0),
        Act::Tanh => v.tanh(),
        Act::Identity => v,
    }
}

fn apply_ref(a: &Act, v: f64, w: f64) -> f64 {
    match *a {
        Act::Relu => (v * w).max(0.0),
        Act::Tanh | Act::Identity => apply(*a, v) * w,
    }
}

/// Enum values made in the function passed to helpers (`apply(a, v)`), by value and by
/// reference, chosen by a `match` on the index; the helpers are lowered at such calls.
#[autodiff_reverse(d_layer, Duplicated, Active)]
#[autodiff_forward(t_layer, Dual, Dual)]
fn layer(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        let a = match i % 3 {
            0 => Act::Relu,
            1 => Act::Tanh,
            _ => Act::Identity,
        };
        s += apply(a, x[i]) + apply_ref(&a, x[i], x[0]);
    }
    let last = Act::Tanh;
    s + apply(last, s * 0.1) + apply(Act::Relu, x[1] - 0.2)
}

#[test]
fn enum_values_passed_to_helpers() {
    for x in [[0.7, -0.4, 1.3, 0.2, -0.9], [-0.3, 0.8, -1.1, 0.5, 0.25]] {
        let mut g = [0.0; 5];
        let v = d_layer(&x, &mut g, 1.0);
        assert_eq!(v, layer(&x));
        for i in 0..5 {
            let h = 1e-6;
            let (mut xp, mut xm) = (x, x);
            xp[i] += h;
            xm[i] -= h;
            let fd = (layer(&xp) - layer(&xm)) / (2.0 * h);
            assert!((g[i] - fd).abs() < 1e-7 * fd.abs().max(1.0), "∂/∂x{i} at {x:?}: {} vs {fd}", g[i]);
            let mut u = [0.0; 5];
            u[i] = 1.0;
            let (tv, t) = t_layer(&x, &u);
            assert_eq!(tv, v);
            assert!((t - g[i]).abs() < 1e-12 * g[i].abs().max(1.0), "forward {t} vs reverse {}", g[i]);
        }
    }
}

mod layers {
    #[derive(Clone, Copy)]
    pub enum Act {
        Tanh,
        Id,
        Scaled(f64),
    }

    impl Act {
        pub fn apply(&self, z: f64) -> f64 {
            match self {
                Act::Tanh => z.tanh(),
                Act::Id => z,
                Act::Scaled(k) => k * z,
            }
        }
    }

    pub struct Unit {
        pub w: f64,
        pub act: Act,
    }

    impl Unit {
        pub fn out(&self, x: f64) -> f64 {
            self.act.apply(self.w * x)
        }
    }
}

/// An enum field's method, matching on variants as the enum's own module names them
/// (`Act::Tanh`), lowered at a call from another module: the generated code names the enum
/// by its path from here.
#[cotan::autodiff_reverse(d_unit_out, Const, Active, Active)]
#[cotan::autodiff_forward(t_unit_out, Const, Dual, Dual)]
fn unit_out(u: &layers::Unit, x: f64) -> f64 {
    u.out(x) * x
}

#[test]
fn enum_matched_in_another_module() {
    for act in [layers::Act::Tanh, layers::Act::Id, layers::Act::Scaled(-2.5)] {
        let u = layers::Unit { w: 1.3, act };
        let (v, d) = d_unit_out(&u, 0.4, 1.0);
        assert_eq!(v, unit_out(&u, 0.4));
        let fd = (unit_out(&u, 0.4 + 1e-6) - unit_out(&u, 0.4 - 1e-6)) / 2e-6;
        assert!((fd - d).abs() <= 1e-6 * fd.abs().max(1.0), "{d} vs {fd}");
        let (_, jvp) = t_unit_out(&u, 0.4, 1.0);
        assert!((jvp - d).abs() <= 1e-12 * d.abs().max(1.0), "forward: {jvp} vs {d}");
    }
}

/// `#[derive(cotan::Differentiable)]` on an enum: a struct holding one derives it too, and
/// its shadow (`zero_like`) keeps the variant with its numbers zero.
#[derive(Clone, Copy, Debug, PartialEq, cotan::Differentiable)]
pub enum Activation {
    Tanh,
    Relu,
}

#[derive(Clone, Copy, Debug, PartialEq, cotan::Differentiable)]
pub enum Schedule {
    Fixed,
    Decay { rate: f64 },
    Steps(f64, usize),
}

#[derive(Clone, Debug, PartialEq, cotan::Differentiable)]
pub struct Neuron {
    pub w: Vec<f64>,
    pub act: Activation,
}

impl Neuron {
    pub fn fire(&self, x: &[f64]) -> f64 {
        let z: f64 = self.w.iter().zip(x).map(|(w, x)| w * x).sum();
        match self.act {
            Activation::Tanh => z.tanh(),
            Activation::Relu => z.max(0.0),
        }
    }
}

#[cotan::autodiff_reverse(d_neuron, Duplicated, Const, Active)]
fn neuron(n: &Neuron, x: &[f64]) -> f64 {
    n.fire(x) * n.fire(x)
}

#[test]
fn derived_for_enums_and_structs_holding_them() {
    use cotan::Differentiable;
    assert_eq!(Schedule::Decay { rate: 0.5 }.zero_like(), Schedule::Decay { rate: 0.0 });
    // (Integers are not differentiated: zero_like keeps them, as it does in structs.)
    assert_eq!(Schedule::Steps(0.5, 3).zero_like(), Schedule::Steps(0.0, 3));
    assert_eq!(Schedule::Fixed.zero_like(), Schedule::Fixed);
    let x = [0.3, 1.2];
    for act in [Activation::Tanh, Activation::Relu] {
        let n = Neuron { w: vec![0.7, 0.4], act };
        let mut dn = n.zero_like();
        assert_eq!(dn.act, act);
        let v = d_neuron(&n, &mut dn, &x, 1.0);
        assert_eq!(v, neuron(&n, &x));
        for k in 0..2 {
            let (mut p, mut m) = (n.clone(), n.clone());
            p.w[k] += 1e-6;
            m.w[k] -= 1e-6;
            let fd = (neuron(&p, &x) - neuron(&m, &x)) / 2e-6;
            assert!((fd - dn.w[k]).abs() <= 1e-6 * fd.abs().max(1.0), "dw[{k}]: {} vs {fd}", dn.w[k]);
        }
    }
}

/// Helpers returning an `Option` of a fieldless enum, with `None` first (an early return)
/// or last: the declared type gives the `None` its shape.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    A,
    B,
}

fn classify(x: f64) -> Option<Kind> {
    if x > 2.0 {
        return None;
    }
    Some(if x < 0.0 { Kind::A } else { Kind::B })
}

fn classify_tail(x: f64) -> Option<Kind> {
    if x < -1.5 {
        None
    } else if x < 0.5 {
        Some(Kind::A)
    } else {
        Some(Kind::B)
    }
}

#[autodiff_reverse(d_piecewise, Active, Active)]
#[autodiff_forward(t_piecewise, Dual, Dual)]
fn piecewise(x: f64) -> f64 {
    let a = match classify(x) {
        Some(Kind::A) => -x,
        Some(Kind::B) => x * x,
        None => x.sin(),
    };
    let b = match classify_tail(x) {
        Some(k) if k == Kind::A => x.exp(),
        Some(_) => 3.0 * x,
        None => 1.0 / x,
    };
    a * b
}

#[test]
fn options_of_enums_from_helpers() {
    let h = 1e-6;
    for x in [-2.0, -1.0, 0.3, 1.2, 3.0] {
        let (value, dx) = d_piecewise(x, 1.0);
        assert_eq!(value, piecewise(x));
        let want = (piecewise(x + h) - piecewise(x - h)) / (2.0 * h);
        assert!((dx - want).abs() <= 1e-6 * want.abs().max(1.0), "x = {x}: {dx} vs {want}");
        let (v2, t) = t_piecewise(x, 1.0);
        assert_eq!(v2, value);
        assert!((t - dx).abs() <= 1e-12 * dx.abs().max(1.0), "x = {x}: {t} vs {dx}");
    }
}
