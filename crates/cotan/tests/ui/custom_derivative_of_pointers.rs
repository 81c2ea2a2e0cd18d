#[cotan::custom_derivative(forward = sum_fwd)]
unsafe fn sum(x: *const f64, n: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        s += *x.add(i);
    }
    s
}

unsafe fn sum_fwd(x: *const f64, dx: *const f64, n: usize) -> (f64, f64) {
    (sum(x, n), sum(dx, n))
}

fn main() {}
