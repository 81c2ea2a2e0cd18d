//! Parallel loops of `#[cotan::kernel]` functions: [`par_for`] runs a loop's iterations
//! on rayon's thread pool, and [`ParSlice`] is the view through which they write the
//! memory the loop writes.
//!
//! A `&mut [T]` cannot be shared between threads, and cutting it into one `&mut` per
//! iteration would make aliasing `&mut`s (undefined behaviour) as soon as two iterations
//! touch one element. A `ParSlice` holds the slice's raw pointer instead: reads and writes
//! are bounds-checked element accesses through it, and accumulations are atomic.
//! Iterations that write the element another iteration reads or writes race (the kernel's
//! rule; see `#[cotan::kernel]`).

use std::marker::PhantomData;
use std::ops::{Index, Range};
use std::sync::atomic::{AtomicI32, AtomicI64, AtomicIsize, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Runs `body(i)` for every `i` in `range`, in any order and at once, on rayon's thread
/// pool; returns when all have run. A panic of an iteration is resumed here.
pub fn par_for<F: Fn(usize) + Sync + Send>(range: Range<usize>, body: F) {
    use rayon::prelude::*;
    range.into_par_iter().for_each(body);
}

/// The index of the rayon worker thread running the caller (`None` outside rayon's pool).
pub fn thread_index() -> Option<usize> {
    rayon::current_thread_index()
}

/// A slice that the iterations of a parallel loop share: element reads and writes through
/// a raw pointer, atomic accumulation.
pub struct ParSlice<'a, T> {
    ptr: *mut T,
    len: usize,
    _borrow: PhantomData<&'a mut [T]>,
}

// Safety: a `ParSlice` is a `&mut [T]` lent to several threads at once, which only read and
// write single elements through it (accumulations atomically); the kernel's rules keep two
// iterations from writing one element except by accumulation.
unsafe impl<T: Send> Send for ParSlice<'_, T> {}
unsafe impl<T: Send + Sync> Sync for ParSlice<'_, T> {}

#[cold]
#[inline(never)]
#[track_caller]
fn out_of_bounds(len: usize, i: usize) -> ! {
    panic!("index out of bounds: the len is {len} but the index is {i}")
}

impl<'a, T> ParSlice<'a, T> {
    /// The view of `s` for the duration of the loop.
    #[inline]
    pub fn new(s: &'a mut [T]) -> Self {
        ParSlice { ptr: s.as_mut_ptr(), len: s.len(), _borrow: PhantomData }
    }

    /// The number of elements.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no elements.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    #[track_caller]
    fn at(&self, i: usize) -> *mut T {
        if i >= self.len {
            out_of_bounds(self.len, i)
        }
        // Safety: in bounds of the slice this view borrows.
        unsafe { self.ptr.add(i) }
    }

    /// Element `i`.
    #[inline]
    #[track_caller]
    pub fn get(&self, i: usize) -> T
    where
        T: Copy,
    {
        // Safety: in bounds; no other iteration writes element `i` (the kernel's rule).
        unsafe { self.at(i).read() }
    }

    /// Writes element `i` (the loop's own index).
    #[inline]
    #[track_caller]
    pub fn set(&self, i: usize, v: T) {
        // Safety: in bounds; only this iteration writes element `i`. The old value is
        // dropped in place, as `s[i] = v` does.
        unsafe { *self.at(i) = v }
    }

    /// `s[i] += v`, atomically: other iterations may add to element `i` at once.
    #[inline]
    #[track_caller]
    pub fn add(&self, i: usize, v: T)
    where
        T: AtomicAdd,
    {
        T::atomic_add(self.at(i), v)
    }

    /// `s[i] -= v`, atomically.
    #[inline]
    #[track_caller]
    pub fn sub(&self, i: usize, v: T)
    where
        T: AtomicAdd + std::ops::Neg<Output = T>,
    {
        T::atomic_add(self.at(i), -v)
    }
}

impl<T> Index<usize> for ParSlice<'_, T> {
    type Output = T;
    #[inline]
    #[track_caller]
    fn index(&self, i: usize) -> &T {
        // Safety: in bounds; no other iteration writes element `i` (the kernel's rule).
        unsafe { &*self.at(i) }
    }
}

/// Numbers that [`ParSlice::add`] can accumulate atomically.
pub trait AtomicAdd: Copy {
    /// `*p += v` as one atomic operation. `p` must be valid and aligned for `Self`.
    fn atomic_add(p: *mut Self, v: Self);
}

macro_rules! float_add {
    ($t:ty, $a:ty) => {
        impl AtomicAdd for $t {
            #[inline]
            fn atomic_add(p: *mut Self, v: Self) {
                assert!(p as usize % align_of::<$a>() == 0, "cotan: a float that is not aligned for atomics");
                // Safety: valid, and aligned as just checked; every concurrent access to the
                // element is atomic (the kernel's rule).
                let a = unsafe { &*(p as *const $a) };
                let mut old = a.load(Ordering::Relaxed);
                loop {
                    let new = (<$t>::from_bits(old) + v).to_bits();
                    match a.compare_exchange_weak(old, new, Ordering::Relaxed, Ordering::Relaxed) {
                        Ok(_) => return,
                        Err(now) => old = now,
                    }
                }
            }
        }
    };
}
float_add!(f64, AtomicU64);
float_add!(f32, AtomicU32);

macro_rules! int_add {
    ($($t:ty, $a:ty);*) => {$(
        impl AtomicAdd for $t {
            #[inline]
            fn atomic_add(p: *mut Self, v: Self) {
                assert!(p as usize % align_of::<$a>() == 0, "cotan: an integer that is not aligned for atomics");
                // Safety: valid, aligned as just checked, the atomic's size; every concurrent
                // access to the element is atomic (the kernel's rule). Wraps on overflow.
                let a = unsafe { &*(p as *const $a) };
                a.fetch_add(v, Ordering::Relaxed);
            }
        }
    )*};
}
int_add!(i32, AtomicI32; u32, AtomicU32; i64, AtomicI64; u64, AtomicU64; isize, AtomicIsize; usize, AtomicUsize);
