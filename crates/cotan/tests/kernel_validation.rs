//! Validation mode (cotan's feature `validate`): kernels whose parallel loops break the
//! rules at run time panic with a message naming the array, the kernel and the loop's line;
//! kernels that keep them run as without the feature. Run with
//! `cargo test -p cotan --features validate --test kernel_validation`.

#![allow(clippy::all, clippy::pedantic, dead_code, unused_mut, unused_variables)]

use std::panic::{catch_unwind, AssertUnwindSafe};

use cotan::{autodiff_forward, autodiff_reverse};

/// The message of the panic `f` ends in (`None` if it returns).
fn panic_message(f: impl FnOnce()) -> Option<String> {
    let err = catch_unwind(AssertUnwindSafe(f)).err()?;
    Some(match err.downcast::<String>() {
        Ok(s) => *s,
        Err(e) => e.downcast::<&str>().map(|s| s.to_string()).unwrap_or_default(),
    })
}

fn assert_reports(f: impl FnOnce(), parts: &[&str]) {
    let m = panic_message(f).expect("a violation is reported");
    assert!(m.starts_with("cotan validation: "), "{m}");
    for p in parts {
        assert!(m.contains(p), "`{p}` not in: {m}");
    }
}

fn values(n: usize) -> Vec<f64> {
    (0..n).map(|k| ((k * 37 % 11) as f64 - 5.0) / 7.0).collect()
}

/// The line of the `for` of the kernel's parallel loop, found in this file's source:
/// the first line after `fn <kernel>(` with `cotan::par(`.
fn loop_line(kernel: &str) -> u32 {
    let src = include_str!("kernel_validation.rs");
    let start = src.lines().position(|l| l.contains(&format!("fn {kernel}("))).expect("the kernel") + 1;
    let k = src.lines().skip(start).position(|l| l.contains("cotan::par(")).expect("its loop");
    (start + k + 1) as u32
}

fn at(kernel: &str) -> String {
    format!("kernel `{kernel}`, parallel loop at {}:{}:", file!(), loop_line(kernel))
}

// ---- an element one iteration writes, read by another ----

#[cotan::kernel]
#[autodiff_reverse(shifted_rev, Duplicated, Duplicated, Duplicated, Active)]
#[autodiff_forward(shifted_fwd, Dual, Dual, Dual, Dual)]
fn shifted(x: &[f64], y: &mut [f64], z: &mut [f64]) -> f64 {
    let n = x.len();
    for i in cotan::par(0..n) {
        y[i] = x[i] * x[i];
        z[i] = y[(i + 1) % n] + x[i];
    }
    let mut s = 0.0;
    for i in 0..n {
        s += z[i];
    }
    s
}

#[test]
fn read_of_another_iterations_write() {
    let x = values(64);
    let (mut y, mut z) = (vec![0.0; 64], vec![0.0; 64]);
    assert_reports(
        || {
            shifted(&x, &mut y, &mut z);
        },
        &[&at("shifted"), "`y[", "]` is written by iteration", " and read by iteration"],
    );
}

#[test]
fn read_of_another_iterations_write_in_the_reverse_derivative() {
    let x = values(64);
    let (mut dx, mut y, mut dy, mut z, mut dz) =
        (vec![0.0; 64], vec![0.0; 64], vec![0.0; 64], vec![0.0; 64], vec![0.0; 64]);
    assert_reports(
        || {
            shifted_rev(&x, &mut dx, &mut y, &mut dy, &mut z, &mut dz, 1.0);
        },
        &[
            "kernel `shifted_rev`",
            &format!("parallel loop at {}:{}:", file!(), loop_line("shifted")),
            "`y[",
            "written by iteration",
        ],
    );
}

#[test]
fn read_of_another_iterations_write_in_the_forward_derivative() {
    let (x, u) = (values(64), vec![1.0; 64]);
    let (mut y, mut dy, mut z, mut dz) = (vec![0.0; 64], vec![0.0; 64], vec![0.0; 64], vec![0.0; 64]);
    assert_reports(
        || {
            shifted_fwd(&x, &u, &mut y, &mut dy, &mut z, &mut dz);
        },
        &[
            "kernel `shifted_fwd`",
            &format!("parallel loop at {}:{}:", file!(), loop_line("shifted")),
            "]` is written by iteration",
        ],
    );
}

// The derivative cotan makes for a call of the kernel from another differentiated
// function runs the kernel's loops in order: no race, nothing reported.
#[autodiff_forward(calls_shifted_fwd, Dual, Dual, Dual, Dual)]
fn calls_shifted(x: &[f64], y: &mut [f64], z: &mut [f64]) -> f64 {
    2.0 * shifted(x, y, z)
}

#[test]
fn a_callers_derivative_runs_the_loop_in_order() {
    let (x, u) = (values(64), vec![1.0; 64]);
    let (mut y, mut dy, mut z, mut dz) = (vec![0.0; 64], vec![0.0; 64], vec![0.0; 64], vec![0.0; 64]);
    let (v, dv) = calls_shifted_fwd(&x, &u, &mut y, &mut dy, &mut z, &mut dz);
    // In order, iteration i reads y[i + 1] before iteration i + 1 writes it (y starts at 0),
    // but for the last, which reads y[0].
    let expect: f64 = (0..64).map(|i| x[i] + if i == 63 { x[0] * x[0] } else { 0.0 }).sum();
    let dexpect: f64 = (0..64).map(|i| 1.0 + if i == 63 { 2.0 * x[0] } else { 0.0 }).sum();
    assert!((v - 2.0 * expect).abs() < 1e-12, "{v} against {}", 2.0 * expect);
    assert!((dv - 2.0 * dexpect).abs() < 1e-12, "{dv} against {}", 2.0 * dexpect);
}

// One iteration only: no other iteration to race with.
#[test]
fn one_iteration_reads_its_own_write() {
    let x = values(1);
    let (mut y, mut z) = (vec![0.0; 1], vec![0.0; 1]);
    let s = shifted(&x, &mut y, &mut z);
    assert_eq!(z[0], x[0] * x[0] + x[0]);
    assert_eq!(s, z[0]);
}

// ---- an element one iteration writes, accumulated into by another ----

#[cotan::kernel]
fn write_and_add(x: &[f64], y: &mut [f64]) {
    let n = x.len();
    for i in cotan::par(0..n) {
        y[i] = x[i];
        y[(i + 3) % n] += 1.0;
    }
}

#[test]
fn write_and_accumulation_by_different_iterations() {
    let x = values(32);
    let mut y = vec![0.0; 32];
    assert_reports(
        || write_and_add(&x, &mut y),
        &[&at("write_and_add"), "`y[", "]` is written by iteration", " and accumulated into (`+=`/`-=`) by iteration"],
    );
}

// ---- an element accumulated into by iterations, read by another ----

#[cotan::kernel]
fn running_total(x: &[f64], total: &mut [f64], y: &mut [f64]) {
    let n = x.len();
    for i in cotan::par(0..n) {
        total[0] += x[i];
        y[i] = total[0];
    }
}

#[test]
fn read_of_an_element_others_accumulate_into() {
    let x = values(32);
    let (mut total, mut y) = (vec![0.0; 1], vec![0.0; 32]);
    assert_reports(
        || running_total(&x, &mut total, &mut y),
        &[&at("running_total"), "`total[0]` is read by iteration", "and accumulated into (`+=`/`-=`) by iteration"],
    );
}

// ---- kernels that keep the rules: nothing reported, the values as without validation ----

#[cotan::kernel]
#[autodiff_reverse(fine_rev, Duplicated, Duplicated, Active)]
fn fine(x: &[f64], y: &mut [f64]) -> f64 {
    let n = x.len();
    // Neighbours read, own element written; accumulations by many iterations.
    for i in cotan::par(0..n) {
        let l = if i > 0 { x[i - 1] } else { x[n - 1] };
        y[i] = (l * x[i]).sin();
        y[i] *= 2.0;
    }
    let mut acc = vec![0.0; 4];
    for i in cotan::par(0..n) {
        acc[i % 4] += y[i] * y[(i + 1) % n];
        acc[(i + 1) % 4] -= 0.5 * x[i];
    }
    acc[0] + 2.0 * acc[1] + 3.0 * acc[2] + 4.0 * acc[3]
}

#[autodiff_reverse(fine_seq_rev, Duplicated, Duplicated, Active)]
fn fine_seq(x: &[f64], y: &mut [f64]) -> f64 {
    let n = x.len();
    for i in 0..n {
        let l = if i > 0 { x[i - 1] } else { x[n - 1] };
        y[i] = (l * x[i]).sin();
        y[i] *= 2.0;
    }
    let mut acc = vec![0.0; 4];
    for i in 0..n {
        acc[i % 4] += y[i] * y[(i + 1) % n];
        acc[(i + 1) % 4] -= 0.5 * x[i];
    }
    acc[0] + 2.0 * acc[1] + 3.0 * acc[2] + 4.0 * acc[3]
}

#[test]
fn kernels_that_keep_the_rules_report_nothing() {
    for n in [1, 2, 7, 200] {
        let x = values(n);
        let (mut y, mut ys) = (vec![0.0; n], vec![0.0; n]);
        let (v, vs) = (fine(&x, &mut y), fine_seq(&x, &mut ys));
        assert!((v - vs).abs() <= 1e-12 * (1.0 + vs.abs()), "n={n}: {v} against {vs}");
        let (mut dx, mut dxs) = (vec![0.0; n], vec![0.0; n]);
        let (mut dy, mut dys) = (vec![0.0; n], vec![0.0; n]);
        fine_rev(&x, &mut dx, &mut y, &mut dy, 1.0);
        fine_seq_rev(&x, &mut dxs, &mut ys, &mut dys, 1.0);
        for k in 0..n {
            assert!(
                (dx[k] - dxs[k]).abs() <= 1e-12 * (1.0 + dxs[k].abs()),
                "n={n}: dx[{k}] {} against {}",
                dx[k],
                dxs[k]
            );
        }
    }
}

/// Validated loops compute what unvalidated ones do (the kernels' own tests, run with the
/// feature too, check the pool and the derivatives of many more).
#[test]
fn validated_loops_compute_the_same_values() {
    let x = values(4096);
    let mut y = vec![0.0; 4096];
    fine(&x, &mut y);
    for i in 0..4096 {
        let l = if i > 0 { x[i - 1] } else { x[4095] };
        assert_eq!(y[i], 2.0 * (l * x[i]).sin());
    }
}

// ---- the runtime's checks directly: two plain writes of one element by different
// iterations (which the kernel rules keep out of generated loops: plain writes are at the
// loop's own index), and reads by many iterations (fine) ----

const SITE: cotan::rt::LoopSite = cotan::rt::LoopSite { kernel: "by_hand", file: "here.rs", line: 7 };

#[test]
fn two_writes_by_different_iterations() {
    let mut v = vec![0.0f64; 4];
    assert_reports(
        || {
            let v = cotan::rt::CheckedSlice::new(&mut v[..], "v", &SITE);
            cotan::rt::par_for_checked(0..16, |i| v.set(2, i as f64));
        },
        &["kernel `by_hand`, parallel loop at here.rs:7: `v[2]` is written by iteration ", " and by iteration "],
    );
}

#[test]
fn reads_by_many_iterations_and_accumulations_by_many() {
    let mut v = vec![1.0f64; 4];
    let mut acc = vec![0.0f64; 2];
    {
        let v = cotan::rt::CheckedSlice::new(&mut v[..], "v", &SITE);
        let acc = cotan::rt::CheckedSlice::new(&mut acc[..], "acc", &SITE);
        cotan::rt::par_for_checked(0..100, |i| {
            acc.add(i % 2, v[0] + v.get(3));
            acc.sub(1, 1.0);
            let own = v.get(i % 4);
            let _ = own;
        });
    }
    assert_eq!(acc, vec![100.0, 0.0]);
}

#[test]
fn an_iteration_may_touch_its_element_every_way() {
    let mut v = vec![1.0f64; 8];
    {
        let v = cotan::rt::CheckedSlice::new(&mut v[..], "v", &SITE);
        cotan::rt::par_for_checked(0..8, |i| {
            let a = v[i];
            v.set(i, a + 1.0);
            v.add(i, 1.0);
            v.set(i, v.get(i) * 2.0);
        });
    }
    assert_eq!(v, vec![6.0; 8]);
}
