//! Runnable examples of cotan, each a program in `examples/` that uses cotan as a crate
//! outside this repository would (its only dependency is `cotan`):
//!
//! ```sh
//! cargo run --release -p cotan-examples --example curve_fit      # a curve fit by gradient descent
//! cargo run --release -p cotan-examples --example generic_float  # f32 and f64 from one function
//! cargo run --release -p cotan-examples --example train_mlp      # an MLP trained, gradients of a whole struct
//! cargo run --release -p cotan-examples --example mass_spring    # springs tuned through a 100-step simulation
//! ```
//!
//! `train_mlp` and `mass_spring` have tests that `cargo test` runs.
