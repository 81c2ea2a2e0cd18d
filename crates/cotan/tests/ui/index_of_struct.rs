use cotan::autodiff_reverse;
use std::ops::Index;
// A struct's own `impl Index`: cotan indexes containers only.

#[derive(Clone, Copy)]
pub struct V3 {
    pub x: f64,
    pub y: f64,
    pub z: f64,
}

impl Index<usize> for V3 {
    type Output = f64;
    fn index(&self, i: usize) -> &f64 {
        match i {
            0 => &self.x,
            1 => &self.y,
            _ => &self.z,
        }
    }
}

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(v: &V3) -> f64 {
    v[1] * v[1]
}

fn main() {
    let _ = f(&V3 { x: 1.0, y: 2.0, z: 3.0 });
}
