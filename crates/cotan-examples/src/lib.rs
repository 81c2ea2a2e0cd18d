//! Runnable examples of cotan, each a program in `examples/` that uses cotan as a crate
//! outside this repository would (its only dependency is `cotan`):
//!
//! ```sh
//! cargo run --release -p cotan-examples --example curve_fit
//! ```
