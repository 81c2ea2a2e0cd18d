//! Closures passed to helpers (`F: Fn(..)`, `impl Fn(..)`, `&F`, `&dyn Fn`, `FnMut`), helpers
//! returning vectors and slices, and methods of enum fields: cotan lowers such helpers in
//! place of their calls. Each case is checked by the harness (finite differences in both
//! modes, the dot-product test, no steady-state allocations beyond the primal's); batched
//! forward mode and Hessians are checked against reverse mode and finite differences.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code, unused_mut)]

mod common;

use cotan::{autodiff_forward, autodiff_reverse, hessian, hvp};

/// The trapezoid rule on [a, b] with `n` intervals, over any closure.
fn integrate<F: Fn(f64) -> f64>(f: F, a: f64, b: f64, n: usize) -> f64 {
    let h = (b - a) / n as f64;
    let mut s = 0.5 * (f(a) + f(b));
    for i in 1..n {
        s += f(a + i as f64 * h);
    }
    s * h
}

fn twice(f: impl Fn(f64) -> f64, x: f64) -> f64 {
    f(f(x))
}

fn apply_by_ref(f: &dyn Fn(f64) -> f64, x: f64) -> f64 {
    f(x) + 1.0
}

/// A closure passed on to another helper that takes one.
fn integrate_squared<F>(f: &F, a: f64, b: f64) -> f64
where
    F: Fn(f64) -> f64,
{
    integrate(|t| f(t) * f(t), a, b, 8)
}

fn for_each_scaled<F: FnMut(usize, f64)>(x: &[f64], scale: f64, mut f: F) {
    for (i, v) in x.iter().enumerate() {
        f(i, v * scale);
    }
}

slice_case!(
    generic_closure_parameter,
    [[0.7, -0.4, 1.3], [-1.1, 2.0, 0.25]],
    fn f(x: &[f64]) -> f64 {
        let (a, b) = (x[0], x[1]);
        integrate(|t| (a * t).sin() * b + t * x[2], 0.0, 1.0, 16)
    }
);

slice_case!(
    impl_fn_parameter_with_closures_and_function_items,
    [[0.7, -0.4, 1.3], [-1.1, 2.0, 0.25]],
    fn f(x: &[f64]) -> f64 {
        let k = x[2];
        let g = |v: f64| k * v.tanh() + v;
        // (A helper called inside the closure passed to it is no recursion.)
        let nested = twice(|v| twice(|w| w * k + v, v.sin()), x[2]);
        twice(g, x[0]) + twice(f64::sin, x[1]) + twice(|v| v * k, x[0]) + apply_by_ref(&g, x[1]) + nested
    }
);

slice_case!(
    closures_passed_on_and_fn_mut,
    [[0.7, -0.4, 1.3], [-1.1, 2.0, 0.25]],
    fn f(x: &[f64]) -> f64 {
        let w = x[0] * x[1];
        let sq = |t: f64| (w * t).cos() + x[2];
        let mut acc = 0.0;
        for_each_scaled(x, w, |i, v| acc += v * v * (i as f64 + 1.0));
        integrate_squared(&sq, -1.0, 0.5) + acc
    }
);

/// A function pointer parameter (`fn(f64) -> f64`), given a function of the crate, `f64::exp`
/// or a closure that captures nothing.
fn apply_pointer(f: fn(f64) -> f64, x: f64) -> f64 {
    f(x) * f(0.5 * x)
}

fn cube(t: f64) -> f64 {
    t * t * t
}

slice_case!(
    function_pointers_passed_to_helpers,
    [[0.7, -0.4, 1.3], [-1.1, 2.0, 0.25]],
    fn f(x: &[f64]) -> f64 {
        apply_pointer(cube, x[0]) + apply_pointer(f64::exp, x[1]) + apply_pointer(|t| t.sin() + 1.0, x[2] * x[0])
    }
);

/// One RK4 step of y' = f(t, y) in place, `f(t, y, dy)` writing the derivative into `dy`.
fn rk4_step<F: Fn(f64, &[f64], &mut [f64])>(f: &F, t: f64, y: &mut [f64], h: f64) {
    let n = y.len();
    let mut k1 = vec![0.0; n];
    let mut k2 = vec![0.0; n];
    let mut k3 = vec![0.0; n];
    let mut k4 = vec![0.0; n];
    f(t, y, &mut k1);
    let y2: Vec<f64> = y.iter().zip(&k1).map(|(yi, k)| yi + 0.5 * h * k).collect();
    f(t + 0.5 * h, &y2, &mut k2);
    let y3: Vec<f64> = y.iter().zip(&k2).map(|(yi, k)| yi + 0.5 * h * k).collect();
    f(t + 0.5 * h, &y3, &mut k3);
    let y4: Vec<f64> = y.iter().zip(&k3).map(|(yi, k)| yi + h * k).collect();
    f(t + h, &y4, &mut k4);
    for i in 0..n {
        y[i] += h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
    }
}

slice_case!(
    closure_writing_through_slices,
    [[1.0, 0.5, 0.8, 0.3], [0.6, 1.2, 0.4, 0.9]],
    fn f(p: &[f64]) -> f64 {
        let (alpha, beta) = (p[0], p[1]);
        let rhs = |_t: f64, y: &[f64], dy: &mut [f64]| {
            dy[0] = alpha * y[0] - beta * y[0] * y[1];
            dy[1] = p[2] * y[0] * y[1] - p[3] * y[1];
        };
        let mut y = vec![1.0, 0.5];
        for i in 0..10 {
            rk4_step(&rhs, i as f64 * 0.1, &mut y, 0.1);
        }
        y[0] * y[0] + y[1]
    }
);

type State = [f64; 2];

fn rk4<F>(f: F, y: State, h: f64) -> State
where
    F: Fn(State) -> State,
{
    let k1 = f(y);
    let k2 = f([y[0] + h / 2.0 * k1[0], y[1] + h / 2.0 * k1[1]]);
    let k3 = f([y[0] + h / 2.0 * k2[0], y[1] + h / 2.0 * k2[1]]);
    let k4 = f([y[0] + h * k3[0], y[1] + h * k3[1]]);
    [
        y[0] + h / 6.0 * (k1[0] + 2.0 * k2[0] + 2.0 * k3[0] + k4[0]),
        y[1] + h / 6.0 * (k1[1] + 2.0 * k2[1] + 2.0 * k3[1] + k4[1]),
    ]
}

fn pendulum(s: State, g: f64, c: f64) -> State {
    let [theta, omega] = s;
    [omega, -g * theta.sin() - c * omega]
}

scalar_case!(
    closure_of_arrays_by_value,
    3,
    [[9.0, 0.3, 0.5], [4.0, 0.1, -0.8]],
    fn f(g: f64, c: f64, theta0: f64) -> f64 {
        let mut state = [theta0, 0.0];
        for _ in 0..20 {
            state = rk4(|s| pendulum(s, g, c), state, 0.05);
        }
        let [theta, omega] = state;
        theta * theta + 0.5 * omega
    }
);

/// Numerically stable log-softmax, returning a new vector.
fn log_softmax(z: &[f64]) -> Vec<f64> {
    let max = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let lse = max + z.iter().map(|&l| (l - max).exp()).sum::<f64>().ln();
    z.iter().map(|&l| l - lse).collect()
}

fn affine(w: &[f64], x: &[f64], rows: usize) -> Vec<f64> {
    let cols = x.len();
    let mut out = vec![0.0; rows];
    for r in 0..rows {
        for c in 0..cols {
            out[r] += w[r * cols + c] * x[c];
        }
    }
    out
}

fn tail(x: &[f64]) -> &[f64] {
    &x[1..]
}

fn row(m: &[f64], i: usize) -> &[f64] {
    &m[2 * i..2 * i + 2]
}

fn rows(x: &[f64]) -> Vec<[f64; 2]> {
    let mut out = vec![[0.0; 2]; x.len() / 2];
    for (i, c) in x.chunks(2).enumerate() {
        out[i] = [c[0], c[1] * c[0]];
    }
    out
}

slice_case!(
    helpers_returning_vectors_and_slices,
    [[0.7, -0.4, 1.3, 0.2, -0.9, 0.6], [1.1, 0.3, -0.5, 0.8, 0.4, -1.2]],
    fn f(x: &[f64]) -> f64 {
        let h = affine(x, &x[..2], 3);
        let lp = log_softmax(&h);
        let t = tail(tail(x));
        let r = rows(x);
        let q = row(x, 1);
        q[0] * q[1] - log_softmax(&affine(&x[1..], &h, 1))[0] + lp[1] * t[0] + t.iter().sum::<f64>() + r[2][1]
    }
);

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Act {
    Tanh,
    Softplus,
}

impl Act {
    pub fn apply(self, z: f64) -> f64 {
        match self {
            Act::Tanh => z.tanh(),
            Act::Softplus => (1.0 + z.exp()).ln(),
        }
    }
}

pub struct Layer {
    pub w: Vec<f64>,
    pub act: Act,
}

impl Layer {
    fn forward(&self, x: &[f64]) -> Vec<f64> {
        x.iter().zip(&self.w).map(|(a, b)| self.act.apply(a * b)).collect()
    }
}

#[autodiff_reverse(d_layer_loss, Duplicated, Duplicated, Active)]
#[autodiff_forward(t_layer_loss, Dual, Dual, Dual)]
fn layer_loss(layer: &Layer, x: &[f64]) -> f64 {
    layer.forward(x).iter().map(|v| v * v).sum()
}

#[test]
fn methods_returning_vectors_and_methods_of_enum_fields() {
    for act in [Act::Tanh, Act::Softplus] {
        let layer = Layer { w: vec![0.5, -1.2, 0.8], act };
        let x = [0.3, 0.9, -0.6];
        let mut dl = Layer { w: vec![0.0; 3], act };
        let mut dx = [0.0; 3];
        let v = d_layer_loss(&layer, &mut dl, &x, &mut dx, 1.0);
        assert_eq!(v, layer_loss(&layer, &x));
        let h = 1e-6;
        for i in 0..3 {
            let mut lp = Layer { w: layer.w.clone(), act };
            let mut lm = Layer { w: layer.w.clone(), act };
            lp.w[i] += h;
            lm.w[i] -= h;
            let fd = (layer_loss(&lp, &x) - layer_loss(&lm, &x)) / (2.0 * h);
            assert!((dl.w[i] - fd).abs() < 1e-7 * fd.abs().max(1.0), "w[{i}]: {} vs {fd}", dl.w[i]);
            let (mut xp, mut xm) = (x, x);
            xp[i] += h;
            xm[i] -= h;
            let fd = (layer_loss(&layer, &xp) - layer_loss(&layer, &xm)) / (2.0 * h);
            assert!((dx[i] - fd).abs() < 1e-7 * fd.abs().max(1.0), "x[{i}]: {} vs {fd}", dx[i]);
        }
        // Forward against reverse: one direction in both inputs.
        let tl = Layer { w: vec![0.2, 0.1, -0.3], act };
        let tx = [1.0, -0.5, 0.25];
        let (v2, t) = t_layer_loss(&layer, &tl, &x, &tx);
        assert_eq!(v2, v);
        let want: f64 = (0..3).map(|i| dl.w[i] * tl.w[i] + dx[i] * tx[i]).sum();
        assert!((t - want).abs() < 1e-12 * want.abs().max(1.0), "{t} vs {want}");
    }
}

/// Second order and batched forward mode through a helper taking a closure.
#[hvp(smooth_hvp)]
#[hessian(smooth_hess)]
#[autodiff_reverse(smooth_grad, Duplicated, Active)]
#[autodiff_forward(smooth_jvp3, 3, Dual, Dual)]
fn smooth(x: &[f64]) -> f64 {
    let c = x[2];
    integrate(|t| (x[0] * t + x[1]).sin() * c + t * t * x[0], 0.0, 2.0, 10) + twice(|v| v * c, x[1])
}

#[test]
fn hessians_and_batched_tangents_through_closures_passed_to_helpers() {
    let x = [0.4, -0.9, 1.3];
    let grad = |x: &[f64]| {
        let mut g = vec![0.0; 3];
        smooth_grad(x, &mut g, 1.0);
        g
    };
    let g = grad(&x);
    let e = |k: usize| -> [f64; 3] { std::array::from_fn(|j| if j == k { 1.0 } else { 0.0 }) };
    let [y, t0, t1, t2] = smooth_jvp3(&x, &e(0), &e(1), &e(2));
    assert_eq!(y, smooth(&x));
    for (k, t) in [t0, t1, t2].iter().enumerate() {
        assert!((t - g[k]).abs() < 1e-12 * g[k].abs().max(1.0), "direction {k}: {t} vs {}", g[k]);
    }
    let mut hess = vec![0.0; 9];
    let mut g2 = vec![0.0; 3];
    assert_eq!(smooth_hess(&x, &mut g2, &mut hess), y);
    for k in 0..3 {
        // Column k of the Hessian against finite differences of the gradient.
        let h = 1e-5;
        let mut xp = x;
        let mut xm = x;
        xp[k] += h;
        xm[k] -= h;
        let (gp, gm) = (grad(&xp), grad(&xm));
        for i in 0..3 {
            let fd = (gp[i] - gm[i]) / (2.0 * h);
            assert!(
                (hess[i * 3 + k] - fd).abs() < 1e-6 * fd.abs().max(1.0),
                "H[{i}][{k}]: {} vs {fd}",
                hess[i * 3 + k]
            );
            assert_eq!(hess[i * 3 + k], hess[k * 3 + i], "the Hessian is symmetric");
        }
    }
    let v = [0.5, -1.0, 2.0];
    let mut gv = [0.0; 3];
    let mut hv = [0.0; 3];
    smooth_hvp(&x, &v, &mut gv, &mut hv);
    for i in 0..3 {
        let want: f64 = (0..3).map(|k| hess[i * 3 + k] * v[k]).sum();
        assert!((hv[i] - want).abs() < 1e-10 * want.abs().max(1.0), "Hv[{i}]: {} vs {want}", hv[i]);
    }
}

fn forces(x: &[f64], k: f64) -> Vec<[f64; 2]> {
    x.iter().map(|&v| [k * v, v * v]).collect()
}

// Arrays collected into a `Vec<[f64; 2]>` (`.map(|p| [a, b]).collect()`), here and in a
// helper, rows updated through `iter_mut().zip(..)`. (Checked without the allocation test:
// the reverse sweep's buffers for vectors of arrays are allocated, not pooled.)
#[autodiff_reverse(d_collected, Duplicated, Active)]
#[autodiff_forward(t_collected, Dual, Dual)]
fn collected(x: &[f64]) -> f64 {
    let k = x[0] * 0.5 + 0.3;
    let mut acc: Vec<[f64; 2]> = x.iter().enumerate().map(|(i, v)| [v.sin() * k, i as f64 * v]).collect();
    let fs = forces(x, k);
    for (a, g) in acc.iter_mut().zip(fs.iter()) {
        a[0] += g[1];
        a[1] -= g[0] * a[0];
    }
    acc.iter().map(|a| a[0] * a[1]).sum::<f64>() + fs[1][0]
}

#[test]
fn arrays_collected_into_vectors() {
    let case = common::Case {
        src: "collected",
        shape: common::Shape::Slice,
        primal: &|x| vec![collected(x)],
        jvp: &|x, u| {
            let (y, t) = t_collected(x, u);
            (vec![y], vec![t])
        },
        vjp: &|x, w| {
            let mut g = vec![0.0; x.len()];
            let y = d_collected(x, &mut g, w[0]);
            (vec![y], g)
        },
    };
    for x in [[0.3, -0.7, 1.1], [1.2, 0.5, -0.3]] {
        common::check_compiled(&case, &x);
    }
}
