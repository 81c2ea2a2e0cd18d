use cotan::autodiff_reverse;

// A pointer variable moves within the buffer it starts in; here it would move to another.
#[autodiff_reverse(d_f, Duplicated, Duplicated, Const, Active)]
fn f(x: *const f64, y: *const f64, n: usize) -> f64 {
    let mut p = x;
    let mut s = 0.0;
    for i in 0..n {
        s += unsafe { *p };
        p = unsafe { p.add(1) };
        if i == 0 {
            p = y;
        }
    }
    s
}

fn main() {}
