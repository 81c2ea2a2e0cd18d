use cotan::{autodiff_reverse, checkpoint, Binomial};

#[autodiff_reverse(d_f, Duplicated, Const, Active)]
fn f(x: &mut [f64], n: usize) -> f64 {
    let mut history = Vec::new();
    for _t in checkpoint(0..n, Binomial(4)) {
        x[0] = x[0].sin() * x[1];
        history.push(x[0]);
    }
    history.iter().sum()
}

fn main() {}
