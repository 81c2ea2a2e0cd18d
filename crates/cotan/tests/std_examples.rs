//! The examples of std::autodiff's documentation, with the values std documents.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

use cotan::{autodiff_forward, autodiff_reverse};

#[autodiff_forward(rb_fwd1, Dual, Const, Dual)]
#[autodiff_forward(rb_fwd2, Const, Dual, Dual)]
#[autodiff_forward(rb_fwd3, Dual, Dual, Dual)]
#[autodiff_forward(rb_fwd_only, Dual, Dual, DualOnly)]
#[autodiff_reverse(rb_rev, Active, Active, Active)]
#[autodiff_reverse(rb_rev_only, Active, Active, ActiveOnly)]
fn rosenbrock(x: f64, y: f64) -> f64 {
    (1.0 - x).powi(2) + 100.0 * (y - x.powi(2)).powi(2)
}

#[autodiff_forward(rb_inp_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(rb_inp_rev, Active, Active, Duplicated)]
fn rosenbrock_inp(x: f64, y: f64, out: &mut f64) {
    *out = (1.0 - x).powi(2) + 100.0 * (y - x.powi(2)).powi(2);
}

#[test]
fn forward_matches_std_docs() {
    assert_eq!(rb_fwd1(1.0, 1.0, 3.0), (400.0, -800.0));
    assert_eq!(rb_fwd2(1.0, 3.0, 1.0), (400.0, 400.0));
    assert_eq!(rb_fwd3(1.0, 1.0, 3.0, 1.0), (400.0, -400.0));
    assert_eq!(rb_fwd_only(1.0, 1.0, 3.0, 1.0), -400.0);
}

#[test]
fn reverse_matches_std_docs() {
    assert_eq!(rb_rev(1.0, 3.0, 1.0), (400.0, -800.0, 400.0));
    assert_eq!(rb_rev_only(1.0, 3.0, 1.0), (-800.0, 400.0));
}

#[test]
fn in_place_reverse_matches_std_docs() {
    let mut out = 0.0;
    let mut seed = 1.0;
    let (dx, dy) = rb_inp_rev(1.0, 3.0, &mut out, &mut seed);
    assert_eq!((dx, dy), (-800.0, 400.0));
    assert_eq!(out, 400.0);
    assert_eq!(seed, 0.0);
}

#[test]
fn in_place_forward_writes_the_tangent_into_the_shadow() {
    let mut out = 0.0;
    let mut dout = 0.0;
    rb_inp_fwd(1.0, 1.0, 3.0, 1.0, &mut out, &mut dout);
    assert_eq!((out, dout), (400.0, -400.0));
}
