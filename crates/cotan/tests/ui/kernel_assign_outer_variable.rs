// A parallel loop's iterations run at once: none may assign to a variable of the function.
#[cotan::kernel]
fn f(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in cotan::par(0..x.len()) {
        s += x[i];
    }
    s
}

fn main() {}
