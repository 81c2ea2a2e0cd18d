use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    let y;
    y = 2.0 * x;
    y
}

fn main() {}
