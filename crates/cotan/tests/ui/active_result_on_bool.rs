use cotan::autodiff_reverse;

// An integer result may be `Active` (std's signature, a seed nothing reads); a bool may not.
#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> bool {
    x > 0.0
}

fn main() {}
