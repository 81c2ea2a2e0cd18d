//! Validation mode on the GPU (cotan's features `gpu` and `validate`): kernels that break
//! each rule of parallel loops return `GpuError::Validation` with the CPU's message (the
//! kernel, the loop's source line, the array and element, the two iterations), in the
//! primal and in the derivatives; kernels that keep the rules report nothing and compute
//! what they compute without validation. (A loop the GPU runs in order, in one invocation,
//! races nowhere and is not checked.) Without any GPU adapter the tests print a notice.

#![allow(clippy::all, clippy::pedantic, dead_code, unused_mut, unused_variables)]

use cotan::gpu::{Buffer, Device, GpuError};
use cotan::{autodiff_forward, autodiff_reverse};

fn device() -> Option<Device> {
    match Device::new() {
        Ok(d) => Some(d),
        Err(GpuError::NoAdapter) => {
            println!("gpu_kernel_validation: skipped, no GPU adapter (install mesa-vulkan-drivers for lavapipe)");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

fn values(n: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7 % 11) as f32) * 0.1 - 0.4).collect()
}

/// The line of the first `cotan::par(` after `fn <kernel>(` in this file.
fn loop_line(kernel: &str) -> usize {
    let src = include_str!("gpu_kernel_validation.rs");
    let start = src.lines().position(|l| l.contains(&format!("fn {kernel}("))).expect("the kernel") + 1;
    start + src.lines().skip(start).position(|l| l.contains("cotan::par(")).expect("its loop") + 1
}

fn at(kernel: &str, cpu_name: &str) -> String {
    format!("cotan validation: kernel `{kernel}`, parallel loop at {}:{}:", file!(), loop_line(cpu_name))
}

fn assert_reports<T: std::fmt::Debug>(r: Result<T, GpuError>, parts: &[&str]) {
    match r {
        Err(GpuError::Validation(m)) => {
            for p in parts {
                assert!(m.contains(p), "`{p}` not in: {m}");
            }
        }
        other => panic!("expected a validation error with {parts:?}, got {other:?}"),
    }
}

// ---- an element one iteration writes, read by another ----

#[cotan::kernel(gpu)]
#[autodiff_reverse(shifted_rev, Duplicated, Duplicated, Duplicated, Active)]
#[autodiff_forward(shifted_fwd, Dual, Dual, Dual, Dual)]
fn shifted(x: &[f32], y: &mut [f32], z: &mut [f32]) -> f32 {
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
    let Some(dev) = device() else { return };
    let n = 64;
    let x = Buffer::from_slice(&dev, &values(n)).unwrap();
    let z = || Buffer::<f32>::zeros(&dev, n).unwrap();
    let parts = [
        "`y[",
        "]` is written by iteration",
        " and read by iteration",
        "the iterations of a parallel loop run at once",
    ];
    let mut p = vec![at("shifted", "shifted")];
    p.extend(parts.iter().map(|s| s.to_string()));
    let p: Vec<&str> = p.iter().map(|s| s.as_str()).collect();
    assert_reports(shifted_gpu(&dev, &x, &mut z(), &mut z()), &p);
    // The derivatives' loops, named after the derivative, at the kernel's line.
    let mut p = vec![at("shifted_fwd", "shifted")];
    p.extend(parts.iter().map(|s| s.to_string()));
    let p: Vec<&str> = p.iter().map(|s| s.as_str()).collect();
    assert_reports(shifted_fwd_gpu(&dev, &x, &z(), &mut z(), &mut z(), &mut z(), &mut z()), &p);
    let r = shifted_rev_gpu(&dev, &x, &mut z(), &mut z(), &mut z(), &mut z(), &mut z(), 1.0);
    assert_reports(r, &[&at("shifted_rev", "shifted"), "]` is written by iteration"]);
}

// ---- an element one iteration writes, accumulated into by another ----

#[cotan::kernel(gpu)]
fn write_and_add(x: &[f32], y: &mut [f32]) {
    let n = x.len();
    for i in cotan::par(0..n) {
        y[i] = x[i];
        y[(i + 3) % n] += 1.0;
    }
}

#[test]
fn write_and_accumulation_by_different_iterations() {
    let Some(dev) = device() else { return };
    let x = Buffer::from_slice(&dev, &values(32)).unwrap();
    let mut y = Buffer::<f32>::zeros(&dev, 32).unwrap();
    assert_reports(
        write_and_add_gpu(&dev, &x, &mut y),
        &[
            &at("write_and_add", "write_and_add"),
            "`y[",
            "]` is written by iteration",
            " and accumulated into (`+=`/`-=`) by iteration",
        ],
    );
}

// ---- an element accumulated into by iterations, read by another ----

#[cotan::kernel(gpu)]
fn running_total(x: &[f32], total: &mut [f32], y: &mut [f32]) {
    let n = x.len();
    for i in cotan::par(0..n) {
        total[0] += x[i];
        y[i] = total[0];
    }
}

#[test]
fn a_loop_that_runs_in_order_on_the_gpu_is_not_reported() {
    // `y[i] = total[0]` reads the sum the accumulation made (the IR forwards it), so the
    // loop is no dispatch on the GPU: it runs in order, in one invocation, and races
    // nowhere (the CPU's primal, which runs it on threads, reports it: see
    // tests/kernel_validation.rs). Its values are the sequential ones.
    let Some(dev) = device() else { return };
    let xv = values(32);
    let x = Buffer::from_slice(&dev, &xv).unwrap();
    let (mut total, mut y) = (Buffer::<f32>::zeros(&dev, 1).unwrap(), Buffer::<f32>::zeros(&dev, 32).unwrap());
    running_total_gpu(&dev, &x, &mut total, &mut y).unwrap();
    let mut t = 0.0f32;
    let expected: Vec<f32> = xv
        .iter()
        .map(|v| {
            t += v;
            t
        })
        .collect();
    let got = y.read(&dev).unwrap();
    for (a, b) in got.iter().zip(&expected) {
        assert!((a - b).abs() <= 1e-5, "{got:?} against {expected:?}");
    }
}

// ---- accumulations into elements that other iterations write ----

#[cotan::kernel(gpu)]
fn fine(x: &[f32], y: &mut [f32]) -> f32 {
    let n = x.len();
    // Neighbours read, own element written (twice), and an accumulation (of zero, still a
    // race) into an element another iteration writes.
    for i in cotan::par(0..n) {
        let l = if i > 0 { x[i - 1] } else { x[n - 1] };
        y[i] = (l * x[i]).sin();
        y[i] *= 2.0;
        y[(i * 5) % n] += 0.0 * x[i];
    }
    let mut s = 0.0;
    for i in 0..n {
        s += y[i] * y[i];
    }
    s
}

#[test]
fn accumulation_into_an_element_another_iteration_writes() {
    let Some(dev) = device() else { return };
    let n = 50;
    let xv = values(n);
    let x = Buffer::from_slice(&dev, &xv).unwrap();
    let z = || Buffer::<f32>::zeros(&dev, n).unwrap();
    let r = fine_gpu(&dev, &x, &mut z());
    assert_reports(r, &[&at("fine", "fine"), "is written by iteration", "accumulated into"]);
}

// ---- a kernel that keeps the rules: nothing reported, the values as on the CPU ----

#[cotan::kernel(gpu)]
#[autodiff_reverse(clean_rev, Duplicated, Duplicated, Active)]
#[autodiff_forward(clean_fwd, Dual, Dual, Dual)]
fn clean(x: &[f32], y: &mut [f32]) -> f32 {
    let n = x.len();
    for i in cotan::par(0..n) {
        let l = if i > 0 { x[i - 1] } else { x[n - 1] };
        y[i] = (l * x[i]).sin();
        y[i] *= 2.0;
    }
    let mut s = 0.0;
    for i in 0..n {
        s += y[i] * y[i];
    }
    s
}

#[test]
fn a_kernel_that_keeps_the_rules_reports_nothing_in_each_mode() {
    let Some(dev) = device() else { return };
    let n = 50;
    let xv = values(n);
    let x = Buffer::from_slice(&dev, &xv).unwrap();
    let z = || Buffer::<f32>::zeros(&dev, n).unwrap();
    let v = clean_gpu(&dev, &x, &mut z()).unwrap();
    let v_cpu = clean(&xv, &mut vec![0.0; n]);
    assert!((v - v_cpu).abs() <= 1e-4 * (1.0 + v_cpu.abs()), "{v} against {v_cpu}");
    clean_fwd_gpu(&dev, &x, &x, &mut z(), &mut z()).unwrap();
    let mut g = z();
    clean_rev_gpu(&dev, &x, &mut g, &mut z(), &mut z(), 1.0).unwrap();
    let mut g_cpu = vec![0.0; n];
    clean_rev(&xv, &mut g_cpu, &mut vec![0.0; n], &mut vec![0.0; n], 1.0);
    for (a, b) in g.read(&dev).unwrap().iter().zip(&g_cpu) {
        assert!((a - b).abs() <= 1e-3 * (1.0 + b.abs()), "{a} against {b}");
    }
}
