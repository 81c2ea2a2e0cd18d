use cotan::autodiff_reverse;
// A part of a slice of rows: cotan takes such slices whole.

#[autodiff_reverse(d_e, Duplicated, Active)]
fn e(m: &[Vec<f64>]) -> f64 {
    let (top, rest) = m.split_at(1);
    top[0][0] * rest[0][0]
}

fn main() {
    let _ = e(&[vec![1.0], vec![2.0]]);
}
