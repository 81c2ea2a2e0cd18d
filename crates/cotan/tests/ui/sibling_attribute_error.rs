use cotan::{autodiff_forward, autodiff_reverse};

// The first attribute generates its siblings' derivatives too; the error in the second is
// still reported at the second, and the others are generated (`main` calls them).
#[autodiff_reverse(d_f, Duplicated, Active)]
#[autodiff_reverse(d_f_only, Duplicated, Activ)]
#[autodiff_forward(f_fwd, Dual, Dual)]
fn f(x: &[f64]) -> f64 {
    x.iter().sum::<f64>()
}

fn main() {
    let x = [1.0, 2.0];
    let mut dx = [0.0; 2];
    let _ = d_f(&x, &mut dx, 1.0);
    let _ = f_fwd(&x, &[1.0, 0.0]);
}
