use cotan::autodiff_reverse;

fn total(c: &[[f64; 2]]) -> f64 {
    c.iter().map(|[a, b]| a * b).sum()
}

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let (c, _) = x.as_chunks::<2>();
    total(c)
}

fn main() {}
