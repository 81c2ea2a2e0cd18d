fn checked_sqrt(x: f64) -> Result<f64, String> {
    if x >= 0.0 {
        Ok(x.sqrt())
    } else {
        Err("negative".into())
    }
}

#[cotan::autodiff_reverse(d_g, Active, Active)]
fn g(x: f64) -> f64 {
    checked_sqrt(x).unwrap()
}

fn main() {}
