use cotan::autodiff_reverse;

unsafe fn square_into(x: f64, out: *mut f64) -> f64 {
    *out = x * x;
    *out * 2.0
}

#[autodiff_reverse(d_f, Active, Const, Active)]
fn f(x: f64, out: *mut f64) -> f64 {
    unsafe { square_into(x, out) }
}

fn main() {}
