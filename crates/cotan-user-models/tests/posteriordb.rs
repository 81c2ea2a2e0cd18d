//! posteriordb-style log densities: gradients against finite differences (rtol 1e-6,
//! atol 1e-6 times max(1, |f|)), forward against reverse by the dot-product test.

#![cfg_attr(not(feature = "pending"), allow(unused))]

mod common;
use common::*;
use cotan_user_models::posteriordb::*;

type Grad<D> = fn(&[f64], &mut [f64], &D, f64) -> f64;
type Tangent<D> = fn(&[f64], &[f64], &D) -> (f64, f64);

fn check<D>(name: &str, f: fn(&[f64], &D) -> f64, grad: Grad<D>, tangent: Tangent<D>, x: &[f64], data: &D) {
    let value_ref = f(x, data);
    let mut g = vec![0.0; x.len()];
    let value = grad(x, &mut g, data, 1.0);
    assert_same_value(name, value, value_ref);
    let scale = value_ref.abs().max(1.0);
    assert_close(name, &g, &fd_gradient(|p| f(p, data), x), 1e-6, 1e-6 * scale);

    let v = direction(x.len(), 21);
    let (value, t) = tangent(x, &v, data);
    assert_same_value(name, value, value_ref);
    assert_dot_product(name, &g, &v, t);
}

#[test]
fn eight_schools_gradient() {
    let data = EightSchools::data();
    let mut params = vec![4.4, 1.2];
    params.extend(direction(8, 3));
    check("eight schools", eight_schools_noncentered, eight_schools_grad, eight_schools_tangent, &params, &data);
}

#[test]
fn hierarchical_normal_gradient() {
    let data = GroupedData {
        groups: vec![
            vec![1.2, 0.8, 1.9],
            vec![-0.3, 0.1, 0.4, -0.8, 0.0],
            vec![2.5, 3.1],
            vec![0.9, 1.1, 1.4, 0.7, 1.0, 1.3],
        ],
    };
    let params = [0.9, -0.2, -0.5, 1.3, -0.1, 2.6, 1.1];
    check(
        "hierarchical normal",
        hierarchical_normal,
        hierarchical_normal_grad,
        hierarchical_normal_tangent,
        &params,
        &data,
    );
}

#[test]
fn poisson_glm_gradient() {
    let data = synthetic_counts(30, &[0.5, 0.3, -0.2], 7);
    let beta = [0.4, 0.2, -0.1];
    check("poisson glm", poisson_glm, poisson_glm_grad, poisson_glm_tangent, &beta, &data);

    // Closed form: -beta / 2.5² + sum_i (k_i - mu_i) [1, x_i].
    let mut exact: Vec<f64> = beta.iter().map(|b| -b / 6.25).collect();
    for ((xi, &k), &e) in data.x.iter().zip(&data.counts).zip(&data.exposure) {
        let eta = beta[0] + beta[1] * xi[0] + beta[2] * xi[1] + e.ln();
        let r = k as f64 - eta.exp();
        exact[0] += r;
        exact[1] += r * xi[0];
        exact[2] += r * xi[1];
    }
    let mut g = vec![0.0; 3];
    poisson_glm_grad(&beta, &mut g, &data, 1.0);
    assert_close("poisson glm closed form", &g, &exact, 1e-12, 1e-12);
}
