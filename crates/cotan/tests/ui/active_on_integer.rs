use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Active, Active, Active)]
fn f(x: f64, n: i32) -> f64 {
    x.powi(n)
}

fn main() {}
