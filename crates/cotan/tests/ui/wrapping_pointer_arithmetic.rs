use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: *const f64) -> f64 {
    unsafe { *x.wrapping_add(1) }
}

fn main() {}
