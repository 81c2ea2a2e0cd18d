//! Compile-fail tests of faer values in differentiated functions (feature `faer`): what
//! stays out is an error from cotan at the user's code.
//!
//! Regenerate the snapshots with
//! `TRYBUILD=overwrite cargo test -p cotan --features faer --test compile_fail_faer`.
#![cfg(feature = "faer")]

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui_faer/*.rs");
}
