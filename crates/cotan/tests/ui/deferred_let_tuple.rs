use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    let pair;
    if x > 0.0 {
        pair = (x, 1.0);
    } else {
        pair = (1.0, x);
    }
    pair.0 * pair.1
}

fn main() {}
