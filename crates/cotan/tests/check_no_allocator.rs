//! Without `CountingAllocator` installed, `.no_allocations()` fails instead of passing
//! silently.

use cotan::check::{Check, Failure};

#[test]
fn no_allocations_without_the_counting_allocator_fails() {
    let err = Check::new()
        .arg("x", &[0.5, 2.0])
        .primal(|a| a.slice("x")[0] * a.slice("x")[1])
        .reverse(|a, d, dret| {
            let x = a.slice("x");
            let dx = d.slice_mut("x");
            dx[0] += x[1] * dret;
            dx[1] += x[0] * dret;
            x[0] * x[1]
        })
        .no_allocations()
        .run()
        .unwrap_err();
    assert!(matches!(err, Failure::AllocatorNotInstalled), "{err}");
    assert!(err.to_string().contains("#[global_allocator]"), "{err}");
}
