#[cotan::hvp(f_hvp)]
fn f(x: f64, y: &[f64]) -> f64 {
    x * y[0]
}

fn main() {}
