//! cotan's intermediate representation.
//!
//! A function is a tree of [`Region`]s holding [`Op`]s in SSA form. Control flow is
//! structured (`If`, `For`, `While`); Rust's mutable locals are [`Var`]s read and written
//! by `GetVar`/`SetVar`, and arrays are memory values read and written by `Load`/`Store`,
//! so every overwrite is visible to the differentiation passes.
//!
//! This crate depends on nothing else of cotan's.

mod function;
mod ops;
mod types;

pub use function::*;
pub use ops::*;
pub use types::*;
