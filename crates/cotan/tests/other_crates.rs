//! Calls into another crate: functions it marks `#[cotan::differentiable]` are
//! differentiated through the derivatives they export (their private helpers included);
//! unmarked ones are read from that crate's sources and lowered where they are called.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

mod common;

use cotan_test_dep::damp;
use cotan_test_dep::norm_sq;

slice_case!(
    unmarked_functions_of_another_crate,
    [[0.3, -1.2, 2.5, 0.8], [1.1, 0.4, -0.6, 2.0]],
    fn f(x: &[f64]) -> f64 {
        let mut y = [x[0], x[1] * x[2], x[3]];
        cotan_test_dep::shapes::scale(&mut y, x[2]);
        cotan_test_dep::unmarked(x[0] * x[1]) * norm_sq(x) + norm_sq(&y) + cotan_test_dep::energy(x, x[3])
    }
);

// Integer literals passed to a marked function of another crate take its parameters'
// types (`u32`, `usize`), which cotan cannot see from here.
slice_case!(
    literals_passed_to_another_crate,
    [[0.3, -1.2, 2.5], [1.1, 0.4, -0.6]],
    fn f(x: &[f64]) -> f64 {
        cotan_test_dep::marked_power(x[0], 3, 2) * x[1] + cotan_test_dep::marked_power(x[2], 2, 1)
    }
);

#[cotan::hvp(hvp_unmarked)]
fn unmarked_of_two(x: &[f64]) -> f64 {
    cotan_test_dep::unmarked(x[0] * x[2]) * norm_sq(x)
}

#[test]
fn second_order_through_unmarked_functions_of_another_crate() {
    let x = [0.4, -0.7, 1.1];
    let v = [1.0, 0.5, -0.25];
    let (mut g, mut hv) = ([0.0; 3], [0.0; 3]);
    hvp_unmarked(&x, &v, &mut g, &mut hv);
    let grad = |y: &[f64]| -> Vec<f64> {
        let (mut gy, mut hy) = ([0.0; 3], [0.0; 3]);
        hvp_unmarked(y, &v, &mut gy, &mut hy);
        gy.to_vec()
    };
    let h = 1e-5;
    let xp: Vec<f64> = x.iter().zip(&v).map(|(a, b)| a + h * b).collect();
    let xm: Vec<f64> = x.iter().zip(&v).map(|(a, b)| a - h * b).collect();
    let (gp, gm) = (grad(&xp), grad(&xm));
    for k in 0..3 {
        let want = (gp[k] - gm[k]) / (2.0 * h);
        assert!((hv[k] - want).abs() <= 1e-6 * want.abs().max(1.0), "hv[{k}]: {} vs {want}", hv[k]);
        let fd = {
            let (mut p, mut m) = (x, x);
            p[k] += h;
            m[k] -= h;
            (unmarked_of_two(&p) - unmarked_of_two(&m)) / (2.0 * h)
        };
        assert!((g[k] - fd).abs() <= 1e-6 * fd.abs().max(1.0), "g[{k}]: {} vs {fd}", g[k]);
    }
}

slice_case!(
    a_marked_function_of_another_crate,
    [[0.3, -1.2, 2.5, 0.8]],
    fn f(x: &[f64]) -> f64 {
        let c = [0.5, 1.0, -1.0, 2.0];
        // Active and constant slices, an active and a constant scalar.
        cotan_test_dep::energy(x, x[0]) + cotan_test_dep::energy(&c, x[1]) + cotan_test_dep::energy(x, 2.0)
    }
);

inplace_case!(
    an_imported_in_place_function_of_another_crate,
    [[0.3, -1.2, 2.5, 0.8]],
    fn f(x: &mut [f64]) {
        damp(x, 0.3);
        for i in 0..x.len() {
            x[i] = x[i] * x[i];
        }
        damp(x, 0.1);
    }
);

#[cotan::hvp(hvp_energy)]
fn energy_of_two(x: &[f64]) -> f64 {
    cotan_test_dep::energy(x, 1.5) * x[0]
}

#[test]
fn second_order_through_another_crate() {
    let x = [0.4, -0.7, 1.1];
    let v = [1.0, 0.5, -0.25];
    let (mut g, mut hv) = ([0.0; 3], [0.0; 3]);
    hvp_energy(&x, &v, &mut g, &mut hv);
    let grad = |y: &[f64]| -> Vec<f64> {
        (0..3)
            .map(|k| {
                let (mut p, mut m) = (y.to_vec(), y.to_vec());
                p[k] += 1e-5;
                m[k] -= 1e-5;
                (energy_of_two(&p) - energy_of_two(&m)) / 2e-5
            })
            .collect()
    };
    let h = 1e-4;
    let xp: Vec<f64> = x.iter().zip(&v).map(|(a, b)| a + h * b).collect();
    let xm: Vec<f64> = x.iter().zip(&v).map(|(a, b)| a - h * b).collect();
    let (gp, gm) = (grad(&xp), grad(&xm));
    for k in 0..3 {
        let want = (gp[k] - gm[k]) / (2.0 * h);
        assert!((hv[k] - want).abs() <= 1e-4 * want.abs().max(1.0), "hv[{k}]: {} vs {want}", hv[k]);
    }
}
