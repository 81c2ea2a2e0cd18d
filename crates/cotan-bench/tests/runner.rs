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

/// The ADBench rows' derivative columns (cotan reverse, ActiveOnly, forward, the hand-written
/// adjoints, and the peers when they are built) agree with finite differences, on the inputs
/// and with the check the runner uses.
#[test]
fn adbench_rows_match_finite_differences() {
    let names = ["gmm_d2_k5", "lstm", "ba", "ode_brusselator"];
    for (k, (name, make)) in cotan_bench::rows::all().into_iter().enumerate() {
        if !names.contains(&name) {
            continue;
        }
        let seed = 0xC07A_u64 + k as u64;
        let row = make(&mut Rng::new(seed));
        let mut rng = Rng::new(seed);
        let v = rng.normals(row.x.len(), 1.0);
        let errors = bench::check_row(&row, &v, &mut rng);
        for c in [Column::Rev, Column::RevOnly, Column::Fwd] {
            assert!(errors.iter().any(|e| e.0 == c), "{name}: {c:?} not checked");
        }
        for (c, e) in errors {
            assert!(e <= bench::TOLERANCE, "{name} {c:?}: relative error {e:e}");
        }
    }
}

/// The hand-written BA adjoint agrees with cotan's reverse mode on every coordinate, a
/// camera with no rotation (Rodrigues' first-order branch) included.
#[test]
fn ba_hand_adjoint_matches_cotan_everywhere() {
    let mut pb = cotan_bench::rows::ba_problem(&mut Rng::new(4), 3, 20, 60);
    pb.x[..3].fill(0.0);
    let (c, p) = (11 * pb.n_cams, 11 * pb.n_cams + 3 * pb.n_points);
    let n = pb.x.len();
    let (mut g1, mut g2) = (vec![0.0; n], vec![0.0; n]);
    let x = &pb.x;
    let v1 = cotan_bench::hand::ba(x, &pb.obs, &pb.feats, pb.n_cams, pb.n_points, &mut g1);
    let (gc, g) = g2.split_at_mut(c);
    let (gp, gw) = g.split_at_mut(p - c);
    let v2 = cotan_bench::models::adbench::ba_rev(&x[..c], gc, &x[c..p], gp, &x[p..], gw, &pb.obs, &pb.feats, 1.0);
    assert!((v1 - v2).abs() <= 1e-12 * v1.abs());
    for i in 0..n {
        assert!((g1[i] - g2[i]).abs() <= 1e-10 * (1.0 + g2[i].abs()), "coordinate {i}: {} vs {}", g1[i], g2[i]);
    }
}
