use cotan::autodiff_reverse;

fn helper(v: f64) -> f64 {
    v * v
}

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    helper(x) + x
}

fn main() {}
