use cotan::autodiff_reverse;

fn repeat<F: Fn(f64) -> f64>(f: &F, x: f64, n: usize) -> f64 {
    if n == 0 {
        x
    } else {
        repeat(f, f(x), n - 1)
    }
}

#[autodiff_reverse(d_g, Active, Active)]
fn g(a: f64) -> f64 {
    repeat(&|x| x.sin() * a, 1.0, 3)
}

fn main() {}
