use cotan::{autodiff_forward, autodiff_reverse};

#[autodiff_reverse(d_helper, Active, Active)]
fn helper(v: f64) -> f64 {
    v * v
}

#[autodiff_forward(f_f, Dual, Dual)]
fn f(x: f64) -> f64 {
    helper(x) + x
}

fn main() {}
