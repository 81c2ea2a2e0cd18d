use cotan::{autodiff_reverse, checkpoint, Every};

#[autodiff_reverse(d_f, Duplicated, Const, Const)]
fn f(x: &mut [f64], n: usize, k: usize) {
    for _t in checkpoint(0..n, Every(k)) {
        x[0] = x[0].sin() * x[1];
    }
}

fn main() {}
