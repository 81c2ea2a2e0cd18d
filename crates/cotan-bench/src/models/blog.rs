//! Rows of the autodiff blog comparison.

/// `sin_cos_sq`: Σ (sin(xᵢ) + cos(xᵢ²)).
#[cfg_attr(feature = "ad", cotan::autodiff_reverse(sin_cos_sq_rev, Duplicated, Active))]
#[cfg_attr(feature = "ad", cotan::autodiff_reverse(sin_cos_sq_rev_only, Duplicated, ActiveOnly))]
#[cfg_attr(feature = "ad", cotan::autodiff_forward(sin_cos_sq_fwd, Dual, Dual))]
pub fn sin_cos_sq(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i].sin() + (x[i] * x[i]).cos();
    }
    s
}

/// `control_flow`: Σ over i of (sin(xᵢ) if xᵢ > 0 else cos(xᵢ)).
#[cfg_attr(feature = "ad", cotan::autodiff_reverse(control_flow_rev, Duplicated, Active))]
#[cfg_attr(feature = "ad", cotan::autodiff_reverse(control_flow_rev_only, Duplicated, ActiveOnly))]
#[cfg_attr(feature = "ad", cotan::autodiff_forward(control_flow_fwd, Dual, Dual))]
pub fn control_flow(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        if x[i] > 0.0 {
            s += x[i].sin();
        } else {
            s += x[i].cos();
        }
    }
    s
}
