use cotan::autodiff_reverse;

unsafe fn dot(a: *const f64, b: &[f64]) -> f64 {
    let mut s = 0.0;
    for k in 0..b.len() {
        s += *a.add(k) * b[k];
    }
    s
}

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    unsafe { dot(x.as_ptr(), &x[1..]) }
}

fn main() {}
