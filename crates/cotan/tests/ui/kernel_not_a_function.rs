// The attribute is for functions.
#[cotan::kernel]
struct S;

fn main() {}
