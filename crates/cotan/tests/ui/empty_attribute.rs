use cotan::autodiff_reverse;

#[autodiff_reverse()]
fn f(x: f64) -> f64 {
    x * x
}

fn main() {}
