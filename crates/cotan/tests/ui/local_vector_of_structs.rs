// Structs with a vector field collected into a vector: cotan makes vectors of structs
// whose fields are numbers and arrays; it suggests taking the vector as a parameter.
use cotan::autodiff_reverse;

#[derive(Clone, Default)]
pub struct Layer {
    pub w: Vec<f64>,
    pub scale: f64,
}

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(scales: &[f64]) -> f64 {
    let v: Vec<Layer> = scales.iter().map(|&s| Layer { w: vec![s; 2], scale: s }).collect();
    v.iter().map(|l| l.scale * l.w[0]).sum()
}

fn main() {}
