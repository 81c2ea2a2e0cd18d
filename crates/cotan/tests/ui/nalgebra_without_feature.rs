// nalgebra's types need cotan's feature `nalgebra`. (A stand-in for the crate: the ui
// tests build without it.)
mod nalgebra {
    pub struct DVector<T>(pub Vec<T>);
}

use cotan::autodiff_reverse;
use nalgebra::DVector;

#[autodiff_reverse(d_first, Duplicated, Active)]
fn first(x: &DVector<f64>) -> f64 {
    x.0[0] * 2.0
}

fn main() {}
