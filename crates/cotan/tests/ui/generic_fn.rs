use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Active, Active)]
fn f<T: Into<f64>>(x: T) -> f64 {
    x.into()
}

fn main() {}
