// A function of another crate that does not mark it: an error at the call names it and
// says what to do.
#[cotan::autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    cotan_test_dep::unmarked(x) * x
}

fn main() {}
