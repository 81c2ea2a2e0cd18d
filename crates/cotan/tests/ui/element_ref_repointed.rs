use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let mut v = x.to_vec();
    let mut r = &mut v[0];
    *r *= 2.0;
    r = &mut v[1];
    *r *= 3.0;
    v.iter().sum()
}

fn main() {}
