use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> Vec<f64> {
    vec![x, 2.0 * x]
}

fn main() {}
