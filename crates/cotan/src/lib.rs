#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

// The runtime's linear algebra (`rt::nalgebra`, `rt::ndarray`) uses cotan's own attributes,
// whose expansions name the crate `cotan`.
extern crate self as cotan;

pub use cotan_macros::{
    autodiff_forward, autodiff_reverse, autodiff_split, custom_derivative, differentiable, hessian, hvp, kernel,
    zero_derivative,
};

pub mod check;
mod differentiable;
#[cfg(feature = "gpu")]
pub mod gpu;
pub mod guides;
// Runtime support of generated code (the tape, casts, compile-time checks): public because
// generated code names it, not part of the API.
#[doc(hidden)]
pub mod rt;

pub use cotan_macros::Differentiable;
pub use differentiable::Differentiable;
/// The `num-traits` crate, re-exported: generic float code bounds its type parameter by
/// [`Float`] (`cotan::Float`, or `cotan::num_traits::Float` with the rest of the crate).
pub use num_traits;
/// The bound of generic float code: `fn f<T: cotan::Float>(x: &[T]) -> T` gets derivatives
/// generic over [`Real`] (see "Generic float code" in the guide above). It is
/// `num_traits::Float`, re-exported so that a crate using cotan needs no `num-traits`
/// dependency of its own.
pub use num_traits::Float;
pub use rt::{Real, Record};

/// Marks a `for` loop whose reverse-mode derivative checkpoints: `for t in
/// cotan::checkpoint(0..steps, cotan::Every(100)) { .. }`. Without cotan's transform (in
/// the primal, in forward mode) it is the iterator it is given, unchanged. In reverse mode
/// the forward sweep runs the loop without recording it and saves the loop's state (every
/// memory and every variable its body writes) at the start of every `k`-th iteration; the
/// reverse sweep restores each snapshot in turn, last first, runs that segment's
/// iterations again recording them, and goes back through them. The tape then holds
/// `⌈steps/k⌉` snapshots and one segment's record instead of every iteration's record, for
/// one more run of each iteration. [`Binomial`] is Revolve's schedule. See "Checkpointing
/// long loops" in the crate documentation.
#[inline]
pub fn checkpoint<I: IntoIterator, S: Schedule>(iter: I, schedule: S) -> I::IntoIter {
    let _ = schedule;
    iter.into_iter()
}

/// Marks a parallel loop of a `#[cotan::kernel]` function: `for i in cotan::par(0..n) {
/// .. }`. The iterations may run in any order and at once: in a function with
/// `#[cotan::kernel]` they run on rayon's thread pool (and so do its derivatives'); in any
/// other function this is the range it is given, a plain sequential loop, so the function
/// is ordinary Rust either way. See "Kernels" in the crate documentation for what a
/// parallel loop's body may do.
#[inline]
pub fn par(range: core::ops::Range<usize>) -> core::ops::Range<usize> {
    range
}

/// A checkpointing schedule for [`checkpoint`]: [`Every`] or [`Binomial`].
pub trait Schedule {}

/// Snapshots every `k` iterations ([`checkpoint`]); `k` is an integer literal or constant,
/// at least 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Every(pub usize);

impl Schedule for Every {}

/// Griewank's binomial schedule (Revolve's) with at most `c` snapshots held at once
/// ([`checkpoint`]); `c` is an integer literal or constant, at least 1. For `T` iterations
/// it recomputes the fewest iterations any schedule with `c` snapshots can: each one at most
/// `r` times, for the least `r` with `(c + r)! / (c! r!) >= T`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Binomial(pub usize);

impl Schedule for Binomial {}
