//! Test functions: gradients against finite differences (rtol 1e-6, atol 1e-6) and
//! closed forms where simple, forward against reverse by the dot-product test.

mod common;
use common::*;
use cotan_user_models::test_functions::*;

type Grad = fn(&[f64], &mut [f64], f64) -> f64;
type Tangent = fn(&[f64], &[f64]) -> (f64, f64);

fn check(name: &str, f: fn(&[f64]) -> f64, grad: Grad, tangent: Tangent, x: &[f64]) {
    let mut g = vec![0.0; x.len()];
    let value = grad(x, &mut g, 1.0);
    assert_same_value(name, value, f(x));
    assert_close(name, &g, &fd_gradient(f, x), 1e-6, 1e-6);

    // Shadows accumulate, and the seed scales.
    let mut g2 = vec![1.0; x.len()];
    grad(x, &mut g2, 2.0);
    let expected: Vec<f64> = g.iter().map(|gi| 1.0 + 2.0 * gi).collect();
    assert_close(&format!("{name} (accumulate, dret = 2)"), &g2, &expected, 1e-12, 1e-12);

    for seed in 0..3 {
        let v = direction(x.len(), seed);
        let (value, t) = tangent(x, &v);
        assert_same_value(name, value, f(x));
        assert_dot_product(name, &g, &v, t);
    }
}

const X5: [f64; 5] = [0.3, -1.2, 0.7, 1.9, -0.4];

#[test]
fn rosenbrock_gradient() {
    check("rosenbrock", rosenbrock, rosenbrock_grad, rosenbrock_tangent, &X5);
    // Closed form in 2-d.
    let (x, y) = (-1.2, 1.0);
    let mut g = [0.0; 2];
    rosenbrock_grad(&[x, y], &mut g, 1.0);
    let exact = [-400.0 * x * (y - x * x) - 2.0 * (1.0 - x), 200.0 * (y - x * x)];
    assert_close("rosenbrock 2-d closed form", &g, &exact, 1e-14, 1e-12);
}

#[test]
fn rastrigin_gradient() {
    check("rastrigin", rastrigin, rastrigin_grad, rastrigin_tangent, &X5);
}

#[test]
fn ackley_gradient() {
    check("ackley", ackley, ackley_grad, ackley_tangent, &X5);
}

#[test]
fn himmelblau_gradient() {
    let p = [1.3, -0.8];
    check("himmelblau", himmelblau, himmelblau_grad, himmelblau_tangent, &p);
    let (x, y) = (p[0], p[1]);
    let exact = [
        4.0 * x * (x * x + y - 11.0) + 2.0 * (x + y * y - 7.0),
        2.0 * (x * x + y - 11.0) + 4.0 * y * (x + y * y - 7.0),
    ];
    let mut g = [0.0; 2];
    himmelblau_grad(&p, &mut g, 1.0);
    assert_close("himmelblau closed form", &g, &exact, 1e-14, 1e-12);
}

#[test]
fn styblinski_tang_gradient() {
    check("styblinski_tang", styblinski_tang, styblinski_tang_grad, styblinski_tang_tangent, &X5);
    let mut g = [0.0; 5];
    styblinski_tang_grad(&X5, &mut g, 1.0);
    let exact: Vec<f64> = X5.iter().map(|x| (4.0 * x * x * x - 32.0 * x + 5.0) / 2.0).collect();
    assert_close("styblinski_tang closed form", &g, &exact, 1e-14, 1e-12);
}

#[test]
fn booth_gradient() {
    let p = [0.5, 2.5];
    check("booth", booth, booth_grad, booth_tangent, &p);
    let (x, y) = (p[0], p[1]);
    let exact =
        [2.0 * (x + 2.0 * y - 7.0) + 4.0 * (2.0 * x + y - 5.0), 4.0 * (x + 2.0 * y - 7.0) + 2.0 * (2.0 * x + y - 5.0)];
    let mut g = [0.0; 2];
    booth_grad(&p, &mut g, 1.0);
    assert_close("booth closed form", &g, &exact, 1e-14, 1e-12);
}
