fn rhs(w: f64, y: &[f64; 2]) -> [f64; 2] {
    [w * y[1], -y[0]]
}

fn euler<F: Fn(&[f64; 2]) -> [f64; 2]>(f: F, y0: &[f64; 2], h: f64) -> [f64; 2] {
    let k1 = f(y0);
    [y0[0] + h * k1[0], y0[1] + h * k1[1]]
}

#[cotan::autodiff_reverse(d_sj, Active, Active, Active)]
fn sj(a: f64, b: f64) -> f64 {
    let s = [a, b];
    let r = euler(|y| rhs(b, y), &s, 0.1);
    r[0] * r[1]
}

fn main() {}
