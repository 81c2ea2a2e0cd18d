use cotan::{autodiff_forward, autodiff_reverse};

#[cotan::differentiable]
pub trait Model {
    fn logp(&self, x: &[f64]) -> f64;
}

#[derive(Clone, cotan::Differentiable)]
pub struct Gaussian {
    pub mu: f64,
}

#[cotan::differentiable]
impl Model for Gaussian {
    fn logp(&self, x: &[f64]) -> f64 {
        -(x[0] - self.mu) * (x[0] - self.mu)
    }
}

#[autodiff_reverse(d_gen, Const, Duplicated, Active)]
fn gen_obj<M: Model>(m: &M, x: &[f64]) -> f64 {
    m.logp(x) * m.logp(x)
}

// Forward over the reverse derivative of a generic function.
#[autodiff_forward(hv_gen, Const, Dual, Dual)]
fn gen_grad(m: &Gaussian, x: &[f64], g: &mut [f64]) {
    d_gen(m, x, g, 1.0);
}

fn main() {}
