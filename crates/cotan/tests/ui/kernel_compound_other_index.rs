// Only `+=`/`-=` accumulate (atomically) at any index.
#[cotan::kernel]
fn f(x: &[f64], y: &mut [f64]) {
    for i in cotan::par(0..x.len()) {
        y[0] *= x[i];
    }
}

fn main() {}
