use cotan::autodiff_reverse;

macro_rules! double {
    ($e:expr) => {
        2.0 * $e
    };
}

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    let y = double!(x + 1.0);
    y * x
}

fn main() {}
