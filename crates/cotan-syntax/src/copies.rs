//! Rust copies arrays: `let b = a;`, `(a, x)`, `let p = s.pos;` and `let q = *r;` each give
//! the new value an array of its own, which later writes to `a` (or to `b`) do not reach.
//! Lowering binds a name to the memory its expression gives, so where that expression reads
//! an array out of a place (a name that holds one, a field, an element, a `*`), the new
//! binding gets a copy; a reference (`&mut a`, a `&[f64; 3]` parameter moved to a new name)
//! stays the same memory. A struct read out of memory (`let old = *p;`, `let b = bodies[i];`
//! of `&mut` structs) is copied into a one-element buffer of its own the same way.

use cotan_ir::{Access, Dim, MemKind, OpKind, Scalar, Value, ZeroField};
use proc_macro2::Span;

use crate::agg::{Agg, Slot};
use crate::env::FieldType;
use crate::infer::STy;
use crate::lower::{err, strip_parens, Binding, Lower};
use crate::span::Spanned;

impl Lower {
    /// `a`, the value of `e`, with the arrays `e` reads out of places copied. `mutable`: the
    /// new binding may write its arrays (`let mut`), so even arrays nobody else writes are
    /// copied.
    pub(crate) fn own_arrays(&mut self, e: &syn::Expr, a: Agg, mutable: bool) -> syn::Result<Agg> {
        let named = match strip_parens(e) {
            syn::Expr::Path(p) => match p.path.get_ident() {
                Some(i) => Some(i.to_string()),
                None => return Ok(a),
            },
            syn::Expr::Field(_) | syn::Expr::Index(_) => None,
            syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => None,
            // `{ a }`: the names of the block's own statements are gone, so a tail that names
            // one of them is not found as any binding's array (and is not copied).
            syn::Expr::Block(b) if b.block.stmts.len() == 1 => match &b.block.stmts[0] {
                syn::Stmt::Expr(tail, None) => return self.own_arrays(tail, a, mutable),
                _ => return Ok(a),
            },
            _ => return Ok(a),
        };
        let span = e.span();
        a.try_map(&mut |v| {
            let (array, record) = (self.is_array(v), self.is_record(v));
            let copy = (array || record)
                && match &named {
                    // A name: the array it holds, not a reference it holds; an array
                    // the IR passes by reference but Rust by value (a parameter
                    // `y0: [f64; 2]`) bound `let mut`, which Rust copies.
                    Some(name) => {
                        self.holds_array(name, v)
                            || (mutable && array && !self.mem_ty(v).is_some_and(|m| m.is_writable()))
                    }
                    None => mutable || self.mem_ty(v).is_some_and(|m| m.is_writable()),
                };
            match (copy, array) {
                (false, _) => Ok(v),
                (true, true) => self.array_copy(v, span),
                (true, false) => self.record_copy(v, span),
            }
        })
    }

    /// A struct in memory (not a tuple, whose numbers destructuring reads where it binds).
    fn is_record(&self, v: Value) -> bool {
        match self.mem_ty(v).map(|m| m.kind) {
            Some(MemKind::Record(id)) => !self.func.records[id as usize].starts_with('('),
            _ => false,
        }
    }

    /// A copy of the struct `src` (in memory): the one element of a buffer of its own, its
    /// numbers and arrays copied.
    fn record_copy(&mut self, src: Value, span: Span) -> syn::Result<Value> {
        let Some(MemKind::Record(id)) = self.mem_ty(src).map(|m| m.kind) else { unreachable!("a record") };
        let ty = self.func.records[id as usize].clone();
        let refuse = |why: String| {
            err(span, format!("cotan copies structs whose fields are numbers and arrays of numbers, and {why}; read the fields you need into locals (`let x = p.x;`) before `p` changes"))
        };
        let Some(defs) = self.env.record_fields(&ty) else {
            return refuse(format!("it cannot read the definition of `{ty}`"));
        };
        let mut zero = vec![];
        for (name, ft) in &defs {
            zero.push(match ft {
                FieldType::Number(s) => ZeroField::Number(*s),
                FieldType::Memory(s, MemKind::Array(n)) => ZeroField::Array(*s, *n),
                _ => return refuse(format!("`{ty}` has the field `{name}`")),
            });
        }
        let fields: Vec<(String, ZeroField)> = defs.iter().map(|(n, _)| n.clone()).zip(zero).collect();
        let copy = self.one_record(id, fields.clone(), span);
        for (name, field) in fields {
            let (to, from) =
                (self.field_of(copy, name.clone(), String::new(), span), self.field_of(src, name, String::new(), span));
            match field {
                ZeroField::Number(_) => {
                    let t = self.elem_sty(from);
                    let v = self.emit_s(OpKind::Load { mem: from, index: None }, t);
                    self.effect(OpKind::Store { mem: to, index: None, value: v });
                }
                ZeroField::Array(..) => {
                    let n = self.emit_s(OpKind::Len(from), STy::Known(Scalar::Usize));
                    self.copy_loop(to, from, n);
                }
            }
        }
        Ok(copy)
    }

    fn is_array(&self, v: Value) -> bool {
        self.mem_ty(v).is_some_and(|m| matches!(m.kind.dim(), Some(Dim::Array(_))))
    }

    /// An array the function owns (a local one, or a parameter taken by value).
    pub(crate) fn is_owned_array(&self, v: Value) -> bool {
        self.is_array(v) && self.mem_ty(v).is_some_and(|m| m.access == Access::Owned)
    }

    /// Whether `name` holds the array `m` itself: `m` is owned (a local array or an array
    /// parameter taken by value) and `name` is the first binding that reached it (later ones
    /// are references to it, `let r = &mut a;`).
    fn holds_array(&self, name: &str, m: Value) -> bool {
        // (The caller's array bound to a reference parameter of a function lowered at its
        // call is a reference there.)
        if !self.mem_ty(m).is_some_and(|t| t.access == Access::Owned) || self.lent_params.contains_key(&m) {
            return false;
        }
        let holds = |b: &Binding| match b {
            Binding::Value(v) => *v == m,
            Binding::Agg(t) => t.leaves().iter().any(|s| matches!(s, Slot::Value(v) if *v == m)),
            _ => false,
        };
        let first = self.scopes.iter().flatten().find(|(_, b)| holds(b));
        first.is_some_and(|(n, _)| n == name)
    }
}
