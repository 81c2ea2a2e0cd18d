//! Bayesian linear regression sampled with NUTS (nuts-rs), the gradient of the log density
//! by cotan (`cargo run --release -p cotan-examples --features nuts --example nuts_regression`): y ~ Normal(α + β x, σ), α, β ~ Normal(0, 10), σ ~ HalfNormal(1), sampled over
//! (α, β, log σ) with the log-transform's Jacobian, as in the Enzyme/Mooncake comparison.

use std::collections::HashMap;

use nuts_rs::rand::{rngs::StdRng, SeedableRng};
use nuts_rs::{Chain, CpuLogpFunc, CpuMath, CpuMathError, DiagNutsSettings, HasDims, LogpError, Settings};

/// The log posterior density of (α, β, log σ), up to a constant.
#[cotan::autodiff_reverse(log_density_grad, Duplicated, Const, Const, Active)]
pub fn log_density(theta: &[f64], x: &[f64], y: &[f64]) -> f64 {
    let (alpha, beta, log_sigma) = (theta[0], theta[1], theta[2]);
    let sigma = log_sigma.exp();
    let mut lp = 0.0;
    for (&xi, &yi) in x.iter().zip(y) {
        let r = (yi - alpha - beta * xi) / sigma;
        lp += -0.5 * r * r - log_sigma;
    }
    let prior = -0.5 * (alpha / 10.0).powi(2) - 0.5 * (beta / 10.0).powi(2) - 0.5 * sigma * sigma;
    // log |dσ/d log σ| = log σ.
    lp + prior + log_sigma
}

/// The model for nuts-rs: data and the gradient's buffer.
pub struct Regression {
    pub x: Vec<f64>,
    pub y: Vec<f64>,
}

impl Regression {
    /// `n` points of y = 1 + 2 x + 0.5 ε from a seeded generator.
    pub fn synthetic(n: usize, seed: u64) -> Regression {
        let mut state = seed;
        let mut uniform = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        };
        let (mut x, mut y) = (vec![], vec![]);
        for _ in 0..n {
            let xi = 4.0 * uniform() - 2.0;
            // Box-Muller.
            let e = (-2.0 * uniform().ln()).sqrt() * (std::f64::consts::TAU * uniform()).cos();
            x.push(xi);
            y.push(1.0 + 2.0 * xi + 0.5 * e);
        }
        Regression { x, y }
    }
}

#[derive(Debug)]
pub struct NotFinite;

impl std::fmt::Display for NotFinite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the log density is not finite")
    }
}

impl std::error::Error for NotFinite {}

impl LogpError for NotFinite {
    fn is_recoverable(&self) -> bool {
        true
    }
}

impl HasDims for Regression {
    fn dim_sizes(&self) -> HashMap<String, u64> {
        HashMap::from([("unconstrained_parameter".to_string(), 3)])
    }
}

impl CpuLogpFunc for Regression {
    type LogpError = NotFinite;
    type FlowParameters = ();
    type ExpandedVector = Vec<f64>;

    fn dim(&self) -> usize {
        3
    }

    fn logp(&mut self, position: &[f64], gradient: &mut [f64]) -> Result<f64, NotFinite> {
        gradient.fill(0.0);
        let lp = log_density_grad(position, gradient, &self.x, &self.y, 1.0);
        if lp.is_finite() {
            Ok(lp)
        } else {
            Err(NotFinite)
        }
    }

    fn expand_vector<R: nuts_rs::rand::Rng + ?Sized>(
        &mut self,
        _rng: &mut R,
        position: &[f64],
    ) -> Result<Vec<f64>, CpuMathError> {
        Ok(position.to_vec())
    }
}

/// Draws of (α, β, σ) after `tune` warm-up draws.
pub fn sample(model: Regression, tune: u64, draws: usize, seed: u64) -> Vec<[f64; 3]> {
    let settings = DiagNutsSettings { num_tune: tune, num_draws: draws as u64, ..Default::default() };
    let mut rng = StdRng::seed_from_u64(seed);
    let mut chain = settings.new_chain(0, CpuMath::new(model), &mut rng).expect("valid settings");
    chain.set_position(&[0.0, 0.0, 0.0]).expect("a finite start");
    let mut out = vec![];
    for k in 0..tune as usize + draws {
        let (draw, _) = chain.draw().expect("no unrecoverable error");
        if k >= tune as usize {
            out.push([draw[0], draw[1], draw[2].exp()]);
        }
    }
    out
}

fn main() {
    let draws = sample(Regression::synthetic(200, 3), 500, 1000, 42);
    let mean = |k: usize| draws.iter().map(|d| d[k]).sum::<f64>() / draws.len() as f64;
    println!(
        "posterior means over {} draws: α = {:.3}, β = {:.3}, σ = {:.3} (data from α = 1, β = 2, σ = 0.5)",
        draws.len(),
        mean(0),
        mean(1),
        mean(2)
    );
}

#[test]
fn the_gradient_nuts_uses_matches_finite_differences() {
    let m = Regression::synthetic(50, 5);
    for theta in [[0.5, 1.5, -0.3], [1.2, 2.2, 0.4]] {
        let mut g = [0.0; 3];
        let lp = log_density_grad(&theta, &mut g, &m.x, &m.y, 1.0);
        assert_eq!(lp, log_density(&theta, &m.x, &m.y));
        for k in 0..3 {
            let (mut p, mut q) = (theta, theta);
            p[k] += 1e-6;
            q[k] -= 1e-6;
            let fd = (log_density(&p, &m.x, &m.y) - log_density(&q, &m.x, &m.y)) / 2e-6;
            assert!((g[k] - fd).abs() < 1e-6 * fd.abs().max(1.0), "θ[{k}]: {} vs {fd}", g[k]);
        }
    }
}

#[test]
fn nuts_recovers_the_regression() {
    let m = Regression::synthetic(200, 3);
    // The least-squares fit, which the posterior (weak priors, 200 points) centres on.
    let n = m.x.len() as f64;
    let (mx, my) = (m.x.iter().sum::<f64>() / n, m.y.iter().sum::<f64>() / n);
    let sxy: f64 = m.x.iter().zip(&m.y).map(|(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = m.x.iter().map(|x| (x - mx) * (x - mx)).sum();
    let beta = sxy / sxx;
    let alpha = my - beta * mx;
    let draws = sample(m, 400, 800, 7);
    let mean = |k: usize| draws.iter().map(|d| d[k]).sum::<f64>() / draws.len() as f64;
    // Posterior standard deviations are about 0.035 (α), 0.03 (β), 0.025 (σ).
    assert!((mean(0) - alpha).abs() < 0.03, "α: {} vs {alpha}", mean(0));
    assert!((mean(1) - beta).abs() < 0.03, "β: {} vs {beta}", mean(1));
    assert!((mean(2) - 0.5).abs() < 0.08, "σ: {}", mean(2));
}
