use cotan::autodiff_reverse;
// A function rustc cannot parse (rust-lang/rust#160329): rustc's syntax errors alone.

#[autodiff_reverse(d_f, Active)]
fn f(_x: struct S<B, T>) {}

fn main() {}
