use cotan::autodiff_reverse;
// An alias cotan cannot read (another crate's): it is taken for a struct.
use std::os::raw::c_double;

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: c_double) -> f64 {
    x * x
}

fn main() {}
