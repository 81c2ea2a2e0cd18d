// A helper taking `&dyn Payoff`: the methods it calls are only known at run time. The
// message says to take the type itself or to make the helper generic over the trait.
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

fn shocked_value(payoff: &dyn Payoff, spot: f64) -> f64 {
    payoff.value(spot * 1.01)
}

#[cotan::autodiff_reverse(d_e, Const, Active, Active)]
pub fn e(call: &CallPayoff, spot: f64) -> f64 {
    shocked_value(call, spot)
}

fn main() {
    let _ = e(&CallPayoff { k: 1.0 }, 1.5);
}
