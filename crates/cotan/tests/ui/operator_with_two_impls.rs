use cotan::autodiff_reverse;
use std::ops::Mul;
// `V2` multiplies by a number and by a `V2`: two impls of `Mul`, which cotan chooses
// between by the right operand's type, here a value it cannot judge before lowering it.

#[derive(Clone, Copy)]
struct V2 {
    x: f64,
    y: f64,
}

impl Mul<f64> for V2 {
    type Output = V2;
    fn mul(self, s: f64) -> V2 {
        V2 { x: self.x * s, y: self.y * s }
    }
}

impl Mul for V2 {
    type Output = f64;
    fn mul(self, o: V2) -> f64 {
        self.x * o.x + self.y * o.y
    }
}

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let a = V2 { x: x[0], y: x[1] };
    let b = a * x.iter().sum::<f64>();
    b.x + b.y
}

fn main() {
    let _ = f(&[1.0, 2.0]);
    let _ = V2 { x: 1.0, y: 1.0 } * V2 { x: 1.0, y: 1.0 };
}
