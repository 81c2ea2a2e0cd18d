//! RK4-integrated ODEs: gradients against finite differences (rtol 1e-6, atol 1e-8),
//! forward against reverse by the dot-product test.

mod common;
use common::*;
use cotan_user_models::ode::*;

const LV_PARAMS: [f64; 4] = [1.1, 0.4, 0.1, 0.4];
const LV_Y0: [f64; 2] = [10.0, 5.0];
const LV_TARGET: [f64; 2] = [5.0, 3.0];

#[test]
fn lotka_volterra_parameter_gradient() {
    let (t_end, steps) = (10.0, 200);
    let f = |p: &[f64]| lotka_volterra_loss(p, &LV_Y0, &LV_TARGET, t_end, steps);
    let mut g = vec![0.0; 4];
    let value = lotka_volterra_loss_grad(&LV_PARAMS, &mut g, &LV_Y0, &LV_TARGET, t_end, steps, 1.0);
    assert_same_value("lotka-volterra", value, f(&LV_PARAMS));
    assert_close("lotka-volterra vs fd", &g, &fd_gradient(f, &LV_PARAMS), 1e-6, 1e-8);

    let v = direction(4, 41);
    let (value, t) = lotka_volterra_loss_tangent(&LV_PARAMS, &v, &LV_Y0, &LV_TARGET, t_end, steps);
    assert_same_value("lotka-volterra forward", value, f(&LV_PARAMS));
    assert_dot_product("lotka-volterra", &g, &v, t);
}

#[test]
fn lotka_volterra_initial_condition_gradient() {
    let steps = 200;
    let f = |p: &[f64]| lotka_volterra_ic_loss(&p[..4], &p[4..], &LV_TARGET, steps);
    let point: Vec<f64> = LV_PARAMS.iter().chain(&LV_Y0).copied().collect();
    let mut dp = vec![0.0; 4];
    let mut dy0 = vec![0.0; 2];
    let value = lotka_volterra_ic_loss_grad(&LV_PARAMS, &mut dp, &LV_Y0, &mut dy0, &LV_TARGET, steps, 1.0);
    assert_same_value("lotka-volterra ic", value, f(&point));
    let g: Vec<f64> = dp.iter().chain(&dy0).copied().collect();
    assert_close("lotka-volterra ic vs fd", &g, &fd_gradient(f, &point), 1e-6, 1e-8);

    let v = direction(6, 42);
    let (value, t) = lotka_volterra_ic_loss_tangent(&LV_PARAMS, &v[..4], &LV_Y0, &v[4..], &LV_TARGET, steps);
    assert_same_value("lotka-volterra ic forward", value, f(&point));
    assert_dot_product("lotka-volterra ic", &g, &v, t);
}

#[test]
fn pendulum_gradient() {
    let (g_over_l, damping, theta0) = (9.81, 0.3, 1.0);
    let target = [0.1, -0.2];
    let f = |p: &[f64]| pendulum_loss(p[0], p[1], p[2], target);
    let point = [g_over_l, damping, theta0];

    let (value, d_g, d_c, d_theta0) = pendulum_loss_grad(g_over_l, damping, theta0, target, 1.0);
    assert_same_value("pendulum", value, f(&point));
    let g = [d_g, d_c, d_theta0];
    assert_close("pendulum vs fd", &g, &fd_gradient(f, &point), 1e-6, 1e-8);

    let v = direction(3, 43);
    let (value, t) = pendulum_loss_tangent(g_over_l, v[0], damping, v[1], theta0, v[2], target);
    assert_same_value("pendulum forward", value, f(&point));
    assert_dot_product("pendulum", &g, &v, t);
}
