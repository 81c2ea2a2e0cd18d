use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(out: &mut [f64; 2], y: f64) {
    *out = [y, 2.0 * y];
}

fn main() {}
