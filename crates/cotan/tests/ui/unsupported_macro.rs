use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    println!("x = {}", x);
    x * x
}

fn main() {}
