//! Numerical models written the way an ordinary Rust user would write them for
//! `std::autodiff`, with the one `use` line switched to cotan.
//!
//! Each module is one family of models; the tests in `tests/` check every derivative
//! against central finite differences and forward against reverse mode.

#![cfg_attr(not(feature = "pending"), allow(unused))]
#![allow(clippy::needless_range_loop, clippy::type_complexity)]

pub mod mass_spring;
pub mod mlp;
pub mod ode;
pub mod posteriordb;
pub mod regression;
#[cfg(feature = "repros")]
pub mod repros;
pub mod rewritten;
pub mod test_functions;

/// Dot product of two equally long slices.
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// A tiny deterministic pseudo-random generator (SplitMix64) for synthetic data.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [lo, hi).
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.uniform()
    }

    /// Standard normal by Box–Muller.
    pub fn normal(&mut self) -> f64 {
        let u1 = self.uniform().max(f64::MIN_POSITIVE);
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}
