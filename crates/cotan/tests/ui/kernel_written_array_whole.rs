// An array the loop writes is read by element in it, not whole.
#[cotan::kernel]
fn f(x: &[f64], y: &mut [f64]) {
    for i in cotan::par(0..x.len()) {
        let s: f64 = y.iter().sum();
        y[i] = x[i] * s;
    }
}

fn main() {}
