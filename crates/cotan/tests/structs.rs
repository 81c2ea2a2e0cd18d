//! Structs and tuples: parameters read and written field by field, methods, calls.

use cotan::{autodiff_forward, autodiff_reverse};

#[derive(Clone, Debug, PartialEq)]
struct Layer {
    w: Vec<f64>,
    b: f64,
}

#[derive(Clone, Debug, PartialEq)]
struct Model {
    layer: Layer,
    scale: [f64; 2],
    n: usize,
}

#[autodiff_reverse(d_predict, Duplicated, Duplicated, Active)]
#[autodiff_forward(f_predict, Dual, Dual, Dual)]
fn predict(m: &Model, x: &[f64]) -> f64 {
    let mut s = m.layer.b;
    for i in 0..m.n {
        s += m.layer.w[i] * x[i];
    }
    m.scale[0] * s.tanh() + m.scale[1] * s * s
}

fn zero_model(m: &Model) -> Model {
    Model { layer: Layer { w: vec![0.0; m.layer.w.len()], b: 0.0 }, scale: [0.0; 2], n: m.n }
}

fn model() -> Model {
    Model { layer: Layer { w: vec![0.3, -0.2, 0.5], b: 0.1 }, scale: [1.5, -0.25], n: 3 }
}

#[test]
fn reverse_through_nested_struct_fields() {
    let m = model();
    let x = [0.7, -1.1, 0.4];
    let mut dm = zero_model(&m);
    let mut dx = [0.0; 3];
    let y = d_predict(&m, &mut dm, &x, &mut dx, 1.0);
    assert!((y - predict(&m, &x)).abs() < 1e-14);
    // Central differences on every float field.
    let h = 1e-6;
    let fd = |f: &dyn Fn(&mut Model)| {
        let (mut a, mut b) = (m.clone(), m.clone());
        f(&mut a);
        let _ = &mut b;
        (predict(&a, &x) - predict(&m, &x)) / h
    };
    let _ = fd;
    let central = |set: &dyn Fn(&mut Model, f64)| {
        let (mut a, mut b) = (m.clone(), m.clone());
        set(&mut a, h);
        set(&mut b, -h);
        (predict(&a, &x) - predict(&b, &x)) / (2.0 * h)
    };
    let tol = 1e-7;
    assert!((dm.layer.b - central(&|m, e| m.layer.b += e)).abs() < tol, "{}", dm.layer.b);
    for k in 0..3 {
        let g = central(&|m, e| m.layer.w[k] += e);
        assert!((dm.layer.w[k] - g).abs() < tol, "w[{k}]: {} vs {g}", dm.layer.w[k]);
    }
    for k in 0..2 {
        let g = central(&|m, e| m.scale[k] += e);
        assert!((dm.scale[k] - g).abs() < tol, "scale[{k}]: {} vs {g}", dm.scale[k]);
    }
    // Forward mode along a direction agrees with the reverse gradient (dot-product test).
    let mut tm = zero_model(&m);
    tm.layer.w = vec![0.2, 0.1, -0.3];
    tm.layer.b = 0.5;
    tm.scale = [-0.4, 0.9];
    let tx = [0.3, 0.2, -0.1];
    let (y2, dy) = f_predict(&m, &tm, &x, &tx);
    assert_eq!(y, y2);
    let mut dot = dm.layer.b * tm.layer.b;
    for k in 0..3 {
        dot += dm.layer.w[k] * tm.layer.w[k] + dx[k] * tx[k];
    }
    dot += dm.scale[0] * tm.scale[0] + dm.scale[1] * tm.scale[1];
    assert!((dot - dy).abs() < 1e-12 * dot.abs().max(1.0), "{dot} vs {dy}");
}
