// One level of parallel loops.
#[cotan::kernel]
fn f(x: &[f64], y: &mut [f64]) {
    for i in cotan::par(0..2) {
        for j in cotan::par(0..x.len()) {
            y[j] += x[j] * i as f64;
        }
    }
}

fn main() {}
