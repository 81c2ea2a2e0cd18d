use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    let mut a = [x; 2];
    let s = a[0];
    a = [s, 2.0 * x];
    a[0] * a[1]
}

fn main() {}
