use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: *const f64) -> f64 {
    unsafe { *x * *x }
}

fn main() {}
