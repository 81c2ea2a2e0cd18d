// A function of the standard library cotan has no rule for: an error at the call.
#[cotan::autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    std::convert::identity(x) * x
}

fn main() {}
