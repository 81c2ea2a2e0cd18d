use cotan::autodiff_reverse;

fn norm(p: &[f64; 2]) -> f64 {
    (p[0] * p[0] + p[1] * p[1]).sqrt()
}

// rustc reads the chunk length from `norm`'s parameter; cotan reads it from patterns and
// types where the chunks are used, and asks for it here.
#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let (c, _) = x.as_chunks();
    norm(&c[0])
}

fn main() {}
