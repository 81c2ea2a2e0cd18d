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

#[cotan::autodiff_split(pair_out_fwd, pair_out_rev, Duplicated, Duplicated, Active)]
#[cotan::autodiff_reverse(d_pair_out, Duplicated, Duplicated, Active)]
fn pair_out(x: &[f64], out: &mut [f64]) -> (f64, f64) {
    out[0] = x[0] * x[1];
    (x[0].sin() * out[0], x[1] * x[1])
}

#[cotan::autodiff_split(array_fwd, array_rev, Duplicated, Active)]
#[cotan::autodiff_reverse(d_array, Duplicated, Active)]
fn array_result(x: &[f64]) -> [f64; 2] {
    [x[0] * x[1], x[0].sin()]
}

#[cotan::autodiff_split(pair_k_fwd, pair_k_rev, Duplicated, Active, Active)]
#[cotan::autodiff_reverse(d_pair_k, Duplicated, Active, Active)]
fn pair_k(x: &[f64], k: f64) -> (f64, f64) {
    (x[0] * k, k * k * x[1])
}

/// Tuple and array results: the reverse sweep takes the seed as one tuple or array, as
/// `autodiff_reverse`'s derivative does, and gives what it gives, for each seed.
#[test]
fn tuple_and_array_results_take_their_seed_whole() {
    let x = [0.3, -1.2];
    for seed in [(1.0, 0.0), (0.5, -2.0)] {
        let (mut dx1, mut dx2) = ([0.0; 2], [0.0; 2]);
        let (mut o1, mut o2) = ([0.0; 1], [0.0; 1]);
        let (mut do1, mut do2) = ([0.25; 1], [0.25; 1]);
        let r1 = d_pair_out(&x, &mut dx1, &mut o1, &mut do1, seed);
        let (r2, record) = pair_out_fwd(&x, &mut o2);
        pair_out_rev(&record, &mut dx2, &mut do2, seed);
        assert_eq!((r1, dx1, do1, o1), (r2, dx2, do2, o2));
        assert!(dx1.iter().any(|d| *d != 0.0));
    }
    for seed in [[1.0, 0.0], [0.5, -2.0]] {
        let (mut dx1, mut dx2) = ([0.0; 2], [0.0; 2]);
        let r1 = d_array(&x, &mut dx1, seed);
        let (r2, record) = array_fwd(&x);
        array_rev(&record, &mut dx2, seed);
        assert_eq!((r1, dx1), (r2, dx2));
        let want = [seed[0] * x[1] + seed[1] * x[0].cos(), seed[0] * x[0]];
        assert!((dx2[0] - want[0]).abs() < 1e-15 && (dx2[1] - want[1]).abs() < 1e-15, "{dx2:?} vs {want:?}");
    }
    for seed in [(1.0, 0.0), (0.5, -2.0)] {
        let (mut dx1, mut dx2) = ([0.0; 2], [0.0; 2]);
        let (r1, dk1) = d_pair_k(&x, &mut dx1, 1.5, seed);
        let (r2, record) = pair_k_fwd(&x, 1.5);
        let dk2 = pair_k_rev(&record, &mut dx2, seed);
        assert_eq!((r1, dx1, dk1), (r2, dx2, dk2));
        assert!((dk2 - (seed.0 * x[0] + seed.1 * 2.0 * 1.5 * x[1])).abs() < 1e-14);
    }
}
