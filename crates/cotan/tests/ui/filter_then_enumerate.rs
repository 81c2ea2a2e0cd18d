use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    x.iter().filter(|v| **v > 0.0).enumerate().map(|(i, v)| v * i as f64).sum()
}

fn main() {}
