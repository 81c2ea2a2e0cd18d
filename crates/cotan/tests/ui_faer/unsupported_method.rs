use cotan::autodiff_reverse;
use faer::Mat;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(a: &Mat<f64>) -> f64 {
    let q = a.qr();
    q.R()[(0, 0)]
}

fn main() {}
