// A helper that returns a sub-slice: cotan passes memory into calls, not out of them.
use cotan::autodiff_reverse;

fn row(m: &[f64], i: usize) -> &[f64] {
    &m[2 * i..2 * i + 2]
}

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let r = row(x, 1);
    r[0] * r[1]
}

fn main() {}
