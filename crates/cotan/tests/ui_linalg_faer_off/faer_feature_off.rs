use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(a: &faer::Mat<f64>) -> f64 {
    a[(0, 0)]
}

fn main() {}
