use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    let (a, b) = (x, 2.0 * x);
    a * b
}

fn main() {}
