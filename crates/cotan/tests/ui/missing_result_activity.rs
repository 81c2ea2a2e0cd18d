use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64, y: f64) -> f64 {
    x * y
}

fn main() {}
