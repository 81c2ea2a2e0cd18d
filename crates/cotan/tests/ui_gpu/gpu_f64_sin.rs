// Vulkan and Metal have no f64 `sin`: an f64 GPU kernel may not use it.
#[cotan::kernel(gpu)]
fn f(x: &[f64], y: &mut [f64]) {
    for i in cotan::par(0..x.len()) {
        y[i] = x[i].sin();
    }
}

fn main() {}
