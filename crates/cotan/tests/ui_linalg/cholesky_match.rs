use cotan::autodiff_reverse;
use nalgebra::{DMatrix, DVector};

#[autodiff_reverse(d_f, Duplicated, Duplicated, Active)]
fn f(a: &DMatrix<f64>, b: &DVector<f64>) -> f64 {
    match a.clone().cholesky() {
        Some(c) => c.solve(b).sum(),
        None => 0.0,
    }
}

fn main() {}
