//! The README's generic float code, as an outside crate writes it: the bound is
//! `cotan::Float`, so that the crate needs no `num-traits` dependency of its own (this
//! package depends on `cotan` alone). The derivative is generic over `cotan::Real`.
//!
//! Run: `cargo run --release -p cotan-examples --example generic_float`

use cotan::Float;

#[cotan::autodiff_reverse(d_softplus_sum, Duplicated, Active)]
#[cotan::autodiff_forward(t_softplus_sum, Dual, Dual)]
fn softplus_sum<T: Float>(x: &[T]) -> T {
    let mut s = T::zero();
    for &v in x {
        s = s + (T::one() + v.exp()).ln();
    }
    s
}

fn main() {
    let mut dx = [0.0f32; 2];
    let value = d_softplus_sum(&[0.0f32, 1.0], &mut dx, 1.0);
    println!("f32: softplus_sum = {value}, gradient = {dx:?}");
    assert!((dx[0] - 0.5).abs() < 1e-6);

    let x = [0.0f64, 1.0];
    let mut dx = [0.0f64; 2];
    d_softplus_sum(&x, &mut dx, 1.0);
    let (_, along_e1) = t_softplus_sum(&x, &[0.0, 1.0]);
    println!("f64: gradient = {dx:?}, forward along e1 = {along_e1}");
    assert!((dx[1] - 1.0 / (1.0 + (-1.0f64).exp())).abs() < 1e-15);
    assert!((along_e1 - dx[1]).abs() < 1e-15);
}
