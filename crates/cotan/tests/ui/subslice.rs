use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let s = &x[1..3];
    s[0] * s[1]
}

fn main() {}
