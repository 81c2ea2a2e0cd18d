use cotan::autodiff_reverse;

enum Shape {
    Circle(f64),
    Empty,
}

#[autodiff_reverse(d_area, Duplicated, Active)]
fn area(s: &Shape) -> f64 {
    match s {
        Shape::Circle(r) => r * r,
        Shape::Empty => 0.0,
    }
}

fn main() {}
