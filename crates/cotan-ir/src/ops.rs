//! Operation kinds: arithmetic, math functions, memory, variables and structured control flow.

use crate::{Region, Value, Var};

/// A field of a struct made of zeros (see `OpKind::AllocRecords`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ZeroField {
    Number(crate::Scalar),
    Array(crate::Scalar, u64),
}

/// A literal.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Const {
    Float(f64),
    Int(i128),
    Bool(bool),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    Neg,
    Not,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

macro_rules! math_fns {
    ($($variant:ident = $name:literal / $arity:literal),* $(,)?) => {
        /// The float methods of std that cotan knows how to differentiate.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum MathFn { $($variant),* }

        impl MathFn {
            pub const ALL: &'static [MathFn] = &[$(MathFn::$variant),*];

            /// The method name, as in `f64::NAME`.
            pub fn name(self) -> &'static str {
                match self { $(MathFn::$variant => $name),* }
            }

            /// Number of arguments, the receiver included.
            pub fn arity(self) -> usize {
                match self { $(MathFn::$variant => $arity),* }
            }

            pub fn from_name(name: &str) -> Option<MathFn> {
                match name { $($name => Some(MathFn::$variant),)* _ => None }
            }
        }
    };
}

math_fns! {
    Abs = "abs" / 1, Sqrt = "sqrt" / 1, Cbrt = "cbrt" / 1, Exp = "exp" / 1, Exp2 = "exp2" / 1,
    ExpM1 = "exp_m1" / 1, Ln = "ln" / 1, Log = "log" / 2, Log2 = "log2" / 1, Log10 = "log10" / 1,
    Ln1p = "ln_1p" / 1, Powi = "powi" / 2, Powf = "powf" / 2, Sin = "sin" / 1, Cos = "cos" / 1,
    Tan = "tan" / 1, Asin = "asin" / 1, Acos = "acos" / 1, Atan = "atan" / 1, Atan2 = "atan2" / 2,
    Sinh = "sinh" / 1, Cosh = "cosh" / 1, Tanh = "tanh" / 1, Asinh = "asinh" / 1,
    Acosh = "acosh" / 1, Atanh = "atanh" / 1, Hypot = "hypot" / 2, Recip = "recip" / 1,
    MulAdd = "mul_add" / 3, Max = "max" / 2, Min = "min" / 2, Clamp = "clamp" / 3,
    Signum = "signum" / 1, Floor = "floor" / 1, Ceil = "ceil" / 1, Round = "round" / 1,
    Trunc = "trunc" / 1,
}

/// What an operation does. Operands are SSA values; nested regions hold structured control flow.
#[derive(Clone, Debug, PartialEq)]
pub enum OpKind {
    /// A literal of the result's type.
    Const(Const),
    Unary(UnOp, Value),
    Binary(BinOp, Value, Value),
    /// A comparison; the result is `bool`.
    Cmp(CmpOp, Value, Value),
    /// `value as T` where T is the result's type.
    Cast(Value),
    /// A float method; the first argument is the receiver. `powi`'s exponent is an `i32`.
    Math(MathFn, Vec<Value>),
    /// `if cond { a } else { b }` on values already computed.
    Select(Value, Value, Value),
    /// Read an element (`mem[index]`) or a cell (`*mem`, no index).
    Load {
        mem: Value,
        index: Option<Value>,
    },
    /// Write an element or a cell.
    Store {
        mem: Value,
        index: Option<Value>,
        value: Value,
    },
    /// `mem.len()`, a `usize`.
    Len(Value),
    /// A zeroed copy of a record (its numbers 0, as `Differentiable::zero_like` makes it): an
    /// owned record of the result's type, for a shadow or tangent that carries nothing.
    ZeroRecord(Value),
    /// An owned copy of a slice (vector, array) of structs, `src.to_vec()`; with `zeroed`, its
    /// floats set to zero by `zero` (Rust statements on one element `e`: `e.x = 0.0;`), for
    /// a shadow or tangent. The floats of a plain copy are written again by `Store`s after it,
    /// which carry the derivative.
    CopyRecords {
        src: Value,
        zero: String,
        zeroed: bool,
    },
    /// `len` structs of the result's record type with every field zero (numbers `0`,
    /// `false`, arrays of zeros): a vector of structs the function builds
    /// (`.map(|..| S { .. }).collect()`), whose fields `Store`s then write.
    AllocRecords {
        len: Value,
        fields: Vec<(String, ZeroField)>,
    },
    /// `matches!(value, PATTERN)` on a record (an enum parameter): whether it is one of the
    /// variants the pattern names (Rust syntax, binding no names). The result is a `bool`.
    Matches {
        value: Value,
        pattern: String,
    },
    /// A number field of an enum variant the record holds (`r` of `Shape::Circle(r)`, field
    /// `"0"`; `side` of `Shape::Square { side }`), read where a `Matches` has established the
    /// variant. A constant: derivatives do not flow through it.
    VariantField {
        value: Value,
        variant: String,
        field: String,
    },
    /// A field of a record (`base.name`, `base.0`): memory that aliases part of the base,
    /// a cell, an array, a `Vec` or another record, with the base's access.
    Field {
        base: Value,
        name: String,
    },
    /// A sub-slice `&base[start..end]` (or `&mut`, as the result's access says): memory
    /// that aliases part of `base`, so writing it writes `base`.
    Slice {
        base: Value,
        start: Value,
        end: Value,
    },
    /// A row of nested memory, `&base[index]` (or `&mut`, as the result's access says):
    /// memory that aliases part of `base`, like a sub-slice.
    Elem {
        base: Value,
        index: Value,
    },
    /// Memory that aliases `base` from element `offset` on (a `usize`, or an `isize` that
    /// may be negative), of the result's type: a raw pointer (`p.add(k)`, `p.offset(k)`,
    /// `x.as_ptr()`, `&mut a as *mut [f64; 2]`), the element there as a cell (`&*p.add(k)`,
    /// `x.get_unchecked_mut(k)`), or the array an array pointer points at (`&*p`). Like
    /// `Slice`, writing it writes `base`.
    Offset {
        base: Value,
        offset: Value,
    },
    /// A new local buffer: `vec![init; len]`, or `[init; N]` when the result is an array.
    Alloc {
        len: Value,
        init: Value,
    },
    /// `mem.fill(value)`; with `resize: Some([len, old_len])`, instead `mem.resize(len,
    /// value)` on an owned vector (it keeps its first elements; `v = w`, `truncate`, `pop`
    /// are made of it). `old_len` is its length before, which the reverse sweep gives its
    /// shadow back.
    Fill {
        mem: Value,
        value: Value,
        resize: Option<[Value; 2]>,
    },
    /// A call of another function by its Rust path: `outs = callee(args)`. Each argument
    /// says whether it is passed as `&mut` (for memory the caller owns). The results are
    /// written to variables (none, one, or a tuple). With `tape`, the callee also gets the
    /// caller's tape (a generated derivative whose reverse sweep is split from its forward
    /// sweep: see [`Function::tape_param`](crate::Function::tape_param)).
    Call {
        callee: String,
        args: Vec<(Value, bool)>,
        outs: Vec<Var>,
        tape: bool,
    },
    /// `mem.push(value)` on an owned `Vec`; the result is the index written (the old length).
    VecPush {
        mem: Value,
        value: Value,
    },
    /// Declares a mutable local and gives it its first value.
    DeclVar {
        var: Var,
        init: Value,
    },
    GetVar(Var),
    SetVar(Var, Value),
    If {
        cond: Value,
        then_region: Region,
        else_region: Region,
    },
    /// `for index in lo..hi` (or `lo..=hi`), stepping by `step`, optionally reversed.
    /// After each iteration the loop ends early if `exit` holds `true`.
    For {
        index: Value,
        lo: Value,
        hi: Value,
        step: Option<Value>,
        inclusive: bool,
        reverse: bool,
        body: Region,
        exit: Option<Var>,
    },
    /// `while cond { body }`: `cond_region` computes `cond` (it may not write memory or variables).
    /// After each iteration the loop ends early if `exit` holds `true`.
    While {
        cond_region: Region,
        cond: Value,
        body: Region,
        exit: Option<Var>,
    },
    /// `assert!(cond, "message")`.
    Assert {
        cond: Value,
        message: String,
    },
    /// `println!(format, args..)` (or `print`, `eprintln`, `eprint`, named by `mac`): a side
    /// effect of the primal, kept once (in the forward sweep of reverse mode). The format
    /// refers to the arguments by position only (`{0}`, `{1:.3}`).
    Print {
        mac: String,
        format: String,
        args: Vec<Value>,
    },
    /// Save a value on the reverse sweep's stack of its type.
    Push(Value),
    /// Take the most recently pushed value of the result's type.
    Pop,
    /// Return from the function; only as the last operation of the body.
    Return(Vec<Value>),
}

impl OpKind {
    /// The SSA operands, in order (regions not included).
    pub fn operands(&self) -> Vec<Value> {
        use OpKind::*;
        match self {
            Const(_) | GetVar(_) | Pop => vec![],
            Unary(_, a) | Cast(a) | Len(a) | Push(a) | ZeroRecord(a) | Field { base: a, .. } => vec![*a],
            CopyRecords { src, .. } => vec![*src],
            AllocRecords { len, .. } => vec![*len],
            Matches { value, .. } | VariantField { value, .. } => vec![*value],
            Binary(_, a, b) | Cmp(_, a, b) => vec![*a, *b],
            Math(_, args) | Return(args) | Print { args, .. } => args.clone(),
            Select(c, a, b) => vec![*c, *a, *b],
            Load { mem, index } => std::iter::once(*mem).chain(*index).collect(),
            Store { mem, index, value } => std::iter::once(*mem).chain(*index).chain([*value]).collect(),
            Alloc { len, init } => vec![*len, *init],
            Slice { base, start, end } => vec![*base, *start, *end],
            Elem { base, index } => vec![*base, *index],
            Offset { base, offset } => vec![*base, *offset],
            Fill { mem, value, resize } => [*mem, *value].into_iter().chain(resize.iter().flatten().copied()).collect(),
            VecPush { mem, value } => vec![*mem, *value],
            Call { args, .. } => args.iter().map(|a| a.0).collect(),
            DeclVar { init, .. } => vec![*init],
            SetVar(_, v) => vec![*v],
            If { cond, .. } => vec![*cond],
            For { lo, hi, step, .. } => [*lo, *hi].into_iter().chain(*step).collect(),
            While { cond, .. } => vec![*cond],
            Assert { cond, .. } => vec![*cond],
        }
    }

    /// Mutable access to the SSA operands, for renaming.
    pub fn operands_mut(&mut self) -> Vec<&mut Value> {
        use OpKind::*;
        match self {
            Const(_) | GetVar(_) | Pop => vec![],
            Unary(_, a) | Cast(a) | Len(a) | Push(a) | ZeroRecord(a) | Field { base: a, .. } => vec![a],
            CopyRecords { src, .. } => vec![src],
            AllocRecords { len, .. } => vec![len],
            Matches { value, .. } | VariantField { value, .. } => vec![value],
            Binary(_, a, b) | Cmp(_, a, b) => vec![a, b],
            Math(_, args) | Return(args) | Print { args, .. } => args.iter_mut().collect(),
            Select(c, a, b) => vec![c, a, b],
            Load { mem, index } => std::iter::once(mem).chain(index.as_mut()).collect(),
            Store { mem, index, value } => std::iter::once(mem).chain(index.as_mut()).chain([value]).collect(),
            Alloc { len, init } => vec![len, init],
            Slice { base, start, end } => vec![base, start, end],
            Elem { base, index } => vec![base, index],
            Offset { base, offset } => vec![base, offset],
            Fill { mem, value, resize } => [mem, value].into_iter().chain(resize.iter_mut().flatten()).collect(),
            VecPush { mem, value } => vec![mem, value],
            Call { args, .. } => args.iter_mut().map(|a| &mut a.0).collect(),
            DeclVar { init, .. } => vec![init],
            SetVar(_, v) => vec![v],
            If { cond, .. } => vec![cond],
            For { lo, hi, step, .. } => [lo, hi].into_iter().chain(step.as_mut()).collect(),
            While { cond, .. } => vec![cond],
            Assert { cond, .. } => vec![cond],
        }
    }

    /// The nested regions, in execution order of first entry.
    pub fn regions(&self) -> Vec<&Region> {
        match self {
            OpKind::If { then_region, else_region, .. } => vec![then_region, else_region],
            OpKind::For { body, .. } => vec![body],
            OpKind::While { cond_region, body, .. } => vec![cond_region, body],
            _ => vec![],
        }
    }

    pub fn regions_mut(&mut self) -> Vec<&mut Region> {
        match self {
            OpKind::If { then_region, else_region, .. } => vec![then_region, else_region],
            OpKind::For { body, .. } => vec![body],
            OpKind::While { cond_region, body, .. } => vec![cond_region, body],
            _ => vec![],
        }
    }

    /// Values an op defines besides its result (the loop index of a `for`).
    pub fn inner_defs(&self) -> Option<Value> {
        match self {
            OpKind::For { index, .. } => Some(*index),
            _ => None,
        }
    }

    /// The vector whose length this op changes: a push, or a fill that resizes.
    pub fn resized(&self) -> Option<Value> {
        match self {
            OpKind::VecPush { mem, .. } | OpKind::Fill { mem, resize: Some(_), .. } => Some(*mem),
            _ => None,
        }
    }

    /// For memory that aliases other memory (a sub-slice or an offset): the memory it is part of.
    pub fn view_base(&self) -> Option<Value> {
        match self {
            OpKind::Slice { base, .. } | OpKind::Elem { base, .. } | OpKind::Offset { base, .. } => Some(*base),
            // (A field of an element of a slice of structs, which is not at the top.)
            OpKind::Field { base, .. } => Some(*base),
            _ => None,
        }
    }

    /// True for ops without side effects or control flow, whose result depends only on operands.
    pub fn is_pure(&self) -> bool {
        use OpKind::*;
        // (`Matches` reads a record by value or behind `&`, which nothing writes.)
        matches!(
            self,
            Const(_) | Unary(..) | Binary(..) | Cmp(..) | Cast(_) | Math(..) | Select(..) | Len(_) | Matches { .. }
        )
    }
}
