// A vector of vectors collected from nested chains: the error says to make it with
// `vec![vec![0.0; m]; n]` and fill it in loops (two_dimensional.rs does).
#[cotan::autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let img: Vec<Vec<f64>> = (0..4).map(|i| (0..4).map(|j| x[(i + j) % 4] * i as f64).collect()).collect();
    img[1][2] + img[3][0]
}

fn main() {}
