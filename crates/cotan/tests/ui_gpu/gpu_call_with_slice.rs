// WGSL has no pointers to buffers as arguments: a GPU kernel calls functions of numbers.
fn first(v: &[f32]) -> f32 {
    v[0]
}

#[cotan::kernel(gpu)]
fn f(x: &[f32], y: &mut [f32]) {
    for i in cotan::par(0..x.len()) {
        y[i] = first(x) * x[i];
    }
}

fn main() {}
