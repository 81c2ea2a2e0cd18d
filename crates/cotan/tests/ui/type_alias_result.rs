use cotan::autodiff_reverse;
// An alias cotan cannot read (another crate's) as the result type.
use std::os::raw::c_double;

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> c_double {
    x * x
}

fn main() {}
