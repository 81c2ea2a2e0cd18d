use cotan::{autodiff_reverse, checkpoint, Every};

#[autodiff_reverse(d_f, Duplicated, Const)]
unsafe fn f(x: *mut f64, n: usize) {
    for _t in checkpoint(0..n, Every(10)) {
        *x.add(1) = (*x).sin() * *x.add(1);
    }
}

fn main() {}
