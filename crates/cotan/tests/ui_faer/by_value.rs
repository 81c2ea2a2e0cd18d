use cotan::autodiff_forward;
use faer::Mat;

#[autodiff_forward(t_f, Dual, Dual)]
fn f(a: Mat<f64>) -> f64 {
    a[(0, 0)]
}

fn main() {}
