use cotan::autodiff_reverse;

const K: f64 = 2.0;

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    K * x
}

fn main() {}
