//! The ADBench objectives (Microsoft's AD benchmark): GMM and LSTM, written like ADBench's
//! C++ reference implementations (same loops, same temporaries); BA and ODE-real
//! (brusselator) written as rust-lang/rust's `tests/ui/autodiff/adbench` safe variants write
//! them: ordinary Rust with fixed arrays (`&[f64; 11]`, `first_chunk::<3>()`), unmarked
//! helpers and in-place `&mut` outputs.

/// `gmm`: Gaussian mixture log-likelihood with a Wishart prior (γ = 1, m = 0).
///
/// `params` packs α (k), then the means μ (k×d, row per component), then icf (k rows of
/// d(d+1)/2: the log-diagonal q of Q_k, then its strict lower triangle column by column, as
/// ADBench lays it out). `x` holds the n×d data points. `wishart_kc` is the constant K·C of
/// the Wishart prior's normaliser.
#[cfg_attr(feature = "ad", cotan::autodiff_reverse(gmm_rev, Duplicated, Const, Const, Const, Const, Active))]
#[cfg_attr(feature = "ad", cotan::autodiff_reverse(gmm_rev_only, Duplicated, Const, Const, Const, Const, ActiveOnly))]
#[cfg_attr(feature = "ad", cotan::autodiff_forward(gmm_fwd, Dual, Const, Const, Const, Const, Dual))]
#[cfg_attr(feature = "ad", cotan::hvp(gmm_hvp))]
pub fn gmm(params: &[f64], x: &[f64], d: usize, k: usize, wishart_kc: f64) -> f64 {
    let n = x.len() / d;
    let nt = d * (d + 1) / 2;
    let mo = k;
    let io = k + k * d;
    // Q_k's diagonal exp(q_k) and Σ q_k, once per component.
    let mut qdiag = vec![0.0; k * d];
    let mut sum_qs = vec![0.0; k];
    for c in 0..k {
        let mut s = 0.0;
        for j in 0..d {
            let q = params[io + c * nt + j];
            qdiag[c * d + j] = q.exp();
            s += q;
        }
        sum_qs[c] = s;
    }
    let mut xc = vec![0.0; d];
    let mut qx = vec![0.0; d];
    let mut main = vec![0.0; k];
    let mut slse = 0.0;
    for i in 0..n {
        for c in 0..k {
            for j in 0..d {
                xc[j] = x[i * d + j] - params[mo + c * d + j];
            }
            // qx = Q_k · xc (ADBench's Qtimesx).
            for j in 0..d {
                qx[j] = qdiag[c * d + j] * xc[j];
            }
            let mut li = io + c * nt + d;
            for j in 0..d {
                for jj in j + 1..d {
                    qx[jj] += params[li] * xc[j];
                    li += 1;
                }
            }
            let mut sq = 0.0;
            for j in 0..d {
                sq += qx[j] * qx[j];
            }
            main[c] = params[c] + sum_qs[c] - 0.5 * sq;
        }
        let mut mx = main[0];
        for c in 1..k {
            if main[c] > mx {
                mx = main[c];
            }
        }
        let mut se = 0.0;
        for c in 0..k {
            se += (main[c] - mx).exp();
        }
        slse += se.ln() + mx;
    }
    let mut amx = params[0];
    for c in 1..k {
        if params[c] > amx {
            amx = params[c];
        }
    }
    let mut ase = 0.0;
    for c in 0..k {
        ase += (params[c] - amx).exp();
    }
    let lse_alphas = ase.ln() + amx;
    // Wishart prior with γ = 1, m = 0: Σ_k ½(‖exp q_k‖² + ‖l_k‖²) − K·C.
    let mut prior = 0.0;
    for c in 0..k {
        let mut fro = 0.0;
        for j in 0..d {
            let e = qdiag[c * d + j];
            fro += e * e;
        }
        for t in d..nt {
            let l = params[io + c * nt + t];
            fro += l * l;
        }
        prior += 0.5 * fro;
    }
    let constant = -((n * d) as f64) * 0.5 * (2.0 * std::f64::consts::PI).ln();
    constant + slse - (n as f64) * lse_alphas + prior - wishart_kc
}

/// `lstm`: ADBench's diagonal LSTM with `l` layers of `b` channels over `c` time steps; the
/// loss is the mean negative log-softmax of the next step. `main` holds per layer 4b weights
/// then 4b biases (forget, input, output gates, change); `extra` the input weights, output
/// weights and output biases (b each); `state0` per layer b hidden then b cell values (the
/// objective works on a copy); `seq` the c×b sequence.
#[cfg_attr(
    feature = "ad",
    cotan::autodiff_reverse(lstm_rev, Duplicated, Duplicated, Const, Const, Const, Const, Const, Active)
)]
#[cfg_attr(
    feature = "ad",
    cotan::autodiff_reverse(lstm_rev_only, Duplicated, Duplicated, Const, Const, Const, Const, Const, ActiveOnly)
)]
#[cfg_attr(feature = "ad", cotan::autodiff_forward(lstm_fwd, Dual, Dual, Const, Const, Const, Const, Const, Dual))]
pub fn lstm(main: &[f64], extra: &[f64], state0: &[f64], seq: &[f64], l: usize, c: usize, b: usize) -> f64 {
    let mut state = state0.to_vec();
    let mut x = vec![0.0; b];
    let mut ypred = vec![0.0; b];
    let mut total = 0.0;
    let mut count = 0;
    for t in 0..c - 1 {
        for i in 0..b {
            x[i] = seq[t * b + i] * extra[i];
        }
        for layer in 0..l {
            let w = 2 * layer * 4 * b;
            let bi = (2 * layer + 1) * 4 * b;
            let h = 2 * layer * b;
            let ce = (2 * layer + 1) * b;
            for i in 0..b {
                let forget = 1.0 / (1.0 + (-(x[i] * main[w + i] + main[bi + i])).exp());
                let ingate = 1.0 / (1.0 + (-(state[h + i] * main[w + b + i] + main[bi + b + i])).exp());
                let outgate = 1.0 / (1.0 + (-(x[i] * main[w + 2 * b + i] + main[bi + 2 * b + i])).exp());
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
        let mut se = 0.0;
        for i in 0..b {
            se += ypred[i].exp();
        }
        let lse = se.ln();
        for i in 0..b {
            total += seq[(t + 1) * b + i] * (ypred[i] - lse);
        }
        count += b;
    }
    -total / (count as f64)
}

/// ADBench's FFT objective: `fft` then `ifft` in place on interleaved complex numbers
/// (re, im, re, im, ...), with Numerical Recipes' recursive radix-2 butterflies. The slices
/// of the reference are written here as index ranges.
#[cfg_attr(feature = "ad", cotan::autodiff_reverse(fft_roundtrip_rev, DuplicatedOnly))]
#[cfg_attr(feature = "ad", cotan::autodiff_forward(fft_roundtrip_fwd, Dual))]
pub fn fft_roundtrip(data: &mut [f64]) {
    fft(data);
    ifft(data);
}

fn bitreversal_perm(data: &mut [f64]) {
    let len = data.len() / 2;
    let mut j = 1;
    for i in (1..data.len()).step_by(2) {
        if j > i {
            data.swap(j - 1, i - 1);
            data.swap(j, i);
        }
        let mut m = len;
        while m >= 2 && j > m {
            j -= m;
            m >>= 1;
        }
        j += m;
    }
}

/// The butterflies of `data[lo..lo + len]` (`len / 2` complex numbers).
fn radix2(data: &mut [f64], lo: usize, len: usize, i_sign: i32) {
    let n = len / 2;
    if n == 1 {
        return;
    }
    radix2(data, lo, n, i_sign);
    radix2(data, lo + n, n, i_sign);
    let wtemp = i_sign as f64 * (std::f64::consts::PI / n as f64).sin();
    let wpi = -i_sign as f64 * (2.0 * (std::f64::consts::PI / n as f64)).sin();
    let wpr = -2.0 * wtemp * wtemp;
    let mut wr = 1.0;
    let mut wi = 0.0;
    for k in 0..n / 2 {
        let a = lo + 2 * k;
        let b = lo + n + 2 * k;
        let tempr = data[b] * wr - data[b + 1] * wi;
        let tempi = data[b] * wi + data[b + 1] * wr;
        data[b] = data[a] - tempr;
        data[b + 1] = data[a + 1] - tempi;
        data[a] += tempr;
        data[a + 1] += tempi;
        let wtemp_new = wr;
        wr = wr * (wpr + 1.0) - wi * wpi;
        wi = wi * (wpr + 1.0) + wtemp_new * wpi;
    }
}

fn rescale(data: &mut [f64], scale: usize) {
    let scale = 1. / scale as f64;
    for i in 0..data.len() {
        data[i] *= scale;
    }
}

fn fft(data: &mut [f64]) {
    bitreversal_perm(data);
    let len = data.len();
    radix2(data, 0, len, 1);
}

fn ifft(data: &mut [f64]) {
    bitreversal_perm(data);
    let len = data.len();
    radix2(data, 0, len, -1);
    rescale(data, len / 2);
}

/// Parameters per BA camera: Rodrigues rotation (3), centre (3), focal length, principal
/// point (2), radial distortion (2).
pub const BA_NCAMPARAMS: usize = 11;

fn sqnorm3(v: &[f64; 3]) -> f64 {
    v[0] * v[0] + v[1] * v[1] + v[2] * v[2]
}

fn cross(a: &[f64; 3], b: &[f64; 3]) -> [f64; 3] {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}

/// Rotates `pt` by the angle-axis vector `rot` (Rodrigues' formula; first order at 0).
fn rodrigues_rotate_point(rot: &[f64; 3], pt: &[f64; 3], rotated: &mut [f64; 3]) {
    let sqtheta = sqnorm3(rot);
    if sqtheta != 0.0 {
        let theta = sqtheta.sqrt();
        let costheta = theta.cos();
        let sintheta = theta.sin();
        let inv = 1.0 / theta;
        let axis = [rot[0] * inv, rot[1] * inv, rot[2] * inv];
        let axis_x_pt = cross(&axis, pt);
        let along = (axis[0] * pt[0] + axis[1] * pt[1] + axis[2] * pt[2]) * (1.0 - costheta);
        for i in 0..3 {
            rotated[i] = pt[i] * costheta + axis_x_pt[i] * sintheta + axis[i] * along;
        }
    } else {
        let rot_x_pt = cross(rot, pt);
        for i in 0..3 {
            rotated[i] = pt[i] + rot_x_pt[i];
        }
    }
}

/// Scales the projected point by 1 + k₁r² + k₂r⁴.
fn radial_distort(k: &[f64; 2], proj: &mut [f64; 2]) {
    let rsq = proj[0] * proj[0] + proj[1] * proj[1];
    let l = 1.0 + k[0] * rsq + k[1] * rsq * rsq;
    proj[0] *= l;
    proj[1] *= l;
}

/// Projects the point `x` through the camera `cam` (ADBench's `project`).
fn project(cam: &[f64; BA_NCAMPARAMS], x: &[f64; 3], proj: &mut [f64; 2]) {
    let centred = [x[0] - cam[3], x[1] - cam[4], x[2] - cam[5]];
    let mut in_cam = [0.0; 3];
    rodrigues_rotate_point(cam.first_chunk::<3>().unwrap(), &centred, &mut in_cam);
    proj[0] = in_cam[0] / in_cam[2];
    proj[1] = in_cam[1] / in_cam[2];
    radial_distort(cam.last_chunk::<2>().unwrap(), proj);
    proj[0] = proj[0] * cam[6] + cam[7];
    proj[1] = proj[1] * cam[6] + cam[8];
}

/// ADBench's `computeReprojError` for one observation: the weighted residual of the
/// projection against the feature.
fn compute_reproj_error(cam: &[f64; BA_NCAMPARAMS], x: &[f64; 3], w: f64, feat: &[f64; 2], err: &mut [f64; 2]) {
    let mut proj = [0.0; 2];
    project(cam, x, &mut proj);
    err[0] = w * (proj[0] - feat[0]);
    err[1] = w * (proj[1] - feat[1]);
}

/// ADBench's `computeZachWeightError`: 1 − w², written through `err` as ADBench does.
fn compute_zach_weight_error(w: &f64, err: &mut f64) {
    *err = 1.0 - w * w;
}

/// `ba`: ADBench's bundle-adjustment residuals (a reprojection error per observation and a
/// Zach weight error per weight) folded into the least-squares cost they define, the sum of
/// their squares, whose gradient is taken w.r.t. the cameras (11 each), the points (3 each)
/// and the weights (one per observation). `obs` holds (camera, point) index pairs, `feats`
/// the observed (x, y) per observation.
#[cfg_attr(feature = "ad", cotan::autodiff_reverse(ba_rev, Duplicated, Duplicated, Duplicated, Const, Const, Active))]
#[cfg_attr(
    feature = "ad",
    cotan::autodiff_reverse(ba_rev_only, Duplicated, Duplicated, Duplicated, Const, Const, ActiveOnly)
)]
#[cfg_attr(feature = "ad", cotan::autodiff_forward(ba_fwd, Dual, Dual, Dual, Const, Const, Dual))]
pub fn ba(cams: &[f64], points: &[f64], weights: &[f64], obs: &[usize], feats: &[f64]) -> f64 {
    let mut cost = 0.0;
    let mut err = [0.0; 2];
    for i in 0..weights.len() {
        let cam = cams[obs[2 * i] * BA_NCAMPARAMS..].first_chunk::<BA_NCAMPARAMS>().unwrap();
        let x = points[obs[2 * i + 1] * 3..].first_chunk::<3>().unwrap();
        let feat = feats[2 * i..].first_chunk::<2>().unwrap();
        compute_reproj_error(cam, x, weights[i], feat, &mut err);
        cost += err[0] * err[0] + err[1] * err[1];
    }
    for i in 0..weights.len() {
        let mut w_err = 0.0;
        compute_zach_weight_error(&weights[i], &mut w_err);
        cost += w_err * w_err;
    }
    cost
}

/// Side of the brusselator's grid (ADBench's ode-real: N = 32).
pub const ODE_N: usize = 32;

/// The i-th of `ODE_N` points evenly spaced on [lo, hi].
fn grid_point(lo: f64, hi: f64, i: usize) -> f64 {
    (hi - lo) / (ODE_N as f64 - 1.0) * i as f64 + lo
}

/// The brusselator's forcing: 5 on a disc of radius 0.1 around (0.3, 0.6) from t = 1.1 on.
fn brusselator_forcing(x: f64, y: f64, t: f64) -> f64 {
    if (x - 0.3) * (x - 0.3) + (y - 0.6) * (y - 0.6) <= 0.1 * 0.1 && t >= 1.1 {
        5.0
    } else {
        0.0
    }
}

/// ADBench's `brusselator_2d_loop`: the right-hand side (du, dv) of the 2-D brusselator on
/// the N×N grid at (u, v), with p = (A, B, α) and Neumann borders.
fn brusselator_2d_loop(
    du: &mut [f64; ODE_N * ODE_N],
    dv: &mut [f64; ODE_N * ODE_N],
    u: &[f64; ODE_N * ODE_N],
    v: &[f64; ODE_N * ODE_N],
    p: &[f64; 3],
    t: f64,
) {
    let a = p[0];
    let b = p[1];
    let h = 1.0 / (ODE_N - 1) as f64;
    let alpha = p[2] / (h * h);
    for i in 0..ODE_N {
        for j in 0..ODE_N {
            let x = grid_point(0.0, 1.0, i);
            let y = grid_point(0.0, 1.0, j);
            let ip = if i == ODE_N - 1 { i } else { i + 1 };
            let im = if i == 0 { i } else { i - 1 };
            let jp = if j == ODE_N - 1 { j } else { j + 1 };
            let jm = if j == 0 { j } else { j - 1 };
            let c = ODE_N * i + j;
            let u2v = u[c] * u[c] * v[c];
            let lap_u = u[ODE_N * im + j] + u[ODE_N * ip + j] + u[ODE_N * i + jp] + u[ODE_N * i + jm] - 4.0 * u[c];
            let lap_v = v[ODE_N * im + j] + v[ODE_N * ip + j] + v[ODE_N * i + jp] + v[ODE_N * i + jm] - 4.0 * v[c];
            du[c] = alpha * lap_u + b + u2v - (a + 1.0) * u[c] + brusselator_forcing(x, y, t);
            dv[c] = alpha * lap_v + a * u[c] - u2v;
        }
    }
}

/// `ode_real`: `steps` explicit Euler steps of length `dt` of the brusselator from the state
/// (u₀, v₀), starting at time `t0`; the objective is ½‖(u, v)‖² of the final state, its
/// gradient taken w.r.t. the initial state and the parameters p = (A, B, α).
#[cfg_attr(
    feature = "ad",
    cotan::autodiff_reverse(ode_real_rev, Duplicated, Duplicated, Duplicated, Const, Const, Const, Active)
)]
#[cfg_attr(
    feature = "ad",
    cotan::autodiff_reverse(ode_real_rev_only, Duplicated, Duplicated, Duplicated, Const, Const, Const, ActiveOnly)
)]
#[cfg_attr(feature = "ad", cotan::autodiff_forward(ode_real_fwd, Dual, Dual, Dual, Const, Const, Const, Dual))]
pub fn ode_real(
    u0: &[f64; ODE_N * ODE_N],
    v0: &[f64; ODE_N * ODE_N],
    p: &[f64; 3],
    t0: f64,
    dt: f64,
    steps: usize,
) -> f64 {
    let mut u = [0.0; ODE_N * ODE_N];
    let mut v = [0.0; ODE_N * ODE_N];
    u.copy_from_slice(u0);
    v.copy_from_slice(v0);
    let mut du = [0.0; ODE_N * ODE_N];
    let mut dv = [0.0; ODE_N * ODE_N];
    for s in 0..steps {
        brusselator_2d_loop(&mut du, &mut dv, &u, &v, p, t0 + s as f64 * dt);
        for c in 0..ODE_N * ODE_N {
            u[c] += dt * du[c];
            v[c] += dt * dv[c];
        }
    }
    let mut sq = 0.0;
    for c in 0..ODE_N * ODE_N {
        sq += u[c] * u[c] + v[c] * v[c];
    }
    0.5 * sq
}
