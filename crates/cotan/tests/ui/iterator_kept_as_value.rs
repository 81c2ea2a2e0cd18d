// An iterator adapter kept in a variable: cotan lowers chains where they are consumed,
// and says so at the adapter (the fix: `let s: f64 = x.iter().map(|v| v * v).sum();`).
use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let squares = x.iter().map(|v| v * v);
    squares.sum::<f64>()
}

fn main() {}
