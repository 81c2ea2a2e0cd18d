//! The benchmark models: each row of the benchmark suite (`docs/benchmarks.md`) as an ordinary Rust function
//! with cotan's attributes. With the `ad` feature off the attributes are stripped and the
//! functions compile as plain Rust (the compile-time comparison builds this module alone,
//! so it uses nothing but `std` and `cotan`).
//!
//! Names of the generated functions, for a model `f`: `f_rev` (reverse, `Active` result:
//! value and gradient), `f_rev_only` (reverse, `ActiveOnly`: gradient only), `f_fwd` (one
//! forward-mode JVP, returns value and tangent), `f_hvp` (Hessian-vector product).

// The rows are written as the index loops of their definitions.
#![allow(clippy::needless_range_loop)]

pub mod adbench;
pub mod blog;
pub mod large_block;
pub mod mooncake;
pub mod second_order;
