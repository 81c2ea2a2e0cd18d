use cotan::autodiff_forward;

#[autodiff_forward(d_f, Duplicated, Dual)]
fn f(x: &[f64]) -> f64 {
    x[0] * x[1]
}

fn main() {}
