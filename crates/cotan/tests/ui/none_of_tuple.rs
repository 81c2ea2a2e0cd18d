use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    let best = if x > 0.0 { None } else { Some((x, 2.0 * x)) };
    best.unwrap().1
}

fn main() {}
