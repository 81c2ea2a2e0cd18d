use cotan::autodiff_reverse;
use nalgebra::DMatrix;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(a: &DMatrix<f64>) -> f64 {
    let c = a.clone().cholesky().unwrap();
    let l = c.l();
    c.inverse().sum() + l[(0, 0)]
}

fn main() {}
