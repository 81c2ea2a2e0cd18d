use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    cotan_test_dep::sum_of_pairs(x) * x[0]
}

fn main() {}
