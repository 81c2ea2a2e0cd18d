//! Functions of another crate, for cotan's tests of calls across crates: marked ones export
//! their derivatives; unmarked ones cannot be differentiated from another crate.

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

/// Not marked: a function of another crate that cotan cannot differentiate.
pub fn unmarked(x: f64) -> f64 {
    x.tanh()
}
