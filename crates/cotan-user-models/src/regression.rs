//! Bayesian linear regression and L2-penalised logistic regression.

use crate::{dot, Rng};
use cotan::{autodiff_forward, autodiff_reverse};

/// ln(2π)
const LN_2PI: f64 = 1.837_877_066_409_345_5;

/// Log density of N(mu, sigma²) at x.
pub fn normal_lpdf(x: f64, mu: f64, sigma: f64) -> f64 {
    let z = (x - mu) / sigma;
    -0.5 * z * z - sigma.ln() - 0.5 * LN_2PI
}

/// A regression data set: one row of features per observation.
#[derive(Clone, Debug)]
pub struct Dataset {
    pub x: Vec<Vec<f64>>,
    pub y: Vec<f64>,
}

impl Dataset {
    pub fn new(x: Vec<Vec<f64>>, y: Vec<f64>) -> Self {
        assert_eq!(x.len(), y.len());
        Dataset { x, y }
    }

    /// `n` observations of `d` features from y = x·beta + noise.
    pub fn synthetic(n: usize, beta: &[f64], noise: f64, seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let x: Vec<Vec<f64>> = (0..n).map(|_| (0..beta.len()).map(|_| rng.normal()).collect()).collect();
        let y = x.iter().map(|row| dot(row, beta) + noise * rng.normal()).collect();
        Dataset::new(x, y)
    }

    pub fn len(&self) -> usize {
        self.y.len()
    }

    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }

    pub fn num_features(&self) -> usize {
        self.x.first().map_or(0, Vec::len)
    }
}

/// Log posterior (up to a constant) of Bayesian linear regression with a
/// N(0, prior_sd²) prior on every coefficient and Gaussian noise of known sd.
#[autodiff_reverse(blr_log_posterior_grad, Duplicated, Const, Const, Const, Active)]
#[autodiff_forward(blr_log_posterior_tangent, Dual, Const, Const, Const, Dual)]
pub fn blr_log_posterior(beta: &[f64], data: &Dataset, prior_sd: f64, noise_sd: f64) -> f64 {
    let log_prior: f64 = beta.iter().map(|&b| normal_lpdf(b, 0.0, prior_sd)).sum();
    let log_lik: f64 = data.x.iter().zip(&data.y).map(|(xi, &yi)| normal_lpdf(yi, dot(xi, beta), noise_sd)).sum();
    log_prior + log_lik
}

/// Same model with the noise scale unknown (on the log scale, N(0, 1) prior), data
/// passed as plain slices.
#[autodiff_reverse(blr_log_posterior_sigma_grad, Duplicated, Active, Const, Const, Active)]
#[autodiff_forward(blr_log_posterior_sigma_tangent, Dual, Dual, Const, Const, Dual)]
pub fn blr_log_posterior_sigma(beta: &[f64], log_sigma: f64, x: &[Vec<f64>], y: &[f64]) -> f64 {
    let sigma = log_sigma.exp();
    let mut lp = normal_lpdf(log_sigma, 0.0, 1.0);
    for b in beta {
        lp += normal_lpdf(*b, 0.0, 10.0);
    }
    for (row, &target) in x.iter().zip(y) {
        let prediction: f64 = row.iter().zip(beta).map(|(a, b)| a * b).sum();
        lp += normal_lpdf(target, prediction, sigma);
    }
    lp
}

/// ln(1 + e^z) without overflow.
fn log1p_exp(z: f64) -> f64 {
    if z > 0.0 {
        z + (-z).exp().ln_1p()
    } else {
        z.exp().ln_1p()
    }
}

/// Negative log likelihood of logistic regression plus an L2 penalty on the weights
/// (the bias is not penalised).
#[autodiff_reverse(logistic_nll_grad, Duplicated, Active, Const, Const, Const, Active)]
#[autodiff_forward(logistic_nll_tangent, Dual, Dual, Const, Const, Const, Dual)]
pub fn logistic_nll(w: &[f64], bias: f64, x: &[Vec<f64>], labels: &[bool], lambda: f64) -> f64 {
    let nll: f64 = x
        .iter()
        .zip(labels)
        .map(|(xi, &yi)| {
            let z = dot(w, xi) + bias;
            if yi {
                log1p_exp(-z)
            } else {
                log1p_exp(z)
            }
        })
        .sum();
    let penalty = 0.5 * lambda * w.iter().map(|wi| wi * wi).sum::<f64>();
    nll + penalty
}

/// Synthetic classification data: labels drawn from the logistic model.
pub fn synthetic_classification(n: usize, w: &[f64], bias: f64, seed: u64) -> (Vec<Vec<f64>>, Vec<bool>) {
    let mut rng = Rng::new(seed);
    let x: Vec<Vec<f64>> = (0..n).map(|_| (0..w.len()).map(|_| rng.normal()).collect()).collect();
    let labels = x
        .iter()
        .map(|row| {
            let p = 1.0 / (1.0 + (-(dot(row, w) + bias)).exp());
            rng.uniform() < p
        })
        .collect();
    (x, labels)
}
