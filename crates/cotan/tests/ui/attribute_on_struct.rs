use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Active, Active)]
struct Point {
    x: f64,
}

fn main() {
    let _ = Point { x: 1.0 }.x;
}
