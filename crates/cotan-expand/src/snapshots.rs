//! Snapshot tests of generated code: it must stay readable.

use super::{expand_to_string, Mode};

fn show(mode: Mode, attr: &str, func: &str) -> String {
    expand_to_string(mode, attr, func)
}

#[test]
fn rosenbrock_reverse() {
    insta::assert_snapshot!(show(
        Mode::Reverse,
        "d_rosenbrock, Active, Active, Active",
        "fn rosenbrock(x: f64, y: f64) -> f64 { (1.0 - x).powi(2) + 100.0 * (y - x.powi(2)).powi(2) }"
    ));
}

#[test]
fn control_flow_reverse() {
    insta::assert_snapshot!(show(
        Mode::Reverse,
        "d_control_flow, Duplicated, Active",
        "fn control_flow(x: &[f64]) -> f64 {
            let mut s = 0.0;
            for i in 0..x.len() {
                if x[i] > 0.0 { s += x[i].sin(); } else { s += x[i].cos(); }
            }
            s
        }"
    ));
}

#[test]
fn carry_reverse() {
    insta::assert_snapshot!(show(
        Mode::Reverse,
        "d_carry, Duplicated, Active, Active",
        "fn carry(x: &[f64], v0: f64) -> f64 {
            let mut v = v0;
            for i in 0..x.len() {
                v = (v * x[i]).sin() + 0.5 * v;
            }
            v * v
        }"
    ));
}

#[test]
fn inplace_reverse() {
    insta::assert_snapshot!(show(
        Mode::Reverse,
        "d_inplace, Duplicated, Active",
        "fn inplace(x: &mut [f64]) -> f64 {
            for i in 0..x.len() {
                x[i] = x[i].sin() * x[i];
            }
            x[x.len() - 1]
        }"
    ));
}

#[test]
fn newton_reverse() {
    insta::assert_snapshot!(show(
        Mode::Reverse,
        "d_newton, Active, Active",
        "fn newton(a: f64) -> f64 {
            let mut y = a.max(1.0);
            while (y * y - a).abs() > 1e-15 * a {
                y = 0.5 * (y + a / y);
            }
            y
        }"
    ));
}

#[test]
fn carry_forward() {
    insta::assert_snapshot!(show(
        Mode::Forward,
        "t_carry, Dual, Dual, Dual",
        "fn carry(x: &[f64], v0: f64) -> f64 {
            let mut v = v0;
            for i in 0..x.len() {
                v = (v * x[i]).sin() + 0.5 * v;
            }
            v * v
        }"
    ));
}

#[test]
fn repeated_product_reverse() {
    insta::assert_snapshot!(show(
        Mode::Reverse,
        "d_large, Active, Active, Active",
        "fn large(x1: f64, x2: f64) -> f64 {
            let mut p = x1;
            for _ in 0..400 { p = p * x2; }
            p
        }"
    ));
}

#[test]
fn zip_map_sum_is_an_index_loop() {
    insta::assert_snapshot!(show(
        Mode::Reverse,
        "d_dot, Duplicated, Duplicated, Active",
        "fn dot(x: &[f64], y: &[f64]) -> f64 { x.iter().zip(y).map(|(a, b)| a * b).sum::<f64>() }"
    ));
}

#[test]
fn pointer_loop_reverse() {
    insta::assert_snapshot!(show(
        Mode::Reverse,
        "d_scale, Duplicated, Duplicated, Const",
        "unsafe fn scale(x: *const f64, y: *mut f64, n: usize) {
            for i in 0..n {
                *y.add(i) = (*x.add(i)).sin() * *x;
            }
        }"
    ));
}

#[test]
fn checkpoint_every_reverse() {
    insta::assert_snapshot!(show(
        Mode::Reverse,
        "d_integrate, Duplicated, Active, Const, Active",
        "fn integrate(x: &mut [f64], p: f64, steps: usize) -> f64 {
            let mut e = 0.0;
            for _t in cotan::checkpoint(0..steps, cotan::Every(100)) {
                for i in 0..x.len() {
                    x[i] = x[i] + 0.01 * (p * x[i]).sin();
                }
                e += x[0] * x[0];
            }
            e
        }"
    ));
}

#[test]
fn checkpoint_binomial_reverse() {
    insta::assert_snapshot!(show(
        Mode::Reverse,
        "d_integrate, Duplicated, Active, Const, Active",
        "fn integrate(x: &mut [f64], p: f64, steps: usize) -> f64 {
            for _t in cotan::checkpoint(0..steps, cotan::Binomial(20)) {
                for i in 0..x.len() {
                    x[i] = x[i] + 0.01 * (p * x[i]).sin();
                }
            }
            x[0]
        }"
    ));
}

const KERNEL: &str = "#[cotan::kernel]
fn spread(x: &[f64], y: &mut [f64], z: &mut [f64]) -> f64 {
    let n = x.len();
    for i in cotan::par(0..n) {
        if i % 4 == 3 {
            continue;
        }
        let w = (0.5 * x[i]).exp();
        y[(i * 7) % n] += w;
        let mut s = 0.0;
        for k in 0..i % 5 {
            s += x[(i + k) % n].sin();
        }
        z[i] = s * w;
    }
    let mut t = 0.0;
    for i in 0..n {
        t += y[i] * z[i];
    }
    t
}";

#[test]
fn kernel_primal() {
    let func: syn::ItemFn = syn::parse_str(KERNEL).unwrap();
    let out = crate::kernel(proc_macro2::TokenStream::new(), quote::ToTokens::to_token_stream(&func));
    insta::assert_snapshot!(prettyplease::unparse(&syn::parse2(out).unwrap()));
}

#[test]
fn kernel_forward() {
    insta::assert_snapshot!(show(Mode::Forward, "f_spread, Dual, Dual, Dual, Dual", KERNEL));
}

#[test]
fn kernel_reverse() {
    insta::assert_snapshot!(show(Mode::Reverse, "d_spread, Duplicated, Duplicated, Duplicated, Active", KERNEL));
}
