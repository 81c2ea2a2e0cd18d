//! Raw pointers and `unsafe` in differentiated code (issue 11, item 8), as std::autodiff's
//! tests and ADBench's "unsafe" variants write them: pointer parameters (`*const f64`,
//! `*mut f64`, `*const f32`, `*const [f64; N]`, `*mut [f64; N]`), reads and writes through
//! them, pointer arithmetic, `unsafe fn` helpers called with `p.add(k)`, `from_raw_parts`,
//! `copy_nonoverlapping`, `ptr::swap`, `as_ptr`/`as_mut_ptr`, `get_unchecked(_mut)`.
//!
//! Every case is checked against central finite differences in both modes and reverse
//! against forward by the dot-product test (`common::check_compiled`, tolerances
//! `common::FD_TOL` = 1e-6 relative and `common::EXACT_TOL` = 1e-10); cases without calls
//! are also run in cotan's IR interpreter against the compiled code. Second order and
//! batched forward mode are checked against finite differences of the gradient and against
//! single-direction forward mode.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code, unused_unsafe)]

mod common;

use cotan::{autodiff_forward, autodiff_reverse};

/// `fn f(x: *const f64, n: usize) -> f64` (an `unsafe fn` too), `n` the length of `x`.
macro_rules! ptr_case {
    ($test:ident, [$($pt:expr),+ $(,)?], $($item:tt)*) => {
        mod $test {
            #[allow(unused_imports)]
            use super::*;
            #[cotan::autodiff_reverse(rev, Duplicated, Const, Active)]
            #[cotan::autodiff_forward(fwd, Dual, Const, Dual)]
            $($item)*

            #[test]
            #[allow(unused_unsafe)]
            fn derivatives() {
                let case = common::Case {
                    src: stringify!($($item)*),
                    shape: common::Shape::PtrLen,
                    primal: &|x| vec![unsafe { f(x.as_ptr(), x.len()) }],
                    jvp: &|x, u| {
                        let (y, t) = unsafe { fwd(x.as_ptr(), u.as_ptr(), x.len()) };
                        (vec![y], vec![t])
                    },
                    vjp: &|x, w| {
                        let mut g = vec![0.0; x.len()];
                        let y = unsafe { rev(x.as_ptr(), g.as_mut_ptr(), x.len(), w[0]) };
                        (vec![y], g)
                    },
                };
                $( common::check(&case, &$pt); )+
                $({
                    let x: &[f64] = &$pt;
                    let mut g = vec![0.0; x.len()];
                    common::check_allocations(
                        case.src,
                        &mut || { std::hint::black_box(unsafe { f(std::hint::black_box(x).as_ptr(), x.len()) }); },
                        &mut || { std::hint::black_box(unsafe { rev(std::hint::black_box(x).as_ptr(), g.as_mut_ptr(), x.len(), 1.0) }); },
                    );
                })+
            }
        }
    };
}

/// `fn f(x: *mut f64, n: usize)`: F(x) is the final contents of x.
macro_rules! ptr_inplace_case {
    ($test:ident, [$($pt:expr),+ $(,)?], $($item:tt)*) => {
        mod $test {
            #[allow(unused_imports)]
            use super::*;
            #[cotan::autodiff_reverse(rev, Duplicated, Const)]
            #[cotan::autodiff_forward(fwd, Dual, Const)]
            $($item)*

            #[test]
            #[allow(unused_unsafe)]
            fn derivatives() {
                let case = common::Case {
                    src: stringify!($($item)*),
                    shape: common::Shape::PtrInPlace,
                    primal: &|x| {
                        let mut y = x.to_vec();
                        unsafe { f(y.as_mut_ptr(), y.len()) };
                        y
                    },
                    jvp: &|x, u| {
                        let (mut y, mut t) = (x.to_vec(), u.to_vec());
                        unsafe { fwd(y.as_mut_ptr(), t.as_mut_ptr(), y.len()) };
                        (y, t)
                    },
                    vjp: &|x, w| {
                        let (mut y, mut g) = (x.to_vec(), w.to_vec());
                        unsafe { rev(y.as_mut_ptr(), g.as_mut_ptr(), y.len()) };
                        (y, g)
                    },
                };
                $( common::check(&case, &$pt); )+
            }
        }
    };
}

// ---- std's own tests: a pointer parameter, std's call ----

#[autodiff_reverse(d_square, Duplicated, Active)]
#[autodiff_forward(t_square, Dual, Dual)]
fn callee(x: *const f32) -> f32 {
    unsafe { *x * *x }
}

#[test]
fn std_pointer_parameter_and_call() {
    let x: f32 = 7.0;
    let out = callee(&x as *const f32);
    let mut df_dx: f32 = 0.0;
    // As std's test calls it: `&mut df_dx` coerces to the shadow `*mut f32`.
    let out_ = d_square(&x as *const f32, &mut df_dx, 1.0);
    assert_eq!(out, out_);
    assert_eq!(14.0, df_dx);
    let dx: f32 = 1.0;
    assert_eq!(t_square(&x, &dx), (49.0, 14.0));
}

#[autodiff_reverse(d_zach, Duplicated, Duplicated)]
#[autodiff_forward(t_zach, Dual, Dual)]
pub fn compute_zach_weight_error(w: *const f64, err: *mut f64) {
    let w = unsafe { *w };
    unsafe {
        *err = 1. - w * w;
    }
}

#[test]
fn output_through_a_mut_pointer() {
    // ADBench's BA, as Enzyme's Rust benchmark writes it.
    let (w, mut dw, mut err, mut derr) = (0.75f64, 0.0f64, 0.0f64, 1.0f64);
    d_zach(&w, &mut dw, &mut err, &mut derr);
    assert_eq!(err, 1.0 - 0.75 * 0.75);
    assert_eq!(dw, -1.5);
    assert_eq!(derr, 0.0, "the seed of an output is consumed, as for `&mut`");
    let (mut err, mut terr) = (0.0, 0.0);
    t_zach(&w, &0.5, &mut err, &mut terr);
    assert_eq!((err, terr), (1.0 - 0.75 * 0.75, -0.75));
}

// ---- reads and writes through pointers ----

ptr_case!(
    reads_through_pointers,
    [[0.3, -1.2, 2.5, 0.8], [1.0, 0.5, -0.25, 2.0]],
    fn f(x: *const f64, n: usize) -> f64 {
        let mut s = unsafe { *x } * 0.5;
        for i in 0..n {
            let v = unsafe { *x.add(i) };
            s += v * v.sin();
        }
        unsafe {
            let q = x.add(2);
            s += *q * *x.offset(1) + x.add(n - 1).read().exp();
            let back = q.offset(-2);
            s += *back * *q.sub(1);
            s += std::ptr::read(x.add(3));
        }
        s
    }
);

ptr_inplace_case!(
    read_write_loop,
    [[0.3, -1.2, 2.5, 0.8, 0.1], [1.0, 0.5, -0.25, 2.0, -1.5]],
    fn f(x: *mut f64, n: usize) {
        unsafe {
            for i in 0..n {
                *x.add(i) = (*x.add(i)).sin() * *x.add((i + 1) % n) + *x.add(i);
                *x.add(i) += 0.5 * *x.add(i) * *x;
            }
            *x.add(n - 1) *= *x.add(1);
            x.add(2).write(*x.add(2) * 3.0);
            std::ptr::write(x, (*x).tanh());
        }
    }
);

#[autodiff_reverse(d_f32s, Duplicated, Duplicated, Const)]
#[autodiff_forward(t_f32s, Dual, Dual, Const)]
fn f32s(x: *const f32, y: *mut f32, n: usize) {
    unsafe {
        for i in 0..n {
            *y.add(i) = (*x.add(i)).exp() * *x.add(n - 1 - i);
        }
    }
}

#[test]
fn f32_pointers() {
    let x = [0.5f32, -0.25, 1.5];
    let (mut y, mut ty) = ([0.0f32; 3], [0.0f32; 3]);
    let u = [1.0f32, 0.0, 0.0];
    t_f32s(x.as_ptr(), u.as_ptr(), y.as_mut_ptr(), ty.as_mut_ptr(), 3);
    let want = [1.5 * 0.5f32.exp(), 0.0, 1.5f32.exp()];
    for k in 0..3 {
        assert!((ty[k] - want[k]).abs() <= 1e-6 * want[k].abs().max(1.0), "{ty:?}");
    }
    // Reverse: the gradient of y[0] + y[2].
    let (mut dx, mut dy) = ([0.0f32; 3], [1.0f32, 0.0, 1.0]);
    d_f32s(x.as_ptr(), dx.as_mut_ptr(), y.as_mut_ptr(), dy.as_mut_ptr(), 3);
    let g = [1.5 * 0.5f32.exp() + 1.5f32.exp(), 0.0, 0.5f32.exp() + 0.5 * 1.5f32.exp()];
    for k in 0..3 {
        assert!((dx[k] - g[k]).abs() <= 1e-6 * g[k].abs().max(1.0), "{dx:?}");
    }
    assert_eq!(dy, [0.0; 3]);
}

// ---- `unsafe fn` helpers with pointer parameters ----

unsafe fn sqsum(x: *const f64, n: usize) -> f64 {
    let mut sum = 0.;
    for i in 0..n {
        let v = unsafe { *x.add(i) };
        sum += v * v;
    }
    sum
}

#[inline]
unsafe fn cross(a: *const f64, b: *const f64, out: *mut f64) {
    *out.add(0) = *a.add(1) * *b.add(2) - *a.add(2) * *b.add(1);
    *out.add(1) = *a.add(2) * *b.add(0) - *a.add(0) * *b.add(2);
    *out.add(2) = *a.add(0) * *b.add(1) - *a.add(1) * *b.add(0);
}

/// Scales `n` elements in place (a `*mut` pointer plus an offset, as FFTs pass halves).
unsafe fn rescale(data: *mut f64, n: usize, by: f64) {
    for i in 0..n {
        *data.add(i) = *data.add(i) * by;
    }
}

ptr_case!(
    unsafe_fn_helpers_called_in_a_loop_with_offsets,
    [[0.3, -1.2, 2.5, 0.8, 0.1, 0.9], [1.0, 0.5, -0.25, 2.0, -1.5, 0.7]],
    unsafe fn f(x: *const f64, n: usize) -> f64 {
        let mut s = 0.0;
        for k in 0..n - 1 {
            s += sqsum(x.add(k), 2).sqrt();
        }
        let mut w = [0.0; 3];
        for i in 0..3 {
            w[i] = *x.add(i) * s;
        }
        let mut c = [0.0; 3];
        cross(w.as_ptr(), x.add(n - 3), c.as_mut_ptr());
        let mut buf = vec![0.0; n];
        for i in 0..n {
            buf[i] = *x.add(i);
        }
        rescale(buf.as_mut_ptr().add(1), n - 2, *x);
        s + c[0] * c[1] - c[2] + sqsum(buf.as_ptr(), n)
    }
);

/// BA's `project`: pointers into the camera's parameters passed on with offsets.
unsafe fn radial_distort(rad_params: *const f64, proj: *mut f64) {
    let rsq = sqsum(proj, 2);
    let l = 1. + *rad_params.add(0) * rsq + *rad_params.add(1) * rsq * rsq;
    *proj.add(0) = *proj.add(0) * l;
    *proj.add(1) = *proj.add(1) * l;
}

#[autodiff_reverse(d_project, Duplicated, Duplicated, Duplicated)]
#[autodiff_forward(t_project, Dual, Dual, Dual)]
unsafe fn project(cam: *const f64, x: *const f64, proj: *mut f64) {
    let c = cam.add(3);
    let mut xo = [0.; 3];
    for i in 0..3 {
        xo[i] = *x.add(i) - *c.add(i);
    }
    let mut xcam = [0.; 3];
    cross(cam, xo.as_ptr(), xcam.as_mut_ptr());
    for i in 0..3 {
        xcam[i] += xo[i];
    }
    *proj.add(0) = xcam[0] / xcam[2];
    *proj.add(1) = xcam[1] / xcam[2];
    radial_distort(cam.add(6), proj);
}

#[test]
fn unsafe_derivatives_of_an_unsafe_fn() {
    // x = (cam[0..8], X[0..3]); F = proj.
    let split = |v: &[f64]| -> ([f64; 8], [f64; 3]) {
        let mut cam = [0.0; 8];
        cam.copy_from_slice(&v[..8]);
        let mut x = [0.0; 3];
        x.copy_from_slice(&v[8..]);
        (cam, x)
    };
    let case = common::Case {
        src: "project",
        shape: common::Shape::Slice,
        primal: &|v| {
            let (cam, x) = split(v);
            let mut proj = [0.0; 2];
            unsafe { project(cam.as_ptr(), x.as_ptr(), proj.as_mut_ptr()) };
            proj.to_vec()
        },
        jvp: &|v, u| {
            let ((cam, x), (dcam, dx)) = (split(v), split(u));
            let (mut proj, mut dproj) = ([0.0; 2], [0.0; 2]);
            unsafe {
                t_project(cam.as_ptr(), dcam.as_ptr(), x.as_ptr(), dx.as_ptr(), proj.as_mut_ptr(), dproj.as_mut_ptr())
            };
            (proj.to_vec(), dproj.to_vec())
        },
        vjp: &|v, w| {
            let (cam, x) = split(v);
            let (mut dcam, mut dx) = ([0.0; 8], [0.0; 3]);
            let mut proj = [0.0; 2];
            let mut dproj = [w[0], w[1]];
            unsafe {
                d_project(
                    cam.as_ptr(),
                    dcam.as_mut_ptr(),
                    x.as_ptr(),
                    dx.as_mut_ptr(),
                    proj.as_mut_ptr(),
                    dproj.as_mut_ptr(),
                )
            };
            let mut g = dcam.to_vec();
            g.extend(dx);
            (proj.to_vec(), g)
        },
    };
    common::check_compiled(&case, &[0.1, -0.2, 0.3, 0.05, -0.1, 0.2, 0.01, -0.02, 0.7, -0.4, 3.0]);
    common::check_compiled(&case, &[-0.3, 0.1, 0.2, -0.5, 0.4, 0.1, -0.03, 0.04, -0.2, 0.9, 4.0]);
}

// ---- pointers to arrays ----

#[autodiff_reverse(d_arrays, Duplicated, Duplicated)]
#[autodiff_forward(t_arrays, Dual, Dual)]
fn arrays(p: *const [f64; 3], out: *mut [f64; 2]) {
    unsafe {
        let a = &*p;
        (*out)[0] = a[0] * a[1] + (*p)[2] * norm2(&*p);
        (*out)[1] = (*p).get_unchecked(0).sin() + *(*p).get_unchecked(2) * a.iter().sum::<f64>();
        let o = &mut *out;
        o[1] *= o[0];
    }
}

fn norm2(v: &[f64; 3]) -> f64 {
    v.iter().map(|x| x * x).sum()
}

#[test]
fn array_pointers_and_an_output_array_pointer() {
    let case = common::Case {
        src: "arrays",
        shape: common::Shape::Slice,
        primal: &|v| {
            let p = [v[0], v[1], v[2]];
            let mut out = [0.0; 2];
            arrays(&p, &mut out);
            out.to_vec()
        },
        jvp: &|v, u| {
            let (p, dp) = ([v[0], v[1], v[2]], [u[0], u[1], u[2]]);
            let (mut out, mut dout) = ([0.0; 2], [0.0; 2]);
            t_arrays(&p, &dp, &mut out, &mut dout);
            (out.to_vec(), dout.to_vec())
        },
        vjp: &|v, w| {
            let p = [v[0], v[1], v[2]];
            let (mut dp, mut out, mut dout) = ([0.0; 3], [0.0; 2], [w[0], w[1]]);
            d_arrays(&p, &mut dp, &mut out, &mut dout);
            assert_eq!(dout, [0.0; 2]);
            (out.to_vec(), dp.to_vec())
        },
    };
    common::check_compiled(&case, &[0.3, -1.2, 2.5]);
    common::check_compiled(&case, &[1.0, 0.5, -0.25]);
}

// ---- slices from pointers, copies, swaps ----

ptr_case!(
    from_raw_parts,
    [[0.3, -1.2, 2.5, 0.8], [1.0, 0.5, -0.25, 2.0]],
    fn f(x: *const f64, n: usize) -> f64 {
        let s = unsafe { std::slice::from_raw_parts(x, n) };
        let tail = unsafe { std::slice::from_raw_parts(x.add(1), n - 1) };
        let a: f64 = s.iter().map(|v| v.sin() * v).sum();
        let mut b = 0.0;
        for i in 0..tail.len() {
            b += tail[i] * s[i];
        }
        a + b * s[n - 1]
    }
);

ptr_inplace_case!(
    from_raw_parts_mut,
    [[0.3, -1.2, 2.5, 0.8], [1.0, 0.5, -0.25, 2.0]],
    fn f(x: *mut f64, n: usize) {
        let s = unsafe { std::slice::from_raw_parts_mut(x, n) };
        for i in 1..s.len() {
            s[i] = s[i] * s[i - 1] + s[i].cos();
        }
        let head = unsafe { std::slice::from_raw_parts_mut(x, 2) };
        head[0] *= head[1];
    }
);

ptr_case!(
    copy_nonoverlapping_into_a_local_buffer,
    [[0.3, -1.2, 2.5, 0.8, 0.1], [1.0, 0.5, -0.25, 2.0, -1.5]],
    fn f(x: *const f64, n: usize) -> f64 {
        let mut buf = [0.0; 4];
        let mut v = vec![0.0; n];
        unsafe {
            std::ptr::copy_nonoverlapping(x.add(1), buf.as_mut_ptr(), 4);
            v.as_mut_ptr().copy_from_nonoverlapping(x, n);
            x.copy_to_nonoverlapping(buf.as_mut_ptr().add(2), 2);
        }
        for i in 0..4 {
            buf[i] = buf[i] * buf[i].tanh();
        }
        let mut s = 0.0;
        for i in 0..n {
            s += v[i] * buf[i % 4];
        }
        s
    }
);

ptr_inplace_case!(
    ptr_swap,
    [[0.3, -1.2, 2.5, 0.8, 0.1], [1.0, 0.5, -0.25, 2.0, -1.5]],
    unsafe fn f(x: *mut f64, n: usize) {
        std::ptr::swap(x, x.add(n - 1));
        for i in 0..n / 2 {
            std::ptr::swap(x.add(i), x.add(n - 1 - i));
            *x.add(i) *= *x.add(n - 1 - i);
        }
        // Swapping an element with itself changes nothing.
        std::ptr::swap(x.add(1), x.add(1));
        *x.add(1) = (*x.add(1)).sin() + *x;
    }
);

/// ADBench's FFT butterflies: `&mut *data.add(i)` references into the buffer.
unsafe fn butterflies(data: *mut f64, n: usize) {
    let mut wr = 1.0;
    let mut wi = 0.0;
    for i in (0..n).step_by(2) {
        let ax = &mut *data.add(i);
        let bx = &mut *data.add(i + 1);
        let tempr = *bx * wr - *ax * wi;
        *bx = *ax - tempr;
        *ax += tempr;
        let w = wr;
        wr = wr * 0.9 - wi * 0.3;
        wi = wi * 0.9 + w * 0.3;
    }
}

ptr_inplace_case!(
    references_into_a_pointer_s_buffer,
    [[0.3, -1.2, 2.5, 0.8, 0.1, 0.9], [1.0, 0.5, -0.25, 2.0, -1.5, 0.7]],
    unsafe fn f(x: *mut f64, n: usize) {
        butterflies(x, n);
        butterflies(x.add(2), n - 2);
        let first = &mut *x;
        *first = first.sin();
    }
);

/// `get_unchecked(i)` and `get_unchecked_mut(i)` on slices are indexing.
#[autodiff_reverse(d_unchecked, Duplicated, Duplicated, Active)]
#[autodiff_forward(t_unchecked, Dual, Dual, Dual)]
fn unchecked(x: &[f64], y: &mut [f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        unsafe {
            s += *x.get_unchecked(i) * x.get_unchecked(i).cos();
            *y.get_unchecked_mut(i) = s * *y.get_unchecked(i);
        }
    }
    s
}

#[test]
fn get_unchecked_is_indexing() {
    // x and y together are the input; F = (result, final y).
    let case = common::Case {
        src: "unchecked",
        shape: common::Shape::Slice,
        primal: &|v| {
            let mut y = v[3..].to_vec();
            let r = unchecked(&v[..3], &mut y);
            let mut out = vec![r];
            out.extend(y);
            out
        },
        jvp: &|v, u| {
            let (mut y, mut dy) = (v[3..].to_vec(), u[3..].to_vec());
            let (r, dr) = t_unchecked(&v[..3], &u[..3], &mut y, &mut dy);
            let (mut out, mut dout) = (vec![r], vec![dr]);
            out.extend(y);
            dout.extend(dy);
            (out, dout)
        },
        vjp: &|v, w| {
            let (mut dx, mut y, mut dy) = (vec![0.0; 3], v[3..].to_vec(), w[1..].to_vec());
            let r = d_unchecked(&v[..3], &mut dx, &mut y, &mut dy, w[0]);
            let mut out = vec![r];
            out.extend(y);
            dx.extend(dy);
            (out, dx)
        },
    };
    common::check_compiled(&case, &[0.3, -1.2, 2.5, 0.8, 0.1, 0.9]);
}

// ---- second order and batched forward mode ----

unsafe fn energy(x: *const f64, n: usize) -> f64 {
    let mut e = 0.0;
    for i in 0..n - 1 {
        let d = *x.add(i + 1) - *x.add(i);
        e += d * d * (*x.add(i)).cos();
    }
    e
}

#[cotan::hvp(pointers_hvp)]
#[cotan::autodiff_reverse(pointers_grad, Duplicated, Active)]
fn through_pointers(x: &[f64]) -> f64 {
    let mut buf = vec![0.0; x.len()];
    unsafe {
        std::ptr::copy_nonoverlapping(x.as_ptr(), buf.as_mut_ptr(), x.len());
        rescale(buf.as_mut_ptr().add(1), x.len() - 1, 0.5);
        energy(buf.as_ptr(), x.len()) + energy(x.as_ptr().add(1), x.len() - 1)
    }
}

#[test]
fn second_order_through_pointer_helpers() {
    let x = [0.3, -1.2, 2.5, 0.8, 0.1];
    let v = [0.5, -0.2, 1.0, 0.3, -0.7];
    let (mut g, mut hv) = ([0.0; 5], [0.0; 5]);
    let value = pointers_hvp(&x, &v, &mut g, &mut hv);
    assert_eq!(value, through_pointers(&x));
    let grad = |x: &[f64]| {
        let mut g = vec![0.0; x.len()];
        pointers_grad(x, &mut g, 1.0);
        g
    };
    // Central differences of the gradient with one Richardson step (error O(h⁴)).
    let d = |h: f64| -> Vec<f64> {
        let xp: Vec<f64> = x.iter().zip(&v).map(|(a, b)| a + h * b).collect();
        let xm: Vec<f64> = x.iter().zip(&v).map(|(a, b)| a - h * b).collect();
        grad(&xp).iter().zip(grad(&xm)).map(|(p, m)| (p - m) / (2.0 * h)).collect()
    };
    let (a, b) = (d(1e-4), d(5e-5));
    for k in 0..5 {
        let want = (4.0 * b[k] - a[k]) / 3.0;
        assert!((hv[k] - want).abs() <= 1e-6 * want.abs().max(1.0), "hv[{k}]: {} vs {want}", hv[k]);
        assert_eq!(g[k], grad(&x)[k]);
    }
    // The gradient itself against finite differences.
    common::check_compiled(
        &common::Case {
            src: "through_pointers",
            shape: common::Shape::Slice,
            primal: &|x| vec![through_pointers(x)],
            jvp: &|x, u| {
                let mut g = vec![0.0; x.len()];
                let y = pointers_grad(x, &mut g, 1.0);
                (vec![y], vec![g.iter().zip(u).map(|(a, b)| a * b).sum()])
            },
            vjp: &|x, w| {
                let mut g = vec![0.0; x.len()];
                let y = pointers_grad(x, &mut g, w[0]);
                (vec![y], g)
            },
        },
        &x,
    );
}

#[autodiff_forward(batched, 2, Dual, Dual)]
#[autodiff_forward(single, Dual, Dual)]
fn three(x: *const f64) -> f64 {
    unsafe { (*x).sin() * *x.add(1) + sqsum(x.add(1), 2) * *x.add(2) }
}

#[test]
fn batched_forward_mode_through_pointers() {
    let x = [0.3, -1.2, 2.5];
    let (u, v) = ([1.0, 0.5, -0.25], [0.0, 2.0, 1.0]);
    let [y, t0, t1] = batched(x.as_ptr(), u.as_ptr(), v.as_ptr());
    assert_eq!(y, three(x.as_ptr()));
    let (_, s0) = single(x.as_ptr(), u.as_ptr());
    let (_, s1) = single(x.as_ptr(), v.as_ptr());
    assert!((t0 - s0).abs() <= 1e-14 * s0.abs().max(1.0) && (t1 - s1).abs() <= 1e-14 * s1.abs().max(1.0));
    // And the single direction against finite differences.
    let fd = common::fd_directional(&|x| vec![three(x.as_ptr())], &x, &u, 1e-4)[0];
    assert!((s0 - fd).abs() <= common::FD_TOL * fd.abs().max(1.0), "{s0} vs {fd}");
}

// ---- pointers made in the function, and what the errors suggest instead ----

/// Pointers cast from references (`&mut a as *mut [f64; 2]`, `&x[i] as *const f64`).
unsafe fn pair_out(x: *const f64, out: *mut [f64; 2]) {
    (*out)[0] = *x * *x.add(1);
    (*out)[1] = (*x).exp();
}

ptr_case!(
    pointers_cast_from_references,
    [[0.3, -1.2, 2.5, 0.8], [1.0, 0.5, -0.25, 2.0]],
    fn f(x: *const f64, n: usize) -> f64 {
        let xs = unsafe { std::slice::from_raw_parts(x, n) };
        let mut pair = [0.0; 2];
        unsafe { pair_out(&xs[1] as *const f64, &mut pair as *mut [f64; 2]) };
        let p = xs.as_ptr() as *const [f64; 2];
        pair[0] * pair[1] + unsafe { (*p)[1] * (*(x as *const f64)) }
    }
);

// What the error about moving a pointer variable says to write instead: an index.
ptr_case!(
    an_index_instead_of_a_moving_pointer,
    [[0.3, -1.2, 2.5, 0.8], [1.0, 0.5, -0.25, 2.0]],
    fn f(x: *const f64, n: usize) -> f64 {
        let mut at = 0;
        let mut s = 0.0;
        while at < n {
            s += unsafe { *x.add(at) } * (at as f64 + 1.0);
            at += 2;
        }
        s
    }
);

/// What the error about two pointers into one buffer says to write instead: one pointer
/// and the offsets.
unsafe fn combine(p: *mut f64, i: usize, j: usize, n: usize) {
    let (a, b) = (p.add(i), p.add(j));
    for k in 0..n {
        let (x, y) = (*a.add(k), *b.add(k));
        *a.add(k) = x + y * x.sin();
        *b.add(k) = x - 0.5 * y;
    }
}

ptr_inplace_case!(
    one_pointer_and_offsets_instead_of_two_pointers,
    [[0.3, -1.2, 2.5, 0.8, 0.1, 0.9], [1.0, 0.5, -0.25, 2.0, -1.5, 0.7]],
    unsafe fn f(x: *mut f64, n: usize) {
        combine(x, 0, n / 2, n / 2);
        combine(x, 1, 3, 2);
    }
);

// ---- unions ----

#[derive(Clone, Copy)]
#[repr(C)]
union Bits {
    f: f64,
    i: u64,
}

/// A union read in an `unsafe` block: read as a struct whose float field carries the
/// derivative.
#[autodiff_reverse(d_union_read, Duplicated, Active, Active)]
#[autodiff_forward(t_union_read, Dual, Dual, Dual)]
fn union_read(u: &Bits, x: f64) -> f64 {
    unsafe { u.f * u.f * x + (u.i & 1) as f64 }
}

#[autodiff_forward(t_union_value, Const, Dual, Dual)]
#[autodiff_reverse(d_union_value, Const, Active, Active)]
fn union_value(u: Bits, x: f64) -> f64 {
    unsafe { u.f * x.sin() }
}

#[test]
fn unions_read_as_structs_of_numbers() {
    let u = Bits { f: 1.5 };
    let bit = (1.5f64.to_bits() & 1) as f64;
    let mut du = Bits { f: 0.0 };
    let (v, dx) = d_union_read(&u, &mut du, 2.0, 1.0);
    assert_eq!(v, 1.5 * 1.5 * 2.0 + bit);
    assert_eq!((unsafe { du.f }, dx), (2.0 * 1.5 * 2.0, 1.5 * 1.5));
    let du = Bits { f: 1.0 };
    assert_eq!(t_union_read(&u, &du, 2.0, 0.0), (v, 2.0 * 1.5 * 2.0));
    assert_eq!(t_union_value(u, 0.5, 1.0), (1.5 * 0.5f64.sin(), 1.5 * 0.5f64.cos()));
    assert_eq!(d_union_value(u, 0.5, 1.0), (1.5 * 0.5f64.sin(), 1.5 * 0.5f64.cos()));
}

// ---- what the other errors suggest, working ----

unsafe fn square_into(x: f64, out: *mut f64) -> f64 {
    *out = x * x;
    *out * 2.0
}

/// A local number a helper writes through a pointer: a one-element array.
#[autodiff_reverse(d_local_cell, Active, Active)]
#[autodiff_forward(t_local_cell, Dual, Dual)]
fn local_cell(x: f64) -> f64 {
    let mut s = [0.0];
    let r = unsafe { square_into(x, s.as_mut_ptr()) };
    r + s[0] * x
}

/// A pointer the derivative writes through, marked `Duplicated` (its shadow is given).
#[autodiff_reverse(d_through_out, Active, Duplicated, Active)]
fn through_out(x: f64, out: *mut f64) -> f64 {
    unsafe { square_into(x, out) }
}

/// A custom derivative takes slices: a pointer's memory is passed as one.
#[cotan::custom_derivative(forward = total_fwd, reverse = total_rev)]
fn total(x: &[f64]) -> f64 {
    x.iter().sum()
}

fn total_fwd(x: &[f64], dx: &[f64]) -> (f64, f64) {
    (total(x), dx.iter().sum())
}

fn total_rev(x: &[f64], dx: &mut [f64], dret: f64) -> f64 {
    for d in dx.iter_mut() {
        *d += dret;
    }
    total(x)
}

/// Two pointers into one buffer that nothing writes through.
unsafe fn dot_ptr(a: *const f64, b: *const f64, n: usize) -> f64 {
    let mut s = 0.0;
    for k in 0..n {
        s += *a.add(k) * *b.add(k);
    }
    s
}

ptr_case!(
    slices_of_pointers_to_custom_derivatives_and_shared_pointers_to_one_call,
    [[0.3, -1.2, 2.5, 0.8], [1.0, 0.5, -0.25, 2.0]],
    fn f(x: *const f64, n: usize) -> f64 {
        let t = total(unsafe { std::slice::from_raw_parts(x, n) });
        t * t + unsafe { dot_ptr(x, x.add(1), n - 1) }
    }
);

#[test]
fn suggested_rewrites_work() {
    let x = 1.5;
    let (v, dx) = d_local_cell(x, 1.0);
    assert_eq!(v, local_cell(x));
    assert_eq!((v, dx), (2.0 * x * x + x * x * x, 4.0 * x + 3.0 * x * x));
    assert_eq!(t_local_cell(x, 1.0), (v, 4.0 * x + 3.0 * x * x));
    let (mut out, mut dout) = (0.0, 0.0);
    let (v, dx) = d_through_out(x, &mut out, &mut dout, 1.0);
    assert_eq!((v, out, dx, dout), (2.0 * x * x, x * x, 4.0 * x, 0.0));
}

// ---- split reverse mode ----

#[cotan::autodiff_split(weighted_forward, weighted_reverse, Duplicated, Const, Active)]
unsafe fn weighted(x: *const f64, n: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        s += (*x.add(i)).powi(2) * (i as f64 + 1.0);
    }
    s
}

#[test]
fn split_reverse_mode_of_an_unsafe_fn() {
    let x = [0.5, -1.0, 2.0];
    let (value, record) = unsafe { weighted_forward(x.as_ptr(), 3) };
    assert_eq!(value, unsafe { weighted(x.as_ptr(), 3) });
    for seed in [1.0, -2.0] {
        let mut dx = [0.0; 3];
        unsafe { weighted_reverse(&record, dx.as_mut_ptr(), seed) };
        assert_eq!(dx, [seed * 2.0 * 0.5, seed * 2.0 * -1.0 * 2.0, seed * 2.0 * 2.0 * 3.0]);
    }
}

// ---- pointers in closures, iterator chains and slices made from them ----

ptr_case!(
    pointers_in_closures_and_iterator_chains,
    [[0.3, -1.2, 2.5, 0.8], [1.0, 0.5, -0.25, 2.0]],
    fn f(x: *const f64, n: usize) -> f64 {
        let at = |i: usize| unsafe { *x.add(i) };
        let s: f64 = (0..n).map(|i| unsafe { (*x.add(i)).sin() }).sum();
        s * at(0) + at(n - 1) * at(1)
    }
);

ptr_inplace_case!(
    slices_of_pointers_iterated_and_split,
    [[0.3, -1.2, 2.5, 0.8], [1.0, 0.5, -0.25, 2.0]],
    fn f(x: *mut f64, n: usize) {
        let s = unsafe { std::slice::from_raw_parts_mut(x, n) };
        for e in s.iter_mut() {
            *e = *e * e.cos();
        }
        let (a, b) = s.split_at_mut(n / 2);
        for i in 0..a.len() {
            a[i] += b[i] * a[i];
        }
    }
);

// ---- the other pointer cases of std's type-analysis tests ----

mod std_type_analysis {
    use cotan::autodiff_reverse;
    use std::ptr;

    #[autodiff_reverse(d_square, Duplicated, Active)]
    fn callee(x: *mut f32) -> f32 {
        unsafe { *x * *x }
    }

    #[allow(dead_code)]
    union MyUnion {
        f: f32,
        i: i32,
    }

    #[autodiff_reverse(d_union_square, Duplicated, Active)]
    fn union_callee(x: &MyUnion) -> f32 {
        unsafe { x.f * x.f }
    }

    #[autodiff_reverse(d_test_memcpy, Duplicated, Active)]
    fn test_memcpy(input: &[f64; 8]) -> f64 {
        let mut local_data = [0.0f64; 8];
        unsafe {
            ptr::copy_nonoverlapping(input.as_ptr(), local_data.as_mut_ptr(), 8);
        }
        let mut result = 0.0;
        for i in 0..8 {
            result += local_data[i] * local_data[i];
        }
        result
    }

    #[test]
    fn mut_pointer_union_and_memcpy() {
        let mut x: f32 = 7.0;
        let out = callee(&mut x as *mut f32);
        let mut df_dx: f32 = 0.0;
        assert_eq!(d_square(&mut x as *mut f32, &mut df_dx, 1.0), out);
        assert_eq!(df_dx, 14.0);

        let u = MyUnion { f: 7.0 };
        let mut du = MyUnion { f: 0.0 };
        assert_eq!(d_union_square(&u, &mut du, 1.0), union_callee(&u));
        assert_eq!(unsafe { du.f }, 14.0);

        let input = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
        let mut d_input = [0.0; 8];
        assert_eq!(d_test_memcpy(&input, &mut d_input, 1.0), test_memcpy(&input));
        assert_eq!(d_input, [2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0]);
    }
}

// ---- recursion through pointers, as the unsafe variant of ADBench's FFT ----

/// Swaps pairs into bit-reversed order (interleaved complex numbers).
unsafe fn reorder(data: *mut f64, len: usize) {
    let mut j = 1;
    for i in (1..2 * len).step_by(2) {
        if j > i {
            std::ptr::swap(data.add(j - 1), data.add(i - 1));
            std::ptr::swap(data.add(j), data.add(i));
        }
        let mut m = len;
        while m >= 2 && j > m {
            j -= m;
            m >>= 1;
        }
        j += m;
    }
}

/// Recursive on halves given as a pointer and an offset pointer.
unsafe fn combine_halves(data: *mut f64, n: usize) {
    if n == 1 {
        return;
    }
    combine_halves(data, n / 2);
    combine_halves(data.add(n), n / 2);
    let mut wr = 1.0;
    let mut wi = 0.0;
    for i in (0..n).step_by(2) {
        let re = &mut *data.add(i);
        let im = &mut *data.add(i + 1);
        let ore = *data.add(i + n);
        let oim = *data.add(i + n + 1);
        let (tr, ti) = (ore * wr - oim * wi, ore * wi + oim * wr);
        *data.add(i + n) = *re - tr;
        *data.add(i + n + 1) = *im - ti;
        *re += tr;
        *im += ti;
        let w = wr;
        wr = wr * 0.8 - wi * 0.6;
        wi = wi * 0.8 + w * 0.6;
    }
}

ptr_inplace_case!(
    recursion_through_pointers,
    [[0.3, -1.2, 2.5, 0.8, 0.1, 0.9, -0.4, 1.5], [1.0, 0.5, -0.25, 2.0, -1.5, 0.7, 0.2, -0.9]],
    unsafe fn f(x: *mut f64, n: usize) {
        reorder(x, n / 2);
        combine_halves(x, n / 2);
        for i in 0..n {
            *x.add(i) = (*x.add(i)).tanh();
        }
    }
);

/// Second order of an `unsafe fn`: its Hessian function is `unsafe` too.
#[cotan::hessian(unsafe_hessian)]
unsafe fn unsafe_energy(x: &[f64]) -> f64 {
    energy(x.as_ptr(), x.len())
}

#[test]
fn hessian_of_an_unsafe_fn() {
    let x = [0.3, -1.2, 2.5];
    let (mut g, mut h) = ([0.0; 3], [0.0; 9]);
    let v = unsafe { unsafe_hessian(&x, &mut g, &mut h) };
    assert_eq!(v, unsafe { unsafe_energy(&x) });
    // Each column against finite differences of the gradient.
    for j in 0..3 {
        let grad_at = |d: f64| {
            let mut y = x;
            y[j] += d;
            let (mut g, mut h) = ([0.0; 3], [0.0; 9]);
            unsafe { unsafe_hessian(&y, &mut g, &mut h) };
            g
        };
        let (p, m) = (grad_at(1e-5), grad_at(-1e-5));
        for i in 0..3 {
            let fd = (p[i] - m[i]) / 2e-5;
            assert!((h[i * 3 + j] - fd).abs() <= 1e-5 * fd.abs().max(1.0), "h[{i}][{j}] = {} vs {fd}", h[i * 3 + j]);
        }
    }
}

/// A function generic over its float type, with pointers to that type.
#[autodiff_reverse(d_generic_ptr, Duplicated, Const, Active)]
#[autodiff_forward(t_generic_ptr, Dual, Const, Dual)]
fn generic_ptr<T: num_traits::Float>(x: *const T, n: usize) -> T {
    let mut s = T::zero();
    for i in 0..n {
        let v = unsafe { *x.add(i) };
        s = s + v * v.sin();
    }
    s
}

#[test]
fn pointers_in_generic_float_code() {
    let x = [0.5f32, -1.0, 2.0];
    let mut dx = [0.0f32; 3];
    let v = d_generic_ptr(x.as_ptr(), dx.as_mut_ptr(), 3, 1.0);
    assert_eq!(v, generic_ptr(x.as_ptr(), 3));
    for k in 0..3 {
        let want = x[k].sin() + x[k] * x[k].cos();
        assert!((dx[k] - want).abs() <= 1e-6, "{dx:?}");
    }
    let u = [0.0f64, 1.0, 0.0];
    let xd = [0.5f64, -1.0, 2.0];
    let (_, t) = t_generic_ptr(xd.as_ptr(), u.as_ptr(), 3);
    assert!((t - ((-1.0f64).sin() - (-1.0f64).cos())).abs() <= 1e-15);
}

/// A constant struct read through `*const S` (ADBench's GMM: `wishart: *const Wishart`),
/// its fields read (`(*w).gamma`) and the struct passed on by value (`*w`).
#[derive(Clone, Copy)]
#[repr(C)]
pub struct Wishart {
    pub gamma: f64,
    pub m: i32,
}

unsafe fn prior(w: Wishart, x: f64) -> f64 {
    w.gamma * x * x + w.m as f64
}

#[cotan::autodiff_reverse(d_wishart_loss, Active, Const, Active)]
#[cotan::autodiff_forward(t_wishart_loss, Dual, Const, Dual)]
unsafe fn wishart_loss(x: f64, w: *const Wishart) -> f64 {
    prior(*w, x) + (*w).gamma * x.sin()
}

#[test]
fn constant_structs_behind_pointers() {
    let w = Wishart { gamma: 1.5, m: 2 };
    for x in [0.7, -1.3] {
        let (v, dx) = unsafe { d_wishart_loss(x, &w, 1.0) };
        let (v2, t) = unsafe { t_wishart_loss(x, 1.0, &w) };
        let h = 1e-6;
        let fd = unsafe { (wishart_loss(x + h, &w) - wishart_loss(x - h, &w)) / (2.0 * h) };
        assert_eq!(v, unsafe { wishart_loss(x, &w) });
        assert_eq!(v2, v);
        assert!((dx - fd).abs() < 1e-7 * fd.abs().max(1.0), "{dx} vs {fd}");
        assert_eq!(t, dx);
    }
}

// ---- pointer variables pointed elsewhere in their buffer (ADBench's LSTM) ----

ptr_case!(
    pointer_variables_move_along_their_buffer,
    [[0.3, -1.2, 2.5, 0.8, 0.1, 0.9, -0.4, 1.5], [1.0, 0.5, -0.25, 2.0, -1.5, 0.7, 0.2, -0.9]],
    unsafe fn f(x: *const f64, n: usize) -> f64 {
        let b = 2;
        let mut input = x;
        let mut s = 0.0;
        for t in (0..n - b).step_by(b) {
            let ygold = x.add(t + b);
            s += (*input).sin() * *input.add(1) + *ygold * *ygold.add(1);
            input = ygold;
        }
        // Backwards with `sub` and `offset`, and chosen in branches.
        let mut p = x.add(n - 1);
        let mut k = 0;
        while k < n - 1 {
            s += *p * *p.sub(1);
            if k % 3 == 0 {
                p = p.offset(-1);
            } else {
                let q = input;
                p = q.sub(1);
                input = p;
            }
            k += 2;
        }
        let x = x;
        let mut r = x;
        r = r.add(n / 2);
        s + *r * *input
    }
);

ptr_inplace_case!(
    writes_through_a_pointer_variable,
    [[0.3, -1.2, 2.5, 0.8, 0.1, 0.9, -0.4], [1.0, 0.5, -0.25, 2.0, -1.5, 0.7, 0.2]],
    unsafe fn f(x: *mut f64, n: usize) {
        let mut x = x;
        let end = x.add(n - 1);
        let mut p = x;
        for _ in 0..n - 1 {
            let next = p.add(1);
            *next = (*next * *p).sin() + *next;
            p = next;
        }
        *end += (*x).powi(2);
        x = x.add(1);
        *x *= *end;
    }
);

/// One step of an LSTM-like cell: reads `b` inputs through `input`, updates `state` and
/// writes a prediction to `out`.
unsafe fn cell(w: *const f64, state: *mut f64, input: *const f64, out: *mut f64, b: usize) {
    for i in 0..b {
        let gate = 1.0 / (1.0 + (-(*w.add(i) * *input.add(i) + *state.add(i))).exp());
        let cand = (*w.add(b + i) * *input.add(i)).tanh();
        *state.add(i) = *state.add(i) * gate + cand * (1.0 - gate);
        *out.add(i) = (*state.add(i)).tanh() * *w.add(i);
    }
}

/// ADBench's LSTM loss as its unsafe variant reads its sequence: `input` moves to the
/// gold output of the step before.
unsafe fn sequence_loss(w: *const f64, sequence: *const f64, c: usize, b: usize) -> f64 {
    let mut state = vec![0.0; b];
    let mut ypred = vec![0.0; b];
    let mut total = 0.0;
    let mut count = 0;
    let mut input = sequence;
    for t in (0..(c - 1) * b).step_by(b) {
        cell(w, state.as_mut_ptr(), input, ypred.as_mut_ptr(), b);
        let mut lse = 0.0;
        for i in 0..b {
            lse += ypred[i].exp();
        }
        let lse = lse.ln();
        let ygold = sequence.add(t + b);
        for i in 0..b {
            total += *ygold.add(i) * (ypred[i] - lse);
        }
        count += b;
        input = ygold;
    }
    -total / count as f64
}

ptr_case!(
    lstm_reads_its_sequence_through_a_moving_pointer,
    [[0.3, -1.2, 2.5, 0.8, 0.1, 0.9, -0.4, 1.5, 0.6, -0.3], [1.0, 0.5, -0.25, 2.0, -1.5, 0.7, 0.2, -0.9, 0.4, 1.1]],
    unsafe fn f(x: *const f64, n: usize) -> f64 {
        let b = 2;
        sequence_loss(x, x.add(2 * b), (n - 2 * b) / b, b)
    }
);

/// Second order and batched forward mode through a moving pointer.
unsafe fn chain_energy(x: *const f64, n: usize) -> f64 {
    let mut e = 0.0;
    let mut p = x;
    for _ in 0..n - 1 {
        let q = p.add(1);
        e += (*q - *p).powi(2) * (*p).cos();
        p = q;
    }
    e
}

#[cotan::hvp(moving_hvp)]
#[cotan::autodiff_reverse(moving_grad, Duplicated, Active)]
fn moving_objective(x: &[f64]) -> f64 {
    let mut p = x.as_ptr();
    let mut s = 0.0;
    for i in 0..x.len() {
        s += unsafe { *p } * x[x.len() - 1 - i];
        if i + 1 < x.len() {
            p = unsafe { p.add(1) };
        }
    }
    s + unsafe { chain_energy(x.as_ptr(), x.len()) }
}

#[test]
fn second_order_through_a_moving_pointer() {
    let x = [0.3, -1.2, 2.5, 0.8, 0.1];
    let v = [0.5, -0.2, 1.0, 0.3, -0.7];
    let (mut g, mut hv) = ([0.0; 5], [0.0; 5]);
    let value = moving_hvp(&x, &v, &mut g, &mut hv);
    assert_eq!(value, moving_objective(&x));
    let grad = |x: &[f64]| {
        let mut g = vec![0.0; x.len()];
        moving_grad(x, &mut g, 1.0);
        g
    };
    // Central differences of the gradient with one Richardson step (error O(h⁴)).
    let d = |h: f64| -> Vec<f64> {
        let xp: Vec<f64> = x.iter().zip(&v).map(|(a, b)| a + h * b).collect();
        let xm: Vec<f64> = x.iter().zip(&v).map(|(a, b)| a - h * b).collect();
        grad(&xp).iter().zip(grad(&xm)).map(|(p, m)| (p - m) / (2.0 * h)).collect()
    };
    let (a, b) = (d(1e-4), d(5e-5));
    for k in 0..5 {
        let want = (4.0 * b[k] - a[k]) / 3.0;
        assert!((hv[k] - want).abs() <= 1e-6 * want.abs().max(1.0), "hv[{k}]: {} vs {want}", hv[k]);
        assert_eq!(g[k], grad(&x)[k]);
    }
}

#[autodiff_forward(moving_batched, 2, Dual, Const, Dual)]
#[autodiff_forward(moving_single, Dual, Const, Dual)]
unsafe fn moving_sum(x: *const f64, n: usize) -> f64 {
    let mut p = x;
    let mut s = 0.0;
    for _ in 0..n {
        s += (*p).sin() * *x;
        // (One past the end after the last element, as Rust allows.)
        p = p.add(1);
    }
    s + chain_energy(x, n)
}

#[test]
fn batched_forward_mode_through_a_moving_pointer() {
    let x = [0.3, -1.2, 2.5, 0.8];
    let (u, v) = ([1.0, 0.5, -0.25, 0.3], [0.0, 2.0, 1.0, -1.0]);
    let [y, t0, t1] = unsafe { moving_batched(x.as_ptr(), u.as_ptr(), v.as_ptr(), 4) };
    assert_eq!(y, unsafe { moving_sum(x.as_ptr(), 4) });
    let (_, s0) = unsafe { moving_single(x.as_ptr(), u.as_ptr(), 4) };
    let (_, s1) = unsafe { moving_single(x.as_ptr(), v.as_ptr(), 4) };
    assert!((t0 - s0).abs() <= 1e-14 * s0.abs().max(1.0) && (t1 - s1).abs() <= 1e-14 * s1.abs().max(1.0));
    let fd = common::fd_directional(&|x| vec![unsafe { moving_sum(x.as_ptr(), 4) }], &x, &u, 1e-4)[0];
    assert!((s0 - fd).abs() <= common::FD_TOL * fd.abs().max(1.0), "{s0} vs {fd}");
}
