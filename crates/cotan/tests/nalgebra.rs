#![cfg(feature = "nalgebra")]
use cotan::{autodiff_forward, autodiff_reverse};

#[autodiff_reverse(d_f, Duplicated, Duplicated, Active)]
#[autodiff_forward(t_f, Dual, Dual, Dual)]
fn f(a: &[f64], x: &[f64]) -> f64 {
    let mut y = vec![0.0; 2];
    ::cotan::rt::nalgebra::gemv(a, 2usize, 2usize, 1usize, 2usize, x, &mut y);
    ::cotan::rt::nalgebra::norm_squared(&y)
}

#[test]
fn plumbing() {
    let a = [1.0, 2.0, 3.0, 4.0];
    let x = [0.5, -1.0];
    let mut da = [0.0; 4];
    let mut dx = [0.0; 2];
    let v = d_f(&a, &mut da, &x, &mut dx, 1.0);
    assert_eq!(v, f(&a, &x));
    println!("{da:?} {dx:?}");
    let t = t_f(&a, &[0.0; 4], &x, &[1.0, 0.0]);
    println!("{t:?}");
}
