// No iteration can stop the others.
#[cotan::kernel]
fn f(x: &[f64], y: &mut [f64]) {
    for i in cotan::par(0..x.len()) {
        if x[i] < 0.0 {
            break;
        }
        y[i] = x[i];
    }
}

fn main() {}
