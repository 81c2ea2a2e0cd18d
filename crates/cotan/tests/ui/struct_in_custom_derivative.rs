struct Params {
    w: f64,
}

fn rev(p: &Params, dp: &mut Params, dret: f64) -> f64 {
    dp.w += dret;
    p.w
}

#[cotan::custom_derivative(reverse = rev)]
fn f(p: &Params) -> f64 {
    p.w
}

fn main() {}
