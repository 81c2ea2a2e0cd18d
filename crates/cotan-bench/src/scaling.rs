//! How a derivative's cost grows with the problem: the ratio (derivative over primal, one
//! run) against the size. For the recursive in-place FFT of ADBench, whose reverse mode
//! passes through calls `log n` deep, a flat ratio means calls cost a bounded factor of the
//! callee's own derivative at any depth; for GMM (dimension d, components k) and LSTM
//! (layers, sequence length), that what the reverse sweep saves grows as the primal's work.

use std::hint::black_box;

use crate::bench::{check_row, rel_err, time_ns, Budget, Column, Kind, Rng, Row, TOLERANCE};
use crate::models::adbench as ab;
use crate::report::{format_ns, format_ratio};
use crate::rows;

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

/// One size of a table: the row's derivative columns checked against finite differences
/// (as the suite checks its rows), then the primal and the columns `cols` timed. Returns
/// the primal's time and each column's ratio to it.
fn measure(row: &Row, cols: &[Column], budget: Budget, seed: u64) -> Result<(f64, Vec<f64>), String> {
    let mut rng = Rng::new(seed);
    let v = rng.normals(row.x.len(), 1.0);
    for (c, e) in check_row(row, &v, &mut rng) {
        if e.is_nan() || e > TOLERANCE {
            return Err(format!("{}: {} has relative error {e:.1e} against finite differences", row.name, c.id()));
        }
    }
    let x = row.x.clone();
    let mut primal = |_: &mut ()| {
        black_box((row.primal)(black_box(&x)));
    };
    let before = time_ns(&mut (), &mut primal, &mut |_| {}, budget);
    let mut ratios = vec![];
    for want in cols {
        let t = match row.columns.iter().find(|(c, _)| c == want).map(|(_, k)| k) {
            Some(Kind::Grad(f)) => {
                let mut call = |g: &mut Vec<f64>| {
                    black_box(f(black_box(&x), black_box(g)));
                };
                time_ns(&mut vec![0.0; x.len()], &mut call, &mut |g| g.fill(0.0), budget)
            }
            Some(Kind::Jvp(f)) => {
                let mut call = |_: &mut ()| {
                    black_box(f(black_box(&x), black_box(&v)));
                };
                time_ns(&mut (), &mut call, &mut |_| {}, budget)
            }
            _ => return Err(format!("{}: no column {}", row.name, want.id())),
        };
        ratios.push(t);
    }
    let primal_ns = 0.5 * (before + time_ns(&mut (), &mut primal, &mut |_| {}, budget));
    Ok((primal_ns, ratios.into_iter().map(|t| t / primal_ns).collect()))
}

/// GMM's sizes (d, k); n = 1000 points as in the rows.
pub const GMM_SIZES: [(usize, usize); 5] = [(2, 5), (10, 5), (10, 25), (20, 50), (64, 10)];

/// GMM's ratios against (d, k), with the hand-written adjoint for comparison, as markdown.
pub fn gmm_table(budget: Budget) -> String {
    let mut out = String::from(
        "| gmm, d, k (n = 1000) | inputs | primal | cotan reverse | cotan forward | hand adjoint | reverse / hand |\n\
         |--:|--:|--:|--:|--:|--:|--:|\n",
    );
    for (i, (d, k)) in GMM_SIZES.into_iter().enumerate() {
        let (row, _, _) = rows::gmm_cotan(&mut Rng::new(0x6A1 + i as u64), "gmm", d, k, 1000);
        match measure(&row, &[Column::Rev, Column::Fwd, Column::Hand], budget, 0x6A1) {
            Ok((p, r)) => out.push_str(&format!(
                "| {d}, {k} | {} | {} | {} | {} | {} | {} |\n",
                row.x.len(),
                format_ns(p),
                format_ratio(r[0]),
                format_ratio(r[1]),
                format_ratio(r[2]),
                format_ratio(r[0] / r[2])
            )),
            Err(e) => out.push_str(&format!("| {d}, {k} | FAILED: {e} | | | | | |\n")),
        }
    }
    out
}

/// LSTM's sizes (layers, sequence length); 14 channels as in the row.
pub const LSTM_SIZES: [(usize, usize); 6] = [(2, 4), (2, 16), (4, 16), (2, 128), (4, 128), (2, 1024)];

/// LSTM's ratios against (layers, sequence length), as markdown.
pub fn lstm_table(budget: Budget) -> String {
    let mut out = String::from(
        "| lstm, layers, length (14 channels) | inputs | primal | cotan reverse | cotan forward |\n|--:|--:|--:|--:|--:|\n",
    );
    for (i, (l, c)) in LSTM_SIZES.into_iter().enumerate() {
        let (row, _, _) = rows::lstm_cotan(&mut Rng::new(0x157 + i as u64), "lstm", l, c);
        match measure(&row, &[Column::Rev, Column::Fwd], budget, 0x157) {
            Ok((p, r)) => out.push_str(&format!(
                "| {l}, {c} | {} | {} | {} | {} |\n",
                row.x.len(),
                format_ns(p),
                format_ratio(r[0]),
                format_ratio(r[1])
            )),
            Err(e) => out.push_str(&format!("| {l}, {c} | FAILED: {e} | | | |\n")),
        }
    }
    out
}
