//! `#[cotan::kernel(gpu)]` on the GPU (cotan's feature `gpu`; CI runs it on Mesa's lavapipe):
//! the shapes of Quadrants' adstack tests as `f32` kernels (0 to 1000 iterations), each run
//! as WGSL through wgpu and checked against the same kernel on the CPU (rayon) and its
//! sequential twin (the same function without the attribute): primal values and written
//! arrays to 1e-4 (relative to 1 + |value|: the GPU's `sin`, `exp`, ... are not Rust's to
//! the last bit, and atomic accumulations add in another order); the GPU's forward-mode
//! tangent against the CPU's to 1e-3 (ten times the primal's tolerance, which is 1e-3 for
//! asin and acos near ±1) and, up to 64 elements, against central finite differences of the
//! sequential twin (step 1e-3, tolerance 2e-2: f32); the dot-product test against the CPU's
//! reverse-mode gradient (1e-3); the GPU's reverse-mode gradient against the CPU's (1e-3),
//! against its own forward mode (dot-product test) and finite differences; each with the
//! device's float atomics and with the compare-and-swap loop. Then: f64, index errors and
//! asserts, lavapipe's loop limit reported, the AD stack's exact size and its limit, a
//! mass-spring chain over 200 steps with its tangent and gradient. Without any GPU adapter
//! the tests print a notice and pass.

#![allow(clippy::all, clippy::pedantic, dead_code, unused_mut, unused_variables)]

use cotan::gpu::{Buffer, Device, GpuError};
use cotan::{autodiff_forward, autodiff_reverse};

fn close(a: f32, b: f32, tol: f32) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
}

fn assert_close(what: &str, a: &[f32], b: &[f32], tol: f32) {
    assert_eq!(a.len(), b.len(), "{what}");
    for (k, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(close(*x, *y, tol), "{what}[{k}]: {x} against {y}");
    }
}

/// Deterministic values in [-1, 1].
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0) as f32
        })
        .collect()
}

/// The device, or `None` with a printed notice when there is no GPU adapter at all.
fn device() -> Option<Device> {
    match Device::new() {
        Ok(d) => Some(d),
        Err(GpuError::NoAdapter) => {
            println!("gpu_kernels: skipped, no GPU adapter (install mesa-vulkan-drivers for lavapipe)");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

type Primal = fn(&[f32], &mut [f32]) -> f32;
type Forward = fn(&[f32], &[f32], &mut [f32], &mut [f32]) -> (f32, f32);
type Reverse = fn(&[f32], &mut [f32], &mut [f32], &mut [f32], f32) -> f32;
type GpuPrimal = fn(&Device, &Buffer<f32>, &mut Buffer<f32>) -> Result<f32, GpuError>;
type GpuForward =
    fn(&Device, &Buffer<f32>, &Buffer<f32>, &mut Buffer<f32>, &mut Buffer<f32>) -> Result<(f32, f32), GpuError>;
type GpuReverse =
    fn(&Device, &Buffer<f32>, &mut Buffer<f32>, &mut Buffer<f32>, &mut Buffer<f32>, f32) -> Result<f32, GpuError>;

/// A kernel (CPU primal, forward and reverse; GPU primal and forward) and its sequential twin.
struct Shape {
    name: &'static str,
    cpu: (Primal, Forward, Reverse),
    gpu: (GpuPrimal, GpuForward, GpuReverse),
    plain: (Primal, Forward),
    /// The primal's tolerance (1e-4, but for GPU functions Vulkan lets be less precise).
    tol: f32,
    /// The largest size within llvmpipe's loop budget, where the kernel runs a parallel
    /// loop in order (inside a time loop: one invocation).
    llvmpipe_max_n: usize,
}

fn check(dev: &Device, s: &Shape, n: usize, seed: u64) {
    let name = s.name;
    let x = values(n, seed);
    let u = values(n, seed + 1);
    // Primal: GPU against the CPU kernel and the sequential twin.
    let mut y_cpu = vec![0.0; n];
    let v_cpu = (s.cpu.0)(&x, &mut y_cpu);
    let mut y_seq = vec![0.0; n];
    let v_seq = (s.plain.0)(&x, &mut y_seq);
    let xb = Buffer::from_slice(dev, &x).unwrap();
    let mut yb = Buffer::<f32>::zeros(dev, n).unwrap();
    let v_gpu = (s.gpu.0)(dev, &xb, &mut yb).unwrap();
    let y_gpu = yb.read(dev).unwrap();
    let tol = s.tol;
    assert!(
        close(v_gpu, v_cpu, tol) && close(v_gpu, v_seq, tol),
        "{name} n={n}: GPU {v_gpu}, CPU {v_cpu}, sequential {v_seq}"
    );
    assert_close(&format!("{name} n={n}: written on the GPU against the CPU"), &y_gpu, &y_cpu, tol);
    assert_close(&format!("{name} n={n}: written on the GPU against the sequential twin"), &y_gpu, &y_seq, tol);
    // Forward mode: GPU against CPU.
    let ub = Buffer::from_slice(dev, &u).unwrap();
    let mut yb = Buffer::<f32>::zeros(dev, n).unwrap();
    let mut dyb = Buffer::<f32>::zeros(dev, n).unwrap();
    let (f_gpu, t_gpu) = (s.gpu.1)(dev, &xb, &ub, &mut yb, &mut dyb).unwrap();
    let (mut y2, mut dy2) = (vec![0.0; n], vec![0.0; n]);
    let (f_cpu, t_cpu) = (s.cpu.1)(&x, &u, &mut y2, &mut dy2);
    assert!(close(f_gpu, v_cpu, tol), "{name} n={n}: forward's primal {f_gpu} against {v_cpu}");
    assert!(close(t_gpu, t_cpu, 10.0 * tol), "{name} n={n}: tangent on the GPU {t_gpu}, on the CPU {t_cpu}");
    assert_close(&format!("{name} n={n}: tangents written"), &dyb.read(dev).unwrap(), &dy2, 10.0 * tol);
    // Central finite differences of the sequential twin along u.
    let h = 1e-3f32;
    let at = |t: f32| {
        let xs: Vec<f32> = x.iter().zip(&u).map(|(x, u)| x + t * u).collect();
        (s.plain.0)(&xs, &mut vec![0.0; n])
    };
    if n <= 64 {
        let fd = (at(h) - at(-h)) / (2.0 * h);
        assert!(close(t_gpu, fd, 2e-2), "{name} n={n}: tangent on the GPU {t_gpu}, finite differences {fd}");
    }
    // Dot-product test against the CPU's reverse mode.
    let (mut dx, mut y3, mut dy3) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
    (s.cpu.2)(&x, &mut dx, &mut y3, &mut dy3, 1.0);
    let dot: f32 = dx.iter().zip(&u).map(|(g, u)| g * u).sum();
    assert!(close(t_gpu, dot, 10.0 * tol), "{name} n={n}: dot-product test: GPU forward {t_gpu}, CPU reverse {dot}");
    // Reverse mode on the GPU (the AD stack sized by the count run): against the CPU's
    // gradient, the dot-product test against the GPU's forward mode, finite differences.
    let (mut dxb, mut yb, mut dyb) = (
        Buffer::<f32>::zeros(dev, n).unwrap(),
        Buffer::<f32>::zeros(dev, n).unwrap(),
        Buffer::<f32>::zeros(dev, n).unwrap(),
    );
    let r_gpu = (s.gpu.2)(dev, &xb, &mut dxb, &mut yb, &mut dyb, 1.0).unwrap();
    let g_gpu = dxb.read(dev).unwrap();
    assert!(close(r_gpu, v_cpu, tol), "{name} n={n}: reverse's primal on the GPU {r_gpu} against {v_cpu}");
    assert_close(&format!("{name} n={n}: reverse's writes on the GPU"), &yb.read(dev).unwrap(), &y_cpu, tol);
    assert_close(&format!("{name} n={n}: gradient on the GPU against the CPU's"), &g_gpu, &dx, 10.0 * tol);
    let dot_gpu: f32 = g_gpu.iter().zip(&u).map(|(g, u)| g * u).sum();
    assert!(
        close(t_gpu, dot_gpu, 10.0 * tol),
        "{name} n={n}: dot-product test on the GPU: forward {t_gpu}, reverse {dot_gpu}"
    );
    if n <= 64 {
        let fd = (at(h) - at(-h)) / (2.0 * h);
        assert!(
            close(dot_gpu, fd, 2e-2),
            "{name} n={n}: gradient on the GPU along u {dot_gpu}, finite differences {fd}"
        );
    }
    // The stack holds exactly what was pushed: no per-thread cap.
    let st = cotan::gpu::last_stack();
    // (No iterations of their own where the parallel loop runs in order: `timed`.)
    assert!(
        st.bytes >= st.sequential_bytes && (st.iterations == 0 || st.iterations >= n as u64),
        "{name} n={n}: {st:?}"
    );
}

/// Defines `$k` with `#[cotan::kernel(gpu)]` (with `_fwd` and `_rev`) and `$p`, the same
/// function without it (with `_fwd`).
macro_rules! shape {
    ($k:ident, $kf:ident, $kr:ident; $p:ident, $pf:ident; $($f:tt)*) => {
        #[cotan::kernel(gpu)]
        #[autodiff_forward($kf, Dual, Dual, Dual)]
        #[autodiff_reverse($kr, Duplicated, Duplicated, Active)]
        fn $k $($f)*
        #[autodiff_forward($pf, Dual, Dual, Dual)]
        fn $p $($f)*
    };
}

fn smooth(l: f32, c: f32, r: f32) -> f32 {
    (l - 2.0 * c + r).sin() + 0.5 * c * c
}

// A stencil: reads of neighbours, a helper, writes at the loop's index; the sum after the
// loop runs in order.
shape!(stencil, stencil_fwd, stencil_rev; stencil_seq, stencil_seq_fwd;
(x: &[f32], y: &mut [f32]) -> f32 {
    let n = x.len();
    for i in cotan::par(0..n) {
        let l = if i > 0 { x[i - 1] } else { x[n - 1] };
        let r = if i + 1 < n { x[i + 1] } else { x[0] };
        y[i] = smooth(l, x[i], r);
    }
    let mut s = 0.0;
    for i in 0..n {
        s += y[i] * y[i];
    }
    s
});

// Accumulations into elements other iterations also add to: atomic (compare-and-swap).
shape!(scatter, scatter_fwd, scatter_rev; scatter_seq, scatter_seq_fwd;
(x: &[f32], y: &mut [f32]) -> f32 {
    let n = x.len();
    for i in cotan::par(0..n) {
        let w = 0.1 * x[i].exp();
        y[(i * 7) % n] += w;
        y[(i + 1) % n] -= 0.5 * w * x[i];
    }
    let mut s = 0.0;
    for i in 0..n {
        s += y[i] * y[i] * (i as f32 + 1.0);
    }
    s
});

// A loop-carried value through dynamic inner loops: one under an `if`, a sibling after it,
// both bounded by the outer index.
shape!(dynamic, dynamic_fwd, dynamic_rev; dynamic_seq, dynamic_seq_fwd;
(x: &[f32], y: &mut [f32]) -> f32 {
    let n = x.len();
    for i in cotan::par(0..n) {
        let mut s = x[i];
        if i % 3 != 1 {
            for k in 0..(i % 5).min(i) {
                s = (s * x[i - k - 1]).sin() + s;
            }
        }
        let mut t = 0.0;
        for k in 0..i % 4 {
            t += (s + x[(i + k) % n]).cos();
        }
        y[i] = s * t + s;
    }
    let mut s = 0.0;
    for i in 0..n {
        s += y[i];
    }
    s
});

// Nonlinear functions of a loop-carried value near the edges of their domains (asin and
// acos near ±1, sqrt and ln near 0), through a loop whose trip count is read from the array.
// (Tolerance 1e-3: Vulkan's asin and acos are precise to a few thousand ulp only.)
shape!(edges, edges_fwd, edges_rev; edges_seq, edges_seq_fwd;
(x: &[f32], y: &mut [f32]) -> f32 {
    let n = x.len();
    for i in cotan::par(0..n) {
        let trips = ((x[i].abs() * 10.0) as usize) % 6;
        let mut s = x[i] * 0.9;
        for k in 0..trips {
            s = 0.5 * (s * 0.98).asin() + 0.5 * s.tanh();
        }
        y[i] = (s * s + 1e-3).sqrt() + (s * 0.99).acos() + (1e-2 + s * s).ln();
    }
    let mut s = 0.0;
    for i in 0..n {
        s += y[i] * (1.0 + 0.01 * i as f32);
    }
    s
});

// A local array in the body, a local loop over it, `continue`, and a second parallel loop
// reading what the first wrote at neighbours (two dispatches).
shape!(two_loops, two_loops_fwd, two_loops_rev; two_loops_seq, two_loops_seq_fwd;
(x: &[f32], y: &mut [f32]) -> f32 {
    let n = x.len();
    for i in cotan::par(0..n) {
        let mut loc = [0.0; 3];
        for k in 0..3 {
            loc[k] = x[(i + k) % n] * (k as f32 + 1.0);
        }
        if i % 5 == 0 {
            y[i] = loc[2];
            continue;
        }
        y[i] = loc[0] * loc[1] + loc[2];
    }
    let mut s = 0.0;
    for i in 0..n {
        s += y[i] * y[(i + 1) % n];
    }
    s
});

// One iteration far deeper than the others: 10^5 steps of its inner loop (a contraction,
// so that f32 rounding does not pile up).
shape!(deep, deep_fwd, deep_rev; deep_seq, deep_seq_fwd;
(x: &[f32], y: &mut [f32]) -> f32 {
    let n = x.len();
    for i in cotan::par(0..n) {
        let trips = if i == 0 { 100000 } else { 3 };
        let mut s = x[i];
        for k in 0..trips {
            s = 0.5 * s + 0.3 * (s + 1e-5 * k as f32).cos();
        }
        y[i] = s;
    }
    let mut s = 0.0;
    for i in 0..n {
        s += y[i] * y[i];
    }
    s
});

// One iteration far deeper than the others: 1.2·10^4 steps of its inner loop,
// under llvmpipe's limit on loops (its forward and reverse sweep count against it) (a contraction,
// so that f32 rounding does not pile up).
shape!(deep12k, deep12k_fwd, deep12k_rev; deep12k_seq, deep12k_seq_fwd;
(x: &[f32], y: &mut [f32]) -> f32 {
    let n = x.len();
    for i in cotan::par(0..n) {
        let trips = if i == 0 { 12000 } else { 3 };
        let mut s = x[i];
        for k in 0..trips {
            s = 0.5 * s + 0.3 * (s + 1e-5 * k as f32).cos();
        }
        y[i] = s;
    }
    let mut s = 0.0;
    for i in 0..n {
        s += y[i] * y[i];
    }
    s
});

// An inner `while` loop whose trip count depends on the data, with `break` and `continue`
// in an inner `for` loop (exit flags), and an early `continue` of the iteration.
shape!(whiles, whiles_fwd, whiles_rev; whiles_seq, whiles_seq_fwd;
(x: &[f32], y: &mut [f32]) -> f32 {
    let n = x.len();
    for i in cotan::par(0..n) {
        if i % 7 == 3 {
            y[i] = x[i];
            continue;
        }
        let mut s = x[i];
        let mut k = 0;
        while s.abs() < 4.0 && k < 20 {
            s = s * 1.7 + 0.1;
            k += 1;
        }
        for j in 0..6 {
            if j == 1 {
                continue;
            }
            if (i + j) % 5 == 4 {
                break;
            }
            s += 0.1 * (x[(i + j) % n] * s).tanh();
        }
        y[i] = s;
    }
    let mut s = 0.0;
    for i in 0..n {
        s += y[i] * y[i];
    }
    s
});

// A parallel loop inside a time loop: on the GPU the time loop (with its parallel loop)
// runs in order, in one invocation; the same values and derivatives.
shape!(timed, timed_fwd, timed_rev; timed_seq, timed_seq_fwd;
(x: &[f32], y: &mut [f32]) -> f32 {
    let n = x.len();
    for t in 0..5 {
        for i in cotan::par(0..n) {
            y[i] = 0.5 * y[i] + (x[i] * (t as f32 + 1.0)).sin();
        }
    }
    let mut s = 0.0;
    for i in 0..n {
        s += y[i] * y[i];
    }
    s
});

fn shapes() -> Vec<Shape> {
    vec![
        Shape {
            name: "stencil",
            cpu: (stencil, stencil_fwd, stencil_rev),
            gpu: (stencil_gpu, stencil_fwd_gpu, stencil_rev_gpu),
            plain: (stencil_seq, stencil_seq_fwd),
            tol: 1e-4,
            llvmpipe_max_n: usize::MAX,
        },
        Shape {
            name: "scatter",
            cpu: (scatter, scatter_fwd, scatter_rev),
            gpu: (scatter_gpu, scatter_fwd_gpu, scatter_rev_gpu),
            plain: (scatter_seq, scatter_seq_fwd),
            tol: 1e-4,
            llvmpipe_max_n: usize::MAX,
        },
        Shape {
            name: "dynamic",
            cpu: (dynamic, dynamic_fwd, dynamic_rev),
            gpu: (dynamic_gpu, dynamic_fwd_gpu, dynamic_rev_gpu),
            plain: (dynamic_seq, dynamic_seq_fwd),
            tol: 1e-4,
            llvmpipe_max_n: usize::MAX,
        },
        Shape {
            name: "edges",
            cpu: (edges, edges_fwd, edges_rev),
            gpu: (edges_gpu, edges_fwd_gpu, edges_rev_gpu),
            plain: (edges_seq, edges_seq_fwd),
            tol: 1e-3,
            llvmpipe_max_n: usize::MAX,
        },
        Shape {
            name: "two_loops",
            cpu: (two_loops, two_loops_fwd, two_loops_rev),
            gpu: (two_loops_gpu, two_loops_fwd_gpu, two_loops_rev_gpu),
            plain: (two_loops_seq, two_loops_seq_fwd),
            tol: 1e-4,
            llvmpipe_max_n: usize::MAX,
        },
        Shape {
            name: "timed",
            cpu: (timed, timed_fwd, timed_rev),
            gpu: (timed_gpu, timed_fwd_gpu, timed_rev_gpu),
            plain: (timed_seq, timed_seq_fwd),
            tol: 1e-4,
            llvmpipe_max_n: 64,
        },
        Shape {
            name: "whiles",
            cpu: (whiles, whiles_fwd, whiles_rev),
            gpu: (whiles_gpu, whiles_fwd_gpu, whiles_rev_gpu),
            plain: (whiles_seq, whiles_seq_fwd),
            tol: 1e-4,
            llvmpipe_max_n: usize::MAX,
        },
    ]
}

#[test]
fn quadrants_shapes_on_the_gpu() {
    let Some(dev) = device() else { return };
    println!("adapter: {}, float atomics: {}", dev.adapter_name(), dev.float_atomics());
    // f32 accumulations with the device's float atomics (where it has them), then with the
    // compare-and-swap loop every device runs.
    for native in [true, false] {
        dev.use_float_atomics(native);
        for s in shapes() {
            for (n, seed) in [(0, 5), (1, 1), (7, 2), (64, 3), (1000, 4)] {
                if n > s.llvmpipe_max_n && dev.adapter_name().contains("llvmpipe") {
                    continue;
                }
                check(&dev, &s, n, seed);
            }
        }
    }
    dev.use_float_atomics(true);
}

/// Whether `r` is llvmpipe's limit on loops (65535 iterations), reported as an error.
fn cut_by_llvmpipe<T>(dev: &Device, r: &Result<T, GpuError>) -> bool {
    match r {
        Err(GpuError::Failed { message, .. }) if message.contains("ended the loop") => {
            assert!(dev.adapter_name().contains("llvmpipe"), "{message}");
            println!("{message}: the limit of llvmpipe, reported as an error as it should be");
            true
        }
        _ => false,
    }
}

#[test]
fn a_deep_thread_on_the_gpu() {
    let Some(dev) = device() else { return };
    let s = Shape {
        name: "deep12k",
        cpu: (deep12k, deep12k_fwd, deep12k_rev),
        gpu: (deep12k_gpu, deep12k_fwd_gpu, deep12k_rev_gpu),
        plain: (deep12k_seq, deep12k_seq_fwd),
        tol: 1e-4,
        llvmpipe_max_n: usize::MAX,
    };
    check(&dev, &s, 100, 5);
    // The deep iteration's stack slice holds its 12000 pushes (one per step), the others a
    // few each: no cap.
    let st = cotan::gpu::last_stack();
    println!("deep12k: {st:?}");
    assert!(st.deepest_iteration_bytes >= 4 * 12000, "{st:?}");
    assert!(st.bytes < 4 * st.deepest_iteration_bytes, "one deep iteration, not a cap for all: {st:?}");
    // 10^5 steps (10^5 pushes in one thread): beyond llvmpipe's limit on loops, an error
    // there, in each mode; right anywhere else.
    let x = values(100, 5);
    let xb = Buffer::from_slice(&dev, &x).unwrap();
    let r = deep_gpu(&dev, &xb, &mut Buffer::zeros(&dev, 100).unwrap());
    let z = || Buffer::<f32>::zeros(&dev, 100).unwrap();
    let rr = deep_rev_gpu(&dev, &xb, &mut z(), &mut z(), &mut z(), 1.0);
    if cut_by_llvmpipe(&dev, &r) {
        assert!(cut_by_llvmpipe(&dev, &rr), "{rr:?}");
        return;
    }
    let s = Shape {
        name: "deep",
        cpu: (deep, deep_fwd, deep_rev),
        gpu: (deep_gpu, deep_fwd_gpu, deep_rev_gpu),
        plain: (deep_seq, deep_seq_fwd),
        tol: 1e-4,
        llvmpipe_max_n: usize::MAX,
    };
    check(&dev, &s, 100, 5);
}

// Loops longer than 65535 iterations (llvmpipe ends any one loop there: cotan runs them
// in blocks) and a `while` loop as long.
#[cotan::kernel(gpu)]
fn count(x: &[f32], y: &mut [f32]) -> f32 {
    let n = x.len();
    for i in cotan::par(0..n) {
        let trips = if i == 0 { 100000 } else { 3 };
        let mut s = 0.0;
        let mut c = 0.0;
        for k in 0..trips {
            s += 1.0;
            c = 1e-5 * k as f32;
        }
        let mut w = 0;
        while w < trips + 1 {
            w += 1;
        }
        y[i] = s + c + w as f32;
    }
    0.0
}

#[test]
fn long_loops() {
    let Some(dev) = device() else { return };
    let xb = Buffer::from_slice(&dev, &[0.0f32; 4]).unwrap();
    let mut yb = Buffer::<f32>::zeros(&dev, 4).unwrap();
    let r = count_gpu(&dev, &xb, &mut yb);
    if cut_by_llvmpipe(&dev, &r) {
        return;
    }
    r.unwrap();
    let mut y = vec![0.0; 4];
    count(&[0.0; 4], &mut y);
    assert_eq!(yb.read(&dev).unwrap(), y);
    assert_eq!(y[0], 100000.0 + 0.99999 + 100001.0);
}

// An index out of bounds: an error naming the array and the line, as Rust's panic would.
#[cotan::kernel(gpu)]
fn shifted(x: &[f32], y: &mut [f32]) {
    let n = y.len();
    for i in cotan::par(0..n) {
        y[i] = x[i + 1];
    }
}

#[test]
fn index_out_of_bounds_is_an_error() {
    let Some(dev) = device() else { return };
    let x = Buffer::from_slice(&dev, &[1.0f32; 8]).unwrap();
    let mut y = Buffer::<f32>::zeros(&dev, 8).unwrap();
    match shifted_gpu(&dev, &x, &mut y) {
        Err(GpuError::Failed { kernel, message }) => {
            assert_eq!(kernel, "shifted");
            assert!(message.contains("index out of bounds: the len is 8 but the index is 8"), "{message}");
            assert!(message.contains("`x`") && message.contains("gpu_kernels.rs:"), "{message}");
        }
        other => panic!("expected an index error, got {other:?}"),
    }
}

// f64 (where the adapter has SHADER_F64): arithmetic, sqrt, powi; an f64 accumulation (no
// 64-bit atomics in WGSL: that loop runs in order, in one invocation).
#[cotan::kernel(gpu)]
#[autodiff_forward(norms64_fwd, Dual, Dual, Dual)]
#[autodiff_reverse(norms64_rev, Duplicated, Duplicated, Active)]
fn norms64(x: &[f64], y: &mut [f64]) -> f64 {
    let n = x.len();
    for i in cotan::par(0..n) {
        let a = x[i];
        let b = x[(i + 1) % n];
        y[i] = (a * a + b * b + 1.0).sqrt() * a.powi(3);
    }
    for i in cotan::par(0..n) {
        y[(i * 3) % n] += 0.5 * x[i] * x[i];
    }
    let mut s = 0.0;
    for i in 0..n {
        s += y[i] * y[i];
    }
    s
}

#[test]
fn f64_where_the_device_has_it() {
    let Some(dev) = device() else { return };
    let n = 300;
    let x: Vec<f64> = values(n, 9).iter().map(|&v| v as f64).collect();
    let u: Vec<f64> = values(n, 10).iter().map(|&v| v as f64).collect();
    if !dev.supports_f64() {
        let xb = Buffer::<f32>::zeros(&dev, 1).unwrap();
        assert!(Buffer::from_slice(&dev, &x).is_err());
        println!("f64: not supported by {}, checked that it is refused", dev.adapter_name());
        return;
    }
    let (xb, ub) = (Buffer::from_slice(&dev, &x).unwrap(), Buffer::from_slice(&dev, &u).unwrap());
    let (mut yb, mut dyb) = (Buffer::<f64>::zeros(&dev, n).unwrap(), Buffer::<f64>::zeros(&dev, n).unwrap());
    let v = norms64_gpu(&dev, &xb, &mut yb).unwrap();
    let mut y = vec![0.0; n];
    let v_cpu = norms64(&x, &mut y);
    assert!((v - v_cpu).abs() <= 1e-12 * (1.0 + v_cpu.abs()), "f64 primal {v} against {v_cpu}");
    let (mut yb, mut dyb) = (Buffer::<f64>::zeros(&dev, n).unwrap(), Buffer::<f64>::zeros(&dev, n).unwrap());
    let (f, t) = norms64_fwd_gpu(&dev, &xb, &ub, &mut yb, &mut dyb).unwrap();
    let (f_cpu, t_cpu) = norms64_fwd(&x, &u, &mut vec![0.0; n], &mut vec![0.0; n]);
    assert!((t - t_cpu).abs() <= 1e-12 * (1.0 + t_cpu.abs()), "f64 tangent {t} against {t_cpu}");
    let h = 1e-6;
    let at = |s: f64| {
        let xs: Vec<f64> = x.iter().zip(&u).map(|(x, u)| x + s * u).collect();
        norms64(&xs, &mut vec![0.0; n])
    };
    let fd = (at(h) - at(-h)) / (2.0 * h);
    assert!((t - fd).abs() <= 1e-6 * (1.0 + fd.abs()), "f64 tangent {t}, finite differences {fd}");
    // Reverse mode: f64 values on the stack of 32-bit words, exactly.
    let z = || Buffer::<f64>::zeros(&dev, n).unwrap();
    let mut gb = z();
    let r = norms64_rev_gpu(&dev, &xb, &mut gb, &mut z(), &mut z(), 1.0).unwrap();
    let mut g = vec![0.0; n];
    let r_cpu = norms64_rev(&x, &mut g, &mut vec![0.0; n], &mut vec![0.0; n], 1.0);
    assert!((r - r_cpu).abs() <= 1e-12 * (1.0 + r_cpu.abs()), "f64 reverse's primal {r} against {r_cpu}");
    for (k, (a, b)) in gb.read(&dev).unwrap().iter().zip(&g).enumerate() {
        assert!((a - b).abs() <= 1e-12 * (1.0 + b.abs()), "f64 gradient [{k}]: {a} against {b}");
    }
    let dot: f64 = g.iter().zip(&u).map(|(g, u)| g * u).sum();
    assert!((t - dot).abs() <= 1e-10 * (1.0 + dot.abs()), "f64 dot-product test: {t} against {dot}");
}

// The f64 values a reverse sweep pops are the ones it pushed, bit for bit: zeros of both
// signs' magnitude, subnormals, huge and tiny numbers, infinities and NaN through a kernel
// that pushes them (`powi` of them, whose reverse needs them).
#[cotan::kernel(gpu)]
#[autodiff_reverse(stash64_rev, Duplicated, Duplicated, Active)]
fn stash64(x: &[f64], y: &mut [f64]) -> f64 {
    let n = x.len();
    for i in cotan::par(0..n) {
        y[i] = x[i].powi(3) * 0.5;
    }
    let mut s = 0.0;
    for i in 0..n {
        s += y[i];
    }
    s
}

#[test]
fn f64_values_round_trip_through_the_stack() {
    let Some(dev) = device() else { return };
    if !dev.supports_f64() {
        return;
    }
    let x = vec![
        0.0,
        -0.0,
        1.0,
        -1.5,
        1e-310,
        -3e-320,
        1e100,
        -7.25e-100,
        123456789.123456789,
        f64::MIN_POSITIVE,
        2f64.powi(52) + 1.0,
    ];
    let n = x.len();
    let z = || Buffer::<f64>::zeros(&dev, n).unwrap();
    let xb = Buffer::from_slice(&dev, &x).unwrap();
    let (mut gb, mut yb) = (z(), z());
    stash64_rev_gpu(&dev, &xb, &mut gb, &mut yb, &mut z(), 1.0).unwrap();
    let mut g = vec![0.0; n];
    let mut y = vec![0.0; n];
    stash64_rev(&x, &mut g, &mut y, &mut vec![0.0; n], 1.0);
    let yg = yb.read(&dev).unwrap();
    assert_eq!(yg, y);
    assert!(yg[1].is_sign_negative() && y[1].is_sign_negative(), "-0.0 restored as {}", yg[1]);
    let gg = gb.read(&dev).unwrap();
    for k in 0..n {
        assert!(gg[k] == g[k] || (gg[k] - g[k]).abs() <= 1e-15 * g[k].abs(), "[{k}] {} against {}", gg[k], g[k]);
    }
}

// A mass-spring chain (nonlinear springs, damping), stepped 200 times on the device, with
// the tangent of the final energy (kinetic, and distance from rest) along a direction of
// the initial positions: against the CPU's (1e-3) and finite differences (2e-2); and the
// gradient by reverse mode on the GPU, step by step backwards (dot-product test, 1e-3).
macro_rules! spring {
    ($name:ident, $fwd:ident, $rev:ident $(, $k:meta)?) => {
        $(#[$k])?
        #[autodiff_forward($fwd, Dual, Dual, Dual, Dual, Const)]
        #[autodiff_reverse($rev, Duplicated, Duplicated, Duplicated, Duplicated, Const)]
        fn $name(p: &[f32], v: &[f32], pn: &mut [f32], vn: &mut [f32], dt: f32) {
            let n = p.len();
            for i in cotan::par(0..n) {
                let mut f = -0.1 * v[i];
                if i > 0 {
                    let d = p[i] - p[i - 1] - 1.0;
                    f -= 10.0 * d + 0.5 * d.powi(3);
                }
                if i + 1 < n {
                    let d = p[i + 1] - p[i] - 1.0;
                    f += 10.0 * d + 0.5 * d.powi(3);
                }
                let vi = v[i] + dt * f;
                vn[i] = vi;
                pn[i] = p[i] + dt * vi;
            }
        }
    };
}
spring!(spring_step, spring_step_fwd, spring_step_rev, cotan::kernel(gpu));
spring!(spring_seq, spring_seq_fwd, spring_seq_rev);

const STEPS: usize = 200;

/// The energy after `STEPS` steps of the sequential twin, from positions `p0`.
fn spring_energy(p0: &[f32]) -> f32 {
    let n = p0.len();
    let (mut p, mut v) = (p0.to_vec(), vec![0.0; n]);
    let (mut pn, mut vn) = (vec![0.0; n], vec![0.0; n]);
    for _ in 0..STEPS {
        spring_seq(&p, &v, &mut pn, &mut vn, 0.01);
        std::mem::swap(&mut p, &mut pn);
        std::mem::swap(&mut v, &mut vn);
    }
    (0..n).map(|i| 0.001 * (p[i] - i as f32).powi(2) + v[i] * v[i]).sum()
}

#[test]
fn mass_spring_steps_and_their_tangent_on_the_gpu() {
    let Some(dev) = device() else { return };
    let n = 500;
    let p0: Vec<f32> = values(n, 11).iter().enumerate().map(|(i, r)| i as f32 + 0.1 * r).collect();
    let u = values(n, 12);
    // On the device: positions, velocities and their tangents, ping-ponged.
    let z = |dev: &Device| Buffer::<f32>::zeros(dev, n).unwrap();
    let (mut p, mut dp) = (Buffer::from_slice(&dev, &p0).unwrap(), Buffer::from_slice(&dev, &u).unwrap());
    let (mut v, mut dv) = (z(&dev), z(&dev));
    let (mut pn, mut dpn, mut vn, mut dvn) = (z(&dev), z(&dev), z(&dev), z(&dev));
    for _ in 0..STEPS {
        spring_step_fwd_gpu(&dev, &p, &dp, &v, &dv, &mut pn, &mut dpn, &mut vn, &mut dvn, 0.01).unwrap();
        std::mem::swap(&mut p, &mut pn);
        std::mem::swap(&mut dp, &mut dpn);
        std::mem::swap(&mut v, &mut vn);
        std::mem::swap(&mut dv, &mut dvn);
    }
    let (p, dp, v, dv) = (p.read(&dev).unwrap(), dp.read(&dev).unwrap(), v.read(&dev).unwrap(), dv.read(&dev).unwrap());
    let e_gpu: f32 = (0..n).map(|i| 0.001 * (p[i] - i as f32).powi(2) + v[i] * v[i]).sum();
    let t_gpu: f32 = (0..n).map(|i| 0.002 * (p[i] - i as f32) * dp[i] + 2.0 * v[i] * dv[i]).sum();
    // On the CPU: the kernel's forward mode, the same steps.
    let (mut cp, mut cdp, mut cv, mut cdv) = (p0.clone(), u.clone(), vec![0.0; n], vec![0.0; n]);
    let (mut cpn, mut cdpn, mut cvn, mut cdvn) = (vec![0.0; n], vec![0.0; n], vec![0.0; n], vec![0.0; n]);
    for _ in 0..STEPS {
        spring_step_fwd(&cp, &cdp, &cv, &cdv, &mut cpn, &mut cdpn, &mut cvn, &mut cdvn, 0.01);
        std::mem::swap(&mut cp, &mut cpn);
        std::mem::swap(&mut cdp, &mut cdpn);
        std::mem::swap(&mut cv, &mut cvn);
        std::mem::swap(&mut cdv, &mut cdvn);
    }
    let t_cpu: f32 = (0..n).map(|i| 0.002 * (cp[i] - i as f32) * cdp[i] + 2.0 * cv[i] * cdv[i]).sum();
    let e_seq = spring_energy(&p0);
    assert!(close(e_gpu, e_seq, 1e-4), "energy on the GPU {e_gpu}, sequential {e_seq}");
    assert!(close(t_gpu, t_cpu, 1e-3), "tangent on the GPU {t_gpu}, CPU {t_cpu}");
    let h = 1e-2;
    let at = |s: f32| spring_energy(&p0.iter().zip(&u).map(|(p, u)| p + s * u).collect::<Vec<_>>());
    let fd = (at(h) - at(-h)) / (2.0 * h);
    assert!(close(t_gpu, fd, 2e-2), "tangent on the GPU {t_gpu}, finite differences {fd}");

    // The gradient by reverse mode on the GPU: the states of every step kept on the device,
    // then each step's reverse from the last, the adjoints passed back.
    let mut ps = vec![Buffer::from_slice(&dev, &p0).unwrap()];
    let mut vs = vec![z(&dev)];
    for t in 0..STEPS {
        let (mut pn, mut vn) = (z(&dev), z(&dev));
        spring_step_gpu(&dev, &ps[t], &vs[t], &mut pn, &mut vn, 0.01).unwrap();
        ps.push(pn);
        vs.push(vn);
    }
    let (pt, vt) = (ps[STEPS].read(&dev).unwrap(), vs[STEPS].read(&dev).unwrap());
    let ap: Vec<f32> = (0..n).map(|i| 0.002 * (pt[i] - i as f32)).collect();
    let av: Vec<f32> = (0..n).map(|i| 2.0 * vt[i]).collect();
    let (mut ap, mut av) = (Buffer::from_slice(&dev, &ap).unwrap(), Buffer::from_slice(&dev, &av).unwrap());
    for t in (0..STEPS).rev() {
        let (mut dp, mut dv, mut pn, mut vn) = (z(&dev), z(&dev), z(&dev), z(&dev));
        spring_step_rev_gpu(&dev, &ps[t], &mut dp, &vs[t], &mut dv, &mut pn, &mut ap, &mut vn, &mut av, 0.01).unwrap();
        ap = dp;
        av = dv;
    }
    let g = ap.read(&dev).unwrap();
    let dot: f32 = g.iter().zip(&u).map(|(g, u)| g * u).sum();
    assert!(close(dot, t_gpu, 1e-3), "200 steps: gradient on the GPU along u {dot}, tangent {t_gpu}");
}

/// The median of 9 timed calls of `f` after an untimed one, in milliseconds.
fn median(mut f: impl FnMut()) -> f64 {
    f();
    let mut t: Vec<f64> = (0..9)
        .map(|_| {
            let s = std::time::Instant::now();
            f();
            s.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    t.sort_by(|a, b| a.partial_cmp(b).unwrap());
    t[4]
}

/// The figures of docs/benchmarks.md ("Kernels on the GPU"): medians of 9 timed calls
/// (after one untimed call that compiles the pipelines) of the primal and forward mode on
/// the GPU, seeded inputs. `cargo test -p cotan --features gpu --test gpu_kernels --
/// --ignored --nocapture gpu_figures`.
#[test]
#[ignore]
fn gpu_figures() {
    let Some(dev) = device() else { return };
    // (Under llvmpipe's limit on loops: the sums after the parallel loops run in order.)
    let n = 8192;
    println!("adapter: {}, n = {n}", dev.adapter_name());
    println!("| kernel | primal GPU (ms) | forward GPU (ms) | reverse GPU (ms) | forward/primal | reverse/primal | primal CPU rayon (ms) | stack bytes / iteration (mean) | deepest iteration (bytes) | fixed cap for all (bytes) | exact stack (bytes) |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut all = shapes();
    all.push(Shape {
        name: "deep12k",
        cpu: (deep12k, deep12k_fwd, deep12k_rev),
        gpu: (deep12k_gpu, deep12k_fwd_gpu, deep12k_rev_gpu),
        plain: (deep12k_seq, deep12k_seq_fwd),
        tol: 1e-4,
        llvmpipe_max_n: usize::MAX,
    });
    for s in all {
        if n > s.llvmpipe_max_n && dev.adapter_name().contains("llvmpipe") {
            continue;
        }
        let x = values(n, 1);
        let u = values(n, 2);
        let xb = Buffer::from_slice(&dev, &x).unwrap();
        let ub = Buffer::from_slice(&dev, &u).unwrap();
        let d = &dev;
        let (xr, ur) = (&xb, &ub);
        let gpu_p = s.gpu.0;
        let gpu_f = s.gpu.1;
        let tp = median(|| {
            let mut y = Buffer::<f32>::zeros(d, n).unwrap();
            gpu_p(d, xr, &mut y).unwrap();
        });
        let tf = median(|| {
            let (mut y, mut dy) = (Buffer::<f32>::zeros(d, n).unwrap(), Buffer::<f32>::zeros(d, n).unwrap());
            gpu_f(d, xr, ur, &mut y, &mut dy).unwrap();
        });
        let gpu_r = s.gpu.2;
        let tr = median(|| {
            let z = || Buffer::<f32>::zeros(d, n).unwrap();
            gpu_r(d, xr, &mut z(), &mut z(), &mut z(), 1.0).unwrap();
        });
        let st = cotan::gpu::last_stack();
        let cpu = s.cpu.0;
        let xc = x.clone();
        let tc = median(|| {
            let mut y = vec![0.0; n];
            cpu(&xc, &mut y);
        });
        let per = (st.bytes - st.sequential_bytes) as f64 / n as f64;
        let cap = st.deepest_iteration_bytes * n as u64 + st.sequential_bytes;
        println!(
            "| {} | {tp:.2} | {tf:.2} | {tr:.2} | {:.2} | {:.2} | {tc:.2} | {per:.1} | {} | {cap} | {} |",
            s.name,
            tf / tp,
            tr / tp,
            st.deepest_iteration_bytes,
            st.bytes
        );
    }
}

#[test]
fn a_stack_above_the_limit_is_an_error_before_anything_runs() {
    let Some(dev) = device() else { return };
    let n = 100;
    let x = values(n, 5);
    let (dx0, y0, dy0) = (values(n, 6), values(n, 7), values(n, 8));
    let xb = Buffer::from_slice(&dev, &x).unwrap();
    let (mut dxb, mut yb, mut dyb) = (
        Buffer::from_slice(&dev, &dx0).unwrap(),
        Buffer::from_slice(&dev, &y0).unwrap(),
        Buffer::from_slice(&dev, &dy0).unwrap(),
    );
    dev.set_stack_limit(Some(40_000));
    let r = deep12k_rev_gpu(&dev, &xb, &mut dxb, &mut yb, &mut dyb, 1.0);
    dev.set_stack_limit(None);
    match r {
        Err(GpuError::TooLarge { what, bytes, limit }) => {
            assert_eq!(what, "the AD stack of kernel `deep12k_rev`");
            assert_eq!(limit, 40_000);
            assert!(bytes > 4 * 12000, "{bytes}");
            let e = GpuError::TooLarge { what, bytes, limit }.to_string();
            assert!(e.contains("deep12k_rev") && e.contains(&bytes.to_string()), "{e}");
        }
        other => panic!("expected the stack to be too large, got {other:?}"),
    }
    // Nothing ran on the user's buffers.
    assert_eq!(dxb.read(&dev).unwrap(), dx0);
    assert_eq!(yb.read(&dev).unwrap(), y0);
    assert_eq!(dyb.read(&dev).unwrap(), dy0);
    // Under the device's own limit, the same call runs.
    deep12k_rev_gpu(&dev, &xb, &mut dxb, &mut yb, &mut dyb, 1.0).unwrap();
}

// Integer accumulations (`atomicAdd` on u32) and a failed `assert!`, reported as Rust's
// panic would be.
#[cotan::kernel(gpu)]
fn histogram(x: &[f32], counts: &mut [u32]) -> u32 {
    let m = counts.len();
    for i in cotan::par(0..x.len()) {
        assert!(x[i].abs() <= 1.0, "values in [-1, 1]");
        let bin = ((x[i] + 1.0) * 0.5 * m as f32) as usize;
        counts[bin.min(m - 1)] += 1;
    }
    let mut total = 0;
    for k in 0..m {
        total += counts[k];
    }
    total
}

#[test]
fn integer_accumulations_and_asserts() {
    let Some(dev) = device() else { return };
    let x = values(5000, 21);
    let mut counts = vec![0u32; 16];
    let total = histogram(&x, &mut counts);
    let xb = Buffer::from_slice(&dev, &x).unwrap();
    let mut cb = Buffer::<u32>::zeros(&dev, 16).unwrap();
    assert_eq!(histogram_gpu(&dev, &xb, &mut cb).unwrap(), total);
    assert_eq!(cb.read(&dev).unwrap(), counts);
    let mut bad = x.clone();
    bad[77] = 3.0;
    let xb = Buffer::from_slice(&dev, &bad).unwrap();
    match histogram_gpu(&dev, &xb, &mut cb) {
        Err(GpuError::Failed { kernel, message }) => {
            assert_eq!(kernel, "histogram");
            assert!(message.contains("assertion failed") && message.contains("values in [-1, 1]"), "{message}");
            assert!(message.contains("gpu_kernels.rs:"), "{message}");
        }
        other => panic!("expected a failed assertion, got {other:?}"),
    }
}
