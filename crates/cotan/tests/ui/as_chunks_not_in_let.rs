use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for [a, b] in x.as_chunks::<2>().0 {
        s += a * b;
    }
    s
}

fn main() {}
