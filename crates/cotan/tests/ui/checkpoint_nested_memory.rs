use cotan::{autodiff_reverse, checkpoint, Every};

#[autodiff_reverse(d_f, Duplicated, Const)]
fn f(x: &mut [Vec<f64>], n: usize) {
    for _t in checkpoint(0..n, Every(10)) {
        x[0][0] = x[0][1].sin() * x[1][0];
    }
}

fn main() {}
