//! Functions generic over their float type (`num_traits::Float`), instantiated for f32 and f64.
#![allow(clippy::needless_range_loop)]

use cotan::{autodiff_forward, autodiff_reverse};
use num_traits::Float;

#[autodiff_reverse(d_logsumexp, Duplicated, Active)]
#[autodiff_forward(f_logsumexp, Dual, Dual)]
#[autodiff_forward(b_logsumexp, 2, Dual, Dual)]
#[autodiff_forward(v_logsumexp, 2, Dualv, Dual)]
fn logsumexp<T: Float>(x: &[T]) -> T {
    let mut m = T::neg_infinity();
    for &v in x {
        m = m.max(v);
    }
    let mut s = T::zero();
    for i in 0..x.len() {
        s = s + (x[i] - m).exp();
    }
    m + s.ln()
}

#[cotan::differentiable]
fn scaled_norm<T: Float>(x: &[T], c: T) -> T {
    let mut s = T::zero();
    for (k, v) in x.iter().enumerate() {
        s = s + T::from(k + 1).unwrap() * *v * *v;
    }
    c * s.sqrt() / T::from(2.0).unwrap()
}

#[autodiff_reverse(d_model, Duplicated, Active, Active)]
fn model<T>(x: &[T], c: T) -> T
where
    T: Float,
{
    scaled_norm(x, c) + logsumexp(x) * T::from(x.len()).unwrap()
}

fn fd<T: Float>(f: impl Fn(&[T]) -> T, x: &[T], h: T) -> Vec<T> {
    (0..x.len())
        .map(|k| {
            let (mut a, mut b) = (x.to_vec(), x.to_vec());
            a[k] = a[k] + h;
            b[k] = b[k] - h;
            (f(&a) - f(&b)) / (h + h)
        })
        .collect()
}

#[test]
fn generic_logsumexp_in_f64_and_f32() {
    let x = [0.3, -1.2, 2.5, 0.7];
    let mut dx = [0.0; 4];
    let y = d_logsumexp(&x, &mut dx, 1.0);
    assert!((y - logsumexp(&x)).abs() < 1e-14);
    for (a, b) in dx.iter().zip(fd(logsumexp, &x, 1e-6)) {
        assert!((a - b).abs() < 1e-8, "{a} vs {b}");
    }
    let (_, dy) = f_logsumexp(&x, &[1.0, 0.0, 0.0, 0.0]);
    assert!((dy - dx[0]).abs() < 1e-14);

    let x32 = [0.3f32, -1.2, 2.5, 0.7];
    let mut dx32 = [0.0f32; 4];
    let y32 = d_logsumexp(&x32, &mut dx32, 1.0);
    assert!((y32 as f64 - y).abs() < 1e-5);
    for (a, b) in dx32.iter().zip(dx) {
        assert!((*a as f64 - b).abs() < 1e-5, "{a} vs {b}");
    }
}

#[test]
fn generic_functions_call_each_other() {
    let x = [0.5, -0.25, 1.5];
    let c = 1.3;
    let mut dx = [0.0; 3];
    let (y, dc) = d_model(&x, &mut dx, c, 1.0);
    assert!((y - model(&x, c)).abs() < 1e-13);
    for (a, b) in dx.iter().zip(fd(|x| model(x, c), &x, 1e-6)) {
        assert!((a - b).abs() < 1e-7, "{a} vs {b}");
    }
    let h = 1e-6;
    let fd_c = (model(&x, c + h) - model(&x, c - h)) / (2.0 * h);
    assert!((dc - fd_c).abs() < 1e-7);
    let mut dx32 = [0.0f32; 3];
    let (y32, _) = d_model(&[0.5f32, -0.25, 1.5], &mut dx32, 1.3f32, 1.0f32);
    assert!((y32 as f64 - y).abs() < 1e-4);
}

/// Bound by std's arithmetic traits only, as std::autodiff's own test writes it: the type
/// parameter is the float type.
#[autodiff_reverse(d_square, Duplicated, Active)]
#[autodiff_forward(t_square, Dual, Dual)]
fn square<T: std::ops::Mul<Output = T> + std::ops::Add<Output = T> + Copy>(x: &T) -> T {
    *x * *x + *x
}

/// Unbounded, and only moved around: the element type the caller passes.
fn reverse_pairs<T>(data: &mut [T]) {
    let n = data.len();
    for i in 0..n / 2 {
        data.swap(i, n - 1 - i);
    }
}

#[autodiff_reverse(d_permuted, Duplicated, Active)]
fn permuted(x: &[f64]) -> f64 {
    let mut y = x.to_vec();
    reverse_pairs(&mut y);
    let mut s = 0.0;
    for i in 0..y.len() {
        s += (i as f64 + 1.0) * y[i] * y[i];
    }
    s
}

#[test]
fn type_parameters_bound_by_arithmetic_or_unbounded_elements() {
    let mut dx = 0.0;
    assert_eq!(d_square::<f64>(&3.0, &mut dx, 1.0), 12.0);
    assert_eq!(dx, 7.0);
    let mut dx32 = 0.0f32;
    d_square::<f32>(&2.0, &mut dx32, 1.0);
    assert_eq!(dx32, 5.0);
    assert_eq!(t_square::<f64>(&3.0, &1.0), (12.0, 7.0));
    // y = reverse(x): d/dx_k of sum (i+1) y_i^2 = 2 (n - k) x_k.
    let x = [0.5, -1.0, 2.0, 0.25];
    let mut g = [0.0; 4];
    d_permuted(&x, &mut g, 1.0);
    for k in 0..4 {
        assert!((g[k] - 2.0 * (4 - k) as f64 * x[k]).abs() < 1e-12, "{g:?}");
    }
}

/// Batched forward mode of generic float code is generic too: `f32` and `f64`.
#[test]
fn batched_forward_mode_in_f64_and_f32() {
    let x = [0.3, -1.2, 2.5, 0.7];
    let (u0, u1) = ([1.0, 0.5, -0.3, 0.2], [0.0, -1.0, 0.4, 2.0]);
    let [y, t0, t1] = b_logsumexp(&x, &u0, &u1);
    assert_eq!(y, logsumexp(&x));
    let lanes: Vec<f64> = u0.iter().chain(&u1).copied().collect();
    let [yv, l0, l1] = v_logsumexp(&x, &lanes);
    assert_eq!(yv, y);
    let grad = fd(logsumexp, &x, 1e-6);
    for (t, l, u) in [(t0, l0, u0), (t1, l1, u1)] {
        // Against finite differences (1e-8) and unbatched forward mode (1e-14).
        let want: f64 = grad.iter().zip(u).map(|(g, u)| g * u).sum();
        assert!((t - want).abs() < 1e-8, "{t} vs {want}");
        let (_, single) = f_logsumexp(&x, &u);
        assert!((t - single).abs() < 1e-14 && (l - single).abs() < 1e-14, "{t} {l} vs {single}");
    }
    let x32 = x.map(|v| v as f32);
    let [y32, s0, s1] = b_logsumexp(&x32, &u0.map(|v| v as f32), &u1.map(|v| v as f32));
    assert!((y32 as f64 - y).abs() < 1e-5);
    assert!((s0 as f64 - t0).abs() < 1e-5 && (s1 as f64 - t1).abs() < 1e-5, "{s0} {s1} vs {t0} {t1}");
}

/// Conversions to `T` that name `f64`: a constant of std (`T::from(SQRT_2)`) and a closure
/// that converts (`|v: f64| T::from(v).unwrap()`), as a hand-written erf is often written.
fn erf_approx<T: Float>(x: T) -> T {
    let c = |v: f64| T::from(v).unwrap();
    let t = T::one() / (T::one() + c(0.3275911) * x.abs());
    let poly = t
        * (c(0.254829592) + t * (c(-0.284496736) + t * (c(1.421413741) + t * (c(-1.453152027) + t * c(1.061405429)))));
    let y = T::one() - poly * (-x * x).exp();
    if x < T::zero() {
        -y
    } else {
        y
    }
}

#[autodiff_reverse(d_normal_cdf_sum, Duplicated, Active)]
#[autodiff_forward(t_normal_cdf_sum, Dual, Dual)]
fn normal_cdf_sum<T: Float>(x: &[T]) -> T {
    let half = T::from(0.5).unwrap();
    let mut s = T::zero();
    for &v in x {
        s = s + half * (T::one() + erf_approx(v / T::from(std::f64::consts::SQRT_2).unwrap()));
    }
    s
}

#[test]
fn conversions_naming_f64_in_generic_functions() {
    let x = [0.3, -1.2, 2.5, 0.7];
    let mut dx = [0.0; 4];
    let y = d_normal_cdf_sum(&x, &mut dx, 1.0);
    assert_eq!(y, normal_cdf_sum(&x));
    for (a, b) in dx.iter().zip(fd(normal_cdf_sum, &x, 1e-6)) {
        assert!((a - b).abs() < 1e-8, "{a} vs {b}");
    }
    let (_, dy) = t_normal_cdf_sum(&x, &[0.0, 1.0, 0.0, 0.0]);
    assert!((dy - dx[1]).abs() < 1e-14);
    let x32 = [0.3f32, -1.2, 2.5, 0.7];
    let mut dx32 = [0.0f32; 4];
    let y32 = d_normal_cdf_sum(&x32, &mut dx32, 1.0);
    assert_eq!(y32, normal_cdf_sum(&x32));
    for (a, b) in dx32.iter().zip(dx) {
        assert!((*a as f64 - b).abs() < 1e-5, "{a} vs {b}");
    }
}
