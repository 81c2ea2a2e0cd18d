// An attribute on a method declared in a trait: cotan differentiates the impls of the
// trait in the crate, and says so when there is none.
use cotan::autodiff_reverse;

pub trait Model {
    #[autodiff_reverse(d_logp, Const, Active, Active)]
    fn logp(&self, x: f64) -> f64;
}

fn main() {}
