// `continue` of an outer loop would leave the parallel loop.
#[cotan::kernel]
fn f(x: &[f64], y: &mut [f64]) {
    'outer: for t in 0..2 {
        for i in cotan::par(0..x.len()) {
            if x[i] < 0.0 {
                continue 'outer;
            }
            y[i] = x[i] * t as f64;
        }
    }
}

fn main() {}
