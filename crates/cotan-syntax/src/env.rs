//! What lowering may ask about the crate outside the function it lowers: the structs of
//! numbers it builds and passes around (`Wishart { gamma, m }`, `Normal::new(mu, s)`),
//! and how the functions it calls take and return them. cotan-expand answers from the
//! crate's sources; without them (`NoEnv`) nothing is known and such structs stay out.
//!
//! A struct of numbers (its fields numbers, or structs of numbers) is not memory in the
//! IR: lowering keeps it as its fields (a tree of values, like a tuple), passes it to
//! functions of the crate field by field and gets it back from them the same way.

use cotan_ir::Scalar;

/// A struct of numbers: its Rust path (as the function that uses it may write it) and its
/// fields in declaration order.
#[derive(Clone, Debug, PartialEq)]
pub struct Structure {
    pub path: String,
    pub fields: Vec<(String, FieldShape)>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum FieldShape {
    Number(Scalar),
    Struct(Structure),
}

impl Structure {
    /// The number types of its fields, depth first (the order they are passed in).
    pub fn leaves(&self) -> Vec<Scalar> {
        let mut out = vec![];
        for (_, f) in &self.fields {
            match f {
                FieldShape::Number(s) => out.push(*s),
                FieldShape::Struct(s) => out.extend(s.leaves()),
            }
        }
        out
    }
}

/// How a function of the crate takes and returns structs of numbers, field by field:
/// per parameter (`self` first), the struct it takes by value or by `&`.
#[derive(Clone, Debug, Default)]
pub struct CalleeShape {
    pub params: Vec<Option<Structure>>,
    pub ret: Option<Structure>,
    /// How many numbers it returns otherwise: 0 for `()`, 1 for a number, more for a tuple.
    pub results: usize,
    /// Per parameter: taken by value in Rust (a struct that is not of numbers, an enum, an
    /// array), by reference in the IR.
    pub by_ref: Vec<bool>,
    /// It returns an array of numbers (`-> [f64; 3]`), as its elements in the IR.
    pub ret_array: Option<(Scalar, u64)>,
    /// The types of the numbers it returns, when its result is a number or a tuple of them
    /// (`-> f32`, `-> (f64, usize)`): a call's results take them, as in rustc.
    pub ret_scalars: Option<Vec<Scalar>>,
    /// Its receiver is `&mut self`.
    pub mut_receiver: bool,
    /// Per parameter, its number type if it takes a number (`i: usize`): the arguments take
    /// it, as in rustc (`(0..3).map(|i| pick(x, i))` makes `i` a `usize`).
    pub param_scalars: Vec<Option<Scalar>>,
}

impl CalleeShape {
    /// Whether its IR signature differs from its Rust one: anything passed field by field
    /// or by reference for a value.
    pub fn flattens(&self) -> bool {
        self.ret.is_some()
            || self.ret_array.is_some()
            || self.params.iter().any(Option::is_some)
            || self.by_ref.contains(&true)
    }
}

pub trait Env {
    /// The struct of numbers a type path names, as written in the function (`Self` too).
    fn structure(&self, ty: &syn::Path) -> Option<Structure>;
    /// How the function a call names (as written in the function) takes and returns
    /// structs of numbers, if it is a function of the crate that lowering passes them to
    /// field by field.
    fn callee(&self, path: &syn::Path) -> Option<CalleeShape>;
    /// The fields of a struct (its type as a record of the function names it) and their
    /// types, as far as lowering can use them.
    fn record_fields(&self, _ty: &str) -> Option<Vec<(String, FieldType)>> {
        None
    }
    /// The function a call names, if lowering inlines it at its calls (it takes a closure
    /// or returns memory, which no derivative signature can carry).
    fn inline(&self, _path: &syn::Path) -> Option<Result<Inlined, String>> {
        None
    }
    /// The function a call names, to be lowered at the call for `reason` (the call passes
    /// what no derivative signature can carry), if its body can be read.
    fn inline_as(&self, _path: &syn::Path, _reason: &'static str) -> Option<Result<Inlined, String>> {
        None
    }
    /// The path, as the function being lowered names it, of the struct a type path names
    /// here (`Self` in a method lowered at its call), if it differs from the path written.
    fn struct_path(&self, _ty: &syn::Path) -> Option<String> {
        None
    }
    /// Whether the struct a type path names derives `Default` (its `default()` is zeros).
    fn derives_default(&self, _ty: &syn::Path) -> bool {
        false
    }
    /// Whether a type path names an enum of the crate (without generics).
    fn is_enum(&self, _ty: &syn::Path) -> bool {
        false
    }
    /// The crate's impl of an operator of a number type on one of its structs
    /// (`impl Mul<V3> for f64`): its method `method` (`mul`), to be lowered at `2.0 * v`.
    fn number_operator(&self, _number: &str, _method: &str, _operand: &syn::Path) -> Option<Result<Inlined, String>> {
        None
    }
    /// The crate's impl of an operator on its struct `ty` whose right operand is `rhs`
    /// (`impl Mul<f64> for M3` or `impl Mul<[f64; 3]> for M3` beside `impl Mul for M3`): its
    /// method `method`, to be lowered at the operator. For a type with several impls of
    /// the operator, which Rust chooses between by the operand's type. `by_ref`: the impl
    /// for references (`impl Add<&V3> for &V3`, of `&a + &b`).
    fn operator_for(
        &self,
        _ty: &syn::Path,
        _method: &str,
        _rhs: &Operand,
        _by_ref: bool,
    ) -> Option<Result<Inlined, String>> {
        None
    }
    /// The path, as the function being lowered names it, of the function a call inside an
    /// inlined body names (which is written for the inlined function's own module).
    fn home_path(&self, _path: &syn::Path) -> Option<String> {
        None
    }
    /// The path, as the function being lowered names it, of the type of the crate that
    /// `ty` names here (a turbofish's type argument, `helper::<Gauss>(..)`).
    fn home_type(&self, _ty: &syn::Path) -> Option<String> {
        None
    }
    /// For the body of a function lowered at a call (`Inlined::env`): the crate as seen from
    /// it with its type parameters standing for types of the crate, each named as the
    /// function being lowered names it (`("K", "model::Gauss")`), so that `K::scale()` is
    /// `Gauss::scale()`. `None` if one of them is not a type of the crate.
    fn with_type_params(&self, _types: &[(String, String)]) -> Option<std::rc::Rc<dyn Env>> {
        None
    }
}

/// A function of the crate to lower in place of a call of it.
pub struct Inlined {
    /// Its definition, constants substituted and aliases resolved in its signature.
    pub item: syn::ItemFn,
    /// The crate as seen from its body.
    pub env: std::rc::Rc<dyn Env>,
    /// `` `rk4` (src/ode.rs:70) ``, for messages.
    pub shown: String,
    /// Identifies the function (a recursive inlining is an error).
    pub key: String,
    /// Whether `item`'s spans hold its lines in its file (when it is not made for rustc).
    pub located: bool,
    /// Why it is lowered in place (for messages): "it takes a closure".
    pub reason: &'static str,
}

impl FieldType {
    /// Numbers in an array, a vector or an array of arrays the struct owns (`[f64; 3]`,
    /// `Vec<f64>`, `[[f64; 3]; 3]`): a field a struct of numbers cannot have.
    pub(crate) fn is_buffer(&self) -> bool {
        matches!(
            self,
            FieldType::Memory(_, cotan_ir::MemKind::Array(_) | cotan_ir::MemKind::Vec | cotan_ir::MemKind::Nested(..))
        )
    }
}

/// The type of an operator's right operand, as lowering judges it without lowering it.
#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    /// A number (`m * 2.0`: `Mul<f64>`).
    Number,
    /// A struct of the crate, by the path the function names it with (`Mul<V3>`, `Mul`).
    Struct(syn::Path),
    /// An array (`m * [1.0, 0.0, 0.0]`: `Mul<[f64; 3]>`).
    Array,
}

/// The type of a struct's field.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldType {
    Number(Scalar),
    /// Numbers in a container (`Vec<f64>`, `[f64; 3]`, `Vec<Vec<f64>>`, `Vec<usize>`).
    Memory(Scalar, cotan_ir::MemKind),
    /// Another struct, by a path the function can name it with.
    Record(String),
    /// Structs or tuples in a container (`Vec<Spring>`, `[(usize, usize); 6]`).
    Records(cotan_ir::Dim, String),
    /// Anything else (`String`, a map): passed on, never read.
    Other,
}

/// No knowledge of the crate.
pub struct NoEnv;

impl Env for NoEnv {
    fn structure(&self, _: &syn::Path) -> Option<Structure> {
        None
    }

    fn callee(&self, _: &syn::Path) -> Option<CalleeShape> {
        None
    }
}
