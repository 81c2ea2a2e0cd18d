use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Duplicated, Duplicated, Active)]
fn f(x: &[f64], y: &[f64]) -> f64 {
    let mut s = 0.0;
    for a in x.iter().filter(|v| **v > 0.0) {
        s += a * y[0];
    }
    s
}

fn main() {}
