//! The types of IR values.

use std::fmt;

/// A scalar type: what a single value of a Rust primitive type is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scalar {
    F32,
    F64,
    I8,
    I16,
    I32,
    I64,
    I128,
    Isize,
    U8,
    U16,
    U32,
    U64,
    U128,
    Usize,
    Bool,
}

impl Scalar {
    pub const ALL: [Scalar; 15] = [
        Scalar::F32,
        Scalar::F64,
        Scalar::I8,
        Scalar::I16,
        Scalar::I32,
        Scalar::I64,
        Scalar::I128,
        Scalar::Isize,
        Scalar::U8,
        Scalar::U16,
        Scalar::U32,
        Scalar::U64,
        Scalar::U128,
        Scalar::Usize,
        Scalar::Bool,
    ];

    pub fn is_float(self) -> bool {
        matches!(self, Scalar::F32 | Scalar::F64)
    }

    pub fn is_int(self) -> bool {
        !self.is_float() && self != Scalar::Bool
    }

    pub fn is_signed(self) -> bool {
        matches!(self, Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::I64 | Scalar::I128 | Scalar::Isize)
    }

    /// The values an integer type holds, as far as an `i128` does (`u128` values above
    /// `i128::MAX` are out of the IR's range).
    pub fn int_range(self) -> (i128, i128) {
        match (self.int_bits(), self.is_signed()) {
            (128, true) => (i128::MIN, i128::MAX),
            (128, false) => (0, i128::MAX),
            (bits, true) => (-(1 << (bits - 1)), (1 << (bits - 1)) - 1),
            (bits, false) => (0, (1 << bits) - 1),
        }
    }

    /// Width in bits of an integer type (usize/isize are taken as 64 bits).
    pub fn int_bits(self) -> u32 {
        match self {
            Scalar::I8 | Scalar::U8 => 8,
            Scalar::I16 | Scalar::U16 => 16,
            Scalar::I32 | Scalar::U32 => 32,
            Scalar::I128 | Scalar::U128 => 128,
            _ => 64,
        }
    }

    /// The Rust spelling of the type.
    pub fn name(self) -> &'static str {
        match self {
            Scalar::F32 => "f32",
            Scalar::F64 => "f64",
            Scalar::I8 => "i8",
            Scalar::I16 => "i16",
            Scalar::I32 => "i32",
            Scalar::I64 => "i64",
            Scalar::I128 => "i128",
            Scalar::U128 => "u128",
            Scalar::Isize => "isize",
            Scalar::U8 => "u8",
            Scalar::U16 => "u16",
            Scalar::U32 => "u32",
            Scalar::U64 => "u64",
            Scalar::Usize => "usize",
            Scalar::Bool => "bool",
        }
    }

    pub fn from_name(name: &str) -> Option<Scalar> {
        Scalar::ALL.into_iter().find(|s| s.name() == name)
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How a piece of memory is laid out, as the Rust type shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemKind {
    /// `[T]` behind a reference.
    Slice,
    /// `[T; N]`.
    Array(u64),
    /// `Vec<T>`.
    Vec,
    /// A single `T` behind a reference (`&f64`, `&mut f64`).
    Cell,
    /// A struct or tuple (`&Params`, `&mut (f64, Vec<f64>)`): an index into
    /// [`Function::records`](crate::Function::records), which holds its Rust type. Its fields
    /// are reached with `Field`; `elem` is a placeholder (F64: it may hold floats).
    Record(u32),
    /// Memory of memory (`&[Vec<f64>]`, `[[f64; 3]; 4]`, `&[[[f32; 2]; 2]; 2]`): the
    /// container, its rows, and their rows if they have any; `elem` is the numbers at the
    /// bottom. A row is reached with `Elem`.
    Nested(Dim, Dim, Option<Dim>),
    /// Structs in a container (`&[Particle]`, `&mut Vec<Spring>`, `&[Body; 3]`): each element
    /// is a record (an index into [`Function::records`](crate::Function::records)), reached
    /// with `Elem`; `elem` is a placeholder, as for a record.
    Records(Dim, u32),
    /// A raw pointer to elements, `*const T` (access `Shared`) or `*mut T` (`Mut`), into
    /// memory whose length cotan does not know: indexed as `*p.add(i)`, with no `Len`.
    Ptr,
    /// A raw pointer to an array, `*const [T; N]` or `*mut [T; N]`: its elements are reached
    /// through the array it points at (an `Offset` of kind `Array(N)`, `&*p`).
    ArrayPtr(u64),
}

/// One level of a container.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    /// `[T]` behind a reference (the outer level only: rows have a size).
    Slice,
    Array(u64),
    Vec,
}

impl Dim {
    /// The memory kind of a container of numbers of this shape.
    pub fn kind(self) -> MemKind {
        match self {
            Dim::Slice => MemKind::Slice,
            Dim::Array(n) => MemKind::Array(n),
            Dim::Vec => MemKind::Vec,
        }
    }

    /// `[R]`, `[R; n]`, `Vec<R>` around the row type `row`.
    fn around(self, row: &str) -> String {
        match self {
            Dim::Slice => format!("[{row}]"),
            Dim::Array(n) => format!("[{row}; {n}]"),
            Dim::Vec => format!("Vec<{row}>"),
        }
    }
}

impl MemKind {
    /// The kind of the rows of nested memory.
    pub fn row(self) -> Option<MemKind> {
        match self {
            MemKind::Nested(_, r, None) => Some(r.kind()),
            MemKind::Nested(_, r, Some(rr)) => Some(MemKind::Nested(r, rr, None)),
            MemKind::Records(_, id) => Some(MemKind::Record(id)),
            _ => None,
        }
    }

    /// The container level of memory that holds numbers or rows (not cells and records).
    pub fn dim(self) -> Option<Dim> {
        match self {
            MemKind::Slice => Some(Dim::Slice),
            MemKind::Array(n) => Some(Dim::Array(n)),
            MemKind::Vec => Some(Dim::Vec),
            MemKind::Nested(d, ..) | MemKind::Records(d, _) => Some(d),
            MemKind::Cell | MemKind::Record(_) | MemKind::Ptr | MemKind::ArrayPtr(_) => None,
        }
    }

    /// Memory whose elements are `row` (of numbers `elem`), in a container `outer`.
    pub fn nest(outer: Dim, row: MemKind) -> Option<MemKind> {
        match row {
            MemKind::Array(_) | MemKind::Vec => Some(MemKind::Nested(outer, row.dim()?, None)),
            MemKind::Nested(r, rr, None) if rr != Dim::Slice => Some(MemKind::Nested(outer, r, Some(rr))),
            _ => None,
        }
    }

    /// The Rust type of this memory around numbers `elem` (without the reference).
    pub fn rust(self, elem: Scalar) -> String {
        match self {
            MemKind::Slice | MemKind::Array(_) | MemKind::Vec => self.dim().unwrap().around(&elem.to_string()),
            MemKind::Cell => elem.to_string(),
            MemKind::Record(n) => format!("struct {n}"),
            MemKind::Nested(outer, ..) | MemKind::Records(outer, _) => outer.around(&self.row().unwrap().rust(elem)),
            MemKind::Ptr | MemKind::ArrayPtr(_) => ptr_text(MemTy { elem, kind: self, access: Access::Shared }),
        }
    }

    /// A raw pointer (`Ptr` or `ArrayPtr`).
    pub fn is_ptr(self) -> bool {
        matches!(self, MemKind::Ptr | MemKind::ArrayPtr(_))
    }
}

/// How the function holds the memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// `&T`: read only.
    Shared,
    /// `&mut T`.
    Mut,
    /// A local buffer the function owns (`vec![..]`, `[x; N]`).
    Owned,
}

/// The type of a value that refers to memory (an array or a cell).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MemTy {
    pub elem: Scalar,
    pub kind: MemKind,
    pub access: Access,
}

impl MemTy {
    pub fn is_writable(&self) -> bool {
        self.access != Access::Shared
    }

    /// A raw pointer: `*const T`, `*mut T`, `*const [T; N]`, `*mut [T; N]`.
    pub fn is_ptr(&self) -> bool {
        self.kind.is_ptr()
    }
}

impl fmt::Display for MemTy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.kind.is_ptr() {
            return f.write_str(&ptr_text(*self));
        }
        let inner = self.kind.rust(self.elem);
        match self.access {
            Access::Shared => write!(f, "&{inner}"),
            Access::Mut => write!(f, "&mut {inner}"),
            Access::Owned => write!(f, "{inner}"),
        }
    }
}

/// `*const f64`, `*mut [f64; 3]`: how Rust writes a raw pointer type.
pub(crate) fn ptr_text(m: MemTy) -> String {
    let pointee = match m.kind {
        MemKind::ArrayPtr(n) => format!("[{}; {n}]", m.elem),
        _ => m.elem.to_string(),
    };
    match m.access {
        Access::Mut => format!("*mut {pointee}"),
        _ => format!("*const {pointee}"),
    }
}

/// The type of an SSA value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    Scalar(Scalar),
    Mem(MemTy),
}

impl Ty {
    pub const F64: Ty = Ty::Scalar(Scalar::F64);
    pub const F32: Ty = Ty::Scalar(Scalar::F32);
    pub const BOOL: Ty = Ty::Scalar(Scalar::Bool);
    pub const USIZE: Ty = Ty::Scalar(Scalar::Usize);

    pub fn scalar(&self) -> Option<Scalar> {
        match self {
            Ty::Scalar(s) => Some(*s),
            Ty::Mem(_) => None,
        }
    }

    pub fn mem(&self) -> Option<MemTy> {
        match self {
            Ty::Mem(m) => Some(*m),
            Ty::Scalar(_) => None,
        }
    }

    pub fn is_float(&self) -> bool {
        self.scalar().is_some_and(Scalar::is_float)
    }

    /// A float value, or memory holding floats: something that can carry a derivative.
    pub fn carries_derivative(&self) -> bool {
        match self {
            Ty::Scalar(s) => s.is_float(),
            Ty::Mem(m) => m.elem.is_float(),
        }
    }
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Scalar(s) => write!(f, "{s}"),
            Ty::Mem(m) => write!(f, "{m}"),
        }
    }
}
