//! Differentiation of cotan IR: activity analysis, forward mode, reverse mode, and the
//! derivative rules of the primitive operations.

pub mod activity;
mod counters;
mod emit;
mod final_lens;
mod final_reads;
mod forward;
pub mod link;
mod restored;
mod reverse;
pub mod rules;
mod spec;

pub use forward::forward;
pub use link::{passed_ty, Avail, CallSite, Linker, Need, NoCalls};
pub use reverse::{reverse, reverse_split};
pub use spec::{check, Activity, AdError, Mode, Spec, SpecError, Target};
