//! `cotan::check`, the library API users call from their own tests: it passes on correct
//! derivatives and names the argument and component of planted bugs.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

use cotan::check::{self, Check, Component, Failure, Mode};
use cotan::{autodiff_forward, autodiff_reverse, custom_derivative};

// The counting allocator makes `.no_allocations()` checkable in this binary.
#[global_allocator]
static A: check::CountingAllocator = check::CountingAllocator;

fn comp(arg: &str, index: Option<usize>) -> Component {
    Component { arg: arg.to_string(), index }
}

// ---- correct generated derivatives pass ----

#[autodiff_reverse(d_sum_sin, Duplicated, Active)]
#[autodiff_forward(t_sum_sin, Dual, Dual)]
fn sum_sin(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i].sin() * x[(i + 1) % x.len()];
    }
    s
}

#[test]
fn one_liners_pass_on_generated_derivatives() {
    let x = [0.1, -0.7, 1.3, 2.0];
    let report = check::gradient(sum_sin, d_sum_sin, &x).unwrap();
    assert_eq!(report.inner_products.len(), 1);
    assert_eq!(report.inner_products[0].0, Mode::Reverse);
    check::jvp(sum_sin, t_sum_sin, &x).unwrap();
    // The report prints as a table.
    let text = report.to_string();
    assert!(text.contains("cotan::check passed") && text.contains("x[4]"), "{text}");
}

#[autodiff_reverse(d_mixed, Duplicated, Active, Duplicated, Const, Active)]
#[autodiff_forward(t_mixed, Dual, Dual, Dual, Const, Dual)]
fn mixed(x: &[f64], y: f64, z: &[f64], n: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        s += (x[i] * y).exp() * z[i] + z[i] * z[i] / (1.0 + y * y);
    }
    s
}

#[test]
fn several_arguments_both_modes_and_no_allocations() {
    let (x, z) = ([0.1, 0.2, 0.3], [1.5, -0.5, 0.25]);
    let report = Check::new()
        .arg("x", &x)
        .scalar("y", 0.7)
        .arg("z", &z)
        .primal(|a| mixed(a.slice("x"), a.scalar("y"), a.slice("z"), 3))
        .reverse(|a, d, dret| {
            let [dx, dz] = d.slices_mut(["x", "z"]);
            let (v, dy) = d_mixed(a.slice("x"), dx, a.scalar("y"), a.slice("z"), dz, 3, dret);
            *d.scalar_mut("y") += dy;
            v
        })
        .forward(|a, t| mixed_fwd(a, t))
        .no_allocations()
        .run()
        .unwrap();
    assert!(report.dot_product.is_some());
    assert_eq!(report.inner_products.len(), 2);
    assert_eq!(report.allocations, vec![(Mode::Reverse, 0), (Mode::Forward, 0)]);
}

fn mixed_fwd(a: &check::Args, t: &check::Args) -> (f64, f64) {
    t_mixed(a.slice("x"), t.slice("x"), a.scalar("y"), t.scalar("y"), a.slice("z"), t.slice("z"), 3)
}

// A vector-valued function writing its results in place.
#[autodiff_reverse(d_rot, Duplicated, Active, Duplicated)]
#[autodiff_forward(t_rot, Dual, Dual, Dual)]
fn rot(x: &[f64], angle: f64, out: &mut [f64]) {
    let s = angle.sin();
    let c = angle.cos();
    out[0] = c * x[0] - s * x[1];
    out[1] = s * x[0] + c * x[1];
    out[2] = x[0] * x[1] * angle;
}

#[test]
fn in_place_vector_functions() {
    Check::new()
        .arg("x", &[0.3, -1.2])
        .scalar("angle", 0.4)
        .primal_into(3, |a, out| rot(a.slice("x"), a.scalar("angle"), out))
        .forward_into(|a, t, out, dout| {
            t_rot(a.slice("x"), t.slice("x"), a.scalar("angle"), t.scalar("angle"), out, dout)
        })
        .reverse_into(|a, d, out, dout| {
            let mut dx = [0.0; 2];
            let da = d_rot(a.slice("x"), &mut dx, a.scalar("angle"), out, dout);
            d.slice_mut("x")[0] += dx[0];
            d.slice_mut("x")[1] += dx[1];
            *d.scalar_mut("angle") += da;
        })
        .run()
        .unwrap();
}

// ---- planted bugs fail, naming the component ----

fn f3(x: &[f64]) -> f64 {
    x[0] * x[0] + 3.0 * x[1] + x[2].sin()
}

#[test]
fn a_sign_error_names_the_component() {
    let x = [0.5, 2.0, 1.0];
    // d/dx2 has the wrong sign.
    let wrong = |x: &[f64], dx: &mut [f64], dret: f64| {
        dx[0] += 2.0 * x[0] * dret;
        dx[1] += 3.0 * dret;
        dx[2] -= x[2].cos() * dret;
        f3(x)
    };
    let err = check::gradient(f3, wrong, &x).unwrap_err();
    let Failure::FiniteDifferences { mode, worst, worst_comparison, inner_product, .. } = &err else {
        panic!("expected a finite-difference failure, got {err}");
    };
    assert_eq!(*mode, Mode::Reverse);
    assert_eq!(*worst, comp("x", Some(2)));
    assert_eq!(worst_comparison.ad, -(1.0f64.cos()));
    assert!((worst_comparison.fd_estimate() - 1.0f64.cos()).abs() < 1e-9, "{err}");
    // Steps are relative to max(1, max |x_i|) = 2.
    assert_eq!(worst_comparison.steps, check::STEPS.map(|h| 2.0 * h).to_vec());
    assert_eq!(inner_product.steps.len(), 5);
    let text = err.to_string();
    assert!(text.contains("largest error at x[2]"), "{text}");
    assert!(text.contains("2e-2") && text.contains("2e-6"), "{text}");
    // `unwrap` panics with the same report.
    assert!(format!("{err:?}").contains("largest error at x[2]"));
}

#[custom_derivative(reverse = bad_rev)]
fn cube(x: f64) -> f64 {
    x * x * x
}
/// Wrong rule: 2x² instead of 3x².
fn bad_rev(x: f64, dret: f64) -> (f64, f64) {
    (x * x * x, 2.0 * x * x * dret)
}

#[autodiff_reverse(d_uses_cube, Duplicated, Active, Active)]
fn uses_cube(x: &[f64], y: f64) -> f64 {
    x[0] * y + cube(x[1]) + x[2] * x[0]
}

#[test]
fn a_wrong_custom_rule_is_caught() {
    let err = Check::new()
        .arg("x", &[0.3, 1.5, -0.4])
        .scalar("y", 2.0)
        .primal(|a| uses_cube(a.slice("x"), a.scalar("y")))
        .reverse(|a, d, dret| {
            let mut dx = [0.0; 3];
            let (v, dy) = d_uses_cube(a.slice("x"), &mut dx, a.scalar("y"), dret);
            for (g, e) in d.slice_mut("x").iter_mut().zip(dx) {
                *g += e;
            }
            *d.scalar_mut("y") += dy;
            v
        })
        .run()
        .unwrap_err();
    assert_eq!(err.component(), Some(&comp("x", Some(1))), "{err}");
    let Failure::FiniteDifferences { worst_comparison, .. } = &err else { panic!("{err}") };
    assert_eq!(worst_comparison.ad, 2.0 * 1.5 * 1.5);
    assert!((worst_comparison.fd_estimate() - 3.0 * 1.5 * 1.5).abs() < 1e-8, "{err}");
}

#[test]
fn a_wrong_scalar_gradient_names_the_scalar() {
    let err = Check::new()
        .arg("x", &[0.3, 1.5, -0.4])
        .scalar("y", 2.0)
        .primal(|a| a.slice("x")[0] * a.scalar("y"))
        .reverse(|a, d, dret| {
            d.slice_mut("x")[0] += a.scalar("y") * dret;
            *d.scalar_mut("y") += 0.5 * a.slice("x")[0] * dret; // should be x[0]
            a.slice("x")[0] * a.scalar("y")
        })
        .run()
        .unwrap_err();
    assert_eq!(err.component(), Some(&comp("y", None)), "{err}");
    assert!(err.to_string().contains("largest error at y:"), "{err}");
}

#[test]
fn an_overwriting_reverse_is_caught() {
    let x = [0.5, 2.0, 1.0];
    let overwrites = |x: &[f64], dx: &mut [f64], dret: f64| {
        dx[0] += 2.0 * x[0] * dret;
        dx[1] = 3.0 * dret; // `=` where `+=` is meant
        dx[2] += x[2].cos() * dret;
        f3(x)
    };
    let err = check::gradient(f3, overwrites, &x).unwrap_err();
    let Failure::NotAccumulated { component, first, second } = &err else { panic!("{err}") };
    assert_eq!(*component, comp("x", Some(1)));
    assert_eq!((*first, *second), (3.0, 3.0));
    assert!(err.to_string().contains("does not accumulate into the shadow of x[1]"), "{err}");
}

#[test]
fn forward_and_reverse_mismatch_is_caught_by_the_dot_product_test() {
    let x = [0.5, 2.0, 1.0];
    let rev = |a: &check::Args, d: &mut check::Args, dret: f64| {
        let x = a.slice("x");
        let dx = d.slice_mut("x");
        dx[0] += 2.0 * x[0] * dret;
        dx[1] += 3.0 * dret;
        dx[2] += x[2].cos() * dret;
        f3(x)
    };
    // The forward rule drops the tangent of x[0] by 1%.
    let fwd = |a: &check::Args, t: &check::Args| {
        let (x, t) = (a.slice("x"), t.slice("x"));
        (f3(x), 1.98 * x[0] * t[0] + 3.0 * t[1] + x[2].cos() * t[2])
    };
    let err = Check::new().arg("x", &x).primal(|a| f3(a.slice("x"))).reverse(rev).forward(fwd).run().unwrap_err();
    let Failure::DotProduct { worst, worst_forward, worst_reverse, .. } = &err else { panic!("{err}") };
    assert_eq!(*worst, comp("x", Some(0)));
    assert_eq!((*worst_forward, *worst_reverse), (0.99, 1.0));
    assert!(err.to_string().contains("largest difference at x[0]"), "{err}");
}

#[test]
fn a_wrong_primal_value_from_the_derivative_is_caught() {
    let err = check::gradient(
        f3,
        |x, dx, dret| {
            dx[0] += 2.0 * x[0] * dret;
            dx[1] += 3.0 * dret;
            dx[2] += x[2].cos() * dret;
            f3(x) + 1e-3
        },
        &[0.5, 2.0, 1.0],
    )
    .unwrap_err();
    assert!(matches!(err, Failure::PrimalValue { mode: Mode::Reverse, output: 0, .. }), "{err}");
}

#[test]
fn a_derivative_that_changes_captured_state_is_caught() {
    let scale = std::cell::Cell::new(1.0);
    let err = Check::new()
        .arg("x", &[0.5, 2.0])
        .primal(|a| scale.get() * a.slice("x")[0])
        .reverse(|a, d, dret| {
            let v = scale.get() * a.slice("x")[0];
            d.slice_mut("x")[0] += scale.get() * dret;
            if d.slice("x")[0] == 2.0 {
                scale.set(2.0); // after the accumulation check, as a buggy cache might
            }
            v
        })
        .run();
    match err {
        Err(Failure::PrimalChanged { output: 0, before, after }) => assert_eq!((before, after), (0.5, 1.0)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_allocating_derivative_fails_no_allocations() {
    let x = [0.5, 2.0, 1.0];
    let err = Check::new()
        .arg("x", &x)
        .primal(|a| f3(a.slice("x")))
        .reverse(|a, d, dret| {
            let x = a.slice("x").to_vec(); // allocates at every call
            let dx = d.slice_mut("x");
            dx[0] += 2.0 * x[0] * dret;
            dx[1] += 3.0 * dret;
            dx[2] += x[2].cos() * dret;
            f3(&x)
        })
        .no_allocations()
        .run()
        .unwrap_err();
    assert!(matches!(err, Failure::Allocations { mode: Mode::Reverse, count: 1 }), "{err}");
    // Generated derivatives of allocation-free functions pass.
    Check::new()
        .arg("x", &x)
        .primal(|a| sum_sin(a.slice("x")))
        .reverse(|a, d, dret| d_sum_sin(a.slice("x"), d.slice_mut("x"), dret))
        .forward(|a, t| t_sum_sin(a.slice("x"), t.slice("x")))
        .no_allocations()
        .run()
        .unwrap();
}

#[test]
fn a_wrong_forward_rule_of_a_vector_function_names_the_input() {
    let err = Check::new()
        .arg("x", &[0.3, -1.2])
        .scalar("angle", 0.4)
        .primal_into(3, |a, out| rot(a.slice("x"), a.scalar("angle"), out))
        .forward_into(|a, t, out, dout| {
            t_rot(a.slice("x"), t.slice("x"), a.scalar("angle"), t.scalar("angle"), out, dout);
            dout[2] += 0.1 * t.slice("x")[1]; // a planted error in ∂out[2]/∂x[1]
        })
        .run()
        .unwrap_err();
    assert!(matches!(err, Failure::FiniteDifferences { mode: Mode::Forward, .. }), "{err}");
    assert_eq!(err.component(), Some(&comp("x", Some(1))), "{err}");
}

#[test]
#[should_panic(expected = "no argument named `z` (arguments: x, y)")]
fn a_misspelt_argument_panics_with_the_names() {
    let _ = Check::new()
        .arg("x", &[1.0])
        .scalar("y", 2.0)
        .primal(|a| a.slice("z")[0])
        .reverse(|a, _, _| a.slice("x")[0])
        .run();
}
