use cotan::autodiff_reverse;

// cotan builds structs of numbers, arrays and vectors of numbers; one holding a vector of
// structs stays out.
struct Layer {
    w: Vec<f64>,
    b: f64,
}

struct Net {
    layers: Vec<Layer>,
    scale: f64,
}

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    let n = Net { layers: vec![], scale: x };
    n.scale * x
}

fn main() {}
