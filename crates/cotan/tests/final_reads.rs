//! In-place algorithms: reads of a buffer that the function overwrites, where no later
//! write changes the element read (a Cholesky or LU factorisation in place, a recurrence
//! `x[i] += x[i - 1]`). Reverse mode reads those elements again at the end instead of
//! saving them. Each case is checked by the harness (finite differences in both modes,
//! dot-product test, interpreter against compiled code), beside cases whose reads a later
//! write does change, which must stay saved; what each saves per loop iteration is
//! checked on the generated IR.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

mod common;

use cotan_ad::{Activity, Mode, Spec};

/// Bytes the reverse derivative's forward sweep pushes per iteration of each loop.
fn saved(src: &str) -> Vec<usize> {
    let item: syn::ItemFn = syn::parse_str(src).unwrap();
    let mut f = cotan_syntax::lower_fn(&item.sig, &item.block).unwrap().func;
    cotan_ir::simplify::cse(&mut f);
    let n_loops = common::bytes_per_iteration(&f).len();
    let spec = Spec { mode: Mode::Reverse, inputs: vec![Activity::Duplicated], ret: Some(Activity::Active), width: 1 };
    let mut g = cotan_ad::reverse(&f, &spec, "rev", &mut cotan_ad::NoCalls).unwrap();
    cotan_ir::simplify::cse(&mut g);
    common::bytes_per_iteration(&g).into_iter().take(n_loops).collect()
}

/// A `slice_case!` whose function's source is also the constant `$src`, for the checks of
/// what it saves.
macro_rules! in_place_case {
    ($test:ident, $src:ident, [$($pt:expr),+ $(,)?], $($item:tt)*) => {
        const $src: &str = stringify!($($item)*);
        slice_case!($test, [$($pt),+], $($item)*);
    };
}

in_place_case!(
    cholesky_in_place_then_solve,
    CHOLESKY,
    [[0.3, 0.5, 0.9, 0.2, -0.4, 1.1, 0.7, -0.2], [0.1, -0.2, 0.3, 0.45, 0.5, -0.6, 0.7, 0.8]],
    fn f(x: &[f64]) -> f64 {
        let n = 4;
        let mut l = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..i + 1 {
                let d = x[i] - x[j];
                let mut v = (-0.5 * d * d).exp();
                if i == j {
                    v += 1.0 + x[i] * x[i];
                }
                l[i * n + j] = v;
            }
        }
        for i in 0..n {
            for j in 0..i + 1 {
                let mut acc = l[i * n + j];
                for k in 0..j {
                    acc -= l[i * n + k] * l[j * n + k];
                }
                if i == j {
                    l[i * n + i] = acc.sqrt();
                } else {
                    l[i * n + j] = acc / l[j * n + j];
                }
            }
        }
        let mut z = vec![0.0; n];
        for i in 0..n {
            let mut acc = x[i + 4];
            for k in 0..i {
                acc -= l[i * n + k] * z[k];
            }
            z[i] = acc / l[i * n + i];
        }
        let mut s = 0.0;
        for i in 0..n {
            s += z[i] * z[i] + l[i * n + i].ln();
        }
        s
    }
);

#[test]
fn cholesky_saves_nothing_in_its_inner_loops() {
    // Loops: fill (i, j), factor (i, j, k), solve (i, k), sum (i). The factor's inner loop
    // and the solve's read elements written for the last time before.
    let bytes = saved(CHOLESKY);
    println!("{bytes:?}");
    assert_eq!(bytes.len(), 8, "{bytes:?}");
    assert_eq!(bytes[4], 0, "the factorisation's inner loop: {bytes:?}");
    assert_eq!(bytes[6], 0, "the solve's inner loop: {bytes:?}");
}

in_place_case!(
    lu_in_place,
    LU,
    [[2.0, 0.3, 0.5, 0.1, 0.2, 3.0, 0.4, 0.3, 0.5, 0.1, 4.0, 0.2, 0.3, 0.6, 0.1, 5.0]],
    fn f(x: &[f64]) -> f64 {
        // Doolittle's LU without pivoting, in place: `a[i * n + k]` and `a[k * n + j]` are
        // final when read; `a[i * n + j]` is updated again by the next `k`.
        let n = 4;
        let mut a = vec![0.0; n * n];
        for i in 0..n * n {
            a[i] = x[i] + 0.1 * x[i] * x[i];
        }
        for k in 0..n {
            for i in k + 1..n {
                a[i * n + k] = a[i * n + k] / a[k * n + k];
                for j in k + 1..n {
                    a[i * n + j] -= a[i * n + k] * a[k * n + j];
                }
            }
        }
        let mut s = 0.0;
        for i in 0..n {
            s += a[i * n + i].ln() + 0.3 * a[i * n + (i + 1) % n];
        }
        s
    }
);

#[test]
fn lu_saves_only_the_updated_elements() {
    let src = LU;
    // Loops: fill, k, i, j, sum. The `-=` is linear in the element it updates: nothing of
    // the innermost loop is saved; the division saves its old numerator only.
    let bytes = saved(src);
    assert_eq!(bytes[3], 0, "{bytes:?}");
}

in_place_case!(
    recurrence_in_place,
    RECURRENCE,
    [[0.3, 0.5, 0.9, 0.2, -0.4, 1.1], [0.1, -0.2, 0.3, 0.4, 0.5, -0.6]],
    fn f(x: &[f64]) -> f64 {
        // `y[i - 1]` is final when read; `y[i]` is read before this iteration writes it.
        let n = x.len();
        let mut y = vec![0.0; n];
        for i in 0..n {
            y[i] = x[i];
        }
        for i in 1..n {
            y[i] = (y[i] * y[i - 1]).sin() + y[i];
        }
        y[n - 1] * y[n - 2]
    }
);

#[test]
fn recurrence_reads_the_previous_element_again() {
    let src = RECURRENCE;
    // The second loop saves the old `y[i]` (overwritten in the same iteration) only.
    assert_eq!(saved(src), [0, 8]);
}

in_place_case!(
    sweeps_that_write_again,
    SWEEPS,
    [[0.3, 0.5, 0.9, 0.2, -0.4, 1.1], [0.1, -0.2, 0.3, 0.4, 0.5, -0.6]],
    fn f(x: &[f64]) -> f64 {
        // Gauss-Seidel sweeps: `u[i - 1]` is written by this sweep and again by the next:
        // not final, saved.
        let n = x.len();
        let mut u = vec![0.0; n];
        for i in 0..n {
            u[i] = x[i];
        }
        for _t in 0..3 {
            for i in 1..n - 1 {
                u[i] = 0.5 * (u[i - 1] * u[i + 1]).cos() + 0.25 * u[i];
            }
        }
        u[1] + u[n - 2] * u[2]
    }
);

#[test]
fn sweeps_that_write_again_save_their_reads() {
    let src = SWEEPS;
    // `u[i - 1]` and `u[i + 1]` are saved (or their product).
    assert!(saved(src)[2] >= 8, "{:?}", saved(src));
}

slice_case!(
    read_ahead_of_a_later_write,
    [[0.3, 0.5, 0.9, 0.2, -0.4, 1.1], [0.1, -0.2, 0.3, 0.4, 0.5, -0.6]],
    fn f(x: &[f64]) -> f64 {
        // `w[i + 1]` is read before iteration i + 1 writes it; `w[j]` for j ≤ i after.
        let n = x.len();
        let mut w = vec![1.0; n + 1];
        let mut s = 0.0;
        for i in 0..n {
            s += (w[i + 1] * x[i]).sin();
            w[i] = x[i] * x[i];
            for j in 0..i + 1 {
                s += (w[j] * s).cos() * 0.1;
            }
        }
        s
    }
);

slice_case!(
    diagonal_read_in_the_other_branch,
    [[0.3, 0.5, 0.9, 0.2, -0.4, 1.1, 0.7, -0.2, 0.35], [0.1, -0.2, 0.3, 0.4, 0.5, -0.6, 0.7, 0.8, -0.9]],
    fn f(x: &[f64]) -> f64 {
        // `a[j * n + j]` read where `i != j`: final (written at (j, j), before); where the
        // branch is `i == j` it is this iteration's own element, read after its write.
        let n = 3;
        let mut a = vec![0.0; n * n];
        let mut s = 0.0;
        for i in 0..n {
            for j in 0..i + 1 {
                if i == j {
                    a[i * n + j] = x[i * n + j].exp();
                    s += a[j * n + j].sin();
                } else {
                    a[i * n + j] = x[i * n + j] * a[j * n + j];
                    s += (a[j * n + j] * s).cos();
                }
            }
        }
        s
    }
);

in_place_case!(
    overwritten_by_a_later_loop,
    LATER_LOOP,
    [[0.3, 0.5, 0.9, 0.2, -0.4, 1.1], [0.1, -0.2, 0.3, 0.4, 0.5, -0.6]],
    fn f(x: &[f64]) -> f64 {
        // `y[i]` is final in the first loop's own iterations, but the second loop writes it
        // again: saved.
        let n = x.len();
        let mut y = vec![0.0; n];
        for i in 0..n {
            y[i] = x[i].exp();
        }
        let mut s = 0.0;
        for i in 0..n {
            s += (y[i] * x[(i + 1) % n]).sin();
        }
        for i in 0..n {
            y[i] = x[i] * s;
        }
        s + y[0] * y[n - 1]
    }
);

slice_case!(
    rows_of_a_length_known_at_run_time,
    [[0.3, 0.5, 0.9, 0.2, -0.4, 1.1, 0.7, -0.2, 0.35], [0.1, -0.2, 0.3, 0.45, 0.5, -0.6, 0.7, 0.8, -0.3]],
    fn f(x: &[f64]) -> f64 {
        // A lower-triangular factor of a 3 × 3 matrix, the row length `n` from the input, with
        // the rows written one after the other and read back.
        let n = (x.len() as f64).sqrt() as usize;
        let mut l = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..i + 1 {
                let mut acc = x[i * n + j] + if i == j { 2.0 } else { 0.0 };
                for k in 0..j {
                    acc -= l[i * n + k] * l[j * n + k];
                }
                l[i * n + j] = if i == j { acc.abs().sqrt() } else { acc / l[j * n + j] };
            }
        }
        let mut s = 0.0;
        for i in 0..n {
            for k in 0..i + 1 {
                s += l[i * n + k] * l[i * n + k] * x[k];
            }
        }
        s
    }
);

#[test]
fn a_later_loop_that_writes_again_keeps_the_reads_saved() {
    let src = LATER_LOOP;
    assert!(saved(src)[1] >= 8, "{:?}", saved(src));
}
