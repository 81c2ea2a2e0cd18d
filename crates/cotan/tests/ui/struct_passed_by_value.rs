#[derive(Clone, Copy)]
struct Cfg {
    k: f64,
}

#[cotan::differentiable]
fn term(c: Cfg, x: f64) -> f64 {
    c.k * x * x
}

#[cotan::autodiff_reverse(d_g, Const, Active, Active)]
fn g(c: Cfg, x: f64) -> f64 {
    term(c, x)
}

fn main() {}
