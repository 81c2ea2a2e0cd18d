use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    match x > 0.0 {
        true => x,
        false => -x,
    }
}

fn main() {}
