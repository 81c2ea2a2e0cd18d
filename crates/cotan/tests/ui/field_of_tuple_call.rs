use cotan::{autodiff_forward, autodiff_reverse};

#[autodiff_reverse(d_f, Duplicated, Active, Active)]
fn f(x: &[f64], s: f64) -> f64 {
    x[0] * s * s
}

// Forward over reverse, reading one result of the reverse derivative by `.1`.
#[autodiff_forward(h_g, Dual, Dual, Dual, Dual)]
fn g(x: &[f64], s: f64, gx: &mut [f64]) -> f64 {
    d_f(x, gx, s, 1.0).1
}

fn main() {}
