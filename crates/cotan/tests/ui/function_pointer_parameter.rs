// A function pointer as a parameter of the differentiated function: the function is only
// known when the derivative runs. Passing it to a helper from a function that names it works.
use cotan::autodiff_reverse;

#[autodiff_reverse(d_f, Const, Active, Active)]
fn f(g: fn(f32) -> f32, x: f32) -> f32 {
    g(x)
}

fn main() {}
