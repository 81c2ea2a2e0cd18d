//! The crate's constants (`const` and `static` items, associated constants, constants
//! declared in a function body) in the functions cotan differentiates: cotan evaluates each
//! one as rustc would and writes its value where the function names it, so that lowering
//! sees a literal. (A path would not do: derivatives are emitted far from where a private
//! constant is visible, and array lengths must be known numbers.)

use cotan_ir::HashMap;

use cotan_ir::Scalar;
use proc_macro2::Span;
use quote::quote_spanned;
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;

use crate::sources::{ConstId, ImplId, ModId, Ns, Res, Sources};

/// `func` with the values of the crate's constants written where it names them. `scope` is
/// where its names resolve; `imp` the `impl` block it is a method of (for `Self::N`).
pub(crate) fn substitute(
    func: &syn::ItemFn,
    src: &Sources,
    scope: ModId,
    imp: Option<ImplId>,
) -> syn::Result<syn::ItemFn> {
    let mut s = Substitute { eval: Eval { src, done: HashMap::default(), active: vec![] }, scope, imp, error: None };
    let mut out = func.clone();
    s.visit_signature_mut(&mut out.sig);
    s.visit_block_mut(&mut out.block);
    match s.error {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// Type `ty`, written in `scope`, with the constants in its array lengths evaluated
/// (`[(usize, usize); NS]` as `[(usize, usize); 6]`).
pub(crate) fn with_lengths(ty: &syn::Type, src: &Sources, scope: ModId) -> syn::Type {
    let mut s =
        Substitute { eval: Eval { src, done: HashMap::default(), active: vec![] }, scope, imp: None, error: None };
    let mut t = ty.clone();
    s.visit_type_mut(&mut t);
    t
}

/// A constant's value.
#[derive(Clone, Debug, PartialEq)]
enum Value {
    Int(i128),
    /// (Rounded to `f32` where the type is `f32`.)
    Float(f64),
    Bool(bool),
    Array(Vec<Value>),
    /// A struct of the crate (`V3 { x: 0.0, y: 1.0, z: 0.0 }`), its fields in the order
    /// the literal gives them.
    Struct(crate::sources::TypeId, Vec<(String, Value)>),
}

/// What cotan knows of a constant's type: a number type (`None` for one it does not know,
/// such as an alias) or an array of something.
#[derive(Clone, Debug)]
enum Shape {
    Scalar(Option<Scalar>),
    Array(Box<Shape>),
}

fn shape_of(t: &syn::Type) -> Shape {
    match t {
        syn::Type::Array(a) => Shape::Array(Box::new(shape_of(&a.elem))),
        syn::Type::Slice(s) => Shape::Array(Box::new(shape_of(&s.elem))),
        syn::Type::Reference(r) => shape_of(&r.elem),
        syn::Type::Paren(p) => shape_of(&p.elem),
        syn::Type::Path(p) => Shape::Scalar(p.path.get_ident().and_then(|i| Scalar::from_name(&i.to_string()))),
        _ => Shape::Scalar(None),
    }
}

fn scalar_of(shape: &Shape) -> Option<Scalar> {
    match shape {
        Shape::Scalar(s) => *s,
        Shape::Array(_) => None,
    }
}

struct Eval<'a> {
    src: &'a Sources,
    done: HashMap<ConstId, Result<Value, String>>,
    /// Constants being evaluated (a cycle is an error, as in rustc).
    active: Vec<ConstId>,
}

impl Eval<'_> {
    fn constant(&mut self, c: ConstId) -> Result<Value, String> {
        if let Some(v) = self.done.get(&c) {
            return v.clone();
        }
        let def = &self.src.consts[c];
        if self.active.contains(&c) {
            return Err(format!("the constant `{}` is defined in terms of itself", def.name));
        }
        self.active.push(c);
        let shape = shape_of(&def.ty);
        let v = self.expr(&def.expr, def.module, def.imp, &shape).and_then(|v| fit(v, &shape));
        self.active.pop();
        self.done.insert(c, v.clone());
        v
    }

    /// The value of `e`, written in scope `scope`, of type `shape` where that is known.
    fn expr(&mut self, e: &syn::Expr, scope: ModId, imp: Option<ImplId>, shape: &Shape) -> Result<Value, String> {
        use syn::Expr as E;
        let ty = scalar_of(shape);
        let v = match e {
            E::Lit(l) => literal(&l.lit)?,
            E::Paren(p) => self.expr(&p.expr, scope, imp, shape)?,
            E::Group(g) => self.expr(&g.expr, scope, imp, shape)?,
            E::Reference(r) => self.expr(&r.expr, scope, imp, shape)?,
            E::Path(p) if p.qself.is_none() => self.path(&p.path, scope, imp)?,
            E::Unary(u) => {
                let x = self.expr(&u.expr, scope, imp, shape)?;
                match (&u.op, x) {
                    (syn::UnOp::Neg(_), Value::Int(i)) => Value::Int(-i),
                    (syn::UnOp::Neg(_), Value::Float(x)) => Value::Float(-x),
                    (syn::UnOp::Not(_), Value::Bool(b)) => Value::Bool(!b),
                    (syn::UnOp::Not(_), Value::Int(i)) => Value::Int(wrap(!i, ty.unwrap_or(Scalar::I32))),
                    _ => return Err("cotan cannot evaluate this operator here".into()),
                }
            }
            E::Binary(b) => {
                let comparison = matches!(
                    b.op,
                    syn::BinOp::Eq(_)
                        | syn::BinOp::Ne(_)
                        | syn::BinOp::Lt(_)
                        | syn::BinOp::Le(_)
                        | syn::BinOp::Gt(_)
                        | syn::BinOp::Ge(_)
                );
                // Operands of a comparison have a type of their own; those of `<<` and `>>`
                // on the right too.
                let operand = if comparison { Shape::Scalar(None) } else { shape.clone() };
                let x = self.expr(&b.left, scope, imp, &operand)?;
                let shift = matches!(b.op, syn::BinOp::Shl(_) | syn::BinOp::Shr(_));
                let y = self.expr(&b.right, scope, imp, if shift { &Shape::Scalar(None) } else { &operand })?;
                binary(&b.op, x, y, ty)?
            }
            E::Cast(c) => {
                let to = shape_of(&c.ty);
                let Some(to) = scalar_of(&to) else {
                    return Err("cotan evaluates casts to number types only".into());
                };
                let x = self.expr(&c.expr, scope, imp, &Shape::Scalar(None))?;
                cast(x, to)?
            }
            E::Array(a) => {
                let elem = match shape {
                    Shape::Array(e) => (**e).clone(),
                    Shape::Scalar(_) => Shape::Scalar(None),
                };
                Value::Array(a.elems.iter().map(|x| self.expr(x, scope, imp, &elem)).collect::<Result<_, _>>()?)
            }
            E::Repeat(r) => {
                let elem = match shape {
                    Shape::Array(e) => (**e).clone(),
                    Shape::Scalar(_) => Shape::Scalar(None),
                };
                let x = self.expr(&r.expr, scope, imp, &elem)?;
                let Value::Int(n) = self.expr(&r.len, scope, imp, &Shape::Scalar(Some(Scalar::Usize)))? else {
                    return Err("the length of an array is a number".into());
                };
                if !(0..=1 << 20).contains(&n) {
                    return Err(format!("cotan writes arrays of up to 2^20 elements out, not {n}"));
                }
                Value::Array(vec![x; n as usize])
            }
            E::Index(i) => {
                let array = self.expr(&i.expr, scope, imp, &Shape::Array(Box::new(shape.clone())))?;
                let k = self.expr(&i.index, scope, imp, &Shape::Scalar(Some(Scalar::Usize)))?;
                match (array, k) {
                    (Value::Array(xs), Value::Int(k)) => {
                        let n = xs.len();
                        let k = usize::try_from(k).ok().filter(|k| *k < n);
                        xs[k.ok_or_else(|| format!("this index is out of bounds of an array of {n}"))?].clone()
                    }
                    _ => return Err("cotan evaluates indexing of constant arrays by numbers only".into()),
                }
            }
            E::Struct(st) if st.rest.is_none() && st.qself.is_none() => {
                // A struct literal of the crate, each field of its declared type.
                let segs: Vec<String> = st.path.segments.iter().map(|s| s.ident.to_string()).collect();
                let Res::Type(t) = self.src.resolve(scope, &segs, Ns::Type) else {
                    return Err(format!("cotan cannot find the struct `{}`", segs.join("::")));
                };
                let Some(decl) = self.src.types[t].structure.clone() else {
                    return Err("cotan evaluates constants of structs without generics only".into());
                };
                let mut fields = vec![];
                for f in st.fields.iter() {
                    let name = match &f.member {
                        syn::Member::Named(i) => i.to_string(),
                        syn::Member::Unnamed(i) => i.index.to_string(),
                    };
                    let ty = decl.iter().enumerate().find(|(k, d)| {
                        d.ident.as_ref().map_or_else(|| k.to_string(), |i| i.to_string()) == name
                    });
                    let Some((_, d)) = ty else { return Err(format!("`{}` has no field `{name}`", segs.join("::"))) };
                    let shape = shape_of(&d.ty);
                    let v = self.expr(&f.expr, scope, imp, &shape).and_then(|v| fit(v, &shape))?;
                    fields.push((name, v));
                }
                Value::Struct(t, fields)
            }
            E::Block(b) if b.block.stmts.len() == 1 => match &b.block.stmts[0] {
                syn::Stmt::Expr(e, None) => self.expr(e, scope, imp, shape)?,
                _ => return Err("cotan evaluates constants written as expressions, not blocks".into()),
            },
            _ => return Err("cotan evaluates constants made of literals, arithmetic, casts, arrays, indexing and other constants, not this expression".into()),
        };
        Ok(match (v, ty) {
            (Value::Float(x), Some(Scalar::F32)) => Value::Float(x as f32 as f64),
            (v, _) => v,
        })
    }

    fn path(&mut self, p: &syn::Path, scope: ModId, imp: Option<ImplId>) -> Result<Value, String> {
        if let Some(c) = resolve(self.src, p, scope, imp) {
            return self.constant(c);
        }
        let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        std_constant(&segs).ok_or_else(|| format!("cotan cannot find the value of `{}`", segs.join("::")))
    }
}

/// The crate's constant path `p` names in scope `scope`, if it names one.
fn resolve(src: &Sources, p: &syn::Path, scope: ModId, imp: Option<ImplId>) -> Option<ConstId> {
    let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
    let res = match (segs.as_slice(), imp) {
        ([first, name], Some(i)) if first == "Self" => src.method(src.impl_type(i)?, name),
        _ => src.resolve(scope, &segs, Ns::Value),
    };
    match res {
        Res::Const(c) => Some(c),
        _ => None,
    }
}

/// `f64::consts::PI`, `usize::MAX`, `f32::EPSILON`, `PI` (imported from std).
fn std_constant(segs: &[String]) -> Option<Value> {
    let segs: Vec<&str> = segs.iter().map(String::as_str).skip_while(|s| matches!(*s, "std" | "core")).collect();
    let (ty, name) = match segs.as_slice() {
        [name] => (None, *name),
        [ty, "consts", name] | [ty, name] => (Some(Scalar::from_name(ty)?), *name),
        _ => return None,
    };
    match ty {
        Some(s) if !s.is_float() => cotan_syntax::int_constant(s, name).map(Value::Int),
        Some(Scalar::F32) => cotan_syntax::float_constant(ty, name).map(|x| Value::Float(x as f32 as f64)),
        _ => cotan_syntax::float_constant(ty, name).map(Value::Float),
    }
}

fn literal(l: &syn::Lit) -> Result<Value, String> {
    Ok(match l {
        syn::Lit::Int(i) if matches!(i.suffix(), "f32" | "f64") => {
            let x: f64 = i.base10_parse().map_err(|e| e.to_string())?;
            Value::Float(if i.suffix() == "f32" { x as f32 as f64 } else { x })
        }
        syn::Lit::Int(i) => Value::Int(i.base10_parse().map_err(|e| e.to_string())?),
        syn::Lit::Float(f) => {
            let x: f64 = f.base10_parse().map_err(|e| e.to_string())?;
            Value::Float(if f.suffix() == "f32" { x as f32 as f64 } else { x })
        }
        syn::Lit::Bool(b) => Value::Bool(b.value),
        _ => return Err("cotan evaluates number and bool constants only".into()),
    })
}

fn binary(op: &syn::BinOp, x: Value, y: Value, ty: Option<Scalar>) -> Result<Value, String> {
    use syn::BinOp as B;
    let overflow = || "this constant overflows its type".to_string();
    Ok(match (x, y) {
        (Value::Int(a), Value::Int(b)) => {
            let t = ty.filter(|t| !t.is_float()).unwrap_or(Scalar::I64);
            let r = match op {
                B::Add(_) => a.checked_add(b),
                B::Sub(_) => a.checked_sub(b),
                B::Mul(_) => a.checked_mul(b),
                B::Div(_) => a.checked_div(b),
                B::Rem(_) => a.checked_rem(b),
                B::BitAnd(_) => Some(a & b),
                B::BitOr(_) => Some(a | b),
                B::BitXor(_) => Some(a ^ b),
                B::Shl(_) => u32::try_from(b).ok().and_then(|b| a.checked_shl(b)),
                B::Shr(_) => u32::try_from(b).ok().and_then(|b| a.checked_shr(b)),
                _ => match comparison(op, a.partial_cmp(&b)) {
                    Some(c) => return Ok(Value::Bool(c)),
                    None => return Err("cotan cannot evaluate this operator on integers".into()),
                },
            };
            let r = r.ok_or_else(overflow)?;
            if ty.is_some() && wrap(r, t) != r {
                return Err(overflow());
            }
            Value::Int(r)
        }
        (Value::Float(a), Value::Float(b)) => Value::Float(match op {
            B::Add(_) => a + b,
            B::Sub(_) => a - b,
            B::Mul(_) => a * b,
            B::Div(_) => a / b,
            B::Rem(_) => a % b,
            _ => match comparison(op, a.partial_cmp(&b)) {
                Some(c) => return Ok(Value::Bool(c)),
                None => return Err("cotan cannot evaluate this operator on floats".into()),
            },
        }),
        (Value::Bool(a), Value::Bool(b)) => Value::Bool(match op {
            B::And(_) | B::BitAnd(_) => a && b,
            B::Or(_) | B::BitOr(_) => a || b,
            B::BitXor(_) | B::Ne(_) => a != b,
            B::Eq(_) => a == b,
            _ => return Err("cotan cannot evaluate this operator on bools".into()),
        }),
        _ => return Err("the two sides of this operator have different types".into()),
    })
}

/// What comparison `op` gives for sides that compare as `ord` (`None`: NaN); `None` if
/// `op` is not a comparison.
fn comparison(op: &syn::BinOp, ord: Option<std::cmp::Ordering>) -> Option<bool> {
    use std::cmp::Ordering::{Equal, Greater, Less};
    use syn::BinOp as B;
    Some(match op {
        B::Eq(_) => ord == Some(Equal),
        B::Ne(_) => ord != Some(Equal),
        B::Lt(_) => ord == Some(Less),
        B::Le(_) => matches!(ord, Some(Less | Equal)),
        B::Gt(_) => ord == Some(Greater),
        B::Ge(_) => matches!(ord, Some(Greater | Equal)),
        _ => return None,
    })
}

/// `x` as an integer of type `t`, wrapped as `as` does.
fn wrap(x: i128, t: Scalar) -> i128 {
    let bits = t.int_bits();
    if bits >= 128 {
        return x;
    }
    let m = x & ((1i128 << bits) - 1);
    if t.is_signed() && m >> (bits - 1) == 1 {
        m - (1i128 << bits)
    } else {
        m
    }
}

fn cast(x: Value, to: Scalar) -> Result<Value, String> {
    Ok(match (x, to.is_float()) {
        (Value::Int(i), true) => Value::Float(if to == Scalar::F32 { i as f32 as f64 } else { i as f64 }),
        (Value::Int(i), false) => Value::Int(wrap(i, to)),
        (Value::Float(f), true) => Value::Float(if to == Scalar::F32 { f as f32 as f64 } else { f }),
        (Value::Float(f), false) => {
            // `as` saturates; NaN becomes 0.
            let (lo, hi) = if to.is_signed() {
                (-(1i128 << (to.int_bits() - 1)), (1i128 << (to.int_bits() - 1)) - 1)
            } else {
                (0, if to.int_bits() >= 128 { i128::MAX } else { (1i128 << to.int_bits()) - 1 })
            };
            Value::Int(if f.is_nan() { 0 } else { (f.trunc().clamp(lo as f64, hi as f64) as i128).clamp(lo, hi) })
        }
        (Value::Bool(b), false) => Value::Int(i128::from(b)),
        _ => return Err("cotan cannot evaluate this cast".into()),
    })
}

/// `v` as a value of `shape` (a float constant of type `f32` is rounded to it).
fn fit(v: Value, shape: &Shape) -> Result<Value, String> {
    Ok(match (v, shape) {
        (Value::Array(xs), Shape::Array(e)) => {
            Value::Array(xs.into_iter().map(|x| fit(x, e)).collect::<Result<_, _>>()?)
        }
        (Value::Float(x), Shape::Scalar(Some(Scalar::F32))) => Value::Float(x as f32 as f64),
        (Value::Int(i), Shape::Scalar(Some(t))) if !t.is_float() && wrap(i, *t) != i => {
            return Err("this constant overflows its type".into());
        }
        (v, _) => v,
    })
}

/// Whether `v` is or holds a struct.
fn contains_struct(v: &Value) -> bool {
    match v {
        Value::Struct(..) => true,
        Value::Array(xs) => xs.iter().any(contains_struct),
        _ => false,
    }
}

/// `v` as a Rust expression of type `shape`, at `span`.
fn expr_of(v: &Value, shape: &Shape, span: Span) -> syn::Expr {
    let ty = scalar_of(shape);
    let suffix = ty.map(|t| t.name()).unwrap_or_default();
    let ts = match v {
        Value::Struct(..) => unreachable!("struct values are written by `Substitute::struct_expr`"),
        Value::Bool(b) => quote_spanned!(span=> #b),
        Value::Int(i) => {
            let lit = syn::LitInt::new(&format!("{}{suffix}", i.unsigned_abs()), span);
            if *i < 0 {
                quote_spanned!(span=> -#lit)
            } else {
                quote_spanned!(span=> #lit)
            }
        }
        Value::Float(x) => {
            let t = syn::Ident::new(ty.map_or("f64", |t| t.name()), span);
            if x.is_nan() {
                quote_spanned!(span=> #t::NAN)
            } else if x.is_infinite() {
                let name = syn::Ident::new(if *x > 0.0 { "INFINITY" } else { "NEG_INFINITY" }, span);
                quote_spanned!(span=> #t::#name)
            } else {
                // The shortest text that reads back as the same value.
                let text =
                    if ty == Some(Scalar::F32) { format!("{:?}", x.abs() as f32) } else { format!("{:?}", x.abs()) };
                let lit = syn::LitFloat::new(&format!("{text}{suffix}"), span);
                if x.is_sign_negative() {
                    quote_spanned!(span=> -#lit)
                } else {
                    quote_spanned!(span=> #lit)
                }
            }
        }
        Value::Array(xs) => {
            let elem = match shape {
                Shape::Array(e) => (**e).clone(),
                Shape::Scalar(_) => Shape::Scalar(None),
            };
            let xs = xs.iter().map(|x| expr_of(x, &elem, span));
            quote_spanned!(span=> [#(#xs),*])
        }
    };
    syn::parse2(ts).expect("a literal expression parses")
}

struct Substitute<'a> {
    eval: Eval<'a>,
    scope: ModId,
    imp: Option<ImplId>,
    error: Option<syn::Error>,
}

impl Substitute<'_> {
    /// The value of the constant `p` names, as an expression, if it names one.
    fn value(&mut self, p: &syn::Path, span: Span) -> Option<syn::Expr> {
        let c = resolve(self.eval.src, p, self.scope, self.imp)?;
        let written = self.eval.constant(c).and_then(|v| match self.struct_expr(&v, span)? {
            Some(e) => Ok(e),
            None => Ok(expr_of(&v, &shape_of(&self.eval.src.consts[c].ty), span)),
        });
        match written {
            Ok(e) => Some(e),
            Err(e) => {
                let name = &self.eval.src.consts[c].name;
                let msg = format!("{e}, in the constant `{name}`; write its value here, or pass it as a parameter");
                self.error.get_or_insert(syn::Error::new(span, msg));
                None
            }
        }
    }
}

impl Substitute<'_> {
    /// A struct constant's value as a literal whose type path this scope names
    /// (`crate::geom::V3 { x: 0.0, .. }`); `None` for other values.
    fn struct_expr(&self, v: &Value, span: Span) -> Result<Option<syn::Expr>, String> {
        let Value::Struct(t, fields) = v else {
            return match v {
                Value::Array(xs) if xs.iter().any(contains_struct) => {
                    Err("cotan writes constants of numbers, arrays of numbers (of arrays too) and structs of numbers out, not arrays of structs".into())
                }
                _ => Ok(None),
            };
        };
        let src = self.eval.src;
        let path = src.type_path(self.scope, *t).ok_or("cotan cannot name the constant's type from here")?;
        let path: syn::Path = syn::parse_str(&path).map_err(|e| e.to_string())?;
        let decl = src.types[*t].structure.clone().ok_or("not a struct")?;
        let mut inits = vec![];
        for (name, value) in fields {
            let d = decl
                .iter()
                .enumerate()
                .find(|(k, d)| d.ident.as_ref().map_or_else(|| k.to_string(), |i| i.to_string()) == *name)
                .map(|(_, d)| d)
                .ok_or("no such field")?;
            let member: syn::Member = match name.parse::<u32>() {
                Ok(index) => syn::Member::Unnamed(syn::Index { index, span }),
                Err(_) => syn::Member::Named(syn::Ident::new(name, span)),
            };
            let value = match self.struct_expr(value, span)? {
                Some(e) => e,
                None => expr_of(value, &shape_of(&d.ty), span),
            };
            inits.push(quote_spanned!(span=> #member: #value));
        }
        // (In parentheses: a struct literal may not stand bare in an `if` condition.)
        Ok(Some(syn::parse_quote_spanned!(span=> (#path { #(#inits),* }))))
    }

    /// An array length computed from constants (`[0.0; N + 1]`), as the number it is.
    fn fold_length(&mut self, len: &mut syn::Expr) {
        if matches!(len, syn::Expr::Lit(_)) {
            return;
        }
        let usize_shape = Shape::Scalar(Some(Scalar::Usize));
        if let Ok(v @ Value::Int(_)) = self.eval.expr(len, self.scope, self.imp, &usize_shape) {
            *len = expr_of(&v, &Shape::Scalar(None), len.span());
        }
    }
}

impl VisitMut for Substitute<'_> {
    /// `first_chunk::<N>()` with `N` a constant: its value (rustc reads a path there as a
    /// type or a constant; cotan needs the number).
    fn visit_generic_argument_mut(&mut self, a: &mut syn::GenericArgument) {
        match a {
            syn::GenericArgument::Type(syn::Type::Path(p)) if p.qself.is_none() && p.path.get_ident().is_some() => {
                let mut e = syn::Expr::Path(syn::ExprPath { attrs: vec![], qself: None, path: p.path.clone() });
                self.fold_length(&mut e);
                if let syn::Expr::Lit(_) = e {
                    *a = syn::GenericArgument::Const(e);
                }
            }
            syn::GenericArgument::Const(e) => self.fold_length(e),
            _ => syn::visit_mut::visit_generic_argument_mut(self, a),
        }
    }

    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        if let syn::Expr::Path(p) = e {
            if p.qself.is_none() {
                if let Some(v) = self.value(&p.path.clone(), p.span()) {
                    *e = v;
                    return;
                }
            }
        }
        syn::visit_mut::visit_expr_mut(self, e);
        if let syn::Expr::Repeat(r) = e {
            self.fold_length(&mut r.len);
        }
    }

    /// The arguments of `vec![..]` and of the `assert!` family, which are expressions
    /// (a macro's tokens are not parsed by the visitor).
    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        let name = m.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
        let asserts = ["assert", "debug_assert", "assert_eq", "assert_ne", "debug_assert_eq", "debug_assert_ne"];
        if name != "vec" && !asserts.contains(&name.as_str()) {
            return;
        }
        // As the array or repeat expression the body would be between brackets.
        let tokens = &m.tokens;
        let Ok(mut e) = syn::parse2::<syn::Expr>(quote::quote_spanned!(m.delimiter.span().join()=> [#tokens])) else {
            return;
        };
        self.visit_expr_mut(&mut e);
        m.tokens = match e {
            syn::Expr::Array(a) => quote::ToTokens::to_token_stream(&a.elems),
            syn::Expr::Repeat(r) => {
                let (init, len) = (&r.expr, &r.len);
                quote::quote!(#init; #len)
            }
            _ => return,
        };
    }

    fn visit_type_array_mut(&mut self, t: &mut syn::TypeArray) {
        syn::visit_mut::visit_type_array_mut(self, t);
        self.fold_length(&mut t.len);
    }

    fn visit_pat_mut(&mut self, pat: &mut syn::Pat) {
        // A name that is a constant in a pattern matches its value.
        let path = match &*pat {
            syn::Pat::Ident(i) if i.by_ref.is_none() && i.mutability.is_none() && i.subpat.is_none() => {
                Some(syn::Path::from(i.ident.clone()))
            }
            syn::Pat::Path(p) if p.qself.is_none() => Some(p.path.clone()),
            _ => None,
        };
        if let Some(path) = path {
            if let Some(v) = self.value(&path, pat.span()) {
                if let Ok(p) = syn::parse::Parser::parse2(syn::Pat::parse_single, quote::ToTokens::to_token_stream(&v))
                {
                    *pat = p;
                    return;
                }
            }
        }
        syn::visit_mut::visit_pat_mut(self, pat);
    }

    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        // The constants declared in the body have been read (with the body's other items).
        b.stmts.retain(|s| match s {
            syn::Stmt::Item(syn::Item::Const(_)) => false,
            syn::Stmt::Item(syn::Item::Static(s)) => !matches!(s.mutability, syn::StaticMutability::None),
            _ => true,
        });
        syn::visit_mut::visit_block_mut(self, b);
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {
        // A function declared in the body has its own scope.
    }

    fn visit_type_mut(&mut self, t: &mut syn::Type) {
        // A type alias of the crate (`type State = [f64; 2]`, `type Real = f64`) is the type
        // it stands for.
        for _ in 0..8 {
            let syn::Type::Path(p) = &*t else { break };
            if p.qself.is_some() || p.path.segments.iter().any(|s| !s.arguments.is_none()) {
                break;
            }
            let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
            let Res::Type(id) = self.eval.src.resolve(self.scope, &segs, Ns::Type) else { break };
            let Some(alias) = self.eval.src.types[id].alias.clone() else { break };
            // Written again as text: the sources' tokens are not the compiler's.
            let text = crate::sources::with_fallback(|| quote::ToTokens::to_token_stream(&*alias).to_string());
            let Ok(tokens) = text.parse::<proc_macro2::TokenStream>() else { break };
            let Ok(ty) = syn::parse2(crate::respan(tokens, t.span())) else { break };
            *t = ty;
        }
        syn::visit_mut::visit_type_mut(self, t);
    }
}
