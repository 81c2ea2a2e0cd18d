// ndarray's values need cotan's feature `ndarray`, also when only the body makes one.
// (A stand-in for the crate: the ui tests build without it.)
mod ndarray {
    pub fn arr1(x: &[f64]) -> Vec<f64> {
        x.to_vec()
    }
}

use cotan::autodiff_reverse;

#[autodiff_reverse(d_scaled, Active, Active)]
fn scaled(k: f64) -> f64 {
    let a = ndarray::arr1(&[2.0]);
    a[0] * k
}

fn main() {}
