// A struct behind a raw pointer is read only: `Duplicated` is refused with the remedy.
use cotan::autodiff_reverse;

pub struct Wishart {
    pub gamma: f64,
}

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(w: *const Wishart) -> f64 {
    unsafe { (*w).gamma * 2.0 }
}

fn main() {}
