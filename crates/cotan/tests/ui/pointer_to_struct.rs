use cotan::autodiff_reverse;

pub struct Wishart {
    pub gamma: f64,
}

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(w: *const Wishart) -> f64 {
    unsafe { (*w).gamma * 2.0 }
}

fn main() {}
