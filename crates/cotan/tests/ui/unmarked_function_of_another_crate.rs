// A recursive function of another crate that does not mark it: cotan lowers another
// crate's unmarked functions where they are called, which recursion defeats; the error at
// the call names it and says what to do.
#[cotan::autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    cotan_test_dep::power(x, 3) * x
}

fn main() {}
