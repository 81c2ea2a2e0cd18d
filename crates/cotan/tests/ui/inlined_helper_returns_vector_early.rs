use cotan::autodiff_reverse;

// A helper lowered at its call (it returns a vector) that returns early: each `return`
// may choose another length, which cotan cannot merge yet.
fn clipped(xs: &[f64], lo: f64) -> Vec<f64> {
    if lo > 10.0 {
        return xs.to_vec();
    }
    xs.iter().map(|&x| if x < lo { lo } else { x }).collect()
}

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    clipped(x, 0.5).iter().sum()
}

fn main() {}
