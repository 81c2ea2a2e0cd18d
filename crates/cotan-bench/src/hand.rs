//! Hand-written adjoints (value and gradient in one call, gradient added into `g`), the
//! practical optimum a derivative call can be compared with.

// The rows are written as the index loops of their definitions.
#![allow(clippy::needless_range_loop)]

pub fn sum(x: &[f64], g: &mut [f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i];
        g[i] += 1.0;
    }
    s
}

pub fn sum_sin(x: &[f64], g: &mut [f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i].sin();
        g[i] += x[i].cos();
    }
    s
}

pub fn sin_cos_sq(x: &[f64], g: &mut [f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        let v = x[i];
        let sq = v * v;
        s += v.sin() + sq.cos();
        g[i] += v.cos() - 2.0 * v * sq.sin();
    }
    s
}

pub fn control_flow(x: &[f64], g: &mut [f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        let v = x[i];
        if v > 0.0 {
            s += v.sin();
            g[i] += v.cos();
        } else {
            s += v.cos();
            g[i] -= v.sin();
        }
    }
    s
}

/// turing_broadcast: one pass over the data for the value and both partials.
pub fn turing(theta: &[f64], data: &[f64], log_z: f64, g: &mut [f64]) -> f64 {
    let (lo, hi) = (0.1, 10.0);
    let half_log_2pi = 0.5 * (2.0 * std::f64::consts::PI).ln();
    let s0 = 1.0 / (1.0 + (-theta[0]).exp());
    let s1 = 1.0 / (1.0 + (-theta[1]).exp());
    let mu = lo + (hi - lo) * s0;
    let sigma = lo + (hi - lo) * s1;
    let log_jac = 2.0 * (hi - lo).ln() + s0.ln() + (1.0 - s0).ln() + s1.ln() + (1.0 - s1).ln();
    let zm = (mu - 1.0) / 2.0;
    let zs = (sigma - 1.0) / 2.0;
    let log_prior = -0.5 * zm * zm - 0.5 * zs * zs - 2.0 * (2.0f64.ln() + half_log_2pi + log_z);
    let inv_sigma = 1.0 / sigma;
    let (mut sum_ly, mut sum_r, mut sum_r2) = (0.0, 0.0, 0.0);
    for &d in data {
        let ly = d.ln();
        let r = (ly - mu) * inv_sigma;
        sum_ly += ly;
        sum_r += r;
        sum_r2 += r * r;
    }
    let n = data.len() as f64;
    let log_lik = -sum_ly - n * (sigma.ln() + half_log_2pi) - 0.5 * sum_r2;
    let d_mu = sum_r * inv_sigma - 0.5 * zm;
    let d_sigma = (sum_r2 - n) * inv_sigma - 0.5 * zs;
    g[0] += d_mu * (hi - lo) * s0 * (1.0 - s0) + (1.0 - 2.0 * s0);
    g[1] += d_sigma * (hi - lo) * s1 * (1.0 - s1) + (1.0 - 2.0 * s1);
    log_prior + log_jac + log_lik
}

/// simple_mlp: gradients into `g = [dW₂, dW₁, dY, dX]`.
pub fn simple_mlp(v: &[f64], g: &mut [f64], n_out: usize, n_hid: usize, n_in: usize, nb: usize) -> f64 {
    let (w2, v) = v.split_at(n_out * n_hid);
    let (w1, v) = v.split_at(n_hid * n_in);
    let (y, x) = v.split_at(n_out * nb);
    let (dw2, g) = g.split_at_mut(n_out * n_hid);
    let (dw1, g) = g.split_at_mut(n_hid * n_in);
    let (dy, dx) = g.split_at_mut(n_out * nb);
    let mut h = vec![0.0; n_hid * nb];
    for i in 0..n_hid {
        for k in 0..n_in {
            let w = w1[i * n_in + k];
            for j in 0..nb {
                h[i * nb + j] += w * x[k * nb + j];
            }
        }
    }
    let r: Vec<f64> = h.iter().map(|&v| if v >= 0.0 { v } else { 0.0 }).collect();
    let mut o = vec![0.0; n_out * nb];
    for i in 0..n_out {
        for k in 0..n_hid {
            let w = w2[i * n_hid + k];
            for j in 0..nb {
                o[i * nb + j] += w * r[k * nb + j];
            }
        }
    }
    // e = Y − O; dY = 2e, dO = −2e (kept in `o`).
    let mut s = 0.0;
    for e in 0..o.len() {
        let r = y[e] - o[e];
        s += r * r;
        dy[e] += 2.0 * r;
        o[e] = -2.0 * r;
    }
    let d_o = o;
    // dW₂ = dO·Rᵀ, dR = W₂ᵀ·dO.
    let mut dr = vec![0.0; n_hid * nb];
    for i in 0..n_out {
        for k in 0..n_hid {
            let mut acc = 0.0;
            for j in 0..nb {
                acc += d_o[i * nb + j] * r[k * nb + j];
            }
            dw2[i * n_hid + k] += acc;
            let w = w2[i * n_hid + k];
            for j in 0..nb {
                dr[k * nb + j] += w * d_o[i * nb + j];
            }
        }
    }
    // dH = dR ⊙ [H ≥ 0]; dW₁ = dH·Xᵀ, dX = W₁ᵀ·dH.
    for e in 0..dr.len() {
        if h[e] < 0.0 {
            dr[e] = 0.0;
        }
    }
    for i in 0..n_hid {
        for k in 0..n_in {
            let mut acc = 0.0;
            for j in 0..nb {
                acc += dr[i * nb + j] * x[k * nb + j];
            }
            dw1[i * n_in + k] += acc;
            let w = w1[i * n_in + k];
            for j in 0..nb {
                dx[k * nb + j] += w * dr[i * nb + j];
            }
        }
    }
    s
}

/// gmm (packed parameters as in the model), in the style of ADBench's manual derivative:
/// the posterior weights of each point's log-sum-exp scale the per-component adjoints.
pub fn gmm(params: &[f64], x: &[f64], d: usize, k: usize, wishart_kc: f64, g: &mut [f64]) -> f64 {
    let n = x.len() / d;
    let nt = d * (d + 1) / 2;
    let (mo, io) = (k, k + k * d);
    let mut qdiag = vec![0.0; k * d];
    let mut sum_qs = vec![0.0; k];
    for c in 0..k {
        for j in 0..d {
            let q = params[io + c * nt + j];
            qdiag[c * d + j] = q.exp();
            sum_qs[c] += q;
        }
    }
    let mut xc = vec![0.0; k * d];
    let mut qx = vec![0.0; k * d];
    let mut main = vec![0.0; k];
    let mut dxc = vec![0.0; d];
    let mut slse = 0.0;
    for i in 0..n {
        for c in 0..k {
            let (xc, qx) = (&mut xc[c * d..(c + 1) * d], &mut qx[c * d..(c + 1) * d]);
            for j in 0..d {
                xc[j] = x[i * d + j] - params[mo + c * d + j];
                qx[j] = qdiag[c * d + j] * xc[j];
            }
            let mut li = io + c * nt + d;
            for j in 0..d {
                for jj in j + 1..d {
                    qx[jj] += params[li] * xc[j];
                    li += 1;
                }
            }
            let sq: f64 = qx.iter().map(|v| v * v).sum();
            main[c] = params[c] + sum_qs[c] - 0.5 * sq;
        }
        let mx = main.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mut se = 0.0;
        for m in main.iter_mut() {
            *m = (*m - mx).exp();
            se += *m;
        }
        slse += se.ln() + mx;
        for c in 0..k {
            let p = main[c] / se;
            let (xc, qx) = (&xc[c * d..(c + 1) * d], &qx[c * d..(c + 1) * d]);
            g[c] += p;
            let q0 = io + c * nt;
            for j in 0..d {
                // main = α + Σq − ½‖qx‖², so d qx = −p·qx.
                let dq = -p * qx[j];
                g[q0 + j] += p + dq * qdiag[c * d + j] * xc[j];
                dxc[j] = dq * qdiag[c * d + j];
            }
            let mut li = q0 + d;
            for j in 0..d {
                for jj in j + 1..d {
                    let dq = -p * qx[jj];
                    g[li] += dq * xc[j];
                    dxc[j] += params[li] * dq;
                    li += 1;
                }
            }
            for j in 0..d {
                g[mo + c * d + j] -= dxc[j];
            }
        }
    }
    let amx = params[..k].iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let ase: f64 = params[..k].iter().map(|a| (a - amx).exp()).sum();
    let lse_alphas = ase.ln() + amx;
    for c in 0..k {
        g[c] -= n as f64 * (params[c] - amx).exp() / ase;
    }
    let mut prior = 0.0;
    for c in 0..k {
        for j in 0..d {
            let e = qdiag[c * d + j];
            prior += 0.5 * e * e;
            g[io + c * nt + j] += e * e;
        }
        for t in d..nt {
            let l = params[io + c * nt + t];
            prior += 0.5 * l * l;
            g[io + c * nt + t] += l;
        }
    }
    let constant = -((n * d) as f64) * 0.5 * (2.0 * std::f64::consts::PI).ln();
    constant + slse - n as f64 * lse_alphas + prior - wishart_kc
}

/// Rosenbrock's gradient and Hessian-vector product in closed form (overwrites both).
pub fn rosenbrock_hvp(x: &[f64], v: &[f64], grad: &mut [f64], hv: &mut [f64]) -> f64 {
    grad.fill(0.0);
    hv.fill(0.0);
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let a = x[i + 1] - x[i] * x[i];
        let b = 1.0 - x[i];
        s += 100.0 * a * a + b * b;
        grad[i] += -400.0 * a * x[i] - 2.0 * b;
        grad[i + 1] += 200.0 * a;
        hv[i] += (1200.0 * x[i] * x[i] - 400.0 * x[i + 1] + 2.0) * v[i] - 400.0 * x[i] * v[i + 1];
        hv[i + 1] += -400.0 * x[i] * v[i] + 200.0 * v[i + 1];
    }
    s
}

fn cross(a: &[f64; 3], b: &[f64; 3]) -> [f64; 3] {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}

/// ba (x = [cameras, points, weights] as in the model): each observation's projection, then
/// its adjoint at once (no tape), the camera's and the point's gradients added in place.
pub fn ba(x: &[f64], obs: &[usize], feats: &[f64], n_cams: usize, n_points: usize, g: &mut [f64]) -> f64 {
    let (cams, x) = x.split_at(11 * n_cams);
    let (points, weights) = x.split_at(3 * n_points);
    let (gcams, g) = g.split_at_mut(11 * n_cams);
    let (gpoints, gweights) = g.split_at_mut(3 * n_points);
    let mut cost = 0.0;
    for i in 0..weights.len() {
        let (ci, pi) = (11 * obs[2 * i], 3 * obs[2 * i + 1]);
        let cam = &cams[ci..ci + 11];
        let pt = &points[pi..pi + 3];
        let w = weights[i];
        let xo = [pt[0] - cam[3], pt[1] - cam[4], pt[2] - cam[5]];
        let rot = [cam[0], cam[1], cam[2]];
        let sq = rot[0] * rot[0] + rot[1] * rot[1] + rot[2] * rot[2];
        // Forward: the rotation, keeping what its adjoint needs.
        let (theta, c, s, inv, ax, axp, dot) = if sq != 0.0 {
            let theta = sq.sqrt();
            let (s, c) = theta.sin_cos();
            let inv = 1.0 / theta;
            let ax = [rot[0] * inv, rot[1] * inv, rot[2] * inv];
            let axp = cross(&ax, &xo);
            let dot = ax[0] * xo[0] + ax[1] * xo[1] + ax[2] * xo[2];
            (theta, c, s, inv, ax, axp, dot)
        } else {
            (0.0, 1.0, 1.0, 0.0, rot, cross(&rot, &xo), 0.0)
        };
        let tmp = dot * (1.0 - c);
        let xc = if sq != 0.0 {
            [0, 1, 2].map(|k| xo[k] * c + axp[k] * s + ax[k] * tmp)
        } else {
            [0, 1, 2].map(|k| xo[k] + axp[k])
        };
        let (p0, p1) = (xc[0] / xc[2], xc[1] / xc[2]);
        let rsq = p0 * p0 + p1 * p1;
        let l = 1.0 + cam[9] * rsq + cam[10] * rsq * rsq;
        let (d0, d1) = (p0 * l, p1 * l);
        let (r0, r1) = (d0 * cam[6] + cam[7] - feats[2 * i], d1 * cam[6] + cam[8] - feats[2 * i + 1]);
        let (e0, e1) = (w * r0, w * r1);
        cost += e0 * e0 + e1 * e1;
        // Reverse.
        let (ge0, ge1) = (2.0 * e0, 2.0 * e1);
        gweights[i] += ge0 * r0 + ge1 * r1;
        let (gr0, gr1) = (w * ge0, w * ge1);
        let gc = &mut gcams[ci..ci + 11];
        gc[6] += gr0 * d0 + gr1 * d1;
        gc[7] += gr0;
        gc[8] += gr1;
        let (gd0, gd1) = (gr0 * cam[6], gr1 * cam[6]);
        let gl = gd0 * p0 + gd1 * p1;
        gc[9] += gl * rsq;
        gc[10] += gl * rsq * rsq;
        let grsq = gl * (cam[9] + 2.0 * cam[10] * rsq);
        let gp0 = gd0 * l + 2.0 * p0 * grsq;
        let gp1 = gd1 * l + 2.0 * p1 * grsq;
        let gxc = [gp0 / xc[2], gp1 / xc[2], -(gp0 * p0 + gp1 * p1) / xc[2]];
        let mut gxo = [0.0; 3];
        let mut grot = [0.0; 3];
        if sq != 0.0 {
            let mut gax = [0.0; 3];
            let mut gaxp = [0.0; 3];
            let (mut gcos, mut gsin, mut gtmp) = (0.0, 0.0, 0.0);
            for k in 0..3 {
                gxo[k] += gxc[k] * c;
                gcos += gxc[k] * xo[k];
                gaxp[k] = gxc[k] * s;
                gsin += gxc[k] * axp[k];
                gax[k] = gxc[k] * tmp;
                gtmp += gxc[k] * ax[k];
            }
            let gdot = gtmp * (1.0 - c);
            gcos -= gtmp * dot;
            let (a1, a2) = (cross(&xo, &gaxp), cross(&gaxp, &ax));
            let mut ginv = 0.0;
            for k in 0..3 {
                gax[k] += gdot * xo[k] + a1[k];
                gxo[k] += gdot * ax[k] + a2[k];
                grot[k] += gax[k] * inv;
                ginv += gax[k] * rot[k];
            }
            let gtheta = -ginv * inv * inv - gcos * s + gsin * c;
            let gsq = gtheta / (2.0 * theta);
            for k in 0..3 {
                grot[k] += 2.0 * rot[k] * gsq;
            }
        } else {
            let (a1, a2) = (cross(&gxc, &rot), cross(&xo, &gxc));
            for k in 0..3 {
                gxo[k] += gxc[k] + a1[k];
                grot[k] += a2[k];
            }
        }
        let gp = &mut gpoints[pi..pi + 3];
        for k in 0..3 {
            gc[k] += grot[k];
            gc[3 + k] -= gxo[k];
            gp[k] += gxo[k];
        }
    }
    for i in 0..weights.len() {
        let e = 1.0 - weights[i] * weights[i];
        cost += e * e;
        gweights[i] -= 4.0 * e * weights[i];
    }
    cost
}
