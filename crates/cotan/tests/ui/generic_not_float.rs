use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f<T: Copy + Into<f64>>(x: &[T]) -> f64 {
    x[0].into()
}

fn main() {}
