// Only the loop's own index may be written (another iteration may write any other one).
#[cotan::kernel]
fn f(x: &[f64], y: &mut [f64]) {
    for i in cotan::par(0..x.len() - 1) {
        y[i + 1] = x[i];
    }
}

fn main() {}
