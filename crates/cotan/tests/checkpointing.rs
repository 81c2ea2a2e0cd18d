//! `cotan::checkpoint`: loops whose reverse sweep stores snapshots of their state and
//! recomputes segments, against the same loop recorded whole and finite differences.

#![allow(clippy::all, clippy::pedantic, dead_code, unused_mut)]

use cotan::{autodiff_reverse, checkpoint, Every};

fn rhs(x: &[f64], p: f64, i: usize) -> f64 {
    let n = x.len();
    let l = x[(i + n - 1) % n];
    let r = x[(i + 1) % n];
    p * (l - 2.0 * x[i] + r) + (x[i] * x[i]).sin() * 0.3
}

#[autodiff_reverse(d_plain, Duplicated, Active, Const, Active)]
fn plain(x: &mut [f64], p: f64, steps: usize) -> f64 {
    let dt = 0.01;
    let mut k = vec![0.0; x.len()];
    for _t in 0..steps {
        for i in 0..x.len() {
            k[i] = rhs(x, p, i);
        }
        for i in 0..x.len() {
            x[i] += dt * k[i];
        }
    }
    x.iter().map(|v| v * v).sum()
}

#[autodiff_reverse(d_every3, Duplicated, Active, Const, Active)]
fn every3(x: &mut [f64], p: f64, steps: usize) -> f64 {
    let dt = 0.01;
    let mut k = vec![0.0; x.len()];
    for _t in checkpoint(0..steps, Every(3)) {
        for i in 0..x.len() {
            k[i] = rhs(x, p, i);
        }
        for i in 0..x.len() {
            x[i] += dt * k[i];
        }
    }
    x.iter().map(|v| v * v).sum()
}

#[test]
fn smoke() {
    for steps in [0, 1, 2, 3, 7, 9] {
        let x0 = vec![0.3, -0.5, 0.8, 1.1];
        let (mut xa, mut dxa) = (x0.clone(), vec![0.0; 4]);
        let (ya, dpa) = d_plain(&mut xa, &mut dxa, 0.7, steps, 1.0);
        let (mut xb, mut dxb) = (x0.clone(), vec![0.0; 4]);
        let (yb, dpb) = d_every3(&mut xb, &mut dxb, 0.7, steps, 1.0);
        assert_eq!(xa, xb);
        assert_eq!(ya, yb);
        assert_eq!(dxa, dxb, "steps {steps}");
        assert_eq!(dpa, dpb);
    }
}
