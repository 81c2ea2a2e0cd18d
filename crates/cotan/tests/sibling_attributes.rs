//! Several autodiff attributes on one function expand together: the function is lowered
//! once, and an `ActiveOnly` (`DualOnly`) derivative beside an `Active` (`Dual`) one with
//! the same inputs calls it and drops the value. Each derivative is checked against finite
//! differences and the dot-product test, and each value-less one against its sibling
//! (exactly: it runs the same code), whatever order the attributes come in.

#![allow(clippy::needless_range_loop)]

mod common;

use common::check_scalar;
use cotan::{autodiff_forward, autodiff_reverse};

#[autodiff_reverse(weighted_rev, Duplicated, Active, Active)]
#[autodiff_reverse(weighted_rev_only, Duplicated, Active, ActiveOnly)]
#[autodiff_forward(weighted_fwd, Dual, Dual, Dual)]
#[autodiff_forward(weighted_fwd_only, Dual, Dual, DualOnly)]
fn weighted(x: &[f64], a: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += (a * x[i]).sin() * x[i];
    }
    s * a
}

// The value-less attributes first, and a `cfg_attr` and an inert attribute between them.
#[autodiff_reverse(first_rev_only, Duplicated, ActiveOnly)]
#[cfg_attr(all(), autodiff_forward(first_fwd_only, Dual, DualOnly))]
#[inline]
#[cotan::autodiff_reverse(first_rev, Duplicated, Active)]
#[cfg_attr(all(), cotan::autodiff_forward(first_fwd, Dual, Dual))]
fn first(x: &[f64]) -> f64 {
    let mut p = 1.0;
    for v in x {
        p *= 1.0 + 0.1 * v;
    }
    p.ln()
}

/// A parameter named like the derivative that the value-less one calls.
#[autodiff_reverse(x, Duplicated, Active)]
#[autodiff_reverse(x_only, Duplicated, ActiveOnly)]
fn shadowing(x: &[f64]) -> f64 {
    x.iter().map(|v| v * v).sum::<f64>()
}

struct Model {
    scale: f64,
}

impl Model {
    // A method: both derivatives are generated (the value-less one cannot name its sibling
    // from outside the `impl`), and still agree.
    #[autodiff_reverse(energy_rev, Const, Duplicated, Active)]
    #[autodiff_reverse(energy_rev_only, Const, Duplicated, ActiveOnly)]
    fn energy(&self, x: &[f64]) -> f64 {
        self.scale * x.iter().map(|v| v.cos()).sum::<f64>()
    }
}

/// Generic over the float type: both derivatives are generated.
#[autodiff_reverse(cube_rev, Duplicated, Active)]
#[autodiff_reverse(cube_rev_only, Duplicated, ActiveOnly)]
fn cube<T: cotan::Real>(x: &[T]) -> T {
    let mut s = T::zero();
    for v in x {
        s += *v * *v * *v;
    }
    s
}

fn input(n: usize) -> Vec<f64> {
    common::smooth_input(n)
}

#[test]
fn active_and_active_only_agree_and_match_finite_differences() {
    let x = input(7);
    let a = 0.8;
    let f = |z: &[f64]| weighted(&z[..7], z[7]);
    let jvp = |z: &[f64], u: &[f64]| {
        let (v, t) = weighted_fwd(&z[..7], &u[..7], z[7], u[7]);
        assert_eq!(v, f(z));
        assert_eq!(weighted_fwd_only(&z[..7], &u[..7], z[7], u[7]), t, "DualOnly against Dual");
        t
    };
    let grad = |z: &[f64]| {
        let mut dx = vec![0.0; 7];
        let (v, da) = weighted_rev(&z[..7], &mut dx, z[7], 1.0);
        assert_eq!(v, f(z));
        let mut dx_only = vec![0.0; 7];
        let da_only = weighted_rev_only(&z[..7], &mut dx_only, z[7], 1.0);
        assert_eq!((&dx_only, da_only), (&dx, da), "ActiveOnly against Active");
        let mut g = dx;
        g.push(da);
        g
    };
    let mut z = x.clone();
    z.push(a);
    check_scalar("weighted", &f, &jvp, &grad, &z, 3);
}

#[test]
fn value_less_attributes_first() {
    let x = input(5);
    let jvp = |x: &[f64], u: &[f64]| {
        let (v, t) = first_fwd(x, u);
        assert_eq!(v, first(x));
        assert_eq!(first_fwd_only(x, u), t);
        t
    };
    let grad = |x: &[f64]| {
        let mut dx = vec![0.0; x.len()];
        assert_eq!(first_rev(x, &mut dx, 1.0), first(x));
        let mut dx_only = vec![0.0; x.len()];
        first_rev_only(x, &mut dx_only, 1.0);
        assert_eq!(dx_only, dx);
        dx
    };
    check_scalar("first", &|x| first(x), &jvp, &grad, &x, 3);
}

#[test]
fn seeds_scale_the_value_less_gradient() {
    let v = input(4);
    let (mut d1, mut d2) = (vec![0.0; 4], vec![0.0; 4]);
    assert_eq!(x(&v, &mut d1, 2.5), shadowing(&v));
    x_only(&v, &mut d2, 2.5);
    assert_eq!(d1, d2);
    for i in 0..4 {
        assert!((d1[i] - 5.0 * v[i]).abs() <= 1e-12, "d/dx{i}: {} against {}", d1[i], 5.0 * v[i]);
    }
}

#[test]
fn methods_and_generic_functions_keep_both_derivatives() {
    let m = Model { scale: 1.5 };
    let x = input(6);
    let (mut d1, mut d2) = (vec![0.0; 6], vec![0.0; 6]);
    assert_eq!(m.energy_rev(&x, &mut d1, 1.0), m.energy(&x));
    m.energy_rev_only(&x, &mut d2, 1.0);
    assert_eq!(d1, d2);
    for i in 0..6 {
        assert!((d1[i] + 1.5 * x[i].sin()).abs() <= 1e-12);
    }
    let (mut c1, mut c2) = (vec![0.0f32; 6], vec![0.0f32; 6]);
    let xf: Vec<f32> = x.iter().map(|&v| v as f32).collect();
    assert_eq!(cube_rev(&xf, &mut c1, 1.0), cube(&xf));
    cube_rev_only(&xf, &mut c2, 1.0);
    assert_eq!(c1, c2);
    for i in 0..6 {
        assert!((c1[i] - 3.0 * xf[i] * xf[i]).abs() <= 1e-6);
    }
}
