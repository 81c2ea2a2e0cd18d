//! The rows written once, generic over a scalar type, for the peers: `num-dual` (forward
//! mode with dual numbers) and `echidna` (a tape-based reverse mode). Inputs are flattened
//! into one slice in the order the rows list them. The math is the same as in
//! [`crate::models`], operation for operation where the types allow. The peers' number
//! types and calls are behind the feature `peers`; without it the rows are only plain Rust.

// The rows are written as the index loops of their definitions.
#![allow(clippy::needless_range_loop)]

#[cfg(feature = "peers")]
use num_dual::{Dual64, DualNum, DualSVec64};
use std::ops::{Add, AddAssign, Div, Mul, MulAssign, Neg, Sub, SubAssign};
use std::rc::Rc;

/// The scalar operations the rows use.
pub trait Real:
    Copy
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
{
    fn c(v: f64) -> Self;
    fn re(self) -> f64;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn sqrt(self) -> Self;
    fn tanh(self) -> Self;
}

impl Real for f64 {
    fn c(v: f64) -> Self {
        v
    }
    fn re(self) -> f64 {
        self
    }
    fn sin(self) -> Self {
        f64::sin(self)
    }
    fn cos(self) -> Self {
        f64::cos(self)
    }
    fn exp(self) -> Self {
        f64::exp(self)
    }
    fn ln(self) -> Self {
        f64::ln(self)
    }
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
    fn tanh(self) -> Self {
        f64::tanh(self)
    }
}

#[cfg(feature = "peers")]
macro_rules! real_via_dualnum {
    ($t:ty $(, $n:ident)?) => {
        impl$(<const $n: usize>)? Real for $t {
            #[inline]
            fn c(v: f64) -> Self {
                <$t as DualNum>::from_re(v)
            }
            #[inline]
            fn re(self) -> f64 {
                self.re
            }
            #[inline]
            fn sin(self) -> Self {
                DualNum::sin(&self)
            }
            #[inline]
            fn cos(self) -> Self {
                DualNum::cos(&self)
            }
            #[inline]
            fn exp(self) -> Self {
                DualNum::exp(&self)
            }
            #[inline]
            fn ln(self) -> Self {
                DualNum::ln(&self)
            }
            #[inline]
            fn sqrt(self) -> Self {
                DualNum::sqrt(&self)
            }
            #[inline]
            fn tanh(self) -> Self {
                DualNum::tanh(&self)
            }
        }
    };
}
#[cfg(feature = "peers")]
real_via_dualnum!(Dual64);
#[cfg(feature = "peers")]
real_via_dualnum!(DualSVec64<N>, N);

#[cfg(feature = "peers")]
macro_rules! real_via_echidna {
    ($t:ty) => {
        impl Real for $t {
            #[inline]
            fn c(v: f64) -> Self {
                echidna::Scalar::from_f(v)
            }
            #[inline]
            fn re(self) -> f64 {
                echidna::Scalar::value(&self)
            }
            #[inline]
            fn sin(self) -> Self {
                num_traits::Float::sin(self)
            }
            #[inline]
            fn cos(self) -> Self {
                num_traits::Float::cos(self)
            }
            #[inline]
            fn exp(self) -> Self {
                num_traits::Float::exp(self)
            }
            #[inline]
            fn ln(self) -> Self {
                num_traits::Float::ln(self)
            }
            #[inline]
            fn sqrt(self) -> Self {
                num_traits::Float::sqrt(self)
            }
            #[inline]
            fn tanh(self) -> Self {
                num_traits::Float::tanh(self)
            }
        }
    };
}
#[cfg(feature = "peers")]
real_via_echidna!(echidna::Reverse<f64>);
#[cfg(feature = "peers")]
real_via_echidna!(echidna::BReverse<f64>);

/// A row's objective as a function of its flattened differentiated inputs.
pub trait Model {
    fn eval<T: Real>(&self, x: &[T]) -> T;
}

fn zero<T: Real>() -> T {
    T::c(0.0)
}

pub struct Sum;
impl Model for Sum {
    fn eval<T: Real>(&self, x: &[T]) -> T {
        let mut s = zero();
        for &v in x {
            s += v;
        }
        s
    }
}

pub struct SumSin;
impl Model for SumSin {
    fn eval<T: Real>(&self, x: &[T]) -> T {
        let mut s = zero();
        for &v in x {
            s += v.sin();
        }
        s
    }
}

/// kron_sum of the m×m leading block of A (`lda` columns) and B (nb×nb), B's lower
/// triangle zeroed if `upper`; x = [A, B].
pub struct Kron {
    pub rows_a: usize,
    pub lda: usize,
    pub m: usize,
    pub nb: usize,
    pub upper: bool,
}
impl Model for Kron {
    fn eval<T: Real>(&self, x: &[T]) -> T {
        let (a, b) = x.split_at(self.rows_a * self.lda);
        let (m, nb) = (self.m, self.nb);
        let n = m * nb;
        let mut k = vec![zero::<T>(); n * n];
        for i in 0..m {
            for j in 0..m {
                let aij = a[i * self.lda + j];
                for p in 0..nb {
                    for q in 0..nb {
                        let bpq = if self.upper && q < p { zero() } else { b[p * nb + q] };
                        k[(i * nb + p) * n + j * nb + q] = aij * bpq;
                    }
                }
            }
        }
        let mut s = zero();
        for &v in &k {
            s += v;
        }
        s
    }
}

/// sin(cos(exp(xᵢ))) summed; `stages` materialises each stage (broadcast), `buffer` only
/// the result (naive map), neither for the iterator map.
pub struct SinCosExp {
    pub buffer: bool,
    pub stages: bool,
}
impl Model for SinCosExp {
    fn eval<T: Real>(&self, x: &[T]) -> T {
        let mut s = zero();
        if self.stages {
            let a: Vec<T> = x.iter().map(|v| v.exp()).collect();
            let b: Vec<T> = a.iter().map(|v| v.cos()).collect();
            let c: Vec<T> = b.iter().map(|v| v.sin()).collect();
            for &v in &c {
                s += v;
            }
        } else if self.buffer {
            let mut y = vec![zero::<T>(); x.len()];
            for i in 0..x.len() {
                y[i] = x[i].exp().cos().sin();
            }
            for &v in &y {
                s += v;
            }
        } else {
            for &v in x {
                s += v.exp().cos().sin();
            }
        }
        s
    }
}

/// simple_mlp; x = [W₂, W₁, Y, X].
pub struct Mlp {
    pub n_out: usize,
    pub n_hid: usize,
    pub n_in: usize,
    pub n_batch: usize,
}
impl Model for Mlp {
    fn eval<T: Real>(&self, v: &[T]) -> T {
        let (n_out, n_hid, n_in, nb) = (self.n_out, self.n_hid, self.n_in, self.n_batch);
        let (w2, v) = v.split_at(n_out * n_hid);
        let (w1, v) = v.split_at(n_hid * n_in);
        let (y, x) = v.split_at(n_out * nb);
        let mut h = vec![zero::<T>(); n_hid * nb];
        for i in 0..n_hid {
            for k in 0..n_in {
                let w = w1[i * n_in + k];
                for j in 0..nb {
                    h[i * nb + j] += w * x[k * nb + j];
                }
            }
        }
        for e in h.iter_mut() {
            if e.re() < 0.0 {
                *e = zero();
            }
        }
        let mut o = vec![zero::<T>(); n_out * nb];
        for i in 0..n_out {
            for k in 0..n_hid {
                let w = w2[i * n_hid + k];
                for j in 0..nb {
                    o[i * nb + j] += w * h[k * nb + j];
                }
            }
        }
        let mut s = zero();
        for e in 0..o.len() {
            let r = y[e] - o[e];
            s += r * r;
        }
        s
    }
}

/// gp_lml; x = [x (n), y (n), s].
pub struct Gp {
    pub n: usize,
}
impl Model for Gp {
    fn eval<T: Real>(&self, v: &[T]) -> T {
        let n = self.n;
        let (x, y, s) = (&v[..n], &v[n..2 * n], v[2 * n]);
        let mut l = vec![zero::<T>(); n * n];
        for i in 0..n {
            for j in 0..=i {
                let d = x[i] - x[j];
                let mut e = (T::c(-0.5) * d * d).exp();
                if i == j {
                    e += s;
                }
                l[i * n + j] = e;
            }
        }
        for i in 0..n {
            for j in 0..=i {
                let mut acc = l[i * n + j];
                for k in 0..j {
                    acc -= l[i * n + k] * l[j * n + k];
                }
                l[i * n + j] = if i == j { acc.sqrt() } else { acc / l[j * n + j] };
            }
        }
        let mut z = vec![zero::<T>(); n];
        for i in 0..n {
            let mut acc = y[i];
            for k in 0..i {
                acc -= l[i * n + k] * z[k];
            }
            z[i] = acc / l[i * n + i];
        }
        let mut quad = zero();
        let mut half_logdet = zero();
        for i in 0..n {
            quad += z[i] * z[i];
            half_logdet += l[i * n + i].ln();
        }
        T::c(-0.5) * quad - half_logdet - T::c(0.5 * n as f64 * (2.0 * std::f64::consts::PI).ln())
    }
}

/// turing_broadcast; x = θ.
pub struct Turing {
    pub data: Rc<Vec<f64>>,
    pub log_z: f64,
}
impl Model for Turing {
    fn eval<T: Real>(&self, theta: &[T]) -> T {
        let (lo, hi) = (0.1, 10.0);
        let half_log_2pi = 0.5 * (2.0 * std::f64::consts::PI).ln();
        let one = T::c(1.0);
        let s0 = one / (one + (-theta[0]).exp());
        let s1 = one / (one + (-theta[1]).exp());
        let mu = T::c(lo) + T::c(hi - lo) * s0;
        let sigma = T::c(lo) + T::c(hi - lo) * s1;
        let log_jac = T::c(2.0 * (hi - lo).ln()) + s0.ln() + (one - s0).ln() + s1.ln() + (one - s1).ln();
        let zm = (mu - one) / T::c(2.0);
        let zs = (sigma - one) / T::c(2.0);
        let log_prior =
            T::c(-0.5) * zm * zm - T::c(0.5) * zs * zs - T::c(2.0 * (2.0f64.ln() + half_log_2pi + self.log_z));
        let log_sigma = sigma.ln();
        let mut log_lik = zero();
        for &d in self.data.iter() {
            let ly = T::c(d.ln());
            let r = (ly - mu) / sigma;
            log_lik += -ly - log_sigma - T::c(half_log_2pi) - T::c(0.5) * r * r;
        }
        log_prior + log_jac + log_lik
    }
}

/// large_single_block; x = [x₁, x₂].
pub struct Large;
impl Model for Large {
    fn eval<T: Real>(&self, x: &[T]) -> T {
        let mut p = x[0];
        for _ in 0..400 {
            p *= x[1];
        }
        p
    }
}

pub struct SinCosSq;
impl Model for SinCosSq {
    fn eval<T: Real>(&self, x: &[T]) -> T {
        let mut s = zero();
        for &v in x {
            s += v.sin() + (v * v).cos();
        }
        s
    }
}

pub struct ControlFlow;
impl Model for ControlFlow {
    fn eval<T: Real>(&self, x: &[T]) -> T {
        let mut s = zero();
        for &v in x {
            s += if v.re() > 0.0 { v.sin() } else { v.cos() };
        }
        s
    }
}

/// gmm; x = packed parameters (α, μ, icf) as in [`crate::models::adbench::gmm`].
pub struct Gmm {
    pub data: Rc<Vec<f64>>,
    pub d: usize,
    pub k: usize,
    pub wishart_kc: f64,
}
impl Model for Gmm {
    fn eval<T: Real>(&self, params: &[T]) -> T {
        let (d, k) = (self.d, self.k);
        let x = &self.data;
        let n = x.len() / d;
        let nt = d * (d + 1) / 2;
        let (mo, io) = (k, k + k * d);
        let mut qdiag = vec![zero::<T>(); k * d];
        let mut sum_qs = vec![zero::<T>(); k];
        for c in 0..k {
            let mut s = zero();
            for j in 0..d {
                let q = params[io + c * nt + j];
                qdiag[c * d + j] = q.exp();
                s += q;
            }
            sum_qs[c] = s;
        }
        let mut xc = vec![zero::<T>(); d];
        let mut qx = vec![zero::<T>(); d];
        let mut main = vec![zero::<T>(); k];
        let mut slse = zero();
        for i in 0..n {
            for c in 0..k {
                for j in 0..d {
                    xc[j] = T::c(x[i * d + j]) - params[mo + c * d + j];
                }
                for j in 0..d {
                    qx[j] = qdiag[c * d + j] * xc[j];
                }
                let mut li = io + c * nt + d;
                for j in 0..d {
                    for jj in j + 1..d {
                        let t = params[li] * xc[j];
                        qx[jj] += t;
                        li += 1;
                    }
                }
                let mut sq = zero();
                for &q in &qx {
                    sq += q * q;
                }
                main[c] = params[c] + sum_qs[c] - T::c(0.5) * sq;
            }
            slse += logsumexp(&main);
        }
        let lse_alphas = logsumexp(&params[..k]);
        let mut prior = zero();
        for c in 0..k {
            let mut fro = zero();
            for j in 0..d {
                let e = qdiag[c * d + j];
                fro += e * e;
            }
            for t in d..nt {
                let l = params[io + c * nt + t];
                fro += l * l;
            }
            prior += T::c(0.5) * fro;
        }
        let constant = -((n * d) as f64) * 0.5 * (2.0 * std::f64::consts::PI).ln();
        T::c(constant) + slse - T::c(n as f64) * lse_alphas + prior - T::c(self.wishart_kc)
    }
}

fn logsumexp<T: Real>(v: &[T]) -> T {
    let mut mx = v[0];
    for &e in &v[1..] {
        if e.re() > mx.re() {
            mx = e;
        }
    }
    let mut se: T = zero();
    for &e in v {
        se += (e - mx).exp();
    }
    se.ln() + mx
}

/// lstm; x = [main, extra].
pub struct Lstm {
    pub state0: Rc<Vec<f64>>,
    pub seq: Rc<Vec<f64>>,
    pub l: usize,
    pub c: usize,
    pub b: usize,
}
impl Model for Lstm {
    fn eval<T: Real>(&self, v: &[T]) -> T {
        let (l, c, b) = (self.l, self.c, self.b);
        let (main, extra) = v.split_at(2 * l * 4 * b);
        let seq = &self.seq;
        let mut state: Vec<T> = self.state0.iter().map(|&s| T::c(s)).collect();
        let mut x = vec![zero::<T>(); b];
        let mut ypred = vec![zero::<T>(); b];
        let one = T::c(1.0);
        let mut total: T = zero();
        let mut count = 0;
        for t in 0..c - 1 {
            for i in 0..b {
                x[i] = T::c(seq[t * b + i]) * extra[i];
            }
            for layer in 0..l {
                let (w, bi, h, ce) = (2 * layer * 4 * b, (2 * layer + 1) * 4 * b, 2 * layer * b, (2 * layer + 1) * b);
                for i in 0..b {
                    let forget = one / (one + (-(x[i] * main[w + i] + main[bi + i])).exp());
                    let ingate = one / (one + (-(state[h + i] * main[w + b + i] + main[bi + b + i])).exp());
                    let outgate = one / (one + (-(x[i] * main[w + 2 * b + i] + main[bi + 2 * b + i])).exp());
                    let change = (state[h + i] * main[w + 3 * b + i] + main[bi + 3 * b + i]).tanh();
                    let cell = state[ce + i] * forget + ingate * change;
                    state[ce + i] = cell;
                    let hidden = outgate * cell.tanh();
                    state[h + i] = hidden;
                    x[i] = hidden;
                }
            }
            for i in 0..b {
                ypred[i] = x[i] * extra[b + i] + extra[2 * b + i];
            }
            let mut se: T = zero();
            for &y in &ypred {
                se += y.exp();
            }
            let lse = se.ln();
            for i in 0..b {
                total += T::c(seq[(t + 1) * b + i]) * (ypred[i] - lse);
            }
            count += b;
        }
        -total / T::c(count as f64)
    }
}

/// ba; x = [cameras (11 each), points (3 each), weights (one per observation)].
pub struct Ba {
    pub n_cams: usize,
    pub n_points: usize,
    pub obs: Rc<Vec<usize>>,
    pub feats: Rc<Vec<f64>>,
}
impl Model for Ba {
    fn eval<T: Real>(&self, v: &[T]) -> T {
        let (cams, v) = v.split_at(11 * self.n_cams);
        let (points, weights) = v.split_at(3 * self.n_points);
        let mut cost = zero();
        for i in 0..weights.len() {
            let cam = &cams[11 * self.obs[2 * i]..][..11];
            let x = &points[3 * self.obs[2 * i + 1]..][..3];
            let xo = [x[0] - cam[3], x[1] - cam[4], x[2] - cam[5]];
            let rot = &cam[..3];
            let sq = rot[0] * rot[0] + rot[1] * rot[1] + rot[2] * rot[2];
            let xc = if sq.re() != 0.0 {
                let theta = sq.sqrt();
                let (c, s) = (theta.cos(), theta.sin());
                let inv = T::c(1.0) / theta;
                let w = [rot[0] * inv, rot[1] * inv, rot[2] * inv];
                let wx = cross(&w, &xo);
                let along = (w[0] * xo[0] + w[1] * xo[1] + w[2] * xo[2]) * (T::c(1.0) - c);
                [0, 1, 2].map(|k| xo[k] * c + wx[k] * s + w[k] * along)
            } else {
                let rx = cross(&[rot[0], rot[1], rot[2]], &xo);
                [0, 1, 2].map(|k| xo[k] + rx[k])
            };
            let (p0, p1) = (xc[0] / xc[2], xc[1] / xc[2]);
            let rsq = p0 * p0 + p1 * p1;
            let l = T::c(1.0) + cam[9] * rsq + cam[10] * rsq * rsq;
            let e0 = weights[i] * (p0 * l * cam[6] + cam[7] - T::c(self.feats[2 * i]));
            let e1 = weights[i] * (p1 * l * cam[6] + cam[8] - T::c(self.feats[2 * i + 1]));
            cost += e0 * e0 + e1 * e1;
        }
        for &w in weights {
            let e = T::c(1.0) - w * w;
            cost += e * e;
        }
        cost
    }
}

fn cross<T: Real>(a: &[T; 3], b: &[T; 3]) -> [T; 3] {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}

/// ode_real; x = [u₀ (N²), v₀ (N²), p (3)], N = [`crate::models::adbench::ODE_N`].
pub struct Ode {
    pub t0: f64,
    pub dt: f64,
    pub steps: usize,
}
impl Model for Ode {
    fn eval<T: Real>(&self, x: &[T]) -> T {
        const N: usize = crate::models::adbench::ODE_N;
        let mut u = x[..N * N].to_vec();
        let mut v = x[N * N..2 * N * N].to_vec();
        let (a, b) = (x[2 * N * N], x[2 * N * N + 1]);
        let h = 1.0 / (N - 1) as f64;
        let alpha = x[2 * N * N + 2] / T::c(h * h);
        let mut du = [zero::<T>(); N * N];
        let mut dv = [zero::<T>(); N * N];
        let dt = T::c(self.dt);
        for s in 0..self.steps {
            let t = self.t0 + s as f64 * self.dt;
            for i in 0..N {
                for j in 0..N {
                    let (xg, yg) = (h * i as f64, h * j as f64);
                    let (ip, im) = (if i == N - 1 { i } else { i + 1 }, if i == 0 { i } else { i - 1 });
                    let (jp, jm) = (if j == N - 1 { j } else { j + 1 }, if j == 0 { j } else { j - 1 });
                    let c = N * i + j;
                    let u2v = u[c] * u[c] * v[c];
                    let lu = u[N * im + j] + u[N * ip + j] + u[N * i + jp] + u[N * i + jm] - T::c(4.0) * u[c];
                    let lv = v[N * im + j] + v[N * ip + j] + v[N * i + jp] + v[N * i + jm] - T::c(4.0) * v[c];
                    let on = (xg - 0.3) * (xg - 0.3) + (yg - 0.6) * (yg - 0.6) <= 0.1 * 0.1 && t >= 1.1;
                    let f = T::c(if on { 5.0 } else { 0.0 });
                    du[c] = alpha * lu + b + u2v - (a + T::c(1.0)) * u[c] + f;
                    dv[c] = alpha * lv + a * u[c] - u2v;
                }
            }
            for c in 0..N * N {
                u[c] += dt * du[c];
                v[c] += dt * dv[c];
            }
        }
        let mut sq = zero();
        for c in 0..N * N {
            sq += u[c] * u[c] + v[c] * v[c];
        }
        T::c(0.5) * sq
    }
}

pub struct Rosenbrock;
impl Model for Rosenbrock {
    fn eval<T: Real>(&self, x: &[T]) -> T {
        let mut s = zero();
        for i in 0..x.len() - 1 {
            let a = x[i + 1] - x[i] * x[i];
            let b = T::c(1.0) - x[i];
            s += T::c(100.0) * a * a + b * b;
        }
        s
    }
}

#[cfg(feature = "peers")]
/// One JVP with `num_dual::Dual64`; `buf` is scratch reused across calls.
pub fn nd_jvp<M: Model>(m: &M, x: &[f64], v: &[f64], buf: &mut Vec<Dual64>) -> f64 {
    buf.clear();
    buf.extend(x.iter().zip(v).map(|(&a, &b)| Dual64::new(a, b)));
    m.eval(buf).eps
}

#[cfg(feature = "peers")]
/// The full gradient in one forward pass with `num_dual::DualSVec64<N>` (N = number of
/// inputs), as `num_dual::gradient` does; adds it into `g` and returns the value.
pub fn nd_grad<const N: usize, M: Model>(m: &M, x: &[f64], g: &mut [f64], buf: &mut Vec<DualSVec64<N>>) -> f64 {
    assert_eq!(x.len(), N);
    buf.clear();
    buf.extend(x.iter().enumerate().map(|(i, &a)| DualSVec64::<N>::from_re(a).derivative(i)));
    let r = m.eval(buf);
    if let Some(e) = &r.eps.0 {
        for i in 0..N {
            g[i] += e[i];
        }
    }
    r.re
}

#[cfg(feature = "peers")]
/// The gradient with echidna's tape-based reverse mode (`echidna::grad`), added into `g`.
pub fn tape_grad<M: Model>(m: &M, x: &[f64], g: &mut [f64]) {
    let r = echidna::grad(|v: &[echidna::Reverse<f64>]| m.eval(v), x);
    for (a, b) in g.iter_mut().zip(r) {
        *a += b;
    }
}

#[cfg(feature = "peers")]
/// A Hessian-vector product with echidna (`echidna::hvp`: record a bytecode tape, then
/// forward-over-reverse on it); overwrites `grad` and `hv`.
pub fn tape_hvp<M: Model>(m: &M, x: &[f64], v: &[f64], grad: &mut [f64], hv: &mut [f64]) {
    let (g, h) = echidna::hvp(|p: &[echidna::BReverse<f64>]| m.eval(p), x, v);
    grad.copy_from_slice(&g);
    hv.copy_from_slice(&h);
}
