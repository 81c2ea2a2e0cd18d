//! Local closures, function items passed to iterator methods, and the iterator methods of
//! issue 11 (`filter`, `any`, `all`, `position`, `find`, `max_by`, ...), each checked by
//! the harness: finite differences in both modes, the dot-product test, and the interpreter.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code, unused_assignments, unused_mut)]

mod common;

scalar_case!(
    local_closure,
    2,
    [[0.7, 0.4], [-1.3, 2.0]],
    fn f(x: f64, y: f64) -> f64 {
        let sq = |v: f64| v * v;
        sq(x) + sq(y) * sq(x + y)
    }
);

scalar_case!(
    closure_captures_parameters_and_locals,
    2,
    [[0.7, 0.4], [-1.3, 2.0]],
    fn f(x: f64, y: f64) -> f64 {
        let k = 2.0 * y;
        let affine = |v: f64| k * v + y;
        let twice = |v| affine(affine(v));
        affine(x) * twice(y)
    }
);

scalar_case!(
    closure_keeps_what_it_captured,
    2,
    [[0.7, 0.4], [-1.3, 2.0]],
    fn f(x: f64, y: f64) -> f64 {
        let a = x;
        let scale = |v: f64| v * a;
        let a = y * 3.0;
        let mut m = x;
        let add_m = move |v: f64| v + m;
        m = 10.0;
        scale(a) + a + add_m(y) + m
    }
);

slice_case!(
    closure_called_in_loops,
    [[0.3, -1.2, 2.5], [1.0, 0.5, 2.0]],
    fn f(x: &[f64]) -> f64 {
        let g = |v: f64| -> f64 {
            if v > 0.0 {
                v.sin() * v
            } else {
                v.exp()
            }
        };
        let mut s = 0.0;
        for i in 0..x.len() {
            s += g(x[i]);
        }
        let mut k = 0;
        while k < x.len() {
            s *= 1.0 + 0.1 * g(x[k] * 0.5);
            k += 1;
        }
        s
    }
);

slice_case!(
    fn_mut_closure,
    [[0.3, -1.2, 2.5], [1.0, 0.5, 2.0]],
    fn f(x: &[f64]) -> f64 {
        let mut s = 0.0;
        let mut add = |v: f64| s += v * v;
        add(x[0]);
        add(x[1] * x[2]);
        for &v in x {
            add(v.sin());
        }
        s
    }
);

slice_case!(
    function_items_as_values,
    [[0.3, -1.2, 2.5], [1.0, 0.5, 2.0]],
    fn f(x: &[f64]) -> f64 {
        let m = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = x.iter().copied().map(f64::sin).sum();
        let sq = |v: f64| v * v;
        let q: f64 = x.iter().copied().map(sq).sum();
        m * s + q + x.iter().copied().fold(1.0, f64::min)
    }
);

slice_case!(
    filter_map_sum_and_count,
    [[0.35, -1.2, 2.5, -0.7], [1.1, 0.6, 2.2, 0.25]],
    fn f(x: &[f64]) -> f64 {
        let s: f64 = x.iter().filter(|&&v| v > 0.0).map(|v| v * v).sum();
        let n = x.iter().filter(|v| **v < 1.0).count();
        let big: Vec<f64> = x.iter().copied().filter(|v| v.abs() > 0.4).collect();
        let mut t = 0.0;
        for v in x.iter().rev().filter(|v| **v < 2.0) {
            t = t * 0.5 + v;
        }
        s + n as f64 * t + big.iter().sum::<f64>() * big.len() as f64
    }
);

slice_case!(
    any_all_position_find,
    [[0.35, -1.2, 2.5, -0.7], [1.1, 0.6, 2.2, 0.25]],
    fn f(x: &[f64]) -> f64 {
        let mut s = x[0];
        if x.iter().any(|&v| v < 0.0) {
            s *= x[1];
        }
        if x.iter().all(|v| *v > 0.0) {
            s += x[2].exp();
        }
        let p = x.iter().position(|&v| v > 1.5).unwrap_or(0);
        let found = x.iter().copied().find(|v| *v < 0.3).unwrap_or(1.0);
        s + x[p] * found
    }
);

/// `any` stops at the first match, as Rust's does: the index past it is never read.
#[cotan::autodiff_reverse(d_guarded, Duplicated, Const, Active)]
#[cotan::autodiff_forward(t_guarded, Dual, Const, Dual)]
fn guarded(x: &[f64], idx: &[usize]) -> f64 {
    let hit = idx.iter().any(|&i| i >= x.len() || x[i] > 1.0);
    if hit {
        x[0] * 2.0
    } else {
        x[0]
    }
}

#[test]
fn any_short_circuits() {
    let x = [0.5, 2.0];
    let idx = [0, 1, 99];
    let mut g = [0.0; 2];
    assert_eq!(d_guarded(&x, &mut g, &idx, 1.0), 1.0);
    assert_eq!(g, [2.0, 0.0]);
    assert_eq!(t_guarded(&x, &[1.0, 0.0], &idx), (1.0, 2.0));
}

// A closure that returns no value (`for_each`), and one passed to `map` by name.
slice_case!(
    closures_passed_by_name,
    [[0.3, -1.2, 2.5], [1.0, 0.5, 2.0]],
    fn f(x: &[f64]) -> f64 {
        let w = |(i, v): (usize, &f64)| v * (i as f64 + 1.0);
        let s: f64 = x.iter().enumerate().map(w).sum();
        let mut acc = 0.0;
        x.iter().for_each(|v| acc += v.cos());
        s * acc
    }
);

// A closure passing its array reference on by name (`rhs(b, y)`), the closure given to a
// generic helper with the caller's local array (`&s`): the reference it is.
fn rhs_of(w: f64, y: &[f64; 2]) -> [f64; 2] {
    [w * y[1], -y[0]]
}

fn euler_step<F: Fn(&[f64; 2]) -> [f64; 2]>(f: F, y0: &[f64; 2], h: f64) -> [f64; 2] {
    let k1 = f(y0);
    [y0[0] + h * k1[0], y0[1] + h * k1[1]]
}

#[cotan::autodiff_reverse(d_closure_passes_reference, Active, Active, Active)]
#[cotan::autodiff_forward(t_closure_passes_reference, Dual, Dual, Dual)]
fn closure_passes_reference(a: f64, b: f64) -> f64 {
    let s = [a, b];
    let r = euler_step(|y| rhs_of(b, y), &s, 0.1);
    r[0] * r[1]
}

#[test]
fn a_closure_passes_its_array_reference_on() {
    for (a, b) in [(0.7, -1.3), (-0.4, 2.2)] {
        let (v, da, db) = d_closure_passes_reference(a, b, 1.0);
        assert_eq!(v, closure_passes_reference(a, b));
        let h = 1e-6;
        let fa = (closure_passes_reference(a + h, b) - closure_passes_reference(a - h, b)) / (2.0 * h);
        let fb = (closure_passes_reference(a, b + h) - closure_passes_reference(a, b - h)) / (2.0 * h);
        assert!((da - fa).abs() <= 1e-6 * fa.abs().max(1.0), "{da} vs {fa}");
        assert!((db - fb).abs() <= 1e-6 * fb.abs().max(1.0), "{db} vs {fb}");
        let (_, t) = t_closure_passes_reference(a, 0.3, b, -0.6);
        assert!((t - (0.3 * da - 0.6 * db)).abs() <= 1e-12, "{t}");
    }
}
