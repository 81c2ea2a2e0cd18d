use cotan::{autodiff_forward, autodiff_reverse};

pub struct Gaussian {
    pub mu: f64,
}

#[autodiff_reverse(d_obj, Const, Duplicated, Active)]
fn obj(m: &Gaussian, x: &[f64]) -> f64 {
    (x[0] - m.mu).powi(4)
}

// Forward over the reverse derivative of a function taking a struct.
#[autodiff_forward(hv_obj, Const, Dual, Dual)]
fn grad(m: &Gaussian, x: &[f64], g: &mut [f64]) {
    d_obj(m, x, g, 1.0);
}

fn main() {}
