use cotan::autodiff_forward;

#[autodiff_forward(d_f, 2, Dual, Dual)]
fn f(x: f64) -> f64 {
    x * x
}

fn main() {}
