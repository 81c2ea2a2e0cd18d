//! Regression models: gradients against finite differences (rtol 1e-6, atol 1e-6 times
//! max(1, |f|)) and, for the Gaussian model, against the closed form; forward against
//! reverse by the dot-product test.

#![cfg_attr(not(feature = "pending"), allow(unused))]

mod common;
use common::*;
use cotan_user_models::dot;
use cotan_user_models::regression::*;

fn data() -> Dataset {
    Dataset::synthetic(20, &[1.0, -2.0, 0.5], 0.3, 1)
}

#[test]
fn blr_log_posterior_gradient() {
    let data = data();
    let beta = [0.8, -1.5, 0.2];
    let (prior_sd, noise_sd) = (2.0, 0.5);
    let f = |b: &[f64]| blr_log_posterior(b, &data, prior_sd, noise_sd);

    let mut g = vec![0.0; 3];
    let value = blr_log_posterior_grad(&beta, &mut g, &data, prior_sd, noise_sd, 1.0);
    assert_same_value("blr", value, f(&beta));
    let scale = f(&beta).abs().max(1.0);
    assert_close("blr vs fd", &g, &fd_gradient(f, &beta), 1e-6, 1e-6 * scale);

    // Closed form: -beta / prior_sd² + X^T (y - X beta) / noise_sd².
    let mut exact: Vec<f64> = beta.iter().map(|b| -b / prior_sd.powi(2)).collect();
    for (xi, yi) in data.x.iter().zip(&data.y) {
        let r = (yi - dot(xi, &beta)) / noise_sd.powi(2);
        for (e, x) in exact.iter_mut().zip(xi) {
            *e += r * x;
        }
    }
    assert_close("blr vs closed form", &g, &exact, 1e-12, 1e-12);

    let v = direction(3, 11);
    let (value, t) = blr_log_posterior_tangent(&beta, &v, &data, prior_sd, noise_sd);
    assert_same_value("blr forward", value, f(&beta));
    assert_dot_product("blr", &g, &v, t);
}

#[test]
fn blr_log_posterior_sigma_gradient() {
    let data = data();
    let beta = [0.8, -1.5, 0.2];
    let log_sigma = -0.7;
    let f = |p: &[f64]| blr_log_posterior_sigma(&p[..3], p[3], &data.x, &data.y);
    let point = [beta[0], beta[1], beta[2], log_sigma];

    let mut g = vec![0.0; 3];
    let (value, d_log_sigma) = blr_log_posterior_sigma_grad(&beta, &mut g, log_sigma, &data.x, &data.y, 1.0);
    assert_same_value("blr sigma", value, f(&point));
    let mut ad = g.clone();
    ad.push(d_log_sigma);
    let scale = f(&point).abs().max(1.0);
    assert_close("blr sigma vs fd", &ad, &fd_gradient(f, &point), 1e-6, 1e-6 * scale);

    let v = direction(4, 12);
    let (value, t) = blr_log_posterior_sigma_tangent(&beta, &v[..3], log_sigma, v[3], &data.x, &data.y);
    assert_same_value("blr sigma forward", value, f(&point));
    assert_dot_product("blr sigma", &ad, &v, t);
}

#[test]
fn logistic_nll_gradient() {
    let (x, labels) = synthetic_classification(40, &[1.5, -1.0, 0.5], 0.2, 3);
    let w = [1.0, -0.5, 0.3];
    let bias = 0.1;
    let lambda = 0.1;
    let f = |p: &[f64]| logistic_nll(&p[..3], p[3], &x, &labels, lambda);
    let point = [w[0], w[1], w[2], bias];

    let mut g = vec![0.0; 3];
    let (value, d_bias) = logistic_nll_grad(&w, &mut g, bias, &x, &labels, lambda, 1.0);
    assert_same_value("logistic", value, f(&point));
    let mut ad = g.clone();
    ad.push(d_bias);
    assert_close("logistic vs fd", &ad, &fd_gradient(f, &point), 1e-6, 1e-6);

    // Closed form: sum_i (sigmoid(z_i) - y_i) [x_i, 1] + lambda [w, 0].
    let mut exact = vec![lambda * w[0], lambda * w[1], lambda * w[2], 0.0];
    for (xi, &yi) in x.iter().zip(&labels) {
        let z = dot(&w, xi) + bias;
        let r = 1.0 / (1.0 + (-z).exp()) - if yi { 1.0 } else { 0.0 };
        for j in 0..3 {
            exact[j] += r * xi[j];
        }
        exact[3] += r;
    }
    assert_close("logistic vs closed form", &ad, &exact, 1e-12, 1e-12);

    let v = direction(4, 13);
    let (value, t) = logistic_nll_tangent(&w, &v[..3], bias, v[3], &x, &labels, lambda);
    assert_same_value("logistic forward", value, f(&point));
    assert_dot_product("logistic", &ad, &v, t);
}
