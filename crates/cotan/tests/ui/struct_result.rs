use cotan::autodiff_reverse;
// A struct of the crate as the result: std's `autodiff_illegal` test does this.
struct Pair {
    a: f64,
    b: f64,
}

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> Pair {
    Pair { a: x, b: x * x }
}

fn main() {
    let p = f(1.0);
    let _ = p.a + p.b;
}
