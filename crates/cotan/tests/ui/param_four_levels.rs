use cotan::autodiff_reverse;

// Two and three levels of arrays and vectors are supported; four are not.
#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[Vec<Vec<Vec<f64>>>]) -> f64 {
    x[0][0][0][0]
}

fn main() {}
