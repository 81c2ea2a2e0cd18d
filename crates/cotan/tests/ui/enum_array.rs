// An array of enum values: the error says to choose the value with a `match` on the index
// where it is used (enums.rs, `layer`, does that).
#[derive(Clone, Copy)]
enum Act {
    Relu,
    Tanh,
}

fn apply(a: Act, v: f64) -> f64 {
    match a {
        Act::Relu => v.max(0.0),
        Act::Tanh => v.tanh(),
    }
}

#[cotan::autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let acts = [Act::Relu, Act::Tanh];
    apply(acts[0], x[0]) + apply(acts[1], x[1])
}

fn main() {}
