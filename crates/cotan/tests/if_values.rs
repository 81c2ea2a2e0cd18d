//! Values chosen by an `if` (`let ip = if i == n - 1 { i } else { i + 1 };`) that the
//! reverse sweep needs are recomputed there by running the `if` again, instead of being
//! saved on the tape, when each branch computes the value from cheap ops (arithmetic,
//! reads of memory nothing writes afterwards). Each case is checked by the harness (finite
//! differences in both modes, dot-product test, interpreter against compiled code), next
//! to `if`s that must stay saved: a branch that leaves the variable as it was, a write of
//! the variable between the `if` and the read, a condition on a value the loop changes.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

mod common;

slice_case!(
    neighbour_indices_of_a_stencil,
    [[0.3, 0.5, 0.9, 0.2, -0.4, 1.1, 0.7], [0.1, -0.2, 0.3, 0.4, 0.5, -0.6, 0.8]],
    fn f(x: &[f64]) -> f64 {
        let n = x.len();
        let mut s = 0.0;
        for i in 0..n {
            // Neumann borders: the neighbour of an end is the end itself.
            let ip = if i == n - 1 { i } else { i + 1 };
            let im = if i == 0 { i } else { i - 1 };
            let lap = x[ip] + x[im] - 2.0 * x[i];
            s += lap * lap * x[i] + (x[ip] * x[im]).sin();
        }
        s
    }
);

slice_case!(
    a_read_of_memory_nothing_writes_or_zero,
    [[0.3, 0.5, 0.9, 0.2, -0.4, 1.1, 0.7, -0.2, 0.35], [0.1, -0.2, 0.3, 0.4, 0.5, -0.6, 0.7, 0.8, -0.9]],
    fn f(x: &[f64]) -> f64 {
        // The upper triangle of a 3×3 matrix, times itself, as kron_view_sum reads it.
        let n = 3;
        let mut s = 0.0;
        for p in 0..n {
            for q in 0..n {
                let b = if q >= p { x[p * n + q] } else { 0.0 };
                let c = if p == q { 2.0 * x[q] + 1.0 } else { x[q * n + p] * 0.5 };
                s += b * c * x[(p + q) % 9];
            }
        }
        s
    }
);

slice_case!(
    ifs_that_stay_saved,
    [[0.3, 0.5, 0.9, 0.2, -0.4, 1.1], [0.1, -0.2, 0.3, 0.4, 0.5, -0.6]],
    fn f(x: &[f64]) -> f64 {
        let mut s = 0.0;
        let mut acc = 0.5;
        for i in 0..x.len() {
            // Only one branch sets `k`: in the other it keeps the last iteration's value.
            let mut k = 0;
            if x[i] > 0.0 {
                k = i;
            }
            // The variable is written between the `if` and the read.
            let mut m = if i % 2 == 0 { i } else { x.len() - 1 - i };
            m = (m + 1) % x.len();
            // A condition on a value the loop changes.
            let w = if acc > 1.0 { acc * x[i] } else { acc + x[i] };
            acc = acc * 1.1 + x[k] * x[m];
            s += w * x[m] + acc;
        }
        s
    }
);

slice_case!(
    a_flag_and_a_float_chosen_in_a_loop,
    [[0.3, -0.5, 0.9, 0.2, -0.4, 1.1, 0.7], [0.1, -0.2, 0.3, 0.4, -0.5, -0.6, 0.8]],
    fn f(x: &[f64]) -> f64 {
        let mut s = 0.0;
        for i in 1..x.len() {
            let up = if x[i - 1] < 0.0 { true } else { i % 3 == 0 };
            let scale = if up { 1.5 } else { -0.5 };
            let v = if up { x[i] * x[i - 1] } else { x[i].exp() };
            s += scale * v;
        }
        s
    }
);

slice_case!(
    reads_of_sub_slices_in_the_branches,
    [[0.3, 0.5, 0.9, 0.2, -0.4, 1.1, 0.7, -0.3], [0.1, -0.2, 0.3, 0.4, 0.5, -0.6, 0.8, 0.45]],
    fn f(x: &[f64]) -> f64 {
        let (a, b) = x.split_at(4);
        let mut s = 0.0;
        for i in 0..4 {
            // Views made before the loop and inside it: the reverse sweep takes them again.
            let pair = &x[i..i + 2];
            let v = if i < 2 { b[i] * 2.0 } else { a[i] - pair[1] };
            let w = if i % 2 == 0 { pair[0] } else { pair[1] * b[3 - i] };
            s += v * w * x[i].sin();
        }
        s
    }
);

slice_case!(
    a_constant_table_read_through_a_view_in_a_branch,
    [[0.3, 0.5, 0.9, 0.2, -0.4, 1.1], [0.1, -0.2, 0.3, 0.4, 0.5, -0.6]],
    fn f(x: &[f64]) -> f64 {
        let table = vec![1.5, -0.5, 2.0, 0.25, 3.0, -1.0, 0.75];
        let mut s = 0.0;
        for i in 0..x.len() {
            // The view's start is computed in the loop; only the `if` reads the view.
            let k = (i * 5 + 1) % 5;
            let row = &table[k..k + 2];
            let c = if x[i] > 0.0 { row[0] * 2.0 } else { row[1] };
            s += c * x[i] * x[i];
        }
        s
    }
);
