use cotan::autodiff_reverse;

#[cotan::differentiable]
fn g(p: [f64; 2]) -> f64 {
    p[0] * p[1]
}

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    g([x, 2.0 * x])
}

fn main() {}
