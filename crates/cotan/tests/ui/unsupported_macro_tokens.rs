use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Active, Const, Active)]
fn f(x: f64, n: i32) -> f64 {
    let small = matches!(n, 0..=3 if n > 1);
    if small { x } else { x * x }
}

fn main() {}
