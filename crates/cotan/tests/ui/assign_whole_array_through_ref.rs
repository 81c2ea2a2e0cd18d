use cotan::autodiff_reverse;

// Through `&mut [f64; 2]` a whole array may be assigned; through `&mut Vec<f64>` not.
#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(out: &mut Vec<f64>, y: f64) {
    *out = vec![y, 2.0 * y];
}

fn main() {}
