//! Rows of Mooncake.jl's cross-framework table (same definitions and sizes).

/// `sum_1000`: Σ xᵢ, written idiomatically.
#[cfg_attr(feature = "ad", cotan::autodiff_reverse(sum_rev, Duplicated, Active))]
#[cfg_attr(feature = "ad", cotan::autodiff_reverse(sum_rev_only, Duplicated, ActiveOnly))]
#[cfg_attr(feature = "ad", cotan::autodiff_forward(sum_fwd, Dual, Dual))]
pub fn sum(x: &[f64]) -> f64 {
    x.iter().sum::<f64>()
}

/// `_sum_1000`: the same sum as an explicit index loop.
#[cfg_attr(feature = "ad", cotan::autodiff_reverse(sum_loop_rev, Duplicated, Active))]
#[cfg_attr(feature = "ad", cotan::autodiff_reverse(sum_loop_rev_only, Duplicated, ActiveOnly))]
#[cfg_attr(feature = "ad", cotan::autodiff_forward(sum_loop_fwd, Dual, Dual))]
pub fn sum_loop(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i];
    }
    s
}

/// `sum_sin_1000`: Σ sin(xᵢ), idiomatic iterator form.
#[cfg_attr(feature = "ad", cotan::autodiff_reverse(sum_sin_rev, Duplicated, Active))]
#[cfg_attr(feature = "ad", cotan::autodiff_reverse(sum_sin_rev_only, Duplicated, ActiveOnly))]
#[cfg_attr(feature = "ad", cotan::autodiff_forward(sum_sin_fwd, Dual, Dual))]
pub fn sum_sin(x: &[f64]) -> f64 {
    x.iter().map(|v| v.sin()).sum::<f64>()
}

/// `_sum_sin_1000`: the same as an explicit index loop.
#[cfg_attr(feature = "ad", cotan::autodiff_reverse(sum_sin_loop_rev, Duplicated, Active))]
#[cfg_attr(feature = "ad", cotan::autodiff_reverse(sum_sin_loop_rev_only, Duplicated, ActiveOnly))]
#[cfg_attr(feature = "ad", cotan::autodiff_forward(sum_sin_loop_fwd, Dual, Dual))]
pub fn sum_sin_loop(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i].sin();
    }
    s
}

/// `kron_sum`: the sum of all entries of kron(A, B) for square row-major A (na×na) and
/// B (nb×nb), materialising the dense Kronecker product in a buffer.
#[cfg_attr(feature = "ad", cotan::autodiff_reverse(kron_sum_rev, Duplicated, Duplicated, Const, Const, Active))]
#[cfg_attr(
    feature = "ad",
    cotan::autodiff_reverse(kron_sum_rev_only, Duplicated, Duplicated, Const, Const, ActiveOnly)
)]
#[cfg_attr(feature = "ad", cotan::autodiff_forward(kron_sum_fwd, Dual, Dual, Const, Const, Dual))]
pub fn kron_sum(a: &[f64], b: &[f64], na: usize, nb: usize) -> f64 {
    let n = na * nb;
    let mut k = vec![0.0; n * n];
    for i in 0..na {
        for j in 0..na {
            let aij = a[i * na + j];
            for p in 0..nb {
                for q in 0..nb {
                    k[(i * nb + p) * n + j * nb + q] = aij * b[p * nb + q];
                }
            }
        }
    }
    k.iter().sum::<f64>()
}

/// `kron_view_sum`: kron_sum of the m×m leading block of A (row-major, `lda` columns) and of
/// the upper triangle of B (nb×nb; entries below the diagonal count as 0).
#[cfg_attr(
    feature = "ad",
    cotan::autodiff_reverse(kron_view_sum_rev, Duplicated, Duplicated, Const, Const, Const, Active)
)]
#[cfg_attr(
    feature = "ad",
    cotan::autodiff_reverse(kron_view_sum_rev_only, Duplicated, Duplicated, Const, Const, Const, ActiveOnly)
)]
#[cfg_attr(feature = "ad", cotan::autodiff_forward(kron_view_sum_fwd, Dual, Dual, Const, Const, Const, Dual))]
pub fn kron_view_sum(a: &[f64], b: &[f64], lda: usize, m: usize, nb: usize) -> f64 {
    let n = m * nb;
    let mut k = vec![0.0; n * n];
    for i in 0..m {
        for j in 0..m {
            let aij = a[i * lda + j];
            for p in 0..nb {
                for q in 0..nb {
                    let bpq = if q >= p { b[p * nb + q] } else { 0.0 };
                    k[(i * nb + p) * n + j * nb + q] = aij * bpq;
                }
            }
        }
    }
    k.iter().sum::<f64>()
}

/// `naive_map_sin_cos_exp`: y[n] = sin(cos(exp(x[n]))) into a buffer, then Σ y.
#[cfg_attr(feature = "ad", cotan::autodiff_reverse(naive_map_rev, Duplicated, Active))]
#[cfg_attr(feature = "ad", cotan::autodiff_reverse(naive_map_rev_only, Duplicated, ActiveOnly))]
#[cfg_attr(feature = "ad", cotan::autodiff_forward(naive_map_fwd, Dual, Dual))]
pub fn naive_map(x: &[f64]) -> f64 {
    let mut y = vec![0.0; x.len()];
    for i in 0..x.len() {
        y[i] = x[i].exp().cos().sin();
    }
    let mut s = 0.0;
    for i in 0..y.len() {
        s += y[i];
    }
    s
}

/// `map_sin_cos_exp`: Σ sin(cos(exp(xᵢ))) via an iterator map.
#[cfg_attr(feature = "ad", cotan::autodiff_reverse(map_sce_rev, Duplicated, Active))]
#[cfg_attr(feature = "ad", cotan::autodiff_reverse(map_sce_rev_only, Duplicated, ActiveOnly))]
#[cfg_attr(feature = "ad", cotan::autodiff_forward(map_sce_fwd, Dual, Dual))]
pub fn map_sce(x: &[f64]) -> f64 {
    x.iter().map(|v| v.exp().cos().sin()).sum::<f64>()
}

/// `broadcast_sin_cos_exp`: the same, with the intermediate arrays materialised one stage
/// at a time.
#[cfg_attr(feature = "ad", cotan::autodiff_reverse(broadcast_sce_rev, Duplicated, Active))]
#[cfg_attr(feature = "ad", cotan::autodiff_reverse(broadcast_sce_rev_only, Duplicated, ActiveOnly))]
#[cfg_attr(feature = "ad", cotan::autodiff_forward(broadcast_sce_fwd, Dual, Dual))]
pub fn broadcast_sce(x: &[f64]) -> f64 {
    let a = x.iter().map(|v| v.exp()).collect::<Vec<_>>();
    let b = a.iter().map(|v| v.cos()).collect::<Vec<_>>();
    let c = b.iter().map(|v| v.sin()).collect::<Vec<_>>();
    c.iter().sum::<f64>()
}

/// `simple_mlp`: Σ (Y − W₂·relu(W₁·X))² elementwise, all matrices row-major; W₂ is
/// n_out×n_hid, W₁ n_hid×n_in, X n_in×n_batch, Y n_out×n_batch.
#[cfg_attr(
    feature = "ad",
    cotan::autodiff_reverse(
        simple_mlp_rev,
        Duplicated,
        Duplicated,
        Duplicated,
        Duplicated,
        Const,
        Const,
        Const,
        Const,
        Active
    )
)]
#[cfg_attr(
    feature = "ad",
    cotan::autodiff_reverse(
        simple_mlp_rev_only,
        Duplicated,
        Duplicated,
        Duplicated,
        Duplicated,
        Const,
        Const,
        Const,
        Const,
        ActiveOnly
    )
)]
#[cfg_attr(
    feature = "ad",
    cotan::autodiff_forward(simple_mlp_fwd, Dual, Dual, Dual, Dual, Const, Const, Const, Const, Dual)
)]
#[allow(clippy::too_many_arguments)]
pub fn simple_mlp(
    w2: &[f64],
    w1: &[f64],
    y: &[f64],
    x: &[f64],
    n_out: usize,
    n_hid: usize,
    n_in: usize,
    n_batch: usize,
) -> f64 {
    let mut h = vec![0.0; n_hid * n_batch];
    for i in 0..n_hid {
        for k in 0..n_in {
            let w = w1[i * n_in + k];
            for j in 0..n_batch {
                h[i * n_batch + j] += w * x[k * n_batch + j];
            }
        }
    }
    for e in 0..h.len() {
        let v = h[e];
        h[e] = if v >= 0.0 { v } else { 0.0 };
    }
    let mut o = vec![0.0; n_out * n_batch];
    for i in 0..n_out {
        for k in 0..n_hid {
            let w = w2[i * n_hid + k];
            for j in 0..n_batch {
                o[i * n_batch + j] += w * h[k * n_batch + j];
            }
        }
    }
    let mut s = 0.0;
    for e in 0..o.len() {
        let r = y[e] - o[e];
        s += r * r;
    }
    s
}

/// `gp_lml`: the log marginal likelihood of a Gaussian process with the squared-exponential
/// kernel K_ij = exp(−(xᵢ−xⱼ)²/2) and noise variance s, via a Cholesky factorisation:
/// −½yᵀ(K+sI)⁻¹y − ½log det(K+sI) − (n/2)log 2π.
#[cfg_attr(feature = "ad", cotan::autodiff_reverse(gp_lml_rev, Duplicated, Duplicated, Active, Active))]
#[cfg_attr(feature = "ad", cotan::autodiff_reverse(gp_lml_rev_only, Duplicated, Duplicated, Active, ActiveOnly))]
#[cfg_attr(feature = "ad", cotan::autodiff_forward(gp_lml_fwd, Dual, Dual, Dual, Dual))]
pub fn gp_lml(x: &[f64], y: &[f64], s: f64) -> f64 {
    let n = x.len();
    // The lower triangle of K + sI, factorised in place (Cholesky–Banachiewicz).
    let mut l = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..i + 1 {
            let d = x[i] - x[j];
            let mut v = (-0.5 * d * d).exp();
            if i == j {
                v += s;
            }
            l[i * n + j] = v;
        }
    }
    for i in 0..n {
        for j in 0..i + 1 {
            let mut acc = l[i * n + j];
            for k in 0..j {
                acc -= l[i * n + k] * l[j * n + k];
            }
            if i == j {
                l[i * n + i] = acc.sqrt();
            } else {
                l[i * n + j] = acc / l[j * n + j];
            }
        }
    }
    // L z = y, so yᵀ(K+sI)⁻¹y = ‖z‖²; log det(K+sI) = 2 Σ log Lᵢᵢ.
    let mut z = vec![0.0; n];
    for i in 0..n {
        let mut acc = y[i];
        for k in 0..i {
            acc -= l[i * n + k] * z[k];
        }
        z[i] = acc / l[i * n + i];
    }
    let mut quad = 0.0;
    let mut half_logdet = 0.0;
    for i in 0..n {
        quad += z[i] * z[i];
        half_logdet += l[i * n + i].ln();
    }
    -0.5 * quad - half_logdet - 0.5 * (n as f64) * (2.0 * std::f64::consts::PI).ln()
}

/// `turing_broadcast`: the log joint density, in unconstrained space, of μ ~ Normal(1, 2)
/// truncated to [0.1, 10], σ ~ the same, and `data` ~ LogNormal(μ, σ). θ = (θ_μ, θ_σ) is
/// mapped to [0.1, 10] by a scaled logistic whose log-Jacobian is added. `log_z` is the log
/// of the truncated prior's normaliser, log(Φ(4.5) − Φ(−0.45)), a constant.
#[cfg_attr(feature = "ad", cotan::autodiff_reverse(turing_rev, Duplicated, Const, Const, Active))]
#[cfg_attr(feature = "ad", cotan::autodiff_reverse(turing_rev_only, Duplicated, Const, Const, ActiveOnly))]
#[cfg_attr(feature = "ad", cotan::autodiff_forward(turing_fwd, Dual, Const, Const, Dual))]
pub fn turing(theta: &[f64], data: &[f64], log_z: f64) -> f64 {
    let lo = 0.1;
    let hi = 10.0;
    let half_log_2pi = 0.5 * (2.0 * std::f64::consts::PI).ln();
    let s0 = 1.0 / (1.0 + (-theta[0]).exp());
    let s1 = 1.0 / (1.0 + (-theta[1]).exp());
    let mu = lo + (hi - lo) * s0;
    let sigma = lo + (hi - lo) * s1;
    let log_jac = 2.0 * (hi - lo).ln() + s0.ln() + (1.0 - s0).ln() + s1.ln() + (1.0 - s1).ln();
    // Two truncated Normal(1, 2) priors: log N(v; 1, 2) − log Z each.
    let zm = (mu - 1.0) / 2.0;
    let zs = (sigma - 1.0) / 2.0;
    let log_prior = -0.5 * zm * zm - 0.5 * zs * zs - 2.0 * (2.0f64.ln() + half_log_2pi + log_z);
    let log_sigma = sigma.ln();
    let mut log_lik = 0.0;
    for i in 0..data.len() {
        let ly = data[i].ln();
        let r = (ly - mu) / sigma;
        log_lik += -ly - log_sigma - half_log_2pi - 0.5 * r * r;
    }
    log_prior + log_jac + log_lik
}
