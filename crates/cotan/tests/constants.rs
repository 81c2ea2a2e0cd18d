//! The crate's constants in differentiated code: module-level, associated and
//! function-local `const` items and `static` numbers, constant arrays, array lengths given
//! by constants, constants defined from other constants and from std's, constants in
//! patterns, and constants of the modules of called helpers. Every derivative is checked
//! against finite differences and forward mode against reverse mode.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

mod common;

use cotan::{autodiff_forward, autodiff_reverse, hvp};

const N: usize = 3;
const DT: f64 = 1.0 / 60.0;
const TWO_PI: f64 = 2.0 * std::f64::consts::PI;
static GAIN: f64 = 1.5;
const WEIGHTS: [f64; N] = [0.5, -1.25, 2.0];
const STEPS: usize = N * N - 5;
const HALF: f32 = 0.5;
const NEG: i32 = -2;
const MASK: u32 = !0 >> 28;
/// Compared with a literal, it must stay a `usize` (as an `i32` it would wrap to 0).
const BIG: usize = 1 << 40;

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

#[autodiff_forward(module_level_fwd, Dual, Dual)]
#[autodiff_reverse(module_level_rev, Duplicated, Active)]
fn module_level(x: &[f64; N]) -> f64 {
    let mut s = 0.0;
    for _ in 0..STEPS {
        for i in 0..N {
            s += WEIGHTS[i] * (x[i] * TWO_PI * DT).sin() * GAIN;
        }
    }
    let sign = if BIG > 5 { 1.0 } else { -1.0 };
    s + (HALF as f64) * x[0] * x[0] + (NEG as f64) * x[1] + (MASK as f64) * x[2] * sign
}

#[test]
fn module_level_constants() {
    let f = |x: &[f64]| module_level(x.try_into().unwrap());
    let fwd = |x: &[f64], u: &[f64]| module_level_fwd(x.try_into().unwrap(), u.try_into().unwrap());
    let rev = |x: &[f64], g: &mut [f64]| module_level_rev(x.try_into().unwrap(), g.try_into().unwrap(), 1.0);
    check("module_level", &f, &fwd, &rev, &[0.3, -1.2, 2.5]);
    // The values are rustc's.
    assert_eq!(STEPS, 4);
    assert_eq!(MASK, 15);
    let x = [0.3, -1.2, 2.5];
    let mut want = 0.0;
    for _ in 0..4 {
        for i in 0..3 {
            want += WEIGHTS[i] * (x[i] * TWO_PI * DT).sin() * GAIN;
        }
    }
    want += 0.5 * x[0] * x[0] - 2.0 * x[1] + 15.0 * x[2];
    assert_eq!(module_level_fwd(&x, &[0.0; 3]).0, want);
}

struct Spring;

impl Spring {
    const STIFFNESS: f64 = 4.0;
    const REST: f64 = Self::STIFFNESS / 8.0;

    fn energy(x: f64) -> f64 {
        0.5 * Self::STIFFNESS * (x - Self::REST) * (x - Self::REST)
    }
}

#[autodiff_forward(associated_fwd, Dual, Dual)]
#[autodiff_reverse(associated_rev, Duplicated, Active)]
fn associated(x: &[f64]) -> f64 {
    // Through a helper (its own `Self::`), and directly.
    Spring::energy(x[0]) + Spring::STIFFNESS * x[1] * Spring::REST
}

#[test]
fn associated_constants() {
    let f = |x: &[f64]| associated(x);
    let fwd = |x: &[f64], u: &[f64]| associated_fwd(x, u);
    let rev = |x: &[f64], g: &mut [f64]| associated_rev(x, g, 1.0);
    check("associated", &f, &fwd, &rev, &[0.7, -0.4]);
}

#[autodiff_forward(local_fwd, Dual, Dual)]
#[autodiff_reverse(local_rev, Duplicated, Active)]
fn local(x: &[f64]) -> f64 {
    const K: usize = 2;
    const SCALE: f64 = K as f64 * 0.25;
    let mut buf = [0.0; K + 1];
    for i in 0..=K {
        buf[i] = x[i % x.len()] * SCALE;
    }
    let mut s = 0.0;
    for i in 0..buf.len() {
        s += if i == K { buf[i].exp() } else { buf[i] * buf[i] };
    }
    s
}

#[test]
fn function_local_constants_and_patterns() {
    let f = |x: &[f64]| local(x);
    let fwd = |x: &[f64], u: &[f64]| local_fwd(x, u);
    let rev = |x: &[f64], g: &mut [f64]| local_rev(x, g, 1.0);
    check("local", &f, &fwd, &rev, &[0.7, -0.4]);
}

mod physics {
    /// Private to this module: the derivative emitted elsewhere still sees its value.
    const G: f64 = 9.81;
    pub(crate) const SUBSTEPS: usize = 4;

    pub fn fall(h: f64, v: f64) -> f64 {
        let mut h = h;
        let mut v = v;
        let dt = super::DT / SUBSTEPS as f64;
        for _ in 0..SUBSTEPS {
            v -= G * dt;
            h += v * dt;
        }
        h * h + v
    }
}

#[autodiff_forward(helper_fwd, Dual, Dual)]
#[autodiff_reverse(helper_rev, Duplicated, Active)]
#[hvp(helper_hvp)]
fn helper(x: &[f64]) -> f64 {
    physics::fall(x[0], x[1]) * physics::SUBSTEPS as f64
}

#[test]
fn constants_of_called_helpers_in_every_mode() {
    let f = |x: &[f64]| helper(x);
    let fwd = |x: &[f64], u: &[f64]| helper_fwd(x, u);
    let rev = |x: &[f64], g: &mut [f64]| helper_rev(x, g, 1.0);
    check("helper", &f, &fwd, &rev, &[10.0, -0.5]);
    // Second order: the Hessian of 4 (h_n² + v_n), with h_n and v_n affine in (h, v).
    let x = [10.0, -0.5];
    let v = [0.3, 1.0];
    let (mut g, mut hv) = ([0.0; 2], [0.0; 2]);
    helper_hvp(&x, &v, &mut g, &mut hv);
    let grad = |x: &[f64]| {
        let mut g = vec![0.0; 2];
        helper_rev(x, &mut g, 1.0);
        g
    };
    let h = 1e-4;
    let xp: Vec<f64> = x.iter().zip(&v).map(|(a, b)| a + h * b).collect();
    let xm: Vec<f64> = x.iter().zip(&v).map(|(a, b)| a - h * b).collect();
    for k in 0..2 {
        let want = (grad(&xp)[k] - grad(&xm)[k]) / (2.0 * h);
        assert!((hv[k] - want).abs() <= 1e-7 * want.abs().max(1.0), "hv[{k}]: {} vs {want}", hv[k]);
    }
}

// Constants in the arguments of `vec![..]` and `assert!` (a macro's tokens, which the
// substitution once left alone: "cannot see the value of `DT`").
#[autodiff_forward(in_macros_fwd, Dual, Dual)]
#[autodiff_reverse(in_macros_rev, Duplicated, Active)]
fn in_macros(x: &[f64]) -> f64 {
    assert!(x.len() >= N - 1, "at least {} values", N - 1);
    assert_eq!(WEIGHTS.len(), N);
    let v = vec![x[0] * DT, GAIN, WEIGHTS[2]];
    let mut w = vec![TWO_PI; N];
    w[1] = x[1] * WEIGHTS[1];
    v.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>() + v[0] * w[1]
}

#[test]
fn constants_in_macro_arguments() {
    let f = |x: &[f64]| in_macros(x);
    let fwd = |x: &[f64], u: &[f64]| in_macros_fwd(x, u);
    let rev = |x: &[f64], g: &mut [f64]| in_macros_rev(x, g, 1.0);
    check("in_macros", &f, &fwd, &rev, &[0.7, -0.4]);
}

// Constants of structs of the crate, written out as struct literals where the function
// names them (also from another module, and in a helper); checked against the derivative
// worked by hand.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Dir3 {
    pub x: f64,
    pub y: f64,
    pub z: f64,
}

impl Dir3 {
    fn dot(self, o: Dir3) -> f64 {
        self.x * o.x + self.y * o.y + self.z * o.z
    }
}

impl std::ops::Add for Dir3 {
    type Output = Dir3;
    fn add(self, o: Dir3) -> Dir3 {
        Dir3 { x: self.x + o.x, y: self.y + o.y, z: self.z + o.z }
    }
}

impl std::ops::Mul<f64> for Dir3 {
    type Output = Dir3;
    fn mul(self, s: f64) -> Dir3 {
        Dir3 { x: self.x * s, y: self.y * s, z: self.z * s }
    }
}

const UP: Dir3 = Dir3 { x: 0.0, y: 1.0, z: 0.0 };
const LIFT: f64 = 2.5;

mod light {
    pub const DIR: super::Dir3 = super::Dir3 { x: 0.6, y: 0.8, z: -0.0 };
}

fn shade(n: Dir3) -> f64 {
    let d = n.dot(light::DIR);
    if d > 0.0 {
        d
    } else {
        0.0
    }
}

#[cotan::autodiff_reverse(d_struct_constants, Duplicated, Active)]
fn struct_constants(p: &[Dir3]) -> f64 {
    let q = p[0] + UP * LIFT;
    if UP.y > 0.5 {
        q.dot(UP) * q.x + shade(p[1])
    } else {
        0.0
    }
}

#[test]
fn constants_of_structs() {
    let p = [Dir3 { x: 0.3, y: -1.2, z: 0.8 }, Dir3 { x: 0.5, y: 0.4, z: 0.1 }];
    let mut dp = [Dir3::default(); 2];
    assert_eq!(d_struct_constants(&p, &mut dp, 1.0), struct_constants(&p));
    // q = p0 + (0, 2.5, 0), so f = q.y q.x + 0.6 p1.x + 0.8 p1.y.
    assert_eq!((dp[0].x, dp[0].y, dp[0].z), (1.3, 0.3, 0.0));
    assert_eq!((dp[1].x, dp[1].y, dp[1].z), (0.6, 0.8, 0.0));
}

/// A Butcher tableau as constants of arrays of arrays (RK4), read as `A[i][j]`.
const RK4_A: [[f64; 4]; 4] = [[0.0; 4], [0.5, 0.0, 0.0, 0.0], [0.0, 0.5, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]];
const RK4_B: [f64; 4] = [1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0];

#[autodiff_reverse(d_rk4_decay, Duplicated, Active)]
#[autodiff_forward(t_rk4_decay, Dual, Dual)]
fn rk4_decay(p: &[f64]) -> f64 {
    // y' = -k y², ten steps of RK4 from y0, written with the tableau.
    let (k, mut y, h) = (p[0], p[1], 0.1);
    for _ in 0..10 {
        let mut stages = [0.0; 4];
        for i in 0..4 {
            let mut yi = y;
            for j in 0..i {
                yi += h * RK4_A[i][j] * stages[j];
            }
            stages[i] = -k * yi * yi;
        }
        for i in 0..4 {
            y += h * RK4_B[i] * stages[i];
        }
    }
    y
}

#[test]
fn constants_of_arrays_of_arrays() {
    common::check_slice_fn("rk4_decay", rk4_decay, d_rk4_decay, t_rk4_decay, &[0.7, 1.3]);
}
