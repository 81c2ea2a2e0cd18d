// A function generic over a constant, differentiated itself: the error says to write it for
// the length needed and call generic helpers from it (const_generics.rs does that).
#[cotan::autodiff_reverse(d_sum_sq, Duplicated, Active)]
fn sum_sq<const N: usize>(x: &[f64; N]) -> f64 {
    let mut s = 0.0;
    for i in 0..N {
        s += x[i] * x[i];
    }
    s
}

fn main() {}
