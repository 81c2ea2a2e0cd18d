//! Type inference for unsuffixed literals and the locals they flow into.
//!
//! Rust gives `0` and `0.0` a type from context (`x[k]` makes `k` a `usize`). Lowering
//! records each such literal as a type variable, unifies it with every type it meets,
//! and [`Infer::resolve`] picks Rust's defaults (`i32`, `f64`) for the rest.

use cotan_ir::Scalar;

/// A scalar type that may still be unknown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum STy {
    Known(Scalar),
    Flex(usize),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Int,
    Float,
    /// Not known yet (the element of `Vec::new()`); becomes what it meets.
    Any,
}

#[derive(Default)]
pub struct Infer {
    parent: Vec<usize>,
    class: Vec<Class>,
    known: Vec<Option<Scalar>>,
}

impl Infer {
    pub fn fresh(&mut self, class: Class) -> STy {
        let id = self.parent.len();
        self.parent.push(id);
        self.class.push(class);
        self.known.push(None);
        STy::Flex(id)
    }

    fn root(&mut self, mut id: usize) -> usize {
        while self.parent[id] != id {
            self.parent[id] = self.parent[self.parent[id]];
            id = self.parent[id];
        }
        id
    }

    /// The type as far as it is known now.
    pub fn current(&mut self, t: STy) -> STy {
        match t {
            STy::Known(_) => t,
            STy::Flex(id) => {
                let r = self.root(id);
                self.known[r].map_or(STy::Flex(r), STy::Known)
            }
        }
    }

    pub fn class_of(&mut self, t: STy) -> Option<Class> {
        match self.current(t) {
            STy::Known(s) if s.is_float() => Some(Class::Float),
            STy::Known(s) if s.is_int() => Some(Class::Int),
            STy::Known(_) => None,
            STy::Flex(id) => Some(self.class[id]).filter(|c| *c != Class::Any),
        }
    }

    /// Makes two types equal; `Err` holds both sides when they cannot be.
    pub fn unify(&mut self, a: STy, b: STy) -> Result<(), (String, String)> {
        let (a, b) = (self.current(a), self.current(b));
        match (a, b) {
            (STy::Known(x), STy::Known(y)) if x == y => Ok(()),
            (STy::Known(x), STy::Known(y)) => Err((x.to_string(), y.to_string())),
            (STy::Flex(id), STy::Known(s)) | (STy::Known(s), STy::Flex(id)) => {
                let fits = match self.class[id] {
                    Class::Int => s.is_int(),
                    Class::Float => s.is_float(),
                    Class::Any => true,
                };
                if !fits {
                    return Err((self.describe(STy::Flex(id)), s.to_string()));
                }
                self.known[id] = Some(s);
                Ok(())
            }
            (STy::Flex(x), STy::Flex(y)) if x == y => Ok(()),
            (STy::Flex(x), STy::Flex(y)) => {
                let (cx, cy) = (self.class[x], self.class[y]);
                if cx != cy && cx != Class::Any && cy != Class::Any {
                    return Err((self.describe(a), self.describe(b)));
                }
                // The merged variable keeps the more specific class.
                if cy == Class::Any {
                    self.class[y] = cx;
                }
                self.parent[x] = y;
                Ok(())
            }
        }
    }

    pub fn describe(&mut self, t: STy) -> String {
        match self.current(t) {
            STy::Known(s) => s.to_string(),
            STy::Flex(id) => match self.class[id] {
                Class::Int => "{integer}".into(),
                Class::Float => "{float}".into(),
                Class::Any => "_".into(),
            },
        }
    }

    /// The final type, with Rust's defaults for what nothing constrained.
    pub fn resolve(&mut self, t: STy) -> Scalar {
        match self.current(t) {
            STy::Known(s) => s,
            STy::Flex(id) => match self.class[id] {
                Class::Int => Scalar::I32,
                Class::Float | Class::Any => Scalar::F64,
            },
        }
    }
}
