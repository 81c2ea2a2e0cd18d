use cotan::autodiff_reverse;
use nalgebra::DMatrix;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(m: &DMatrix<f64>) -> f64 {
    m.column(0).sum()
}

fn main() {}
