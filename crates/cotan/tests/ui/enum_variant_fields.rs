use cotan::autodiff_reverse;

#[derive(Clone, Copy)]
enum Shape {
    Circle(f64),
    Square { side: f64 },
}

#[autodiff_reverse(d_area, Active, Const, Active)]
fn area(scale: f64, s: Shape) -> f64 {
    match s {
        Shape::Circle(r) => scale * r * r,
        Shape::Square { side } => scale * side * side,
    }
}

fn main() {}
