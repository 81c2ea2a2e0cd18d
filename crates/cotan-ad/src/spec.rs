//! What the user asked for: the mode and the activity of each argument and of the result,
//! with the checks that an activity fits its argument's type.

use cotan_ir::{Function, MemKind, Ty};

/// The activities of `std::autodiff`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Activity {
    Const,
    Active,
    ActiveOnly,
    Dual,
    DualOnly,
    Duplicated,
    DuplicatedOnly,
}

impl Activity {
    pub const ALL: [Activity; 7] = [
        Activity::Const,
        Activity::Active,
        Activity::ActiveOnly,
        Activity::Dual,
        Activity::DualOnly,
        Activity::Duplicated,
        Activity::DuplicatedOnly,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Activity::Const => "Const",
            Activity::Active => "Active",
            Activity::ActiveOnly => "ActiveOnly",
            Activity::Dual => "Dual",
            Activity::DualOnly => "DualOnly",
            Activity::Duplicated => "Duplicated",
            Activity::DuplicatedOnly => "DuplicatedOnly",
        }
    }

    pub fn from_name(name: &str) -> Option<Activity> {
        Activity::ALL.into_iter().find(|a| a.name() == name)
    }

    /// True if the argument or result carries a derivative.
    pub fn is_active(self) -> bool {
        self != Activity::Const
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    Forward,
    Reverse,
}

/// One `#[autodiff_*]` request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    pub mode: Mode,
    pub inputs: Vec<Activity>,
    /// `None` when the function returns `()`.
    pub ret: Option<Activity>,
    /// Number of tangent directions of batched forward mode (1 otherwise).
    pub width: usize,
}

/// A construct the transform cannot differentiate, found while differentiating.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdError {
    pub span: cotan_ir::SpanId,
    pub message: String,
}

/// Where a problem with a spec is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Input(usize),
    Return,
    Whole,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError {
    pub target: Target,
    pub message: String,
}

fn fail(target: Target, message: impl Into<String>) -> Result<(), SpecError> {
    Err(SpecError { target, message: message.into() })
}

/// Checks the number of activities and that each one fits its argument's type.
pub fn check(f: &Function, spec: &Spec) -> Result<(), SpecError> {
    if spec.inputs.len() != f.params.len() {
        return fail(
            Target::Whole,
            format!(
                "`{}` has {} parameter(s) but {} input activit{} given; give one activity per parameter, then one for the result unless it is `()`",
                f.name,
                f.params.len(),
                spec.inputs.len(),
                if spec.inputs.len() == 1 { "y is" } else { "ies are" }
            ),
        );
    }
    match (spec.ret, f.returns.first()) {
        (None, Some(_)) => {
            return fail(Target::Whole, "missing the activity of the result; add it after the input activities")
        }
        (Some(_), None) => {
            return fail(
                Target::Return,
                "this function returns `()`, so it takes no activity for the result; remove it",
            )
        }
        _ => {}
    }
    for (k, (&act, &p)) in spec.inputs.iter().zip(&f.params).enumerate() {
        check_input(spec.mode, act, f.ty(p), &rust_type(f, f.ty(p))).or_else(|m| fail(Target::Input(k), m))?;
    }
    if let Some(act) = spec.ret {
        // A tuple or array result is several values, each of which must fit.
        for ty in &f.returns {
            check_return(spec.mode, act, *ty, f.returns.len() == 1).or_else(|m| fail(Target::Return, m))?;
        }
    }
    Ok(())
}

/// How the user wrote a type: a record (`&struct 0` in the IR) by its Rust name.
fn rust_type(f: &Function, ty: Ty) -> String {
    match ty.mem() {
        Some(m) => match m.kind {
            cotan_ir::MemKind::Record(id) => {
                let name = f.records.get(id as usize).cloned().unwrap_or_default();
                match m.access {
                    cotan_ir::Access::Shared => format!("&{name}"),
                    cotan_ir::Access::Mut => format!("&mut {name}"),
                    cotan_ir::Access::Owned => name,
                }
            }
            _ => ty.to_string(),
        },
        None => ty.to_string(),
    }
}

fn check_input(mode: Mode, act: Activity, ty: Ty, shown: &str) -> Result<(), String> {
    use Activity::*;
    let allowed: &[Activity] = match mode {
        Mode::Forward => &[Const, Dual, DualOnly],
        Mode::Reverse => &[Const, Active, Duplicated, DuplicatedOnly],
    };
    if !allowed.contains(&act) {
        return Err(wrong_mode(mode, act, "an input"));
    }
    match (act, ty) {
        (Const, _) => Ok(()),
        // As in std, integers and bools may be marked like floats: they carry no derivative,
        // but the derivative keeps std's signature (a tangent or shadow that is never read,
        // a gradient that is zero).
        (Dual | DualOnly, _) => Ok(()),
        (Active, Ty::Scalar(_)) => Ok(()),
        // An array passed by value (`[f64; N]`): its gradient is returned, as std does.
        (Active, Ty::Mem(m)) if m.access == cotan_ir::Access::Owned && m.kind.dim().is_some_and(|d| matches!(d, cotan_ir::Dim::Array(_))) => {
            if m.elem.is_float() {
                Ok(())
            } else {
                Err(format!("`Active` needs floats; use `Const` for `{shown}`"))
            }
        }
        (Duplicated | DuplicatedOnly, Ty::Mem(m))
            if m.access == cotan_ir::Access::Owned && m.kind.dim().is_some_and(|d| matches!(d, cotan_ir::Dim::Array(_))) =>
        {
            Err(format!("an array passed by value (`{shown}`) is `Active` (its gradient is returned) or `Const`; `{}` is for references", act.name()))
        }
        (Active | Duplicated | DuplicatedOnly, Ty::Mem(m))
            if matches!(m.kind, MemKind::Record(_)) && m.access == cotan_ir::Access::Owned =>
        {
            match shown.strip_prefix("*const ") {
                Some(s) => Err(format!("a struct read through a raw pointer (`{shown}`) is `Const`; take `&{s}` and mark it `Duplicated` for its derivative")),
                None => Err(format!("a struct passed by value (`{shown}`) is `Const`; take `&{shown}` and mark it `Duplicated` for its derivative")),
            }
        }
        (Active, Ty::Mem(m)) if m.is_ptr() => {
            Err(format!("`Active` is for floats passed by value; use `Duplicated` for the pointer `{shown}`"))
        }
        (Active, Ty::Mem(_)) => {
            Err(format!("`Active` is for floats passed by value; use `Duplicated` for the reference `{shown}`"))
        }
        (Duplicated | DuplicatedOnly, Ty::Mem(_)) => Ok(()),
        (Duplicated | DuplicatedOnly, Ty::Scalar(s)) if s.is_float() => {
            Err(format!("`{}` is for references; use `Active` for a float passed by value", act.name()))
        }
        _ => Err(format!("`{}` is for references; use `Const` (or `Active`) for `{shown}`", act.name())),
    }
}

fn check_return(mode: Mode, act: Activity, ty: Ty, lone: bool) -> Result<(), String> {
    use Activity::*;
    let allowed: &[Activity] = match mode {
        Mode::Forward => &[Const, Dual, DualOnly],
        Mode::Reverse => &[Const, Active, ActiveOnly],
    };
    if !allowed.contains(&act) {
        return Err(wrong_mode(mode, act, "the result"));
    }
    // An integer result marked `Active` keeps std's signature (a seed nothing reads).
    let int_seed = mode == Mode::Reverse && lone && ty.scalar().is_some_and(|s| s.is_int());
    if act != Const && !ty.is_float() && !int_seed {
        return Err(format!("`{}` needs a float result; use `Const` for `{ty}`", act.name()));
    }
    Ok(())
}

fn wrong_mode(mode: Mode, act: Activity, what: &str) -> String {
    match mode {
        Mode::Forward => format!(
            "`{}` is not a forward-mode activity; for {what} of `autodiff_forward` use `Const`, `Dual` or `DualOnly`",
            act.name()
        ),
        Mode::Reverse if what == "the result" => format!(
            "`{}` is not a reverse-mode activity for the result; use `Const`, `Active` or `ActiveOnly`",
            act.name()
        ),
        Mode::Reverse => format!(
            "`{}` is not a reverse-mode activity for an input; use `Const`, `Active` (floats by value) or `Duplicated` (references)",
            act.name()
        ),
    }
}
