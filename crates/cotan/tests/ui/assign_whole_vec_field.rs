// A whole `Vec` field of a struct made in the function assigned anew: the error says to
// write its elements or make the struct anew (structs_with_vectors.rs does both).
struct State {
    x: Vec<f64>,
    t: f64,
}

#[cotan::autodiff_reverse(d_f, Duplicated, Active)]
fn f(p: &[f64]) -> f64 {
    let mut s = State { x: p.to_vec(), t: 0.0 };
    s.x = p.iter().map(|a| a * a).collect();
    s.x[0] + s.t
}

fn main() {}
