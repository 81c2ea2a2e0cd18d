// `&mut` of the function's memory would be shared by the iterations.
fn g(y: &mut [f64], i: usize, v: f64) {
    y[i] = v;
}

#[cotan::kernel]
fn f(x: &[f64], y: &mut [f64]) {
    for i in cotan::par(0..x.len()) {
        g(&mut y[..], i, x[i]);
    }
}

fn main() {}
