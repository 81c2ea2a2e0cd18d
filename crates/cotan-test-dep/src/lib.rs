//! Functions of another crate, for cotan's tests of calls across crates: marked ones export
//! their derivatives; unmarked ones are read from this crate's sources and lowered where
//! they are called.

// Written the way users write numerical code (index loops).
#![allow(clippy::needless_range_loop)]

/// A marked function calling a private helper: its derivatives are exported.
#[cotan::differentiable]
pub fn energy(v: &[f64], k: f64) -> f64 {
    let mut e = 0.0;
    for i in 0..v.len() {
        e += spring(v[i], k);
    }
    e
}

fn spring(x: f64, k: f64) -> f64 {
    0.5 * k * x * x + (x * k).sin()
}

/// In place, marked.
#[cotan::differentiable]
pub fn damp(v: &mut [f64], c: f64) {
    for i in 0..v.len() {
        v[i] *= (-c * v[i] * v[i]).exp();
    }
}

/// Not marked: cotan lowers it where it is called.
pub fn unmarked(x: f64) -> f64 {
    x.tanh()
}

/// Not marked, with a private helper and a module.
pub fn norm_sq(v: &[f64]) -> f64 {
    v.iter().map(|a| square(*a)).sum()
}

fn square(a: f64) -> f64 {
    a * a
}

pub mod shapes {
    /// Not marked, in a module, writing through `&mut`.
    pub fn scale(v: &mut [f64], s: f64) {
        for x in v.iter_mut() {
            *x *= super::unmarked(s);
        }
    }
}

/// Not marked and recursive: cotan cannot lower it where it is called.
pub fn power(x: f64, n: u32) -> f64 {
    if n == 0 {
        1.0
    } else {
        x * power(x, n - 1)
    }
}

/// Marked, recursive, with integer parameters of types a literal does not default to.
#[cotan::differentiable]
pub fn marked_power(x: f64, n: u32, scale: usize) -> f64 {
    if n == 0 {
        scale as f64
    } else {
        x * marked_power(x, n - 1, scale)
    }
}

/// Not marked, and built on what cotan cannot lower (a vector of tuples): the error at
/// its call says what to do.
pub fn sum_of_pairs(v: &[f64]) -> f64 {
    let pairs: Vec<(f64, f64)> = v.iter().map(|x| (*x, x * x)).collect();
    pairs.iter().map(|p| p.0 * p.1).sum()
}
