//! Parameters std accepts that carry no derivative or need a conversion (issue 11, §8):
//! integers marked `Dual`, `Active` or `Duplicated` (std's signature, no derivative),
//! `()` and zero-sized parameters, `&Box<f64>`.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code, unused_variables)]

use cotan::{autodiff_forward, autodiff_reverse};

#[autodiff_reverse(d_pow, Active, Active, Active)]
#[autodiff_forward(t_pow, Dual, Dual, Dual)]
fn pow(x: f64, n: i32) -> f64 {
    x.powi(n)
}

#[test]
fn integers_marked_active_or_dual() {
    // `Active` on an integer: its "gradient" (an `i32`) is returned, and is zero.
    let (v, dx, dn): (f64, f64, i32) = d_pow(1.5, 3, 1.0);
    assert_eq!((v, dx, dn), (1.5f64.powi(3), 3.0 * 1.5 * 1.5, 0));
    // `Dual` on an integer: a tangent of its type, which is never read.
    let (v, t) = t_pow(1.5, 2.0, 3, 7);
    assert_eq!((v, t), (1.5f64.powi(3), 2.0 * 3.0 * 1.5 * 1.5));
}

#[autodiff_reverse(d_square_i32, Duplicated, Active)]
fn square_i32(x: &i32) -> i32 {
    x * x
}

#[autodiff_reverse(d_scaled, Active, Const, Active)]
fn scaled(x: f64, n: u8) -> u8 {
    (x * n as f64) as u8
}

#[autodiff_reverse(d_square_i128, Duplicated, Active)]
fn square_i128(x: &i128) -> i128 {
    *x * *x
}

/// A 128-bit counter the reverse sweep needs (its values are saved on the tape).
#[autodiff_reverse(d_wide_loop, Active, Active, Active)]
fn wide_loop(x: f64, n: u128) -> f64 {
    let mut s = 0.0;
    let mut k = n;
    while k > 0 {
        s += x.sin() * (k as f64) + (k >> 100) as f64;
        k -= 1;
    }
    s
}

#[test]
fn integer_results_marked_active() {
    let mut dx = 0;
    assert_eq!(d_square_i128(&(1i128 << 62), &mut dx, 1), 1i128 << 124);
    let (v, dx, dn) = d_wide_loop(0.5, 4, 1.0);
    assert_eq!(v, wide_loop(0.5, 4));
    assert!((dx - 10.0 * 0.5f64.cos()).abs() < 1e-12);
    assert_eq!(dn, 0);
    // std's signature: a seed of the result's type, which nothing reads; the shadow of an
    // integer stays as it was.
    let mut dx = 5;
    assert_eq!(d_square_i32(&7, &mut dx, 1), 49);
    assert_eq!(dx, 5);
    // No derivative flows through the cast to an integer.
    assert_eq!(d_scaled(2.5, 3, 1), (7, 0.0));
}

/// No number anywhere: with every activity `Const`, the derivative is the function itself.
pub struct NotANumber(u8);

#[autodiff_forward(d_make, Const, Const)]
#[autodiff_reverse(r_make, Const, Const)]
fn make(k: u8) -> NotANumber {
    NotANumber(k + 1)
}

#[test]
fn every_activity_const() {
    assert_eq!(d_make(3).0, 4);
    assert_eq!(r_make(4).0, 5);
}

#[autodiff_reverse(d_gather, Duplicated, Duplicated, Active)]
#[autodiff_forward(t_gather, Dual, Dual, Dual)]
fn gather(x: &[f64], idx: &[usize]) -> f64 {
    let mut s = 0.0;
    for &i in idx {
        s += x[i] * x[i];
    }
    s
}

#[test]
fn integer_slices_marked_duplicated_or_dual() {
    let x = [1.0, 2.0, 3.0];
    let idx = [2, 0, 2];
    let mut dx = [0.0; 3];
    let mut didx = [5usize; 3];
    assert_eq!(d_gather(&x, &mut dx, &idx, &mut didx, 1.0), 19.0);
    assert_eq!(dx, [2.0, 0.0, 12.0]);
    assert_eq!(didx, [5; 3], "the shadow of integers is left alone");
    assert_eq!(t_gather(&x, &[0.0, 0.0, 1.0], &idx, &[0; 3]), (19.0, 12.0));
}

#[derive(Clone, Copy)]
struct Marker;

#[autodiff_forward(fd_inner, Const, Const, Dual)]
#[autodiff_reverse(rd_inner, Const, Const, Duplicated)]
fn zst(_zst: (), _: Marker, x: &mut f64) {
    *x = x.sin();
}

#[test]
fn unit_and_zero_sized_parameters() {
    let (mut x, mut dx) = (0.5, 1.0);
    fd_inner((), Marker, &mut x, &mut dx);
    assert_eq!((x, dx), (0.5f64.sin(), 0.5f64.cos()));
    let (mut x, mut dx) = (0.5, 1.0);
    rd_inner((), Marker, &mut x, &mut dx);
    assert_eq!((x, dx), (0.5f64.sin(), 0.5f64.cos()));
}

#[autodiff_reverse(d_boxed, Duplicated, Active)]
#[autodiff_forward(t_boxed, Dual, Dual)]
fn boxed(x: &Box<f64>) -> f64 {
    let y = **x;
    y * x.sin()
}

#[test]
fn boxed_float() {
    let x = Box::new(0.7);
    let mut dx = Box::new(0.0);
    let v = d_boxed(&x, &mut dx, 1.0);
    let want = 0.7f64.sin() + 0.7 * 0.7f64.cos();
    assert_eq!(v, boxed(&x));
    assert!((*dx - want).abs() < 1e-15);
    let (_, t) = t_boxed(&x, &Box::new(1.0));
    assert!((t - want).abs() < 1e-15);
}
