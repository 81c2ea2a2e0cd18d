use cotan::autodiff_reverse;

type Real = f64;

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> Real {
    x * x
}

fn main() {}
