//! Loops whose accesses are elements `base + j` of a buffer take a row slice of it before
//! the loop (`let x_row = &x[base..base + hi]`), so that the compiler drops the bounds
//! checks. These cases check, through the harness (finite differences in both modes,
//! dot-product test, interpreter against compiled code), that doing so never changes what
//! a loop does: loops that run no iteration with bases past the end, accesses under a
//! branch, bounds read from the buffer the loop writes, several bases into one buffer,
//! reversed and triangular loops, and loops the reverse sweep runs as partial sums. A
//! loop gets slices only for two accesses or more; an element of a fixed-size array at a
//! constant index, or a row of one within constant bounds, gets none (the compiler checks
//! those already).

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

mod common;

slice_case!(
    loops_that_run_no_iteration_with_bases_past_the_end,
    [[0.3, 0.5, 0.9, 0.2, -0.4, 1.1], [0.1, -0.2, 0.3, 0.4, 0.5, -0.6]],
    fn f(x: &[f64]) -> f64 {
        let n = x.len();
        let far = n + 7;
        let mut s = 0.0;
        // `x[far..far + 0]` and `x[far + 4..far + 2]` would panic; the loops must not. (Two
        // accesses a loop: a lone one gets no slice.)
        for j in 0..n - n {
            s += x[far + j] * x[j];
        }
        for j in 4..2 {
            s += x[far + j] * x[j];
        }
        for i in 0..n {
            // Empty when i = n - 1 (base i + 1 = n, one past the end, is fine either way).
            for j in i + 1..n {
                s += x[i] * x[j].sin();
            }
        }
        s
    }
);

slice_case!(
    accesses_under_a_branch_keep_their_own_checks,
    [[0.3, 0.5, 0.9, 0.2, -0.4], [0.1, -0.2, 0.3, 0.4, 0.5]],
    fn f(x: &[f64]) -> f64 {
        let mut s = 0.0;
        // The loop runs past the end of `x`; only the branch reads it.
        for j in 0..x.len() + 3 {
            if j < x.len() {
                s += x[j] * x[j] * (j as f64 + 1.0);
            }
        }
        s
    }
);

slice_case!(
    bounds_read_from_the_buffer_the_loop_writes,
    [[0.3, 0.5, 0.9, 0.2, -0.4, 1.1, 0.7], [0.1, -0.2, 0.3, 0.4, 0.5, -0.6, 0.8]],
    fn f(x: &[f64]) -> f64 {
        let mut v = vec![0.0; x.len() - 1];
        for i in 0..v.len() {
            // Two bases into `x` (read only), one into `v` (written).
            v[i] = x[i] * x[i + 1].cos();
        }
        for i in 0..v.len() {
            v[i] *= (0.5 * v[i]).exp();
        }
        let mut s = 0.0;
        for i in (1..v.len()).rev() {
            s += v[i] * v[i - 1];
        }
        s
    }
);

slice_case!(
    a_buffer_written_at_two_bases_stays_as_it_is,
    [[0.3, 0.5, 0.9, 0.2, -0.4, 1.1], [0.1, -0.2, 0.3, 0.4, 0.5, -0.6]],
    fn f(x: &[f64]) -> f64 {
        let mut v = x.to_vec();
        for j in 0..v.len() - 1 {
            // Reads the element the next iteration writes: the order matters.
            v[j] = v[j] * v[j + 1] + v[j].sin();
        }
        let mut s = 0.0;
        for j in 0..v.len() {
            s += v[j];
        }
        s
    }
);

slice_case!(
    rows_of_a_matrix_in_a_reversed_loop_and_partial_sums,
    [
        [0.3, 0.5, 0.9, 0.2, -0.4, 1.1, 0.7, -0.2, 0.35, 0.6, -0.8, 0.45],
        [0.1, -0.2, 0.3, 0.4, 0.5, -0.6, 0.7, 0.8, -0.9, 1.0, 0.25, -0.3]
    ],
    fn f(x: &[f64]) -> f64 {
        // A 3×4 matrix A, y = A·A[0]ᵀ row by row, then Σ y² with the rows taken backwards.
        let (m, n) = (3, 4);
        let mut y = vec![0.0; m];
        for i in (0..m).rev() {
            let mut acc = 0.0;
            for j in (0..n).rev() {
                acc += x[i * n + j] * x[j].tanh();
            }
            y[i] = acc;
        }
        let mut s = 0.0;
        for i in 0..m {
            for j in 1..n {
                s += y[i] * y[i] * x[i * n + j];
            }
        }
        s
    }
);

slice_case!(
    one_element_the_loop_adds_to_is_held_in_a_local,
    [
        [0.3, 0.5, 0.9, 0.2, -0.4, 1.1, 0.7, -0.2, 0.35, 0.6, -0.8, 0.45],
        [0.1, -0.2, 0.3, 0.4, 0.5, -0.6, 0.7, 0.8, -0.9, 1.0, 0.25, -0.3]
    ],
    fn f(x: &[f64]) -> f64 {
        // y = A·v for a 3×4 A and v = x[..4]: the reverse sweep adds to `dv[j]` and `dy[i]`
        // in loops where the index does not change.
        let (m, n) = (3, 4);
        let mut y = vec![0.0; m];
        for i in 0..m {
            for j in 0..n {
                y[i] += x[i * n + j] * x[j];
            }
        }
        let far = x.len() + 3;
        let mut s = 0.0;
        // The element past the end is never read: the loop runs no iteration.
        for _ in 0..m - m {
            s += x[far];
        }
        for i in 0..m {
            s += y[i] * y[i];
        }
        s
    }
);

slice_case!(
    two_indices_of_one_buffer_that_are_the_same_element,
    [[0.3, 0.5, 0.9, 0.2, -0.4, 1.1], [0.1, -0.2, 0.3, 0.4, 0.5, -0.6]],
    fn f(x: &[f64]) -> f64 {
        let mut v = vec![0.0; 3];
        let a = 1;
        let b = x.len() - 5;
        for j in 0..x.len() {
            // `a` and `b` are both 1: each write must see the other's.
            v[a] = v[a] * 0.5 + x[j];
            v[b] = v[b] * x[j].sin() + 1.0;
        }
        v[0] + v[1] * v[1] + v[2]
    }
);

/// `f32` buffers with an integer index table next to them: the table (read at `j`) gets a
/// slice, `x` (read at `idx[j]`) keeps its checks, `a`'s rows and `y`'s element are f32.
#[cotan::autodiff_reverse(gather_rev, Duplicated, Duplicated, Const, Active)]
#[cotan::autodiff_forward(gather_fwd, Dual, Dual, Const, Dual)]
fn gather(a: &[f32], x: &[f32], idx: &[usize]) -> f32 {
    let n = idx.len();
    let mut y = [0.0f32; 3];
    for i in 0..3 {
        for j in 0..n {
            y[i] += a[i * n + j] * x[idx[j]] * (idx[j] as f32 + 1.0);
        }
    }
    y[0] * y[1] + y[2].sin()
}

#[test]
fn f32_rows_and_an_index_table() {
    let idx = [2usize, 0, 1, 2];
    let a: Vec<f32> = (0..12).map(|k| 0.1 * k as f32 - 0.4).collect();
    let x = [0.3f32, -0.7, 0.9];
    let (mut da, mut dx) = (vec![0.0f32; 12], vec![0.0f32; 3]);
    let y = gather_rev(&a, &mut da, &x, &mut dx, &idx, 1.0);
    assert!((y - gather(&a, &x, &idx)).abs() < 1e-6);
    // Central differences in f64 of the same function, one coordinate at a time.
    let f = |a: &[f32], x: &[f32]| gather(a, x, &idx) as f64;
    let h = 1e-2f32;
    for k in 0..12 {
        let (mut p, mut m) = (a.clone(), a.clone());
        p[k] += h;
        m[k] -= h;
        let fd = (f(&p, &x) - f(&m, &x)) / (2.0 * h as f64);
        assert!((fd - da[k] as f64).abs() < 2e-3 * (1.0 + fd.abs()), "da[{k}]: {} against {fd}", da[k]);
    }
    for k in 0..3 {
        let (mut p, mut m) = (x, x);
        p[k] += h;
        m[k] -= h;
        let fd = (f(&a, &p) - f(&a, &m)) / (2.0 * h as f64);
        assert!((fd - dx[k] as f64).abs() < 2e-3 * (1.0 + fd.abs()), "dx[{k}]: {} against {fd}", dx[k]);
    }
    // Forward mode along (a, x) = (1, .., 1): the sum of the reverse's gradient.
    let (ta, tx) = (vec![1.0f32; 12], [1.0f32; 3]);
    let (_, dot) = gather_fwd(&a, &ta, &x, &tx, &idx);
    let sum: f32 = da.iter().sum::<f32>() + dx.iter().sum::<f32>();
    assert!((dot - sum).abs() < 1e-4 * (1.0 + sum.abs()), "{dot} against {sum}");
}
