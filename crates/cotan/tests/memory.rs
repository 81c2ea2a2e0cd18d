//! What reverse mode saves per loop iteration, read off the generated IR: the bytes pushed
//! on the tape by one iteration of each loop of the forward sweep (pushes in nested loops
//! count for those loops). Peak extra memory of a call is these figures times the trip
//! counts, never the whole trace. `cargo test -p cotan --test memory -- --nocapture` prints
//! the table.

mod common;

use common::bytes_per_iteration;
use cotan_ad::{Activity, Mode, Spec};

/// The bytes per iteration of the loops of the reverse derivative's forward sweep.
fn report(name: &str, src: &str, inputs: Vec<Activity>, ret: Option<Activity>) -> Vec<usize> {
    let item: syn::ItemFn = syn::parse_str(src).unwrap();
    let mut f = cotan_syntax::lower_fn(&item.sig, &item.block).unwrap().func;
    cotan_ir::simplify::cse(&mut f);
    let n_loops = bytes_per_iteration(&f).len();
    let mut g =
        cotan_ad::reverse(&f, &Spec { mode: Mode::Reverse, inputs, ret, width: 1 }, "rev", &mut cotan_ad::NoCalls)
            .unwrap();
    cotan_ir::simplify::cse(&mut g);
    // The forward sweep's loops come first, in the primal's order.
    let bytes: Vec<usize> = bytes_per_iteration(&g).into_iter().take(n_loops).collect();
    println!("{name:<40} {bytes:?}");
    bytes
}

const SLICE: fn() -> (Vec<Activity>, Option<Activity>) = || (vec![Activity::Duplicated], Some(Activity::Active));

#[test]
fn saved_bytes_per_iteration() {
    println!("{:<40} bytes saved per iteration of each loop", "function");
    let (i, r) = SLICE();
    // Sums and branches on read-only data save nothing: everything is recomputed.
    assert_eq!(
        report("control_flow", "fn f(x: &[f64]) -> f64 { let mut s = 0.0; for i in 0..x.len() { if x[i] > 0.0 { s += x[i].sin(); } else { s += x[i].cos(); } } s }", i.clone(), r),
        [0]
    );
    assert_eq!(
        report(
            "linear recurrence",
            "fn f(x: &[f64]) -> f64 { let mut v = 0.0; for i in 0..x.len() { v = 0.95 * v + 0.01 * x[i]; } v }",
            i.clone(),
            r
        ),
        [0]
    );
    // A nonlinear carried value saves its old value: one f64.
    assert_eq!(
        report(
            "nonlinear carried value",
            "fn f(x: &[f64]) -> f64 { let mut v = 1.0; for i in 0..x.len() { v = (v * x[i]).sin() + 0.5 * v; } v * v }",
            i.clone(),
            r
        ),
        [8]
    );
    // Overwrite after read: the overwritten value and its sine.
    assert_eq!(
        report(
            "overwrite after read (in place)",
            "fn f(x: &mut [f64]) { for i in 0..x.len() { x[i] = x[i].sin() * x[i]; } }",
            vec![Activity::Duplicated],
            None
        ),
        [16]
    );
    // A while loop saves its carried value; its trip count is one usize per call.
    assert_eq!(
        report("newton sqrt (while)", "fn f(a: f64) -> f64 { let mut y = a.max(1.0); while (y * y - a).abs() > 1e-15 * a { y = 0.5 * (y + a / y); } y }", vec![Activity::Active], Some(Activity::Active)),
        [8]
    );
    // A recurrence through an array reads values the loop itself overwrote.
    assert_eq!(
        report(
            "array recurrence",
            "fn f(x: &mut [f64]) { for i in 1..x.len() { x[i] += 0.5 * x[i - 1]; } }",
            vec![Activity::Duplicated],
            None
        ),
        [0]
    );
    // A buffer read after its last write is read again in the reverse sweep, not saved
    // (the first loop saves exp(x[i]), which its derivative needs).
    assert_eq!(
        report("buffer read after its last write", "fn f(x: &[f64]) -> f64 { let n = x.len(); let mut h = vec![0.0; n]; for i in 0..n { h[i] = x[i].exp(); } let mut s = 0.0; for i in 0..n { s += h[i] * x[i]; } s }", i.clone(), r),
        [8, 0]
    );
    let chol = "fn logdet(a: &mut [f64], n: usize) -> f64 {
        let mut ld = 0.0;
        for j in 0..n {
            let mut d = a[j * n + j];
            for k in 0..j { d -= a[j * n + k] * a[j * n + k]; }
            let l = d.sqrt();
            a[j * n + j] = l;
            ld += 2.0 * l.ln();
            for i in j + 1..n {
                let mut s = a[i * n + j];
                for k in 0..j { s -= a[i * n + k] * a[j * n + k]; }
                a[i * n + j] = s / l;
            }
        }
        ld
    }";
    let b =
        report("cholesky log-determinant", chol, vec![Activity::Duplicated, Activity::Const], Some(Activity::Active));
    println!("  (outer j loop, k loop, i loop, inner k loop)");
    assert_eq!(b.len(), 4);
    assert!(b.iter().all(|&x| x <= 24), "{b:?}");
}
