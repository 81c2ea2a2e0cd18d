//! Trains a two-layer perceptron (the MLP of the Enzyme/Mooncake comparison blog: weights
//! as `Vec<Vec<f64>>`, an activation chosen by an enum, softmax cross-entropy) by gradient
//! descent on three clusters of points. The gradient with respect to the whole model comes
//! from cotan's reverse mode, with a shadow `Mlp` of the same type as in std::autodiff; it is
//! checked once against finite differences.
//!
//! Run: `cargo run --release -p cotan-examples --example train_mlp`

use cotan::autodiff_reverse;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Activation {
    Tanh,
    Relu,
}

impl Activation {
    fn apply(self, z: f64) -> f64 {
        match self {
            Activation::Tanh => z.tanh(),
            Activation::Relu => z.max(0.0),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Mlp {
    w1: Vec<Vec<f64>>,
    b1: Vec<f64>,
    w2: Vec<Vec<f64>>,
    b2: Vec<f64>,
    activation: Activation,
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

impl Mlp {
    fn new(n_in: usize, n_hidden: usize, n_out: usize, activation: Activation) -> Mlp {
        // Deterministic "random" weights.
        let w = |r: usize, c: usize, s: f64| -> Vec<Vec<f64>> {
            (0..r).map(|i| (0..c).map(|j| s * ((i * 7 + j * 13 + 1) as f64 * 1.618).sin()).collect()).collect()
        };
        Mlp {
            w1: w(n_hidden, n_in, 0.8),
            b1: vec![0.0; n_hidden],
            w2: w(n_out, n_hidden, 0.5),
            b2: vec![0.0; n_out],
            activation,
        }
    }

    fn zeros_like(&self) -> Mlp {
        Mlp {
            w1: self.w1.iter().map(|r| vec![0.0; r.len()]).collect(),
            b1: vec![0.0; self.b1.len()],
            w2: self.w2.iter().map(|r| vec![0.0; r.len()]).collect(),
            b2: vec![0.0; self.b2.len()],
            activation: self.activation,
        }
    }

    fn forward(&self, x: &[f64]) -> Vec<f64> {
        let h: Vec<f64> = self.w1.iter().zip(&self.b1).map(|(row, b)| self.activation.apply(dot(row, x) + b)).collect();
        self.w2.iter().zip(&self.b2).map(|(row, b)| dot(row, &h) + b).collect()
    }

    /// `self -= rate * grad`, parameter by parameter.
    fn descend(&mut self, grad: &Mlp, rate: f64) {
        for (w, g) in self.w1.iter_mut().zip(&grad.w1).chain(self.w2.iter_mut().zip(&grad.w2)) {
            for (a, b) in w.iter_mut().zip(g) {
                *a -= rate * b;
            }
        }
        for (a, b) in self.b1.iter_mut().zip(&grad.b1).chain(self.b2.iter_mut().zip(&grad.b2)) {
            *a -= rate * b;
        }
    }
}

fn log_softmax(z: &[f64]) -> Vec<f64> {
    let max = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let lse = max + z.iter().map(|&v| (v - max).exp()).sum::<f64>().ln();
    z.iter().map(|&v| v - lse).collect()
}

/// Mean cross-entropy of the model on a batch.
#[autodiff_reverse(loss_grad, Duplicated, Const, Const, Active)]
fn loss(model: &Mlp, inputs: &[Vec<f64>], labels: &[usize]) -> f64 {
    let total: f64 = inputs.iter().zip(labels).map(|(x, &label)| -log_softmax(&model.forward(x))[label]).sum();
    total / inputs.len() as f64
}

fn accuracy(model: &Mlp, inputs: &[Vec<f64>], labels: &[usize]) -> f64 {
    let right = inputs
        .iter()
        .zip(labels)
        .filter(|(x, &l)| {
            let z = model.forward(x);
            (0..z.len()).all(|k| z[k] <= z[l])
        })
        .count();
    right as f64 / inputs.len() as f64
}

/// Three clusters in the plane, `n` points, deterministic.
fn blobs(n: usize) -> (Vec<Vec<f64>>, Vec<usize>) {
    let centres = [[0.0, 1.5], [-1.5, -1.0], [1.5, -1.0]];
    (0..n)
        .map(|i| {
            let l = i % 3;
            let (u, v) = ((i as f64 * 12.9898).sin(), (i as f64 * 78.233).cos());
            (vec![centres[l][0] + 0.5 * u, centres[l][1] + 0.5 * v], l)
        })
        .unzip()
}

/// Trains for `steps` steps; returns the loss before and after, and the final accuracy.
fn train(steps: usize) -> (f64, f64, f64) {
    let (x, y) = blobs(150);
    let mut model = Mlp::new(2, 8, 3, Activation::Tanh);

    // The gradient agrees with finite differences (a few weights).
    let mut grad = model.zeros_like();
    let start = loss_grad(&model, &mut grad, &x, &y, 1.0);
    for (i, j) in [(0, 0), (3, 1), (7, 0)] {
        let h = 1e-6;
        let (mut hi, mut lo) = (model.clone(), model.clone());
        hi.w1[i][j] += h;
        lo.w1[i][j] -= h;
        let fd = (loss(&hi, &x, &y) - loss(&lo, &x, &y)) / (2.0 * h);
        assert!((grad.w1[i][j] - fd).abs() <= 1e-6 * fd.abs().max(1.0), "w1[{i}][{j}]: {} vs {fd}", grad.w1[i][j]);
    }

    let mut last = start;
    for step in 0..steps {
        let mut grad = model.zeros_like();
        last = loss_grad(&model, &mut grad, &x, &y, 1.0);
        model.descend(&grad, 0.5);
        if step % 50 == 0 {
            println!("step {step:4}: loss {last:.4}, accuracy {:.3}", accuracy(&model, &x, &y));
        }
    }
    (start, last, accuracy(&model, &x, &y))
}

fn main() {
    let (start, end, acc) = train(300);
    println!("loss {start:.4} -> {end:.4}, accuracy {acc:.3}");
    assert!(end < 0.2 * start && acc > 0.95);
}

#[test]
fn training_lowers_the_loss_and_classifies_the_clusters() {
    let (start, end, acc) = train(150);
    assert!(end < 0.3 * start, "loss {start} -> {end}");
    assert!(acc > 0.9, "accuracy {acc}");
}
