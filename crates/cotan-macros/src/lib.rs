//! The procedural macros of cotan: thin entry points into `cotan-expand`, which parses
//! the attributes, runs the library crates and reports their errors.

use cotan_expand::{Mode, SecondOrder};
use proc_macro::TokenStream;

/// Tells the expansion which file it is in, so that it can check the functions a
/// differentiated function calls (see `cotan_expand::set_source_file`).
fn in_file<T>(f: impl FnOnce() -> T) -> T {
    cotan_expand::set_source_file(proc_macro::Span::call_site().local_file());
    f()
}

/// Forward mode, with std::autodiff's syntax: `#[autodiff_forward(NAME, INPUT_ACTIVITIES..., OUTPUT_ACTIVITY)]`.
#[proc_macro_attribute]
pub fn autodiff_forward(attr: TokenStream, item: TokenStream) -> TokenStream {
    in_file(|| cotan_expand::autodiff(Mode::Forward, attr.into(), item.into()).into())
}

/// Reverse mode, with std::autodiff's syntax: `#[autodiff_reverse(NAME, INPUT_ACTIVITIES..., OUTPUT_ACTIVITY)]`.
#[proc_macro_attribute]
pub fn autodiff_reverse(attr: TokenStream, item: TokenStream) -> TokenStream {
    in_file(|| cotan_expand::autodiff(Mode::Reverse, attr.into(), item.into()).into())
}

/// Makes a function callable from differentiated code: `#[cotan::differentiable]` keeps the
/// function as it is and generates, beside it, the derivatives that callers use.
#[proc_macro_attribute]
pub fn differentiable(attr: TokenStream, item: TokenStream) -> TokenStream {
    in_file(|| cotan_expand::differentiable(attr.into(), item.into()).into())
}

/// `#[derive(cotan::Differentiable)]`: gives a struct `zero_like()`, its zeroed shadow.
#[proc_macro_derive(Differentiable)]
pub fn derive_differentiable(item: TokenStream) -> TokenStream {
    cotan_expand::derive_differentiable(item.into()).into()
}

/// Reverse mode split in two, with the record between them held by the caller:
/// `#[cotan::autodiff_split(FORWARD, REVERSE, INPUT_ACTIVITIES..., OUTPUT_ACTIVITY)]`.
/// `FORWARD` runs the function and returns its result and a `cotan::Record`; `REVERSE`
/// takes `&Record`, the shadows and the seed, and may be called several times.
#[proc_macro_attribute]
pub fn autodiff_split(attr: TokenStream, item: TokenStream) -> TokenStream {
    in_file(|| cotan_expand::autodiff_split(attr.into(), item.into()).into())
}

/// Uses the user's derivatives wherever the function is called from differentiated code:
/// `#[cotan::custom_derivative(forward = F, reverse = R)]`, where F and R have the
/// signatures `autodiff_forward`/`autodiff_reverse` would generate with every float
/// argument `Dual`/(`Active` or `Duplicated`) and a `Dual`/`Active` result. Either may be
/// given alone; the other mode is then unavailable.
#[proc_macro_attribute]
pub fn custom_derivative(attr: TokenStream, item: TokenStream) -> TokenStream {
    in_file(|| cotan_expand::custom_derivative(attr.into(), item.into()).into())
}

/// Treats the function's results as constants in differentiated code.
#[proc_macro_attribute]
pub fn zero_derivative(attr: TokenStream, item: TokenStream) -> TokenStream {
    in_file(|| cotan_expand::zero_derivative(attr.into(), item.into()).into())
}

/// Hessian-vector products by forward-over-reverse: `#[cotan::hvp(NAME)]` on
/// `fn f(x: &[f64], <other args>) -> f64` generates
/// `NAME(x, v, <other args>, grad: &mut [f64], hv: &mut [f64]) -> f64`, which overwrites
/// `grad` with ∇f(x) and `hv` with ∇²f(x)·v and returns f(x). Other arguments are constants.
#[proc_macro_attribute]
pub fn hvp(attr: TokenStream, item: TokenStream) -> TokenStream {
    in_file(|| cotan_expand::second_order(SecondOrder::Hvp, attr.into(), item.into()).into())
}

/// Dense Hessians: `#[cotan::hessian(NAME)]` on `fn f(x: &[f64], <other args>) -> f64`
/// generates `NAME(x, <other args>, grad: &mut [f64], hess: &mut [f64]) -> f64`, which
/// overwrites `grad` with ∇f(x) and `hess` (row-major n×n) with ∇²f(x), exactly
/// symmetric, and returns f(x). It takes n Hessian-vector products.
#[proc_macro_attribute]
pub fn hessian(attr: TokenStream, item: TokenStream) -> TokenStream {
    in_file(|| cotan_expand::second_order(SecondOrder::Hessian, attr.into(), item.into()).into())
}
