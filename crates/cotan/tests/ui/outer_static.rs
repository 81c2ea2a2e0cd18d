use cotan::autodiff_reverse;

static SCALE: f64 = 2.0;

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    SCALE * x
}

fn main() {}
