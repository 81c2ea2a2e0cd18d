// Arrays of the function are written one level deep.
#[cotan::kernel]
fn f(x: &[f64], y: &mut [Vec<f64>]) {
    for i in cotan::par(0..x.len()) {
        y[i][0] = x[i];
    }
}

fn main() {}
