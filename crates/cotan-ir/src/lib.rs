//! cotan's intermediate representation.
//!
//! A function is a tree of [`Region`]s holding [`Op`]s in SSA form. Control flow is
//! structured (`If`, `For`, `While`); Rust's mutable locals are [`Var`]s read and written
//! by `GetVar`/`SetVar`, and arrays are memory values read and written by `Load`/`Store`,
//! so every overwrite is visible to the differentiation passes.
//!
//! This crate depends on nothing else of cotan's.

pub mod dead_stores;
pub mod dense;
mod function;
pub mod fuse;
mod interp;
mod ops;
mod parse;
mod print;
pub mod simplify;
mod types;
mod verify;

pub use dense::{IdMap, IdSet};
pub use function::*;
pub use interp::{exec, exec_with, run, run_with_limit, Arg, Callees, InterpError, NoCallees, Val, DEFAULT_STEP_LIMIT};
pub use ops::*;
pub use parse::{parse, ParseError};
pub use print::{print, print_op, print_ty};
pub use types::*;

/// The hash maps and sets of cotan's passes. Their keys are small integers (values, ids)
/// and names; `FxHash` hashes them several times faster than std's `SipHash`, which
/// matters most where it runs as a proc macro, unoptimized.
pub type HashMap<K, V> = std::collections::HashMap<K, V, rustc_hash::FxBuildHasher>;
/// See [`HashMap`].
pub type HashSet<T> = std::collections::HashSet<T, rustc_hash::FxBuildHasher>;
pub use verify::{verify, VerifyError};
