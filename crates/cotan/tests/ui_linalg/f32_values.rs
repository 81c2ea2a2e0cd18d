use cotan::autodiff_reverse;
use nalgebra::DVector;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &DVector<f32>) -> f32 {
    x[0]
}

fn main() {}
