// A generic helper lowered at a call whose argument for `K` is no struct of the crate:
// cotan cannot tell which `K::scale` to call.
trait Kind {
    fn scale() -> f64;
    fn f(&self, x: f64) -> f64;
}

impl Kind for f64 {
    fn scale() -> f64 {
        2.0
    }
    fn f(&self, x: f64) -> f64 {
        self * x
    }
}

fn helper<K: Kind>(m: &K, x: f64) -> f64 {
    m.f(x) * K::scale()
}

#[cotan::autodiff_reverse(d_use_number, Const, Active, Active)]
fn use_number(k: f64, x: f64) -> f64 {
    helper(&k, x)
}

fn main() {}
