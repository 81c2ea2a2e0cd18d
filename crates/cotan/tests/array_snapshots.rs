//! A helper that only reads a fixed-size array its caller changes afterwards (a stencil
//! over the state of a time-stepping loop) has its reads of it saved by its forward sweep
//! for its reverse. Where those reads, in loops of known trip counts, are at least half as
//! many as the array's elements, the forward sweep pushes the whole array once at its end
//! instead, and the reverse sweep pops it into a copy and reads that again (and recomputes
//! what it would have saved from those reads). Each case is checked by the harness (finite
//! differences in both modes, dot-product test, interpreter against compiled code), next to
//! helpers the rule leaves alone: one that reads a single element, one whose loop has a
//! trip count only known at run time, one that writes the array. A slice is copied when it
//! is read in a loop over its whole length; an array the caller's reverse sweep no longer
//! has (made in the caller's loop) is copied too.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

mod common;

/// Neumann borders: the neighbour of an end is the end itself.
fn rhs(du: &mut [f64; 8], u: &[f64; 8], k: f64) {
    for c in 0..8 {
        let cp = if c == 7 { c } else { c + 1 };
        let cm = if c == 0 { c } else { c - 1 };
        let lap = u[cp] + u[cm] - 2.0 * u[c];
        du[c] = k * lap + u[c] * u[c] * (1.0 - u[c]) + (k * u[c]).sin();
    }
}

// The 2x2 blocks of `b` times those of `c`, into `a`, which is written, not copied.
fn mix(a: &mut [f64; 4], b: &[f64; 4], c: &[f64; 4]) {
    for i in 0..2 {
        for j in 0..2 {
            a[2 * i + j] = b[2 * i] * c[j] + b[2 * i + 1] * c[2 + j] + a[2 * i + j] * b[i + j];
        }
    }
}

// One element: copying eight to save one read does not pay.
fn first_squared(u: &[f64; 8]) -> f64 {
    u[0] * u[0] * u[1]
}

// A loop whose trip count is only known at run time.
fn prefix_products(u: &[f64; 8], m: usize) -> f64 {
    let mut p = 1.0;
    for c in 0..m {
        p *= u[c] + 0.5;
    }
    p
}

// Writes the array: nothing to copy.
fn scale(u: &mut [f64; 8], k: f64) {
    for c in 0..8 {
        u[c] = u[c] * u[c] * k;
    }
}

fn energy(u: &[f64; 8], k: f64) -> f64 {
    let mut e = 0.0;
    for c in 0..8 {
        e += k * u[c] * u[c] * u[(c + 1) % 8];
    }
    e + weighted(u) * weighted(u)
}

fn weighted(u: &[f64; 8]) -> f64 {
    let mut w = 0.0;
    for c in 0..8 {
        w += 0.1 * (c as f64 + 1.0) * u[c].exp();
    }
    w
}

/// The same stencil over a slice, in a loop over its length.
fn rhs_slice(du: &mut [f64], u: &[f64], k: f64) {
    let n = u.len();
    for c in 0..u.len() {
        let cp = if c == n - 1 { c } else { c + 1 };
        let cm = if c == 0 { c } else { c - 1 };
        du[c] = k * (u[cp] + u[cm] - 2.0 * u[c]) + u[c] * u[c] * (1.0 - u[c]);
    }
}

/// A window that the caller makes in each iteration (its reverse sweep no longer has it).
fn window_energy(w: &[f64; 4], k: f64) -> f64 {
    let mut e = 0.0;
    for c in 0..4 {
        e += (k * w[c]).sin() * w[(c + 1) % 4];
    }
    e
}

slice_case!(
    a_stencil_in_a_time_loop,
    [[0.3, 0.5, 0.9, 0.2, -0.4, 1.1, 0.7, -0.2, 0.8], [0.1, -0.2, 0.3, 0.4, 0.5, -0.6, 0.8, 0.35, 1.3]],
    fn f(x: &[f64]) -> f64 {
        let mut u = [0.0; 8];
        u.copy_from_slice(&x[..8]);
        let k = x[8];
        let mut du = [0.0; 8];
        for _ in 0..4 {
            rhs(&mut du, &u, k);
            for c in 0..8 {
                u[c] += 0.1 * du[c];
            }
        }
        let mut s = 0.0;
        for c in 0..8 {
            s += u[c] * u[c];
        }
        s
    }
);

slice_case!(
    two_arrays_read_and_one_written,
    [[0.3, 0.5, 0.9, 0.2, -0.4, 1.1, 0.7, -0.2, 0.8], [0.1, -0.2, 0.3, 0.4, 0.5, -0.6, 0.8, 0.35, 1.3]],
    fn f(x: &[f64]) -> f64 {
        let mut a = [0.0; 4];
        let mut b = [0.0; 4];
        let mut c = [0.0; 4];
        for i in 0..4 {
            b[i] = x[i];
            c[i] = x[i + 4] * x[8];
        }
        for step in 0..3 {
            mix(&mut a, &b, &c);
            for i in 0..4 {
                b[i] = b[i] * 0.5 + a[i];
                c[(i + step) % 4] -= 0.25 * a[i];
            }
        }
        a[0] * b[1] + a[2] * c[3] + b[0] * c[0]
    }
);

slice_case!(
    helpers_the_rule_leaves_alone,
    [[0.3, 0.5, 0.9, 0.2, -0.4, 1.1, 0.7, -0.2, 0.8], [0.1, -0.2, 0.3, 0.4, 0.5, -0.6, 0.8, 0.35, 1.3]],
    fn f(x: &[f64]) -> f64 {
        let mut u = [0.0; 8];
        u.copy_from_slice(&x[..8]);
        let m = (x.len() - 1) / 2;
        let mut s = 0.0;
        for _ in 0..3 {
            s += first_squared(&u) + prefix_products(&u, m);
            scale(&mut u, x[8]);
            for c in 0..8 {
                u[c] = u[c].sin() + 0.1 * s;
            }
        }
        s
    }
);

slice_case!(
    a_copy_passed_on_to_another_helper,
    [[0.3, 0.5, 0.9, 0.2, -0.4, 1.1, 0.7, -0.2, 0.8], [0.1, -0.2, 0.3, 0.4, 0.5, -0.6, 0.8, 0.35, 1.3]],
    fn f(x: &[f64]) -> f64 {
        let mut u = [0.0; 8];
        u.copy_from_slice(&x[..8]);
        let mut s = 0.0;
        for step in 0..3 {
            s += 0.1 * energy(&u, x[8]);
            u[step] = u[step + 1] * 0.5 + 0.1 * s.sin();
            u[7 - step] += s.cos();
        }
        s
    }
);

slice_case!(
    a_slice_read_over_its_length,
    [[0.3, 0.5, 0.9, 0.2, -0.4, 1.1, 0.7, -0.2, 0.8], [0.1, -0.2, 0.3, 0.4, 0.5, -0.6, 0.8, 0.35, 1.3]],
    fn f(x: &[f64]) -> f64 {
        let n = x.len() - 1;
        let mut u = x[..n].to_vec();
        let mut du = vec![0.0; n];
        for _ in 0..3 {
            rhs_slice(&mut du, &u, x[n]);
            for c in 0..n {
                u[c] += 0.1 * du[c];
            }
        }
        let mut s = 0.0;
        for c in 0..n {
            s += u[c] * u[c];
        }
        s
    }
);

slice_case!(
    an_array_the_caller_makes_in_its_loop,
    [[0.3, 0.5, 0.9, 0.2, -0.4, 1.1, 0.7, -0.2, 0.8], [0.1, -0.2, 0.3, 0.4, 0.5, -0.6, 0.8, 0.35, 1.3]],
    fn f(x: &[f64]) -> f64 {
        let mut s = 0.0;
        for i in 0..5 {
            let w = [x[i], x[i + 1] * s, x[i + 2], x[i + 3] + s];
            s += window_energy(&w, x[8]);
        }
        s
    }
);
