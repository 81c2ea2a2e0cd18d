//! MLP loss: gradients against finite differences (rtol 1e-6, atol 1e-7), struct and
//! flat versions against each other, forward against reverse by the dot-product test.

mod common;
use common::*;
use cotan_user_models::mlp::*;

fn setup(activation: Activation) -> (Mlp, Vec<Vec<f64>>, Vec<usize>) {
    let model = Mlp::new(2, 5, 3, activation, 42);
    let (inputs, labels) = synthetic_blobs(12, 7);
    (model, inputs, labels)
}

fn check_struct(activation: Activation) {
    let (model, inputs, labels) = setup(activation);
    let shape = model.shape();
    let flat = model.to_flat();
    let f = |p: &[f64]| mlp_loss(&Mlp::from_flat(p, shape, activation), &inputs, &labels);

    let mut grad = model.zeros_like();
    let value = mlp_loss_grad(&model, &mut grad, &inputs, &labels, 1.0);
    assert_same_value("mlp", value, mlp_loss(&model, &inputs, &labels));
    let g = grad.to_flat();
    assert_close(&format!("mlp {activation:?} vs fd"), &g, &fd_gradient(f, &flat), 1e-6, 1e-7);

    let v = direction(flat.len(), 5);
    let tangent_model = Mlp::from_flat(&v, shape, activation);
    let (value, t) = mlp_loss_tangent(&model, &tangent_model, &inputs, &labels);
    assert_same_value("mlp forward", value, mlp_loss(&model, &inputs, &labels));
    assert_dot_product("mlp", &g, &v, t);
}

fn check_flat(activation: Activation) {
    let (model, inputs, labels) = setup(activation);
    let shape = model.shape();
    let flat = model.to_flat();
    let f = |p: &[f64]| mlp_loss_flat(p, shape, activation, &inputs, &labels);
    assert_same_value("flat vs struct", f(&flat), mlp_loss(&model, &inputs, &labels));

    let mut g = vec![0.0; flat.len()];
    let value = mlp_loss_flat_grad(&flat, &mut g, shape, activation, &inputs, &labels, 1.0);
    assert_same_value("mlp flat", value, f(&flat));
    assert_close(&format!("mlp flat {activation:?} vs fd"), &g, &fd_gradient(f, &flat), 1e-6, 1e-7);

    let v = direction(flat.len(), 6);
    let (value, t) = mlp_loss_flat_tangent(&flat, &v, shape, activation, &inputs, &labels);
    assert_same_value("mlp flat forward", value, f(&flat));
    assert_dot_product("mlp flat", &g, &v, t);
}

#[test]
fn mlp_struct_tanh() {
    check_struct(Activation::Tanh);
}

#[test]
fn mlp_struct_relu() {
    check_struct(Activation::Relu);
}

#[test]
fn mlp_flat_tanh() {
    check_flat(Activation::Tanh);
}

#[test]
fn mlp_flat_relu() {
    check_flat(Activation::Relu);
}
