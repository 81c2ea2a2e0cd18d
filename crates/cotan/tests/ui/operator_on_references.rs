use cotan::autodiff_reverse;
use std::ops::Add;
// `&a + &b` uses an impl for references, which cotan does not read (not the one for values).

#[derive(Clone, Copy)]
pub struct V2 {
    pub x: f64,
    pub y: f64,
}

impl Add for V2 {
    type Output = V2;
    fn add(self, o: V2) -> V2 {
        V2 { x: self.x + o.x, y: self.y + o.y }
    }
}

impl<'a> Add<&'a V2> for &'a V2 {
    type Output = V2;
    fn add(self, o: &V2) -> V2 {
        V2 { x: self.x + o.x, y: self.y + o.y }
    }
}

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(p: &[V2]) -> f64 {
    let s = &p[0] + &p[1];
    s.x * s.y
}

fn main() {
    let _ = f(&[V2 { x: 1.0, y: 2.0 }, V2 { x: 0.5, y: 0.5 }]);
}
