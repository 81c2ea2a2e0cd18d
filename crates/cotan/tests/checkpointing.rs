//! `cotan::checkpoint`: loops whose reverse sweep stores snapshots of their state and
//! recomputes segments of iterations. Each schedule against the same loop recorded whole
//! (the same operations: equal to 1e-12) and against central finite differences.

#![allow(clippy::all, clippy::pedantic, dead_code, unused_mut, unused_variables)]

use cotan::{autodiff_forward, autodiff_reverse, checkpoint, hvp, Binomial, Every};

mod common;

const STEPS: [usize; 8] = [0, 1, 2, 3, 5, 7, 12, 31];

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
}

fn assert_close(what: &str, a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len(), "{what}");
    for (k, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(close(*x, *y, tol), "{what}[{k}]: {x} against {y}");
    }
}

/// Central differences of `f` at `x`.
fn fd(f: &dyn Fn(&[f64]) -> f64, x: &[f64]) -> Vec<f64> {
    (0..x.len())
        .map(|k| {
            let h = 1e-6 * (1.0 + x[k].abs());
            let (mut a, mut b) = (x.to_vec(), x.to_vec());
            a[k] += h;
            b[k] -= h;
            (f(&a) - f(&b)) / (2.0 * h)
        })
        .collect()
}

// ---- explicit Euler over a `&mut [f64]` state (`Duplicated`), a helper per component,
// ---- a scratch vector made before the loop, an `Active` parameter.

fn rhs(x: &[f64], p: f64, i: usize) -> f64 {
    let n = x.len();
    let l = x[(i + n - 1) % n];
    let r = x[(i + 1) % n];
    p * (l - 2.0 * x[i] + r) + (x[i] * x[i]).sin() * 0.3
}

macro_rules! euler {
    ($name:ident, $d:ident, $steps:ident, [$($iter:tt)*]) => {
        #[autodiff_reverse($d, Duplicated, Active, Const, Active)]
        fn $name(x: &mut [f64], p: f64, $steps: usize) -> f64 {
            let dt = 0.05;
            let mut k = vec![0.0; x.len()];
            for _t in $($iter)* {
                for i in 0..x.len() {
                    k[i] = rhs(x, p, i);
                }
                for i in 0..x.len() {
                    x[i] += dt * k[i];
                }
            }
            x.iter().map(|v| v * v).sum()
        }
    };
}

euler!(euler_plain, d_euler_plain, steps, [0..steps]);
euler!(euler_e1, d_euler_e1, steps, [checkpoint(0..steps, Every(1))]);
euler!(euler_e3, d_euler_e3, steps, [checkpoint(0..steps, Every(3))]);
const FOUR: usize = 4;
euler!(euler_e4, d_euler_e4, steps, [cotan::checkpoint(0..steps, cotan::Every(FOUR))]);
euler!(euler_e100, d_euler_e100, steps, [checkpoint(0..steps, Every(100))]);
euler!(euler_b1, d_euler_b1, steps, [checkpoint(0..steps, Binomial(1))]);
euler!(euler_b2, d_euler_b2, steps, [checkpoint(0..steps, Binomial(2))]);
euler!(euler_b3, d_euler_b3, steps, [checkpoint(0..steps, Binomial(3))]);
euler!(euler_b40, d_euler_b40, steps, [checkpoint(0..steps, Binomial(40))]);

type EulerD = fn(&mut [f64], &mut [f64], f64, usize, f64) -> (f64, f64);

#[test]
fn euler_schedules_match_the_whole_record_and_finite_differences() {
    let schedules: [(&str, EulerD); 8] = [
        ("Every(1)", d_euler_e1),
        ("Every(3)", d_euler_e3),
        ("Every(4)", d_euler_e4),
        ("Every(100)", d_euler_e100),
        ("Binomial(1)", d_euler_b1),
        ("Binomial(2)", d_euler_b2),
        ("Binomial(3)", d_euler_b3),
        ("Binomial(40)", d_euler_b40),
    ];
    let x0 = [0.3, -0.5, 0.8, 1.1, -0.2];
    let p = 0.7;
    for steps in STEPS {
        let (mut xa, mut dxa) = (x0.to_vec(), vec![0.0; 5]);
        let (ya, dpa) = d_euler_plain(&mut xa, &mut dxa, p, steps, 1.0);
        let mut all = dxa.clone();
        all.push(dpa);
        let f = |v: &[f64]| {
            let mut x = v[..5].to_vec();
            euler_plain(&mut x, v[5], steps)
        };
        let mut at = x0.to_vec();
        at.push(p);
        assert_close(&format!("whole record, {steps} steps, against finite differences"), &all, &fd(&f, &at), 1e-6);
        for (name, d) in schedules {
            let (mut xb, mut dxb) = (x0.to_vec(), vec![0.0; 5]);
            let (yb, dpb) = d(&mut xb, &mut dxb, p, steps, 1.0);
            let what = format!("{name}, {steps} steps");
            assert_eq!(xa, xb, "{what}: the primal state after the call");
            assert_eq!(ya, yb, "{what}: the primal result");
            assert_close(&what, &dxb, &dxa, 1e-12);
            assert!(close(dpb, dpa, 1e-12), "{what}: dp {dpb} against {dpa}");
        }
    }
}

// ---- an `Active` scalar carried across iterations (a variable), and an accumulated sum.

macro_rules! scalar_ode {
    ($name:ident, $d:ident, $steps:ident, [$($iter:tt)*]) => {
        #[autodiff_reverse($d, Active, Active, Const, Active)]
        fn $name(y0: f64, p: f64, $steps: usize) -> f64 {
            let mut y = y0;
            let mut acc = 0.0;
            for t in $($iter)* {
                let h = 0.1 / (1.0 + t as f64);
                y = y + h * (p * y).sin() + h * y;
                acc += y * y * h;
            }
            acc + y
        }
    };
}

scalar_ode!(ode_plain, d_ode_plain, steps, [0..steps]);
scalar_ode!(ode_e2, d_ode_e2, steps, [checkpoint(0..steps, Every(2))]);
scalar_ode!(ode_e5, d_ode_e5, steps, [checkpoint(0..steps, Every(5))]);
scalar_ode!(ode_b2, d_ode_b2, steps, [checkpoint(0..steps, Binomial(2))]);
scalar_ode!(ode_b4, d_ode_b4, steps, [checkpoint(0..steps, Binomial(4))]);

#[test]
fn active_scalars_carried_across_iterations() {
    type D = fn(f64, f64, usize, f64) -> (f64, f64, f64);
    let schedules: [(&str, D); 4] =
        [("Every(2)", d_ode_e2), ("Every(5)", d_ode_e5), ("Binomial(2)", d_ode_b2), ("Binomial(4)", d_ode_b4)];
    for steps in STEPS {
        let (y, g0, g1) = d_ode_plain(0.4, 1.3, steps, 1.0);
        let f = |v: &[f64]| ode_plain(v[0], v[1], steps);
        assert_close(&format!("{steps} steps against finite differences"), &[g0, g1], &fd(&f, &[0.4, 1.3]), 1e-6);
        for (name, d) in schedules {
            let (yb, h0, h1) = d(0.4, 1.3, steps, 1.0);
            assert_eq!(y, yb);
            assert_close(&format!("{name}, {steps} steps"), &[h0, h1], &[g0, g1], 1e-12);
        }
    }
}

// ---- a Heun (RK2) step in a helper writing the state, branches, a nested loop in the body,
// ---- a local `Vec` state copied from a `Duplicated` input, an index range not from 0.

fn step(x: &mut [f64], k1: &mut [f64], dt: f64, p: f64) {
    let n = x.len();
    for i in 0..n {
        let r = x[(i + 1) % n];
        k1[i] = if x[i] > 0.0 { p * (r - x[i]) - x[i] * x[i] * 0.1 } else { p * r.sin() - 0.2 * x[i] };
    }
    for i in 0..n {
        let pred = x[i] + dt * k1[i];
        let k2 = if pred > 0.0 {
            p * (x[(i + 1) % n] + dt * k1[(i + 1) % n] - pred) - pred * pred * 0.1
        } else {
            p * pred.cos() - 0.2 * pred
        };
        x[i] += 0.5 * dt * (k1[i] + k2);
    }
}

macro_rules! heun {
    ($name:ident, $d:ident, $steps:ident, [$($iter:tt)*]) => {
        #[autodiff_reverse($d, Duplicated, Active, Const, Active)]
        fn $name(x0: &[f64], p: f64, $steps: usize) -> f64 {
            let mut x = x0.to_vec();
            let mut k1 = vec![0.0; x.len()];
            let mut energy = 0.0;
            for t in $($iter)* {
                step(&mut x, &mut k1, 0.05, p);
                if t % 3 == 0 {
                    for i in 0..x.len() {
                        energy += x[i] * x[i];
                    }
                } else {
                    energy *= 0.99;
                }
            }
            energy + x[0]
        }
    };
}

heun!(heun_plain, d_heun_plain, steps, [2..steps + 2]);
heun!(heun_e3, d_heun_e3, steps, [checkpoint(2..steps + 2, Every(3))]);
heun!(heun_e7, d_heun_e7, steps, [checkpoint(2..steps + 2, Every(7))]);
heun!(heun_b3, d_heun_b3, steps, [checkpoint(2..steps + 2, Binomial(3))]);

#[test]
fn helpers_branches_nested_loops_and_local_state() {
    type D = fn(&[f64], &mut [f64], f64, usize, f64) -> (f64, f64);
    let schedules: [(&str, D); 3] = [("Every(3)", d_heun_e3), ("Every(7)", d_heun_e7), ("Binomial(3)", d_heun_b3)];
    let x0 = [0.3, -0.5, 0.8, 1.1];
    for steps in STEPS {
        let mut dx = vec![0.0; 4];
        let (y, dp) = d_heun_plain(&x0, &mut dx, 0.9, steps, 1.0);
        let mut all = dx.clone();
        all.push(dp);
        let f = |v: &[f64]| heun_plain(&v[..4], v[4], steps);
        assert_close(
            &format!("{steps} steps against finite differences"),
            &all,
            &fd(&f, &[0.3, -0.5, 0.8, 1.1, 0.9]),
            1e-6,
        );
        for (name, d) in schedules {
            let mut db = vec![0.0; 4];
            let (yb, dpb) = d(&x0, &mut db, 0.9, steps, 1.0);
            assert_eq!(y, yb);
            let what = format!("{name}, {steps} steps");
            assert_close(&what, &db, &dx, 1e-12);
            assert!(close(dpb, dp, 1e-12), "{what}");
        }
    }
}

// ---- a `&mut f64` written by the loop and an `i32` index; forward mode ignores the mark.

macro_rules! cell {
    ($name:ident, $d:ident, $steps:ident, [$($iter:tt)*]) => {
        #[autodiff_reverse($d, Duplicated, Duplicated, Const)]
        fn $name(x: &mut [f64], e: &mut f64, $steps: i32) {
            for t in $($iter)* {
                let w = 1.0 + t as f64 * 0.01;
                *e += w * x[0] * x[1];
                let a = x[0];
                x[0] = x[0] + 0.1 * x[1];
                x[1] = x[1] - 0.1 * a.sin() * *e;
            }
        }
    };
}

cell!(cell_plain, d_cell_plain, steps, [-1..steps]);
cell!(cell_e2, d_cell_e2, steps, [checkpoint(-1..steps, Every(2))]);
cell!(cell_b2, d_cell_b2, steps, [checkpoint(-1..steps, Binomial(2))]);

#[autodiff_forward(f_cell_e2, Dual, Dual, Const)]
fn cell_fwd(x: &mut [f64], e: &mut f64, steps: i32) {
    for t in checkpoint(-1..steps, Every(2)) {
        let w = 1.0 + t as f64 * 0.01;
        *e += w * x[0] * x[1];
        let a = x[0];
        x[0] = x[0] + 0.1 * x[1];
        x[1] = x[1] - 0.1 * a.sin() * *e;
    }
}

#[test]
fn cells_integer_indices_and_forward_mode() {
    type D = fn(&mut [f64], &mut [f64], &mut f64, &mut f64, i32);
    for steps in [-3, -1, 0, 1, 4, 9] {
        let (mut x, mut dx, mut e, mut de) = (vec![0.4, 0.9], vec![1.0, -0.5], 0.2, 0.7);
        d_cell_plain(&mut x, &mut dx, &mut e, &mut de, steps);
        for (name, d) in [("Every(2)", d_cell_e2 as D), ("Binomial(2)", d_cell_b2 as D)] {
            let (mut xb, mut dxb, mut eb, mut deb) = (vec![0.4, 0.9], vec![1.0, -0.5], 0.2, 0.7);
            d(&mut xb, &mut dxb, &mut eb, &mut deb, steps);
            assert_eq!((&x, e), (&xb, eb), "{name}, {steps}: the primal state");
            assert_close(&format!("{name}, {steps}"), &[dxb[0], dxb[1], deb], &[dx[0], dx[1], de], 1e-12);
        }
        // The dot-product test against forward mode: <seed, J u> = <J^T seed, u>.
        let u = [0.3, -0.8, 0.5];
        let (mut xf, mut tx, mut ef, mut te) = (vec![0.4, 0.9], vec![u[0], u[1]], 0.2, u[2]);
        f_cell_e2(&mut xf, &mut tx, &mut ef, &mut te, steps);
        let jt = [1.0 * tx[0] - 0.5 * tx[1] + 0.7 * te];
        let (mut xr, mut dxr, mut er, mut der) = (vec![0.4, 0.9], vec![1.0, -0.5], 0.2, 0.7);
        d_cell_e2(&mut xr, &mut dxr, &mut er, &mut der, steps);
        let back = dxr[0] * u[0] + dxr[1] * u[1] + der * u[2];
        assert!(close(jt[0], back, 1e-12), "{steps}: {} against {back}", jt[0]);
    }
}

// ---- second order: forward over the checkpointed reverse (snapshots carry tangents).

macro_rules! chain {
    ($name:ident, $grad:ident, $hvp:ident, [$($iter:tt)*]) => {
        #[hvp($hvp)]
        #[autodiff_reverse($grad, Duplicated, Active)]
        fn $name(p: &[f64]) -> f64 {
            let mut x = vec![0.5, -0.3, 0.2];
            for t in $($iter)* {
                let a = x[0];
                x[0] = x[0] + 0.1 * (p[0] * x[1]).sin();
                x[1] = x[1] + 0.1 * (p[1] * a - x[2] * x[1]);
                x[2] = x[2] + 0.1 * p[2] * (a * a).cos() / (1.0 + t as f64);
            }
            x[0] * x[1] + x[2]
        }
    };
}

chain!(chain_plain, chain_grad, chain_hvp, [0..13]);
chain!(chain_e4, chain_e4_grad, chain_e4_hvp, [checkpoint(0..13, Every(4))]);
chain!(chain_b3, chain_b3_grad, chain_b3_hvp, [checkpoint(0..13, Binomial(3))]);

#[test]
fn hessian_vector_products_through_checkpointed_loops() {
    let p = [0.8, -1.1, 0.6];
    let v = [0.3, 0.5, -0.7];
    let (mut g, mut hv) = (vec![0.0; 3], vec![0.0; 3]);
    chain_hvp(&p, &v, &mut g, &mut hv);
    type H = fn(&[f64], &[f64], &mut [f64], &mut [f64]) -> f64;
    for (name, h) in [("Every(4)", chain_e4_hvp as H), ("Binomial(3)", chain_b3_hvp as H)] {
        let (mut gb, mut hvb) = (vec![0.0; 3], vec![0.0; 3]);
        h(&p, &v, &mut gb, &mut hvb);
        assert_close(&format!("{name}: gradient"), &gb, &g, 1e-12);
        assert_close(&format!("{name}: Hessian-vector product"), &hvb, &hv, 1e-12);
    }
    // And the Hessian-vector product against differences of the gradient.
    let grad = |q: &[f64]| {
        let mut g = vec![0.0; 3];
        chain_grad(q, &mut g, 1.0);
        g
    };
    let h = 1e-5;
    let plus: Vec<f64> = p.iter().zip(&v).map(|(a, b)| a + h * b).collect();
    let minus: Vec<f64> = p.iter().zip(&v).map(|(a, b)| a - h * b).collect();
    let want: Vec<f64> = grad(&plus).iter().zip(grad(&minus)).map(|(a, b)| (a - b) / (2.0 * h)).collect();
    assert_close("Hessian-vector product against differences", &hv, &want, 1e-6);
}

// ---- through the common harness: finite differences in both modes, the dot-product test,
// ---- the interpreter against the compiled code, and no allocation in steady state.

inplace_case!(
    harness_every,
    [[0.3, -0.5, 0.8], [1.0, 0.2, -0.4]],
    fn f(x: &mut [f64]) {
        for t in checkpoint(0..9, Every(2)) {
            let a = x[0];
            x[0] = x[0] + 0.1 * (x[1] * x[2]).sin();
            x[1] -= 0.1 * a * x[2];
            x[2] += 0.05 * (t as f64) * a;
        }
    }
);

slice_case!(
    harness_binomial,
    [[0.3, -0.5, 0.8], [1.0, 0.2, -0.4]],
    fn f(x: &[f64]) -> f64 {
        let mut s = x.to_vec();
        let mut e = 0.0;
        for _t in checkpoint(0..17, Binomial(3)) {
            let a = s[0];
            s[0] = s[0] + 0.1 * (s[1] * s[2]).sin();
            s[1] -= 0.1 * a * s[2];
            s[2] += 0.1 * a.cos();
            e += s[0] * s[1];
        }
        e
    }
);

// ---- the state in the fields of a `Duplicated` struct: a vector and a number.

#[derive(Clone, Debug, PartialEq, cotan::Differentiable)]
struct Sim {
    x: Vec<f64>,
    t: f64,
}

macro_rules! sim {
    ($name:ident, $d:ident, $steps:ident, [$($iter:tt)*]) => {
        #[autodiff_reverse($d, Duplicated, Active, Const, Active)]
        fn $name(s: &mut Sim, p: f64, $steps: usize) -> f64 {
            let mut trace = Vec::new();
            for _k in $($iter)* {
                let mut scratch = vec![0.0; s.x.len()];
                s.t += 0.1 * s.x[0].cos();
                for i in 0..s.x.len() {
                    scratch[i] = s.x[i] * s.t;
                }
                for i in 0..s.x.len() {
                    s.x[i] = s.x[i] + 0.1 * (p * scratch[i]).sin();
                }
            }
            trace.push(s.t);
            s.x[1] * s.t + trace[0]
        }
    };
}

sim!(sim_plain, d_sim_plain, steps, [0..steps]);
sim!(sim_e3, d_sim_e3, steps, [checkpoint(0..steps, Every(3))]);
sim!(sim_b2, d_sim_b2, steps, [checkpoint(0..steps, Binomial(2))]);

#[test]
fn state_in_struct_fields() {
    let s0 = Sim { x: vec![0.2, -0.4, 0.9], t: 0.3 };
    type D = fn(&mut Sim, &mut Sim, f64, usize, f64) -> (f64, f64);
    for steps in STEPS {
        let (mut s, mut ds) = (s0.clone(), Sim { x: vec![0.0; 3], t: 0.0 });
        let (y, dp) = d_sim_plain(&mut s, &mut ds, 1.4, steps, 1.0);
        let f = |v: &[f64]| sim_plain(&mut Sim { x: v[..3].to_vec(), t: v[3] }, v[4], steps);
        let mut all = ds.x.clone();
        all.extend([ds.t, dp]);
        assert_close(
            &format!("{steps} steps against finite differences"),
            &all,
            &fd(&f, &[0.2, -0.4, 0.9, 0.3, 1.4]),
            1e-6,
        );
        for (name, d) in [("Every(3)", d_sim_e3 as D), ("Binomial(2)", d_sim_b2 as D)] {
            let (mut sb, mut dsb) = (s0.clone(), Sim { x: vec![0.0; 3], t: 0.0 });
            let (yb, dpb) = d(&mut sb, &mut dsb, 1.4, steps, 1.0);
            assert_eq!((y, &s), (yb, &sb), "{name}, {steps}");
            let mut got = dsb.x.clone();
            got.extend([dsb.t, dpb]);
            assert_close(&format!("{name}, {steps}"), &got, &all, 1e-12);
        }
    }
}

// ---- what the body only reads but statements after the loop change: the recomputation
// ---- must see it as the loop saw it.

macro_rules! changed_after {
    ($name:ident, $d:ident, $steps:ident, [$($iter:tt)*]) => {
        #[autodiff_reverse($d, Duplicated, Duplicated, Const, Active)]
        fn $name(x: &mut [f64], w: &mut [f64], $steps: usize) -> f64 {
            let mut scale = 0.5;
            let mut coef = vec![0.3, -0.2];
            for t in $($iter)* {
                let a = x[0];
                x[0] = x[0] + 0.1 * (w[0] * x[1] * scale).sin() + coef[0] * 0.01;
                x[1] = x[1] + 0.1 * w[1] * a * coef[1];
            }
            scale = 3.0;
            coef[0] = 7.0;
            coef[1] = x[0];
            w[0] = x[1] * w[1];
            w[1] = 2.0 * w[0];
            x[0] * scale + coef[1] * w[0] + w[1]
        }
    };
}

changed_after!(after_plain, d_after_plain, steps, [0..steps]);
changed_after!(after_e2, d_after_e2, steps, [checkpoint(0..steps, Every(2))]);
changed_after!(after_b2, d_after_b2, steps, [checkpoint(0..steps, Binomial(2))]);

#[test]
fn memory_and_variables_changed_after_the_loop() {
    type D = fn(&mut [f64], &mut [f64], &mut [f64], &mut [f64], usize, f64) -> f64;
    for steps in STEPS {
        let run = |d: D| {
            let (mut x, mut dx, mut w, mut dw) = (vec![0.4, -0.7], vec![0.0; 2], vec![1.3, 0.6], vec![0.0; 2]);
            let y = d(&mut x, &mut dx, &mut w, &mut dw, steps, 1.0);
            (y, x, w, dx, dw)
        };
        let whole = run(d_after_plain);
        let f = |v: &[f64]| after_plain(&mut v[..2].to_vec(), &mut v[2..].to_vec(), steps);
        let mut all = whole.3.clone();
        all.extend(&whole.4);
        assert_close(&format!("{steps} steps against finite differences"), &all, &fd(&f, &[0.4, -0.7, 1.3, 0.6]), 1e-6);
        for (name, d) in [("Every(2)", d_after_e2 as D), ("Binomial(2)", d_after_b2 as D)] {
            let got = run(d);
            assert_eq!((got.0, &got.1, &got.2), (whole.0, &whole.1, &whole.2), "{name}, {steps}");
            assert_close(&format!("{name}, {steps}: dx"), &got.3, &whole.3, 1e-12);
            assert_close(&format!("{name}, {steps}: dw"), &got.4, &whole.4, 1e-12);
        }
    }
}

// ---- `continue`, a `while` loop and an early exit of an inner loop inside the body.

macro_rules! flow {
    ($name:ident, $d:ident, $steps:ident, [$($iter:tt)*]) => {
        #[autodiff_reverse($d, Duplicated, Const, Active)]
        fn $name(x: &mut [f64], $steps: usize) -> f64 {
            let mut total = 0.0;
            for t in $($iter)* {
                if t % 4 == 1 {
                    continue;
                }
                let mut k = 0;
                while k < 2 + t % 3 {
                    x[k % 3] = x[k % 3] * 0.9 + 0.1 * x[(k + 1) % 3].sin();
                    k += 1;
                }
                for i in 0..3 {
                    if x[i] > 2.0 {
                        break;
                    }
                    total += x[i] * x[i];
                }
            }
            total
        }
    };
}

flow!(flow_plain, d_flow_plain, steps, [0..steps]);
flow!(flow_e3, d_flow_e3, steps, [checkpoint(0..steps, Every(3))]);
flow!(flow_b3, d_flow_b3, steps, [checkpoint(0..steps, Binomial(3))]);

#[test]
fn continue_while_and_inner_exits() {
    type D = fn(&mut [f64], &mut [f64], usize, f64) -> f64;
    for steps in STEPS {
        let run = |d: D| {
            let (mut x, mut dx) = (vec![0.4, -0.7, 1.2], vec![0.0; 3]);
            let y = d(&mut x, &mut dx, steps, 1.0);
            (y, x, dx)
        };
        let whole = run(d_flow_plain);
        let f = |v: &[f64]| flow_plain(&mut v.to_vec(), steps);
        assert_close(&format!("{steps} steps against finite differences"), &whole.2, &fd(&f, &[0.4, -0.7, 1.2]), 1e-6);
        for (name, d) in [("Every(3)", d_flow_e3 as D), ("Binomial(3)", d_flow_b3 as D)] {
            let got = run(d);
            assert_eq!((got.0, &got.1), (whole.0, &whole.1), "{name}, {steps}");
            assert_close(&format!("{name}, {steps}"), &got.2, &whole.2, 1e-12);
        }
    }
}

/// The rewrite the error on a checkpointed loop after an early `return` suggests: the
/// early exit after the loop, which then runs zero times.
#[autodiff_reverse(d_exit_after, Active, Const, Active)]
fn exit_after(x0: f64, steps: usize) -> f64 {
    let mut x = x0;
    for _t in checkpoint(0..steps, Every(4)) {
        x = x + 0.1 * x.sin();
    }
    if steps == 0 {
        return x0;
    }
    x
}

#[autodiff_reverse(d_exit_after_whole, Active, Const, Active)]
fn exit_after_whole(x0: f64, steps: usize) -> f64 {
    let mut x = x0;
    for _t in 0..steps {
        x = x + 0.1 * x.sin();
    }
    if steps == 0 {
        return x0;
    }
    x
}

#[test]
fn early_exit_after_a_checkpointed_loop() {
    for steps in STEPS {
        let (v, d) = d_exit_after(0.7, steps, 1.0);
        let (w, e) = d_exit_after_whole(0.7, steps, 1.0);
        assert_eq!(v, exit_after(0.7, steps));
        assert!(close(v, w, 1e-12) && close(d, e, 1e-12), "{steps} steps: {d} against {e}");
        let want = fd(&|x| exit_after(x[0], steps), &[0.7]);
        assert!(close(d, want[0], 1e-6), "{steps} steps: {d} against {}", want[0]);
    }
}
