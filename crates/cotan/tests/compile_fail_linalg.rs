//! Compile-fail tests of nalgebra and ndarray values in differentiated functions (features
//! `nalgebra` and `ndarray`): what stays out is an error from cotan at the user's code.
//!
//! Regenerate the snapshots with
//! `TRYBUILD=overwrite cargo test -p cotan --features nalgebra,ndarray --test compile_fail_linalg`.
#![cfg(all(feature = "nalgebra", feature = "ndarray"))]

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui_linalg/*.rs");
    // faer's types with its feature off (this crate's own build may have it on).
    if !cfg!(feature = "faer") {
        t.compile_fail("tests/ui_linalg_faer_off/*.rs");
    }
}
