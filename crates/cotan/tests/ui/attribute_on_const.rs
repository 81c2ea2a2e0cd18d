use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Active)]
const K: f64 = 2.0;

fn main() {
    let _ = K;
}
