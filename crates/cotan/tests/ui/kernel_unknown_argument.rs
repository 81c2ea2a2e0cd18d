// The kernel attribute takes nothing, or `gpu`.
#[cotan::kernel(threads = 4)]
fn f(x: &[f64], y: &mut [f64]) {
    for i in cotan::par(0..x.len()) {
        y[i] = x[i];
    }
}

fn main() {}
