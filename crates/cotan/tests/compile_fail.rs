//! Compile-fail tests for cotan's diagnostics: every file in `tests/ui/` misuses
//! `#[autodiff_forward]`/`#[autodiff_reverse]` (wrong activities, an attribute on a
//! non-function, code outside the supported subset) and must fail to compile with one
//! error from cotan that points at the offending construct and says what to do.
//!
//! Regenerate the snapshots with `TRYBUILD=overwrite cargo test -p cotan --test compile_fail`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
