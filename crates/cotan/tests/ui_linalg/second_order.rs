use nalgebra::DVector;

#[cotan::hvp(f_hvp)]
fn f(x: &[f64]) -> f64 {
    let v = DVector::from_column_slice(x);
    v.norm_squared()
}

fn main() {}
