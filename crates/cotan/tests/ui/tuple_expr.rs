use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    let t = (x, 2.0 * x);
    t.0 * t.1
}

fn main() {}
