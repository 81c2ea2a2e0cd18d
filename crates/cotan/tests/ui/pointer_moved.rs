use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Duplicated, Const, Active)]
fn f(x: *const f64, n: usize) -> f64 {
    let mut p = x;
    let mut s = 0.0;
    for _ in 0..n {
        s += unsafe { *p };
        p = unsafe { p.add(1) };
    }
    s
}

fn main() {}
