//! The benchmark suite of cotan: every row of the suite (`docs/benchmarks.md`) written as ordinary
//! Rust with cotan's attributes ([`models`]), the same rows for the peers ([`peers`]),
//! hand-written adjoints ([`hand`]), and the runner's machinery. Run it with
//! `cargo run --release -p cotan-bench --features peers,plot -- [--quick] [--json FILE] [--svg FILE]`.

pub mod models;

#[cfg(feature = "ad")]
pub mod bench;
#[cfg(feature = "ad")]
pub mod checkpointing;
#[cfg(feature = "ad")]
pub mod compile_time;
#[cfg(feature = "ad")]
pub mod expand;
#[cfg(feature = "ad")]
pub mod hand;
#[cfg(feature = "ad")]
pub mod kernels;
#[cfg(feature = "ad")]
pub mod peers;
#[cfg(feature = "ad")]
pub mod report;
#[cfg(feature = "ad")]
pub mod rows;
#[cfg(feature = "ad")]
pub mod scaling;
