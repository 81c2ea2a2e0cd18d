use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    let _label = format!("x = {}", x);
    x * x
}

fn main() {}
