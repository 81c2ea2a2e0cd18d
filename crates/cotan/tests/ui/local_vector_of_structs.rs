// A local copy of a slice of structs: cotan takes slices of structs as parameters only.
use cotan::autodiff_reverse;

#[derive(Clone, Copy, Default)]
pub struct Particle {
    pub x: f64,
    pub v: f64,
}

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(initial: &[Particle]) -> f64 {
    let mut ps = initial.to_vec();
    for p in ps.iter_mut() {
        p.x += p.v;
    }
    ps.iter().map(|p| p.x * p.x).sum()
}

fn main() {}
