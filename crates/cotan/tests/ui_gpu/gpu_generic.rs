// WGSL has no generics: a GPU kernel is written for f32 or f64.
#[cotan::kernel(gpu)]
fn f<T: cotan::Float>(x: &[T], y: &mut [T]) {
    for i in cotan::par(0..x.len()) {
        y[i] = x[i] * x[i];
    }
}

fn main() {}
