//! cotan: automatic differentiation for Rust by source transformation, on stable Rust.
//!
//! Put `#[autodiff_forward(...)]` or `#[autodiff_reverse(...)]` on an ordinary function,
//! with the syntax and signatures of nightly `std::autodiff`, and cotan generates the
//! derivative as plain Rust beside it.
//!
//! ```
//! use cotan::autodiff_reverse;
//!
//! #[autodiff_reverse(d_rosenbrock, Active, Active, Active)]
//! fn rosenbrock(x: f64, y: f64) -> f64 {
//!     (1.0 - x).powi(2) + 100.0 * (y - x.powi(2)).powi(2)
//! }
//!
//! let (value, dx, dy) = d_rosenbrock(1.0, 3.0, 1.0);
//! assert_eq!((value, dx, dy), (400.0, -800.0, 400.0));
//! ```

pub use cotan_macros::{
    autodiff_forward, autodiff_reverse, autodiff_split, custom_derivative, differentiable, hessian, hvp,
    zero_derivative,
};

// The README's examples run as doctests, so what it promises is tested.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

pub mod check;
mod differentiable;
pub mod rt;

pub use cotan_macros::Differentiable;
pub use differentiable::Differentiable;
/// `num_traits`, whose `Float` bounds generic float code.
pub use num_traits;
pub use rt::{Real, Record};
