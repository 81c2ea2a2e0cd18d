use cotan::{autodiff_reverse, checkpoint, Every};

#[autodiff_reverse(d_f, Duplicated, Const)]
fn f(x: &mut [f64], n: usize) {
    for t in checkpoint((0..n).rev(), Every(10)) {
        x[0] = x[0].sin() * x[1] + t as f64;
    }
}

fn main() {}
