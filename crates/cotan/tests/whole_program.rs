//! Whole-program differentiation: a differentiated function calls functions and methods of
//! the crate that carry no mark, in any module, at any depth, recursion included, with any
//! mix of active and constant arguments, in every mode. Every derivative is checked against
//! finite differences (second order against finite differences of the gradient).

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

mod common;

use cotan::{autodiff_forward, autodiff_reverse, hessian, hvp};

mod model {
    /// Three calls deep: `outer` → `middle` → `crate::util::leaf`, with constant weights.
    pub fn outer(x: &[f64], w: &[f64], s: f64) -> f64 {
        middle(x, w) * s + square(s)
    }

    fn middle(x: &[f64], w: &[f64]) -> f64 {
        let mut t = 0.0;
        for i in 0..x.len() {
            t += crate::util::leaf(x[i], w[i]);
        }
        t
    }

    pub fn square(s: f64) -> f64 {
        s * s
    }
}

mod util {
    pub fn leaf(a: f64, b: f64) -> f64 {
        (a * b).sin() + a * a * 0.5
    }

    /// Writes through `&mut` and reads back what it wrote.
    pub fn smooth_into(x: &[f64], out: &mut [f64]) {
        for i in 0..x.len() {
            let left = if i > 0 { x[i - 1] } else { x[i] };
            out[i] = 0.25 * left + 0.75 * x[i].tanh();
        }
    }

    /// Scales in place (ADBench's FFT calls it as `rescale(data, data.len() / 2)`).
    pub fn rescale(data: &mut [f64], scale: usize) {
        let scale = 1. / scale as f64;
        for elm in data {
            *elm *= scale * *elm;
        }
    }

    /// In place, recursive: halves of the range, then a butterfly.
    pub fn mix(x: &mut [f64], lo: usize, n: usize) {
        if n == 1 {
            x[lo] = x[lo].sin() + x[lo];
            return;
        }
        let h = n / 2;
        mix(x, lo, h);
        mix(x, lo + h, h);
        for k in 0..h {
            let a = x[lo + k];
            let b = x[lo + h + k];
            x[lo + k] = a + 0.5 * b * a;
            x[lo + h + k] = a - b;
        }
    }
}

use model::outer;

slice_case!(
    helpers_three_deep_with_constant_arguments,
    [[0.3, -1.2, 2.5, 0.8]],
    fn f(x: &[f64]) -> f64 {
        let w = [0.5, -1.0, 2.0, 0.25];
        let mut y = vec![0.0; x.len()];
        crate::util::smooth_into(x, &mut y);
        // Active and constant arguments in every position.
        outer(x, &w, x[0]) + outer(&w, &y, 2.0) + outer(&y, x, x[1]) + model::square(3.0)
    }
);

inplace_case!(
    recursion_in_place,
    [[0.3, -1.2, 2.5, 0.8, 0.1, 0.9, -0.4, 1.5]],
    fn f(x: &mut [f64]) {
        let n = x.len();
        crate::util::mix(x, 0, n);
    }
);

inplace_case!(
    memory_lent_mut_and_read_in_one_call,
    [[0.3, -1.2, 2.5, 0.8]],
    fn f(x: &mut [f64]) {
        crate::util::rescale(x, x.len() / 2);
        crate::util::rescale(x, x.len() - (x[0] > 0.0) as usize);
    }
);

inplace_case!(
    calls_whose_value_is_discarded,
    [[0.3, -1.2, 2.5, 0.8]],
    fn f(x: &mut [f64]) {
        // A block's tail, a loop body's tail, the body's tail: calls of `()` functions.
        {
            crate::util::rescale(x, 2)
        };
        for _ in 0..2 {
            crate::util::rescale(x, 3)
        }
        match x.len() {
            0 => {}
            4 => crate::util::rescale(x, 5),
            _ => crate::util::rescale(x, 6),
        }
        crate::util::rescale(x, x.len())
    }
);

/// Methods without marks, calling each other through `&self` and `&mut self`.
#[derive(Clone)]
struct Particle {
    pos: [f64; 2],
    vel: [f64; 2],
    mass: f64,
}

impl Particle {
    fn kinetic(&self) -> f64 {
        0.5 * self.mass * self.speed_squared()
    }

    fn speed_squared(&self) -> f64 {
        self.vel[0] * self.vel[0] + self.vel[1] * self.vel[1]
    }

    fn step(&mut self, dt: f64) {
        for k in 0..2 {
            self.pos[k] += dt * self.vel[k];
            self.vel[k] -= dt * self.pos[k] / self.mass;
        }
    }

    #[autodiff_reverse(d_energy_after, Duplicated, Active, Active)]
    #[autodiff_forward(t_energy_after, Dual, Dual, Dual)]
    fn energy_after(&mut self, dt: f64) -> f64 {
        for _ in 0..3 {
            self.step(dt);
        }
        self.kinetic() + self.pos[0] * self.pos[1]
    }
}

#[test]
fn methods_without_marks() {
    let p0 = Particle { pos: [0.3, -0.2], vel: [1.1, 0.4], mass: 1.7 };
    let energy = |pos: [f64; 2], vel: [f64; 2], mass: f64, dt: f64| {
        let mut p = Particle { pos, vel, mass };
        p.energy_after(dt)
    };
    let dt = 0.05;
    // Reverse mode against central differences in every input.
    let mut p = p0.clone();
    let mut dp = Particle { pos: [0.0; 2], vel: [0.0; 2], mass: 0.0 };
    let (value, ddt) = p.d_energy_after(&mut dp, dt, 1.0);
    assert_eq!(value, energy(p0.pos, p0.vel, p0.mass, dt));
    let h = 1e-6;
    let fd = |f: &dyn Fn(f64) -> f64| (f(h) - f(-h)) / (2.0 * h);
    let tol = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b.abs().max(1.0);
    for k in 0..2 {
        let want = fd(&|e| {
            let mut q = p0.pos;
            q[k] += e;
            energy(q, p0.vel, p0.mass, dt)
        });
        assert!(tol(dp.pos[k], want), "d/dpos[{k}]: {} vs {want}", dp.pos[k]);
        let want = fd(&|e| {
            let mut v = p0.vel;
            v[k] += e;
            energy(p0.pos, v, p0.mass, dt)
        });
        assert!(tol(dp.vel[k], want), "d/dvel[{k}]: {} vs {want}", dp.vel[k]);
    }
    let want = fd(&|e| energy(p0.pos, p0.vel, p0.mass + e, dt));
    assert!(tol(dp.mass, want), "d/dmass: {} vs {want}", dp.mass);
    let want = fd(&|e| energy(p0.pos, p0.vel, p0.mass, dt + e));
    assert!(tol(ddt, want), "d/ddt: {ddt} vs {want}");
    // Forward mode agrees with reverse mode (the dot-product test).
    let mut p = p0.clone();
    let mut tp = Particle { pos: [0.3, -1.0], vel: [0.5, 0.7], mass: -0.2 };
    let (v2, jv) = p.t_energy_after(&mut tp, dt, 0.4);
    assert_eq!(v2, value);
    let rev = 0.3 * dp.pos[0] - 1.0 * dp.pos[1] + 0.5 * dp.vel[0] + 0.7 * dp.vel[1] - 0.2 * dp.mass + 0.4 * ddt;
    assert!((jv - rev).abs() <= 1e-10 * rev.abs().max(1.0), "<J·u, 1> = {jv}, <u, Jᵀ·1> = {rev}");
}

/// A function with only a reverse-mode attribute is called from forward mode, and with
/// constant arguments.
#[autodiff_reverse(d_logistic, Active, Active)]
fn logistic(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

#[autodiff_forward(t_uses_logistic, Dual, Dual)]
#[autodiff_reverse(d_uses_logistic, Active, Active)]
fn uses_logistic(x: f64) -> f64 {
    logistic(x) * logistic(2.0) + logistic(x * x)
}

#[test]
fn functions_with_attributes_are_callable_in_every_mode() {
    let x = 0.7;
    let f = |x: f64| uses_logistic(x);
    let fd = (f(x + 1e-6) - f(x - 1e-6)) / 2e-6;
    let (y, t) = t_uses_logistic(x, 1.0);
    let (y2, g) = d_uses_logistic(x, 1.0);
    assert_eq!(y, uses_logistic(x));
    assert_eq!(y2, y);
    assert!((t - fd).abs() < 1e-8 && (g - t).abs() < 1e-14, "{t} {g} {fd}");
}

/// The same helper, batched: four directions at once through calls.
#[autodiff_forward(jvp4, 4, Dual, Dual)]
fn batched_through_calls(x: &[f64]) -> f64 {
    let w = [1.0, 2.0, 3.0];
    outer(x, &w, x[2]) + logistic(x[0])
}

#[autodiff_reverse(grad_batched, Duplicated, Active)]
fn batched_through_calls_rev(x: &[f64]) -> f64 {
    batched_through_calls(x)
}

#[test]
fn batched_forward_mode_passes_through_calls() {
    let x = [0.4, -0.9, 1.3];
    let e: Vec<[f64; 3]> = (0..3).map(|k| std::array::from_fn(|j| if j == k { 1.0 } else { 0.0 })).collect();
    let u = [0.5, 0.5, -1.0];
    let [y, t0, t1, t2, t3] = jvp4(&x, &e[0], &e[1], &e[2], &u);
    assert_eq!(y, batched_through_calls(&x));
    let mut g = [0.0; 3];
    grad_batched(&x, &mut g, 1.0);
    for (k, t) in [t0, t1, t2].iter().enumerate() {
        assert!((t - g[k]).abs() < 1e-12, "direction {k}: {t} vs {}", g[k]);
    }
    let want = 0.5 * g[0] + 0.5 * g[1] - g[2];
    assert!((t3 - want).abs() < 1e-12);
}

/// A custom derivative inside a Hessian (cotan differentiates the rules themselves).
#[cotan::custom_derivative(forward = soft_fwd, reverse = soft_rev)]
fn soft(x: f64) -> f64 {
    (1.0 + x.exp()).ln()
}

fn soft_fwd(x: f64, dx: f64) -> (f64, f64) {
    let s = 1.0 / (1.0 + (-x).exp());
    ((1.0 + x.exp()).ln(), s * dx)
}

fn soft_rev(x: f64, dret: f64) -> (f64, f64) {
    let s = 1.0 / (1.0 + (-x).exp());
    ((1.0 + x.exp()).ln(), s * dret)
}

/// Only a forward rule: reverse mode transposes it.
#[cotan::custom_derivative(forward = cube_fwd)]
fn cube(x: f64) -> f64 {
    x * x * x
}

fn cube_fwd(x: f64, dx: f64) -> (f64, f64) {
    (x * x * x, 3.0 * x * x * dx)
}

#[hvp(second_hvp)]
#[hessian(second_hess)]
#[autodiff_reverse(second_grad, Duplicated, Active)]
fn second(x: &[f64]) -> f64 {
    let w = [0.5, 1.5, -0.5];
    let mut s = outer(x, &w, x[1]);
    for i in 0..x.len() {
        s += soft(x[i] * x[0]) + 0.1 * cube(x[i]);
    }
    s
}

/// Finite differences of a gradient along v (central, with one Richardson step).
fn fd_hvp(grad: &dyn Fn(&[f64]) -> Vec<f64>, x: &[f64], v: &[f64]) -> Vec<f64> {
    let d = |h: f64| -> Vec<f64> {
        let xp: Vec<f64> = x.iter().zip(v).map(|(a, b)| a + h * b).collect();
        let xm: Vec<f64> = x.iter().zip(v).map(|(a, b)| a - h * b).collect();
        grad(&xp).iter().zip(grad(&xm)).map(|(p, m)| (p - m) / (2.0 * h)).collect()
    };
    let (a, b) = (d(1e-4), d(5e-5));
    a.iter().zip(&b).map(|(a, b)| (4.0 * b - a) / 3.0).collect()
}

#[test]
fn second_order_through_calls_and_custom_derivatives() {
    let x = [0.3, -0.7, 0.9];
    let grad = |x: &[f64]| {
        let mut g = vec![0.0; x.len()];
        second_grad(x, &mut g, 1.0);
        g
    };
    // The gradient against finite differences of the function.
    let g = grad(&x);
    for k in 0..3 {
        let mut xp = x;
        let mut xm = x;
        xp[k] += 1e-6;
        xm[k] -= 1e-6;
        let fd = (second(&xp) - second(&xm)) / 2e-6;
        assert!((g[k] - fd).abs() <= 1e-6 * fd.abs().max(1.0), "gradient[{k}]: {} vs {fd}", g[k]);
    }
    let v = [0.4, 1.0, -0.6];
    let mut gg = [0.0; 3];
    let mut hv = [0.0; 3];
    let value = second_hvp(&x, &v, &mut gg, &mut hv);
    assert_eq!(value, second(&x));
    let want = fd_hvp(&grad, &x, &v);
    for k in 0..3 {
        assert!((hv[k] - want[k]).abs() <= 1e-6 * want[k].abs().max(1.0), "hv[{k}]: {} vs {}", hv[k], want[k]);
    }
    let mut h = [0.0; 9];
    second_hess(&x, &mut gg, &mut h);
    for j in 0..3 {
        let mut e = [0.0; 3];
        e[j] = 1.0;
        let col = fd_hvp(&grad, &x, &e);
        for i in 0..3 {
            assert!((h[i * 3 + j] - col[i]).abs() <= 1e-6 * col[i].abs().max(1.0), "H[{i},{j}]");
        }
    }
}

/// Forward mode over a generated reverse derivative with four slice arguments (the
/// Hessian-vector pattern std documents), whose function calls helpers.
#[autodiff_reverse(d_energy4, Duplicated, Duplicated, Active)]
fn energy4(x: &[f64], y: &[f64]) -> f64 {
    let w = [2.0, -1.0, 0.5];
    outer(x, y, 1.5) + outer(y, &w, x[0])
}

#[autodiff_forward(hvp4, Dual, Dual, Dual, Dual)]
fn gradient4(x: &[f64], y: &[f64], gx: &mut [f64], gy: &mut [f64]) {
    gx.fill(0.0);
    gy.fill(0.0);
    d_energy4(x, gx, y, gy, 1.0);
}

#[test]
fn forward_over_a_generated_reverse_derivative_with_four_slices() {
    let x = [0.2, -0.5, 0.8];
    let y = [1.1, 0.3, -0.4];
    let (vx, vy) = ([0.3, 0.1, -0.2], [-0.5, 0.7, 0.2]);
    let (mut gx, mut gy) = ([0.0; 3], [0.0; 3]);
    let (mut hx, mut hy) = ([0.0; 3], [0.0; 3]);
    hvp4(&x, &vx, &y, &vy, &mut gx, &mut hx, &mut gy, &mut hy);
    // Finite differences of the gradient along (vx, vy).
    let grad = |xy: &[f64]| {
        let (mut gx, mut gy) = ([0.0; 3], [0.0; 3]);
        d_energy4(&xy[..3], &mut gx, &xy[3..], &mut gy, 1.0);
        gx.iter().chain(&gy).copied().collect::<Vec<f64>>()
    };
    let xy: Vec<f64> = x.iter().chain(&y).copied().collect();
    let v: Vec<f64> = vx.iter().chain(&vy).copied().collect();
    let want = fd_hvp(&grad, &xy, &v);
    let got: Vec<f64> = hx.iter().chain(&hy).copied().collect();
    for k in 0..6 {
        assert!((got[k] - want[k]).abs() <= 1e-6 * want[k].abs().max(1.0), "Hv[{k}]: {} vs {}", got[k], want[k]);
    }
    assert_eq!(gx.iter().chain(&gy).copied().collect::<Vec<_>>(), grad(&xy));
}

/// A struct changed by a `&mut` call and read after it, in reverse mode.
#[derive(Clone)]
struct State {
    v: [f64; 2],
}

fn push(s: &mut State, x: f64) {
    s.v[0] += x * s.v[1];
}

#[autodiff_reverse(d_after_push, Duplicated, Active, Active)]
fn after_push(s: &mut State, x: f64) -> f64 {
    push(s, x);
    push(s, x * x);
    s.v[0] * s.v[1]
}

#[test]
fn structs_changed_by_calls() {
    let f = |v: [f64; 2], x: f64| after_push(&mut State { v }, x);
    let (v0, x) = ([0.7, -1.3], 0.4);
    let mut s = State { v: v0 };
    let mut ds = State { v: [0.0; 2] };
    let (y, dx) = d_after_push(&mut s, &mut ds, x, 1.0);
    assert_eq!(y, f(v0, x));
    let h = 1e-6;
    let fdx = (f(v0, x + h) - f(v0, x - h)) / (2.0 * h);
    assert!((dx - fdx).abs() < 1e-8, "{dx} vs {fdx}");
    for k in 0..2 {
        let (mut p, mut m) = (v0, v0);
        p[k] += h;
        m[k] -= h;
        let fd = (f(p, x) - f(m, x)) / (2.0 * h);
        assert!((ds.v[k] - fd).abs() < 1e-8, "d/dv[{k}]: {} vs {fd}", ds.v[k]);
    }
}

mod geometry {
    #[derive(Clone, Copy)]
    pub struct Pt {
        pub x: f64,
        pub y: f64,
    }

    impl Pt {
        pub fn new(x: f64, y: f64) -> Pt {
            Pt { x, y }
        }
        pub fn dist2(&self, o: &Pt) -> f64 {
            (self.x - o.x).powi(2) + (self.y - o.y).powi(2)
        }
    }
}

/// Structs made by their type's associated function named by its full path
/// (`crate::geometry::Pt::new`), with no `use` of the type: kept in a local and passed on,
/// and made inside the argument of a call.
#[autodiff_reverse(d_full_paths, Active, Active, Active)]
#[autodiff_forward(t_full_paths, Dual, Dual, Dual)]
fn full_paths(x: f64, y: f64) -> f64 {
    let a = crate::geometry::Pt::new(2.0 * x, 1.0);
    a.dist2(&crate::geometry::Pt::new(y, x * y)) + crate::geometry::Pt::new(x, y).dist2(&a)
}

#[test]
fn structs_made_by_full_paths() {
    for (x, y) in [(0.7, -0.3), (1.2, 0.4)] {
        let (value, dx, dy) = d_full_paths(x, y, 1.0);
        assert_eq!(value, full_paths(x, y));
        let h = 1e-6;
        let fx = (full_paths(x + h, y) - full_paths(x - h, y)) / (2.0 * h);
        let fy = (full_paths(x, y + h) - full_paths(x, y - h)) / (2.0 * h);
        assert!((dx - fx).abs() <= 1e-6 * fx.abs().max(1.0), "d/dx: {dx} vs {fx}");
        assert!((dy - fy).abs() <= 1e-6 * fy.abs().max(1.0), "d/dy: {dy} vs {fy}");
        let (_, jx) = t_full_paths(x, 1.0, y, 0.0);
        let (_, jy) = t_full_paths(x, 0.0, y, 1.0);
        assert!((jx - dx).abs() <= 1e-12 * dx.abs().max(1.0) && (jy - dy).abs() <= 1e-12 * dy.abs().max(1.0));
    }
}
