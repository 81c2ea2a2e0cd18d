use cotan::autodiff_reverse;
use faer::linalg::solvers::Solve;
use faer::{Col, Mat};

#[autodiff_reverse(d_f, Duplicated, Duplicated, Active)]
fn f(a: &Mat<f64>, b: &Col<f64>) -> f64 {
    let lu = a.partial_piv_lu();
    lu.solve(b).sum()
}

fn main() {}
