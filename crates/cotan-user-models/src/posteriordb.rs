//! Log densities of models from posteriordb, written as a Stan user porting them to
//! Rust would: unconstrained parameters in one slice, helper log-density functions.

use crate::dot;
use cotan::{autodiff_forward, autodiff_reverse};
use std::f64::consts::PI;

const HALF_LN_2PI: f64 = 0.918_938_533_204_672_8;

/// Log density of N(mu, sigma²) at x.
pub fn normal_lpdf(x: f64, mu: f64, sigma: f64) -> f64 {
    let z = (x - mu) / sigma;
    -0.5 * z * z - sigma.ln() - HALF_LN_2PI
}

/// Log density of the half-Cauchy(0, scale) distribution at x >= 0.
pub fn half_cauchy_lpdf(x: f64, scale: f64) -> f64 {
    (2.0 / (PI * scale)).ln() - (1.0 + (x / scale).powi(2)).ln()
}

/// ln k!
pub fn ln_factorial(k: u32) -> f64 {
    (1..=k).map(|i| (i as f64).ln()).sum()
}

/// Log probability of k under Poisson(exp(log_rate)).
pub fn poisson_log_lpmf(k: u32, log_rate: f64) -> f64 {
    k as f64 * log_rate - log_rate.exp() - ln_factorial(k)
}

/// A normal distribution.
#[derive(Clone, Copy, Debug)]
pub struct Normal {
    pub mu: f64,
    pub sigma: f64,
}

impl Normal {
    pub fn new(mu: f64, sigma: f64) -> Self {
        Normal { mu, sigma }
    }

    pub fn standard() -> Self {
        Normal::new(0.0, 1.0)
    }

    pub fn log_pdf(&self, x: f64) -> f64 {
        normal_lpdf(x, self.mu, self.sigma)
    }
}

/// The eight schools data (Rubin 1981).
#[derive(Clone, Debug)]
pub struct EightSchools {
    pub y: [f64; 8],
    pub sigma: [f64; 8],
}

impl EightSchools {
    pub fn data() -> Self {
        EightSchools {
            y: [28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0],
            sigma: [15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0],
        }
    }
}

/// posteriordb `eight_schools-eight_schools_noncentered`, unconstrained parameters
/// `[mu, log tau, theta_tilde[0..8]]` (log density including the log-Jacobian of tau).
#[autodiff_reverse(eight_schools_grad, Duplicated, Const, Active)]
#[autodiff_forward(eight_schools_tangent, Dual, Const, Dual)]
pub fn eight_schools_noncentered(params: &[f64], data: &EightSchools) -> f64 {
    let mu = params[0];
    let log_tau = params[1];
    let tau = log_tau.exp();
    let theta_tilde = &params[2..];

    let mut lp = Normal::new(0.0, 5.0).log_pdf(mu);
    lp += half_cauchy_lpdf(tau, 5.0) + log_tau;
    for (j, &tt) in theta_tilde.iter().enumerate() {
        let theta = mu + tau * tt;
        lp += Normal::standard().log_pdf(tt);
        lp += normal_lpdf(data.y[j], theta, data.sigma[j]);
    }
    lp
}

/// Observations in groups of different sizes.
#[derive(Clone, Debug)]
pub struct GroupedData {
    pub groups: Vec<Vec<f64>>,
}

/// A centred hierarchical normal model:
/// mu ~ N(0, 10), tau ~ half-Cauchy(0, 2.5), sigma ~ half-Cauchy(0, 2.5),
/// theta_j ~ N(mu, tau), y_ij ~ N(theta_j, sigma).
/// Unconstrained parameters `[mu, log tau, log sigma, theta[0..J]]`.
#[autodiff_reverse(hierarchical_normal_grad, Duplicated, Const, Active)]
#[autodiff_forward(hierarchical_normal_tangent, Dual, Const, Dual)]
pub fn hierarchical_normal(params: &[f64], data: &GroupedData) -> f64 {
    let (mu, log_tau, log_sigma) = (params[0], params[1], params[2]);
    let (tau, sigma) = (log_tau.exp(), log_sigma.exp());
    let theta = &params[3..];
    assert_eq!(theta.len(), data.groups.len());

    let hyper = Normal::new(0.0, 10.0).log_pdf(mu)
        + half_cauchy_lpdf(tau, 2.5)
        + log_tau
        + half_cauchy_lpdf(sigma, 2.5)
        + log_sigma;

    let population = Normal::new(mu, tau);
    let groups: f64 = data
        .groups
        .iter()
        .zip(theta)
        .map(|(ys, &th)| population.log_pdf(th) + ys.iter().map(|&y| normal_lpdf(y, th, sigma)).sum::<f64>())
        .sum();
    hyper + groups
}

/// Count data with covariates and an exposure (offset).
#[derive(Clone, Debug)]
pub struct CountData {
    pub x: Vec<Vec<f64>>,
    pub counts: Vec<u32>,
    pub exposure: Vec<f64>,
}

/// Poisson GLM with log link: log E[count_i] = log(exposure_i) + beta_0 + x_i·beta_1..,
/// with N(0, 2.5) priors; parameters `beta = [intercept, slopes..]`.
#[autodiff_reverse(poisson_glm_grad, Duplicated, Const, Active)]
#[autodiff_forward(poisson_glm_tangent, Dual, Const, Dual)]
pub fn poisson_glm(beta: &[f64], data: &CountData) -> f64 {
    let (intercept, slopes) = beta.split_first().expect("at least an intercept");
    let log_prior: f64 = beta.iter().map(|&b| normal_lpdf(b, 0.0, 2.5)).sum();
    let log_lik: f64 = data
        .x
        .iter()
        .zip(&data.counts)
        .zip(&data.exposure)
        .map(|((xi, &k), &e)| {
            let eta = intercept + dot(slopes, xi) + e.ln();
            poisson_log_lpmf(k, eta)
        })
        .sum();
    log_prior + log_lik
}

/// Deterministic synthetic counts from the model.
pub fn synthetic_counts(n: usize, beta: &[f64], seed: u64) -> CountData {
    let mut rng = crate::Rng::new(seed);
    let mut x = Vec::with_capacity(n);
    let mut counts = Vec::with_capacity(n);
    let mut exposure = Vec::with_capacity(n);
    for _ in 0..n {
        let xi: Vec<f64> = (1..beta.len()).map(|_| rng.normal()).collect();
        let e = rng.range(0.5, 2.0);
        let rate = e * (beta[0] + dot(&beta[1..], &xi)).exp();
        // Poisson sample by inversion.
        let u = rng.uniform();
        let (mut k, mut p) = (0u32, (-rate).exp());
        let mut cdf = p;
        while u > cdf && k < 1000 {
            k += 1;
            p *= rate / k as f64;
            cdf += p;
        }
        x.push(xi);
        counts.push(k);
        exposure.push(e);
    }
    CountData { x, counts, exposure }
}
