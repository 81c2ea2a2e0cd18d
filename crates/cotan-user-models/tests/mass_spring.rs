//! Mass-spring simulation (100 steps, ground contact active): gradients against
//! finite differences (rtol 1e-5, atol 1e-8), forward against reverse by the
//! dot-product test.

#![cfg_attr(not(feature = "pending"), allow(unused))]

mod common;
use common::*;
use cotan_user_models::mass_spring::*;

fn setup() -> (Vec<Particle>, Vec<Spring>, SimConfig) {
    let (particles, springs) = square_body([0.0, 1.0], 0.5, 80.0);
    (particles, springs, SimConfig::default())
}

#[test]
fn scenario_touches_the_ground() {
    let (mut particles, springs, cfg) = setup();
    let mut lowest = f64::INFINITY;
    for _ in 0..cfg.steps {
        step(&mut particles, &springs, &cfg);
        lowest = particles.iter().map(|p| p.pos[1]).fold(lowest, f64::min);
    }
    assert!(lowest < cfg.ground, "the body should reach the ground ({lowest})");
}

#[test]
fn stiffness_gradient() {
    let (particles, springs, cfg) = setup();
    let k: Vec<f64> = springs.iter().map(|s| s.k).collect();
    let f = |k: &[f64]| loss_wrt_stiffness(k, &springs, &particles, &cfg);

    let mut g = vec![0.0; k.len()];
    let value = loss_wrt_stiffness_grad(&k, &mut g, &springs, &particles, &cfg, 1.0);
    assert_same_value("stiffness", value, f(&k));
    assert_close("stiffness vs fd", &g, &fd_gradient(f, &k), 1e-5, 1e-8);

    let v = direction(k.len(), 31);
    let (value, t) = loss_wrt_stiffness_tangent(&k, &v, &springs, &particles, &cfg);
    assert_same_value("stiffness forward", value, f(&k));
    assert_dot_product("stiffness", &g, &v, t);
}

#[test]
fn springs_gradient() {
    let (particles, springs, cfg) = setup();
    // Parameters of the springs as a flat vector [k_0, rest_0, k_1, rest_1, ..].
    let flat: Vec<f64> = springs.iter().flat_map(|s| [s.k, s.rest]).collect();
    let rebuild = |p: &[f64]| -> Vec<Spring> {
        springs.iter().zip(p.chunks(2)).map(|(s, kr)| Spring { k: kr[0], rest: kr[1], ..*s }).collect()
    };
    let f = |p: &[f64]| loss_wrt_springs(&rebuild(p), &particles, &cfg);

    let mut shadow: Vec<Spring> = springs.iter().map(|s| Spring { k: 0.0, rest: 0.0, ..*s }).collect();
    let value = loss_wrt_springs_grad(&springs, &mut shadow, &particles, &cfg, 1.0);
    assert_same_value("springs", value, f(&flat));
    let g: Vec<f64> = shadow.iter().flat_map(|s| [s.k, s.rest]).collect();
    assert_close("springs vs fd", &g, &fd_gradient(f, &flat), 1e-5, 1e-8);

    let v = direction(flat.len(), 32);
    let tangent: Vec<Spring> =
        springs.iter().zip(v.chunks(2)).map(|(s, d)| Spring { k: d[0], rest: d[1], ..*s }).collect();
    let (value, t) = loss_wrt_springs_tangent(&springs, &tangent, &particles, &cfg);
    assert_same_value("springs forward", value, f(&flat));
    assert_dot_product("springs", &g, &v, t);
}

#[test]
fn initial_velocity_gradient() {
    let (particles, springs, cfg) = setup();
    let vels: Vec<[f64; 2]> = particles.iter().map(|p| p.vel).collect();
    let flat: Vec<f64> = vels.iter().flatten().copied().collect();
    let f = |p: &[f64]| {
        let v: Vec<[f64; 2]> = p.chunks(2).map(|c| [c[0], c[1]]).collect();
        loss_wrt_initial_velocity(&v, &particles, &springs, &cfg)
    };

    let mut dv = vec![[0.0; 2]; vels.len()];
    let value = loss_wrt_initial_velocity_grad(&vels, &mut dv, &particles, &springs, &cfg, 1.0);
    assert_same_value("initial velocity", value, f(&flat));
    let g: Vec<f64> = dv.iter().flatten().copied().collect();
    assert_close("initial velocity vs fd", &g, &fd_gradient(f, &flat), 1e-5, 1e-8);

    let v = direction(flat.len(), 33);
    let tv: Vec<[f64; 2]> = v.chunks(2).map(|c| [c[0], c[1]]).collect();
    let (value, t) = loss_wrt_initial_velocity_tangent(&vels, &tv, &particles, &springs, &cfg);
    assert_same_value("initial velocity forward", value, f(&flat));
    assert_dot_product("initial velocity", &g, &v, t);
}

#[test]
fn fixed_size_gradient() {
    let (particles, springs, cfg) = setup();
    let (scene, x0, v0, k) = Scene::from_body(&particles, &springs);
    let unflatten = |p: &[f64]| -> ([f64; NS], [[f64; 2]; NP]) {
        let mut k = [0.0; NS];
        k.copy_from_slice(&p[..NS]);
        let mut v = [[0.0; 2]; NP];
        for (i, c) in p[NS..].chunks(2).enumerate() {
            v[i] = [c[0], c[1]];
        }
        (k, v)
    };
    let f = |p: &[f64]| {
        let (k, v) = unflatten(p);
        fixed_size_loss(&k, &v, &x0, &scene, &cfg)
    };
    let point: Vec<f64> = k.iter().copied().chain(v0.iter().flatten().copied()).collect();

    // Same physics as the slice-of-structs version (up to rounding).
    let mut ps = particles.clone();
    for _ in 0..cfg.steps {
        step(&mut ps, &springs, &cfg);
    }
    let com = center_of_mass(&ps);
    let reference = ((com[0] - cfg.target[0]).powi(2) + (com[1] - cfg.target[1]).powi(2)).sqrt();
    assert_close_scalar("fixed size vs slices", f(&point), reference, 1e-10, 0.0);

    let mut dk = [0.0; NS];
    let mut dv = [[0.0; 2]; NP];
    let value = fixed_size_loss_grad(&k, &mut dk, &v0, &mut dv, &x0, &scene, &cfg, 1.0);
    assert_same_value("fixed size", value, f(&point));
    let g: Vec<f64> = dk.iter().copied().chain(dv.iter().flatten().copied()).collect();
    assert_close("fixed size vs fd", &g, &fd_gradient(f, &point), 1e-5, 1e-8);

    let dir = direction(point.len(), 34);
    let (tk, tv) = unflatten(&dir);
    let (value, t) = fixed_size_loss_tangent(&k, &tk, &v0, &tv, &x0, &scene, &cfg);
    assert_same_value("fixed size forward", value, f(&point));
    assert_dot_product("fixed size", &g, &dir, t);
}
