use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let mut s = 0.0;
    let mut i = 0;
    'outer: loop {
        while { if i >= x.len() { break 'outer; } x[i] > 0.0 } {
            s += x[i];
            i += 1;
        }
        break;
    }
    s
}

fn main() {}
