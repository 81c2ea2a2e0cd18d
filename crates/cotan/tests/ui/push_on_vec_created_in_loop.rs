use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        let mut v = Vec::new();
        v.push(x[i] * 2.0);
        s += v[0];
    }
    s
}

fn main() {}
