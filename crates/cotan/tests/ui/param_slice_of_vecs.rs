use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[Vec<f64>]) -> f64 {
    x[0][0]
}

fn main() {}
