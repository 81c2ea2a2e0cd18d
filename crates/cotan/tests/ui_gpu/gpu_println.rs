// No printing on the GPU.
#[cotan::kernel(gpu)]
fn f(x: &[f32], y: &mut [f32]) {
    for i in cotan::par(0..x.len()) {
        println!("{}", x[i]);
        y[i] = x[i];
    }
}

fn main() {}
