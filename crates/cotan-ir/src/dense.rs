//! Sets and maps keyed by values and variables, stored densely by index.
//!
//! Values and variables are small consecutive integers, so a bit set or a vector indexed
//! by them does what a hash set or map does without hashing or probing. That matters
//! where cotan runs as a proc macro: cargo compiles proc macros unoptimized, and there a
//! hash table's probe is dozens of calls where a vector's is a few. Iteration is in index
//! order (deterministic, like everything the passes do).

use crate::{Value, Var};
use std::marker::PhantomData;

/// A key stored by its index.
pub trait Id: Copy {
    fn index(self) -> usize;
    fn from_index(i: usize) -> Self;
}

impl Id for Value {
    fn index(self) -> usize {
        self.0 as usize
    }
    fn from_index(i: usize) -> Self {
        Value(i as u32)
    }
}

impl Id for Var {
    fn index(self) -> usize {
        self.0 as usize
    }
    fn from_index(i: usize) -> Self {
        Var(i as u32)
    }
}

/// A set of ids: one bit each.
#[derive(Clone, Debug)]
pub struct IdSet<I> {
    words: Vec<u64>,
    len: usize,
    _id: PhantomData<I>,
}

impl<I> Default for IdSet<I> {
    fn default() -> Self {
        IdSet { words: Vec::new(), len: 0, _id: PhantomData }
    }
}

impl<I: Id> PartialEq for IdSet<I> {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().map(I::index).eq(other.iter().map(I::index))
    }
}

impl<I: Id> IdSet<I> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `id`; true if it was not there.
    pub fn insert(&mut self, id: I) -> bool {
        let (w, bit) = (id.index() / 64, 1u64 << (id.index() % 64));
        if w >= self.words.len() {
            self.words.resize(w + 1, 0);
        }
        let fresh = self.words[w] & bit == 0;
        self.words[w] |= bit;
        self.len += fresh as usize;
        fresh
    }

    pub fn contains(&self, id: &I) -> bool {
        let i = id.index();
        self.words.get(i / 64).is_some_and(|w| w & (1u64 << (i % 64)) != 0)
    }

    /// Removes `id`; true if it was there.
    pub fn remove(&mut self, id: &I) -> bool {
        let (w, bit) = (id.index() / 64, 1u64 << (id.index() % 64));
        let present = self.words.get(w).is_some_and(|x| x & bit != 0);
        if present {
            self.words[w] &= !bit;
            self.len -= 1;
        }
        present
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn clear(&mut self) {
        self.words.clear();
        self.len = 0;
    }

    /// The ids, in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = I> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &bits)| {
            let mut bits = bits;
            std::iter::from_fn(move || {
                if bits == 0 {
                    return None;
                }
                let b = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                Some(I::from_index(w * 64 + b))
            })
        })
    }

    pub fn retain(&mut self, mut keep: impl FnMut(&I) -> bool) {
        let gone: Vec<I> = self.iter().filter(|i| !keep(i)).collect();
        for i in gone {
            self.remove(&i);
        }
    }

    /// The ids in both sets.
    pub fn intersection(&self, other: &Self) -> Self {
        let words: Vec<u64> = self.words.iter().zip(&other.words).map(|(a, b)| a & b).collect();
        let len = words.iter().map(|w| w.count_ones() as usize).sum();
        IdSet { words, len, _id: PhantomData }
    }
}

impl<I: Id> Extend<I> for IdSet<I> {
    fn extend<T: IntoIterator<Item = I>>(&mut self, iter: T) {
        for i in iter {
            self.insert(i);
        }
    }
}

impl<'a, I: Id + 'a> Extend<&'a I> for IdSet<I> {
    fn extend<T: IntoIterator<Item = &'a I>>(&mut self, iter: T) {
        for i in iter {
            self.insert(*i);
        }
    }
}

impl<I: Id> FromIterator<I> for IdSet<I> {
    fn from_iter<T: IntoIterator<Item = I>>(iter: T) -> Self {
        let mut s = IdSet::new();
        s.extend(iter);
        s
    }
}

impl<I: Id> Eq for IdSet<I> {}

/// A map from ids: a slot per id up to the largest.
#[derive(Clone, Debug)]
pub struct IdMap<I, T> {
    slots: Vec<Option<T>>,
    len: usize,
    _id: PhantomData<I>,
}

impl<I, T> Default for IdMap<I, T> {
    fn default() -> Self {
        IdMap { slots: Vec::new(), len: 0, _id: PhantomData }
    }
}

impl<I: Id, T> IdMap<I, T> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn get(&self, id: &I) -> Option<&T> {
        self.slots.get(id.index()).and_then(Option::as_ref)
    }

    pub fn get_mut(&mut self, id: &I) -> Option<&mut T> {
        self.slots.get_mut(id.index()).and_then(Option::as_mut)
    }

    pub fn contains_key(&self, id: &I) -> bool {
        self.get(id).is_some()
    }

    /// Sets `id`'s entry; returns the one it replaces.
    pub fn insert(&mut self, id: I, value: T) -> Option<T> {
        let old = self.slot(id).replace(value);
        self.len += old.is_none() as usize;
        old
    }

    pub fn remove(&mut self, id: &I) -> Option<T> {
        let old = self.slots.get_mut(id.index()).and_then(Option::take);
        self.len -= old.is_some() as usize;
        old
    }

    /// `id`'s entry, made by `make` if there is none.
    pub fn get_or_insert_with(&mut self, id: I, make: impl FnOnce() -> T) -> &mut T {
        if self.get(&id).is_none() {
            self.insert(id, make());
        }
        self.slots[id.index()].as_mut().expect("just inserted")
    }

    fn slot(&mut self, id: I) -> &mut Option<T> {
        let i = id.index();
        if i >= self.slots.len() {
            self.slots.resize_with(i + 1, || None);
        }
        &mut self.slots[i]
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The entries, by increasing id.
    pub fn iter(&self) -> impl Iterator<Item = (I, &T)> + '_ {
        self.slots.iter().enumerate().filter_map(|(i, s)| s.as_ref().map(|v| (I::from_index(i), v)))
    }

    pub fn keys(&self) -> impl Iterator<Item = I> + '_ {
        self.iter().map(|(i, _)| i)
    }

    pub fn values(&self) -> impl Iterator<Item = &T> + '_ {
        self.slots.iter().flatten()
    }
}

impl<I: Id, T: Default> IdMap<I, T> {
    /// `id`'s entry, the default if there is none.
    pub fn entry_or_default(&mut self, id: I) -> &mut T {
        self.get_or_insert_with(id, T::default)
    }
}

impl<I: Id, T> std::ops::Index<&I> for IdMap<I, T> {
    type Output = T;
    /// `id`'s entry; panics if there is none, like a hash map's.
    fn index(&self, id: &I) -> &T {
        self.get(id).expect("no entry for this id")
    }
}

impl<I: Id, T> FromIterator<(I, T)> for IdMap<I, T> {
    fn from_iter<It: IntoIterator<Item = (I, T)>>(iter: It) -> Self {
        let mut m = IdMap::new();
        for (i, v) in iter {
            m.insert(i, v);
        }
        m
    }
}

impl<I: Id, T> Extend<(I, T)> for IdMap<I, T> {
    fn extend<It: IntoIterator<Item = (I, T)>>(&mut self, iter: It) {
        for (i, v) in iter {
            self.insert(i, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_count_iterate_in_order_and_intersect() {
        let mut s: IdSet<Value> = [Value(70), Value(3), Value(64)].into_iter().collect();
        assert!(!s.insert(Value(3)));
        assert_eq!(s.len(), 3);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![Value(3), Value(64), Value(70)]);
        assert!(s.remove(&Value(64)) && !s.remove(&Value(64)) && !s.remove(&Value(900)));
        assert!(!s.contains(&Value(64)) && s.contains(&Value(70)) && !s.contains(&Value(5000)));
        let t: IdSet<Value> = [Value(70), Value(1)].into_iter().collect();
        let both = s.intersection(&t);
        assert_eq!((both.len(), both.iter().collect::<Vec<_>>()), (1, vec![Value(70)]));
        s.retain(|v| v.0 > 10);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![Value(70)]);
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn maps_insert_replace_remove_and_iterate_in_order() {
        let mut m: IdMap<Var, &str> = IdMap::new();
        assert_eq!(m.insert(Var(9), "a"), None);
        assert_eq!(m.insert(Var(2), "b"), None);
        assert_eq!(m.insert(Var(9), "c"), Some("a"));
        assert_eq!(m.len(), 2);
        assert_eq!(m.iter().collect::<Vec<_>>(), vec![(Var(2), &"b"), (Var(9), &"c")]);
        *m.get_or_insert_with(Var(4), || "d") = "e";
        assert_eq!(m.get(&Var(4)), Some(&"e"));
        assert_eq!(m.remove(&Var(2)), Some("b"));
        assert_eq!(m.remove(&Var(2)), None);
        assert_eq!((m.len(), m.get(&Var(100))), (2, None));
    }
}
