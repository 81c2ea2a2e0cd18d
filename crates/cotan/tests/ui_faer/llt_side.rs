use cotan::autodiff_reverse;
use faer::linalg::solvers::Solve;
use faer::{Col, Mat, Side};

#[autodiff_reverse(d_f, Duplicated, Duplicated, Const, Active)]
fn f(a: &Mat<f64>, b: &Col<f64>, lower: bool) -> f64 {
    let side = if lower { Side::Lower } else { Side::Upper };
    let c = a.llt(side).unwrap();
    c.solve(b).sum()
}

fn main() {}
