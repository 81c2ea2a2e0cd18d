use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    let r = 0..3;
    let mut s = 0.0;
    for _ in r {
        s += x;
    }
    s
}

fn main() {}
