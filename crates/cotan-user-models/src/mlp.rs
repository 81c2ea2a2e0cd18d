//! A two-layer perceptron classifier with a softmax cross-entropy loss.

use crate::{dot, Rng};
use cotan::{autodiff_forward, autodiff_reverse};

/// Hidden-layer nonlinearity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    Tanh,
    Relu,
}

impl Activation {
    pub fn apply(self, z: f64) -> f64 {
        match self {
            Activation::Tanh => z.tanh(),
            Activation::Relu => z.max(0.0),
        }
    }
}

/// input --(w1, b1, activation)--> hidden --(w2, b2)--> logits
#[derive(Clone, Debug)]
pub struct Mlp {
    /// `w1[j][i]`: weight from input i to hidden unit j.
    pub w1: Vec<Vec<f64>>,
    pub b1: Vec<f64>,
    /// `w2[k][j]`: weight from hidden unit j to output k.
    pub w2: Vec<Vec<f64>>,
    pub b2: Vec<f64>,
    pub activation: Activation,
}

impl Mlp {
    /// Glorot-style random initialisation.
    pub fn new(n_in: usize, n_hidden: usize, n_out: usize, activation: Activation, seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let mut layer = |rows: usize, cols: usize| -> Vec<Vec<f64>> {
            let scale = (6.0 / (rows + cols) as f64).sqrt();
            (0..rows).map(|_| (0..cols).map(|_| rng.range(-scale, scale)).collect()).collect()
        };
        let w1 = layer(n_hidden, n_in);
        let w2 = layer(n_out, n_hidden);
        Mlp { w1, b1: vec![0.1; n_hidden], w2, b2: vec![0.0; n_out], activation }
    }

    /// A model of the same shape with every parameter zero (for gradients).
    pub fn zeros_like(&self) -> Self {
        Mlp {
            w1: self.w1.iter().map(|r| vec![0.0; r.len()]).collect(),
            b1: vec![0.0; self.b1.len()],
            w2: self.w2.iter().map(|r| vec![0.0; r.len()]).collect(),
            b2: vec![0.0; self.b2.len()],
            activation: self.activation,
        }
    }

    pub fn shape(&self) -> (usize, usize, usize) {
        (self.w1[0].len(), self.w1.len(), self.w2.len())
    }

    /// Parameters in the order w1 (row-major), b1, w2 (row-major), b2.
    pub fn to_flat(&self) -> Vec<f64> {
        self.w1.iter().flatten().chain(&self.b1).chain(self.w2.iter().flatten()).chain(&self.b2).copied().collect()
    }

    pub fn from_flat(flat: &[f64], shape: (usize, usize, usize), activation: Activation) -> Self {
        let (n_in, n_hidden, n_out) = shape;
        let (w1, rest) = flat.split_at(n_hidden * n_in);
        let (b1, rest) = rest.split_at(n_hidden);
        let (w2, b2) = rest.split_at(n_out * n_hidden);
        Mlp {
            w1: w1.chunks(n_in).map(<[f64]>::to_vec).collect(),
            b1: b1.to_vec(),
            w2: w2.chunks(n_hidden).map(<[f64]>::to_vec).collect(),
            b2: b2.to_vec(),
            activation,
        }
    }

    pub fn hidden(&self, x: &[f64]) -> Vec<f64> {
        self.w1.iter().zip(&self.b1).map(|(row, b)| self.activation.apply(dot(row, x) + b)).collect()
    }

    pub fn forward(&self, x: &[f64]) -> Vec<f64> {
        let h = self.hidden(x);
        self.w2.iter().zip(&self.b2).map(|(row, b)| dot(row, &h) + b).collect()
    }
}

/// Numerically stable log-softmax.
pub fn log_softmax(logits: &[f64]) -> Vec<f64> {
    let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let log_sum_exp = max + logits.iter().map(|&l| (l - max).exp()).sum::<f64>().ln();
    logits.iter().map(|&l| l - log_sum_exp).collect()
}

/// Mean softmax cross-entropy of the model over a batch, differentiated with respect to
/// the model (std's way for a struct: `Duplicated` with a `&mut Mlp` shadow).
#[autodiff_reverse(mlp_loss_grad, Duplicated, Const, Const, Active)]
#[autodiff_forward(mlp_loss_tangent, Dual, Const, Const, Dual)]
pub fn mlp_loss(model: &Mlp, inputs: &[Vec<f64>], labels: &[usize]) -> f64 {
    let total: f64 = inputs.iter().zip(labels).map(|(x, &label)| -log_softmax(&model.forward(x))[label]).sum();
    total / inputs.len() as f64
}

/// The same loss over a flat parameter vector (the layout of `Mlp::to_flat`), as an
/// optimiser working on `&[f64]` wants it.
#[autodiff_reverse(mlp_loss_flat_grad, Duplicated, Const, Const, Const, Const, Active)]
#[autodiff_forward(mlp_loss_flat_tangent, Dual, Const, Const, Const, Const, Dual)]
pub fn mlp_loss_flat(
    params: &[f64],
    shape: (usize, usize, usize),
    activation: Activation,
    inputs: &[Vec<f64>],
    labels: &[usize],
) -> f64 {
    let (n_in, n_hidden, n_out) = shape;
    let (w1, rest) = params.split_at(n_hidden * n_in);
    let (b1, rest) = rest.split_at(n_hidden);
    let (w2, b2) = rest.split_at(n_out * n_hidden);

    let mut loss = 0.0;
    for (x, &label) in inputs.iter().zip(labels) {
        let hidden: Vec<f64> = w1.chunks(n_in).zip(b1).map(|(row, b)| activation.apply(dot(row, x) + b)).collect();
        let logits: Vec<f64> = w2.chunks(n_hidden).zip(b2).map(|(row, b)| dot(row, &hidden) + b).collect();
        loss -= log_softmax(&logits)[label];
    }
    loss / inputs.len() as f64
}

/// A small synthetic 3-class problem: points around three centres in the plane.
pub fn synthetic_blobs(n: usize, seed: u64) -> (Vec<Vec<f64>>, Vec<usize>) {
    let centres = [[0.0, 1.0], [-1.0, -0.5], [1.0, -0.5]];
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|i| {
            let label = i % centres.len();
            let [cx, cy] = centres[label];
            (vec![cx + 0.4 * rng.normal(), cy + 0.4 * rng.normal()], label)
        })
        .unzip()
}
