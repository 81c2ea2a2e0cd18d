use cotan::autodiff_reverse;

struct Params {
    scale: f64,
}

// `p.scale as f64` shows no number type: cotan takes the field for an integer and has
// rustc check it.
#[autodiff_reverse(d_f, Duplicated, Active, Active)]
fn f(p: &Params, x: f64) -> f64 {
    p.scale as f64 * x
}

fn main() {}
