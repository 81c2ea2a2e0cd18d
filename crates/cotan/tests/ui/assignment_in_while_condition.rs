use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let mut s = 0.0;
    let mut i = 0;
    while {
        i += 1;
        i < x.len()
    } {
        s += x[i];
    }
    s
}

fn main() {}
