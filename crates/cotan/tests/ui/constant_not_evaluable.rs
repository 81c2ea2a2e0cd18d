// A constant cotan cannot evaluate (a `const fn` call): an error where it is used.
use cotan::autodiff_reverse;

const fn twice(x: f64) -> f64 {
    x * 2.0
}

const K: f64 = twice(1.0);

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    K * x
}

fn main() {}
