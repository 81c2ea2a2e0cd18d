//! Runtime support for generated code: the stacks a reverse sweep saves values on and a
//! pool of scratch buffers, reused across calls so that steady-state calls do not allocate.
//!
//! Generated functions take a [`Tape`] from a per-thread pool at entry and give it back
//! before returning; recursion simply takes a second tape.

use std::cell::RefCell;

#[cfg(feature = "faer")]
pub mod faer;
#[cfg(feature = "nalgebra")]
pub mod nalgebra;
mod par;
pub use par::{
    par_for, par_for_checked, par_for_tape, thread_index, AccSlice, AtomicAdd, CheckedSlice, Copies, LoopSite, ParSlice,
};
#[cfg(feature = "ndarray")]
pub mod ndarray;
mod sums;
pub use sums::{sums, sums_rev};

/// Typed stacks and buffer pools of one running derivative call.
#[derive(Default, Debug)]
pub struct Tape {
    f64s: Vec<f64>,
    f32s: Vec<f32>,
    ints: Vec<u64>,
    bools: Vec<bool>,
    bufs_f64: Vec<Vec<f64>>,
    bufs_f32: Vec<Vec<f32>>,
}

thread_local! {
    static POOL: RefCell<Vec<Tape>> = const { RefCell::new(Vec::new()) };
}

const EMPTY: &str =
    "cotan: the reverse sweep popped more values than the forward sweep pushed (a cotan bug; please report it)";

impl Tape {
    /// Takes a tape from this thread's pool (a new one the first time).
    pub fn acquire() -> Tape {
        POOL.with(|p| p.borrow_mut().pop()).unwrap_or_default()
    }

    /// Returns the tape to this thread's pool, keeping its capacity.
    pub fn release(mut self) {
        self.f64s.clear();
        self.f32s.clear();
        self.ints.clear();
        self.bools.clear();
        POOL.with(|p| p.borrow_mut().push(self));
    }

    #[inline]
    pub fn push_f64(&mut self, v: f64) {
        self.f64s.push(v);
    }
    #[inline]
    pub fn pop_f64(&mut self) -> f64 {
        self.f64s.pop().expect(EMPTY)
    }
    /// Pushes every element of `v`, in order (a snapshot of a buffer).
    #[inline]
    pub fn push_all_f64(&mut self, v: &[f64]) {
        self.f64s.extend_from_slice(v);
    }
    /// Pops `into.len()` values into `into`, the last popped first (undoes `push_all_f64`).
    #[inline]
    pub fn pop_all_f64(&mut self, into: &mut [f64]) {
        let at = self.f64s.len().checked_sub(into.len()).expect(EMPTY);
        into.copy_from_slice(&self.f64s[at..]);
        self.f64s.truncate(at);
    }
    /// Pushes every element of `v`, in order.
    #[inline]
    pub fn push_all_f32(&mut self, v: &[f32]) {
        self.f32s.extend_from_slice(v);
    }
    /// Pops `into.len()` values into `into` (undoes `push_all_f32`).
    #[inline]
    pub fn pop_all_f32(&mut self, into: &mut [f32]) {
        let at = self.f32s.len().checked_sub(into.len()).expect(EMPTY);
        into.copy_from_slice(&self.f32s[at..]);
        self.f32s.truncate(at);
    }
    #[inline]
    pub fn push_f32(&mut self, v: f32) {
        self.f32s.push(v);
    }
    #[inline]
    pub fn pop_f32(&mut self) -> f32 {
        self.f32s.pop().expect(EMPTY)
    }
    /// Integers of every width travel as `u64` (`as` casts round-trip them exactly).
    #[inline]
    pub fn push_int(&mut self, v: u64) {
        self.ints.push(v);
    }
    #[inline]
    pub fn pop_int(&mut self) -> u64 {
        self.ints.pop().expect(EMPTY)
    }
    #[inline]
    pub fn push_bool(&mut self, v: bool) {
        self.bools.push(v);
    }
    #[inline]
    pub fn pop_bool(&mut self) -> bool {
        self.bools.pop().expect(EMPTY)
    }

    /// A buffer of `len` copies of `init`, reusing a pooled allocation when there is one.
    pub fn take_f64(&mut self, len: usize, init: f64) -> Vec<f64> {
        let mut v = self.bufs_f64.pop().unwrap_or_default();
        v.clear();
        v.resize(len, init);
        v
    }
    pub fn give_f64(&mut self, v: Vec<f64>) {
        self.bufs_f64.push(v);
    }
    pub fn take_f32(&mut self, len: usize, init: f32) -> Vec<f32> {
        let mut v = self.bufs_f32.pop().unwrap_or_default();
        v.clear();
        v.resize(len, init);
        v
    }
    pub fn give_f32(&mut self, v: Vec<f32>) {
        self.bufs_f32.push(v);
    }
}

impl Tape {
    /// A tape from the pool holding a copy of `self`'s values.
    fn copy(&self) -> Tape {
        let mut t = Tape::acquire();
        t.f64s.extend_from_slice(&self.f64s);
        t.f32s.extend_from_slice(&self.f32s);
        t.ints.extend_from_slice(&self.ints);
        t.bools.extend_from_slice(&self.bools);
        t
    }
}

/// What the forward function of `#[cotan::autodiff_split]` recorded for its reverse
/// function: the values the reverse sweep needs, held by the caller, so that one forward
/// sweep serves reverse sweeps for several seeds.
pub struct Record {
    tape: Option<Tape>,
    of: &'static str,
}

impl Record {
    #[doc(hidden)]
    pub fn new(tape: Tape, of: &'static str) -> Record {
        Record { tape: Some(tape), of }
    }

    /// The function whose forward function made the record.
    pub fn function(&self) -> &'static str {
        self.of
    }

    /// A copy of the record for one reverse sweep, which consumes it.
    #[doc(hidden)]
    pub fn replay(&self, of: &'static str) -> Tape {
        assert!(self.of == of, "cotan: a record of `{}` was passed to the reverse function of `{of}`", self.of);
        self.tape.as_ref().expect("a record holds its tape until dropped").copy()
    }
}

impl Drop for Record {
    fn drop(&mut self) {
        if let Some(t) = self.tape.take() {
            t.release();
        }
    }
}

impl std::fmt::Debug for Record {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = self.tape.as_ref();
        let n = t.map_or(0, |t| t.f64s.len() + t.f32s.len() + t.ints.len() + t.bools.len());
        write!(f, "Record {{ of: {:?}, values: {n} }}", self.of)
    }
}

/// The integer types. cotan takes a struct field for an integer when its use shows no
/// number type (`p.n as f64`); generated code checks that with [`not_float`].
#[diagnostic::on_unimplemented(
    message = "cotan took this field for an integer, but it is `{Self}`",
    note = "its use in the differentiated function shows no number type (as in `p.x as f64`); write `p.x * 1.0` or annotate a `let` with the type so that cotan sees it is a float"
)]
pub trait Integer {}

macro_rules! integers {
    ($($t:ty),*) => { $(impl Integer for $t {})* };
}
integers!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);

/// Checks at compile time that a field cotan took for an integer is one.
pub fn not_float<T: Integer>(_: &T) {}

/// The float types generic derivatives are instantiated for (`f32`, `f64`): what
/// `num_traits::Float` gives, plus compound assignment and the tape. A function
/// `fn f<T: num_traits::Float>(..)` gets derivatives `fn df<T: cotan::Real>(..)`.
pub trait Real:
    num_traits::Float
    + std::ops::AddAssign
    + std::ops::SubAssign
    + std::ops::MulAssign
    + std::ops::DivAssign
    + std::fmt::Debug
    + Default
    + 'static
{
    /// A constant of the generated code.
    fn lit(x: f64) -> Self;
    #[doc(hidden)]
    fn push_to(self, t: &mut Tape);
    #[doc(hidden)]
    fn pop_from(t: &mut Tape) -> Self;
    #[doc(hidden)]
    fn take_from(t: &mut Tape, len: usize, init: Self) -> Vec<Self>;
    #[doc(hidden)]
    fn give_to(t: &mut Tape, v: Vec<Self>);
}

impl Real for f64 {
    #[inline]
    fn lit(x: f64) -> f64 {
        x
    }
    #[inline]
    fn push_to(self, t: &mut Tape) {
        t.push_f64(self)
    }
    #[inline]
    fn pop_from(t: &mut Tape) -> f64 {
        t.pop_f64()
    }
    fn take_from(t: &mut Tape, len: usize, init: f64) -> Vec<f64> {
        t.take_f64(len, init)
    }
    fn give_to(t: &mut Tape, v: Vec<f64>) {
        t.give_f64(v)
    }
}

impl Real for f32 {
    #[inline]
    fn lit(x: f64) -> f32 {
        x as f32
    }
    #[inline]
    fn push_to(self, t: &mut Tape) {
        t.push_f32(self)
    }
    #[inline]
    fn pop_from(t: &mut Tape) -> f32 {
        t.pop_f32()
    }
    fn take_from(t: &mut Tape, len: usize, init: f32) -> Vec<f32> {
        t.take_f32(len, init)
    }
    fn give_to(t: &mut Tape, v: Vec<f32>) {
        t.give_f32(v)
    }
}

impl Tape {
    #[inline]
    pub fn push_real<F: Real>(&mut self, v: F) {
        v.push_to(self)
    }
    #[inline]
    pub fn pop_real<F: Real>(&mut self) -> F {
        F::pop_from(self)
    }
    pub fn take_real<F: Real>(&mut self, len: usize, init: F) -> Vec<F> {
        F::take_from(self, len, init)
    }
    pub fn give_real<F: Real>(&mut self, v: Vec<F>) {
        F::give_to(self, v)
    }
}

/// `a as B` between a generic float and a number (which `as` cannot write).
#[inline]
pub fn cast<A: num_traits::ToPrimitive, B: num_traits::NumCast>(a: A) -> B {
    B::from(a).expect("cotan: a number does not fit the type it is converted to")
}

/// Where the binomial schedule of a checkpointed loop splits iterations `a..b` whose start
/// is stored, with `free` more snapshots available: Revolve's choice (Griewank and Walther,
/// ACM TOMS 26(1), 2000). A copy of `cotan_ir::binomial_split`, which the interpreter runs.
pub fn binomial_split(a: usize, b: usize, free: usize) -> usize {
    let l = b - a;
    if l < 2 || free == 0 {
        return b.saturating_sub(1).max(a);
    }
    let ds = free + 1;
    let (mut reps, mut range) = (0usize, 1usize);
    while range < l {
        reps += 1;
        range = range * (reps + ds) / reps;
    }
    let bino1 = range * reps / (ds + reps);
    let bino2 = if ds > 1 { bino1 * ds / (ds + reps - 1) } else { 1 };
    let bino3 = match ds {
        1 => 0,
        2 => 1,
        _ => bino2 * (ds - 1) / (ds + reps - 2),
    };
    let bino4 = bino2 * (reps - 1) / ds;
    let bino5 = match ds {
        0..=2 => 0,
        3 => 1,
        _ => bino3 * (ds - 2) / reps,
    };
    let step = if l <= bino1 + bino3 {
        bino4
    } else if l >= range - bino5 {
        bino1
    } else {
        l - bino2 - bino3
    };
    a + step.clamp(1, l - 1)
}
