// A function generic over a trait that is not marked: its derivatives would come from the
// trait, so cotan says to mark it (or to take the type itself).
pub trait Payoff {
    fn value(&self, s: f64) -> f64;
}

pub struct CallPayoff {
    pub k: f64,
}

impl Payoff for CallPayoff {
    fn value(&self, s: f64) -> f64 {
        (s - self.k).max(0.0)
    }
}

#[cotan::autodiff_reverse(d_e, Const, Active, Active)]
pub fn e<P: Payoff>(call: &P, spot: f64) -> f64 {
    call.value(spot)
}

fn main() {
    let _ = e(&CallPayoff { k: 1.0 }, 1.5);
}
