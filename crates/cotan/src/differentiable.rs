//! Shadows of structs: `#[derive(cotan::Differentiable)]` gives a struct `zero_like`, which
//! makes the zeroed shadow (`&mut S` of the same type) that reverse mode accumulates into.
//! Differentiated functions do not need the derive; it saves writing the zero by hand.

/// A value with a zero derivative of the same shape: floats zero, lengths kept, integers
/// and bools copied (they carry no derivative).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not `cotan::Differentiable`: cotan makes zeroed copies of it (shadows and tangents of constant arguments, for a trait marked `#[cotan::differentiable]`)",
    note = "add `#[derive(cotan::Differentiable)]` to the struct"
)]
pub trait Differentiable {
    /// A value of the same shape whose floats are all zero: a fresh shadow.
    fn zero_like(&self) -> Self;
}

macro_rules! floats {
    ($($t:ty),*) => { $(impl Differentiable for $t { fn zero_like(&self) -> Self { 0.0 } })* };
}
floats!(f32, f64);

macro_rules! copied {
    ($($t:ty),*) => { $(impl Differentiable for $t { fn zero_like(&self) -> Self { *self } })* };
}
copied!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, bool);

impl<T: Differentiable> Differentiable for Vec<T> {
    fn zero_like(&self) -> Self {
        self.iter().map(Differentiable::zero_like).collect()
    }
}

impl<T: Differentiable, const N: usize> Differentiable for [T; N] {
    fn zero_like(&self) -> Self {
        std::array::from_fn(|k| self[k].zero_like())
    }
}

impl<T: Differentiable> Differentiable for Box<T> {
    fn zero_like(&self) -> Self {
        Box::new((**self).zero_like())
    }
}

macro_rules! tuples {
    ($(($($n:tt $t:ident),+)),*) => {
        $(impl<$($t: Differentiable),+> Differentiable for ($($t,)+) {
            fn zero_like(&self) -> Self { ($(self.$n.zero_like(),)+) }
        })*
    };
}
tuples!((0 A), (0 A, 1 B), (0 A, 1 B, 2 C), (0 A, 1 B, 2 C, 3 D), (0 A, 1 B, 2 C, 3 D, 4 E));
