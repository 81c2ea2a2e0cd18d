use cotan::{autodiff_reverse, checkpoint, Every};

#[autodiff_reverse(d_f, Active, Const, Active)]
fn f(x0: f64, steps: usize) -> f64 {
    if steps == 0 {
        return x0;
    }
    let mut x = x0;
    for _t in checkpoint(0..steps, Every(4)) {
        x = x + 0.1 * x.sin();
    }
    x
}

fn main() {}
