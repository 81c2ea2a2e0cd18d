use cotan::autodiff_reverse;

struct Params {
    w: f64,
}

#[autodiff_reverse(d_f, Active, Active)]
fn f(p: &Params) -> f64 {
    p.w * p.w
}

fn main() {}
