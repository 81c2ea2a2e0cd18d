use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Const, Active, Active)]
fn f(s: String, x: f64) -> f64 {
    x * s.len() as f64
}

fn main() {}
