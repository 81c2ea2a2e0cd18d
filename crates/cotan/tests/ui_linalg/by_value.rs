use cotan::autodiff_reverse;
use ndarray::Array1;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: Array1<f64>) -> f64 {
    x.sum()
}

fn main() {}
