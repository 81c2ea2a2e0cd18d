// Structs collected into a vector: cotan copies slices of structs (`to_vec`) instead.
use cotan::autodiff_reverse;

#[derive(Clone, Copy, Default)]
pub struct Spring {
    pub rest: f64,
    pub k: f64,
}

#[autodiff_reverse(d_f, Duplicated, Duplicated, Active)]
fn f(springs: &[Spring], ks: &[f64]) -> f64 {
    let v: Vec<Spring> = springs.iter().zip(ks).map(|(s, &k)| Spring { k, ..*s }).collect();
    v.iter().map(|s| s.k * s.rest).sum()
}

fn main() {}
