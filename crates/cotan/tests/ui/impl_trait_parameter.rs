pub trait Distribution {
    fn log_pdf(&self, x: f64) -> f64;
}

pub struct Normal {
    pub mu: f64,
}

impl Distribution for Normal {
    fn log_pdf(&self, x: f64) -> f64 {
        -(x - self.mu) * (x - self.mu)
    }
}

fn total(d: &impl Distribution, xs: &[f64]) -> f64 {
    xs.iter().map(|x| d.log_pdf(*x)).sum()
}

#[cotan::autodiff_reverse(d_f, Duplicated, Active)]
fn f(xs: &[f64]) -> f64 {
    let n = Normal { mu: 0.5 };
    total(&n, xs)
}

fn main() {}
