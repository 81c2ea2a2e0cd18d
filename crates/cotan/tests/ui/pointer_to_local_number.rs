use cotan::autodiff_reverse;

unsafe fn square_into(x: f64, out: *mut f64) {
    *out = x * x;
}

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    let mut s = 0.0;
    unsafe { square_into(x, &mut s as *mut f64) };
    s
}

fn main() {}
