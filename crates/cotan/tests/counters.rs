//! Integer counters that reverse mode steps back instead of saving (`li += 1` in a
//! triangular loop, `k -= stride`, steps under a branch, in a `while` loop, two steps in one
//! body), and the cases where it must save them instead (a step in a region the reverse
//! sweep skips). Each case is checked by the harness (finite differences in both modes,
//! dot-product test, interpreter against compiled code); the triangle also under `hvp`.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

mod common;

slice_case!(
    triangle_counter_declared_in_a_loop_body,
    [[0.3, 0.5, 0.9, 0.2, -0.4, 1.1, 0.7, -0.2, 0.35, 0.6], [0.1, -0.2, 0.3, 0.4, 0.5, -0.6, 0.7, 0.8, -0.9, 1.0]],
    fn f(x: &[f64]) -> f64 {
        // ADBench GMM's lower-triangular product, a counter `li` over the packed entries.
        let d = 4;
        let mut s = 0.0;
        for c in 0..2 {
            let mut li = c;
            let mut qx = vec![0.0; d];
            for j in 0..d {
                for jj in j + 1..d {
                    qx[jj] += x[li] * x[j].sin();
                    li += 1;
                }
            }
            for j in 0..d {
                s += qx[j] * qx[j] * x[li - j];
            }
        }
        s
    }
);

slice_case!(
    counter_declared_at_the_top_stepped_in_nested_loops,
    [[0.3, 0.5, 0.9, 0.2, -0.4, 1.1], [1.0, 2.0, -0.5, 0.25, 0.75, -1.5]],
    fn f(x: &[f64]) -> f64 {
        let n = x.len();
        let mut k = 0;
        let mut s = 0.0;
        for i in 0..3 {
            for j in 0..i + 1 {
                s += x[k] * x[j] * x[(k + i) % n];
                k += 1;
            }
        }
        s + x[k - 1]
    }
);

slice_case!(
    counter_stepped_down_by_a_stride,
    [[0.3, 0.5, 0.9, 0.2, -0.4], [1.0, 2.0, -0.5, 0.25, 0.75, -1.5]],
    fn f(x: &[f64]) -> f64 {
        let stride = 1 + x.len() / 4;
        let mut k = x.len() - 1;
        let mut s = 0.0;
        for i in 0..2 {
            s += x[k].sin() * x[i];
            k -= stride;
        }
        s * x[k]
    }
);

slice_case!(
    counter_stepped_under_a_branch,
    [[0.3, -0.5, 0.9, 0.2, -0.4, 1.1], [-1.0, 2.0, -0.5, 0.25, 0.75, -1.5]],
    fn f(x: &[f64]) -> f64 {
        let mut k = 0;
        let mut s = 0.0;
        for i in 0..x.len() {
            if x[i] > 0.0 {
                s += x[k] * x[i] * x[i];
                k += 1;
            } else {
                s -= x[i] * 0.5;
            }
        }
        s + x[k].cos()
    }
);

slice_case!(
    counter_of_a_while_loop,
    [[0.3, -0.5, 0.9, 0.2], [1.0, 2.0, -0.5, 0.25, 0.75]],
    fn f(x: &[f64]) -> f64 {
        let n = x.len();
        let mut i = 0;
        let mut s = 0.0;
        while i < n {
            s += x[i] * x[(i + 1) % n];
            i += 1;
        }
        s
    }
);

slice_case!(
    two_steps_in_one_body,
    [[0.3, -0.5, 0.9, 0.2, 0.6, -0.1], [1.0, 2.0, -0.5, 0.25, 0.75, 0.5]],
    fn f(x: &[f64]) -> f64 {
        let mut k = 0;
        let mut s = 0.0;
        for _ in 0..x.len() / 2 {
            let a = x[k];
            k += 1;
            let b = x[k];
            k += 1;
            s += a * b.exp();
        }
        s
    }
);

slice_case!(
    step_in_a_region_the_reverse_sweep_skips,
    [[0.3, -0.5, 0.9, 0.2, 0.6], [1.0, 2.0, -0.5, 0.25, 0.75]],
    fn f(x: &[f64]) -> f64 {
        // The `if` only counts (nothing in it is differentiated): its steps are not undone
        // in the reverse sweep, so `k` must be saved, not stepped back.
        let n = x.len();
        let mut k = 0;
        let mut s = 0.0;
        for i in 0..n {
            if i % 2 == 0 {
                k += 1;
            }
            for _ in 0..1 {
                s += x[k % n] * x[i] * x[i];
                k += 1;
            }
        }
        s
    }
);

slice_case!(
    counter_also_read_after_its_step,
    [[0.3, -0.5, 0.9, 0.2, 0.6], [1.0, 2.0, -0.5, 0.25, 0.75]],
    fn f(x: &[f64]) -> f64 {
        let mut k = 0;
        let mut s = 0.0;
        for i in 0..x.len() - 1 {
            let old = k;
            k += 1;
            s += x[old] * x[k] * x[i];
        }
        s
    }
);

mod hvp_of_the_triangle {
    use cotan::{autodiff_reverse, hvp};

    #[hvp(tri_hvp)]
    #[autodiff_reverse(tri_grad, Duplicated, Active)]
    fn tri(x: &[f64]) -> f64 {
        let d = 4;
        let mut s = 0.0;
        let mut li = 0;
        let mut qx = vec![0.0; d];
        for j in 0..d {
            for jj in j + 1..d {
                qx[jj] += x[li] * x[j].sin();
                li += 1;
            }
        }
        for j in 0..d {
            s += qx[j] * qx[j];
        }
        s
    }

    #[test]
    fn hvp_matches_finite_differences_of_the_gradient() {
        super::common::check_hvp_against_gradient(
            &|x, g| {
                tri_grad(x, g, 1.0);
            },
            &|x, v, g, hv| {
                tri_hvp(x, v, g, hv);
            },
        );
    }
}
