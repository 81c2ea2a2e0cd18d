// Structs collected after a `filter`: the vector's length is only known at the end.
use cotan::autodiff_reverse;

#[derive(Clone, Copy, Default)]
pub struct Spring {
    pub rest: f64,
    pub k: f64,
}

#[autodiff_reverse(d_f, Duplicated, Duplicated, Active)]
fn f(springs: &[Spring], ks: &[f64]) -> f64 {
    let v: Vec<Spring> = springs.iter().zip(ks).filter(|(_, &k)| k > 0.0).map(|(s, &k)| Spring { k, ..*s }).collect();
    v.iter().map(|s| s.k * s.rest).sum()
}

fn main() {}
