//! Runnable examples of cotan, each a program in `examples/` that uses cotan as a crate
//! outside this repository would (its only dependency is `cotan`):
//!
//! ```sh
//! cargo run --release -p cotan-examples --example curve_fit      # a curve fit by gradient descent
//! cargo run --release -p cotan-examples --example generic_float  # f32 and f64 from one function
//! ```
