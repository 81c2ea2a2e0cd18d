//! Split reverse mode (`#[cotan::autodiff_split]`): one forward sweep, its record held by
//! the caller, then reverse sweeps for several seeds; each equals the ordinary reverse mode.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

use cotan::{autodiff_reverse, autodiff_split};

fn weight(x: &[f64], k: usize) -> f64 {
    (x[k] * 0.5).sin() + x[k] * x[k]
}

#[autodiff_split(model_forward, model_reverse, Duplicated, Const, Active, Active)]
#[autodiff_reverse(model_rev, Duplicated, Const, Active, Active)]
fn model(x: &[f64], t: &[f64], s: f64) -> f64 {
    let mut acc = 0.0;
    let mut k = 0;
    while k < x.len() {
        acc += weight(x, k) * t[k] * s;
        if acc > 1.0 {
            acc = acc.sqrt();
        }
        k += 1;
    }
    acc * s
}

#[test]
fn one_forward_sweep_serves_several_seeds() {
    let x = [0.3, -1.2, 0.8, 2.1];
    let t = [1.0, 0.5, -0.25, 2.0];
    let s = 0.7;
    let (value, record) = model_forward(&x, &t, s);
    assert_eq!(value, model(&x, &t, s));
    for seed in [1.0, -2.5, 0.125] {
        let mut dx = [0.0; 4];
        let ds = model_reverse(&record, &mut dx, seed);
        let mut want_dx = [0.0; 4];
        let (_, want_ds) = model_rev(&x, &mut want_dx, &t, s, seed);
        assert_eq!(dx, want_dx, "seed {seed}");
        assert_eq!(ds, want_ds, "seed {seed}");
    }
    // The record holds what the reverse sweep needs: changing the inputs afterwards does
    // not change it.
    let mut dx = [0.0; 4];
    let _ = model_reverse(&record, &mut dx, 1.0);
    let mut want = [0.0; 4];
    model_rev(&x, &mut want, &t, s, 1.0);
    assert_eq!(dx, want);
}

/// In place, no result: the forward function returns the record alone.
#[autodiff_split(step_forward, step_reverse, Duplicated, Active)]
#[autodiff_reverse(step_rev, Duplicated, Active)]
fn step(u: &mut [f64], dt: f64) {
    for _ in 0..3 {
        for i in 1..u.len() {
            u[i] += dt * (u[i - 1] - u[i]).tanh();
        }
    }
}

#[test]
fn in_place_functions_split_too() {
    let u0 = [0.1, 0.9, -0.3, 0.4];
    let mut u = u0;
    let record = step_forward(&mut u, 0.2);
    let mut v = u0;
    step(&mut v, 0.2);
    assert_eq!(u, v, "the forward function runs the function");
    for w in [[1.0, 0.0, 0.0, 2.0], [0.5, -1.0, 0.25, 0.0]] {
        let mut du = w;
        let ddt = step_reverse(&record, &mut du);
        let mut want_u = u0;
        let mut want_du = w;
        let want_ddt = step_rev(&mut want_u, &mut want_du, 0.2);
        assert_eq!(du, want_du);
        assert_eq!(ddt, want_ddt);
    }
}

#[test]
#[should_panic(expected = "a record of `model` was passed to the reverse function of `step`")]
fn a_record_of_another_function_is_refused() {
    let (_, record) = model_forward(&[1.0], &[1.0], 1.0);
    let mut du = [0.0];
    step_reverse(&record, &mut du);
}
