// `kernel(gpu)` needs cotan's feature `gpu` (the compile-fail tests build without it).
#[cotan::kernel(gpu)]
fn f(x: &[f32], y: &mut [f32]) {
    for i in cotan::par(0..x.len()) {
        y[i] = x[i];
    }
}

fn main() {}
