//! Reverse mode through dynamic control flow and in-place mutation: loops whose trip
//! count is known only at run time, early exits, and arrays updated in place. Each case
//! is checked by the harness (finite differences in both modes, dot-product test,
//! interpreter against compiled code).

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

mod common;

// ---- control flow ----

slice_case!(
    while_with_data_dependent_condition,
    [[0.3, 0.5, 0.9, 0.2], [0.1, 0.1, 0.1, 0.1, 0.1]],
    fn f(x: &[f64]) -> f64 {
        let mut s = 0.0;
        let mut i = 0;
        while s < 1.0 && i < x.len() {
            s += x[i] * x[i] + 0.1;
            i += 1;
        }
        s * x[0]
    }
);

slice_case!(
    loop_with_break_value,
    [[0.3, 0.5, 0.9], [1.5, -0.5, 2.0]],
    fn f(x: &[f64]) -> f64 {
        let mut v = x[0];
        let mut k = 0;
        let r = loop {
            v = (v * x[1]).sin() + x[2];
            k += 1;
            if k == 7 || v > 10.0 {
                break v * v;
            }
        };
        r + v
    }
);

slice_case!(
    continue_and_break_out_of_for,
    [[0.3, -0.5, 0.9, 2.0, 0.1], [1.0, 1.1, -1.2, 0.4, 0.0]],
    fn f(x: &[f64]) -> f64 {
        let mut s = 1.0;
        for i in 0..x.len() {
            if x[i] < 0.0 {
                continue;
            }
            s = s * (1.0 + x[i]);
            if s > 3.0 {
                break;
            }
        }
        s
    }
);

slice_case!(
    returns_inside_loops_and_branches,
    [[0.3, -0.5, 0.9], [2.5, 0.5, 0.9], [0.3, 0.2, 4.0], [0.1, 0.1, 0.1]],
    fn f(x: &[f64]) -> f64 {
        if x[0] > 2.0 {
            return x[0] * x[1];
        }
        let mut acc = 0.0;
        for i in 0..x.len() {
            acc += x[i].exp();
            for j in 0..i {
                if x[i] * x[j] < -0.1 {
                    return acc * x[j];
                }
            }
            if acc > 50.0 {
                return acc.ln();
            }
        }
        acc
    }
);

slice_ints_case!(
    three_nested_loops_with_trip_counts_from_data,
    [2, 3, 1, 2],
    [[0.3, -0.5, 0.9, 0.7], [1.0, 0.2, -0.3, 0.5]],
    fn f(x: &[f64], n: &[usize]) -> f64 {
        let mut s = 0.0;
        for a in 0..n[0] {
            for b in 0..n[1 + a % 2] {
                for c in 0..n[(a + b) % 4] {
                    s += (x[(a + b + c) % x.len()] * (1.0 + s * 0.1)).sin();
                }
            }
        }
        s
    }
);

slice_ints_case!(
    inner_range_bounded_by_data_of_outer_index,
    [3, 0, 2, 4],
    [[0.3, -0.5, 0.9, 0.7]],
    fn f(x: &[f64], n: &[usize]) -> f64 {
        let mut v: f64 = 1.0;
        for i in 0..n.len() {
            for j in 0..n[i] {
                v = v * 0.9 + x[(i + j) % x.len()] * v.cos();
            }
        }
        v
    }
);

slice_case!(
    trip_count_computed_from_floats,
    [[2.3, 0.5], [4.7, -0.2]],
    fn f(x: &[f64]) -> f64 {
        let n = (x[0] * 2.0) as usize;
        let mut v = x[1];
        for _ in 0..n {
            v = v * v * 0.5 + x[1];
        }
        let m = x[0].floor() as i64;
        let mut k = 0i64;
        while k < m {
            v += (k as f64) * x[0];
            k += 1;
        }
        v
    }
);

slice_case!(
    runtime_if_wrapping_a_loop_with_a_carried_value,
    [[0.3, -0.5, 0.9], [-0.3, -0.5, 0.9]],
    fn f(x: &[f64]) -> f64 {
        let mut v = x[0];
        if x[0] > 0.0 {
            for i in 0..x.len() {
                v = (v + x[i]).tanh() * 2.0;
            }
        } else {
            let mut i = 0;
            while i < 2 {
                v = v * x[i + 1] + 1.0;
                i += 1;
            }
        }
        v
    }
);

slice_case!(
    sibling_dynamic_loops_reverse_in_order,
    [[0.3, -0.5, 0.9, 1.1], [0.8, 0.8, 0.8, 0.8]],
    fn f(x: &[f64]) -> f64 {
        let mut v = 1.0;
        let mut i = 0;
        while i < x.len() && v < 5.0 {
            v = v * (1.0 + x[i] * x[i]);
            i += 1;
        }
        let mut w = v;
        let mut j = 0;
        while j < i {
            w = (w * x[j]).sin() + w;
            j += 1;
        }
        for k in 0..x.len() {
            w = w * 0.5 + (x[k] * v).cos();
        }
        w
    }
);

slice_case!(
    branch_on_loop_carried_float,
    [[0.3, -0.5, 0.9, 1.1], [0.05, 0.1, 0.05, 0.2]],
    fn f(x: &[f64]) -> f64 {
        let mut v = 0.0;
        for i in 0..x.len() {
            if v > 0.2 {
                v = v * x[i] - 0.1;
            } else {
                v = v + x[i].abs() * 0.3;
            }
        }
        v
    }
);

slice_case!(
    min_max_abs_winning_side_changes,
    [[0.3, -0.5, 0.9, -1.1, 0.2]],
    fn f(x: &[f64]) -> f64 {
        let mut hi = x[0];
        let mut lo = x[0];
        let mut a = 0.0;
        for i in 1..x.len() {
            hi = hi.max(x[i] * 0.9);
            lo = lo.min(x[i] + 0.05);
            a += (x[i] - x[i - 1]).abs();
        }
        hi * lo + a
    }
);

slice_case!(
    linear_recurrence,
    [[0.3, -0.5, 0.9, 1.1, 0.4, -0.2]],
    fn f(x: &[f64]) -> f64 {
        let mut v = 0.0;
        for i in 0..x.len() {
            v = 0.95 * v + 0.01 * x[i];
        }
        v
    }
);

slice_case!(
    unary_functions_near_their_domain_edges,
    [[0.999, 1e-3, 0.9], [-0.998, 2e-3, 0.5]],
    fn f(x: &[f64]) -> f64 {
        let mut v = x[0];
        let mut s = 0.0;
        for _ in 0..3 {
            s += v.asin() + (v * v).sqrt() + (x[1] + v * v * 1e-3).ln() + (1.0 - v * v).sqrt();
            v = v * x[2].sqrt().min(0.999);
        }
        s
    }
);

// ---- mutation ----

inplace_case!(
    overwrite_after_read,
    [[0.3, -0.5, 0.9, 1.1]],
    fn f(x: &mut [f64]) {
        for i in 0..x.len() {
            x[i] = x[i].sin() * x[i];
        }
    }
);

inplace_case!(
    recurrence_through_an_array,
    [[0.3, -0.5, 0.9, 1.1, 0.2]],
    fn f(x: &mut [f64]) {
        for i in 1..x.len() {
            x[i] += 0.5 * x[i - 1];
        }
        for i in (0..x.len() - 1).rev() {
            x[i] = x[i] * x[i + 1].cos();
        }
    }
);

inplace_case!(
    same_element_written_several_times,
    [[0.3, -0.5, 0.9]],
    fn f(x: &mut [f64]) {
        for k in 0..3 {
            x[0] = x[0] * x[1] + x[2];
            x[1] = x[0].sin();
            x[0] = x[0] * 0.5 + k as f64;
        }
        x[2] = x[0] * x[1];
    }
);

slice_case!(
    local_buffers,
    [[0.3, -0.5, 0.9, 1.1]],
    fn f(x: &[f64]) -> f64 {
        let n = x.len();
        let mut a = vec![0.0; n];
        let mut fixed = [0.0; 3];
        let mut grown = Vec::with_capacity(n);
        let mut empty: Vec<f64> = Vec::new();
        for i in 0..n {
            a[i] = x[i] * x[i];
            grown.push(x[i].exp());
            empty.push(a[i] + 1.0);
            fixed[i % 3] += x[i];
        }
        a.swap(0, n - 1);
        let mut copy = vec![0.0; n];
        copy.copy_from_slice(&a);
        let b = x.to_vec();
        let mut s = 0.0;
        for i in 0..n {
            s += copy[i] * grown[i] + b[i] * fixed[i % 3] + empty[i] * (grown.len() as f64);
        }
        a.fill(s);
        s + a[0] * 0.1
    }
);

inplace_case!(
    fill_and_copy_into_outputs,
    [[0.3, -0.5, 0.9, 1.1]],
    fn f(x: &mut [f64]) {
        let mut tmp = x.to_vec();
        for i in 0..tmp.len() {
            tmp[i] = tmp[i].exp() * x[(i + 1) % x.len()];
        }
        x.copy_from_slice(&tmp);
        let m = x[0] + x[1];
        tmp.fill(m);
        x[3] = tmp[2] * x[3];
    }
);

slice_case!(
    newton_iteration_inside_a_loop,
    [[2.0, 3.0, 0.5]],
    fn f(x: &[f64]) -> f64 {
        let mut s = 0.0;
        for i in 0..x.len() {
            let a = x[i];
            let mut y = a.max(1.0);
            while (y * y - a).abs() > 1e-14 * a {
                y = 0.5 * (y + a / y);
            }
            s += y * (i as f64 + 1.0);
        }
        s
    }
);

// ---- special values ----

mod special_values {
    #[cotan::autodiff_reverse(rev, Duplicated, Active)]
    #[cotan::autodiff_forward(fwd, Dual, Dual)]
    fn f(x: &[f64]) -> f64 {
        let mut v = 0.0;
        let mut i = 0;
        while i < x.len() {
            v = v * 0.5 + x[i].exp();
            i += 1;
        }
        v
    }

    #[test]
    fn nan_and_infinity_propagate_through_a_dynamic_loop() {
        let x = [0.3, f64::NAN, 0.2];
        let mut g = [0.0; 3];
        let y = rev(&x, &mut g, 1.0);
        assert!(y.is_nan());
        assert!(g[1].is_nan(), "the gradient of the NaN input is NaN: {g:?}");
        let (y2, t) = fwd(&x, &[0.0, 1.0, 0.0]);
        assert!(y2.is_nan() && t.is_nan());
        // exp(-inf) = 0 and its derivative 0; exp(inf) = inf and its derivative inf.
        let x = [0.3, f64::NEG_INFINITY, 0.2];
        let mut g = [0.0; 3];
        let y = rev(&x, &mut g, 1.0);
        assert!(y.is_finite());
        assert_eq!(g[1], 0.0);
        let x = [0.3, f64::INFINITY, 0.2];
        let mut g = [0.0; 3];
        let y = rev(&x, &mut g, 1.0);
        assert_eq!(y, f64::INFINITY);
        assert_eq!(g[1], f64::INFINITY);
        assert_eq!(fwd(&x, &[0.0, 1.0, 0.0]).1, f64::INFINITY);
    }
}

mod newton_sqrt {
    #[cotan::autodiff_reverse(d_sqrt, Active, Active)]
    #[cotan::autodiff_forward(t_sqrt, Dual, Dual)]
    fn newton_sqrt(a: f64) -> f64 {
        let mut y = a.max(1.0);
        while (y * y - a).abs() > 1e-15 * a {
            y = 0.5 * (y + a / y);
        }
        y
    }

    #[test]
    fn derivative_matches_the_analytic_one() {
        for a in [0.01f64, 0.5, 2.0, 10.0, 12345.0] {
            let exact = 0.5 / a.sqrt();
            let (y, g) = d_sqrt(a, 1.0);
            let (y2, t) = t_sqrt(a, 1.0);
            assert!((y - a.sqrt()).abs() <= 1e-12 * a.sqrt());
            assert_eq!(y, y2);
            assert!((g - exact).abs() <= 1e-8 * exact, "reverse at {a}: {g} vs {exact}");
            assert!((t - exact).abs() <= 1e-8 * exact, "forward at {a}: {t} vs {exact}");
        }
    }
}

mod cholesky {
    /// In-place Cholesky factorisation of a small SPD matrix (row-major, n×n) returning
    /// the log-determinant, 2 Σ ln L_ii: a triangular loop nest with reads after writes.
    #[cotan::autodiff_reverse(d_logdet, Duplicated, Const, Active)]
    #[cotan::autodiff_forward(t_logdet, Dual, Const, Dual)]
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

    fn spd() -> Vec<f64> {
        let b = [[1.0, 0.2, 0.3, 0.1], [0.5, 1.5, -0.2, 0.3], [0.1, 0.4, 1.2, -0.5], [0.3, 0.2, 0.1, 0.9]];
        let mut a = vec![0.0; 16];
        for i in 0..4 {
            for j in 0..4 {
                a[i * 4 + j] = (0..4).map(|k| b[i][k] * b[j][k]).sum::<f64>() + if i == j { 0.5 } else { 0.0 };
            }
        }
        a
    }

    #[test]
    fn gradient_of_the_log_determinant_is_the_inverse() {
        // d logdet(A) / dA = A⁻ᵀ on the lower triangle as read by the factorisation
        // (the upper triangle is never read); checked against finite differences.
        let a = spd();
        let mut g = vec![0.0; 16];
        let ld = d_logdet(&mut a.clone(), &mut g, 4, 1.0);
        let h = 1e-6;
        for idx in 0..16 {
            let (mut p, mut m) = (a.clone(), a.clone());
            p[idx] += h;
            m[idx] -= h;
            let fd = (logdet(&mut p, 4) - logdet(&mut m, 4)) / (2.0 * h);
            assert!((g[idx] - fd).abs() <= 1e-6 * fd.abs().max(1.0), "entry {idx}: {} vs {fd}", g[idx]);
        }
        assert!((ld - logdet(&mut a.clone(), 4)).abs() == 0.0);
        // Forward mode along a symmetric direction agrees with reverse (dot-product test).
        let u: Vec<f64> = (0..16).map(|k| ((k as f64) * 0.37).sin()).collect();
        let (_, t) = t_logdet(&mut a.clone(), &mut u.clone(), 4);
        let dot: f64 = g.iter().zip(&u).map(|(a, b)| a * b).sum();
        assert!((t - dot).abs() <= 1e-10 * dot.abs().max(1.0), "{t} vs {dot}");
    }
}

mod trip_counts_from_i64 {
    use super::common;

    #[cotan::autodiff_reverse(rev, Duplicated, Const, Active)]
    #[cotan::autodiff_forward(fwd, Dual, Const, Dual)]
    fn f(x: &[f64], n: &[i64]) -> f64 {
        let mut v = 0.5;
        for a in 0..n.len() {
            let mut k = 0i64;
            while k < n[a] {
                v = (v * x[(a + k as usize) % x.len()]).sin() + 0.3;
                k += 1;
            }
        }
        v
    }

    #[test]
    fn derivatives() {
        const N: &[i64] = &[2, 0, 3, -1, 1];
        let case = common::Case {
            src: "trip counts from &[i64]",
            shape: common::Shape::Slice,
            primal: &|x| vec![f(x, N)],
            jvp: &|x, u| {
                let (y, t) = fwd(x, u, N);
                (vec![y], vec![t])
            },
            vjp: &|x, w| {
                let mut g = vec![0.0; x.len()];
                let y = rev(x, &mut g, N, w[0]);
                (vec![y], g)
            },
        };
        common::check_compiled(&case, &[0.9, -0.4, 1.3]);
    }
}
