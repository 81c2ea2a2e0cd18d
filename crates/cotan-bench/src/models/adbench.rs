//! The ADBench objectives (Microsoft's AD benchmark): GMM and LSTM, written like ADBench's
//! C++ reference implementations (same loops, same temporaries).

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
