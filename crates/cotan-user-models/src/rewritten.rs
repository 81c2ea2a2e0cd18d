//! NOT part of the measurement: the failing models rewritten, by the smallest changes
//! we found, into code cotan accepts, to check that what it then generates is right.
//! Each function names the original and lists what had to change (see FINDINGS.md for
//! the causes). The originals are kept unchanged, behind the `pending` feature.

use crate::dot;
use crate::mass_spring::SimConfig;
use crate::mlp::Activation;
use crate::posteriordb::{half_cauchy_lpdf, poisson_log_lpmf, Normal};
use crate::regression::normal_lpdf;
use cotan::{autodiff_forward, autodiff_reverse};

// ---------------------------------------------------------------- regression

/// A data set with the features stored row-major in one `Vec<f64>`.
#[derive(Clone, Debug)]
pub struct FlatDataset {
    pub x: Vec<f64>,
    pub y: Vec<f64>,
}

/// `regression::blr_log_posterior`; changed: `Vec<Vec<f64>>` field -> flat `Vec<f64>`
/// read with `.chunks(d)`.
#[autodiff_reverse(blr_log_posterior_rw_grad, Duplicated, Const, Const, Const, Active)]
#[autodiff_forward(blr_log_posterior_rw_tangent, Dual, Const, Const, Const, Dual)]
pub fn blr_log_posterior_rw(beta: &[f64], data: &FlatDataset, prior_sd: f64, noise_sd: f64) -> f64 {
    let log_prior: f64 = beta.iter().map(|&b| normal_lpdf(b, 0.0, prior_sd)).sum();
    let log_lik: f64 =
        data.x.chunks(beta.len()).zip(&data.y).map(|(xi, &yi)| normal_lpdf(yi, dot(xi, beta), noise_sd)).sum();
    log_prior + log_lik
}

/// `regression::blr_log_posterior_sigma`; changed: `x: &[Vec<f64>]` -> flat `&[f64]`
/// with `.chunks(d)`, and the inline `row.iter().zip(beta)..sum()` -> `dot(row, beta)`
/// (inline, it is an internal error of cotan: reproducer `repro_chunks_const_times_active`).
#[autodiff_reverse(blr_log_posterior_sigma_rw_grad, Duplicated, Active, Const, Const, Active)]
#[autodiff_forward(blr_log_posterior_sigma_rw_tangent, Dual, Dual, Const, Const, Dual)]
pub fn blr_log_posterior_sigma_rw(beta: &[f64], log_sigma: f64, x: &[f64], y: &[f64]) -> f64 {
    let sigma = log_sigma.exp();
    let mut lp = normal_lpdf(log_sigma, 0.0, 1.0);
    for b in beta {
        lp += normal_lpdf(*b, 0.0, 10.0);
    }
    for (row, &target) in x.chunks(beta.len()).zip(y) {
        let prediction = dot(row, beta);
        lp += normal_lpdf(target, prediction, sigma);
    }
    lp
}

fn log1p_exp_rw(z: f64) -> f64 {
    if z > 0.0 {
        z + (-z).exp().ln_1p()
    } else {
        z.exp().ln_1p()
    }
}

/// `regression::logistic_nll`; changed: `x: &[Vec<f64>]` -> flat `&[f64]` with `.chunks(d)`.
#[autodiff_reverse(logistic_nll_rw_grad, Duplicated, Active, Const, Const, Const, Active)]
#[autodiff_forward(logistic_nll_rw_tangent, Dual, Dual, Const, Const, Const, Dual)]
pub fn logistic_nll_rw(w: &[f64], bias: f64, x: &[f64], labels: &[bool], lambda: f64) -> f64 {
    let nll: f64 = x
        .chunks(w.len())
        .zip(labels)
        .map(|(xi, &yi)| {
            let z = dot(w, xi) + bias;
            if yi {
                log1p_exp_rw(-z)
            } else {
                log1p_exp_rw(z)
            }
        })
        .sum();
    let penalty = 0.5 * lambda * w.iter().map(|wi| wi * wi).sum::<f64>();
    nll + penalty
}

// ---------------------------------------------------------------- MLP

pub fn log_sum_exp(logits: &[f64]) -> f64 {
    let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    max + logits.iter().map(|&l| (l - max).exp()).sum::<f64>().ln()
}

fn activate(activation: &Activation, z: f64) -> f64 {
    match activation {
        Activation::Tanh => z.tanh(),
        Activation::Relu => z.max(0.0),
    }
}

/// `mlp::mlp_loss_flat`; changed: `inputs: &[Vec<f64>]` -> flat `&[f64]` with
/// `.chunks(n_in)`; `let (n_in, n_hidden, n_out) = shape` -> `shape.0` ..;
/// `log_softmax(&logits)[label]` (a `Vec` returned by a call) -> `logits[label] -
/// log_sum_exp(&logits)`; `activation.apply(z)` (a by-value `self`) -> `activate(&activation, z)`.
#[autodiff_reverse(mlp_loss_flat_rw_grad, Duplicated, Const, Const, Const, Const, Active)]
#[autodiff_forward(mlp_loss_flat_rw_tangent, Dual, Const, Const, Const, Const, Dual)]
pub fn mlp_loss_flat_rw(
    params: &[f64],
    shape: (usize, usize, usize),
    activation: Activation,
    inputs: &[f64],
    labels: &[usize],
) -> f64 {
    let n_in = shape.0;
    let n_hidden = shape.1;
    let n_out = shape.2;
    let (w1, rest) = params.split_at(n_hidden * n_in);
    let (b1, rest) = rest.split_at(n_hidden);
    let (w2, b2) = rest.split_at(n_out * n_hidden);

    let mut loss = 0.0;
    for (x, &label) in inputs.chunks(n_in).zip(labels) {
        let hidden: Vec<f64> = w1.chunks(n_in).zip(b1).map(|(row, b)| activate(&activation, dot(row, x) + b)).collect();
        let logits: Vec<f64> = w2.chunks(n_hidden).zip(b2).map(|(row, b)| dot(row, &hidden) + b).collect();
        loss -= logits[label] - log_sum_exp(&logits);
    }
    loss / labels.len() as f64
}

/// `mlp::Mlp` with flat row-major weights.
#[derive(Clone, Debug)]
pub struct FlatMlp {
    pub w1: Vec<f64>,
    pub b1: Vec<f64>,
    pub w2: Vec<f64>,
    pub b2: Vec<f64>,
    pub n_in: usize,
    pub n_hidden: usize,
    pub activation: Activation,
}

impl FlatMlp {
    pub fn hidden_into(&self, x: &[f64], h: &mut [f64]) {
        for j in 0..self.n_hidden {
            let row = &self.w1[j * self.n_in..(j + 1) * self.n_in];
            h[j] = activate(&self.activation, dot(row, x) + self.b1[j]);
        }
    }

    pub fn forward_into(&self, x: &[f64], out: &mut [f64]) {
        let mut h = vec![0.0; self.n_hidden];
        self.hidden_into(x, &mut h);
        for k in 0..self.b2.len() {
            let row = &self.w2[k * self.n_hidden..(k + 1) * self.n_hidden];
            out[k] = dot(row, &h) + self.b2[k];
        }
    }
}

/// `mlp::mlp_loss`; changed: the struct's `Vec<Vec<f64>>` weights -> flat `Vec<f64>`;
/// `inputs: &[Vec<f64>]` -> flat; methods returning `Vec<f64>` -> methods writing into
/// `&mut [f64]`; `log_softmax(..)[label]` -> `log_sum_exp`; `self.activation.apply(z)`
/// -> `activate(&self.activation, z)`.
#[autodiff_reverse(mlp_loss_rw_grad, Duplicated, Const, Const, Active)]
#[autodiff_forward(mlp_loss_rw_tangent, Dual, Const, Const, Dual)]
pub fn mlp_loss_rw(model: &FlatMlp, inputs: &[f64], labels: &[usize]) -> f64 {
    let mut logits = vec![0.0; model.b2.len()];
    let mut total = 0.0;
    for (x, &label) in inputs.chunks(model.n_in).zip(labels) {
        model.forward_into(x, &mut logits);
        total -= logits[label] - log_sum_exp(&logits);
    }
    total / labels.len() as f64
}

// ---------------------------------------------------------------- posteriordb

/// Grouped observations as one vector and the group of each.
#[derive(Clone, Debug)]
pub struct FlatGroupedData {
    pub values: Vec<f64>,
    pub group: Vec<usize>,
    pub n_groups: usize,
}

/// `posteriordb::hierarchical_normal`; changed: `groups: Vec<Vec<f64>>` -> values and
/// group indices, and `.zip(&data.group)` -> `.zip(data.group.iter())` (reproducer
/// `repro_zip_ref_usize_field`).
#[autodiff_reverse(hierarchical_normal_rw_grad, Duplicated, Const, Active)]
#[autodiff_forward(hierarchical_normal_rw_tangent, Dual, Const, Dual)]
pub fn hierarchical_normal_rw(params: &[f64], data: &FlatGroupedData) -> f64 {
    let (mu, log_tau, log_sigma) = (params[0], params[1], params[2]);
    let (tau, sigma) = (log_tau.exp(), log_sigma.exp());
    let theta = &params[3..];
    assert_eq!(theta.len(), data.n_groups);

    let hyper = Normal::new(0.0, 10.0).log_pdf(mu)
        + half_cauchy_lpdf(tau, 2.5)
        + log_tau
        + half_cauchy_lpdf(sigma, 2.5)
        + log_sigma;

    let population = Normal::new(mu, tau);
    let groups: f64 = theta.iter().map(|&th| population.log_pdf(th)).sum::<f64>()
        + data.values.iter().zip(data.group.iter()).map(|(&y, &g)| normal_lpdf(y, theta[g], sigma)).sum::<f64>();
    hyper + groups
}

/// Count data with the covariates row-major in one vector.
#[derive(Clone, Debug)]
pub struct FlatCountData {
    pub x: Vec<f64>,
    pub counts: Vec<u32>,
    pub exposure: Vec<f64>,
}

/// `posteriordb::poisson_glm`; changed: `split_first()` -> `beta[0]`, `&beta[1..]`;
/// `x: Vec<Vec<f64>>` field -> flat with `.chunks(d)`.
#[autodiff_reverse(poisson_glm_rw_grad, Duplicated, Const, Active)]
#[autodiff_forward(poisson_glm_rw_tangent, Dual, Const, Dual)]
pub fn poisson_glm_rw(beta: &[f64], data: &FlatCountData) -> f64 {
    let intercept = beta[0];
    let slopes = &beta[1..];
    let log_prior: f64 = beta.iter().map(|&b| normal_lpdf(b, 0.0, 2.5)).sum();
    let log_lik: f64 = data
        .x
        .chunks(slopes.len())
        .zip(&data.counts)
        .zip(&data.exposure)
        .map(|((xi, &k), &e)| {
            let eta = intercept + dot(slopes, xi) + e.ln();
            poisson_log_lpmf(k, eta)
        })
        .sum();
    log_prior + log_lik
}

// ---------------------------------------------------------------- mass-spring

/// The body in struct-of-arrays form; positions and velocities are interleaved x, y.
#[derive(Clone, Debug)]
pub struct SoaBody {
    pub mass: Vec<f64>,
    pub spring_a: Vec<usize>,
    pub spring_b: Vec<usize>,
    pub rest: Vec<f64>,
}

fn soa_accelerations(pos: &[f64], vel: &[f64], k: &[f64], body: &SoaBody, cfg: &SimConfig, acc: &mut [f64]) {
    let n = body.mass.len();
    let mut force = vec![0.0; 2 * n];
    for i in 0..n {
        force[2 * i] = body.mass[i] * cfg.gravity[0];
        force[2 * i + 1] = body.mass[i] * cfg.gravity[1];
    }
    for s in 0..k.len() {
        let a = body.spring_a[s];
        let b = body.spring_b[s];
        let dx = pos[2 * b] - pos[2 * a];
        let dy = pos[2 * b + 1] - pos[2 * a + 1];
        let len = (dx * dx + dy * dy).sqrt().max(f64::EPSILON);
        let f = k[s] * (len - body.rest[s]) / len;
        force[2 * a] += f * dx;
        force[2 * a + 1] += f * dy;
        force[2 * b] -= f * dx;
        force[2 * b + 1] -= f * dy;
    }
    for i in 0..n {
        let speed = (vel[2 * i] * vel[2 * i] + vel[2 * i + 1] * vel[2 * i + 1]).sqrt();
        for c in 0..2 {
            force[2 * i + c] -= cfg.drag * speed * vel[2 * i + c];
        }
        let depth = cfg.ground - pos[2 * i + 1];
        if depth > 0.0 {
            force[2 * i + 1] += cfg.ground_k * depth;
        }
        acc[2 * i] = force[2 * i] / body.mass[i];
        acc[2 * i + 1] = force[2 * i + 1] / body.mass[i];
    }
}

fn soa_step(pos: &mut [f64], vel: &mut [f64], k: &[f64], body: &SoaBody, cfg: &SimConfig) {
    let mut acc = vec![0.0; pos.len()];
    soa_accelerations(pos, vel, k, body, cfg, &mut acc);
    for j in 0..pos.len() {
        vel[j] += cfg.dt * acc[j];
        pos[j] += cfg.dt * vel[j];
    }
}

/// `mass_spring::loss_wrt_stiffness` and `loss_wrt_initial_velocity` together; changed:
/// `&[Spring]`, `&[Particle]`, `&[[f64; 2]]` -> struct of arrays with interleaved
/// coordinates; `[f64; 2]` helpers by value -> inline scalar code.
#[autodiff_reverse(mass_spring_rw_grad, Duplicated, Duplicated, Const, Const, Const, Active)]
#[autodiff_forward(mass_spring_rw_tangent, Dual, Dual, Const, Const, Const, Dual)]
pub fn mass_spring_rw(k: &[f64], vel0: &[f64], pos0: &[f64], body: &SoaBody, cfg: &SimConfig) -> f64 {
    let mut pos = pos0.to_vec();
    let mut vel = vel0.to_vec();
    for _ in 0..cfg.steps {
        soa_step(&mut pos, &mut vel, k, body, cfg);
    }
    let total_mass: f64 = body.mass.iter().sum();
    let mut cx = 0.0;
    let mut cy = 0.0;
    for i in 0..body.mass.len() {
        cx += body.mass[i] * pos[2 * i];
        cy += body.mass[i] * pos[2 * i + 1];
    }
    let dx = cx / total_mass - cfg.target[0];
    let dy = cy / total_mass - cfg.target[1];
    (dx * dx + dy * dy).sqrt()
}

// ---------------------------------------------------------------- ODEs

pub fn lv_rhs(p: &[f64], y: &[f64], dy: &mut [f64]) {
    let (alpha, beta, delta, gamma) = (p[0], p[1], p[2], p[3]);
    dy[0] = alpha * y[0] - beta * y[0] * y[1];
    dy[1] = delta * y[0] * y[1] - gamma * y[1];
}

/// `ode::rk4_step` specialised to Lotka–Volterra (no closure parameter).
pub fn rk4_step_lv(p: &[f64], y: &mut [f64], h: f64) {
    let n = y.len();
    let mut k1 = vec![0.0; n];
    let mut k2 = vec![0.0; n];
    let mut k3 = vec![0.0; n];
    let mut k4 = vec![0.0; n];

    lv_rhs(p, y, &mut k1);
    let y2: Vec<f64> = y.iter().zip(&k1).map(|(yi, k)| yi + 0.5 * h * k).collect();
    lv_rhs(p, &y2, &mut k2);
    let y3: Vec<f64> = y.iter().zip(&k2).map(|(yi, k)| yi + 0.5 * h * k).collect();
    lv_rhs(p, &y3, &mut k3);
    let y4: Vec<f64> = y.iter().zip(&k3).map(|(yi, k)| yi + h * k).collect();
    lv_rhs(p, &y4, &mut k4);

    for i in 0..n {
        y[i] += h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
    }
}

/// `ode::lotka_volterra_ic_loss` (and through it `lotka_volterra_loss`); changed: the
/// generic `rk4_step(&closure, ..)` -> an RK4 step specialised to this right-hand side.
#[autodiff_reverse(lotka_volterra_rw_grad, Duplicated, Duplicated, Const, Const, Const, Active)]
#[autodiff_forward(lotka_volterra_rw_tangent, Dual, Dual, Const, Const, Const, Dual)]
pub fn lotka_volterra_rw(params: &[f64], y0: &[f64], target: &[f64], t_end: f64, steps: usize) -> f64 {
    let h = t_end / steps as f64;
    let mut y = y0.to_vec();
    for _ in 0..steps {
        rk4_step_lv(params, &mut y, h);
    }
    y.iter().zip(target).map(|(a, b)| (a - b).powi(2)).sum()
}

pub fn pendulum_rhs_scalar(theta: f64, omega: f64, g_over_l: f64, damping: f64) -> (f64, f64) {
    (omega, -g_over_l * theta.sin() - damping * omega)
}

/// `ode::pendulum_loss`; changed: the `[f64; 2]` state by value, the closure passed to
/// `rk4` and `state = rk4(..)` -> two scalars and an inlined RK4 step; results of the
/// tuple-returning helper destructured (`let (a, b) = f(..)`, since `let k = f(..); k.0`
/// is refused).
#[autodiff_reverse(pendulum_rw_grad, Active, Active, Active, Const, Active)]
#[autodiff_forward(pendulum_rw_tangent, Dual, Dual, Dual, Const, Dual)]
pub fn pendulum_rw(g_over_l: f64, damping: f64, theta0: f64, target: [f64; 2]) -> f64 {
    let mut theta = theta0;
    let mut omega = 0.0;
    let h = 0.02;
    for _ in 0..200 {
        let (k1t, k1o) = pendulum_rhs_scalar(theta, omega, g_over_l, damping);
        let (k2t, k2o) = pendulum_rhs_scalar(theta + h / 2.0 * k1t, omega + h / 2.0 * k1o, g_over_l, damping);
        let (k3t, k3o) = pendulum_rhs_scalar(theta + h / 2.0 * k2t, omega + h / 2.0 * k2o, g_over_l, damping);
        let (k4t, k4o) = pendulum_rhs_scalar(theta + h * k3t, omega + h * k3o, g_over_l, damping);
        theta += h / 6.0 * (k1t + 2.0 * k2t + 2.0 * k3t + k4t);
        omega += h / 6.0 * (k1o + 2.0 * k2o + 2.0 * k3o + k4o);
    }
    (theta - target[0]).powi(2) + (omega - target[1]).powi(2)
}
