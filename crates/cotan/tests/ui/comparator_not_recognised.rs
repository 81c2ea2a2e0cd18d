use cotan::autodiff_reverse;
use std::cmp::Ordering;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    x.iter()
        .copied()
        .max_by(|a, b| if a > b { Ordering::Greater } else { Ordering::Less })
        .unwrap()
}

fn main() {}
