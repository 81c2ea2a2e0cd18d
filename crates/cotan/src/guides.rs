//! Guides beyond the crate-level documentation (which is the main guide).
//!
//! - [`from_std_autodiff`]: for users of nightly `std::autodiff`: what is identical,
//!   what cotan adds.
//! - [`finding_ad_bugs`]: checking derivatives with `cotan::check` in your tests and with
//!   the `cotan` command (`check`, `minimize`, `fuzz`).

#[doc = include_str!("../docs/from-std-autodiff.md")]
pub mod from_std_autodiff {}

#[doc = include_str!("../docs/finding-ad-bugs.md")]
pub mod finding_ad_bugs {}
