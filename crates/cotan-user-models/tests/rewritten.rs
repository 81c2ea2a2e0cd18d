//! The rewritten versions of the failing models (src/rewritten.rs, not part of the
//! measurement): each primal equals the original model's (rtol 1e-12), gradients agree
//! with central finite differences (rtol 1e-6, or 1e-5 for the 100-step simulation),
//! forward agrees with reverse by the dot-product test.

mod common;
use common::*;
use cotan_user_models::mass_spring::{self, square_body, SimConfig};
use cotan_user_models::mlp::{self, synthetic_blobs, Activation, Mlp};
use cotan_user_models::posteriordb::{self, synthetic_counts, CountData};
use cotan_user_models::regression::{self, synthetic_classification, Dataset};
use cotan_user_models::{ode, rewritten::*};

#[test]
fn blr_log_posterior() {
    let data = Dataset::synthetic(20, &[1.0, -2.0, 0.5], 0.3, 1);
    let flat = FlatDataset { x: data.x.concat(), y: data.y.clone() };
    let beta = [0.8, -1.5, 0.2];
    let f = |b: &[f64]| blr_log_posterior_rw(b, &flat, 2.0, 0.5);
    assert_close_scalar("same model", f(&beta), regression::blr_log_posterior(&beta, &data, 2.0, 0.5), 1e-12, 0.0);
    let mut g = [0.0; 3];
    let value = blr_log_posterior_rw_grad(&beta, &mut g, &flat, 2.0, 0.5, 1.0);
    assert_same_value("blr", value, f(&beta));
    assert_close("blr vs fd", &g, &fd_gradient(f, &beta), 1e-6, 1e-6 * f(&beta).abs().max(1.0));
    let v = direction(3, 1);
    let (_, t) = blr_log_posterior_rw_tangent(&beta, &v, &flat, 2.0, 0.5);
    assert_dot_product("blr", &g, &v, t);
}

#[test]
fn blr_log_posterior_sigma() {
    let data = Dataset::synthetic(20, &[1.0, -2.0, 0.5], 0.3, 1);
    let x = data.x.concat();
    let point = [0.8, -1.5, 0.2, -0.7];
    let f = |p: &[f64]| blr_log_posterior_sigma_rw(&p[..3], p[3], &x, &data.y);
    let original = regression::blr_log_posterior_sigma(&point[..3], point[3], &data.x, &data.y);
    assert_close_scalar("same model", f(&point), original, 1e-12, 0.0);
    let mut g = vec![0.0; 3];
    let (value, dls) = blr_log_posterior_sigma_rw_grad(&point[..3], &mut g, point[3], &x, &data.y, 1.0);
    assert_same_value("blr sigma", value, f(&point));
    g.push(dls);
    assert_close("blr sigma vs fd", &g, &fd_gradient(f, &point), 1e-6, 1e-6 * f(&point).abs().max(1.0));
    let v = direction(4, 2);
    let (_, t) = blr_log_posterior_sigma_rw_tangent(&point[..3], &v[..3], point[3], v[3], &x, &data.y);
    assert_dot_product("blr sigma", &g, &v, t);
}

#[test]
fn logistic_nll() {
    let (rows, labels) = synthetic_classification(40, &[1.5, -1.0, 0.5], 0.2, 3);
    let x = rows.concat();
    let point = [1.0, -0.5, 0.3, 0.1];
    let f = |p: &[f64]| logistic_nll_rw(&p[..3], p[3], &x, &labels, 0.1);
    let original = regression::logistic_nll(&point[..3], point[3], &rows, &labels, 0.1);
    assert_close_scalar("same model", f(&point), original, 1e-12, 0.0);
    let mut g = vec![0.0; 3];
    let (value, db) = logistic_nll_rw_grad(&point[..3], &mut g, point[3], &x, &labels, 0.1, 1.0);
    assert_same_value("logistic", value, f(&point));
    g.push(db);
    assert_close("logistic vs fd", &g, &fd_gradient(f, &point), 1e-6, 1e-6);
    let v = direction(4, 3);
    let (_, t) = logistic_nll_rw_tangent(&point[..3], &v[..3], point[3], v[3], &x, &labels, 0.1);
    assert_dot_product("logistic", &g, &v, t);
}

fn flat_mlp(m: &Mlp) -> FlatMlp {
    FlatMlp {
        w1: m.w1.concat(),
        b1: m.b1.clone(),
        w2: m.w2.concat(),
        b2: m.b2.clone(),
        n_in: m.w1[0].len(),
        n_hidden: m.w1.len(),
        activation: m.activation,
    }
}

fn mlp_case(activation: Activation) {
    let model = Mlp::new(2, 5, 3, activation, 42);
    let (rows, labels) = synthetic_blobs(12, 7);
    let x = rows.concat();
    let shape = model.shape();
    let p0 = model.to_flat();
    let original = mlp::mlp_loss(&model, &rows, &labels);

    // Flat parameters.
    let f = |p: &[f64]| mlp_loss_flat_rw(p, shape, activation, &x, &labels);
    assert_close_scalar("same model (flat)", f(&p0), original, 1e-12, 0.0);
    let original_flat = mlp::mlp_loss_flat(&p0, shape, activation, &rows, &labels);
    assert_close_scalar("same model (flat original)", f(&p0), original_flat, 1e-12, 0.0);
    let mut g = vec![0.0; p0.len()];
    let value = mlp_loss_flat_rw_grad(&p0, &mut g, shape, activation, &x, &labels, 1.0);
    assert_same_value("mlp flat", value, f(&p0));
    assert_close("mlp flat vs fd", &g, &fd_gradient(f, &p0), 1e-6, 1e-7);
    let v = direction(p0.len(), 4);
    let (_, t) = mlp_loss_flat_rw_tangent(&p0, &v, shape, activation, &x, &labels);
    assert_dot_product("mlp flat", &g, &v, t);

    // The model struct, with a shadow struct (pre-filled: gradients must be added).
    let fs = |p: &[f64]| mlp_loss_rw(&flat_mlp(&Mlp::from_flat(p, shape, activation)), &x, &labels);
    assert_close_scalar("same model (struct)", fs(&p0), original, 1e-12, 0.0);
    let mut shadow = flat_mlp(&Mlp::from_flat(&vec![1.0; p0.len()], shape, activation));
    let value = mlp_loss_rw_grad(&flat_mlp(&model), &mut shadow, &x, &labels, 1.0);
    assert_same_value("mlp struct", value, original);
    let gs: Vec<f64> = Mlp::from_flat(
        &shadow.w1.iter().chain(&shadow.b1).chain(&shadow.w2).chain(&shadow.b2).map(|d| d - 1.0).collect::<Vec<_>>(),
        shape,
        activation,
    )
    .to_flat();
    assert_close("mlp struct vs flat", &gs, &g, 1e-12, 1e-14);
    let tangent = flat_mlp(&Mlp::from_flat(&v, shape, activation));
    let (_, t) = mlp_loss_rw_tangent(&flat_mlp(&model), &tangent, &x, &labels);
    assert_dot_product("mlp struct", &gs, &v, t);
}

#[test]
fn mlp_tanh() {
    mlp_case(Activation::Tanh);
}

#[test]
fn mlp_relu() {
    mlp_case(Activation::Relu);
}

#[test]
fn hierarchical_normal() {
    let groups =
        vec![vec![1.2, 0.8, 1.9], vec![-0.3, 0.1, 0.4, -0.8, 0.0], vec![2.5, 3.1], vec![0.9, 1.1, 1.4, 0.7, 1.0, 1.3]];
    let data = FlatGroupedData {
        values: groups.concat(),
        group: groups.iter().enumerate().flat_map(|(g, ys)| std::iter::repeat_n(g, ys.len())).collect(),
        n_groups: groups.len(),
    };
    let params = [0.9, -0.2, -0.5, 1.3, -0.1, 2.6, 1.1];
    let f = |p: &[f64]| hierarchical_normal_rw(p, &data);
    let original = posteriordb::hierarchical_normal(&params, &posteriordb::GroupedData { groups });
    assert_close_scalar("same model", f(&params), original, 1e-12, 0.0);
    let mut g = vec![0.0; params.len()];
    let value = hierarchical_normal_rw_grad(&params, &mut g, &data, 1.0);
    assert_same_value("hierarchical", value, original);
    assert_close("hierarchical vs fd", &g, &fd_gradient(f, &params), 1e-6, 1e-6 * original.abs().max(1.0));
    let v = direction(params.len(), 5);
    let (_, t) = hierarchical_normal_rw_tangent(&params, &v, &data);
    assert_dot_product("hierarchical", &g, &v, t);
}

#[test]
fn poisson_glm() {
    let data: CountData = synthetic_counts(30, &[0.5, 0.3, -0.2], 7);
    let flat = FlatCountData { x: data.x.concat(), counts: data.counts.clone(), exposure: data.exposure.clone() };
    let beta = [0.4, 0.2, -0.1];
    let f = |b: &[f64]| poisson_glm_rw(b, &flat);
    assert_close_scalar("same model", f(&beta), posteriordb::poisson_glm(&beta, &data), 1e-12, 0.0);
    let mut g = vec![0.0; 3];
    let value = poisson_glm_rw_grad(&beta, &mut g, &flat, 1.0);
    assert_same_value("poisson", value, f(&beta));
    assert_close("poisson vs fd", &g, &fd_gradient(f, &beta), 1e-6, 1e-6 * f(&beta).abs().max(1.0));
    let v = direction(3, 6);
    let (_, t) = poisson_glm_rw_tangent(&beta, &v, &flat);
    assert_dot_product("poisson", &g, &v, t);
}

#[test]
fn mass_spring() {
    let (particles, springs) = square_body([0.0, 1.0], 0.5, 80.0);
    let cfg = SimConfig::default();
    let body = SoaBody {
        mass: particles.iter().map(|p| p.mass).collect(),
        spring_a: springs.iter().map(|s| s.a).collect(),
        spring_b: springs.iter().map(|s| s.b).collect(),
        rest: springs.iter().map(|s| s.rest).collect(),
    };
    let k: Vec<f64> = springs.iter().map(|s| s.k).collect();
    let pos0: Vec<f64> = particles.iter().flat_map(|p| p.pos).collect();
    let vel0: Vec<f64> = particles.iter().flat_map(|p| p.vel).collect();
    let point: Vec<f64> = k.iter().chain(&vel0).copied().collect();
    let f = |p: &[f64]| mass_spring_rw(&p[..6], &p[6..], &pos0, &body, &cfg);

    let original = {
        let mut ps = particles.clone();
        for _ in 0..cfg.steps {
            mass_spring::step(&mut ps, &springs, &cfg);
        }
        let c = mass_spring::center_of_mass(&ps);
        ((c[0] - cfg.target[0]).powi(2) + (c[1] - cfg.target[1]).powi(2)).sqrt()
    };
    assert_close_scalar("same model", f(&point), original, 1e-12, 0.0);

    let mut dk = vec![0.0; 6];
    let mut dv = vec![0.0; 8];
    let value = mass_spring_rw_grad(&k, &mut dk, &vel0, &mut dv, &pos0, &body, &cfg, 1.0);
    assert_same_value("mass-spring", value, original);
    let g: Vec<f64> = dk.iter().chain(&dv).copied().collect();
    assert_close("mass-spring vs fd", &g, &fd_gradient(f, &point), 1e-5, 1e-8);
    let v = direction(point.len(), 7);
    let (_, t) = mass_spring_rw_tangent(&k, &v[..6], &vel0, &v[6..], &pos0, &body, &cfg);
    assert_dot_product("mass-spring", &g, &v, t);
}

#[test]
fn lotka_volterra() {
    let point = [1.1, 0.4, 0.1, 0.4, 10.0, 5.0];
    let target = [5.0, 3.0];
    let f = |p: &[f64]| lotka_volterra_rw(&p[..4], &p[4..], &target, 10.0, 200);
    let original = ode::lotka_volterra_ic_loss(&point[..4], &point[4..], &target, 200);
    assert_close_scalar("same model", f(&point), original, 1e-12, 0.0);
    let mut dp = vec![0.0; 4];
    let mut dy = vec![0.0; 2];
    let value = lotka_volterra_rw_grad(&point[..4], &mut dp, &point[4..], &mut dy, &target, 10.0, 200, 1.0);
    assert_same_value("lotka-volterra", value, original);
    let g: Vec<f64> = dp.iter().chain(&dy).copied().collect();
    assert_close("lotka-volterra vs fd", &g, &fd_gradient(f, &point), 1e-6, 1e-8);
    let v = direction(6, 8);
    let (_, t) = lotka_volterra_rw_tangent(&point[..4], &v[..4], &point[4..], &v[4..], &target, 10.0, 200);
    assert_dot_product("lotka-volterra", &g, &v, t);
}

#[test]
fn pendulum() {
    let point = [9.81, 0.3, 1.0];
    let target = [0.1, -0.2];
    let f = |p: &[f64]| pendulum_rw(p[0], p[1], p[2], target);
    let original = ode::pendulum_loss(point[0], point[1], point[2], target);
    assert_close_scalar("same model", f(&point), original, 1e-12, 0.0);
    let (value, a, b, c) = pendulum_rw_grad(point[0], point[1], point[2], target, 1.0);
    assert_same_value("pendulum", value, original);
    let g = [a, b, c];
    assert_close("pendulum vs fd", &g, &fd_gradient(f, &point), 1e-6, 1e-8);
    let v = direction(3, 9);
    let (_, t) = pendulum_rw_tangent(point[0], v[0], point[1], v[1], point[2], v[2], target);
    assert_dot_product("pendulum", &g, &v, t);
}
