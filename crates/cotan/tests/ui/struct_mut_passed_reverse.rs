use cotan::autodiff_reverse;

struct State {
    v: [f64; 2],
}

#[cotan::differentiable]
fn push(s: &mut State, x: f64) {
    s.v[0] += x;
}

#[autodiff_reverse(d_f, Duplicated, Active, Active)]
fn f(s: &mut State, x: f64) -> f64 {
    push(s, x);
    s.v[0] * s.v[1]
}

fn main() {}
