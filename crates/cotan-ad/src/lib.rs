//! Differentiation of cotan IR: activity analysis, forward mode, reverse mode, and the
//! derivative rules of the primitive operations.

pub mod activity;
mod emit;
mod forward;
mod reverse;
pub mod rules;
mod spec;

pub use forward::{forward, forward_of_reverse_mask};
pub use reverse::reverse;
pub use spec::{check, Activity, AdError, Mode, Spec, SpecError, Target};
