// A `Result` is held as an `Option` of its `Ok` value: the error is not kept, so a pattern
// that reads it is refused (with what to write instead).
#[derive(Debug)]
pub enum StatsError {
    Negative(f64),
}

fn checked_sqrt(x: f64) -> Result<f64, StatsError> {
    if x < 0.0 {
        Err(StatsError::Negative(x))
    } else {
        Ok(x.sqrt())
    }
}

#[cotan::autodiff_reverse(d_f, Active, Active)]
fn f(x: f64) -> f64 {
    match checked_sqrt(x) {
        Ok(r) => r,
        Err(StatsError::Negative(v)) => v,
    }
}

fn main() {
    let _ = f(2.0);
}
