use cotan::autodiff_reverse;

fn first_root<F: Fn(f64) -> f64>(f: F, mut lo: f64, mut hi: f64) -> f64 {
    for _ in 0..30 {
        let mid = 0.5 * (lo + hi);
        if f(mid).abs() < 1e-12 {
            return mid;
        }
        if f(lo) * f(mid) <= 0.0 {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    0.5 * (lo + hi)
}

#[autodiff_reverse(d_root, Active, Active)]
fn root(a: f64) -> f64 {
    first_root(|x| x * x - a, 0.0, 10.0)
}

fn main() {}
