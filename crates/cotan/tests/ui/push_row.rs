// Rows pushed onto a vector of vectors: the message says to make the matrix with its rows
// (`let mut k = vec![vec![0.0; n]; n];` and `k[i][j] = ..`, which works).
use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let mut k: Vec<Vec<f64>> = Vec::new();
    for i in 0..x.len() {
        let mut row = Vec::new();
        for j in 0..x.len() {
            row.push((x[i] - x[j]).powi(2));
        }
        k.push(row);
    }
    k[0][1]
}

fn main() {}
