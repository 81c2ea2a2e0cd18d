//! Fits a damped oscillation y(t) = a·exp(−b·t)·cos(ω·t) + c to noisy samples by
//! gradient descent, with the gradient of the least-squares loss from cotan's reverse
//! mode, checked once against forward mode and finite differences.
//!
//! Run: `cargo run --release -p cotan-examples --example curve_fit`

use cotan::{autodiff_forward, autodiff_reverse};

/// Mean squared error of the model with parameters `p = [a, b, ω, c]` on samples (t, y).
#[autodiff_reverse(loss_grad, Duplicated, Const, Const, Active)]
#[autodiff_forward(loss_jvp, Dual, Const, Const, Dual)]
fn loss(p: &[f64; 4], t: &[f64], y: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..t.len() {
        let model = p[0] * (-p[1] * t[i]).exp() * (p[2] * t[i]).cos() + p[3];
        let r = model - y[i];
        s += r * r;
    }
    s / t.len() as f64
}

fn main() {
    // Synthetic data from known parameters plus deterministic "noise".
    let truth = [2.0, 0.3, 1.7, 0.5];
    let t: Vec<f64> = (0..200).map(|i| i as f64 * 0.05).collect();
    let y: Vec<f64> = t
        .iter()
        .enumerate()
        .map(|(i, &ti)| {
            let clean = truth[0] * (-truth[1] * ti).exp() * (truth[2] * ti).cos() + truth[3];
            clean + 0.01 * ((i as f64) * 12.9898).sin()
        })
        .collect();

    let mut p = [1.0, 0.1, 1.5, 0.0];

    // The reverse-mode gradient agrees with forward mode and with finite differences.
    let mut grad = [0.0; 4];
    let value = loss_grad(&p, &mut grad, &t, &y, 1.0);
    println!("loss at start: {value:.6}");
    println!("gradient (reverse mode):  {grad:+.6?}");
    for k in 0..4 {
        let mut e = [0.0; 4];
        e[k] = 1.0;
        let (_, jvp) = loss_jvp(&p, &e, &t, &y);
        let h = 1e-6;
        let (mut hi, mut lo) = (p, p);
        hi[k] += h;
        lo[k] -= h;
        let fd = (loss(&hi, &t, &y) - loss(&lo, &t, &y)) / (2.0 * h);
        println!("  d/dp[{k}]: reverse {:+.9}  forward {jvp:+.9}  finite differences {fd:+.9}", grad[k]);
        assert!((grad[k] - jvp).abs() <= 1e-12 * grad[k].abs().max(1.0));
        assert!((grad[k] - fd).abs() <= 1e-6 * grad[k].abs().max(1.0));
    }

    // Gradient descent with momentum.
    let (rate, beta) = (0.05, 0.9);
    let mut velocity = [0.0; 4];
    for step in 0..=1000 {
        let mut grad = [0.0; 4];
        let value = loss_grad(&p, &mut grad, &t, &y, 1.0);
        for k in 0..4 {
            velocity[k] = beta * velocity[k] - rate * grad[k];
            p[k] += velocity[k];
        }
        if step % 200 == 0 {
            println!("step {step:5}: loss {value:.3e}  p = {p:.4?}");
        }
    }
    println!("fitted: a = {:.3}, b = {:.3}, ω = {:.3}, c = {:.3}", p[0], p[1], p[2], p[3]);
    println!("truth:  a = {:.3}, b = {:.3}, ω = {:.3}, c = {:.3}", truth[0], truth[1], truth[2], truth[3]);
    for k in 0..4 {
        assert!((p[k] - truth[k]).abs() < 0.05, "parameter {k} did not converge");
    }
}
