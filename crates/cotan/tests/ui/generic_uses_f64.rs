use cotan::autodiff_reverse;
use num_traits::Float;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f<T: Float>(x: &[T]) -> T {
    let scale: f64 = 2.0;
    x[0] * T::from(scale).unwrap()
}

fn main() {}
