use cotan::autodiff_forward;

#[autodiff_forward(d_f, Dual, Dual, Dual)]
fn f(x: f64, n: usize) -> f64 {
    x * n as f64
}

fn main() {}
