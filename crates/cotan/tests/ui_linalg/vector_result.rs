use cotan::autodiff_reverse;
use nalgebra::DVector;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &DVector<f64>) -> DVector<f64> {
    x * 2.0
}

fn main() {}
