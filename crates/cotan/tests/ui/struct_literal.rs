use cotan::autodiff_reverse;

struct Point {
    a: f64,
}

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    let p = Point { a: x };
    p.a * x
}

fn main() {}
