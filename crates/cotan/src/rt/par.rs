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

/// [`par_for`] for a body that records on a tape: each of rayon's jobs takes one tape from
/// its thread's pool for all the iterations it runs (an iteration leaves it empty) and
/// gives it back at its end.
pub fn par_for_tape<F: Fn(&mut crate::rt::Tape, usize) + Sync + Send>(range: Range<usize>, body: F) {
    use rayon::prelude::*;
    struct Pooled(crate::rt::Tape);
    impl Drop for Pooled {
        fn drop(&mut self) {
            std::mem::take(&mut self.0).release();
        }
    }
    range.into_par_iter().for_each_init(|| Pooled(crate::rt::Tape::acquire()), |t, i| body(&mut t.0, i));
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

/// A slice the iterations of a parallel loop only accumulate into (`s[e] += v` at any
/// index; nothing reads or writes it otherwise): reverse mode's shadows of what a loop
/// gathers. Each of rayon's threads adds into a zeroed copy of its own, and the copies are
/// added into the slice when the view is dropped, at the end of the loop; an atomic on every
/// addition would cost more than the addition. Where the copies would be large for the loop
/// (a thread's copy beyond 8 elements per iteration, past 64 Ki elements) the additions are
/// atomic instead. The copies' buffers are kept for the next loop (no allocation in steady
/// state).
pub struct AccSlice<'a, T: AtomicAdd + Default> {
    target: ParSlice<'a, T>,
    /// One per thread of the pool, empty until the thread's first addition; none when the
    /// additions are atomic.
    copies: Copies<T>,
}

// Safety: each thread touches only its own copy (`rayon::current_thread_index`); the target
// is a `ParSlice`, written when the view is dropped, by the thread that owns the view.
unsafe impl<T: AtomicAdd + Default + Send> Send for AccSlice<'_, T> {}
unsafe impl<T: AtomicAdd + Default + Send + Sync> Sync for AccSlice<'_, T> {}

impl<'a, T: AtomicAdd + Default + Send + Sync> AccSlice<'a, T> {
    /// The view of `s` for a loop of `trips` iterations.
    pub fn new(s: &'a mut [T], trips: usize) -> Self {
        let threads = rayon::current_num_threads();
        let private = threads > 1 && s.len() <= trips.saturating_mul(8).max(1 << 16);
        // (Spare buffers of earlier loops, emptied: no allocation in steady state.)
        let copies = if private {
            let mut copies = T::spare().lock().unwrap_or_else(|e| e.into_inner()).pop().unwrap_or_default();
            copies.resize_with(threads, Default::default);
            copies
        } else {
            vec![]
        };
        AccSlice { target: ParSlice::new(s), copies }
    }

    /// The number of elements.
    #[inline]
    pub fn len(&self) -> usize {
        self.target.len
    }

    /// Whether there are no elements.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.target.len == 0
    }

    /// `s[i] += v`.
    #[inline]
    #[track_caller]
    pub fn add(&self, i: usize, v: T) {
        let copy = rayon::current_thread_index().and_then(|t| self.copies.get(t));
        let Some(copy) = copy else { return self.target.add(i, v) };
        // Safety: the copy of the thread running this, which nothing else touches until the
        // view is dropped.
        let copy = unsafe { &mut *copy.get() };
        if copy.len() != self.target.len {
            zeroed(copy, self.target.len);
        }
        match copy.get_mut(i) {
            Some(e) => T::plain_add(e, v),
            None => out_of_bounds(self.target.len, i),
        }
    }

    /// `s[i] -= v`.
    #[inline]
    #[track_caller]
    pub fn sub(&self, i: usize, v: T)
    where
        T: std::ops::Neg<Output = T>,
    {
        self.add(i, -v)
    }
}

/// A thread's first addition: its copy, zeroed (kept out of line so that `add` inlines).
#[cold]
#[inline(never)]
fn zeroed<T: Copy + Default>(copy: &mut Vec<T>, len: usize) {
    copy.resize(len, T::default());
}

impl<T: AtomicAdd + Default> Drop for AccSlice<'_, T> {
    fn drop(&mut self) {
        // The copies added into the slice (the loop is over: nothing else accesses it).
        // Safety: the slice this view borrows, not otherwise borrowed until the view ends.
        let target = unsafe { std::slice::from_raw_parts_mut(self.target.ptr, self.target.len) };
        for copy in &mut self.copies {
            let copy = copy.get_mut();
            for (t, v) in target.iter_mut().zip(&*copy) {
                T::plain_add(t, *v);
            }
            copy.clear();
        }
        if !self.copies.is_empty() {
            let copies = std::mem::take(&mut self.copies);
            T::spare().lock().unwrap_or_else(|e| e.into_inner()).push(copies);
        }
    }
}

/// Numbers that [`ParSlice::add`] can accumulate atomically.
pub trait AtomicAdd: Copy + 'static {
    /// `*p += v` as one atomic operation. `p` must be valid and aligned for `Self`.
    fn atomic_add(p: *mut Self, v: Self);
    /// `*a += v`, as `atomic_add` adds (integers wrap).
    fn plain_add(a: &mut Self, v: Self);
    /// Spare sets of [`AccSlice`]'s per-thread copies, kept across calls.
    fn spare() -> &'static std::sync::Mutex<Vec<Copies<Self>>>;
}

/// One buffer per thread of the pool (see [`AccSlice`]).
pub type Copies<T> = Vec<std::cell::UnsafeCell<Vec<T>>>;

macro_rules! spare {
    ($t:ty) => {
        fn spare() -> &'static std::sync::Mutex<Vec<Copies<$t>>> {
            static SPARE: std::sync::Mutex<Vec<Copies<$t>>> = std::sync::Mutex::new(Vec::new());
            &SPARE
        }
    };
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
            #[inline]
            fn plain_add(a: &mut Self, v: Self) {
                *a += v;
            }
            spare!($t);
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
            #[inline]
            fn plain_add(a: &mut Self, v: Self) {
                *a = a.wrapping_add(v);
            }
            spare!($t);
        }
    )*};
}
int_add!(i32, AtomicI32; u32, AtomicU32; i64, AtomicI64; u64, AtomicU64; isize, AtomicIsize; usize, AtomicUsize);

// ---- validation mode (cotan's feature `validate`) ----

thread_local! {
    /// The iteration of a validated parallel loop this thread runs (`par_for_checked`).
    static ITERATION: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// Where a validated parallel loop is: its kernel and source line, for the messages of
/// [`CheckedSlice`].
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct LoopSite {
    /// The kernel, or `derivative of kernel` for a derivative's loop.
    pub kernel: &'static str,
    pub file: &'static str,
    pub line: u32,
}

/// [`par_for`] for validation mode: each iteration runs with its index known to the
/// [`CheckedSlice`]s it reads and writes through.
#[doc(hidden)]
pub fn par_for_checked<F: Fn(usize) + Sync + Send>(range: Range<usize>, body: F) {
    use rayon::prelude::*;
    struct Restore(Option<usize>);
    impl Drop for Restore {
        fn drop(&mut self) {
            ITERATION.with(|c| c.set(self.0));
        }
    }
    range.into_par_iter().for_each(|i| {
        let _restore = Restore(ITERATION.with(|c| c.replace(Some(i))));
        body(i)
    });
}

/// Iterations that touched an element one way: the first, and one other than the first
/// (each stored as iteration + 1, 0 for none).
#[derive(Default)]
struct Touched {
    first: AtomicUsize,
    other: AtomicUsize,
}

impl Touched {
    fn note(&self, it: usize) {
        if let Err(first) = self.first.compare_exchange(0, it, Ordering::SeqCst, Ordering::SeqCst) {
            if first != it {
                self.other.store(it, Ordering::SeqCst);
            }
        }
    }

    /// An iteration other than `it` that touched the element.
    fn besides(&self, it: usize) -> Option<usize> {
        let first = self.first.load(Ordering::SeqCst);
        if first != 0 && first != it {
            return Some(first);
        }
        let other = self.other.load(Ordering::SeqCst);
        (other != 0 && other != it).then_some(other)
    }
}

/// Per element: the iterations that wrote it, read it and accumulated into it.
#[derive(Default)]
struct Element {
    written: Touched,
    read: Touched,
    accumulated: Touched,
}

/// What an iteration did to an element.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Access {
    Write,
    Read,
    Accumulate,
}

impl Access {
    fn verb(self) -> &'static str {
        match self {
            Access::Write => "written",
            Access::Read => "read",
            Access::Accumulate => "accumulated into (`+=`/`-=`)",
        }
    }
}

/// [`ParSlice`] in validation mode (cotan's feature `validate`): it also records, per
/// element, which iterations of the loop wrote it, read it and accumulated into it, and
/// panics when two different iterations touch one element in a way that races: one writes
/// it and another reads, writes or accumulates into it, or one accumulates into it and
/// another reads it. (Accumulations by many iterations are atomic, hence fine.) Slow: a
/// debugging aid.
#[doc(hidden)]
pub struct CheckedSlice<'a, T> {
    slice: ParSlice<'a, T>,
    name: &'static str,
    site: &'a LoopSite,
    elements: Box<[Element]>,
}

impl<'a, T> CheckedSlice<'a, T> {
    /// The view of `s`, the array the kernel calls `name`, for the loop at `site`.
    pub fn new(s: &'a mut [T], name: &'static str, site: &'a LoopSite) -> Self {
        let elements = (0..s.len()).map(|_| Element::default()).collect();
        CheckedSlice { slice: ParSlice::new(s), name, site, elements }
    }

    /// The number of elements.
    #[inline]
    pub fn len(&self) -> usize {
        self.slice.len()
    }

    /// Whether there are no elements.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.slice.is_empty()
    }

    /// Records that the running iteration does `access` to element `i` (in bounds), and
    /// panics if another iteration did what races with it. Each access is published before
    /// the others are looked at (sequentially consistent), so of two racing accesses at
    /// least one sees the other, whichever order the threads run them in.
    #[track_caller]
    fn touch(&self, i: usize, access: Access) {
        let Some(e) = self.elements.get(i) else { return };
        let Some(it) = ITERATION.with(|c| c.get()) else { return };
        let me = it + 1;
        let (mine, conflicts): (&Touched, &[(Access, &Touched)]) = match access {
            Access::Write => (
                &e.written,
                &[(Access::Write, &e.written), (Access::Read, &e.read), (Access::Accumulate, &e.accumulated)],
            ),
            Access::Read => (&e.read, &[(Access::Write, &e.written), (Access::Accumulate, &e.accumulated)]),
            Access::Accumulate => (&e.accumulated, &[(Access::Write, &e.written), (Access::Read, &e.read)]),
        };
        mine.note(me);
        for &(other, touched) in conflicts {
            if let Some(them) = touched.besides(me) {
                self.violation(i, (other, them - 1), (access, it));
            }
        }
    }

    #[cold]
    #[inline(never)]
    #[track_caller]
    fn violation(&self, i: usize, (a, ia): (Access, usize), (b, ib): (Access, usize)) -> ! {
        let LoopSite { kernel, file, line } = *self.site;
        let name = self.name;
        // The same words whichever of the two iterations saw the other.
        let ((a, ia), (b, ib)) = if (b, ib) < (a, ia) { ((b, ib), (a, ia)) } else { ((a, ia), (b, ib)) };
        let what = if a == b {
            format!("is {} by iteration {ia} and by iteration {ib}", a.verb())
        } else {
            format!("is {} by iteration {ia} and {} by iteration {ib}", a.verb(), b.verb())
        };
        panic!(
            "cotan validation: kernel `{kernel}`, parallel loop at {file}:{line}: `{name}[{i}]` {what}; \
             the iterations of a parallel loop run at once, so an element one of them writes is \
             read or written by no other, and one they accumulate into is read by none"
        )
    }

    /// Element `i`.
    #[inline]
    #[track_caller]
    pub fn get(&self, i: usize) -> T
    where
        T: Copy,
    {
        let v = self.slice.get(i);
        self.touch(i, Access::Read);
        v
    }

    /// Writes element `i`.
    #[inline]
    #[track_caller]
    pub fn set(&self, i: usize, v: T) {
        self.touch(i, Access::Write);
        self.slice.set(i, v)
    }

    /// `s[i] += v`, atomically.
    #[inline]
    #[track_caller]
    pub fn add(&self, i: usize, v: T)
    where
        T: AtomicAdd,
    {
        self.touch(i, Access::Accumulate);
        self.slice.add(i, v)
    }

    /// `s[i] -= v`, atomically.
    #[inline]
    #[track_caller]
    pub fn sub(&self, i: usize, v: T)
    where
        T: AtomicAdd + std::ops::Neg<Output = T>,
    {
        self.touch(i, Access::Accumulate);
        self.slice.sub(i, v)
    }
}

impl<T> Index<usize> for CheckedSlice<'_, T> {
    type Output = T;
    #[inline]
    #[track_caller]
    fn index(&self, i: usize) -> &T {
        let r = &self.slice[i];
        self.touch(i, Access::Read);
        r
    }
}
