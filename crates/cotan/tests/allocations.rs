//! In steady state a reverse call makes no more heap allocations than the primal call:
//! the tape's stacks and scratch buffers are reused across calls. Counted with the test
//! harness's global allocator, which counts allocations on this thread.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

mod common;

use cotan::autodiff_reverse;

/// Warms up, then compares one reverse call with one primal call (the counting allocator
/// is the test harness's).
fn assert_no_extra_allocations(name: &str, mut primal: impl FnMut(), mut reverse: impl FnMut()) {
    common::check_allocations(name, &mut primal, &mut reverse);
}

#[autodiff_reverse(d_carry, Duplicated, Active, Active)]
fn carry(x: &[f64], v0: f64) -> f64 {
    let mut v = v0;
    for i in 0..x.len() {
        v = (v * x[i]).sin() + 0.5 * v;
    }
    v * v
}

#[autodiff_reverse(d_buffers, Duplicated, Active)]
fn buffers(x: &[f64]) -> f64 {
    let n = x.len();
    let mut w = vec![0.0; n];
    let mut s = 0.0;
    for i in 0..n {
        let mut tmp = vec![0.0; 3];
        tmp[i % 3] = x[i].exp();
        w[i] = tmp[i % 3] * x[i];
        s += w[i] * w[(i + 1) % n];
    }
    s
}

#[autodiff_reverse(d_inplace, Duplicated)]
fn inplace(x: &mut [f64]) {
    for i in 1..x.len() {
        x[i] = x[i].sin() * x[i - 1];
    }
}

#[autodiff_reverse(d_newton, Active, Active)]
fn newton(a: f64) -> f64 {
    let mut y = a.max(1.0);
    while (y * y - a).abs() > 1e-12 * a {
        y = 0.5 * (y + a / y);
    }
    y
}

#[test]
fn reverse_calls_allocate_no_more_than_primal_calls() {
    let x: Vec<f64> = (0..1000).map(|i| (i as f64 * 0.37).sin()).collect();
    let mut dx = vec![0.0; x.len()];
    use std::hint::black_box;
    assert_no_extra_allocations(
        "carry",
        || {
            black_box(carry(&x, 0.3));
        },
        || {
            black_box(d_carry(&x, &mut dx, 0.3, 1.0));
        },
    );
    assert_no_extra_allocations(
        "buffers",
        || {
            black_box(buffers(&x));
        },
        || {
            black_box(d_buffers(&x, &mut dx, 1.0));
        },
    );
    let (mut y, mut z) = (x.clone(), x.clone());
    assert_no_extra_allocations("inplace", || inplace(&mut y), || d_inplace(&mut z, &mut dx));
    assert_no_extra_allocations(
        "newton",
        || {
            black_box(newton(7.0));
        },
        || {
            black_box(d_newton(7.0, 1.0));
        },
    );
}

#[autodiff_reverse(d_logdet, Duplicated, Const, Active)]
fn logdet(a: &mut [f64], n: usize) -> f64 {
    let mut ld = 0.0;
    for j in 0..n {
        let mut d = a[j * n + j];
        for k in 0..j {
            d -= a[j * n + k] * a[j * n + k];
        }
        let l = d.sqrt();
        a[j * n + j] = l;
        ld += 2.0 * l.ln();
        for i in j + 1..n {
            let mut s = a[i * n + j];
            for k in 0..j {
                s -= a[i * n + k] * a[j * n + k];
            }
            a[i * n + j] = s / l;
        }
    }
    ld
}

#[autodiff_reverse(d_grown, Duplicated, Const, Active)]
fn grown(x: &[f64], counts: &[usize]) -> f64 {
    let mut v = Vec::with_capacity(x.len());
    let mut copy = x.to_vec();
    let mut s = 0.0;
    for i in 0..counts.len() {
        for j in 0..counts[i] {
            let k = (i + j) % x.len();
            copy[k] = copy[k].sin() * x[k];
            s += copy[k];
        }
        v.push(s);
    }
    let mut w = vec![0.0; v.len()];
    w.copy_from_slice(&v);
    let mut t = 0.0;
    let mut i = 0;
    while i < w.len() && t < 100.0 {
        t += w[i] * w[i];
        i += 1;
    }
    t
}

#[test]
fn dynamic_loops_and_local_buffers_allocate_no_more_than_the_primal() {
    use std::hint::black_box;
    let n = 6;
    let mut a = vec![0.0; n * n];
    for i in 0..n {
        a[i * n + i] = 2.0 + i as f64;
        if i > 0 {
            a[i * n + i - 1] = 0.3;
        }
    }
    let mut da = vec![0.0; n * n];
    let (mut a1, mut a2) = (a.clone(), a.clone());
    assert_no_extra_allocations(
        "logdet",
        || {
            a1.copy_from_slice(&a);
            black_box(logdet(&mut a1, n));
        },
        || {
            a2.copy_from_slice(&a);
            black_box(d_logdet(&mut a2, &mut da, n, 1.0));
        },
    );
    let x: Vec<f64> = (0..50).map(|i| (i as f64 * 0.37).sin()).collect();
    let counts = [3, 0, 7, 2, 5];
    let mut dx = vec![0.0; x.len()];
    assert_no_extra_allocations(
        "grown",
        || {
            black_box(grown(&x, &counts));
        },
        || {
            black_box(d_grown(&x, &mut dx, &counts, 1.0));
        },
    );
}
