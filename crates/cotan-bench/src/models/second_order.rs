//! Second-order rows. `hvp_gmm` uses the `gmm` model of [`super::adbench`], whose
//! `#[cotan::hvp(gmm_hvp)]` is there.

/// `hvp_rosenbrock`: the n-dimensional Rosenbrock function.
#[cfg_attr(feature = "ad", cotan::hvp(rosenbrock_hvp))]
#[cfg_attr(feature = "ad", cotan::autodiff_reverse(rosenbrock_rev, Duplicated, Active))]
pub fn rosenbrock(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        s += 100.0 * (x[i + 1] - x[i] * x[i]).powi(2) + (1.0 - x[i]).powi(2);
    }
    s
}
