use cotan::autodiff_reverse;

// cotan builds structs of numbers; one with a vector field stays out.
struct Layer {
    w: Vec<f64>,
    b: f64,
}

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    let l = Layer { w: vec![x; 2], b: x };
    l.b * x
}

fn main() {}
