//! Traits: an autodiff attribute on a method of a trait impl (the trait declares the
//! derivative, as in std), and generic functions that call the methods of a trait marked
//! `#[cotan::differentiable]` (its impls marked too), in every mode.

// The functions here are written the way users write them, not the way clippy would.
#![allow(clippy::all, clippy::pedantic, dead_code)]

use cotan::{autodiff_forward, autodiff_reverse, hvp, Differentiable};

/// std's pattern: the trait declares the derivative, the impl's attribute defines it.
trait Volumetric {
    fn psi(&self, j: f64) -> f64;
    fn d_psi(&self, j: f64, b_psi: f64) -> (f64, f64);
    fn stress(&self, j: f64) -> f64 {
        let (_, d) = self.d_psi(j, 1.0);
        d * j
    }
}

struct Ogden {
    k: f64,
}

impl Volumetric for Ogden {
    #[autodiff_reverse(d_psi, Const, Active, Active)]
    fn psi(&self, j: f64) -> f64 {
        self.k * 0.25 * (j * j - 1.0 - 2.0 * j.ln())
    }
}

#[test]
fn an_attribute_on_a_method_of_a_trait_impl() {
    let vol = Ogden { k: 1.3 };
    for j in [0.6, 0.8, 1.4] {
        let want = vol.k * 0.5 * (j * j - 1.0);
        assert!((vol.stress(j) - want).abs() < 1e-14, "{} vs {want}", vol.stress(j));
    }
}

/// A model written against a trait, with several impls.
#[cotan::differentiable]
trait Model {
    fn logp(&self, x: &[f64]) -> f64;
}

#[derive(Clone, Differentiable)]
struct Gauss {
    mu: f64,
    s: f64,
}

#[cotan::differentiable]
impl Model for Gauss {
    fn logp(&self, x: &[f64]) -> f64 {
        let mut acc = 0.0;
        for i in 0..x.len() {
            let z = (x[i] - self.mu) / self.s;
            acc -= 0.5 * z * z;
        }
        acc - x.len() as f64 * self.s.ln()
    }
}

#[derive(Clone, Differentiable)]
struct Banana {
    b: f64,
}

#[cotan::differentiable]
impl Model for Banana {
    fn logp(&self, x: &[f64]) -> f64 {
        let y = x[1] + self.b * x[0] * x[0];
        -0.5 * x[0] * x[0] - 0.5 * y * y + prior(self.b)
    }
}

/// A helper of an impl's method, found and differentiated like any other.
fn prior(b: f64) -> f64 {
    -b * b
}

#[autodiff_reverse(d_objective, Duplicated, Const, Active)]
#[autodiff_forward(t_objective, Dual, Const, Dual)]
#[hvp(h_objective)]
#[cotan::hessian(hess_objective)]
fn objective<M: Model>(x: &[f64], m: &M) -> f64 {
    m.logp(x) + 0.1 * x[0]
}

/// The model's own parameters as active inputs: its shadow receives their gradient.
#[autodiff_reverse(d_params, Duplicated, Const, Active)]
fn params_objective<M: Model>(m: &M, x: &[f64]) -> f64 {
    2.0 * m.logp(x)
}

fn fd(f: &dyn Fn(f64) -> f64) -> f64 {
    let h = 1e-6;
    (f(h) - f(-h)) / (2.0 * h)
}

fn check_model<M: Model + Clone + Differentiable>(m: &M, x: &[f64]) {
    let mut dx = vec![0.0; x.len()];
    let value = d_objective(x, &mut dx, m, 1.0);
    assert_eq!(value, objective(x, m));
    for k in 0..x.len() {
        let want = fd(&|e| {
            let mut y = x.to_vec();
            y[k] += e;
            objective(&y, m)
        });
        assert!((dx[k] - want).abs() <= 1e-6 * want.abs().max(1.0), "d/dx[{k}]: {} vs {want}", dx[k]);
    }
    // Forward mode along a direction agrees with reverse mode.
    let u: Vec<f64> = (0..x.len()).map(|k| 0.3 - 0.2 * k as f64).collect();
    let (v2, jv) = t_objective(x, &u, m);
    assert_eq!(v2, value);
    let want: f64 = dx.iter().zip(&u).map(|(a, b)| a * b).sum();
    assert!((jv - want).abs() <= 1e-10 * want.abs().max(1.0), "{jv} vs {want}");
    // The Hessian-vector product against differences of the gradient.
    let mut g = vec![0.0; x.len()];
    let mut hv = vec![0.0; x.len()];
    h_objective(x, &u, m, &mut g, &mut hv);
    let grad = |y: &[f64]| {
        let mut d = vec![0.0; y.len()];
        d_objective(y, &mut d, m, 1.0);
        d
    };
    for k in 0..x.len() {
        let want = fd(&|e| {
            let y: Vec<f64> = x.iter().zip(&u).map(|(a, b)| a + e * b).collect();
            grad(&y)[k]
        });
        assert!((hv[k] - want).abs() <= 1e-6 * want.abs().max(1.0), "hv[{k}]: {} vs {want}", hv[k]);
    }
    // The Hessian (its batched directions fall back to one per call through the trait's
    // sweeps): its columns against Hessian-vector products along unit directions.
    let n = x.len();
    let mut hess = vec![0.0; n * n];
    let value_h = hess_objective(x, m, &mut g, &mut hess);
    assert_eq!(value_h, value);
    for j in 0..n {
        let e: Vec<f64> = (0..n).map(|i| if i == j { 1.0 } else { 0.0 }).collect();
        h_objective(x, &e, m, &mut g, &mut hv);
        for i in 0..n {
            let (a, b) = (hess[i * n + j], hv[i]);
            assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "hess[{i}][{j}]: {a} vs {b}");
        }
    }
}

#[test]
fn generic_functions_over_a_marked_trait() {
    check_model(&Gauss { mu: 0.3, s: 1.7 }, &[0.5, -1.0, 2.0]);
    check_model(&Banana { b: 0.4 }, &[0.5, -1.0]);
}

#[test]
fn the_model_parameters_as_active_inputs() {
    let m = Gauss { mu: 0.3, s: 1.7 };
    let x = [0.5, -1.0, 2.0];
    let mut dm = m.zero_like();
    d_params(&m, &mut dm, &x, 1.0);
    let mu = fd(&|e| params_objective(&Gauss { mu: m.mu + e, ..m.clone() }, &x));
    let s = fd(&|e| params_objective(&Gauss { s: m.s + e, ..m.clone() }, &x));
    assert!((dm.mu - mu).abs() < 1e-6 && (dm.s - s).abs() < 1e-6, "{} {mu} {} {s}", dm.mu, dm.s);
}

/// std's other pattern: the attribute on the method's declaration in the trait, the impls
/// without attributes. The derivative is a provided method of the trait.
trait Energy {
    #[autodiff_reverse(d_energy, Const, Active, Active)]
    #[autodiff_forward(t_energy, Const, Dual, Dual)]
    #[autodiff_forward(t2_energy, 2, Const, Dual, Dual)]
    fn energy(&self, x: f64) -> f64;

    #[autodiff_reverse(d_total, Duplicated, Duplicated, Active)]
    #[autodiff_forward(t_total, Dual, Dual, Dual)]
    fn total(&self, xs: &[f64]) -> f64;

    /// No receiver: an associated function of each impl.
    #[autodiff_reverse(d_scale, Active, Active)]
    fn scale(x: f64) -> f64;
}

#[derive(Clone, Copy, Debug, PartialEq, Default)]
struct Harmonic {
    k: f64,
}

impl Energy for Harmonic {
    fn energy(&self, x: f64) -> f64 {
        0.5 * self.k * x * x
    }
    fn total(&self, xs: &[f64]) -> f64 {
        xs.iter().map(|&x| self.energy(x)).sum::<f64>() * Self::scale(self.k)
    }
    fn scale(x: f64) -> f64 {
        x.sqrt()
    }
}

mod anharmonic {
    #[derive(Clone, Copy, Debug, PartialEq, Default)]
    pub struct Morse {
        pub depth: f64,
        pub width: f64,
    }

    impl super::Energy for Morse {
        fn energy(&self, x: f64) -> f64 {
            self.depth * well(self.width * x)
        }
        fn total(&self, xs: &[f64]) -> f64 {
            let mut e = 0.0;
            for i in 1..xs.len() {
                e += self.energy(xs[i] - xs[i - 1]);
            }
            e
        }
        fn scale(x: f64) -> f64 {
            x.exp()
        }
    }

    pub(crate) fn well(r: f64) -> f64 {
        (1.0 - (-r).exp()).powi(2)
    }
}

use anharmonic::Morse;

#[test]
fn an_attribute_on_a_method_declared_in_a_trait() {
    let fd = |f: &dyn Fn(f64) -> f64, x: f64| (f(x + 1e-6) - f(x - 1e-6)) / 2e-6;
    let h = Harmonic { k: 2.5 };
    let m = Morse { depth: 1.5, width: 0.7 };
    for x in [-0.4, 0.3, 1.2] {
        // Reverse, forward and batched forward, against central differences.
        let (v, d) = h.d_energy(x, 1.0);
        assert_eq!(v, h.energy(x));
        assert!((d - fd(&|x| h.energy(x), x)).abs() < 1e-8, "harmonic: {d}");
        assert_eq!(h.t_energy(x, 1.0), (v, d));
        let (v, d) = m.d_energy(x, 2.0);
        assert_eq!(v, m.energy(x));
        assert!((d - 2.0 * fd(&|x| m.energy(x), x)).abs() < 1e-8, "morse: {d}");
        let [v2, a, b] = m.t2_energy(x, 1.0, -3.0);
        assert_eq!(v2, v);
        assert!((a - d / 2.0).abs() < 1e-12 && (b + 1.5 * d).abs() < 1e-12, "{a} {b} {d}");
        // An associated function, per impl.
        let (s, ds) = <Harmonic as Energy>::d_scale(x + 2.0, 1.0);
        assert_eq!(s, Harmonic::scale(x + 2.0));
        assert!((ds - fd(&Harmonic::scale, x + 2.0)).abs() < 1e-8);
        let (_, ds) = Morse::d_scale(x, 1.0);
        assert!((ds - x.exp()).abs() < 1e-12);
    }
    // The receiver `Duplicated`: its shadow is the impl's type, as std gives it.
    let xs = [0.3, -0.2, 0.9, 1.4];
    let (mut dh, mut dxs) = (Harmonic::default(), [0.0; 4]);
    let v = h.d_total(&mut dh, &xs, &mut dxs, 1.0);
    assert_eq!(v, h.total(&xs));
    let want_dk = fd(&|k| Harmonic { k }.total(&xs), h.k);
    assert!((dh.k - want_dk).abs() < 1e-8, "{} vs {want_dk}", dh.k);
    for i in 0..4 {
        let f = |xi: f64| {
            let mut xp = xs;
            xp[i] = xi;
            h.total(&xp)
        };
        assert!((dxs[i] - fd(&f, xs[i])).abs() < 1e-8, "dx[{i}]");
    }
    let (mut dm, mut dxm) = (Morse::default(), [0.0; 4]);
    m.d_total(&mut dm, &xs, &mut dxm, 1.0);
    let want_depth = fd(&|depth| Morse { depth, ..m }.total(&xs), m.depth);
    let want_width = fd(&|width| Morse { width, ..m }.total(&xs), m.width);
    assert!((dm.depth - want_depth).abs() < 1e-8 && (dm.width - want_width).abs() < 1e-8, "{dm:?}");
    // Forward against reverse (dot-product test).
    let (tm, txs) = (Morse { depth: 0.5, width: -1.0 }, [1.0, 0.5, -0.25, 2.0]);
    let (_, t) = m.t_total(&tm, &xs, &txs);
    let want = dm.depth * tm.depth + dm.width * tm.width + dxm.iter().zip(&txs).map(|(a, b)| a * b).sum::<f64>();
    assert!((t - want).abs() < 1e-12 * want.abs().max(1.0), "{t} vs {want}");
}

/// Trait methods called by their qualified paths (`<T as Trait>::f(..)`, `<T>::f(..)`).
#[autodiff_reverse(d_qualified, Const, Duplicated, Active)]
#[autodiff_forward(t_qualified, Const, Dual, Dual)]
fn qualified(h: &Harmonic, x: &[f64]) -> f64 {
    <Harmonic as Energy>::energy(h, x[0]) + <Morse as Energy>::scale(x[1]) * <Harmonic>::scale(x[0] * x[0] + 1.0)
}

#[test]
fn trait_methods_called_by_qualified_paths() {
    let h = Harmonic { k: 1.5 };
    let x = [0.7, -0.3];
    let mut g = [0.0; 2];
    let v = d_qualified(&h, &x, &mut g, 1.0);
    assert_eq!(v, qualified(&h, &x));
    for k in 0..2 {
        let (mut p, mut m) = (x, x);
        p[k] += 1e-6;
        m[k] -= 1e-6;
        let fd = (qualified(&h, &p) - qualified(&h, &m)) / 2e-6;
        assert!((g[k] - fd).abs() < 1e-8 * fd.abs().max(1.0), "x[{k}]: {} vs {fd}", g[k]);
    }
    let u = [0.4, -1.1];
    let (_, t) = t_qualified(&h, &x, &u);
    assert!((t - (g[0] * u[0] + g[1] * u[1])).abs() < 1e-12);
}

/// A generic helper over the trait, called with a concrete model and from a generic root:
/// lowered at its calls with the caller's type.
fn penalized<M: Model>(m: &M, x: &[f64], w: f64) -> f64 {
    m.logp(x) - w * x.iter().map(|v| v * v).sum::<f64>()
}

#[autodiff_reverse(d_banana_objective, Duplicated, Const, Const, Active)]
#[autodiff_forward(t_banana_objective, Dual, Const, Const, Dual)]
#[hvp(h_banana_objective)]
fn banana_objective(x: &[f64], b: &Banana, g: &Gauss) -> f64 {
    penalized(b, x, 0.1) + penalized(g, x, 0.2)
}

#[autodiff_reverse(d_generic_root, Duplicated, Const, Active)]
#[autodiff_forward(t_generic_root, Dual, Const, Dual)]
fn generic_root<M: Model>(x: &[f64], m: &M) -> f64 {
    penalized(m, x, 0.3).exp()
}

#[test]
fn generic_helpers_over_a_marked_trait() {
    let b = Banana { b: 0.4 };
    let gauss = Gauss { mu: 0.5, s: 2.0 };
    let x = [0.5, -1.0];
    let u = [0.3, 0.7];
    let mut dx = [0.0; 2];
    let value = d_banana_objective(&x, &mut dx, &b, &gauss, 1.0);
    assert_eq!(value, banana_objective(&x, &b, &gauss));
    for k in 0..2 {
        let want = fd(&|e| {
            let mut y = x;
            y[k] += e;
            banana_objective(&y, &b, &gauss)
        });
        assert!((dx[k] - want).abs() <= 1e-6 * want.abs().max(1.0), "d/dx[{k}]: {} vs {want}", dx[k]);
    }
    let (_, jv) = t_banana_objective(&x, &u, &b, &gauss);
    let want: f64 = dx.iter().zip(&u).map(|(a, b)| a * b).sum();
    assert!((jv - want).abs() <= 1e-10 * want.abs().max(1.0), "{jv} vs {want}");
    let (mut g, mut hv) = ([0.0; 2], [0.0; 2]);
    h_banana_objective(&x, &u, &b, &gauss, &mut g, &mut hv);
    for k in 0..2 {
        let want = fd(&|e| {
            let y = [x[0] + e * u[0], x[1] + e * u[1]];
            let mut d = [0.0; 2];
            d_banana_objective(&y, &mut d, &b, &gauss, 1.0);
            d[k]
        });
        assert!((hv[k] - want).abs() <= 1e-6 * want.abs().max(1.0), "hv[{k}]: {} vs {want}", hv[k]);
    }
    // The generic root.
    let mut dx = [0.0; 2];
    d_generic_root(&x, &mut dx, &gauss, 1.0);
    let (_, jv) = t_generic_root(&x, &u, &gauss);
    let want: f64 = dx.iter().zip(&u).map(|(a, b)| a * b).sum();
    assert!((jv - want).abs() <= 1e-10 * want.abs().max(1.0), "{jv} vs {want}");
    for k in 0..2 {
        let want = fd(&|e| {
            let mut y = x;
            y[k] += e;
            generic_root(&y, &gauss)
        });
        assert!((dx[k] - want).abs() <= 1e-6 * want.abs().max(1.0), "generic root d/dx[{k}]: {} vs {want}", dx[k]);
    }
}

/// Local struct values (a literal, a `let`) with a marked impl's method called on them and
/// lent to a generic helper.
#[autodiff_reverse(d_local_models, Duplicated, Active, Active)]
fn local_models(x: &[f64], mu: f64) -> f64 {
    let g = Gauss { mu, s: 2.0 };
    g.logp(x) * 2.0 + penalized(&Gauss { mu: 0.1, s: 1.0 }, x, 0.3) + penalized(&g, x, 0.1)
}

#[test]
fn local_struct_values_as_models() {
    let x = [1.0, -0.5];
    let mu = 0.5;
    let mut dx = [0.0; 2];
    let (v, dmu) = d_local_models(&x, &mut dx, mu, 1.0);
    assert_eq!(v, local_models(&x, mu));
    for k in 0..2 {
        let want = fd(&|e| {
            let mut y = x;
            y[k] += e;
            local_models(&y, mu)
        });
        assert!((dx[k] - want).abs() <= 1e-6 * want.abs().max(1.0), "d/dx[{k}]: {} vs {want}", dx[k]);
    }
    let want = fd(&|e| local_models(&x, mu + e));
    assert!((dmu - want).abs() <= 1e-6 * want.abs().max(1.0), "d/dmu: {dmu} vs {want}");
}

/// A trait with provided methods, neither marked: an impl that writes only `logp` calls
/// the default `prior` (which calls `scale`, overridden by one impl), and a generic helper
/// calls both; all lowered at their calls with the concrete type.
trait Density {
    fn logp(&self, x: &[f64]) -> f64;
    fn prior(&self, x: &[f64]) -> f64 {
        -0.5 * x.iter().map(|v| v * v).sum::<f64>() * self.scale()
    }
    fn scale(&self) -> f64 {
        1.0
    }
}

struct Normal {
    mu: f64,
    sigma: f64,
}

struct Broad {
    mu: f64,
}

fn log_normal(x: f64, mu: f64, s: f64) -> f64 {
    let z = (x - mu) / s;
    -0.5 * z * z - s.ln()
}

impl Density for Normal {
    fn logp(&self, x: &[f64]) -> f64 {
        x.iter().map(|&v| log_normal(v, self.mu, self.sigma)).sum::<f64>() + self.prior(x)
    }
}

impl Density for Broad {
    fn logp(&self, x: &[f64]) -> f64 {
        x.iter().map(|&v| log_normal(v, self.mu, 3.0)).sum::<f64>()
    }
    fn scale(&self) -> f64 {
        0.1
    }
}

fn posterior<D: Density>(d: &D, x: &[f64]) -> f64 {
    d.logp(x) + 0.1 * d.prior(x)
}

#[autodiff_reverse(d_two_densities, Duplicated, Active, Active)]
#[autodiff_forward(t_two_densities, Dual, Dual, Dual)]
fn two_densities(x: &[f64], mu: f64) -> f64 {
    let n = Normal { mu, sigma: 1.3 };
    let b = Broad { mu: 2.0 * mu };
    posterior(&n, x) + posterior(&b, x) + n.prior(x) * b.prior(x)
}

#[test]
fn provided_methods_of_unmarked_traits() {
    let x = [0.3, -0.7, 1.1];
    let mu = 0.4;
    let mut dx = [0.0; 3];
    let (v, dmu) = d_two_densities(&x, &mut dx, mu, 1.0);
    assert_eq!(v, two_densities(&x, mu));
    let h = 1e-6;
    let fd = (two_densities(&x, mu + h) - two_densities(&x, mu - h)) / (2.0 * h);
    assert!((dmu - fd).abs() < 1e-7 * fd.abs().max(1.0), "∂/∂mu {dmu} vs {fd}");
    for i in 0..3 {
        let (mut xp, mut xm) = (x, x);
        xp[i] += h;
        xm[i] -= h;
        let fd = (two_densities(&xp, mu) - two_densities(&xm, mu)) / (2.0 * h);
        assert!((dx[i] - fd).abs() < 1e-7 * fd.abs().max(1.0), "∂/∂x{i} {} vs {fd}", dx[i]);
        let mut u = [0.0; 3];
        u[i] = 1.0;
        let (tv, t) = t_two_densities(&x, &u, mu, 0.0);
        assert_eq!(tv, v);
        assert!((t - dx[i]).abs() < 1e-12 * dx[i].abs().max(1.0), "forward {t} vs reverse {}", dx[i]);
    }
    let (_, t) = t_two_densities(&x, &[0.0; 3], mu, 1.0);
    assert!((t - dmu).abs() < 1e-12 * dmu.abs().max(1.0));
}

/// Batched forward mode (a width, `Dualv`) and batched reverse mode of functions generic
/// over a marked trait: the derivatives are generic over the model's type too.
#[autodiff_forward(b_objective, 2, Dual, Const, Dual)]
#[autodiff_forward(b3_objective, 3, Dual, Const, DualOnly)]
#[autodiff_forward(v_objective, 2, Dualv, Const, Dual)]
fn batched_objective<M: Model>(x: &[f64], m: &M) -> f64 {
    m.logp(x) + 0.1 * x[0]
}

#[autodiff_forward(b_model_params, 2, Const, Dual, Dual)]
fn model_params<M: Model>(m: &M, x: &[f64]) -> f64 {
    m.logp(x)
}

#[autodiff_reverse(r2_fill, 2, Duplicated, Duplicated, Duplicated)]
fn fill<M: Model>(x: &[f64], m: &M, y: &mut [f64]) {
    let l = m.logp(x);
    y[0] = l;
    y[1] = 2.0 * l * x[0];
}

fn check_batched<M: Model + Clone + Differentiable>(m: &M, x: &[f64]) {
    let n = x.len();
    let u: Vec<Vec<f64>> = (0..3).map(|j| (0..n).map(|k| 0.3 - 0.2 * k as f64 + 0.5 * j as f64).collect()).collect();
    let along = |u: &[f64]| {
        fd(&|e| {
            let y: Vec<f64> = x.iter().zip(u).map(|(a, b)| a + e * b).collect();
            batched_objective(&y, m)
        })
    };
    // Each direction against finite differences (1e-6, relative) and against the
    // unbatched forward mode of the same function (1e-12).
    let [v, t0, t1] = b_objective(x, &u[0], &u[1], m);
    assert_eq!(v, batched_objective(x, m));
    for (t, u) in [(t0, &u[0]), (t1, &u[1])] {
        let want = along(u);
        assert!((t - want).abs() <= 1e-6 * want.abs().max(1.0), "{t} vs {want}");
        let (_, single) = t_objective(x, u, m);
        assert!((t - single).abs() <= 1e-12 * single.abs().max(1.0), "{t} vs {single}");
    }
    let ts = b3_objective(x, &u[0], &u[1], &u[2], m);
    let lanes: Vec<f64> = u.iter().flatten().copied().collect();
    let [v2, l0, l1] = v_objective(x, &lanes[..2 * n], m);
    assert_eq!(v2, v);
    for (j, t) in ts.iter().enumerate() {
        let (_, single) = t_objective(x, &u[j], m);
        assert!((t - single).abs() <= 1e-12 * single.abs().max(1.0), "lane {j}: {t} vs {single}");
    }
    assert!((l0 - ts[0]).abs() <= 1e-12 * ts[0].abs().max(1.0) && (l1 - ts[1]).abs() <= 1e-12 * ts[1].abs().max(1.0));
}

#[test]
fn batched_forward_mode_of_functions_generic_over_a_marked_trait() {
    check_batched(&Gauss { mu: 0.3, s: 1.7 }, &[0.5, -1.0, 2.0]);
    check_batched(&Banana { b: 0.4 }, &[0.5, -1.0]);
    // The form of the report: a constant model, the point `Dual`.
    let m = Gauss { mu: 0.3, s: 1.7 };
    let x = [0.5, -1.0];
    let [v, t0, t1] = b_model_params(&m, &x, &[1.0, 0.0], &[0.0, 1.0]);
    assert_eq!(v, model_params(&m, &x));
    for (k, t) in [t0, t1].into_iter().enumerate() {
        let want = fd(&|e| {
            let mut y = x;
            y[k] += e;
            model_params(&m, &y)
        });
        assert!((t - want).abs() <= 1e-6 * want.abs().max(1.0), "d/dx[{k}]: {t} vs {want}");
    }
}

#[test]
fn batched_reverse_mode_of_a_function_generic_over_a_marked_trait() {
    let m = Gauss { mu: 0.3, s: 1.7 };
    let x = [0.5, -1.0, 2.0];
    let (mut dx0, mut dx1) = ([0.0; 3], [0.0; 3]);
    let (mut dm0, mut dm1) = (m.zero_like(), m.zero_like());
    let mut y = [0.0; 2];
    let (mut dy0, mut dy1) = ([1.0, 0.0], [0.0, 1.0]);
    r2_fill(&x, &mut dx0, &mut dx1, &m, &mut dm0, &mut dm1, &mut y, &mut dy0, &mut dy1);
    let out = |x: &[f64], m: &Gauss, k: usize| {
        let mut y = [0.0; 2];
        fill(x, m, &mut y);
        y[k]
    };
    assert_eq!(y, [out(&x, &m, 0), out(&x, &m, 1)]);
    // Each seed's gradient against finite differences (1e-6, relative).
    for (k, (dx, dm)) in [(&dx0, &dm0), (&dx1, &dm1)].into_iter().enumerate() {
        for i in 0..3 {
            let want = fd(&|e| {
                let mut z = x;
                z[i] += e;
                out(&z, &m, k)
            });
            assert!((dx[i] - want).abs() <= 1e-6 * want.abs().max(1.0), "seed {k}, d/dx[{i}]: {} vs {want}", dx[i]);
        }
        let mu = fd(&|e| out(&x, &Gauss { mu: m.mu + e, ..m.clone() }, k));
        let s = fd(&|e| out(&x, &Gauss { s: m.s + e, ..m.clone() }, k));
        assert!((dm.mu - mu).abs() <= 1e-6 * mu.abs().max(1.0), "seed {k}, d/dmu: {} vs {mu}", dm.mu);
        assert!((dm.s - s).abs() <= 1e-6 * s.abs().max(1.0), "seed {k}, d/ds: {} vs {s}", dm.s);
    }
}

/// Generic helpers lowered at a call with a concrete type, calling a trait's associated
/// function (no `self`): `K::scale()` and `<K as Kind>::scale()` are the function of the
/// impl of the type passed there.
trait Kind {
    fn scale() -> f64;
    fn f(&self, x: f64) -> f64;
}

struct Quad {
    k: f64,
}

impl Kind for Quad {
    fn scale() -> f64 {
        2.0
    }
    fn f(&self, x: f64) -> f64 {
        self.k * x * x
    }
}

struct Sine {
    a: f64,
}

impl Kind for Sine {
    fn scale() -> f64 {
        0.5
    }
    fn f(&self, x: f64) -> f64 {
        (self.a * x).sin()
    }
}

fn scaled<K: Kind>(m: &K, x: f64) -> f64 {
    m.f(x) * K::scale()
}

fn summed_kinds<K: Kind>(ms: &[K], x: f64) -> f64 {
    let mut s = 0.0;
    for m in ms {
        s += m.f(x);
    }
    s * <K as Kind>::scale()
}

/// The type only in the turbofish.
fn named<K: Kind>(x: f64) -> f64 {
    K::scale() * x * x
}

/// In a module that imports the trait and not the types.
mod kind_helpers {
    use super::Kind;

    pub fn scaled_twice<K: Kind>(m: &K, x: f64) -> f64 {
        2.0 * m.f(x) * K::scale() + super::scaled(m, x)
    }
}

#[autodiff_reverse(d_use_kinds, Const, Const, Active, Active)]
#[autodiff_forward(t_use_kinds, Const, Const, Dual, Dual)]
fn use_kinds(q: &Quad, s: &Sine, x: f64) -> f64 {
    scaled(q, x) + scaled(s, x) + named::<Sine>(x) + kind_helpers::scaled_twice(s, x)
}

#[autodiff_reverse(d_use_slice, Const, Active, Active)]
#[autodiff_forward(t_use_slice, Const, Dual, Dual)]
fn use_slice(qs: &[Quad], x: f64) -> f64 {
    summed_kinds(qs, x)
}

/// A marked trait's associated function, through a helper too.
#[cotan::differentiable]
trait Weighted {
    fn weight() -> f64;
    fn g(&self, x: f64) -> f64;
}

#[derive(Clone, Differentiable)]
struct Cubic {
    c: f64,
}

#[cotan::differentiable]
impl Weighted for Cubic {
    fn weight() -> f64 {
        3.0
    }
    fn g(&self, x: f64) -> f64 {
        self.c * x * x * x
    }
}

fn weighted<K: Weighted>(m: &K, x: f64) -> f64 {
    m.g(x) * K::weight()
}

#[autodiff_reverse(d_use_weighted, Duplicated, Active, Active)]
#[autodiff_forward(t_use_weighted, Dual, Dual, Dual)]
fn use_weighted(m: &Cubic, x: f64) -> f64 {
    weighted(m, x)
}

#[test]
fn associated_functions_of_a_helpers_type_parameter() {
    let (q, s) = (Quad { k: 1.3 }, Sine { a: 0.7 });
    for x in [-0.8, 0.4, 1.9] {
        let want = fd(&|e| use_kinds(&q, &s, x + e));
        let (v, dx) = d_use_kinds(&q, &s, x, 1.0);
        assert_eq!(v, use_kinds(&q, &s, x));
        let expected = 1.3 * x * x * 2.0 + (0.7 * x).sin() * 0.5 + 0.5 * x * x + 2.0 * (0.7 * x).sin() * 0.5 * 1.5;
        assert!((v - expected).abs() < 1e-12, "{v} vs {expected}");
        // Against finite differences (1e-6, relative) and forward against reverse (1e-12).
        assert!((dx - want).abs() <= 1e-6 * want.abs().max(1.0), "{dx} vs {want}");
        let (tv, t) = t_use_kinds(&q, &s, x, 1.0);
        assert_eq!(tv, v);
        assert!((t - dx).abs() <= 1e-12 * dx.abs().max(1.0), "forward {t} vs reverse {dx}");

        let qs = [Quad { k: 1.3 }, Quad { k: -0.4 }];
        let want = fd(&|e| use_slice(&qs, x + e));
        let (v, dx) = d_use_slice(&qs, x, 1.0);
        assert_eq!(v, use_slice(&qs, x));
        assert!((dx - want).abs() <= 1e-6 * want.abs().max(1.0), "{dx} vs {want}");
        let (_, t) = t_use_slice(&qs, x, 1.0);
        assert!((t - dx).abs() <= 1e-12 * dx.abs().max(1.0), "forward {t} vs reverse {dx}");
    }
}

#[test]
fn associated_functions_of_a_marked_trait_through_a_helper() {
    let m = Cubic { c: 0.6 };
    for x in [-0.8, 0.4, 1.9] {
        let mut dm = m.zero_like();
        let (v, dx) = d_use_weighted(&m, &mut dm, x, 1.0);
        assert_eq!(v, use_weighted(&m, x));
        assert!((v - 3.0 * 0.6 * x * x * x).abs() < 1e-12);
        // Against finite differences (1e-6, relative), forward against reverse (1e-12).
        let want = fd(&|e| use_weighted(&m, x + e));
        assert!((dx - want).abs() <= 1e-6 * want.abs().max(1.0), "d/dx {dx} vs {want}");
        let want = fd(&|e| use_weighted(&Cubic { c: m.c + e }, x));
        assert!((dm.c - want).abs() <= 1e-6 * want.abs().max(1.0), "d/dc {} vs {want}", dm.c);
        let (tv, t) = t_use_weighted(&m, &m.zero_like(), x, 1.0);
        assert_eq!(tv, v);
        assert!((t - dx).abs() <= 1e-12 * dx.abs().max(1.0), "forward {t} vs reverse {dx}");
        let (_, tc) = t_use_weighted(&m, &Cubic { c: 1.0 }, x, 0.0);
        assert!((tc - dm.c).abs() <= 1e-12 * dm.c.abs().max(1.0), "forward {tc} vs reverse {}", dm.c);
    }
}

/// A generic helper over an unmarked trait, called with a unit struct written in place
/// (`&Tanh`) and with a struct literal: each lowered at its call with its type.
trait Activation {
    fn apply(&self, z: f64) -> f64;
}

struct Tanh;

struct Softplus {
    beta: f64,
}

impl Activation for Tanh {
    fn apply(&self, z: f64) -> f64 {
        z.tanh()
    }
}

impl Activation for Softplus {
    fn apply(&self, z: f64) -> f64 {
        (1.0 + (self.beta * z).exp()).ln() / self.beta
    }
}

fn layer<A: Activation>(act: &A, w: &[f64], x: &[f64], n_out: usize) -> Vec<f64> {
    let n_in = x.len();
    (0..n_out).map(|o| act.apply((0..n_in).map(|i| w[o * n_in + i] * x[i]).sum())).collect()
}

#[autodiff_reverse(d_net, Duplicated, Duplicated, Const, Active)]
#[autodiff_forward(t_net, Dual, Dual, Const, Dual)]
fn net(w1: &[f64], w2: &[f64], x: &[f64]) -> f64 {
    let h = layer(&Tanh, w1, x, 3);
    let y = layer(&Softplus { beta: 2.0 }, w2, &h, 1);
    y[0]
}

#[test]
fn unit_structs_written_in_place() {
    let (w1, w2, x) = ([0.1, 0.2, -0.3, 0.4, 0.5, -0.6], [0.7, -0.8, 0.9], [0.5, -1.5]);
    let (mut d1, mut d2) = ([0.0; 6], [0.0; 3]);
    let value = d_net(&w1, &mut d1, &w2, &mut d2, &x, 1.0);
    assert_eq!(value, net(&w1, &w2, &x));
    let grad: Vec<f64> = d1.iter().chain(&d2).copied().collect();
    let all: Vec<f64> = w1.iter().chain(&w2).copied().collect();
    let h = 1e-6;
    for k in 0..all.len() {
        let (mut up, mut down) = (all.clone(), all.clone());
        up[k] += h;
        down[k] -= h;
        let want = (net(&up[..6], &up[6..], &x) - net(&down[..6], &down[6..], &x)) / (2.0 * h);
        assert!((grad[k] - want).abs() <= 1e-6 * want.abs().max(1.0), "d/dw[{k}]: {} vs {want}", grad[k]);
    }
    // Forward mode agrees (the dot-product test).
    let (u1, u2) = ([0.3, -0.1, 0.2, 0.5, -0.4, 0.1], [0.2, 0.6, -0.3]);
    let (v2, t) = t_net(&w1, &u1, &w2, &u2, &x);
    assert_eq!(v2, value);
    let want: f64 = d1.iter().zip(&u1).chain(d2.iter().zip(&u2)).map(|(a, b)| a * b).sum();
    assert!((t - want).abs() <= 1e-12 * want.abs().max(1.0), "{t} vs {want}");
}

/// A generic RK4 step over an unmarked trait, which passes its `y: &mut [f64]` on to the
/// trait's method by name (`sys.f(t, y, &mut k1)`), called with a local vector.
trait Rhs {
    fn f(&self, t: f64, y: &[f64], dy: &mut [f64]);
}

struct Oscillator {
    k: f64,
    c: f64,
}

impl Rhs for Oscillator {
    fn f(&self, _t: f64, y: &[f64], dy: &mut [f64]) {
        dy[0] = y[1];
        dy[1] = -self.k * y[0] - self.c * y[1];
    }
}

fn rk4_step<R: Rhs>(sys: &R, t: f64, y: &mut [f64], h: f64) {
    let n = y.len();
    let (mut k1, mut k2, mut k3, mut k4) = (vec![0.0; n], vec![0.0; n], vec![0.0; n], vec![0.0; n]);
    let mut tmp = vec![0.0; n];
    sys.f(t, y, &mut k1);
    for i in 0..n {
        tmp[i] = y[i] + 0.5 * h * k1[i];
    }
    sys.f(t + 0.5 * h, &tmp, &mut k2);
    for i in 0..n {
        tmp[i] = y[i] + 0.5 * h * k2[i];
    }
    sys.f(t + 0.5 * h, &tmp, &mut k3);
    for i in 0..n {
        tmp[i] = y[i] + h * k3[i];
    }
    sys.f(t + h, &tmp, &mut k4);
    for i in 0..n {
        y[i] += h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
    }
}

#[autodiff_reverse(d_simulate, Duplicated, Active, Active, Active)]
#[autodiff_forward(t_simulate, Dual, Dual, Dual, Dual)]
fn simulate(y0: &[f64], k: f64, c: f64) -> f64 {
    let sys = Oscillator { k, c };
    let mut y = y0.to_vec();
    let h = 0.01;
    let mut t = 0.0;
    for _ in 0..100 {
        rk4_step(&sys, t, &mut y, h);
        t += h;
    }
    y[0] * y[0] + 0.5 * y[1] * y[1]
}

#[test]
fn a_generic_helper_passing_its_reference_parameter_on() {
    let (y0, k, c) = ([1.0, 0.2], 2.0, 0.3);
    let mut dy0 = [0.0; 2];
    let (value, dk, dc) = d_simulate(&y0, &mut dy0, k, c, 1.0);
    assert_eq!(value, simulate(&y0, k, c));
    let at = |p: &[f64]| simulate(&p[..2], p[2], p[3]);
    let all = [y0[0], y0[1], k, c];
    let grad = [dy0[0], dy0[1], dk, dc];
    let h = 1e-6;
    for j in 0..4 {
        let (mut up, mut down) = (all, all);
        up[j] += h;
        down[j] -= h;
        let want = (at(&up) - at(&down)) / (2.0 * h);
        assert!((grad[j] - want).abs() <= 1e-6 * want.abs().max(1.0), "d[{j}]: {} vs {want}", grad[j]);
    }
    // Forward mode agrees (the dot-product test).
    let u = [0.3, -0.7, 0.5, 0.2];
    let (v2, t) = t_simulate(&y0, &u[..2], k, u[2], c, u[3]);
    assert_eq!(v2, value);
    let want: f64 = grad.iter().zip(&u).map(|(a, b)| a * b).sum();
    assert!((t - want).abs() <= 1e-10 * want.abs().max(1.0), "{t} vs {want}");
}
