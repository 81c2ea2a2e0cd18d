use cotan::{autodiff_reverse, checkpoint, Every};

#[autodiff_reverse(d_f, Duplicated, Const)]
fn f(x: &mut [f64], n: usize) {
    for _outer in 0..2 {
        for _t in checkpoint(0..n, Every(10)) {
            x[0] = x[0].sin() * x[1];
        }
    }
}

fn main() {}
