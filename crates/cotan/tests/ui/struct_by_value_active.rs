use cotan::autodiff_reverse;

struct Params {
    w: f64,
}

#[autodiff_reverse(d_f, Active, Active, Active)]
fn f(p: Params, x: f64) -> f64 {
    p.w * x
}

fn main() {}
