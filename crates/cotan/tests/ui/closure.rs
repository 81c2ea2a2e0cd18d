use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    let sq = |v: f64| v * v;
    sq(x)
}

fn main() {}
