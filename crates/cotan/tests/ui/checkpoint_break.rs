use cotan::{autodiff_reverse, checkpoint, Every};

#[autodiff_reverse(d_f, Duplicated, Const)]
fn f(x: &mut [f64], n: usize) {
    for _t in checkpoint(0..n, Every(10)) {
        x[0] = x[0].sin() * x[1];
        if x[0] > 10.0 {
            break;
        }
    }
}

fn main() {}
