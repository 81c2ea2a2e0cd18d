//! Iterator chains with closures, lowered to index loops, checked by the harness.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

mod common;

const X6: [f64; 6] = [0.3, -1.2, 2.5, 0.8, -0.4, 1.1];

slice_case!(
    map_sum,
    [X6],
    fn f(x: &[f64]) -> f64 {
        x.iter().map(|v| v * v).sum::<f64>() + x.iter().sum::<f64>()
    }
);

slice_case!(
    zip_map_sum_dot,
    [X6],
    fn f(x: &[f64]) -> f64 {
        let d: f64 = x.iter().zip(x.iter().skip(1)).map(|(a, b)| a * b).sum();
        d + x.iter().zip(x).map(|(&a, &b)| (a - b * 0.5).sin()).sum::<f64>()
    }
);

slice_case!(
    enumerate_fold_product,
    [X6],
    fn f(x: &[f64]) -> f64 {
        let s = x.iter().enumerate().fold(0.0, |acc, (i, v)| acc * 0.9 + v * i as f64);
        let p: f64 = x.iter().map(|v| 1.0 + 0.1 * v).product();
        s * p
    }
);

slice_case!(
    adapters_rev_skip_take_step_by,
    [X6],
    fn f(x: &[f64]) -> f64 {
        let a: f64 = x.iter().rev().take(4).map(|v| v.exp()).sum();
        let b: f64 = x.iter().step_by(2).map(|v| v * v * v).sum();
        let c = x.iter().skip(2).rev().fold(1.0, |acc, v| acc * 0.5 + v);
        let n = x.iter().skip(1).count() as f64;
        a + b * c + n
    }
);

slice_case!(
    chunks_and_windows,
    [X6, [0.1, 0.2, 0.3, 0.4, 0.5]],
    fn f(x: &[f64]) -> f64 {
        let mut s = 0.0;
        for w in x.windows(3) {
            s += w[0] * w[1] - w[2].sin();
        }
        for c in x.chunks(2) {
            s += c.iter().map(|v| v * v).sum::<f64>() * c.len() as f64;
        }
        s
    }
);

slice_case!(
    for_each_and_ranges,
    [X6],
    fn f(x: &[f64]) -> f64 {
        let mut s = 0.0;
        x.iter().for_each(|v| s += v.cos());
        let t: f64 = (0..x.len()).map(|i| x[i] * i as f64).sum();
        let u = (1..=3).map(|k| x[k] * x[k - 1]).fold(0.0, |a, b| a + b);
        s + t * u
    }
);

slice_case!(
    collect_and_nested_chains,
    [X6],
    fn f(x: &[f64]) -> f64 {
        let y: Vec<f64> = x.iter().map(|v| v.tanh()).collect();
        let z = y.iter().map(|a| x.iter().map(|b| a * b).sum::<f64>()).sum::<f64>();
        let mut best = f64::NEG_INFINITY;
        for (i, v) in y.iter().enumerate().skip(1) {
            best = best.max(v * i as f64);
        }
        z + best
    }
);

slice_case!(
    for_loops_over_chains_with_exits,
    [X6],
    fn f(x: &[f64]) -> f64 {
        let mut s = 0.0;
        for (a, b) in x.iter().zip(x.iter().rev()) {
            if a * b > 1.0 {
                break;
            }
            if *a < 0.0 {
                continue;
            }
            s += a * b;
        }
        for v in x.iter().map(|v| v * 2.0).take(3) {
            s = s * 0.5 + v;
        }
        s
    }
);

inplace_case!(
    iter_mut_updates,
    [X6],
    fn f(x: &mut [f64]) {
        x.iter_mut().for_each(|v| *v = v.sin() * 2.0);
        for v in x.iter_mut() {
            *v *= *v + 1.0;
        }
        for (i, v) in x.iter_mut().enumerate() {
            *v += i as f64 * 0.1;
        }
    }
);

slice_case!(
    std_iter_zip,
    [X6],
    fn f(x: &[f64]) -> f64 {
        let mut s = 0.0;
        for (a, b) in std::iter::zip(x, &x[1..]) {
            s += a * b.sin();
        }
        s + core::iter::zip(x.iter(), x.iter().rev()).map(|(a, b)| a * b).sum::<f64>()
    }
);

slice_case!(
    array_map,
    [X6],
    fn f(x: &[f64]) -> f64 {
        let a = [x[0], x[1], x[2]].map(|v| v.sin());
        let b = a.map(|v| v * a[1] + x[3]);
        let c = [x[4]; 2].map(f64::exp);
        a.iter().zip(&b).map(|(p, q)| p * q).sum::<f64>() + c[1]
    }
);

// `chain` (the rest of the loop body lowered for each part) and `std::iter::once`.
slice_case!(
    chained_iterators,
    [[0.3, 1.2, 0.8, 1.5], [1.1, -0.5, 2.0, 0.7]],
    fn f(x: &[f64]) -> f64 {
        let a: f64 = x.iter().chain(x.iter().rev()).map(|e| e * 2.0).enumerate().map(|(i, e)| e * i as f64).sum();
        let v: Vec<f64> = x.iter().map(|e| e.sin()).chain(std::iter::once(x[0] * x[1])).collect();
        let b: f64 = x[..2].iter().chain(&x[2..]).filter(|e| **e > 0.5).map(|e| e.ln()).sum();
        let c = x.iter().chain(x.iter()).skip(3).take(4).product::<f64>();
        let mut d = 0.0;
        for (i, e) in x.iter().chain([x[0] * 3.0, 1.0].iter()).enumerate() {
            d += e * e * (i as f64 + 1.0);
        }
        let ring = x
            .iter()
            .zip(x.iter().skip(1).chain(std::iter::once(&x[0])))
            .map(|(a, b)| (a - b).powi(2))
            .fold(0.0, |m: f64, v| m.max(v));
        a + v.iter().sum::<f64>() * v[v.len() - 1] + b + c + d + ring
    }
);

/// A range's items passed to a helper's `usize` parameter take its type, as in rustc.
fn pick(x: &[f64], i: usize) -> f64 {
    x[i]
}

#[cotan::autodiff_reverse(d_picked_squares, Duplicated, Active)]
#[cotan::autodiff_forward(t_picked_squares, Dual, Dual)]
fn picked_squares(x: &[f64]) -> f64 {
    (0..3).map(|i| pick(x, i) * pick(x, i + 1)).sum()
}

#[test]
fn range_items_take_the_type_of_the_parameter_they_are_passed_to() {
    let x = [1.0, 2.0, 3.0, 4.0];
    let mut dx = [0.0; 4];
    assert_eq!(d_picked_squares(&x, &mut dx, 1.0), picked_squares(&x));
    assert_eq!(dx, [2.0, 4.0, 6.0, 3.0]);
    common::check_slice_fn("picked_squares", picked_squares, d_picked_squares, t_picked_squares, &x);
}
