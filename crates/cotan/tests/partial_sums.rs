//! Loops of the reverse sweep that only add to adjoints (`dw += x[j] * dy[j]` for a weight
//! read outside the loop) run through `cotan::rt::sums_rev`, which keeps four partial sums.
//! Each case is checked by the harness (finite differences in both modes, dot-product test,
//! interpreter against compiled code), with trip counts that are not multiples of four,
//! zero and one, and next to loops whose adjoints are read inside and must stay in order.
//! The adjoint of a value used many times in straight-line code is kept as four partial
//! sums too (the last case).

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

mod common;

slice_case!(
    matrix_vector_product_with_the_weights_active,
    [
        [0.3, 0.5, 0.9, 0.2, -0.4, 1.1, 0.7, -0.2, 0.35, 0.6, -0.8],
        [0.1, -0.2, 0.3, 0.4, 0.5, -0.6, 0.7, 0.8, -0.9, 1.0, 0.25]
    ],
    fn f(x: &[f64]) -> f64 {
        // W (2×3) times the 3×3 block B of x, then a smooth loss.
        let mut h = vec![0.0; 6];
        for i in 0..2 {
            for k in 0..3 {
                let w = x[i * 3 + k];
                for j in 0..3 {
                    h[i * 3 + j] += w * x[6 + ((k * 3 + j) % 5)];
                }
            }
        }
        let mut s = 0.0;
        for e in 0..6 {
            s += h[e].sin() * h[e];
        }
        s
    }
);

slice_case!(
    two_adjoints_in_one_loop_and_triangular_trip_counts,
    [[0.3, 0.5, 0.9, 0.2, -0.4, 1.1, 0.7, -0.2, 0.35], [1.1, -0.2, 0.3, 0.4, 0.5, -0.6, 0.7, 0.8, -0.9]],
    fn f(x: &[f64]) -> f64 {
        let n = x.len();
        let mut s = 0.0;
        // Inner loops of 0, 1, .., n - 1 iterations: empty, shorter than four, and longer.
        for i in 0..n {
            let a = x[i];
            let b = x[n - 1 - i];
            for j in 0..i {
                s += a * x[j].cos() + b * b * x[j];
            }
        }
        s
    }
);

slice_case!(
    a_sum_next_to_an_adjoint_read_in_the_loop,
    [[0.3, 0.5, 0.9, 0.2, -0.4, 1.1, 0.7], [0.9, -0.2, 0.3, 0.4, 0.5, -0.6, 0.7]],
    fn f(x: &[f64]) -> f64 {
        let c = x[0];
        let mut p = 1.0;
        let mut s = 0.0;
        for j in 1..x.len() {
            // `p`'s adjoint is read in every iteration (a product): it stays in order; `c`'s
            // is only added to.
            p = p * (1.0 + 0.1 * x[j]);
            s += c * x[j] * x[j] + p;
        }
        s
    }
);

slice_case!(
    sums_under_a_branch_of_the_loop,
    [[0.3, -0.5, 0.9, 0.2, -0.4, 1.1, 0.7, -0.2, 0.35, 0.6], [0.1, -0.2, 0.3, 0.4, 0.5, -0.6, 0.7, 0.8, -0.9, 1.0]],
    fn f(x: &[f64]) -> f64 {
        let w = x[0];
        let mut s = 0.0;
        for j in 1..x.len() {
            if x[j] > 0.0 {
                s += w * x[j].exp();
            } else {
                s -= w * w * x[j];
            }
        }
        s
    }
);

slice_case!(
    a_value_used_many_times_in_straight_line_code,
    [[0.9, 1.05, 0.3, -0.7], [1.1, 0.97, -0.2, 0.5]],
    fn f(x: &[f64]) -> f64 {
        // `x[1]`'s adjoint gets 14 contributions, kept as four partial sums; `a`'s gets 5.
        let a = x[1];
        let mut p = x[0];
        p *= a;
        p *= a;
        p *= a;
        p *= a;
        p *= a;
        p *= a;
        p *= a;
        p *= a;
        p *= a;
        p *= a;
        p *= a;
        p *= a;
        p *= a;
        let b = (x[2] * a).sin() + x[3] * a;
        p + b * b + a * x[2] * x[3]
    }
);
