//! Work buffers that a loop body fills and then reads many times (GMM's centred point):
//! reverse mode copies the buffer once at the end of each iteration and puts it back for
//! the iteration's reverse, instead of saving every read. Each case is checked by the
//! harness (finite differences in both modes, dot-product test, interpreter against compiled
//! code), with the cases where the copy must not be used next to those where it is.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

mod common;

slice_case!(
    filled_then_read_in_a_triangular_loop,
    [[0.3, 0.5, 0.9, 0.2, -0.4, 1.1, 0.7, -0.2, 0.35, 0.6], [0.1, -0.2, 0.3, 0.4, 0.5, -0.6, 0.7, 0.8, -0.9, 1.0]],
    fn f(x: &[f64]) -> f64 {
        let d = 4;
        let mut xc = vec![0.0; d];
        let mut qx = vec![0.0; d];
        let mut s = 0.0;
        for c in 0..3 {
            for j in 0..d {
                xc[j] = (x[j] - x[c + 4]).sin();
            }
            for j in 0..d {
                qx[j] = x[j + 2] * xc[j];
                for jj in j + 1..d {
                    qx[jj] += x[j + jj] * xc[j] * xc[jj];
                }
            }
            for j in 0..d {
                s += qx[j] * qx[j] * xc[d - 1 - j];
            }
        }
        s
    }
);

slice_case!(
    filled_under_a_branch_read_in_nested_loops,
    [[0.3, 0.5, 0.9, 0.2, -0.4, 1.1, 0.7, -0.2], [-0.1, 0.2, 0.3, -0.4, 0.5, 0.6, -0.7, 0.8]],
    fn f(x: &[f64]) -> f64 {
        let n = x.len();
        let mut w = vec![0.0; 3];
        let mut s = 0.0;
        for i in 0..n {
            if x[i] > 0.0 {
                for k in 0..3 {
                    w[k] = x[(i + k) % n] * x[i];
                }
            } else {
                w[0] = x[i].exp();
            }
            for a in 0..3 {
                for b in 0..3 {
                    s += w[a] * w[b].cos() * x[(a + b) % n];
                }
            }
        }
        s
    }
);

slice_case!(
    read_before_it_is_written_again_in_the_body,
    [[0.3, 0.5, 0.9, 0.2, -0.4, 1.1], [0.1, -0.2, 0.3, 0.4, 0.5, -0.6]],
    fn f(x: &[f64]) -> f64 {
        // `w` is read, then written, then read: the copy at the end would be wrong for the
        // first reads, so they are saved.
        let n = x.len();
        let mut w = vec![1.0; 2];
        let mut s = 0.0;
        for i in 0..n {
            for k in 0..2 {
                s += w[k] * x[i];
            }
            w[i % 2] = (x[i] * w[1]).sin();
            for k in 0..2 {
                s += w[k] * w[k] * x[(i + k) % n];
            }
        }
        s
    }
);

slice_case!(
    inner_loop_body_fills_its_own_buffer,
    [[0.3, 0.5, 0.9, 0.2, -0.4, 1.1, 0.7, -0.2], [-0.1, 0.2, 0.3, -0.4, 0.5, 0.6, -0.7, 0.8]],
    fn f(x: &[f64]) -> f64 {
        // The buffer is filled and read in an inner loop's body; the outer body reads the
        // result after the inner loop.
        let n = x.len();
        let mut v = vec![0.0; 2];
        let mut s = 0.0;
        for i in 0..n {
            for t in 0..3 {
                v[0] = x[i] * (t as f64 + 1.0);
                v[1] = x[(i + t) % n].tanh();
                for r in 0..2 {
                    s += v[r] * v[1 - r] * x[(i + r) % n];
                }
            }
            s += v[0] * v[1];
        }
        s
    }
);

#[cotan::hvp(tri_hvp)]
#[cotan::autodiff_reverse(tri_grad, Duplicated, Active)]
fn tri(x: &[f64]) -> f64 {
    let d = 3;
    let mut xc = vec![0.0; d];
    let mut s = 0.0;
    for c in 0..2 {
        for j in 0..d {
            xc[j] = x[j] * x[j + c] + 0.1;
        }
        for j in 0..d {
            for jj in j..d {
                s += xc[j] * xc[jj] * x[(j + jj + c) % 6];
            }
        }
    }
    s
}

#[test]
fn hvp_through_a_restored_buffer_matches_finite_differences_of_the_gradient() {
    common::check_hvp_against_gradient(
        &|x, g| {
            tri_grad(x, g, 1.0);
        },
        &|x, v, g, hv| {
            tri_hvp(x, v, g, hv);
        },
    );
}
