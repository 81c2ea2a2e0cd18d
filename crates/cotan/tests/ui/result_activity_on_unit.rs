use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Active, Duplicated, Active)]
fn f(x: f64, out: &mut f64) {
    *out = x * x;
}

fn main() {}
