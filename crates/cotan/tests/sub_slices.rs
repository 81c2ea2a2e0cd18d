//! Sub-slices: `&x[a..b]`, `&x[a..]`, `&mut x[..k]`, `split_at`/`split_at_mut`, the items
//! of `chunks`/`chunks_mut`/`chunks_exact`/`windows`, read, written, iterated and passed
//! to helpers (recursion included). Every case is checked against finite differences, the
//! dot-product test and (without calls) the IR interpreter; second order through
//! sub-slices against finite differences of the gradient.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

mod common;

fn norm2(v: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..v.len() {
        s += v[i] * v[i];
    }
    s
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Writes through a `&mut` sub-slice it was given.
fn damp(v: &mut [f64], k: f64) {
    for e in v.iter_mut() {
        *e = (*e * k).tanh() + 0.5 * *e;
    }
}

/// Combines two halves in place (both `&mut`, split off one buffer).
fn butterfly(a: &mut [f64], b: &mut [f64]) {
    for i in 0..a.len() {
        let (p, q) = (a[i], b[i]);
        a[i] = p + q * p.sin();
        b[i] = p - 0.5 * q;
    }
}

/// In place and recursive on halves, like a radix-2 FFT.
fn mix(x: &mut [f64]) {
    let n = x.len();
    if n == 1 {
        x[0] = x[0].cos() + x[0];
        return;
    }
    let (lo, hi) = x.split_at_mut(n / 2);
    mix(lo);
    mix(hi);
    butterfly(lo, hi);
}

slice_case!(
    local_sub_slices_read_and_iterated,
    [[0.3, -1.2, 2.5, 0.8, 0.1], [1.0, 0.5, -0.25, 2.0, -1.5]],
    fn f(x: &[f64]) -> f64 {
        let n = x.len();
        let mid = &x[1..n - 1];
        let mut s = 0.0;
        for i in 0..mid.len() {
            s += mid[i] * mid[i].sin();
        }
        let tail: f64 = x[2..].iter().map(|v| v * v).sum();
        let head = &x[..=1];
        let inner = &mid[1..];
        s + tail * head[0] + head[1].exp() + inner[inner.len() - 1] * x[0]
    }
);

slice_case!(
    sub_slices_passed_to_helpers,
    [[0.3, -1.2, 2.5, 0.8, 0.1, 0.9], [1.0, 0.5, -0.25, 2.0, -1.5, 0.7]],
    fn f(x: &[f64]) -> f64 {
        let d = 2;
        let mut s = 0.0;
        for i in 0..x.len() / d {
            // A row of a row-major matrix, as ADBench's GMM writes it.
            let xi = &x[i * d..(i + 1) * d];
            s += norm2(xi).sqrt() * x[0];
        }
        // Two overlapping sub-slices of one buffer in one call.
        s + dot(&x[0..3], &x[1..4]) + norm2(&x[4..])
    }
);

slice_case!(
    written_sub_slices_of_a_local_buffer,
    [[0.3, -1.2, 2.5, 0.8], [1.0, 0.5, -0.25, 2.0]],
    fn f(x: &[f64]) -> f64 {
        let n = x.len();
        let mut buf = vec![0.0; 2 * n];
        for k in 0..n {
            let w = &mut buf[2 * k..2 * k + 2];
            w[0] += x[k] * x[k];
            w[1] = w[0].sin() + x[(k + 1) % n];
        }
        damp(&mut buf[1..n], x[0]);
        let (a, b) = buf.split_at(n);
        dot(a, b) + a[0] * b[n - 1]
    }
);

slice_case!(
    chunks_and_windows,
    [[0.3, -1.2, 2.5, 0.8, 0.1, 0.9, 1.3], [1.0, 0.5, -0.25, 2.0, -1.5, 0.7, 0.2]],
    fn f(x: &[f64]) -> f64 {
        let mut s = 0.0;
        for c in x.chunks(3) {
            s += norm2(c) * c[0];
        }
        for c in x.chunks_exact(2) {
            s += c[0] * c[1];
        }
        for w in x.windows(3) {
            s += (w[0] - w[2]).powi(2) * w[1];
        }
        s
    }
);

inplace_case!(
    split_at_mut_and_recursion,
    [[0.3, -1.2, 2.5, 0.8, 0.1, 0.9, -0.4, 1.5], [1.0, 0.5, -0.25, 2.0, -1.5, 0.7, 0.2, -0.9]],
    fn f(x: &mut [f64]) {
        mix(x);
        let n = x.len();
        let (a, b) = x.split_at_mut(n / 2);
        for i in 0..a.len() {
            a[i] += b[i] * a[i];
        }
        damp(&mut x[..3], 0.7);
        for c in x.chunks_mut(3) {
            c[0] = c[0] * c[c.len() - 1];
        }
    }
);

/// Second order through sub-slices and calls.
#[cotan::hvp(slices_hvp)]
#[cotan::autodiff_reverse(slices_grad, Duplicated, Active)]
fn slices_objective(x: &[f64]) -> f64 {
    let mut y = x.to_vec();
    mix(&mut y[..4]);
    let mut s = 0.0;
    for c in y.chunks(2) {
        s += norm2(c).sqrt();
    }
    s + dot(&x[..2], &y[2..4])
}

#[test]
fn second_order_through_sub_slices() {
    let x = [0.3, -1.2, 2.5, 0.8, 0.1];
    let v = [0.5, -0.2, 1.0, 0.3, -0.7];
    let (mut g, mut hv) = ([0.0; 5], [0.0; 5]);
    let value = slices_hvp(&x, &v, &mut g, &mut hv);
    assert_eq!(value, slices_objective(&x));
    let grad = |x: &[f64]| {
        let mut g = vec![0.0; x.len()];
        slices_grad(x, &mut g, 1.0);
        g
    };
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

#[test]
fn out_of_range_sub_slices_panic_as_in_rust() {
    #[cotan::autodiff_reverse(d_take, Duplicated, Const, Active)]
    fn take(x: &[f64], k: usize) -> f64 {
        x[1..k].iter().sum()
    }
    let x = [1.0, 2.0, 3.0];
    let mut g = [0.0; 3];
    assert_eq!(d_take(&x, &mut g, 3, 1.0), 5.0);
    assert_eq!(g, [0.0, 1.0, 1.0]);
    let r = std::panic::catch_unwind(|| {
        let mut g = [0.0; 3];
        d_take(&x, &mut g, 4, 1.0)
    });
    assert!(r.is_err(), "x[1..4] of 3 elements must panic");
    let r = std::panic::catch_unwind(|| {
        let mut g = [0.0; 3];
        d_take(&x, &mut g, 0, 1.0)
    });
    assert!(r.is_err(), "x[1..0] must panic");
}

/// A `let mut` slice that moves along its buffer, as ADBench's LSTM reads its input.
fn window_sum(w: &[f64]) -> f64 {
    w.iter().map(|v| v.sin()).sum()
}

slice_case!(
    slice_variables_move_along_their_buffer,
    [[0.3, -1.2, 2.5, 0.8, 0.1, 0.9], [1.0, 0.5, -0.25, 2.0, -1.5, 0.7]],
    fn f(x: &[f64]) -> f64 {
        let b = 2;
        let mut input = &x[..b];
        let mut total = 0.0;
        for j in 0..x.len() / b {
            total += window_sum(input) * input[0] + input[input.len() - 1];
            if j + 2 <= x.len() / b {
                input = &x[(j + 1) * b..];
                input = &input[..b];
            }
        }
        let mut all = x;
        all = &all[1..];
        total + all[0] * all.as_ref()[1]
    }
);

slice_case!(
    writes_through_sub_slices_are_seen_by_reads_of_the_buffer,
    [[0.3, -1.2, 2.5], [1.0, 0.5, -0.25]],
    fn f(x: &[f64]) -> f64 {
        let mut buf = vec![0.0; 4];
        buf[2] = x[0];
        let a = buf[2];
        let w = &mut buf[2..4];
        w[0] = x[1] * x[2];
        let b = buf[2];
        a * b + b.sin()
    }
);

/// Sub-slices of constant data whose reads the reverse sweep repeats: their bounds are
/// needed there too.
#[cotan::autodiff_reverse(d_const_views, Active, Const, Active)]
#[cotan::autodiff_forward(t_const_views, Dual, Const, Dual)]
fn const_views(s: f64, x: &[f64]) -> f64 {
    let mut lp = 0.0;
    for row in x.chunks(2) {
        lp += row[0] * s * row[row.len() - 1];
    }
    for i in 1..x.len() {
        let head = &x[i / 2..i];
        lp += (head[head.len() - 1] * s).sin();
    }
    lp
}

#[test]
fn views_of_constant_data() {
    let x = [1.0, 2.0, 3.0, -0.5, 0.25];
    let s = 0.7;
    let (v, ds) = d_const_views(s, &x, 1.0);
    assert_eq!(v, const_views(s, &x));
    let h = 1e-6;
    let fd = (const_views(s + h, &x) - const_views(s - h, &x)) / (2.0 * h);
    assert!((ds - fd).abs() < 1e-7 * fd.abs().max(1.0), "{ds} vs {fd}");
    let t = t_const_views(s, 1.0, &x).1;
    assert!((t - ds).abs() < 1e-14, "forward {t} vs reverse {ds}");
}

/// A chunk length given by a constant (`last_chunk::<LAST>()`).
const LAST: usize = 2;

fn cross3(r: &[f64; 3], p: &[f64; 3], out: &mut [f64; 3]) {
    out[0] = r[1] * p[2] - r[2] * p[1];
    out[1] = r[2] * p[0] - r[0] * p[2];
    out[2] = r[0] * p[1] - r[1] * p[0];
}

// `first_chunk::<N>()`/`last_chunk::<N>()`: a sub-slice taken as an array (ADBench's BA).
slice_case!(
    first_and_last_chunks_as_arrays,
    [[0.3, -0.7, 1.1, 0.4, 2.0], [1.2, 0.5, -0.3, 0.9, -1.1]],
    fn f(cam: &[f64]) -> f64 {
        let p = [1.0, 2.0, cam[4]];
        let mut o = [0.0; 3];
        cross3(cam.first_chunk::<3>().unwrap(), &p, &mut o);
        let last = cam.last_chunk::<LAST>().unwrap();
        let none = cam.first_chunk::<9>().is_none();
        o[0] * o[1] + o[2] * last[0] * last[1] + if none { cam[0] } else { 0.0 }
    }
);

// Slices of different buffers chosen by `if` (ADBench's LSTM): the rest of the block is
// lowered in each branch.
slice_case!(
    slices_of_different_buffers_chosen_by_if,
    [[0.3, -0.7, 1.1, 0.4, 2.0], [1.2, 0.5, -0.3, 0.9, -1.1]],
    fn f(x: &[f64]) -> f64 {
        let mut a = x[..2].to_vec();
        let mut b = vec![x[2], x[3]];
        let mut s = 0.0;
        let mut i = 0;
        while i < 4 {
            let (src, dst) = if i % 2 == 0 {
                (&x[i..i + 2], a.as_mut_slice())
            } else if i == 1 {
                let (lo, _) = b.split_at_mut(2);
                (&x[1..3], lo)
            } else {
                (&x[3..], &mut b[..])
            };
            for k in 0..2 {
                dst[k] = dst[k] * src[k] + src[1 - k].sin();
            }
            s += dst[0] * dst[1];
            i += 1;
        }
        s + a[0] * b[1]
    }
);

// ---- `as_chunks`/`as_chunks_mut`: the chunk length written, or inferred from the uses ----

/// Swaps pairs into bit-reversed order (interleaved complex numbers).
fn bitrev(data: &mut [f64]) {
    let n = data.len() / 2;
    let mut j = 1;
    for i in (1..2 * n).step_by(2) {
        if j > i {
            data.swap(j - 1, i - 1);
            data.swap(j, i);
        }
        let mut m = n;
        while m >= 2 && j > m {
            j -= m;
            m >>= 1;
        }
        j += m;
    }
}

/// ADBench's FFT (safe variant), as written there: the chunk length of `as_chunks_mut` is
/// inferred from the `[ax, ay]` patterns.
fn radix2(data: &mut [f64], i_sign: i32) {
    let n = data.len() / 2;
    if n == 1 {
        return;
    }
    let (a, b) = data.split_at_mut(n);
    radix2(a, i_sign);
    radix2(b, i_sign);
    let wtemp = i_sign as f64 * (std::f64::consts::PI / n as f64).sin();
    let wpi = -i_sign as f64 * (2.0 * (std::f64::consts::PI / n as f64)).sin();
    let wpr = -2.0 * wtemp * wtemp;
    let mut wr = 1.0;
    let mut wi = 0.0;
    let (achunks, _) = a.as_chunks_mut();
    let (bchunks, _) = b.as_chunks_mut();
    for ([ax, ay], [bx, by]) in achunks.iter_mut().zip(bchunks.iter_mut()) {
        let tempr = *bx * wr - *by * wi;
        let tempi = *bx * wi + *by * wr;
        *bx = *ax - tempr;
        *by = *ay - tempi;
        *ax += tempr;
        *ay += tempi;
        let wtemp_new = wr;
        wr = wr * (wpr + 1.0) - wi * wpi;
        wi = wi * (wpr + 1.0) + wtemp_new * wpi;
    }
}

fn fft(data: &mut [f64], i_sign: i32) {
    bitrev(data);
    radix2(data, i_sign);
}

inplace_case!(
    fft_with_as_chunks_mut,
    [
        [0.3, -1.2, 2.5, 0.8, 0.1, 0.9, -0.4, 1.5],
        [1.0, 0.5, -0.25, 2.0, -1.5, 0.7, 0.2, -0.9, 0.6, -0.3, 1.1, 0.4, -0.8, 0.05, 0.35, -1.4]
    ],
    fn f(x: &mut [f64]) {
        fft(x, 1);
        // The rest of an odd length, named.
        let (pairs, rest) = x[1..].as_chunks_mut::<2>();
        for [re, im] in pairs.iter_mut() {
            let m = (*re * *re + *im * *im).sqrt();
            *re = m;
            *im *= 0.5;
        }
        rest[0] *= pairs[0][1];
        pairs[pairs.len() - 1] = [rest[0], pairs[0][0]];
    }
);

/// A length the chunks' uses do not tell (rustc reads it from `norm`'s parameter): written.
fn norm(p: &[f64; 2]) -> f64 {
    (p[0] * p[0] + p[1] * p[1]).sqrt()
}

slice_case!(
    as_chunks_read_indexed_iterated_and_passed,
    [[0.3, -1.2, 2.5, 0.8, 0.1, 0.9, -0.4], [1.0, 0.5, -0.25, 2.0, -1.5, 0.7, 0.2]],
    fn f(x: &[f64]) -> f64 {
        let (c, rest) = x.as_chunks::<3>();
        let mut s = rest.iter().sum::<f64>() * c.len() as f64;
        for (i, [a, b, d]) in c.iter().enumerate() {
            s += a * b.sin() + d * i as f64;
        }
        s += c.iter().map(|[a, _, d]| a * d).sum::<f64>();
        // The length from `let [p, q] = c[i]`, from `let [u, v] = *chunk` of a loop variable,
        // and from the `let`'s type.
        let (c2, tail) = x.as_chunks();
        let [p, q] = c2[1];
        for chunk in c2 {
            let [u, v] = *chunk;
            s += u * v * p;
        }
        let (c4, _): (&[[f64; 4]], _) = x.as_chunks();
        let (c5, _) = x.as_chunks::<2>();
        s + q * tail.len() as f64 + c4[0][3] * c[1][2] + norm(&c5[2]) + if c.is_empty() { 1.0 } else { 0.0 }
    }
);

// Chunks written: through `let [x, y] = chunk` of a loop variable, by index, whole; a copy
// `let r = c[i]` keeps the chunk's old value.
inplace_case!(
    as_chunks_mut_written,
    [[0.3, -1.2, 2.5, 0.8, 0.1, 0.9, -0.4], [1.0, 0.5, -0.25, 2.0, -1.5, 0.7, 0.2]],
    fn f(x: &mut [f64]) {
        let (c, mut rest) = x.as_chunks_mut();
        for chunk in c.iter_mut() {
            let [a, b] = chunk;
            *a = (*a * *b).tanh();
            *b -= *a * 0.5;
        }
        let r = c[1];
        c[1][0] *= c[0][1];
        c[0] = [c[2][1] * r[0], r[1] + c[1][0]];
        for [a, b] in &mut *c {
            *b += *a * rest[0];
        }
        rest = &mut rest[..];
        rest[0] = rest[0].sin() * c[1][1];
    }
);

/// Second order and batched forward mode through the FFT.
#[cotan::hvp(fft_hvp)]
#[cotan::autodiff_reverse(fft_grad, Duplicated, Active)]
#[cotan::autodiff_forward(fft_batched, 2, Dual, Dual)]
#[cotan::autodiff_forward(fft_single, Dual, Dual)]
fn spectrum_energy(x: &[f64]) -> f64 {
    let mut d = x.to_vec();
    fft(&mut d, -1);
    let (bins, _) = d.as_chunks::<2>();
    bins.iter().map(|[re, im]| (re * re + im * im).sqrt()).sum()
}

#[test]
fn second_order_and_batched_forward_through_as_chunks() {
    let x = [0.3, -1.2, 2.5, 0.8, 0.1, 0.9, -0.4, 1.5];
    let v = [0.5, -0.2, 1.0, 0.3, -0.7, 0.4, 0.1, -0.6];
    let (mut g, mut hv) = ([0.0; 8], [0.0; 8]);
    let value = fft_hvp(&x, &v, &mut g, &mut hv);
    assert_eq!(value, spectrum_energy(&x));
    let grad = |x: &[f64]| {
        let mut g = vec![0.0; x.len()];
        fft_grad(x, &mut g, 1.0);
        g
    };
    // Central differences of the gradient with one Richardson step (error O(h⁴)).
    let d = |h: f64| -> Vec<f64> {
        let xp: Vec<f64> = x.iter().zip(&v).map(|(a, b)| a + h * b).collect();
        let xm: Vec<f64> = x.iter().zip(&v).map(|(a, b)| a - h * b).collect();
        grad(&xp).iter().zip(grad(&xm)).map(|(p, m)| (p - m) / (2.0 * h)).collect()
    };
    let (a, b) = (d(1e-4), d(5e-5));
    for k in 0..8 {
        let want = (4.0 * b[k] - a[k]) / 3.0;
        assert!((hv[k] - want).abs() <= 1e-6 * want.abs().max(1.0), "hv[{k}]: {} vs {want}", hv[k]);
        assert_eq!(g[k], grad(&x)[k]);
    }
    // Two directions at once against one at a time, and one against finite differences.
    let [y, t0, t1] = fft_batched(&x, &x, &v);
    assert_eq!(y, spectrum_energy(&x));
    let (_, s0) = fft_single(&x, &x);
    let (_, s1) = fft_single(&x, &v);
    assert!((t0 - s0).abs() <= 1e-14 * s0.abs().max(1.0) && (t1 - s1).abs() <= 1e-14 * s1.abs().max(1.0));
    let fd = common::fd_directional(&|x| vec![spectrum_energy(x)], &x, &v, 1e-4)[0];
    assert!((s1 - fd).abs() <= common::FD_TOL * fd.abs().max(1.0), "{s1} vs {fd}");
}
