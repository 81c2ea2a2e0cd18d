//! Calls between differentiated functions. A transform that meets a call asks a [`Linker`]
//! for the callee's derivative that this call site needs (a [`CallSite`]), and calls it by
//! the name the linker gives. Who builds that derivative (and from which source) is the
//! linker's business: the transforms only agree with each other on its signature.
//!
//! The signatures, for a callee `g(params) -> results`:
//!
//! - `Forward { width }`: every parameter, each active one followed by `width` tangents of
//!   its type; results: each result, followed by `width` tangents when `ret_active` and it
//!   is a float.
//! - `Augmented` (takes the caller's tape): the parameters; the results. It runs `g` and
//!   pushes on the tape what the reverse sweep needs.
//! - `Reverse` (takes the caller's tape): for each memory parameter, its primal memory
//!   (shared) unless [`Avail::Absent`], then its shadow (`&mut`) if active; then, when
//!   `ret_active`, one seed per float result. Results: the gradient of each active float
//!   scalar parameter. It pops exactly what the augmented sweep pushed.

use cotan_ir::{Function, SpanId, Ty};

use crate::spec::{Activity, Mode, Spec};

/// Which derivative of a callee a call needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Need {
    /// Forward mode with `width` tangents per active argument.
    Forward { width: usize },
    /// The primal, recording on the caller's tape what `Reverse` needs.
    Augmented,
    /// The reverse sweep, consuming what `Augmented` recorded.
    Reverse,
}

/// What a callee's reverse sweep may do with a memory argument's primal contents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Avail {
    /// The memory is passed to the reverse sweep and holds what it held when the call
    /// returned: reads of it can be repeated there instead of being recorded.
    Stable,
    /// The memory is passed to the reverse sweep (its length can be read), but the caller
    /// may change its contents in between.
    Present,
    /// The memory no longer exists when the caller's reverse sweep reaches the call.
    Absent,
}

/// A call site's request: the callee (as the `Call` op names it), the derivative, and which
/// arguments carry derivatives.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CallSite {
    pub callee: String,
    pub need: Need,
    /// Per argument: whether it carries a derivative (a tangent, a shadow, or for a float
    /// scalar in reverse mode, a gradient to return). False for arguments that cannot.
    pub active: Vec<bool>,
    /// Per argument, for `Augmented`/`Reverse`: what the reverse sweep may do with memory
    /// arguments (`Stable` for scalars, where it means nothing).
    pub avail: Vec<Avail>,
    /// Whether the float results carry derivatives.
    pub ret_active: bool,
    /// The types of the arguments as the call passes them (memory as references), and of
    /// its results: what a linker needs to adapt a callee whose source it cannot read.
    pub arg_tys: Vec<Ty>,
    pub ret_tys: Vec<Ty>,
    /// The Rust types of the structs among `arg_tys` (the caller's `Function::records`).
    pub records: Vec<String>,
    /// The call passes the caller's tape (the callee is a split derivative).
    pub tape: bool,
}

/// The type of an argument as a call passes it: memory by reference.
pub fn passed_ty(t: Ty, by_mut: bool) -> Ty {
    match t {
        Ty::Mem(m) if m.access == cotan_ir::Access::Owned => Ty::Mem(cotan_ir::MemTy {
            access: if by_mut { cotan_ir::Access::Mut } else { cotan_ir::Access::Shared },
            ..m
        }),
        t => t,
    }
}

impl CallSite {
    /// The spec a callee `f` is differentiated with for this call site.
    pub fn spec(&self, f: &Function) -> Spec {
        let forward = matches!(self.need, Need::Forward { .. });
        let inputs = f
            .params
            .iter()
            .zip(&self.active)
            .map(|(p, &a)| match (a && f.ty(*p).carries_derivative(), f.ty(*p), forward) {
                (false, _, _) => Activity::Const,
                (true, _, true) => Activity::Dual,
                (true, Ty::Scalar(_), false) => Activity::Active,
                (true, Ty::Mem(_), false) => Activity::Duplicated,
            })
            .collect();
        let ret = (!f.returns.is_empty()).then_some(match (self.ret_active, forward) {
            (false, _) => Activity::Const,
            (true, true) => Activity::Dual,
            (true, false) => Activity::Active,
        });
        let width = match self.need {
            Need::Forward { width } => width,
            _ => 1,
        };
        Spec { mode: if forward { Mode::Forward } else { Mode::Reverse }, inputs, ret, width }
    }
}

/// Finds (or builds) the derivatives that call sites need.
pub trait Linker {
    /// The path to call for `site` (the call at `span` of the function being
    /// differentiated), or why the callee cannot be differentiated so.
    fn link(&mut self, site: &CallSite, span: SpanId) -> Result<String, String>;
}

/// A linker for functions that call nothing: every call is an error.
pub struct NoCalls;

impl Linker for NoCalls {
    fn link(&mut self, site: &CallSite, _span: SpanId) -> Result<String, String> {
        Err(format!("cotan cannot differentiate the call of `{}` here", site.callee))
    }
}
