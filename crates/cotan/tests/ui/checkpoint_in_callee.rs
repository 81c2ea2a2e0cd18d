use cotan::{autodiff_reverse, checkpoint, Every};

fn integrate(x: &mut [f64], n: usize) {
    for _t in checkpoint(0..n, Every(10)) {
        x[0] = x[0].sin() * x[1];
    }
}

#[autodiff_reverse(d_f, Duplicated, Const, Active)]
fn f(x: &mut [f64], n: usize) -> f64 {
    integrate(x, n);
    x[0]
}

fn main() {}
