//! The procedural macros of [cotan](https://docs.rs/cotan): thin entry points into
//! `cotan-expand`, which parses the attributes, runs the library crates and reports their
//! errors. Use them through `cotan`, which re-exports them; their documentation is here.

use cotan_expand::{Mode, SecondOrder};
use proc_macro::TokenStream;

/// Tells the expansion which file it is in, so that it can check the functions a
/// differentiated function calls (see `cotan_expand::set_source_file`).
fn in_file<T>(f: impl FnOnce() -> T) -> T {
    cotan_expand::set_source_file(proc_macro::Span::call_site().local_file());
    f()
}

#[doc = include_str!("../docs/autodiff_forward.md")]
#[doc = include_str!("../docs/activities.md")]
#[doc = include_str!("../docs/conventions.md")]
#[proc_macro_attribute]
pub fn autodiff_forward(attr: TokenStream, item: TokenStream) -> TokenStream {
    in_file(|| cotan_expand::autodiff(Mode::Forward, attr.into(), item.into()).into())
}

#[doc = include_str!("../docs/autodiff_reverse.md")]
#[doc = include_str!("../docs/activities.md")]
#[doc = include_str!("../docs/conventions.md")]
#[proc_macro_attribute]
pub fn autodiff_reverse(attr: TokenStream, item: TokenStream) -> TokenStream {
    in_file(|| cotan_expand::autodiff(Mode::Reverse, attr.into(), item.into()).into())
}

#[doc = include_str!("../docs/differentiable.md")]
#[proc_macro_attribute]
pub fn differentiable(attr: TokenStream, item: TokenStream) -> TokenStream {
    in_file(|| cotan_expand::differentiable(attr.into(), item.into()).into())
}

#[doc = include_str!("../docs/derive.md")]
#[proc_macro_derive(Differentiable)]
pub fn derive_differentiable(item: TokenStream) -> TokenStream {
    cotan_expand::derive_differentiable(item.into()).into()
}

#[doc = include_str!("../docs/autodiff_split.md")]
#[proc_macro_attribute]
pub fn autodiff_split(attr: TokenStream, item: TokenStream) -> TokenStream {
    in_file(|| cotan_expand::autodiff_split(attr.into(), item.into()).into())
}

#[doc = include_str!("../docs/custom_derivative.md")]
#[proc_macro_attribute]
pub fn custom_derivative(attr: TokenStream, item: TokenStream) -> TokenStream {
    in_file(|| cotan_expand::custom_derivative(attr.into(), item.into()).into())
}

#[doc = include_str!("../docs/zero_derivative.md")]
#[proc_macro_attribute]
pub fn zero_derivative(attr: TokenStream, item: TokenStream) -> TokenStream {
    in_file(|| cotan_expand::zero_derivative(attr.into(), item.into()).into())
}

#[doc = include_str!("../docs/hvp.md")]
#[proc_macro_attribute]
pub fn hvp(attr: TokenStream, item: TokenStream) -> TokenStream {
    in_file(|| cotan_expand::second_order(SecondOrder::Hvp, attr.into(), item.into()).into())
}

#[doc = include_str!("../docs/hessian.md")]
#[proc_macro_attribute]
pub fn hessian(attr: TokenStream, item: TokenStream) -> TokenStream {
    in_file(|| cotan_expand::second_order(SecondOrder::Hessian, attr.into(), item.into()).into())
}

#[doc = include_str!("../docs/kernel.md")]
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    cotan_expand::kernel(attr.into(), item.into()).into()
}
