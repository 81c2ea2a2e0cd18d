use cotan::autodiff_reverse;
use nalgebra::DVector;

fn first(x: &DVector<f64>) -> f64 {
    x[0]
}

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &DVector<f64>) -> f64 {
    first(x) * 2.0
}

fn main() {}
