use cotan::autodiff_reverse;
use num_traits::Float;

#[autodiff_reverse(d_f, Duplicated, Const, Active)]
fn f<T: Float, U: Float>(x: &[T], y: U) -> T {
    x[0] * T::from(y).unwrap()
}

fn main() {}
