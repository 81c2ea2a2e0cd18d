use cotan::autodiff_reverse;

// A width in reverse mode takes `Duplicated` and `Const` arguments; `Active` ones are out.

#[autodiff_reverse(d_f, 2, Active, Active)]
fn f(x: f64) -> f64 {
    x * x
}

fn main() {}
