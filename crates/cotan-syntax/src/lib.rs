//! Lowering of the Rust subset cotan differentiates (parsed by syn) to cotan's IR.
//!
//! Errors are `syn::Error`s whose spans point at the unsupported construct and whose
//! text says what to do instead.

mod agg;
mod chain;
mod chunk_len;
mod closure;
mod const_generic;
mod copies;
mod env;
mod exits;
mod expr;
mod generic;
mod infer;
mod inline;
mod iter;
mod lend;
mod lower;
mod matching;
mod nested;
mod operators;
mod pointers;
mod print;
mod record;
mod signature;
mod slices;
mod span;
mod structs;

pub use env::{CalleeShape, Env, FieldShape, FieldType, Inlined, NoEnv, Operand, Structure};
pub use expr::{float_constant, int_constant};
pub use inline::inline_reason;
pub use lower::{lower_fn, lower_fn_in, lower_signature, Lowered};
pub use record::{container_of, is_record, record_type};
pub use signature::{container_type, param_type, return_type, scalar_type, ResultShape};
