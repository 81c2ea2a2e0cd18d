use cotan::autodiff_reverse;
// A part of a slice of structs: cotan takes such slices whole.

#[derive(Clone, Copy)]
pub struct P {
    pub x: f64,
}

#[autodiff_reverse(d_e, Duplicated, Active)]
fn e(ps: &[P]) -> f64 {
    let mut s = 0.0;
    for b in &ps[1..] {
        s += b.x * b.x;
    }
    s
}

fn main() {
    let _ = e(&[P { x: 1.0 }]);
}
