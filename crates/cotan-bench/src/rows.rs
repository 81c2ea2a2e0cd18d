//! Every row of the suite (`docs/benchmarks.md`), with its seeded inputs and all its columns.

use crate::bench::{Column, Rng, Row};
use crate::models::{adbench as ab, blog, large_block as lb, mooncake as mc, second_order as so};
use crate::{hand, peers};
use peers::Model;
#[cfg(feature = "peers")]
use std::cell::RefCell;
use std::rc::Rc;

const ND_HVP_NA: &str =
    "num-dual has forward mode only: H·v needs a forward-over-forward pass n directions wide (no reverse sweep)";
#[cfg(feature = "peers")]
const ND_GRAD_NA: &str = "more than 100 inputs (one forward pass per input)";
const NO_HAND: &str = "no hand-written adjoint for this row";
#[cfg(not(feature = "peers"))]
const NO_PEERS: &str = "peers not built (feature `peers`)";

/// A full-gradient call of num-dual on a model.
type NdGrad<M> = Box<dyn Fn(&M, &[f64], &mut [f64]) -> f64>;
/// A row's name and its constructor.
pub type RowMaker = (&'static str, fn(&mut Rng) -> Row);

#[cfg(feature = "peers")]
/// num-dual (one JVP), echidna (gradient) and, for small rows, num-dual's full gradient.
fn peers<M: Model + 'static>(row: Row, m: M, nd_grad: Option<NdGrad<M>>) -> Row {
    let m = Rc::new(m);
    let (m1, m2, m3) = (m.clone(), m.clone(), m);
    let buf = RefCell::new(Vec::new());
    let row = row.jvp(Column::NdJvp, move |x, v| peers::nd_jvp(&*m1, x, v, &mut buf.borrow_mut()));
    let row = match nd_grad {
        Some(f) => row.grad(Column::NdGrad, move |x, g| f(&m2, x, g)),
        None => row.na(Column::NdGrad, ND_GRAD_NA),
    };
    row.grad(Column::Tape, move |x, g| {
        peers::tape_grad(&*m3, x, g);
        f64::NAN
    })
}

#[cfg(feature = "peers")]
/// num-dual's one-pass gradient with `DualSVec64<N>`.
fn nd_grad<const N: usize, M: Model + 'static>() -> Option<NdGrad<M>> {
    let buf = RefCell::new(Vec::new());
    Some(Box::new(move |m: &M, x: &[f64], g: &mut [f64]| peers::nd_grad::<N, M>(m, x, g, &mut buf.borrow_mut())))
}

/// Without the feature `peers` the peers' columns are not measured.
#[cfg(not(feature = "peers"))]
fn peers<M: Model + 'static>(row: Row, _: M, _: Option<NdGrad<M>>) -> Row {
    row.na(Column::NdJvp, NO_PEERS).na(Column::NdGrad, NO_PEERS).na(Column::Tape, NO_PEERS)
}

#[cfg(not(feature = "peers"))]
fn nd_grad<const N: usize, M: Model + 'static>() -> Option<NdGrad<M>> {
    None
}

/// echidna's Hessian-vector product, or a note without the feature `peers`.
fn tape_hvp<M: Model + 'static>(row: Row, m: M) -> Row {
    #[cfg(feature = "peers")]
    return row.hvp(Column::Tape, move |x, v, g, hv| {
        peers::tape_hvp(&m, x, v, g, hv);
        f64::NAN
    });
    #[cfg(not(feature = "peers"))]
    {
        let _ = m;
        row.na(Column::Tape, NO_PEERS)
    }
}

macro_rules! slice_row {
    ($name:expr, $x:expr, $f:path, $rev:path, $rev_only:path, $fwd:path) => {
        Row::new($name, $x, |x| $f(x))
            .grad(Column::Rev, |x, g| $rev(x, g, 1.0))
            .grad(Column::RevOnly, |x, g| {
                $rev_only(x, g, 1.0);
                f64::NAN
            })
            .jvp(Column::Fwd, |x, v| $fwd(x, v).1)
    };
}

pub fn sum_1000(rng: &mut Rng) -> Row {
    let row = slice_row!("sum_1000", rng.normals(1000, 1.0), mc::sum, mc::sum_rev, mc::sum_rev_only, mc::sum_fwd);
    peers(row.grad(Column::Hand, hand::sum), peers::Sum, None)
}

pub fn sum_loop_1000(rng: &mut Rng) -> Row {
    let x = rng.normals(1000, 1.0);
    let row = slice_row!("_sum_1000", x, mc::sum_loop, mc::sum_loop_rev, mc::sum_loop_rev_only, mc::sum_loop_fwd);
    peers(row.grad(Column::Hand, hand::sum), peers::Sum, None)
}

pub fn sum_sin_1000(rng: &mut Rng) -> Row {
    let x = rng.normals(1000, 1.0);
    let row = slice_row!("sum_sin_1000", x, mc::sum_sin, mc::sum_sin_rev, mc::sum_sin_rev_only, mc::sum_sin_fwd);
    peers(row.grad(Column::Hand, hand::sum_sin), peers::SumSin, None)
}

pub fn sum_sin_loop_1000(rng: &mut Rng) -> Row {
    let x = rng.normals(1000, 1.0);
    let row = slice_row!(
        "_sum_sin_1000",
        x,
        mc::sum_sin_loop,
        mc::sum_sin_loop_rev,
        mc::sum_sin_loop_rev_only,
        mc::sum_sin_loop_fwd
    );
    peers(row.grad(Column::Hand, hand::sum_sin), peers::SumSin, None)
}

pub fn kron_sum(rng: &mut Rng) -> Row {
    const NA: usize = 20;
    const NB: usize = 40;
    let x = rng.normals(NA * NA + NB * NB, 1.0);
    let split = NA * NA;
    let row = Row::new("kron_sum", x, move |x| mc::kron_sum(&x[..split], &x[split..], NA, NB))
        .grad(Column::Rev, move |x, g| {
            let (da, db) = g.split_at_mut(split);
            mc::kron_sum_rev(&x[..split], da, &x[split..], db, NA, NB, 1.0)
        })
        .grad(Column::RevOnly, move |x, g| {
            let (da, db) = g.split_at_mut(split);
            mc::kron_sum_rev_only(&x[..split], da, &x[split..], db, NA, NB, 1.0);
            f64::NAN
        })
        .jvp(Column::Fwd, move |x, v| mc::kron_sum_fwd(&x[..split], &v[..split], &x[split..], &v[split..], NA, NB).1)
        .na(Column::Hand, NO_HAND);
    peers(row, peers::Kron { rows_a: NA, lda: NA, m: NA, nb: NB, upper: false }, None)
}

pub fn kron_view_sum(rng: &mut Rng) -> Row {
    const ROWS_A: usize = 40;
    const LDA: usize = 30;
    const M: usize = 20;
    const NB: usize = 40;
    let split = ROWS_A * LDA;
    let x = rng.normals(split + NB * NB, 1.0);
    let row = Row::new("kron_view_sum", x, move |x| mc::kron_view_sum(&x[..split], &x[split..], LDA, M, NB))
        .grad(Column::Rev, move |x, g| {
            let (da, db) = g.split_at_mut(split);
            mc::kron_view_sum_rev(&x[..split], da, &x[split..], db, LDA, M, NB, 1.0)
        })
        .grad(Column::RevOnly, move |x, g| {
            let (da, db) = g.split_at_mut(split);
            mc::kron_view_sum_rev_only(&x[..split], da, &x[split..], db, LDA, M, NB, 1.0);
            f64::NAN
        })
        .jvp(Column::Fwd, move |x, v| {
            mc::kron_view_sum_fwd(&x[..split], &v[..split], &x[split..], &v[split..], LDA, M, NB).1
        })
        .na(Column::Hand, NO_HAND);
    peers(row, peers::Kron { rows_a: ROWS_A, lda: LDA, m: M, nb: NB, upper: true }, None)
}

pub fn naive_map(rng: &mut Rng) -> Row {
    let x = rng.normals(100, 1.0);
    let row = slice_row!(
        "naive_map_sin_cos_exp",
        x,
        mc::naive_map,
        mc::naive_map_rev,
        mc::naive_map_rev_only,
        mc::naive_map_fwd
    );
    peers(row.na(Column::Hand, NO_HAND), peers::SinCosExp { buffer: true, stages: false }, nd_grad::<100, _>())
}

pub fn map_sce(rng: &mut Rng) -> Row {
    let x = rng.normals(100, 1.0);
    let row = slice_row!("map_sin_cos_exp", x, mc::map_sce, mc::map_sce_rev, mc::map_sce_rev_only, mc::map_sce_fwd);
    peers(row.na(Column::Hand, NO_HAND), peers::SinCosExp { buffer: false, stages: false }, nd_grad::<100, _>())
}

pub fn broadcast_sce(rng: &mut Rng) -> Row {
    let x = rng.normals(100, 1.0);
    let row = slice_row!(
        "broadcast_sin_cos_exp",
        x,
        mc::broadcast_sce,
        mc::broadcast_sce_rev,
        mc::broadcast_sce_rev_only,
        mc::broadcast_sce_fwd
    );
    peers(row.na(Column::Hand, NO_HAND), peers::SinCosExp { buffer: true, stages: true }, nd_grad::<100, _>())
}

pub fn simple_mlp(rng: &mut Rng) -> Row {
    const O: usize = 128;
    const H: usize = 256;
    const I: usize = 128;
    const B: usize = 70;
    let mut x = rng.normals(O * H, 1.0 / (H as f64).sqrt());
    x.extend(rng.normals(H * I, 1.0 / (I as f64).sqrt()));
    x.extend(rng.normals(O * B + I * B, 1.0));
    fn split(x: &[f64]) -> (&[f64], &[f64], &[f64], &[f64]) {
        let (w2, x) = x.split_at(O * H);
        let (w1, x) = x.split_at(H * I);
        let (y, x) = x.split_at(O * B);
        (w2, w1, y, x)
    }
    fn split_mut(x: &mut [f64]) -> (&mut [f64], &mut [f64], &mut [f64], &mut [f64]) {
        let (w2, x) = x.split_at_mut(O * H);
        let (w1, x) = x.split_at_mut(H * I);
        let (y, x) = x.split_at_mut(O * B);
        (w2, w1, y, x)
    }
    let row = Row::new("simple_mlp", x, |v| {
        let (w2, w1, y, x) = split(v);
        mc::simple_mlp(w2, w1, y, x, O, H, I, B)
    })
    .grad(Column::Rev, |v, g| {
        let ((w2, w1, y, x), (dw2, dw1, dy, dx)) = (split(v), split_mut(g));
        mc::simple_mlp_rev(w2, dw2, w1, dw1, y, dy, x, dx, O, H, I, B, 1.0)
    })
    .grad(Column::RevOnly, |v, g| {
        let ((w2, w1, y, x), (dw2, dw1, dy, dx)) = (split(v), split_mut(g));
        mc::simple_mlp_rev_only(w2, dw2, w1, dw1, y, dy, x, dx, O, H, I, B, 1.0);
        f64::NAN
    })
    .jvp(Column::Fwd, |v, t| {
        let ((w2, w1, y, x), (dw2, dw1, dy, dx)) = (split(v), split(t));
        mc::simple_mlp_fwd(w2, dw2, w1, dw1, y, dy, x, dx, O, H, I, B).1
    })
    .grad(Column::Hand, |v, g| hand::simple_mlp(v, g, O, H, I, B))
    .fd_step(1e-3)
    // A smaller step along a random direction: relu kinks are crossed less often.
    .fd_dir_step(1e-6);
    peers(row, peers::Mlp { n_out: O, n_hid: H, n_in: I, n_batch: B }, None)
}

pub fn gp_lml(rng: &mut Rng) -> Row {
    const N: usize = 128;
    let mut x: Vec<f64> = (0..N).map(|i| 0.2 * i as f64).collect();
    x.extend(rng.normals(N, 1.0));
    x.push(1.0);
    let row = Row::new("gp_lml", x, |v| mc::gp_lml(&v[..N], &v[N..2 * N], v[2 * N]))
        .grad(Column::Rev, |v, g| {
            let (dx, dy) = g.split_at_mut(N);
            let (val, ds) = mc::gp_lml_rev(&v[..N], dx, &v[N..2 * N], &mut dy[..N], v[2 * N], 1.0);
            dy[N] += ds;
            val
        })
        .grad(Column::RevOnly, |v, g| {
            let (dx, dy) = g.split_at_mut(N);
            let ds = mc::gp_lml_rev_only(&v[..N], dx, &v[N..2 * N], &mut dy[..N], v[2 * N], 1.0);
            dy[N] += ds;
            f64::NAN
        })
        .jvp(Column::Fwd, |v, t| mc::gp_lml_fwd(&v[..N], &t[..N], &v[N..2 * N], &t[N..2 * N], v[2 * N], t[2 * N]).1)
        .na(Column::Hand, NO_HAND);
    peers(row, peers::Gp { n: N }, None)
}

/// log(Φ(4.5) − Φ(−0.45)): the normaliser of Normal(1, 2) truncated to [0.1, 10].
pub const TURING_LOG_Z: f64 = -0.3950573837976776;

pub fn turing(rng: &mut Rng) -> Row {
    let data: Rc<Vec<f64>> = Rc::new((0..100_000).map(|_| (1.0 + 0.5 * rng.normal()).exp()).collect());
    let (d1, d2, d3) = (data.clone(), data.clone(), data.clone());
    let (d4, d5) = (data.clone(), data.clone());
    let theta = vec![-1.2, -2.0];
    let row = Row::new("turing_broadcast", theta, move |t| mc::turing(t, &d1, TURING_LOG_Z))
        .grad(Column::Rev, move |t, g| mc::turing_rev(t, g, &d2, TURING_LOG_Z, 1.0))
        .grad(Column::RevOnly, move |t, g| {
            mc::turing_rev_only(t, g, &d3, TURING_LOG_Z, 1.0);
            f64::NAN
        })
        .jvp(Column::Fwd, move |t, v| mc::turing_fwd(t, v, &d4, TURING_LOG_Z).1)
        .grad(Column::Hand, move |t, g| hand::turing(t, &d5, TURING_LOG_Z, g));
    peers(row, peers::Turing { data, log_z: TURING_LOG_Z }, nd_grad::<2, _>())
}

pub fn large_block(_rng: &mut Rng) -> Row {
    let row = Row::new("large_single_block", vec![0.9, 0.99], |x| lb::large_block(x[0], x[1]))
        .grad(Column::Rev, |x, g| {
            let (val, d1, d2) = lb::large_block_rev(x[0], x[1], 1.0);
            g[0] += d1;
            g[1] += d2;
            val
        })
        .grad(Column::RevOnly, |x, g| {
            let (d1, d2) = lb::large_block_rev_only(x[0], x[1], 1.0);
            g[0] += d1;
            g[1] += d2;
            f64::NAN
        })
        .jvp(Column::Fwd, |x, v| lb::large_block_fwd(x[0], v[0], x[1], v[1]).1)
        .na(Column::Hand, NO_HAND)
        .fd_step(1e-5);
    peers(row, peers::Large, nd_grad::<2, _>())
}

pub fn sin_cos_sq(rng: &mut Rng) -> Row {
    let x = rng.normals(1000, 1.0);
    let row = slice_row!(
        "sin_cos_sq",
        x,
        blog::sin_cos_sq,
        blog::sin_cos_sq_rev,
        blog::sin_cos_sq_rev_only,
        blog::sin_cos_sq_fwd
    );
    peers(row.grad(Column::Hand, hand::sin_cos_sq), peers::SinCosSq, None)
}

pub fn control_flow(rng: &mut Rng) -> Row {
    let x = rng.normals(1000, 1.0);
    let row = slice_row!(
        "control_flow",
        x,
        blog::control_flow,
        blog::control_flow_rev,
        blog::control_flow_rev_only,
        blog::control_flow_fwd
    );
    peers(row.grad(Column::Hand, hand::control_flow), peers::ControlFlow, None)
}

/// ln Γ(m/2) for a positive integer m, exactly from Γ(1/2) = √π, Γ(1) = 1, Γ(a+1) = aΓ(a).
fn ln_gamma_half(m: usize) -> f64 {
    let (mut a, mut acc) = if m.is_multiple_of(2) { (1.0, 0.0) } else { (0.5, 0.5 * std::f64::consts::PI.ln()) };
    while 2.0 * a < m as f64 {
        acc += a.ln();
        a += 1.0;
    }
    acc
}

/// K·C, the Wishart prior's constant (γ = 1, m = 0, so n = d + 1 degrees of freedom).
pub fn wishart_kc(d: usize, k: usize) -> f64 {
    let n = d + 1;
    // log Γ_d(n/2) = d(d−1)/4·log π + Σ_{j=1}^{d} log Γ((n + 1 − j)/2).
    let lmgamma =
        (d * (d - 1)) as f64 / 4.0 * std::f64::consts::PI.ln() + (1..=d).map(|j| ln_gamma_half(n + 1 - j)).sum::<f64>();
    let c = (n * d) as f64 * (0.0 - 0.5 * 2f64.ln()) - lmgamma;
    k as f64 * c
}

/// GMM inputs: packed parameters (α, μ, icf) and n data points.
pub fn gmm_inputs(rng: &mut Rng, d: usize, k: usize, n: usize) -> (Vec<f64>, Vec<f64>) {
    let nt = d * (d + 1) / 2;
    let mut params = rng.normals(k, 1.0);
    params.extend(rng.uniforms(k * d, -1.0, 1.0));
    params.extend(rng.normals(k * nt, 0.3));
    (params, rng.normals(n * d, 1.0))
}

pub fn gmm(rng: &mut Rng, name: &'static str, d: usize, k: usize) -> Row {
    let (row, data, kc) = gmm_cotan(rng, name, d, k, 1000);
    let model = peers::Gmm { data, d, k, wishart_kc: kc };
    let grad = if d == 2 && k == 5 { nd_grad::<30, _>() } else { None };
    peers(row, model, grad)
}

/// The GMM row's cotan and hand-written columns for d dimensions, k components and n points
/// (the scaling table uses it alone), with its data and the Wishart constant.
pub fn gmm_cotan(rng: &mut Rng, name: &'static str, d: usize, k: usize, n: usize) -> (Row, Rc<Vec<f64>>, f64) {
    let (params, data) = gmm_inputs(rng, d, k, n);
    let kc = wishart_kc(d, k);
    let data = Rc::new(data);
    let (d1, d2, d3, d4, d5) = (data.clone(), data.clone(), data.clone(), data.clone(), data.clone());
    let row = Row::new(name, params, move |p| ab::gmm(p, &d1, d, k, kc))
        .grad(Column::Rev, move |p, g| ab::gmm_rev(p, g, &d2, d, k, kc, 1.0))
        .grad(Column::RevOnly, move |p, g| {
            ab::gmm_rev_only(p, g, &d3, d, k, kc, 1.0);
            f64::NAN
        })
        .jvp(Column::Fwd, move |p, v| ab::gmm_fwd(p, v, &d4, d, k, kc).1)
        .grad(Column::Hand, move |p, g| hand::gmm(p, &d5, d, k, kc, g));
    (row, data, kc)
}

/// Channels of the LSTM rows (ADBench's smallest problem: 14).
pub const LSTM_B: usize = 14;

pub fn lstm(rng: &mut Rng) -> Row {
    let (l, c, b) = (2, 1024, LSTM_B);
    let (row, state, seq) = lstm_cotan(rng, "lstm", l, c);
    peers(row, peers::Lstm { state0: state, seq, l, c, b }, None)
}

/// The LSTM row's cotan columns for `l` layers and a sequence of length `c` (the scaling
/// table uses it alone), with its initial state and sequence.
pub fn lstm_cotan(rng: &mut Rng, name: &'static str, l: usize, c: usize) -> (Row, Rc<Vec<f64>>, Rc<Vec<f64>>) {
    let b = LSTM_B;
    let main = 2 * l * 4 * b;
    let mut x = rng.uniforms(main, -1.0, 1.0);
    x.extend(rng.uniforms(3 * b, -1.0, 1.0));
    let state: Rc<Vec<f64>> = Rc::new(rng.uniforms(2 * l * b, -1.0, 1.0));
    let seq: Rc<Vec<f64>> = Rc::new(rng.uniforms(c * b, -1.0, 1.0));
    let (s1, s2, s3, s4) = (state.clone(), state.clone(), state.clone(), state.clone());
    let (q1, q2, q3, q4) = (seq.clone(), seq.clone(), seq.clone(), seq.clone());
    let row = Row::new(name, x, move |v| ab::lstm(&v[..main], &v[main..], &s1, &q1, l, c, b))
        .grad(Column::Rev, move |v, g| {
            let (dm, de) = g.split_at_mut(main);
            ab::lstm_rev(&v[..main], dm, &v[main..], de, &s2, &q2, l, c, b, 1.0)
        })
        .grad(Column::RevOnly, move |v, g| {
            let (dm, de) = g.split_at_mut(main);
            ab::lstm_rev_only(&v[..main], dm, &v[main..], de, &s3, &q3, l, c, b, 1.0);
            f64::NAN
        })
        .jvp(Column::Fwd, move |v, t| ab::lstm_fwd(&v[..main], &t[..main], &v[main..], &t[main..], &s4, &q4, l, c, b).1)
        .na(Column::Hand, NO_HAND)
        // The loss is a mean of 14·(c − 1) terms, the partials down to 1e-8: a step of 1e-4
        // leaves round-off of the order of the tolerance (smooth gates, so a larger step
        // costs no truncation error worth the name with the Richardson step).
        .fd_step(1e-3);
    (row, state, seq)
}

/// BA's synthetic problem: cameras, points, weights (the differentiated inputs, flattened),
/// the (camera, point) pairs and the observed features.
pub struct BaProblem {
    pub n_cams: usize,
    pub n_points: usize,
    pub x: Vec<f64>,
    pub obs: Vec<usize>,
    pub feats: Vec<f64>,
}

/// A small BA problem as ADBench's generator makes them: every camera looks down +z at
/// points about 5 units away, with small rotations, unit focal length and mild distortion.
pub fn ba_problem(rng: &mut Rng, n_cams: usize, n_points: usize, n_obs: usize) -> BaProblem {
    let mut x = Vec::with_capacity(11 * n_cams + 3 * n_points + n_obs);
    for _ in 0..n_cams {
        x.extend(rng.normals(3, 0.2));
        x.extend(rng.normals(3, 0.3));
        x.push(1.0 + 0.1 * rng.normal());
        x.extend(rng.normals(2, 0.05));
        x.extend(rng.normals(2, 0.02));
    }
    for _ in 0..n_points {
        x.push(rng.normal());
        x.push(rng.normal());
        x.push(5.0 + 0.5 * rng.normal());
    }
    x.extend(rng.uniforms(n_obs, 0.5, 1.5));
    let mut obs = Vec::with_capacity(2 * n_obs);
    for i in 0..n_obs {
        obs.push(i % n_cams);
        obs.push((rng.next_u64() % n_points as u64) as usize);
    }
    let feats = rng.normals(2 * n_obs, 0.3);
    BaProblem { n_cams, n_points, x, obs, feats }
}

pub fn ba(rng: &mut Rng) -> Row {
    let pb = ba_problem(rng, 10, 200, 1000);
    let (nc, np) = (pb.n_cams, pb.n_points);
    let (c_end, p_end) = (11 * nc, 11 * nc + 3 * np);
    let obs = Rc::new(pb.obs);
    let feats = Rc::new(pb.feats);
    let (o1, o2, o3, o4, o5) = (obs.clone(), obs.clone(), obs.clone(), obs.clone(), obs.clone());
    let (f1, f2, f3, f4, f5) = (feats.clone(), feats.clone(), feats.clone(), feats.clone(), feats.clone());
    let row = Row::new("ba", pb.x, move |x| ab::ba(&x[..c_end], &x[c_end..p_end], &x[p_end..], &o1, &f1))
        .grad(Column::Rev, move |x, g| {
            let (gc, g) = g.split_at_mut(c_end);
            let (gp, gw) = g.split_at_mut(p_end - c_end);
            ab::ba_rev(&x[..c_end], gc, &x[c_end..p_end], gp, &x[p_end..], gw, &o2, &f2, 1.0)
        })
        .grad(Column::RevOnly, move |x, g| {
            let (gc, g) = g.split_at_mut(c_end);
            let (gp, gw) = g.split_at_mut(p_end - c_end);
            ab::ba_rev_only(&x[..c_end], gc, &x[c_end..p_end], gp, &x[p_end..], gw, &o3, &f3, 1.0);
            f64::NAN
        })
        .jvp(Column::Fwd, move |x, v| {
            let (xc, xp, xw) = (&x[..c_end], &x[c_end..p_end], &x[p_end..]);
            let (vc, vp, vw) = (&v[..c_end], &v[c_end..p_end], &v[p_end..]);
            ab::ba_fwd(xc, vc, xp, vp, xw, vw, &o4, &f4).1
        })
        .grad(Column::Hand, move |x, g| hand::ba(x, &o5, &f5, nc, np, g));
    peers(row, peers::Ba { n_cams: nc, n_points: np, obs, feats }, None)
}

const NN: usize = ab::ODE_N * ab::ODE_N;
/// ode_real's integration: start time (the forcing is on from 1.1), step, number of steps.
pub const ODE_T0: f64 = 1.1;
pub const ODE_DT: f64 = 1e-5;
pub const ODE_STEPS: usize = 20;

/// ADBench's `init_brusselator` state (u₀, v₀) and p = (3.4, 1, 10), flattened.
pub fn ode_inputs() -> Vec<f64> {
    let n = ab::ODE_N;
    let at = |i: usize| i as f64 / (n - 1) as f64;
    let mut x = vec![0.0; 2 * NN + 3];
    for i in 0..n {
        for j in 0..n {
            let (gx, gy) = (at(i), at(j));
            x[n * i + j] = 22.0 * (gy * (1.0 - gy)) * (gy * (1.0 - gy)).sqrt();
            x[NN + n * i + j] = 27.0 * (gx * (1.0 - gx)) * (gx * (1.0 - gx)).sqrt();
        }
    }
    x[2 * NN..].copy_from_slice(&[3.4, 1.0, 10.0]);
    x
}

type Grid = [f64; NN];
fn grids(x: &[f64]) -> (&Grid, &Grid, &[f64; 3]) {
    (x[..NN].try_into().unwrap(), x[NN..2 * NN].try_into().unwrap(), x[2 * NN..].try_into().unwrap())
}
fn grids_mut(g: &mut [f64]) -> (&mut Grid, &mut Grid, &mut [f64; 3]) {
    let (gu, g) = g.split_at_mut(NN);
    let (gv, gp) = g.split_at_mut(NN);
    (gu.try_into().unwrap(), gv.try_into().unwrap(), gp.try_into().unwrap())
}

pub fn ode(_rng: &mut Rng) -> Row {
    let (t0, dt, steps) = (ODE_T0, ODE_DT, ODE_STEPS);
    let row = Row::new("ode_brusselator", ode_inputs(), move |x| {
        let (u, v, p) = grids(x);
        ab::ode_real(u, v, p, t0, dt, steps)
    })
    .grad(Column::Rev, move |x, g| {
        let ((u, v, p), (gu, gv, gp)) = (grids(x), grids_mut(g));
        ab::ode_real_rev(u, gu, v, gv, p, gp, t0, dt, steps, 1.0)
    })
    .grad(Column::RevOnly, move |x, g| {
        let ((u, v, p), (gu, gv, gp)) = (grids(x), grids_mut(g));
        ab::ode_real_rev_only(u, gu, v, gv, p, gp, t0, dt, steps, 1.0);
        f64::NAN
    })
    .jvp(Column::Fwd, move |x, t| {
        let ((u, v, p), (tu, tv, tp)) = (grids(x), grids(t));
        ab::ode_real_fwd(u, tu, v, tv, p, tp, t0, dt, steps).1
    })
    .na(Column::Hand, NO_HAND);
    peers(row, peers::Ode { t0, dt, steps }, None)
}

pub fn hvp_rosenbrock(rng: &mut Rng) -> Row {
    let x = rng.uniforms(1000, -1.2, 1.2);
    let row = Row::new("hvp_rosenbrock", x, so::rosenbrock)
        .hvp(Column::Hvp, so::rosenbrock_hvp)
        .hvp(Column::Hand, hand::rosenbrock_hvp);
    tape_hvp(row, peers::Rosenbrock).na(Column::NdJvp, ND_HVP_NA)
}

pub fn hvp_gmm(rng: &mut Rng) -> Row {
    let (d, k) = (2, 5);
    let (params, data) = gmm_inputs(rng, d, k, 1000);
    let kc = wishart_kc(d, k);
    let data = Rc::new(data);
    let (d1, d2) = (data.clone(), data.clone());
    let model = peers::Gmm { data, d, k, wishart_kc: kc };
    let row = Row::new("hvp_gmm", params, move |p| ab::gmm(p, &d1, d, k, kc))
        .hvp(Column::Hvp, move |p, v, g, hv| ab::gmm_hvp(p, v, &d2, d, k, kc, g, hv))
        .na(Column::Hand, "no hand-written HVP for gmm");
    tape_hvp(row, model).na(Column::NdJvp, ND_HVP_NA)
}

/// All rows, in the order of BENCHMARKS.md, each with its own seeded RNG.
pub fn all() -> Vec<RowMaker> {
    vec![
        ("sum_1000", sum_1000),
        ("_sum_1000", sum_loop_1000),
        ("sum_sin_1000", sum_sin_1000),
        ("_sum_sin_1000", sum_sin_loop_1000),
        ("kron_sum", kron_sum),
        ("kron_view_sum", kron_view_sum),
        ("naive_map_sin_cos_exp", naive_map),
        ("map_sin_cos_exp", map_sce),
        ("broadcast_sin_cos_exp", broadcast_sce),
        ("simple_mlp", simple_mlp),
        ("gp_lml", gp_lml),
        ("turing_broadcast", turing),
        ("large_single_block", large_block),
        ("sin_cos_sq", sin_cos_sq),
        ("control_flow", control_flow),
        ("gmm_d10_k25", |r| gmm(r, "gmm_d10_k25", 10, 25)),
        ("gmm_d2_k5", |r| gmm(r, "gmm_d2_k5", 2, 5)),
        ("lstm", lstm),
        ("ba", ba),
        ("ode_brusselator", ode),
        ("hvp_rosenbrock", hvp_rosenbrock),
        ("hvp_gmm", hvp_gmm),
    ]
}
