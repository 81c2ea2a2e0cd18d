//! How a derivative's cost grows with the problem: the ratio (derivative over primal, one
//! run) against the size, for the recursive in-place FFT of ADBench, whose reverse mode
//! passes through calls `log n` deep. A flat ratio means calls cost a bounded factor of
//! the callee's own derivative at any depth.

use std::hint::black_box;

use crate::bench::{rel_err, time_ns, Budget, Rng, TOLERANCE};
use crate::models::adbench as ab;
use crate::report::{format_ns, format_ratio};

/// J(x) = <w, fft_roundtrip(x)>, whose gradient is what reverse mode seeded with w gives.
fn objective(x: &[f64], w: &[f64]) -> f64 {
    let mut y = x.to_vec();
    ab::fft_roundtrip(&mut y);
    y.iter().zip(w).map(|(a, b)| a * b).sum()
}

/// One size: checked against central differences along a random direction, then timed.
fn fft_row(n: usize, budget: Budget, rng: &mut Rng) -> Result<(f64, f64, f64), String> {
    let x = rng.normals(2 * n, 1.0);
    let w = rng.normals(2 * n, 1.0);
    let v = rng.normals(2 * n, 1.0);
    // Reverse and forward mode against differences of J along v.
    let mut y = x.clone();
    let mut g = w.clone();
    ab::fft_roundtrip_rev(&mut y, &mut g);
    let gv: f64 = g.iter().zip(&v).map(|(a, b)| a * b).sum();
    let h = 1e-6;
    let plus: Vec<f64> = x.iter().zip(&v).map(|(a, b)| a + h * b).collect();
    let minus: Vec<f64> = x.iter().zip(&v).map(|(a, b)| a - h * b).collect();
    let fd = (objective(&plus, &w) - objective(&minus, &w)) / (2.0 * h);
    let (mut y, mut t) = (x.clone(), v.clone());
    ab::fft_roundtrip_fwd(&mut y, &mut t);
    let jv: f64 = t.iter().zip(&w).map(|(a, b)| a * b).sum();
    for (what, got) in [("reverse", gv), ("forward", jv)] {
        let err = rel_err(got, fd, fd.abs().max(1.0));
        if err.is_nan() || err > TOLERANCE {
            return Err(format!("fft n = {n}: {what} mode gives {got}, finite differences {fd}"));
        }
    }
    let reset = |s: &mut (Vec<f64>, Vec<f64>)| {
        s.0.copy_from_slice(&x);
        s.1.copy_from_slice(&w);
    };
    let mut state = (x.clone(), w.clone());
    let primal = time_ns(&mut state, &mut |s| ab::fft_roundtrip(black_box(&mut s.0)), &mut { reset }, budget);
    let rev =
        time_ns(&mut state, &mut |s| ab::fft_roundtrip_rev(black_box(&mut s.0), &mut s.1), &mut { reset }, budget);
    let fwd =
        time_ns(&mut state, &mut |s| ab::fft_roundtrip_fwd(black_box(&mut s.0), &mut s.1), &mut { reset }, budget);
    Ok((primal, rev / primal, fwd / primal))
}

/// The FFT scaling table, as markdown.
pub fn fft_table(budget: Budget) -> String {
    let mut rng = Rng::new(0xFF7);
    let mut out =
        String::from("| fft, n complex numbers | primal | cotan reverse | cotan forward |\n|--:|--:|--:|--:|\n");
    for n in [64, 256, 1024, 4096] {
        match fft_row(n, budget, &mut rng) {
            Ok((p, r, f)) => {
                out.push_str(&format!("| {n} | {} | {} | {} |\n", format_ns(p), format_ratio(r), format_ratio(f)))
            }
            Err(e) => out.push_str(&format!("| {n} | FAILED: {e} | | |\n")),
        }
    }
    out
}
