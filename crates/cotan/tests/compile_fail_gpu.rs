//! Compile-fail tests of `#[cotan::kernel(gpu)]` (feature `gpu`): what the GPU backend
//! cannot run is an error from cotan at the construct, saying what to do.
//!
//! Regenerate the snapshots with
//! `TRYBUILD=overwrite cargo test -p cotan --features gpu --test compile_fail_gpu`.
#![cfg(feature = "gpu")]

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui_gpu/*.rs");
}
