use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Duplicated, Duplicated, Active)]
fn f(x: &[f64], y: &[f64]) -> f64 {
    let mut s = 0.0;
    for (a, b) in x.iter().zip(y) {
        s += a * b;
    }
    s
}

fn main() {}
