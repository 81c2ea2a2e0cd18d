use cotan::{custom_derivative, hessian};

fn cube_rev(x: f64, dret: f64) -> (f64, f64) {
    let y = f64::from_bits(x.to_bits());
    (y * y * y, 3.0 * y * y * dret)
}

#[custom_derivative(reverse = cube_rev)]
fn cube(x: f64) -> f64 {
    x * x * x
}

#[hessian(h)]
fn f(x: &[f64]) -> f64 {
    cube(x[0]) + x[1]
}

fn main() {}
