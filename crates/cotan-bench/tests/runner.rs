//! The runner's checking and reporting code on tiny rows (a smoke test; no thresholds).

use cotan_bench::bench::{self, Budget, Cell, Column, Rng, Row};
use cotan_bench::models::{blog, mooncake as mc};
use cotan_bench::report;
use std::time::Duration;

fn tiny() -> Budget {
    Budget {
        sample: Duration::from_micros(5),
        samples: 3,
        per_cell: Duration::from_millis(2),
        warmup: Duration::from_millis(1),
    }
}

#[test]
fn a_small_row_is_checked_measured_and_reported() {
    let x = Rng::new(1).normals(50, 1.0);
    let row = Row::new("control_flow_50", x, blog::control_flow)
        .grad(Column::Rev, |x, g| blog::control_flow_rev(x, g, 1.0))
        .jvp(Column::Fwd, |x, v| blog::control_flow_fwd(x, v).1)
        .grad(Column::Hand, cotan_bench::hand::control_flow)
        // A wrong gradient (sin' taken as sin) must be caught by the check.
        .grad(Column::Tape, |x, g| {
            for (gi, xi) in g.iter_mut().zip(x) {
                *gi += xi.sin();
            }
            f64::NAN
        })
        .na(Column::NdJvp, "not measured here");
    let r = bench::run_row(&row, tiny(), 7);
    let cell = |c: Column| r.cells.iter().find(|(k, _)| *k == c).map(|(_, v)| v.clone()).unwrap();
    for c in [Column::Rev, Column::Fwd, Column::Hand, Column::Fd] {
        assert!(matches!(cell(c), Cell::Time(t) if t > 0.0), "{c:?}: {:?}", cell(c));
    }
    assert!(matches!(cell(Column::Tape), Cell::Failed(_)));
    assert!(matches!(cell(Column::NdJvp), Cell::NotApplicable(_)));
    let table = report::markdown(&[r]);
    assert!(table.contains("| control_flow_50 | 50 |"), "{table}");
    assert!(table.contains("FAILED") && table.contains("not measured here"), "{table}");
}

#[test]
fn hvp_rows_are_checked_against_differences_of_the_gradient() {
    let mut rng = Rng::new(3);
    let row = cotan_bench::rows::hvp_rosenbrock(&mut rng);
    let v = rng.normals(row.x.len(), 1.0);
    let errors = bench::check_row(&row, &v, &mut rng);
    assert!(errors.iter().any(|e| e.0 == Column::Hvp));
    for (c, e) in errors {
        assert!(e <= bench::TOLERANCE, "{c:?}: relative error {e:e}");
    }
}

#[test]
fn the_idiomatic_and_the_loop_sums_agree() {
    let x = Rng::new(5).normals(100, 1.0);
    assert!((mc::sum(&x) - mc::sum_loop(&x)).abs() < 1e-12);
    let (mut g1, mut g2) = (vec![0.0; 100], vec![0.0; 100]);
    mc::sum_rev(&x, &mut g1, 1.0);
    mc::sum_loop_rev(&x, &mut g2, 1.0);
    assert_eq!(g1, g2);
}
