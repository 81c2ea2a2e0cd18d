use cotan::autodiff_reverse;

struct Point {
    a: f64,
}

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    (Point { a: x }).a * x
}

fn main() {}
