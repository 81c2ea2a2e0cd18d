use cotan::autodiff_reverse;

#[derive(Clone, Copy)]
pub struct Particle {
    pub x: f64,
    pub v: f64,
}

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(ps: &mut [Particle]) -> f64 {
    if let Some(last) = ps.last_mut() {
        last.v *= 0.5;
    }
    ps.iter().map(|p| p.x * p.v).sum()
}

fn main() {}
