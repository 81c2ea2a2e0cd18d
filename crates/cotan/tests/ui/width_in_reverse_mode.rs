use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, 2, Active, Active)]
fn f(x: f64) -> f64 {
    x * x
}

fn main() {}
