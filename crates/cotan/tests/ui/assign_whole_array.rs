use cotan::autodiff_reverse;

// A whole array may be assigned; a whole vector (whose length may change) may not.
#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    let mut a = vec![x; 2];
    let s = a[0];
    a = vec![s, 2.0 * x];
    a[0] * a[1]
}

fn main() {}
