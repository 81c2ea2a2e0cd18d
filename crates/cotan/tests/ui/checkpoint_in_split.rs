use cotan::{autodiff_split, checkpoint, Every};

#[autodiff_split(f_forward, f_reverse, Duplicated, Const, Active)]
fn f(x: &mut [f64], n: usize) -> f64 {
    for _t in checkpoint(0..n, Every(10)) {
        x[0] = x[0].sin() * x[1];
    }
    x[0]
}

fn main() {}
