//! Optimisation with argmin, derivatives by cotan (`cargo run --release -p cotan-examples
//! --features argmin --example argmin_optimize`): L-BFGS on the extended Rosenbrock function
//! with cotan's gradient, and Newton-CG on an L2-regularised logistic regression with cotan's
//! Hessian.

use argmin::core::{CostFunction, Error, Executor, Gradient, Hessian, State};
use argmin::solver::linesearch::MoreThuenteLineSearch;
use argmin::solver::newton::NewtonCG;
use argmin::solver::quasinewton::LBFGS;

/// The extended Rosenbrock function: its minimum is 0, at (1, ..., 1).
#[cotan::autodiff_reverse(rosenbrock_grad, Duplicated, Active)]
pub fn rosenbrock(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        s += 100.0 * (x[i + 1] - x[i] * x[i]).powi(2) + (1.0 - x[i]).powi(2);
    }
    s
}

/// The negative log-likelihood of a logistic regression with an L2 penalty: `w` the
/// weights, `features` row-major (`labels.len()` rows of `w.len()` columns).
#[cotan::autodiff_reverse(logistic_grad, Duplicated, Const, Const, Active)]
#[cotan::hessian(logistic_hess)]
pub fn logistic_loss(w: &[f64], features: &[f64], labels: &[f64]) -> f64 {
    let d = w.len();
    let mut loss = 0.0;
    for (row, &y) in features.chunks(d).zip(labels) {
        let z: f64 = row.iter().zip(w).map(|(a, b)| a * b).sum();
        // log(1 + exp(z)) - y z, written to stay finite for large |z|.
        loss += z.max(0.0) + (-z.abs()).exp().ln_1p() - y * z;
    }
    loss + 0.5 * w.iter().map(|v| v * v).sum::<f64>()
}

struct Rosenbrock;

impl CostFunction for Rosenbrock {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, x: &Vec<f64>) -> Result<f64, Error> {
        Ok(rosenbrock(x))
    }
}

impl Gradient for Rosenbrock {
    type Param = Vec<f64>;
    type Gradient = Vec<f64>;
    fn gradient(&self, x: &Vec<f64>) -> Result<Vec<f64>, Error> {
        let mut g = vec![0.0; x.len()];
        rosenbrock_grad(x, &mut g, 1.0);
        Ok(g)
    }
}

pub struct Logistic {
    pub features: Vec<f64>,
    pub labels: Vec<f64>,
}

impl Logistic {
    /// A synthetic problem: `n` points in `d` dimensions from a seeded generator, labelled
    /// by a noisy linear rule.
    pub fn synthetic(n: usize, d: usize, seed: u64) -> Logistic {
        let mut state = seed;
        let mut uniform = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let truth: Vec<f64> = (0..d).map(|k| if k % 2 == 0 { 1.5 } else { -1.0 }).collect();
        let mut features = vec![];
        let mut labels = vec![];
        for _ in 0..n {
            let row: Vec<f64> = (0..d).map(|_| 2.0 * uniform() - 1.0).collect();
            let z: f64 = row.iter().zip(&truth).map(|(a, b)| a * b).sum::<f64>() + 0.5 * (uniform() - 0.5);
            labels.push(if z > 0.0 { 1.0 } else { 0.0 });
            features.extend(row);
        }
        Logistic { features, labels }
    }
}

impl CostFunction for Logistic {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, w: &Vec<f64>) -> Result<f64, Error> {
        Ok(logistic_loss(w, &self.features, &self.labels))
    }
}

impl Gradient for Logistic {
    type Param = Vec<f64>;
    type Gradient = Vec<f64>;
    fn gradient(&self, w: &Vec<f64>) -> Result<Vec<f64>, Error> {
        let mut g = vec![0.0; w.len()];
        logistic_grad(w, &mut g, &self.features, &self.labels, 1.0);
        Ok(g)
    }
}

impl Hessian for Logistic {
    type Param = Vec<f64>;
    type Hessian = Vec<Vec<f64>>;
    fn hessian(&self, w: &Vec<f64>) -> Result<Vec<Vec<f64>>, Error> {
        let d = w.len();
        let (mut g, mut h) = (vec![0.0; d], vec![0.0; d * d]);
        logistic_hess(w, &self.features, &self.labels, &mut g, &mut h);
        Ok(h.chunks(d).map(<[f64]>::to_vec).collect())
    }
}

/// L-BFGS on Rosenbrock from the classic start: the minimiser and the iterations taken.
pub fn minimise_rosenbrock(n: usize) -> Result<(Vec<f64>, u64), Error> {
    let x0: Vec<f64> = (0..n).map(|i| if i % 2 == 0 { -1.2 } else { 1.0 }).collect();
    let solver = LBFGS::new(MoreThuenteLineSearch::new(), 7).with_tolerance_grad(1e-10)?;
    let res = Executor::new(Rosenbrock, solver).configure(|s| s.param(x0).max_iters(500)).run()?;
    let best = res.state().get_best_param().cloned().expect("a best point");
    Ok((best, res.state().get_iter()))
}

/// Newton-CG on the logistic regression from zero: the weights and the iterations taken.
pub fn fit_logistic(problem: Logistic, d: usize) -> Result<(Vec<f64>, u64), Error> {
    let solver = NewtonCG::new(MoreThuenteLineSearch::new());
    let res = Executor::new(problem, solver).configure(|s| s.param(vec![0.0; d]).max_iters(50)).run()?;
    let best = res.state().get_best_param().cloned().expect("a best point");
    Ok((best, res.state().get_iter()))
}

fn main() -> Result<(), Error> {
    let (x, iters) = minimise_rosenbrock(6)?;
    println!("L-BFGS on Rosenbrock (n = 6): {iters} iterations, x = {x:.6?}");
    let d = 5;
    let problem = Logistic::synthetic(400, d, 7);
    let (w, iters) = fit_logistic(Logistic::synthetic(400, d, 7), d)?;
    let mut g = vec![0.0; d];
    logistic_grad(&w, &mut g, &problem.features, &problem.labels, 1.0);
    let gnorm = g.iter().map(|v| v * v).sum::<f64>().sqrt();
    println!("Newton-CG on the logistic regression: {iters} iterations, w = {w:.4?}, |grad| = {gnorm:.1e}");
    Ok(())
}

#[test]
fn lbfgs_finds_the_minimum_of_rosenbrock() {
    let (x, _) = minimise_rosenbrock(6).unwrap();
    for v in &x {
        assert!((v - 1.0).abs() < 1e-6, "{x:?}");
    }
}

#[test]
fn newton_with_cotans_hessian_fits_the_logistic_regression() {
    let d = 4;
    let p = Logistic::synthetic(300, d, 11);
    // cotan's Hessian against central differences of cotan's gradient (checked itself
    // against differences of the loss).
    let w0 = vec![0.3, -0.2, 0.5, 0.1];
    let grad = |w: &[f64]| {
        let mut g = vec![0.0; d];
        logistic_grad(w, &mut g, &p.features, &p.labels, 1.0);
        g
    };
    let (mut g, mut h) = (vec![0.0; d], vec![0.0; d * d]);
    logistic_hess(&w0, &p.features, &p.labels, &mut g, &mut h);
    for j in 0..d {
        let (mut wp, mut wm) = (w0.clone(), w0.clone());
        wp[j] += 1e-5;
        wm[j] -= 1e-5;
        let fd_loss = (logistic_loss(&wp, &p.features, &p.labels) - logistic_loss(&wm, &p.features, &p.labels)) / 2e-5;
        assert!((g[j] - fd_loss).abs() < 1e-6 * fd_loss.abs().max(1.0), "gradient {j}");
        let (gp, gm) = (grad(&wp), grad(&wm));
        for i in 0..d {
            let fd = (gp[i] - gm[i]) / 2e-5;
            assert!((h[i * d + j] - fd).abs() < 1e-6 * fd.abs().max(1.0), "hessian ({i}, {j})");
        }
    }
    // Newton-CG converges to the same minimiser as L-BFGS, where the gradient vanishes.
    let (w, _) = fit_logistic(Logistic::synthetic(300, d, 11), d).unwrap();
    let gn = grad(&w).iter().map(|v| v * v).sum::<f64>().sqrt();
    assert!(gn < 1e-5, "|grad| = {gn}");
    let solver = LBFGS::new(MoreThuenteLineSearch::new(), 7).with_tolerance_grad(1e-10).unwrap();
    let res = Executor::new(Logistic::synthetic(300, d, 11), solver)
        .configure(|s| s.param(vec![0.0; d]).max_iters(200))
        .run()
        .unwrap();
    let w2 = res.state().get_best_param().unwrap();
    for (a, b) in w.iter().zip(w2) {
        assert!((a - b).abs() < 1e-5, "{w:?} vs {w2:?}");
    }
}
