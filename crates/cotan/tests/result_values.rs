//! `Result`s in differentiated code, held as an `Option` of the `Ok` value (whether there was
//! an error, not which): constructors returning `Result<Self, E>` unwrapped, `?` in helpers,
//! `match` on `Ok`/`Err`, `if let Ok(..)`, `let Ok(..) = .. else`, `is_ok`, `is_err`, `ok`.
//! Every derivative is checked against finite differences and forward mode against reverse
//! mode (dot-product test).

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

mod common;

use cotan::{autodiff_forward, autodiff_reverse};

#[derive(Debug)]
pub enum StatsError {
    BadScale,
    Negative(f64),
}

pub struct Normal {
    mu: f64,
    sigma: f64,
}

impl Normal {
    pub fn new(mu: f64, sigma: f64) -> Result<Normal, StatsError> {
        if sigma <= 0.0 {
            return Err(StatsError::BadScale);
        }
        Ok(Normal { mu, sigma })
    }

    pub fn ln_pdf(&self, x: f64) -> f64 {
        let z = (x - self.mu) / self.sigma;
        -0.5 * z * z - self.sigma.ln() - 0.918_938_533_204_672_8
    }
}

fn checked_sqrt(x: f64) -> Result<f64, StatsError> {
    if x < 0.0 {
        Err(StatsError::Negative(x))
    } else {
        Ok(x.sqrt())
    }
}

fn root_sum(x: &[f64]) -> Result<f64, StatsError> {
    let mut s = 0.0;
    for &v in x {
        s += checked_sqrt(v)?;
    }
    Ok(s)
}

fn first_root(x: &[f64]) -> Result<f64, StatsError> {
    match checked_sqrt(x[0]) {
        Ok(r) => Ok(2.0 * r),
        Err(e) => Err(e),
    }
}

#[autodiff_reverse(d_results, Duplicated, Active)]
#[autodiff_forward(t_results, Dual, Dual)]
fn results(x: &[f64]) -> f64 {
    let n = Normal::new(x[0], x[1]).unwrap();
    let m = Normal::new(x[1], x[0] * x[0]).expect("a positive scale");
    let t = match root_sum(x) {
        Ok(v) => v,
        Err(_) => return f64::NAN,
    };
    let mut extra = 0.0;
    if let Ok(r) = first_root(x) {
        extra += r;
    }
    let Ok(again) = checked_sqrt(x[2]) else { return f64::NAN };
    let ok = checked_sqrt(x[1]).is_ok() && !checked_sqrt(x[2]).is_err();
    let opt = checked_sqrt(x[0]).ok().unwrap_or(0.0);
    n.ln_pdf(x[2]) + m.ln_pdf(x[0]) + t + extra + again * if ok { 1.5 } else { 0.5 } + opt
}

#[test]
fn results_held_as_options() {
    for x in [[0.3, 0.7, 0.2], [1.1, 0.4, 2.5]] {
        common::check_slice_fn("results", results, d_results, t_results, &x);
    }
    // An error on the way: the NaN of the primal, in both modes.
    let x = [0.3, 0.7, -0.2];
    let mut g = [0.0; 3];
    assert!(d_results(&x, &mut g, 1.0).is_nan() && results(&x).is_nan());
    assert!(t_results(&x, &[1.0, 0.0, 0.0]).0.is_nan());
}
