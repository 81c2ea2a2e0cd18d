use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let k = x.iter().skip_while(|v| **v < 0.0).count();
    k as f64 * x[0]
}

fn main() {}
