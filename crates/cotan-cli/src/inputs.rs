//! Argument values: from JSON (`--at`), at random (seeded), and back to JSON for reports.

use cotan_ir::{Arg, Function, MemKind, Scalar, Ty, Val};
use serde_json::Value as Json;

use crate::CliError;

/// The parameters of a lowered function: names and IR types.
pub fn params(f: &Function) -> Vec<(String, Ty)> {
    f.params.iter().map(|p| (f.value(*p).name.clone().unwrap_or_default(), f.ty(*p))).collect()
}

/// Arguments from JSON: an array with one entry per parameter, or an object by name.
pub fn from_json(f: &Function, text: &str) -> Result<Vec<Arg>, CliError> {
    let json: Json = serde_json::from_str(text).map_err(|e| CliError::new(format!("--at is not valid JSON: {e}")))?;
    let ps = params(f);
    let entries: Vec<Json> = match json {
        Json::Array(a) if ps.len() == 1 && !matches!(ps[0].1, Ty::Scalar(_)) && a.iter().all(|v| !v.is_array()) => {
            vec![Json::Array(a)]
        }
        // The rows of the one nested parameter (`[[1, 2], [3, 4]]` for `m: &[[f64; 2]]`).
        Json::Array(a) if ps.len() == 1 && a.len() != 1 && ps[0].1.mem().is_some_and(|m| m.kind.row().is_some()) => {
            vec![Json::Array(a)]
        }
        Json::Array(a) => a,
        Json::Object(o) => {
            let mut out = vec![];
            for (name, _) in &ps {
                out.push(o.get(name).cloned().ok_or_else(|| CliError::new(format!("--at has no value for `{name}`")))?);
            }
            if let Some(k) = o.keys().find(|k| !ps.iter().any(|(n, _)| n == *k)) {
                return Err(CliError::new(format!("--at names `{k}`, which is not a parameter")));
            }
            out
        }
        other if ps.len() == 1 => vec![other],
        _ => return Err(CliError::new("--at must be a JSON array (one entry per parameter) or an object by name")),
    };
    if entries.len() != ps.len() {
        return Err(CliError::new(format!(
            "`{}` has {} parameter(s) but --at gives {} value(s)",
            f.name,
            ps.len(),
            entries.len()
        )));
    }
    ps.iter().zip(&entries).map(|((name, ty), v)| arg(name, *ty, v)).collect()
}

fn scalar(name: &str, s: Scalar, v: &Json) -> Result<Val, CliError> {
    let bad = || CliError::new(format!("`{name}` expects a `{}`, got `{v}`", s.name()));
    Ok(match s {
        Scalar::F64 => Val::F64(v.as_f64().ok_or_else(bad)?),
        Scalar::F32 => Val::F32(v.as_f64().ok_or_else(bad)? as f32),
        Scalar::Bool => Val::Bool(v.as_bool().ok_or_else(bad)?),
        _ => {
            let i = v.as_i64().map(i128::from).or_else(|| v.as_u64().map(i128::from)).ok_or_else(bad)?;
            let (lo, hi) = s.int_range();
            if i < lo || i > hi {
                return Err(bad());
            }
            Val::Int(i, s)
        }
    })
}

fn arg(name: &str, ty: Ty, v: &Json) -> Result<Arg, CliError> {
    match ty {
        Ty::Scalar(s) => Ok(Arg::Scalar(scalar(name, s, v)?)),
        Ty::Mem(m) if matches!(m.kind, MemKind::Record(_)) => record(name, v),
        Ty::Mem(m) => memory(name, m.kind, m.elem, v),
    }
}

/// Memory of `kind` from JSON: an array of numbers (nested arrays read row by row), or for
/// nested memory (`[[f64; 2]; 3]`, `&[Vec<f64>]`) an array of rows.
fn memory(name: &str, kind: MemKind, elem: Scalar, v: &Json) -> Result<Arg, CliError> {
    if let Some(row) = kind.row() {
        let Json::Array(rows) = v else {
            return Err(CliError::new(format!("`{name}` expects an array of rows, got `{v}`")));
        };
        if let Some(cotan_ir::Dim::Array(n)) = kind.dim() {
            if rows.len() as u64 != n {
                return Err(CliError::new(format!("`{name}` expects {n} rows, got {}", rows.len())));
            }
        }
        let rows = rows.iter().enumerate().map(|(k, r)| match row {
            MemKind::Record(_) => record(&format!("{name}[{k}]"), r),
            _ => memory(&format!("{name}[{k}]"), row, elem, r),
        });
        return Ok(Arg::Rows(rows.collect::<Result<_, _>>()?));
    }
    let items: Vec<Json> = match (kind, v) {
        (MemKind::Cell, Json::Array(a)) if a.len() == 1 => a.clone(),
        (MemKind::Cell, other) => vec![other.clone()],
        (_, Json::Array(a)) => flatten(a),
        _ => return Err(CliError::new(format!("`{name}` expects an array, got `{v}`"))),
    };
    if let MemKind::Array(n) | MemKind::ArrayPtr(n) = kind {
        if items.len() as u64 != n {
            return Err(CliError::new(format!("`{name}` expects {n} elements, got {}", items.len())));
        }
    }
    Ok(Arg::Mem(items.iter().map(|x| scalar(name, elem, x)).collect::<Result<_, _>>()?))
}

/// A struct or tuple from a JSON object (`{"w": [..], "b": 0.5}`; a tuple's fields are
/// `"0"`, `"1"`, ...). Numbers are floats unless integral; the interpreter converts them to
/// the field's type where it reads them.
fn record(name: &str, v: &Json) -> Result<Arg, CliError> {
    let Json::Object(o) = v else {
        return Err(CliError::new(format!("`{name}` is a struct: give it as a JSON object of its fields, got `{v}`")));
    };
    let mut fields = vec![];
    for (k, x) in o {
        let path = format!("{name}.{k}");
        let number = |x: &Json| -> Result<Val, CliError> {
            match x {
                Json::Bool(b) => Ok(Val::Bool(*b)),
                Json::Number(n) if n.is_u64() => Ok(Val::Int(n.as_u64().unwrap_or(0).into(), Scalar::Usize)),
                Json::Number(n) if n.is_i64() => Ok(Val::Int(n.as_i64().unwrap_or(0).into(), Scalar::I64)),
                Json::Number(n) => Ok(Val::F64(n.as_f64().unwrap_or(f64::NAN))),
                other => Err(CliError::new(format!("`{path}` expects a number, got `{other}`"))),
            }
        };
        let field = match x {
            Json::Object(_) => record(&path, x)?,
            // Float arrays may be written with integral entries (`[1, 2.5]`).
            Json::Array(a) => Arg::Mem(
                flatten(a)
                    .iter()
                    .map(|e| {
                        Ok(Val::F64(e.as_f64().ok_or_else(|| CliError::new(format!("`{path}` expects numbers")))?))
                    })
                    .collect::<Result<_, CliError>>()?,
            ),
            x => Arg::Scalar(number(x)?),
        };
        fields.push((k.clone(), field));
    }
    Ok(Arg::Record(fields))
}

/// Nested arrays are taken row by row.
fn flatten(a: &[Json]) -> Vec<Json> {
    a.iter().flat_map(|x| if let Json::Array(inner) = x { flatten(inner) } else { vec![x.clone()] }).collect()
}

/// Random arguments: floats in [-1.5, 1.5], integers in 0..=4, slices of `len` elements.
pub fn random(f: &Function, rng: &mut fastrand::Rng, len: usize) -> Vec<Arg> {
    params(f)
        .iter()
        .map(|(_, ty)| match ty {
            Ty::Scalar(s) => Arg::Scalar(random_val(*s, rng, len)),
            Ty::Mem(m) => random_mem(m.kind, m.elem, rng, len),
        })
        .collect()
}

/// Random memory of `kind` (rows of `len` elements, `len` rows, for nested memory).
fn random_mem(kind: MemKind, elem: Scalar, rng: &mut fastrand::Rng, len: usize) -> Arg {
    let n = match kind {
        MemKind::Cell => 1,
        MemKind::Array(n) | MemKind::ArrayPtr(n) | MemKind::Nested(cotan_ir::Dim::Array(n), ..) => n as usize,
        // (A pointer points into a buffer of `len` elements.)
        MemKind::Slice | MemKind::Vec | MemKind::Ptr | MemKind::Nested(..) => len,
        MemKind::Record(_) | MemKind::Records(..) => 0,
    };
    match kind.row() {
        Some(row) => Arg::Rows((0..n).map(|_| random_mem(row, elem, rng, len)).collect()),
        None => Arg::Mem((0..n).map(|_| random_val(elem, rng, len)).collect()),
    }
}

fn random_val(s: Scalar, rng: &mut fastrand::Rng, len: usize) -> Val {
    // Avoid exact kinks (0, integers) by drawing from a continuous range.
    let x = rng.f64() * 3.0 - 1.5;
    match s {
        Scalar::F64 => Val::F64(x),
        Scalar::F32 => Val::F32(x as f32),
        Scalar::Bool => Val::Bool(rng.bool()),
        _ => Val::Int(rng.i128(0..=(len.clamp(1, 5) as i128 - 1)), s),
    }
}

pub fn val_json(v: &Val) -> Json {
    match v {
        Val::F32(x) => serde_json::json!(x),
        Val::F64(x) => serde_json::json!(x),
        Val::Int(i, _) => serde_json::json!(*i as i64),
        Val::Bool(b) => serde_json::json!(b),
    }
}

fn arg_json(a: &Arg) -> Json {
    match a {
        Arg::Scalar(v) => val_json(v),
        Arg::Mem(m) => Json::Array(m.iter().map(val_json).collect()),
        Arg::Record(fields) => Json::Object(fields.iter().map(|(k, f)| (k.clone(), arg_json(f))).collect()),
        Arg::Rows(rs) => Json::Array(rs.iter().map(arg_json).collect()),
    }
}

/// The arguments as `--at` JSON.
pub fn to_json(args: &[Arg]) -> String {
    let items: Vec<Json> = args
        .iter()
        .map(|a| match a {
            Arg::Scalar(v) => val_json(v),
            Arg::Mem(m) => Json::Array(m.iter().map(val_json).collect()),
            a @ (Arg::Record(_) | Arg::Rows(_)) => arg_json(a),
        })
        .collect();
    Json::Array(items).to_string()
}
