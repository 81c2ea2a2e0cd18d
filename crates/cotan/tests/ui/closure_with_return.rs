use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    let clip = |v: f64| {
        if v > 1.0 {
            return 1.0;
        }
        v
    };
    clip(x) * x
}

fn main() {}
