// No iteration can return from the function.
#[cotan::kernel]
fn f(x: &[f64], y: &mut [f64]) -> f64 {
    for i in cotan::par(0..x.len()) {
        if x[i] < 0.0 {
            return x[i];
        }
        y[i] = x[i];
    }
    0.0
}

fn main() {}

// Nor with `?`.
#[cotan::kernel]
fn g(x: &[f64], y: &mut [f64]) -> Option<f64> {
    for i in cotan::par(0..x.len()) {
        y[i] = *x.get(i + 1)?;
    }
    Some(0.0)
}
