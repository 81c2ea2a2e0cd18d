#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

// The runtime's linear algebra (`rt::nalgebra`, `rt::ndarray`) uses cotan's own attributes,
// whose expansions name the crate `cotan`.
extern crate self as cotan;

pub use cotan_macros::{
    autodiff_forward, autodiff_reverse, autodiff_split, custom_derivative, differentiable, hessian, hvp,
    zero_derivative,
};

pub mod check;
mod differentiable;
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
