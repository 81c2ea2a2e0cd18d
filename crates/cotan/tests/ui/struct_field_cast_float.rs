use cotan::autodiff_reverse;

struct Params<T> {
    scale: T,
}

// The field's type is a type parameter: `p.scale as f64` shows no number type, so cotan
// takes the field for an integer and has rustc check it.
#[autodiff_reverse(d_f, Duplicated, Active, Active)]
fn f(p: &Params<f64>, x: f64) -> f64 {
    p.scale as f64 * x
}

fn main() {}
