//! The constructs of issue 11 under second order (forward over reverse) and batched
//! forward mode: Hessian-vector products against finite differences of the gradient, and
//! each batched lane against an unbatched call.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code, unused_assignments, unused_mut)]

use cotan::{autodiff_forward, autodiff_reverse, hvp};

/// Tuples, a fold with a tuple accumulator, a local closure, `match`, `filter`, `max_by`,
/// `if let` and `sin_cos`.
#[hvp(mix_hvp)]
#[autodiff_reverse(mix_grad, Duplicated, Active)]
#[autodiff_forward(mix_b3, 3, Dual, Dual)]
#[autodiff_forward(mix_fwd, Dual, Dual)]
fn mix(x: &[f64]) -> f64 {
    let (s, q) = x.iter().fold((0.0, 0.0), |(s, q), v| (s + v, q + v * v));
    let soft = |v: f64| (1.0 + v.exp()).ln();
    let mut acc = soft(s) * q;
    for (i, &v) in x.iter().enumerate() {
        acc += match i % 3 {
            0 => v * v * v,
            1 | 2 if v > 0.0 => soft(v * s),
            _ => {
                let (sn, cs) = v.sin_cos();
                sn * cs
            }
        };
    }
    let pos: f64 = x.iter().filter(|&&v| v > 0.0).map(|v| v * v * s).sum();
    if let Some(m) = x.iter().copied().max_by(|a, b| a.total_cmp(b)) {
        acc += m * m * q;
    }
    acc + pos
}

fn fd_hvp(grad: &dyn Fn(&[f64]) -> Vec<f64>, x: &[f64], v: &[f64]) -> Vec<f64> {
    let d = |h: f64| -> Vec<f64> {
        let xp: Vec<f64> = x.iter().zip(v).map(|(a, b)| a + h * b).collect();
        let xm: Vec<f64> = x.iter().zip(v).map(|(a, b)| a - h * b).collect();
        grad(&xp).iter().zip(grad(&xm)).map(|(p, m)| (p - m) / (2.0 * h)).collect()
    };
    let (a, b) = (d(1e-4), d(5e-5));
    a.iter().zip(&b).map(|(a, b)| (4.0 * b - a) / 3.0).collect()
}

#[test]
fn hvp_through_the_new_constructs() {
    let x = [0.4, -0.7, 1.1, 0.25, -0.3];
    let v = [0.3, 1.0, -0.5, 0.8, -0.2];
    let grad = |x: &[f64]| {
        let mut g = vec![0.0; x.len()];
        mix_grad(x, &mut g, 1.0);
        g
    };
    let (mut g, mut hv) = (vec![0.0; 5], vec![0.0; 5]);
    let value = mix_hvp(&x, &v, &mut g, &mut hv);
    assert_eq!(value, mix(&x));
    let want = fd_hvp(&grad, &x, &v);
    for k in 0..5 {
        assert!((g[k] - grad(&x)[k]).abs() < 1e-12, "gradient[{k}]");
        assert!((hv[k] - want[k]).abs() < 1e-6 * want[k].abs().max(1.0), "hv[{k}]: {} vs {}", hv[k], want[k]);
    }
}

#[test]
fn batched_lanes_equal_unbatched_calls() {
    let x = [0.4, -0.7, 1.1, 0.25, -0.3];
    let dirs = [[1.0, 0.0, 0.0, 0.0, 0.0], [0.3, 1.0, -0.5, 0.8, -0.2], [0.0, 0.0, 0.0, 0.0, 1.0]];
    let [value, t0, t1, t2] = mix_b3(&x, &dirs[0], &dirs[1], &dirs[2]);
    assert_eq!(value, mix(&x));
    for (t, d) in [t0, t1, t2].into_iter().zip(&dirs) {
        let (_, one) = mix_fwd(&x, d);
        assert!((t - one).abs() <= 1e-14 * one.abs().max(1.0), "{t} vs {one}");
    }
}
