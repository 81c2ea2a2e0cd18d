use cotan::autodiff_reverse;
use nalgebra::DVector;

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: &DVector<f64>) -> f64 {
    x.norm()
}

fn main() {}
