// A neighbour list built inside the function as a vector of tuples: cotan says to keep one
// vector per part.
#[cotan::autodiff_reverse(d_energy, Duplicated, Active)]
fn energy(x: &[f64]) -> f64 {
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for i in 0..x.len() {
        for j in i + 1..x.len() {
            if (x[i] - x[j]).abs() < 1.0 {
                pairs.push((i, j));
            }
        }
    }
    let mut e = 0.0;
    for &(i, j) in &pairs {
        e += (x[i] - x[j]).powi(2);
    }
    e
}

fn main() {
    let _ = energy(&[0.1, 0.5, 2.0]);
}
