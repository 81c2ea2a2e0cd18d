//! Lowering of expressions: arithmetic, calls of float methods, indexing, assignment, macros.

use crate::span::Spanned;
use cotan_ir::{Access, BinOp, CmpOp, Const, Dim, MathFn, MemKind, OpKind, Scalar, UnOp, Value};
use proc_macro2::Span;
use syn::punctuated::Punctuated;

use crate::agg::{Agg, Slot, Tree};
use crate::infer::{Class, STy};
use crate::lower::{err, err_at, mem, Binding, Lower};

impl Lower {
    /// Lowers an expression that must have a value.
    pub(crate) fn expr(&mut self, e: &syn::Expr) -> syn::Result<Value> {
        match self.expr_opt(e)? {
            Some(v) => Ok(v),
            None => err_at(&e, "expected an expression with a value here"),
        }
    }

    /// Lowers an expression that must be a number or bool (reading through `&f64`).
    pub(crate) fn scalar(&mut self, e: &syn::Expr) -> syn::Result<(Value, STy)> {
        let v = self.expr(e)?;
        let v = self.auto_load(v);
        let t = self.scalar_sty(v, e.span())?;
        Ok((v, t))
    }

    /// Reads a `&f64`/`&mut f64` cell where a number is expected.
    pub(crate) fn auto_load(&mut self, v: Value) -> Value {
        match self.mem_ty(v) {
            Some(m) if m.kind == MemKind::Cell => {
                let t = self.elem_sty(v);
                self.emit_s(OpKind::Load { mem: v, index: None }, t)
            }
            _ => v,
        }
    }

    /// Lowers an expression that must be a number, bool or memory; `None` for expressions
    /// of type `()` or `!`.
    pub(crate) fn expr_opt(&mut self, e: &syn::Expr) -> syn::Result<Option<Value>> {
        let a = self.agg_opt(e)?;
        self.single_value(a, e.span())
    }

    /// Lowers an expression that must have a value, which may be a tuple or an `Option`.
    pub(crate) fn agg(&mut self, e: &syn::Expr) -> syn::Result<Agg> {
        match self.agg_opt(e)? {
            Some(a) => Ok(a),
            None => err_at(&e, "expected an expression with a value here"),
        }
    }

    /// Lowers an expression; `None` for expressions of type `()` or `!`.
    pub(crate) fn agg_opt(&mut self, e: &syn::Expr) -> syn::Result<Option<Agg>> {
        use syn::Expr as E;
        self.at(e.span());
        let leaf = |v: syn::Result<Value>| v.map(|v| Some(Tree::Leaf(v)));
        let leaf_opt = |v: syn::Result<Option<Value>>| v.map(|v| v.map(Tree::Leaf));
        match e {
            E::Lit(l) => leaf(self.literal(&l.lit)),
            E::Path(p) => self.path(p).map(Some),
            E::Paren(p) => self.agg_opt(&p.expr),
            E::Group(g) => self.agg_opt(&g.expr),
            E::Block(b) if b.label.is_none() && b.attrs.is_empty() => self.block(&b.block),
            // `*a` of a fieldless enum value or a struct of numbers made in the function (lent
            // as `&a` to a helper lowered at its call): the value itself.
            E::Unary(syn::ExprUnary { op: syn::UnOp::Deref(_), expr, .. })
                if matches!(crate::lower::strip_parens(expr), E::Path(p) if p.path.get_ident().is_some_and(|i| {
                    matches!(self.lookup(&i.to_string()), Some(Binding::Agg(Tree::Enum(_) | Tree::Struct(..))))
                })) =>
            {
                self.agg_opt(expr)
            }
            E::Unary(u) => match self.struct_negation(u) {
                Some(r) => r,
                None => leaf(self.unary(u)),
            },
            E::Binary(b) => match self.struct_operator(b) {
                Some(r) => r,
                None => leaf_opt(self.binary(b)),
            },
            E::Assign(a) => {
                self.assign_expr(a)?;
                Ok(None)
            }
            E::Cast(c) => leaf(self.cast(c)),
            E::If(i) => self.if_expr(i),
            E::ForLoop(f) => self.for_loop(f).map(|_| None),
            E::While(w) => self.while_loop(w).map(|_| None),
            E::Loop(l) => leaf_opt(self.loop_expr(l)),
            E::Break(b) => self.break_expr(b).map(|_| None),
            E::Continue(c) => self.continue_expr(c).map(|_| None),
            E::Return(r) => self.return_expr(r).map(|_| None),
            E::Index(_) if crate::slices::is_range_index(e) => leaf(self.sub_slice(e, None)),
            E::Index(i) => leaf(self.index_read(i)),
            E::MethodCall(m) => self.method_call(m),
            E::Call(c) => self.call(c),
            E::Macro(m) => leaf_opt(self.expr_macro(&m.mac)),
            E::Reference(r) if crate::slices::is_range_index(&r.expr) => {
                let access = if r.mutability.is_some() { Access::Mut } else { Access::Shared };
                leaf(self.sub_slice(&r.expr, Some(access)))
            }
            E::Reference(r) if self.is_pointer_deref(&r.expr) => {
                leaf(self.ref_of_deref(r).map(|v| v.expect("checked: a pointer's deref")))
            }
            E::Reference(r) if r.mutability.is_none() => self.agg_opt(&r.expr),
            // `let r = &mut a;` of an array or a slice: `r` is `a`'s memory.
            E::Reference(r) if self.is_memory(&r.expr) => self.agg_opt(&r.expr),
            // `&mut v[i]` of a number: the element's place (see `Lower::elem_refs`).
            E::Reference(r) if matches!(crate::lower::strip_parens(&r.expr), E::Index(_)) => leaf(self.elem_ref(&r.expr)),
            E::Reference(r) => err_at(&e, format!("cotan takes `&mut` of arrays and slices as values (`let r = &mut a;`), and lends other places only to calls (`f(&mut {})`); write to `{}` directly here", quote::ToTokens::to_token_stream(&r.expr), quote::ToTokens::to_token_stream(&r.expr))),
            E::Repeat(r) => leaf(self.repeat(r)),
            E::Array(a) if self.is_rows_literal(a.elems.iter()) => leaf(self.rows_literal(a.elems.iter(), false, a.span())),
            E::Array(a) => leaf(self.array_literal(a.elems.iter().collect(), MemKind::Array(a.elems.len() as u64), a.span())),
            E::Closure(_) => err_at(&e, "cotan inlines closures where they are called: bind the closure with `let f = |x| ..;` and call it (`f(a)`), or pass it to an iterator method"),
            E::Match(m) => self.match_expr(m),
            E::Tuple(t) if t.elems.is_empty() => Ok(None),
            E::Tuple(t) => {
                // (The tuple holds copies of the arrays it is made of.)
                let es = t
                    .elems
                    .iter()
                    .map(|e| self.agg(e).and_then(|a| self.own_arrays(e, a, false)))
                    .collect::<syn::Result<Vec<_>>>()?;
                Ok(Some(Tree::Tuple(es)))
            }
            E::Field(f) => self.field_expr(f).map(Some),
            E::Struct(s) => self.struct_literal(s).map(Some),
            E::Range(_) => err_at(&e, "cotan supports ranges only as the iterator of a `for` loop"),
            E::Let(_) => err_at(&e, "cotan supports `let` patterns in `if let`, `while let`, `let ... else` and `match`, not in `&&` chains; test the conditions one after the other (`if let .. { if c { .. } }`)"),
            E::Unsafe(u) => {
                // An ordinary block; generated code makes its calls in `unsafe` blocks.
                self.func.unsafe_code = true;
                self.block(&u.block)
            }
            E::Try(t) => self.try_option(t),
            _ => err_at(&e, "cotan does not support this kind of expression in differentiated code; rewrite it with `let`, `if`, loops and arithmetic"),
        }
    }

    /// `e?` on an `Option` (or a `Result`, held as one), in a function returning one:
    /// `let Some(v) = e else { return None };` and `v`.
    fn try_option(&mut self, t: &syn::ExprTry) -> syn::Result<Option<Agg>> {
        let (inner, at) = (&t.expr, t.question_token.span);
        let in_option_fn = matches!(&self.inline_ret, Some((_, Some(ty))) if crate::inline::returns_option(ty));
        if !in_option_fn {
            return err(at, "cotan takes `?` on an `Option` or a `Result` in a function that returns one; here, test it with `let Some(v) = .. else { .. };` (`let Ok(v) = ..`) or `if let`");
        }
        let value = syn::Ident::new("__cotan_question", at);
        let desugared: syn::Expr = syn::parse_quote_spanned!(at=> {
            let Some(#value) = #inner else { return None };
            #value
        });
        self.agg_opt(&desugared)
    }

    fn literal(&mut self, lit: &syn::Lit) -> syn::Result<Value> {
        match lit {
            syn::Lit::Float(f) => {
                let x: f64 = f.base10_parse()?;
                let t = match f.suffix() {
                    "" => self.infer.fresh(Class::Float),
                    s => STy::Known(Scalar::from_name(s).unwrap_or(Scalar::F64)),
                };
                Ok(self.emit_s(OpKind::Const(Const::Float(x)), t))
            }
            syn::Lit::Int(i) => {
                let x: i128 = i.base10_parse()?;
                let t = match i.suffix() {
                    "" => self.infer.fresh(Class::Int),
                    s => match Scalar::from_name(s) {
                        Some(s) if s.is_float() => {
                            return Ok(self.emit_s(OpKind::Const(Const::Float(x as f64)), STy::Known(s)));
                        }
                        Some(s) => STy::Known(s),
                        None => return err_at(&i, "cotan does not support 128-bit integers"),
                    },
                };
                Ok(self.emit_s(OpKind::Const(Const::Int(x)), t))
            }
            syn::Lit::Bool(b) => Ok(self.bool_const(b.value)),
            _ => err_at(&lit, "cotan supports number and bool literals only"),
        }
    }

    fn path(&mut self, p: &syn::ExprPath) -> syn::Result<Agg> {
        if p.qself.is_none() && crate::matching::is_variant_path(&p.path) {
            let name = p.path.segments.last().unwrap().ident.to_string();
            return Ok(Tree::Enum(self.variant(&name)));
        }
        if let Some(ident) = p.path.get_ident() {
            let name = ident.to_string();
            match self.lookup(&name) {
                Some(Binding::Agg(t)) => return Ok(self.read_slots(&t)),
                Some(Binding::Closure(_)) => {
                    return err_at(&p, format!("cotan inlines closures where they are called: call `{name}(..)` here, or pass `{name}` to an iterator method"))
                }
                Some(Binding::Chunks { .. }) => {
                    return err_at(&p, format!("cotan uses the chunks of `as_chunks` where they are indexed (`{name}[i]`), iterated or counted (`{name}.len()`); to pass them on, pass the slice they are made of and take its chunks in the callee"))
                }
                None if name == "None" => return Ok(self.none()),
                None => {
                    // A unit struct (`&Tanh`): a struct without fields.
                    if let Some(st) = self.env.structure(&p.path).filter(|st| st.fields.is_empty()) {
                        return Ok(Tree::Struct(st.path, vec![]));
                    }
                }
                _ => {}
            }
        }
        self.path_value(p).map(Tree::Leaf)
    }

    fn path_value(&mut self, p: &syn::ExprPath) -> syn::Result<Value> {
        if let Some(ident) = p.path.get_ident() {
            let name = ident.to_string();
            return match self.lookup(&name) {
                Some(Binding::Value(v)) => Ok(v),
                Some(Binding::Var(var)) => {
                    let t = self.var_sty(var);
                    Ok(self.emit_s(OpKind::GetVar(var), t))
                }
                Some(Binding::Place(mem, index)) => {
                    let t = self.elem_sty(mem);
                    Ok(self.emit_s(OpKind::Load { mem, index: Some(index) }, t))
                }
                Some(Binding::SliceVar { root, start, end, ty }) => Ok(self.read_slice_var(root, start, end, ty)),
                Some(Binding::PtrVar { root, offset, ty }) => Ok(self.read_ptr_var(root, offset, ty)),
                Some(Binding::Agg(_) | Binding::Closure(_) | Binding::Chunks { .. }) => unreachable!("handled by `path`"),
                None => match float_constant(None, &name) {
                    Some(x) => Ok(self.emit_s(OpKind::Const(Const::Float(x)), STy::Known(Scalar::F64))),
                    None => err_at(&p,
                        format!("cotan cannot see the value of `{name}` from inside the function; pass it as a parameter or write the literal"),
                    ),
                },
            };
        }
        let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
        let segs: Vec<&str> = segs.iter().map(|s| s.as_str()).skip_while(|s| *s == "std" || *s == "core").collect();
        let (ty, name) = match segs.as_slice() {
            [ty, "consts", name] | [ty, name] => (*ty, *name),
            _ => return err_at(&p, "cotan cannot see the value of this path; pass it as a parameter"),
        };
        let Some(s) = Scalar::from_name(ty) else {
            return err_at(&p, "cotan cannot see the value of this path; pass it as a parameter");
        };
        if s.is_float() {
            if let Some(x) = float_constant(Some(s), name) {
                return Ok(self.emit_s(OpKind::Const(Const::Float(x)), STy::Known(s)));
            }
        } else if let Some(x) = int_constant(s, name) {
            return Ok(self.emit_s(OpKind::Const(Const::Int(x)), STy::Known(s)));
        }
        err_at(&p, format!("cotan does not know the constant `{ty}::{name}`; pass it as a parameter"))
    }

    fn unary(&mut self, u: &syn::ExprUnary) -> syn::Result<Value> {
        match u.op {
            syn::UnOp::Deref(_) => self.deref_value(&u.expr),
            syn::UnOp::Neg(_) => {
                let (v, t) = self.scalar(&u.expr)?;
                Ok(self.emit_s(OpKind::Unary(UnOp::Neg, v), t))
            }
            syn::UnOp::Not(_) => {
                let (v, t) = self.scalar(&u.expr)?;
                if matches!(self.infer.current(t), STy::Flex(_)) && self.infer.class_of(t).is_none() {
                    // `!s.on` on a value nothing else types: a bool (`!` on integers is rare).
                    self.unify(t, STy::Known(Scalar::Bool), u.span())?;
                }
                Ok(self.emit_s(OpKind::Unary(UnOp::Not, v), t))
            }
            _ => err_at(&u, "cotan does not support this operator"),
        }
    }

    fn binary(&mut self, b: &syn::ExprBinary) -> syn::Result<Option<Value>> {
        use syn::BinOp as B;
        let is_assign = matches!(
            b.op,
            B::AddAssign(_)
                | B::SubAssign(_)
                | B::MulAssign(_)
                | B::DivAssign(_)
                | B::RemAssign(_)
                | B::BitAndAssign(_)
                | B::BitOrAssign(_)
                | B::BitXorAssign(_)
                | B::ShlAssign(_)
                | B::ShrAssign(_)
        );
        match b.op {
            B::And(_) | B::Or(_) => return self.short_circuit(b).map(Some),
            _ => {}
        }
        if is_assign {
            let op = arith_op(&b.op).unwrap();
            let (rhs, rt) = self.scalar(&b.right)?;
            let (old, place) = self.read_place(&b.left)?;
            let ot = self.scalar_sty(old, b.left.span())?;
            if !matches!(op, BinOp::Shl | BinOp::Shr) {
                self.unify(ot, rt, b.span())?;
            }
            self.at(b.span());
            let new = self.emit_s(OpKind::Binary(op, old, rhs), ot);
            self.write_place(place, new);
            return Ok(None);
        }
        if matches!(b.op, B::Eq(_) | B::Ne(_)) && (self.is_enumish(&b.left) || self.is_enumish(&b.right)) {
            return self.enum_eq(b).map(Some);
        }
        let lhs = self.scalar(&b.left)?;
        self.binary_after(b, lhs).map(Some)
    }

    /// `binary` of a left operand already lowered (to number `lhs` of type `lt`).
    pub(crate) fn binary_after(&mut self, b: &syn::ExprBinary, (lhs, lt): (Value, STy)) -> syn::Result<Value> {
        use syn::BinOp as B;
        let (rhs, rt) = self.scalar(&b.right)?;
        self.at(b.span());
        if let Some(op) = arith_op(&b.op) {
            if !matches!(op, BinOp::Shl | BinOp::Shr) {
                self.unify(lt, rt, b.span())?;
            }
            if matches!(op, BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr)
                && self.infer.class_of(lt) == Some(Class::Float)
            {
                return err_at(&b, "bit operations need integers or bools");
            }
            return Ok(self.emit_s(OpKind::Binary(op, lhs, rhs), lt));
        }
        let cmp = match b.op {
            B::Eq(_) => CmpOp::Eq,
            B::Ne(_) => CmpOp::Ne,
            B::Lt(_) => CmpOp::Lt,
            B::Le(_) => CmpOp::Le,
            B::Gt(_) => CmpOp::Gt,
            B::Ge(_) => CmpOp::Ge,
            _ => return err_at(&b, "cotan does not support this operator"),
        };
        self.unify(lt, rt, b.span())?;
        Ok(self.emit_s(OpKind::Cmp(cmp, lhs, rhs), STy::Known(Scalar::Bool)))
    }

    /// Whether an expression is an enum value, judged without lowering it: a variant path
    /// (`Mode::A`), a local holding one, or a struct-like parameter (an enum parameter).
    fn is_enumish(&self, e: &syn::Expr) -> bool {
        let syn::Expr::Path(p) = crate::lower::strip_parens(e) else { return false };
        if crate::matching::is_variant_path(&p.path) {
            return true;
        }
        match p.path.get_ident().and_then(|i| self.lookup(&i.to_string())) {
            Some(Binding::Agg(Tree::Enum(_))) => true,
            Some(Binding::Value(v)) => crate::record::is_record(self.func.ty(v)),
            _ => false,
        }
    }

    /// `a == b` and `a != b` on fieldless enums.
    fn enum_eq(&mut self, b: &syn::ExprBinary) -> syn::Result<Value> {
        let bool_t = STy::Known(Scalar::Bool);
        let (l, r) = (self.agg(&b.left)?, self.agg(&b.right)?);
        self.at(b.span());
        let eq = match (&l, &r) {
            (Tree::Enum(x), Tree::Enum(y)) => self.emit_s(OpKind::Cmp(CmpOp::Eq, *x, *y), bool_t),
            (Tree::Leaf(v), Tree::Enum(_)) | (Tree::Enum(_), Tree::Leaf(v)) if self.mem_ty(*v).is_some() => {
                let other = if matches!(l, Tree::Leaf(_)) { &b.right } else { &b.left };
                let syn::Expr::Path(p) = crate::lower::strip_parens(other) else {
                    return err_at(other, "cotan compares an enum parameter with variants only (`mode == Mode::A`)");
                };
                let pattern = quote::ToTokens::to_token_stream(&p.path).to_string();
                self.emit_s(OpKind::Matches { value: *v, pattern }, bool_t)
            }
            _ => return err_at(b, "cotan compares fieldless enum values (`mode == Mode::A`) only"),
        };
        Ok(match b.op {
            syn::BinOp::Ne(_) => self.emit_s(OpKind::Unary(UnOp::Not, eq), bool_t),
            _ => eq,
        })
    }

    /// `a && b` / `a || b`: `b` is evaluated only when needed, as in Rust.
    fn short_circuit(&mut self, b: &syn::ExprBinary) -> syn::Result<Value> {
        let bool_t = STy::Known(Scalar::Bool);
        let a = self.bool_expr(&b.left)?;
        let var = self.new_var("cond", bool_t);
        self.effect(OpKind::DeclVar { var, init: a });
        self.push_region();
        let rhs = self.bool_expr(&b.right)?;
        self.effect(OpKind::SetVar(var, rhs));
        let evaluated = self.pop_region();
        let (then_region, else_region) = match b.op {
            syn::BinOp::And(_) => (evaluated, Default::default()),
            _ => (Default::default(), evaluated),
        };
        self.at(b.span());
        self.effect(OpKind::If { cond: a, then_region, else_region });
        Ok(self.emit_s(OpKind::GetVar(var), bool_t))
    }

    fn cast(&mut self, c: &syn::ExprCast) -> syn::Result<Value> {
        if let syn::Type::Ptr(tp) = &*c.ty {
            return self.ptr_cast(c, tp);
        }
        let Some(to) = crate::signature::scalar_type(&c.ty) else {
            return err_at(&c.ty, "cotan supports `as` casts between number types and from bool");
        };
        let (v, t) = self.scalar(&c.expr)?;
        if self.field_loads.contains(&v)
            && matches!(self.infer.current(t), STy::Flex(_))
            && self.infer.class_of(t).is_none()
        {
            // `p.n as f64`: a field whose type only a cast shows is taken for an integer
            // (checked at compile time, see `Lowered::assumed`).
            let i = self.infer.fresh(Class::Int);
            self.unify(t, i, c.span())?;
        }
        self.at(c.span());
        Ok(self.emit_s(OpKind::Cast(v), STy::Known(to)))
    }

    /// `vec![init; len]` with an element type that may still be inferred.
    pub(crate) fn alloc_vec(&mut self, init: Value, t: STy, len: Value, span: Span) -> syn::Result<Value> {
        self.alloc(init, t, len, MemKind::Vec, span)
    }

    /// True if `e` names memory (checked without lowering anything).
    pub(crate) fn is_memory(&self, e: &syn::Expr) -> bool {
        let e = match e {
            syn::Expr::Reference(r) => &*r.expr,
            e => e,
        };
        match e {
            syn::Expr::Path(p) => p.path.get_ident().is_some_and(|i| match self.lookup(&i.to_string()) {
                Some(Binding::Value(v)) => self.func.ty(v).mem().is_some_and(|m| m.kind != MemKind::Cell),
                Some(Binding::SliceVar { .. } | Binding::PtrVar { .. }) => true,
                _ => false,
            }),
            syn::Expr::Index(i) if crate::slices::is_range_index(e) => self.is_memory(&i.expr),
            syn::Expr::Paren(p) => self.is_memory(&p.expr),
            // A field of a struct made in the function that holds an array or a vector.
            syn::Expr::Field(_) => matches!(
                self.slots_of(e),
                Some(Ok(Tree::Leaf(Slot::Value(v)))) if self.func.ty(v).mem().is_some_and(|m| m.kind != MemKind::Cell)
            ),
            syn::Expr::Unary(syn::ExprUnary { op: syn::UnOp::Deref(_), expr, .. }) => self.names_array_pointer(expr),
            _ => false,
        }
    }

    /// Whether `e` is `*p` of a raw pointer `p` (judged without lowering it).
    pub(crate) fn is_pointer_deref(&self, e: &syn::Expr) -> bool {
        matches!(crate::lower::strip_parens(e), syn::Expr::Unary(syn::ExprUnary { op: syn::UnOp::Deref(_), expr, .. }) if self.names_pointer(expr))
    }

    /// The memory value an expression names (a parameter or local buffer).
    pub(crate) fn memory(&mut self, e: &syn::Expr) -> syn::Result<Value> {
        if let Some(a) = self.deref_array(e)? {
            // `(*p)` of an array pointer: the array it points at.
            return Ok(a);
        }
        let v = self.expr(e)?;
        match self.mem_ty(v) {
            Some(m) if m.kind != MemKind::Cell => Ok(v),
            _ => match self.call_results.get(&v) {
                Some((callee, span)) => err(
                    *span,
                    format!("cotan passes slices and arrays into calls, not out of them: `{callee}` returns one; take the sub-slice here (`&x[a..b]`) instead of in `{callee}`"),
                ),
                None => err_at(&e, "expected a slice, array or Vec here"),
            },
        }
    }

    pub(crate) fn index_value(&mut self, e: &syn::Expr) -> syn::Result<Value> {
        if let syn::Expr::Range(_) = e {
            return err_at(&e, "a sub-slice is not a place to assign to; assign its elements (`x[a + k] = ..`)");
        }
        let (i, t) = self.scalar(e)?;
        self.unify(STy::Known(Scalar::Usize), t, e.span())?;
        Ok(i)
    }

    fn index_read(&mut self, i: &syn::ExprIndex) -> syn::Result<Value> {
        if let Some(chunk) = self.chunk_index(i)? {
            return Ok(chunk);
        }
        let m = self.memory(&i.expr)?;
        self.indexable(m, &i.expr)?;
        let idx = self.index_value(&i.index)?;
        self.at(i.span());
        if self.is_nested(m) {
            return Ok(self.row(m, idx));
        }
        let elem = self.elem_sty(m);
        Ok(self.emit_s(OpKind::Load { mem: m, index: Some(idx) }, elem))
    }

    /// An error for `v[i]` of a struct or a single number: only containers are indexed (a
    /// struct's own `impl Index` is not lowered).
    fn indexable(&self, m: Value, e: &syn::Expr) -> syn::Result<()> {
        match self.mem_ty(m).map(|t| t.kind) {
            Some(MemKind::Record(id)) => {
                let ty = &self.func.records[id as usize];
                err_at(e, format!("cotan indexes slices, arrays and vectors, and `{}` is a `{ty}` (a struct: its own `impl Index` is not lowered); read its fields (`.x`) or call a method of your own", quote::ToTokens::to_token_stream(e)))
            }
            Some(MemKind::Cell) => {
                err_at(e, "cotan indexes slices, arrays and vectors, and this is a reference to one number")
            }
            _ => Ok(()),
        }
    }

    /// Resolves an assignment target and reads its current value.
    fn read_place(&mut self, e: &syn::Expr) -> syn::Result<(Value, Place)> {
        let place = self.place(e)?;
        let v = match place {
            Place::Var(var) => {
                let t = self.var_sty(var);
                self.emit_s(OpKind::GetVar(var), t)
            }
            Place::Mem(m, idx) => {
                let elem = self.elem_sty(m);
                self.emit_s(OpKind::Load { mem: m, index: idx }, elem)
            }
        };
        Ok((v, place))
    }

    fn place(&mut self, e: &syn::Expr) -> syn::Result<Place> {
        match e {
            syn::Expr::Paren(p) => self.place(&p.expr),
            syn::Expr::Path(p) if p.path.get_ident().is_some() => {
                let name = p.path.get_ident().unwrap().to_string();
                match self.lookup(&name) {
                    Some(Binding::Var(var)) => Ok(Place::Var(var)),
                    Some(Binding::Value(v)) if matches!(self.mem_ty(v), Some(m) if m.kind == MemKind::Cell) => {
                        Ok(Place::Mem(v, None))
                    }
                    Some(Binding::Value(v)) if self.mem_ty(v).is_some() => err_at(
                        &e,
                        "cotan assigns a whole vector only to a vector the function makes (`let mut v = ..; v = w;`); assign the elements of this one (e.g. in a `for` loop)",
                    ),
                    Some(Binding::Value(_)) => err_at(
                        &e,
                        format!("cannot assign twice to immutable variable `{name}`; declare it with `let mut`"),
                    ),
                    Some(Binding::Place(mem, index)) => Ok(Place::Mem(mem, Some(index))),
                    Some(Binding::SliceVar { .. }) => {
                        err_at(&e, "assign a slice variable a part of its buffer (`s = &x[a..b];`)")
                    }
                    Some(Binding::PtrVar { .. }) => {
                        err_at(&e, "assign a pointer variable a pointer into its buffer (`p = p.add(1);`)")
                    }
                    Some(Binding::Agg(_) | Binding::Closure(_) | Binding::Chunks { .. }) => {
                        err_at(&e, format!("cotan cannot use `{name}` as a number here"))
                    }
                    None => err_at(&e, format!("cotan cannot see `{name}` from inside the function")),
                }
            }
            syn::Expr::Index(i) => {
                let m = self.memory(&i.expr)?;
                self.indexable(m, &i.expr)?;
                let idx = self.index_value(&i.index)?;
                Ok(Place::Mem(m, Some(idx)))
            }
            syn::Expr::Field(f) if self.slots_of(e).is_some() => {
                let t = self.slots_of(e).unwrap()?;
                match t {
                    Tree::Leaf(Slot::Var(var)) => Ok(Place::Var(var)),
                    Tree::Leaf(Slot::Value(_)) => {
                        err_at(&f.base, "cannot assign to a part of an immutable tuple; declare it with `let mut`")
                    }
                    t => err_at(&e, format!("cotan assigns numbers one at a time; this is {}", t.describe())),
                }
            }
            syn::Expr::Field(f) => {
                let v = self.field(f)?;
                match self.mem_ty(v) {
                    Some(m) if m.kind == MemKind::Cell && m.access == Access::Mut => Ok(Place::Mem(v, None)),
                    Some(m) if m.kind == MemKind::Cell => {
                        err_at(&e, "cotan can write fields only through `&mut`; take the struct as `&mut S`")
                    }
                    _ => err_at(&e, "cotan does not support assigning a whole field; assign its elements"),
                }
            }
            syn::Expr::Unary(syn::ExprUnary { op: syn::UnOp::Deref(_), expr, .. }) => {
                if let syn::Expr::Path(p) = &**expr {
                    if let Some(Binding::Place(mem, index)) =
                        p.path.get_ident().and_then(|i| self.lookup(&i.to_string()))
                    {
                        return Ok(Place::Mem(mem, Some(index)));
                    }
                }
                let v = match self.deref(expr)? {
                    crate::pointers::Deref::Elem(m, i) => return Ok(Place::Mem(m, Some(i))),
                    crate::pointers::Deref::Array(_) => {
                        return err_at(
                            &e,
                            "cotan does not support assigning a whole array; assign its elements (`(*p)[i] = ..`)",
                        )
                    }
                    crate::pointers::Deref::Other(v) => v,
                };
                if let Some(&(mem, index)) = self.elem_refs.get(&v) {
                    return Ok(Place::Mem(mem, Some(index)));
                }
                match self.mem_ty(v) {
                    Some(m) if m.kind == MemKind::Cell => Ok(Place::Mem(v, None)),
                    _ => err_at(&e, "cotan can assign through `*` only to `&mut f64`-like parameters and raw pointers"),
                }
            }
            _ => err_at(&e, "cotan can assign to variables, elements `x[i]` and `*x` only"),
        }
    }

    /// Rejects assignments to whole arrays before their right side is lowered, so that the
    /// error names the real problem.
    fn check_assignable(&mut self, target: &syn::Expr) -> syn::Result<()> {
        let name = match target {
            syn::Expr::Path(p) => p.path.get_ident(),
            syn::Expr::Unary(syn::ExprUnary { op: syn::UnOp::Deref(_), expr, .. }) => match &**expr {
                syn::Expr::Path(p) => p.path.get_ident(),
                _ => None,
            },
            _ => None,
        };
        if let Some(Binding::Value(v)) = name.and_then(|n| self.lookup(&n.to_string())) {
            if self.mem_ty(v).is_some_and(|m| m.kind == MemKind::Ptr) && !matches!(target, syn::Expr::Path(_)) {
                // `*p = v` writes the number `p` points at.
                return Ok(());
            }
            if self.mem_ty(v).is_some_and(|m| m.kind != MemKind::Cell) {
                return err_at(
                    target,
                    "cotan assigns a whole vector only to a vector the function makes (`let mut v = ..; v = w;`); assign the elements of this one (e.g. in a `for` loop)",
                );
            }
        }
        Ok(())
    }

    /// `target = value`, also for tuples (`t = (a, b)`, `(a, b) = (b, a)`).
    fn assign_expr(&mut self, a: &syn::ExprAssign) -> syn::Result<()> {
        let whole_agg = matches!(crate::lower::strip_parens(&a.left), syn::Expr::Tuple(_))
            || matches!(crate::lower::strip_parens(&a.right), syn::Expr::Tuple(t) if !t.elems.is_empty())
            || self.slots_of(&a.left).is_some_and(|t| !matches!(t, Ok(Tree::Leaf(_))));
        if whole_agg {
            let v = self.agg(&a.right)?;
            return self.assign_agg(&a.left, v);
        }
        if self.assign_slice_var(&a.left, &a.right)? {
            return Ok(());
        }
        if self.assign_ptr_var(&a.left, &a.right)? {
            return Ok(());
        }
        let row_of_arrays = match crate::lower::strip_parens(&a.left) {
            syn::Expr::Index(ix) if self.chunks_of(&ix.expr).is_some() => {
                // `chunks[i] = [a, b]`: the chunk, element by element.
                if self.chunks_of(&ix.expr).is_some_and(|(_, _, access)| access != Access::Mut) {
                    return err_at(&ix.expr, "these chunks are shared: take them with `as_chunks_mut` to write them");
                }
                let src = self.memory(&a.right)?;
                let dst = self.chunk_index(ix)?.expect("checked: chunks");
                return self.copy_array(dst, src, a);
            }
            syn::Expr::Index(ix) if self.is_memory(&ix.expr) => Some(ix),
            _ => None,
        };
        if let Some(ix) = row_of_arrays {
            let m = self.memory(&ix.expr)?;
            if self.mem_ty(m).unwrap().kind.row().is_some_and(|r| matches!(r, MemKind::Array(_))) {
                // `rows[i] = [a, b]`: a row that is an array, element by element (the right
                // side is made first, as Rust evaluates it).
                let src = self.memory(&a.right)?;
                let idx = self.index_value(&ix.index)?;
                let dst = self.row(m, idx);
                return self.copy_array(dst, src, a);
            }
        }
        if let Some(Ok(Tree::Leaf(Slot::Value(v)))) = self.slots_of(&a.left) {
            if self.mem_ty(v).is_some_and(|m| m.kind == MemKind::Vec) {
                return err_at(
                    &a.left,
                    "cotan does not assign a whole `Vec` field of a struct made in the function; write its elements (`for i in 0..n { s.x[i] = .. }`), or make the struct anew with the new vector",
                );
            }
        }
        if let Some(dst) = self.array_local(&a.left) {
            // A whole array: its elements (the right side is made before they are written).
            let src = self.memory(&a.right)?;
            return self.copy_array(dst, src, a);
        }
        if let Some(dst) = self.vec_local(&a.left) {
            return self.assign_vec(dst, a);
        }
        if let Some(r) = self.assign_struct(a) {
            return r;
        }
        self.check_assignable(&a.left)?;
        let (v, vt) = self.scalar(&a.right)?;
        self.assign(&a.left, v, vt)
    }

    /// `p[i] = V3::new(..)`, `b.pos = b.pos + v * dt`, `*q = p[0]`: a struct of numbers into
    /// memory (an element of a slice of structs, a struct field of a struct parameter), field
    /// by field, the right side made first. `None` when the left side is no such place.
    fn assign_struct(&mut self, a: &syn::ExprAssign) -> Option<syn::Result<()>> {
        let ty = self.record_type_of(&a.left)?;
        let st = self.env.structure(&syn::parse_str::<syn::Path>(&ty).ok()?)?;
        Some((|| {
            let value = self.struct_value(&a.right, &st)?;
            self.store_fields(&a.left, &value, a.span())
        })())
    }

    /// Writes struct value `v` into place `target`, field by field.
    fn store_fields(&mut self, target: &syn::Expr, v: &Agg, span: Span) -> syn::Result<()> {
        let Tree::Struct(_, fields) = v else {
            return err(span, format!("expected a struct here, found {}", v.describe()));
        };
        for (name, field) in fields {
            let member: syn::Member = match name.parse::<u32>() {
                Ok(index) => syn::Member::Unnamed(syn::Index { index, span }),
                Err(_) => syn::Member::Named(syn::Ident::new(name, span)),
            };
            let place: syn::Expr = syn::parse_quote_spanned!(span=> (#target).#member);
            match field {
                Tree::Leaf(x) => {
                    let t = self.scalar_sty(*x, span)?;
                    self.assign(&place, *x, t)?;
                }
                inner => self.store_fields(&place, inner, span)?,
            }
        }
        Ok(())
    }

    /// `dst = src` for two arrays of the same length.
    fn copy_array(&mut self, dst: Value, src: Value, a: &syn::ExprAssign) -> syn::Result<()> {
        {
            let (dk, sk) = (self.mem_ty(dst).unwrap().kind, self.mem_ty(src).unwrap().kind);
            if dk != sk {
                return err_at(
                    &a.right,
                    format!("expected an array like `{}` here", quote::ToTokens::to_token_stream(&a.left)),
                );
            }
            self.at(a.span());
            // (Arrays of numbers or of arrays, row by row.)
            if !self.copy_array_into(dst, src, a.span())? {
                return err_at(&a.left, "cotan assigns a whole array only to an array the function may write");
            }
            Ok(())
        }
    }

    /// `x.sort_by(compare)` (and `sort_unstable_by`) on numbers, as an insertion sort written
    /// out: each element moved down past the greater ones before it, by swaps, so that the
    /// derivatives follow the values (ties keep their order, as `sort_by` does). Quadratic:
    /// meant for the short slices of medians and order statistics.
    fn sort_by(&mut self, m: &syn::ExprMethodCall) -> syn::Result<()> {
        let v = self.memory(&m.receiver)?;
        if !self.mem_ty(v).unwrap().is_writable() {
            return err_at(&m.receiver, "sorting needs `&mut` access");
        }
        if !self.holds_numbers(v) {
            return err_at(&m.receiver, "cotan sorts slices and vectors of numbers");
        }
        let compare = self.callable(&m.args[0], 2)?;
        let (span, usize_t, bool_t) = (m.span(), STy::Known(Scalar::Usize), STy::Known(Scalar::Bool));
        let elem = self.elem_sty(v);
        self.at(span);
        let n = self.emit_s(OpKind::Len(v), usize_t);
        // The elements after the first (none of an empty slice).
        let (_, rest) = self.last_index(n);
        let one = self.usize_const(1);
        let mut result = Ok(());
        self.index_loop(rest, |l, t| {
            // Element `i = t + 1` moves down while the one before it is greater.
            let i = l.emit_s(OpKind::Binary(BinOp::Add, t, one), usize_t);
            let moving = l.new_var("moving", bool_t);
            let yes = l.bool_const(true);
            l.effect(OpKind::DeclVar { var: moving, init: yes });
            l.index_loop(i, |l, s| {
                let j = l.emit_s(OpKind::Binary(BinOp::Sub, i, s), usize_t);
                let before = l.emit_s(OpKind::Binary(BinOp::Sub, j, one), usize_t);
                let go = l.emit_s(OpKind::GetVar(moving), bool_t);
                l.push_region();
                let a = l.emit_s(OpKind::Load { mem: v, index: Some(before) }, elem);
                let b = l.emit_s(OpKind::Load { mem: v, index: Some(j) }, elem);
                let greater =
                    match l.ordering_greater(&compare, crate::chain::Item::Val(a), crate::chain::Item::Val(b), span) {
                        Ok(g) => g,
                        Err(e) => {
                            result = Err(e);
                            l.bool_const(false)
                        }
                    };
                l.push_region();
                l.effect(OpKind::Store { mem: v, index: Some(before), value: b });
                l.effect(OpKind::Store { mem: v, index: Some(j), value: a });
                let swap = l.pop_region();
                l.push_region();
                let no = l.bool_const(false);
                l.effect(OpKind::SetVar(moving, no));
                let stop = l.pop_region();
                l.effect(OpKind::If { cond: greater, then_region: swap, else_region: stop });
                let then_region = l.pop_region();
                l.effect(OpKind::If { cond: go, then_region, else_region: cotan_ir::Region::default() });
            });
        });
        result
    }

    /// `v.remove(i)`, `v.swap_remove(i)` (the element) and `v.insert(i, x)`: the elements
    /// after `i` moved by one (or the last moved to `i`), and the length changed by a resize.
    fn shift(&mut self, m: &syn::ExprMethodCall, name: &str) -> syn::Result<Option<Value>> {
        let v = self.owned_vec(m, name)?;
        let (usize_t, bool_t) = (STy::Known(Scalar::Usize), STy::Known(Scalar::Bool));
        let elem = self.elem_sty(v);
        let i = self.index_value(&m.args[0])?;
        self.at(m.span());
        let n = self.emit_s(OpKind::Len(v), usize_t);
        let one = self.usize_const(1);
        let zero = self.zero(elem);
        if name == "insert" {
            let (x, xt) = self.scalar(&m.args[1])?;
            self.unify(elem, xt, m.args[1].span())?;
            let ok = self.emit_s(OpKind::Cmp(CmpOp::Le, i, n), bool_t);
            self.effect(OpKind::Assert { cond: ok, message: "insertion index should be <= len".into() });
            let longer = self.emit_s(OpKind::Binary(BinOp::Add, n, one), usize_t);
            self.effect(OpKind::Fill { mem: v, value: zero, resize: Some([longer, n]) });
            // From the end down to `i + 1`: `v[k] = v[k - 1]`.
            let moved = self.emit_s(OpKind::Binary(BinOp::Sub, n, i), usize_t);
            self.index_loop(moved, |l, t| {
                let k = l.emit_s(OpKind::Binary(BinOp::Sub, n, t), usize_t);
                let from = l.emit_s(OpKind::Binary(BinOp::Sub, k, one), usize_t);
                let e = l.emit_s(OpKind::Load { mem: v, index: Some(from) }, elem);
                l.effect(OpKind::Store { mem: v, index: Some(k), value: e });
            });
            self.effect(OpKind::Store { mem: v, index: Some(i), value: x });
            return Ok(None);
        }
        // (Reading `v[i]` checks the index, as `remove` does.)
        let removed = self.emit_s(OpKind::Load { mem: v, index: Some(i) }, elem);
        let last = self.emit_s(OpKind::Binary(BinOp::Sub, n, one), usize_t);
        if name == "swap_remove" {
            let e = self.emit_s(OpKind::Load { mem: v, index: Some(last) }, elem);
            self.effect(OpKind::Store { mem: v, index: Some(i), value: e });
        } else {
            let moved = self.emit_s(OpKind::Binary(BinOp::Sub, last, i), usize_t);
            self.index_loop(moved, |l, t| {
                let k = l.emit_s(OpKind::Binary(BinOp::Add, i, t), usize_t);
                let from = l.emit_s(OpKind::Binary(BinOp::Add, k, one), usize_t);
                let e = l.emit_s(OpKind::Load { mem: v, index: Some(from) }, elem);
                l.effect(OpKind::Store { mem: v, index: Some(k), value: e });
            });
        }
        self.effect(OpKind::Fill { mem: v, value: zero, resize: Some([last, n]) });
        Ok(Some(removed))
    }

    /// For a buffer of `n` elements: whether it has any, and its last index (`n - 1` only
    /// when `n > 0`; 0 otherwise).
    fn last_index(&mut self, n: Value) -> (Value, Value) {
        let usize_t = STy::Known(Scalar::Usize);
        let (zero, one) = (self.usize_const(0), self.usize_const(1));
        let some = self.emit_s(OpKind::Cmp(CmpOp::Gt, n, zero), STy::Known(Scalar::Bool));
        let n1 = self.emit_s(OpKind::Select(some, n, one), usize_t);
        (some, self.emit_s(OpKind::Binary(BinOp::Sub, n1, one), usize_t))
    }

    /// `&mut v[i]` where a value is expected: the element, read now, remembered as a
    /// place (a name bound to it reads and writes `v[i]` where it is used); `&mut ps[i]`
    /// of a struct (or a row): the element's memory, as `iter_mut` gives it.
    fn elem_ref(&mut self, place: &syn::Expr) -> syn::Result<Value> {
        let syn::Expr::Index(ix) = crate::lower::strip_parens(place) else { unreachable!("checked: an index") };
        let mem = self.memory(&ix.expr)?;
        let index = self.index_value(&ix.index)?;
        self.at(place.span());
        if self.is_nested(mem) {
            return Ok(self.row(mem, index));
        }
        if !self.holds_numbers(mem) {
            return err_at(place, "cotan takes `&mut` of elements of slices and vectors (`&mut v[i]`) and of arrays and slices (`&mut a`); write to this place directly here");
        }
        let t = self.elem_sty(mem);
        let v = self.emit_s(OpKind::Load { mem, index: Some(index) }, t);
        self.elem_refs.insert(v, (mem, index));
        Ok(v)
    }

    /// A value to copy: the element again if `v` is an element reference (whose element may
    /// have been written since), else `v`.
    pub(crate) fn elem_copy(&mut self, v: Value) -> Value {
        match self.elem_refs.get(&v) {
            Some(&(mem, index)) => {
                let t = self.elem_sty(mem);
                self.emit_s(OpKind::Load { mem, index: Some(index) }, t)
            }
            None => v,
        }
    }

    /// Whether `m` is memory of numbers read by index (not a cell, rows or structs).
    fn holds_numbers(&self, m: Value) -> bool {
        self.mem_ty(m).is_some_and(|t| !matches!(t.kind, MemKind::Cell | MemKind::Nested(..) | MemKind::Records(..)))
    }

    /// The vector a method that changes its length is called on: one the function made.
    fn owned_vec(&mut self, m: &syn::ExprMethodCall, name: &str) -> syn::Result<Value> {
        let v = self.memory(&m.receiver)?;
        let mt = self.mem_ty(v).unwrap();
        if mt.kind != MemKind::Vec || mt.access != Access::Owned || self.func.params.contains(&v) {
            return err_at(
                &m.receiver,
                format!("cotan supports `{name}` on vectors the function makes only (`let mut v = Vec::new();`)"),
            );
        }
        Ok(v)
    }

    /// `clear`, `truncate`, `resize`, `extend_from_slice` and `extend` on a vector the
    /// function made: a resize (`Fill` with `resize`), or pushes.
    fn vec_method(&mut self, m: &syn::ExprMethodCall, name: &str) -> syn::Result<()> {
        let v = self.owned_vec(m, name)?;
        let recv = &m.receiver;
        let span = m.span();
        let usize_t = STy::Known(Scalar::Usize);
        let elem = self.elem_sty(v);
        match name {
            "extend_from_slice" | "extend" => {
                // As the loop it stands for (the items are numbers, or references to them).
                let it = &m.args[0];
                let source: syn::Expr =
                    if name == "extend" { it.clone() } else { syn::parse_quote_spanned!(span=> (#it).iter()) };
                // (The loop variable is named as no name of the receiver is.)
                let names = quote::ToTokens::to_token_stream(recv).to_string();
                let item =
                    ["item", "elem", "pushed_item"].into_iter().find(|n| !names.contains(n)).unwrap_or("pushed_elem");
                let item = syn::Ident::new(item, span);
                let l: syn::ExprForLoop =
                    syn::parse_quote_spanned!(span=> for #item in #source { #recv.push(*&#item); });
                return self.for_loop(&l);
            }
            _ => {}
        }
        self.at(span);
        let old = self.emit_s(OpKind::Len(v), usize_t);
        let (len, value) = match name {
            "clear" => (self.usize_const(0), self.zero(elem)),
            "truncate" => {
                let (k, kt) = self.scalar(&m.args[0])?;
                self.unify(usize_t, kt, m.args[0].span())?;
                (crate::chain::min(self, k, old), self.zero(elem))
            }
            _ => {
                let (n, nt) = self.scalar(&m.args[0])?;
                self.unify(usize_t, nt, m.args[0].span())?;
                let (x, xt) = self.scalar(&m.args[1])?;
                self.unify(elem, xt, m.args[1].span())?;
                (n, x)
            }
        };
        self.effect(OpKind::Fill { mem: v, value, resize: Some([len, old]) });
        Ok(())
    }

    /// The vector of numbers the function made that a plain name is bound to, if it is one.
    fn vec_local(&self, e: &syn::Expr) -> Option<Value> {
        let syn::Expr::Path(p) = crate::lower::strip_parens(e) else { return None };
        let Some(Binding::Value(v)) = self.lookup(&p.path.get_ident()?.to_string()) else { return None };
        let m = self.mem_ty(v)?;
        (m.kind == MemKind::Vec && m.access == Access::Owned && !self.func.params.contains(&v)).then_some(v)
    }

    /// `v = w` for a vector `v` the function made: `v` takes the length and the elements of
    /// `w`, which is made first (`v = layer.forward(&v)`). Rust's types make `w` another
    /// buffer than `v` (an owned vector, not a view of `v`).
    fn assign_vec(&mut self, dst: Value, a: &syn::ExprAssign) -> syn::Result<()> {
        let src = self.memory(&a.right)?;
        if src == dst {
            return Ok(());
        }
        if !self.holds_numbers(src) {
            return err_at(&a.right, "expected a vector of numbers here, as the vector assigned");
        }
        let (de, se) = (self.elem_sty(dst), self.elem_sty(src));
        self.unify(de, se, a.span())?;
        self.at(a.span());
        let usize_t = STy::Known(Scalar::Usize);
        let len = self.emit_s(OpKind::Len(src), usize_t);
        let old_len = self.emit_s(OpKind::Len(dst), usize_t);
        let zero = self.zero(de);
        self.effect(OpKind::Fill { mem: dst, value: zero, resize: Some([len, old_len]) });
        self.copy_loop(dst, src, len);
        Ok(())
    }

    /// The writable array of numbers a plain name is bound to, if it is one.
    fn array_local(&self, e: &syn::Expr) -> Option<Value> {
        let e = match crate::lower::strip_parens(e) {
            // `*out = ..` through `&mut [f64; N]`.
            syn::Expr::Unary(syn::ExprUnary { op: syn::UnOp::Deref(_), expr, .. }) => &**expr,
            e => e,
        };
        let v = match e {
            syn::Expr::Path(p) => match self.lookup(&p.path.get_ident()?.to_string()) {
                Some(Binding::Value(v)) => v,
                _ => return None,
            },
            // `s.pos = [..]` of a `let mut` struct or tuple.
            syn::Expr::Field(_) => match self.slots_of(e)? {
                Ok(Tree::Leaf(Slot::Value(v))) => v,
                _ => return None,
            },
            _ => return None,
        };
        self.mem_ty(v)
            .filter(|m| {
                matches!(m.kind, MemKind::Array(_) | MemKind::Nested(Dim::Array(_), Dim::Array(_), None))
                    && m.is_writable()
            })
            .map(|_| v)
    }

    /// Assigns an aggregate to a destructuring target or a tuple local, part by part.
    fn assign_agg(&mut self, target: &syn::Expr, v: Agg) -> syn::Result<()> {
        match (crate::lower::strip_parens(target), v) {
            (syn::Expr::Infer(_), _) => Ok(()),
            (syn::Expr::Tuple(t), Tree::Tuple(vs)) if t.elems.len() == vs.len() => {
                for (e, v) in t.elems.iter().zip(vs) {
                    self.assign_agg(e, v)?;
                }
                Ok(())
            }
            (e, Tree::Leaf(v)) => {
                let vt = self.scalar_sty(v, e.span())?;
                self.assign(e, v, vt)
            }
            (syn::Expr::Path(p), v) if matches!(p.path.get_ident().and_then(|i| self.lookup(&i.to_string())), Some(Binding::Var(_))) => err_at(
                p,
                format!("cotan supports `let x;` without a value for numbers and bools only; give {} its value where it is declared (`let y = if c {{ (a, b) }} else {{ (c, d) }};`)", v.describe()),
            ),
            (e, v) => match self.slots_of(e) {
                Some(t) => {
                    let slots = t?;
                    self.set_slots(&slots, v, e)
                }
                None => err_at(e, format!("cotan cannot assign {} here", v.describe())),
            },
        }
    }

    /// The bound aggregate (or part of one) an expression names: `t`, `t.0`, `t.1.0`.
    pub(crate) fn slots_of(&self, e: &syn::Expr) -> Option<syn::Result<Tree<Slot>>> {
        match e {
            syn::Expr::Paren(p) => self.slots_of(&p.expr),
            syn::Expr::Path(p) => match self.lookup(&p.path.get_ident()?.to_string()) {
                Some(Binding::Agg(t)) => Some(Ok(t)),
                _ => None,
            },
            syn::Expr::Field(f) => {
                let base = self.slots_of(&f.base)?;
                Some(base.and_then(|t| t.element(&f.member).cloned()))
            }
            _ => None,
        }
    }

    /// `base.field`: of a struct or tuple parameter (read where it appears, as Rust copies
    /// numbers), or of a tuple value.
    fn field_expr(&mut self, f: &syn::ExprField) -> syn::Result<Agg> {
        if let Some(t) = self.slots_of(&syn::Expr::Field(f.clone())) {
            let t = t?;
            return Ok(self.read_slots(&t));
        }
        if !self.is_record_path(&f.base) {
            let base = self.agg(&f.base)?;
            let call = matches!(crate::lower::strip_parens(&f.base), syn::Expr::Call(_) | syn::Expr::MethodCall(_));
            if let (Tree::Leaf(_), true, syn::Member::Unnamed(_)) = (&base, call, &f.member) {
                return err_at(
                    &f.base,
                    "cotan reads the results of a call returning a tuple through a pattern; bind them (`let (a, b) = f(..);`) and use the one you need",
                );
            }
            if let Tree::Leaf(_) = base {
                return err_at(
                    &f.base,
                    "cotan reads fields of struct and tuple parameters, of structs and tuples made in this function, and of elements of slices of structs (`v[i].x`), not of this value (a struct with arrays returned by a function, say); build the struct here (`S { a: [..], .. }`) or pass it as a parameter",
                );
            }
            return base.element(&f.member).cloned();
        }
        let m = self.field(f)?;
        let v = self.auto_load(m);
        if v != m {
            self.field_loads.insert(v);
        }
        Ok(Tree::Leaf(v))
    }

    /// Whether a field chain is rooted at a record parameter (`p.layer.w`).
    fn is_record_path(&self, e: &syn::Expr) -> bool {
        match e {
            syn::Expr::Paren(p) => self.is_record_path(&p.expr),
            syn::Expr::Field(f) => self.is_record_path(&f.base),
            e => self.is_record_receiver(e),
        }
    }

    fn write_place(&mut self, place: Place, v: Value) {
        match place {
            Place::Var(var) => self.effect(OpKind::SetVar(var, v)),
            Place::Mem(m, index) => self.effect(OpKind::Store { mem: m, index, value: v }),
        }
    }

    pub(crate) fn assign(&mut self, target: &syn::Expr, v: Value, vt: STy) -> syn::Result<()> {
        let place = self.place(target)?;
        let have = match place {
            Place::Var(var) => self.var_sty(var),
            Place::Mem(m, _) => {
                let mt = self.mem_ty(m).unwrap();
                if mt.access == Access::Shared && mt.is_ptr() {
                    return err_at(&target, "cannot write through a `*const` pointer; take `*mut`");
                }
                if mt.access == Access::Shared {
                    return err_at(&target, "cannot assign through a shared reference; take `&mut`");
                }
                self.elem_sty(m)
            }
        };
        self.unify(have, vt, target.span())?;
        self.at(target.span());
        self.write_place(place, v);
        Ok(())
    }

    pub(crate) fn method_call(&mut self, m: &syn::ExprMethodCall) -> syn::Result<Option<Agg>> {
        if let (syn::Expr::Range(r), "contains", [x]) = (
            crate::lower::strip_parens(&m.receiver),
            m.method.to_string().as_str(),
            m.args.iter().collect::<Vec<_>>().as_slice(),
        ) {
            // `(lo..hi).contains(&x)`: the comparisons it is.
            let x = match crate::lower::strip_parens(x) {
                syn::Expr::Reference(r) => &*r.expr,
                x => x,
            };
            let (lo, hi) = (r.start.iter(), r.end.iter());
            let upper = match r.limits {
                syn::RangeLimits::HalfOpen(_) => quote::quote!(<),
                syn::RangeLimits::Closed(_) => quote::quote!(<=),
            };
            let v = syn::Ident::new("__cotan_contained", m.span());
            let test: syn::Expr =
                syn::parse_quote_spanned!(m.span()=> { let #v = #x; true #(&& #lo <= #v)* #(&& #v #upper #hi)* });
            return self.agg_opt(&test);
        }
        // (Of a name or a field: lowering it here and again below makes nothing twice.)
        if let Some(rows) = copied_rows(m)
            .filter(|r| matches!(crate::lower::strip_parens(r), syn::Expr::Path(_) | syn::Expr::Field(_)))
            .filter(|r| self.is_memory(r))
        {
            // `rows.iter().copied().collect()` of a slice of arrays: its copy (`to_vec`).
            let src = self.memory(rows)?;
            if matches!(self.mem_ty(src).map(|t| t.kind), Some(MemKind::Nested(_, Dim::Array(_), None))) {
                return self.copy_of(src, m.span()).map(|v| Some(Tree::Leaf(v)));
            }
        }
        if let Some(r) = self.chunks_method(m) {
            return r.map(|v| Some(Tree::Leaf(v)));
        }
        if let Some(r) = self.pointer_method(m) {
            return r;
        }
        if let Some(r) = crate::chain::consume(self, m) {
            return r;
        }
        if let Some(r) = self.struct_method(m) {
            return r;
        }
        if let Some(r) = self.record_flat_method(m) {
            return r;
        }
        if let Some(r) = self.record_inlined_method(m) {
            return r;
        }
        if let Some(r) = self.record_method(m, None) {
            return r.map(|mut v| match v.len() {
                0 | 1 => v.pop().map(Tree::Leaf),
                _ => Some(Tree::Tuple(v.into_iter().map(Tree::Leaf).collect())),
            });
        }
        let name = m.method.to_string();
        let args: Vec<&syn::Expr> = m.args.iter().collect();
        match (name.as_str(), args.as_slice()) {
            ("as_ref" | "as_mut" | "as_slice" | "as_mut_slice", []) if self.is_memory(&m.receiver) => {
                let v = self.memory(&m.receiver)?;
                if matches!(name.as_str(), "as_mut" | "as_mut_slice") && !self.mem_ty(v).unwrap().is_writable() {
                    return err_at(&m.receiver, format!("`{name}` needs `&mut` access"));
                }
                return Ok(Some(Tree::Leaf(v)));
            }
            ("as_chunks" | "as_chunks_mut", []) => {
                return err_at(
                    &m.method,
                    format!("cotan takes `{name}` in a `let` that names the chunks and the rest: `let (chunks, rest) = x.{name}::<N>();`"),
                );
            }
            ("split_at", [_]) if self.is_memory(&m.receiver) => return self.split_at(m, Access::Shared).map(Some),
            ("split_at_mut", [_]) if self.is_memory(&m.receiver) => return self.split_at(m, Access::Mut).map(Some),
            ("sin_cos", []) => {
                let (x, t) = self.scalar(&m.receiver)?;
                self.at(m.span());
                let s = self.emit_s(OpKind::Math(MathFn::Sin, vec![x]), t);
                let c = self.emit_s(OpKind::Math(MathFn::Cos, vec![x]), t);
                return Ok(Some(Tree::Tuple(vec![Tree::Leaf(s), Tree::Leaf(c)])));
            }
            ("pop", []) if self.is_memory(&m.receiver) => {
                // The last element, if any, and the vector one shorter.
                let mv = self.owned_vec(m, "pop")?;
                let usize_t = STy::Known(Scalar::Usize);
                self.at(m.span());
                let n = self.emit_s(OpKind::Len(mv), usize_t);
                let (some, last) = self.last_index(n);
                let popped = self.guarded_load(some, mv, last);
                let z = self.zero(self.elem_sty(mv));
                self.effect(OpKind::Fill { mem: mv, value: z, resize: Some([last, n]) });
                return Ok(Some(popped));
            }
            ("first" | "last" | "first_mut" | "last_mut", []) | ("get" | "get_mut", [_])
                if self.is_memory(&m.receiver) =>
            {
                let mv = self.memory(&m.receiver)?;
                if name.ends_with("_mut") && !self.holds_numbers(mv) {
                    return err_at(&m.method, format!("cotan supports `.{name}()` on slices and vectors of numbers; for other elements, test the index and take the element: `if i < v.len() {{ let e = &mut v[i]; .. }}`"));
                }
                let usize_t = STy::Known(Scalar::Usize);
                self.at(m.span());
                let n = self.emit_s(OpKind::Len(mv), usize_t);
                let (cond, index) = match name.trim_end_matches("_mut") {
                    "get" => {
                        let i = self.index_value(args[0])?;
                        (self.emit_s(OpKind::Cmp(CmpOp::Lt, i, n), STy::Known(Scalar::Bool)), i)
                    }
                    "first" => {
                        let zero = self.usize_const(0);
                        (self.emit_s(OpKind::Cmp(CmpOp::Gt, n, zero), STy::Known(Scalar::Bool)), zero)
                    }
                    _ => self.last_index(n),
                };
                let option = self.guarded_load(cond, mv, index);
                if let (true, Tree::Option(_, payload)) = (name.ends_with("_mut"), &option) {
                    if let Tree::Leaf(v) = **payload {
                        self.elem_refs.insert(v, (mv, index));
                    }
                }
                return Ok(Some(option));
            }
            ("first_chunk" | "last_chunk", []) if self.is_memory(&m.receiver) => {
                // `Some(&x[..N])` (as a `&[T; N]`) when the slice has `N` elements.
                let Some(k) = const_turbofish(m) else {
                    return err_at(&m.method, format!("cotan needs the length written here: `.{name}::<N>()`"));
                };
                let mv = self.memory(&m.receiver)?;
                let usize_t = STy::Known(Scalar::Usize);
                self.at(m.span());
                let n = self.emit_s(OpKind::Len(mv), usize_t);
                let zero = self.emit_s(OpKind::Const(Const::Int(0)), usize_t);
                let k = self.emit_s(OpKind::Const(Const::Int(k as i128)), usize_t);
                let some = self.emit_s(OpKind::Cmp(CmpOp::Ge, n, k), STy::Known(Scalar::Bool));
                // (Bounds that stay in the slice when there is no chunk: it is never read then.)
                let len = self.emit_s(OpKind::Select(some, k, zero), usize_t);
                let (start, end) = match name.as_str() {
                    "first_chunk" => (zero, len),
                    _ => (self.emit_s(OpKind::Binary(BinOp::Sub, n, len), usize_t), n),
                };
                let mut ty = self.mem_ty(mv).unwrap();
                ty.kind = MemKind::Array(const_turbofish(m).unwrap());
                ty.access = Access::Shared;
                let chunk = self.slice_of(mv, start, end, ty);
                return Ok(Some(Tree::Option(some, Box::new(Tree::Leaf(chunk)))));
            }
            ("split_first" | "split_last", []) if self.is_memory(&m.receiver) => {
                // `Some((element, rest))` when the slice is not empty.
                let mv = self.memory(&m.receiver)?;
                let usize_t = STy::Known(Scalar::Usize);
                self.at(m.span());
                let n = self.emit_s(OpKind::Len(mv), usize_t);
                let zero = self.emit_s(OpKind::Const(Const::Int(0)), usize_t);
                let one = self.emit_s(OpKind::Const(Const::Int(1)), usize_t);
                let some = self.emit_s(OpKind::Cmp(CmpOp::Gt, n, zero), STy::Known(Scalar::Bool));
                let k = self.emit_s(OpKind::Select(some, one, zero), usize_t);
                let n_k = self.emit_s(OpKind::Binary(BinOp::Sub, n, k), usize_t);
                let (index, start, end) = if name == "split_first" { (zero, k, n) } else { (n_k, zero, n_k) };
                // (The element is read only when there is one.)
                let elem = match self.guarded_load(some, mv, index) {
                    Tree::Option(_, payload) => *payload,
                    e => e,
                };
                let mut ty = self.mem_ty(mv).unwrap();
                ty.kind = MemKind::Slice;
                ty.access = if ty.is_writable() { Access::Mut } else { Access::Shared };
                let rest = self.slice_of(mv, start, end, ty);
                return Ok(Some(Tree::Option(some, Box::new(Tree::Tuple(vec![elem, Tree::Leaf(rest)])))));
            }
            ("copied" | "cloned", []) if !crate::chain::is_chain(&m.receiver) => {
                return match self.agg(&m.receiver)? {
                    // (Of an element reference: the element's value now, not its place.)
                    Tree::Option(some, payload) => match *payload {
                        Tree::Leaf(v) if self.elem_refs.contains_key(&v) => {
                            let (mem, index) = self.elem_refs[&v];
                            Ok(Some(self.guarded_load(some, mem, index)))
                        }
                        payload => Ok(Some(Tree::Option(some, Box::new(payload)))),
                    },
                    _ => err_at(&m.method, format!("cotan supports `.{name}()` on iterators and `Option`s")),
                };
            }
            (
                "unwrap" | "expect" | "unwrap_or" | "unwrap_or_default" | "is_some" | "is_none" | "is_ok" | "is_err"
                | "ok",
                _,
            ) => {
                return self.option_method(m, &name, &args).map(Some);
            }
            ("map" | "and_then", [_]) | ("map_or", [_, _]) | ("unwrap_or_else", [_])
                if !crate::chain::is_chain(&m.receiver)
                    && !self.is_memory(&m.receiver)
                    && !matches!(
                        crate::lower::strip_parens(&m.receiver),
                        syn::Expr::Array(_) | syn::Expr::Repeat(_)
                    ) =>
            {
                // The `match` each stands for: a closure runs only on a value.
                let opt @ Tree::Option(..) = self.agg(&m.receiver)? else {
                    return err_at(
                        &m.method,
                        format!("cotan supports `.{name}(..)` on `Option`s (and `map` on iterators and arrays)"),
                    );
                };
                return self.option_map(opt, &name, &args, m.span());
            }
            // An iterator kept as a value: cotan lowers chains where they are consumed.
            _ if crate::chain::is_chain_call(m) => {
                return err_at(
                    &m.method,
                    format!("cotan supports iterators in `for` loops and in chains that end in a consumer; it cannot keep the iterator `.{name}(..)` makes as a value: consume it where it is made ({})", crate::chain::SUPPORTED),
                );
            }
            // An iterator chain that does not end in a consumer cotan knows: blame the method.
            _ if crate::chain::is_chain(&m.receiver) => {
                return err_at(
                    &m.method,
                    format!("cotan does not support the iterator method `.{name}(..)`; {}", crate::chain::SUPPORTED),
                );
            }
            _ => {}
        }
        self.method_value(m, &name, &args).map(|v| v.map(Tree::Leaf))
    }

    /// `opt.map(f)`, `and_then(f)`, `map_or(d, f)`, `unwrap_or_else(g)`: the `match` each
    /// stands for, on the receiver lowered once.
    fn option_map(&mut self, scrutinee: Agg, name: &str, args: &[&syn::Expr], span: Span) -> syn::Result<Option<Agg>> {
        self.push_scope();
        let r = (|| {
            let f = args[args.len() - 1];
            let callee: syn::Expr = match crate::lower::strip_parens(f) {
                syn::Expr::Path(p) if p.path.get_ident().is_none_or(|i| self.lookup(&i.to_string()).is_none()) => {
                    syn::Expr::Path(p.clone())
                }
                f => {
                    let bind: syn::Stmt = syn::parse_quote_spanned!(span=> let __cotan_f = #f;);
                    self.stmt(&bind, false)?;
                    syn::parse_quote_spanned!(span=> __cotan_f)
                }
            };
            let arms: syn::ExprMatch = match name {
                "map" => syn::parse_quote_spanned!(span=> match () { Some(v) => Some(#callee(v)), None => None }),
                "and_then" => syn::parse_quote_spanned!(span=> match () { Some(v) => #callee(v), None => None }),
                "map_or" => {
                    // The default is evaluated first, as Rust passes it.
                    let d = args[0];
                    let bind: syn::Stmt = syn::parse_quote_spanned!(span=> let otherwise = #d;);
                    self.stmt(&bind, false)?;
                    syn::parse_quote_spanned!(span=> match () { Some(v) => #callee(v), None => otherwise })
                }
                _ => syn::parse_quote_spanned!(span=> match () { Some(v) => v, None => #callee() }),
            };
            self.match_agg(&scrutinee, &arms.arms)
        })();
        self.pop_scope();
        r
    }

    /// The methods of `Option` cotan knows.
    fn option_method(&mut self, m: &syn::ExprMethodCall, name: &str, args: &[&syn::Expr]) -> syn::Result<Agg> {
        let a = self.agg(&m.receiver)?;
        let Tree::Option(some, payload) = a else {
            return err_at(
                &m.method,
                format!("cotan supports `.{name}()` on `Option`s and `Result`s, and this is {}", a.describe()),
            );
        };
        self.at(m.span());
        let b = STy::Known(Scalar::Bool);
        match (name, args) {
            ("is_some" | "is_ok", []) => Ok(Tree::Leaf(some)),
            ("is_none" | "is_err", []) => Ok(Tree::Leaf(self.emit_s(OpKind::Unary(UnOp::Not, some), b))),
            // `r.ok()` of a `Result`: the same `Option`.
            ("ok", []) => Ok(Tree::Option(some, payload)),
            ("unwrap", []) | ("expect", [_]) => {
                let message = match args.first() {
                    Some(syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. })) => s.value(),
                    Some(e) => return err_at(e, "cotan needs the message of `expect` to be a string literal"),
                    None => "called `Option::unwrap()` on a `None` value".to_string(),
                };
                self.effect(OpKind::Assert { cond: some, message });
                Ok(*payload)
            }
            ("unwrap_or", [d]) => {
                let Tree::Leaf(p) = *payload else {
                    return err_at(&m.method, "cotan supports `unwrap_or` on `Option`s of numbers only");
                };
                let pt = self.scalar_sty(p, m.span())?;
                let (d, dt) = self.scalar(d)?;
                self.unify(pt, dt, m.span())?;
                Ok(Tree::Leaf(self.emit_s(OpKind::Select(some, p, d), pt)))
            }
            ("unwrap_or_default", []) => {
                let Tree::Leaf(p) = *payload else {
                    return err_at(&m.method, "cotan supports `unwrap_or_default` on `Option`s of numbers only");
                };
                let pt = self.scalar_sty(p, m.span())?;
                let zero = self.pending_zero(pt);
                Ok(Tree::Leaf(self.emit_s(OpKind::Select(some, p, zero), pt)))
            }
            _ => err_at(&m.method, format!("`.{name}()` takes other arguments")),
        }
    }

    fn method_value(&mut self, m: &syn::ExprMethodCall, name: &str, args: &[&syn::Expr]) -> syn::Result<Option<Value>> {
        let name = name.to_string();
        let args = args.to_vec();
        match name.as_str() {
            "len" if args.is_empty() => {
                let mv = self.memory(&m.receiver)?;
                self.at(m.span());
                return Ok(Some(self.emit_s(OpKind::Len(mv), STy::Known(Scalar::Usize))));
            }
            "fill" if args.len() == 1 => {
                let mv = self.memory(&m.receiver)?;
                let (v, t) = self.scalar(args[0])?;
                let elem = self.elem_sty(mv);
                self.unify(elem, t, args[0].span())?;
                self.at(m.span());
                self.effect(OpKind::Fill { mem: mv, value: v, resize: None });
                return Ok(None);
            }
            "swap" if args.len() == 2 => {
                let mv = self.memory(&m.receiver)?;
                let i = self.index_value(args[0])?;
                let j = self.index_value(args[1])?;
                let elem = self.elem_sty(mv);
                self.at(m.span());
                let a = self.emit_s(OpKind::Load { mem: mv, index: Some(i) }, elem);
                let b = self.emit_s(OpKind::Load { mem: mv, index: Some(j) }, elem);
                self.effect(OpKind::Store { mem: mv, index: Some(i), value: b });
                self.effect(OpKind::Store { mem: mv, index: Some(j), value: a });
                return Ok(None);
            }
            "reverse" if args.is_empty() => {
                let mv = self.memory(&m.receiver)?;
                if self.is_nested(mv) || !self.mem_ty(mv).unwrap().is_writable() {
                    return err_at(&m.receiver, "cotan reverses buffers of numbers it may write (`x.reverse()` of `&mut [f64]` or a local array); reverse rows with a loop of `swap`s");
                }
                let elem = self.elem_sty(mv);
                let usize_t = STy::Known(Scalar::Usize);
                self.at(m.span());
                let n = self.emit_s(OpKind::Len(mv), usize_t);
                let (two, one) = (self.usize_const(2), self.usize_const(1));
                let half = self.emit_s(OpKind::Binary(BinOp::Div, n, two), usize_t);
                let last = self.emit_s(OpKind::Binary(BinOp::Sub, n, one), usize_t);
                self.index_loop(half, |l, i| {
                    let j = l.emit_s(OpKind::Binary(BinOp::Sub, last, i), usize_t);
                    let a = l.emit_s(OpKind::Load { mem: mv, index: Some(i) }, elem);
                    let b = l.emit_s(OpKind::Load { mem: mv, index: Some(j) }, elem);
                    l.effect(OpKind::Store { mem: mv, index: Some(i), value: b });
                    l.effect(OpKind::Store { mem: mv, index: Some(j), value: a });
                });
                return Ok(None);
            }
            "remove" | "swap_remove" | "insert"
                if self.is_memory(&m.receiver) && args.len() == if name == "insert" { 2 } else { 1 } =>
            {
                return self.shift(m, &name);
            }
            "sort_by" | "sort_unstable_by" if args.len() == 1 && self.is_memory(&m.receiver) => {
                self.sort_by(m)?;
                return Ok(None);
            }
            "clear" | "truncate" | "resize" | "extend_from_slice" | "extend"
                if self.is_memory(&m.receiver)
                    && matches!(
                        (name.as_str(), args.len()),
                        ("clear", 0) | ("truncate" | "extend_from_slice" | "extend", 1) | ("resize", 2)
                    ) =>
            {
                self.vec_method(m, &name)?;
                return Ok(None);
            }
            "push" if args.len() == 1 => {
                let mv = self.memory(&m.receiver)?;
                let mt = self.mem_ty(mv).unwrap();
                if mt.kind != MemKind::Vec || mt.access != Access::Owned {
                    return err_at(
                        &m.receiver,
                        "cotan supports `push` on local vectors only (`let mut v = Vec::new();`)",
                    );
                }
                if self.is_memory(args[0]) || self.is_nested(mv) {
                    return err_at(
                        args[0],
                        "cotan pushes numbers onto vectors, not rows onto a vector of vectors; make it with its rows (`let mut m = vec![vec![0.0; cols]; rows];`, or `vec![[0.0; 2]; rows]` for rows that are arrays) and write `m[i][j]`",
                    );
                }
                if let syn::Expr::Tuple(t) = crate::lower::strip_parens(args[0]) {
                    let parts: Vec<String> = (0..t.elems.len()).map(|k| format!("v{k}.push(..)")).collect();
                    return err_at(
                        args[0],
                        format!("cotan pushes numbers onto vectors, not tuples (a vector of tuples grows a buffer of records, which cotan does not make); keep one vector per part (`{}`) and read them at one index", parts.join("; ")),
                    );
                }
                let (v, t) = self.scalar(args[0])?;
                let elem = self.elem_sty(mv);
                self.unify(elem, t, args[0].span())?;
                self.at(m.span());
                self.emit_s(OpKind::VecPush { mem: mv, value: v }, STy::Known(Scalar::Usize));
                return Ok(None);
            }
            "copy_from_slice" if args.len() == 1 => {
                let dst = self.memory(&m.receiver)?;
                let src = self.memory(args[0])?;
                let (de, se) = (self.elem_sty(dst), self.elem_sty(src));
                self.unify(de, se, m.span())?;
                if !self.mem_ty(dst).unwrap().is_writable() {
                    return err_at(&m.receiver, "cannot write through a shared reference; take `&mut`");
                }
                self.at(m.span());
                let usize_t = STy::Known(Scalar::Usize);
                let n = self.emit_s(OpKind::Len(dst), usize_t);
                let k = self.emit_s(OpKind::Len(src), usize_t);
                let same = self.emit_s(OpKind::Cmp(CmpOp::Eq, n, k), STy::Known(Scalar::Bool));
                let message = "source slice length does not match destination slice length".to_string();
                self.effect(OpKind::Assert { cond: same, message });
                match (self.mem_ty(dst).unwrap().kind, self.mem_ty(src).unwrap().kind) {
                    // Rows that are arrays of one length (`&mut [[f64; 3]]`), row by row.
                    (MemKind::Nested(_, Dim::Array(a), None), MemKind::Nested(_, Dim::Array(b), None)) if a == b => {
                        self.copy_rows(dst, src, n)
                    }
                    (MemKind::Nested(..), _) | (_, MemKind::Nested(..)) => {
                        return err_at(m, "cotan copies slices of numbers and of arrays of one length with `copy_from_slice`; copy these element by element");
                    }
                    _ => self.copy_loop(dst, src, n),
                }
                return Ok(None);
            }
            "to_vec" | "clone" | "to_owned" if args.is_empty() && self.is_memory(&m.receiver) => {
                let src = self.memory(&m.receiver)?;
                return self.copy_of(src, m.span()).map(Some);
            }
            "clone" | "to_owned" if args.is_empty() => {
                let (v, _) = self.scalar(&m.receiver)?;
                return Ok(Some(self.elem_copy(v)));
            }
            "is_empty" if args.is_empty() && self.is_memory(&m.receiver) => {
                let mv = self.memory(&m.receiver)?;
                let usize_t = STy::Known(Scalar::Usize);
                let n = self.emit_s(OpKind::Len(mv), usize_t);
                let zero = self.emit_s(OpKind::Const(Const::Int(0)), usize_t);
                return Ok(Some(self.emit_s(OpKind::Cmp(CmpOp::Eq, n, zero), STy::Known(Scalar::Bool))));
            }
            "iter" | "iter_mut" | "into_iter" | "chunks" | "windows" => {
                return err_at(
                    &m.method,
                    format!("cotan supports iterators in `for` loops and in chains that end in a consumer; it cannot keep `.{name}()` in a variable ({})", crate::chain::SUPPORTED),
                );
            }
            "map"
                if m.args.len() == 1
                    && (self.is_memory(&m.receiver)
                        || matches!(
                            crate::lower::strip_parens(&m.receiver),
                            syn::Expr::Array(_) | syn::Expr::Repeat(_)
                        )) =>
            {
                return self.array_map(m).map(Some);
            }
            _ if self.is_memory(&m.receiver) => {
                return err_at(
                    &m.method,
                    format!("cotan does not support the method `.{name}()` on slices and vectors; supported: len, is_empty, first, last, get, first_mut, last_mut, get_mut, iter, iter_mut, fill, swap, reverse, copy_from_slice, to_vec, push, pop, insert, remove, swap_remove, clear, truncate, resize, extend, extend_from_slice, sort_by, sort_unstable_by, chunks, windows, split_at, as_chunks, map (arrays), and indexing; a method that gives an index, a count or a bool (`partition_point`, `binary_search_by`, `contains`) can be called from a helper of your own marked `#[cotan::zero_derivative]`"),
                );
            }
            _ => {}
        }
        let recv = m.receiver.as_ref();
        self.numeric_method(&name, recv, &args, m.method.span()).map(Some)
    }

    /// Calls of local closures, of the std functions cotan knows (`f64::sin(x)`,
    /// `f64::max(a, b)`, `usize::min(i, j)`, `Vec::new()`, `Some(x)`, `std::mem::swap`,
    /// `std::hint::black_box`), and of the user's functions.
    pub(crate) fn call(&mut self, c: &syn::ExprCall) -> syn::Result<Option<Agg>> {
        if let Some(id) = self.closure_called(c) {
            // (What the arguments lend `&mut` is read back after the body, as after a call.)
            let lent = self.lent.len();
            let args = c.args.iter().map(|a| self.passed(a)).collect::<syn::Result<Vec<_>>>()?;
            let r = self.call_closure_def(id, args, c.span())?;
            self.return_lent(lent, c.span());
            return Ok(r);
        }
        let leaf = |v: syn::Result<Value>| v.map(|v| Some(Tree::Leaf(v)));
        if let Some(plain) = unqualified(c) {
            // `<T as Trait>::f(args)` is `T::f(args)`: the impl of the trait for `T`.
            return self.call(&plain);
        }
        if let syn::Expr::Path(p) = &*c.func {
            if crate::matching::is_variant_path(&p.path) {
                return err_at(c, "cotan does not build enum values with fields in differentiated code; pass the value as a parameter (`Const`) and match on it");
            }
            match (std_fn(p).as_deref(), c.args.len()) {
                (Some("Some"), 1) => {
                    let v = self.agg(&c.args[0])?;
                    let v = self.own_arrays(&c.args[0], v, false)?;
                    let some = self.bool_const(true);
                    return Ok(Some(Tree::Option(some, Box::new(v))));
                }
                (Some("black_box"), 1) => return self.agg_opt(&c.args[0]),
                // `Err(e)`: a `Result` is held as an `Option` of its `Ok` value, and the
                // error itself is not kept (nor made).
                (Some("Err"), 1) => return Ok(Some(self.none())),
                (Some("swap"), 2) => return self.mem_swap(&c.args[0], &c.args[1]).map(|_| None),
                (Some(name), _) if POINTER_FNS.contains(&name) => return self.pointer_fn(name, c),
                _ => {}
            }
            let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
            match (segs.iter().map(|s| s.as_str()).collect::<Vec<_>>().as_slice(), c.args.len()) {
                (["Vec", "new"], 0) => return leaf(self.empty_vec(c.span())),
                (["Vec", "with_capacity"], 1) => {
                    // The capacity is evaluated for its effects and types; the buffer grows as needed.
                    let (_, t) = self.scalar(&c.args[0])?;
                    self.unify(STy::Known(Scalar::Usize), t, c.args[0].span())?;
                    return leaf(self.empty_vec(c.span()));
                }
                _ => {}
            }
            if let [ty, name] = segs.as_slice() {
                if let (Some(s), "from", 1) = (Scalar::from_name(ty), name.as_str(), c.args.len()) {
                    // `f64::from(n)`: a lossless conversion, an `as` cast here.
                    let (v, _) = self.scalar(&c.args[0])?;
                    return leaf(Ok(self.emit_s(OpKind::Cast(v), STy::Known(s))));
                }
                if let Some(s) = Scalar::from_name(ty) {
                    let args: Vec<&syn::Expr> = c.args.iter().collect();
                    let Some((first, rest)) = args.split_first() else {
                        return err_at(&c, "expected arguments");
                    };
                    let v = self.numeric_method(name, first, rest, c.span())?;
                    let t = self.scalar_sty(v, c.span())?;
                    if name != "is_nan" {
                        self.unify(STy::Known(s), t, c.span())?;
                    }
                    return leaf(Ok(v));
                }
            }
        }
        if let syn::Expr::Path(p) = &*c.func {
            let args: Vec<&syn::Expr> = c.args.iter().collect();
            if let Some(inl) = self.inlined_for(&p.path, &args) {
                return self.inline_call(inl?, &args, crate::const_generic::turbofish(&p.path), c.span());
            }
        }
        if let Some(zeros) = self.derived_default(c) {
            return Ok(Some(zeros));
        }
        if let Some(r) = self.struct_constructor(c) {
            return r.map(Some);
        }
        if let syn::Expr::Path(p) = &*c.func {
            if let Some(shape) = self.flat_shape(&p.path) {
                let args: Vec<&syn::Expr> = c.args.iter().collect();
                return self.flat_call(&p.path, &args, &shape, c.span());
            }
            // A function of the crate returning a tuple, as a tuple value.
            if let Some(n) = self.env.callee(&p.path).map(|s| s.results).filter(|n| *n > 1) {
                let vals = self.user_call_n(c, n)?;
                return Ok(Some(Tree::Tuple(vals.into_iter().map(Tree::Leaf).collect())));
            }
        }
        if self.is_user_call(c) {
            return leaf(self.user_call(c, true).map(|v| v.expect("a call lowered for its value has one")));
        }
        let callee = compact(&quote::ToTokens::to_token_stream(&c.func).to_string());
        err_at(
            &c.func,
            format!("cotan does not differentiate through `{callee}`; write it with the supported operations, or call a function of your own marked `#[cotan::custom_derivative(...)]` or `#[cotan::zero_derivative]` that does it"),
        )
    }

    /// A call of a function of the user's crate, which must carry `#[cotan::differentiable]`
    /// (or an autodiff attribute, or a custom derivative): its derivatives are generated
    /// beside it, and the derivative code calls them.
    pub(crate) fn user_call(&mut self, c: &syn::ExprCall, wants_value: bool) -> syn::Result<Option<Value>> {
        Ok(self.user_call_n(c, usize::from(wants_value))?.pop())
    }

    /// A user call with `n` results (a tuple when `n > 1`).
    pub(crate) fn user_call_n(&mut self, c: &syn::ExprCall, n: usize) -> syn::Result<Vec<Value>> {
        let syn::Expr::Path(p) = &*c.func else { unreachable!("checked by is_user_call") };
        let args: Vec<&syn::Expr> = c.args.iter().collect();
        if let Some(inl) = self.inlined_for(&p.path, &args) {
            return match (self.inline_call(inl?, &args, crate::const_generic::turbofish(&p.path), c.span())?, n) {
                (_, 0) => Ok(vec![]),
                (Some(Tree::Leaf(v)), 1) => Ok(vec![v]),
                (Some(Tree::Tuple(es)), n) if es.len() == n && es.iter().all(|e| matches!(e, Tree::Leaf(_))) => Ok(es
                    .into_iter()
                    .map(|e| match e {
                        Tree::Leaf(v) => v,
                        _ => unreachable!("checked: leaves"),
                    })
                    .collect()),
                _ => err_at(c, format!("expected {n} value(s) from this call")),
            };
        }
        let shape = self.flat_shape(&p.path);
        // The results have the callee's number types (`g(x).powi(2)` is an `f32` if `g`
        // returns one, not a float of undecided type).
        let types = self.env.callee(&p.path).and_then(|s| s.ret_scalars).filter(|t| t.len() == n);
        self.call_path(&p.path, &args, shape.as_ref(), n, types.as_deref(), c.span())
    }

    /// A call of the crate's function `path` with `n` results, of `types` where known;
    /// `shape` says which arguments go field by field.
    pub(crate) fn call_path(
        &mut self,
        path: &syn::Path,
        args: &[&syn::Expr],
        shape: Option<&crate::env::CalleeShape>,
        n: usize,
        types: Option<&[Scalar]>,
        span: Span,
    ) -> syn::Result<Vec<Value>> {
        let written = quote::ToTokens::to_token_stream(path).to_string().replace(' ', "");
        let callee = self.env.home_path(path).unwrap_or(written);
        let lent = self.lent.len();
        let args = match shape {
            Some(s) => self.flat_args(args, s, span)?,
            None => {
                // (A known signature without by-value arrays: its arrays are references.)
                let known = self.env.callee(path);
                let takes_refs = known.is_some();
                let mut vals = vec![];
                for (k, a) in args.iter().enumerate() {
                    let arg = self.call_arg_to(a, takes_refs)?;
                    let param = known.as_ref().and_then(|s| s.param_scalars.get(k).copied().flatten());
                    self.takes_param_type(arg.0, param, a.span())?;
                    vals.push(arg);
                }
                vals
            }
        };
        self.check_pointer_args(&args, span)?;
        self.at(span);
        let outs: Vec<(cotan_ir::Var, STy)> = (0..n)
            .map(|k| {
                let t = match types {
                    Some(ts) => STy::Known(ts[k]),
                    None => self.infer.fresh(Class::Any),
                };
                let zero = self.pending_zero(t);
                let name = format!("{}_result", path.segments.last().unwrap().ident);
                let var = self.new_var(&name, t);
                self.effect(OpKind::DeclVar { var, init: zero });
                (var, t)
            })
            .collect();
        self.effect(OpKind::Call {
            callee: callee.clone(),
            args,
            outs: outs.iter().map(|o| o.0).collect(),
            tape: false,
        });
        self.return_lent(lent, span);
        let results: Vec<Value> = outs.into_iter().map(|(var, t)| self.emit_s(OpKind::GetVar(var), t)).collect();
        for &r in &results {
            self.call_results.insert(r, (callee.clone(), span));
        }
        Ok(results)
    }

    /// An argument of a call: a number, or memory with whether it is passed as `&mut`.
    pub(crate) fn call_arg(&mut self, a: &syn::Expr) -> syn::Result<(Value, bool)> {
        self.call_arg_to(a, false)
    }

    /// `call_arg` for a callee whose signature is known to take its arrays by reference
    /// (`takes_refs`): a name holding an array there is a reference in Rust (a closure's
    /// `y: &[f64; 2]` bound to the caller's `&s`), which the message then says.
    pub(crate) fn call_arg_to(&mut self, a: &syn::Expr, takes_refs: bool) -> syn::Result<(Value, bool)> {
        let (inner, by_mut) = match a {
            syn::Expr::Reference(r) => (&*r.expr, r.mutability.is_some()),
            e => (e, false),
        };
        if let syn::Expr::Reference(_) = a {
            // A local struct or number, or an element of a buffer, lent (`lend.rs`).
            let lent = match crate::lower::strip_parens(inner) {
                syn::Expr::Index(ix) => self.lend_element(ix, by_mut, a.span()),
                e @ syn::Expr::Path(p) => p
                    .path
                    .get_ident()
                    .and_then(|n| self.lend_struct(&n.to_string(), by_mut, a.span()))
                    .or_else(|| self.lend_number(e, by_mut, a.span())),
                // A struct field of a local struct (`&mut b.pos`).
                e @ syn::Expr::Field(_) => {
                    self.lend_struct_field(e, by_mut, a.span()).or_else(|| self.lend_number(e, by_mut, a.span()))
                }
                e => self.lend_number(e, by_mut, a.span()),
            };
            if let Some(lent) = lent {
                return lent;
            }
        }
        if let syn::Expr::Reference(_) = a {
            if let syn::Expr::Reference(r) = a {
                if self.is_pointer_deref(&r.expr) {
                    // `&mut *p`: the number (or array) a pointer points at, lent.
                    let v = self.ref_of_deref(r)?.expect("checked: a pointer's deref");
                    return Ok((v, by_mut));
                }
            }
            if let syn::Expr::Unary(syn::ExprUnary { op: syn::UnOp::Deref(_), expr, .. }) = inner {
                // `&mut *out`: a reborrow of a `&mut f64` parameter.
                let v = self.expr(expr)?;
                return Ok((v, by_mut));
            }
            if crate::slices::is_range_index(inner) {
                let access = if by_mut { Access::Mut } else { Access::Shared };
                return Ok((self.sub_slice(inner, Some(access))?, by_mut));
            }
            let v = self.expr(inner)?;
            if self.mem_ty(v).is_none() {
                let msg = if by_mut {
                    "cotan lends a call locals, their fields and elements of buffers by `&mut`, not the value of an expression; bind it to a `let mut` first and lend that"
                } else {
                    "cotan lends a call locals, their fields and elements of buffers by `&`, not the value of an expression; bind it to a `let` first and lend that"
                };
                return err_at(a, msg);
            }
            return Ok((v, by_mut));
        }
        if let Some(Binding::Place(mem, index)) = ident_of(a).and_then(|n| self.lookup(&n)) {
            // `g(x)` of `x` bound to an element by `&mut` (`iter_mut`, `get_mut`, `&mut v[i]`).
            return Ok(self.lend_place(mem, index, a.span()));
        }
        let v = match self.agg(a)? {
            Tree::Leaf(v) => v,
            t => {
                return err_at(
                    a,
                    format!(
                        "cotan cannot pass {} to a function yet; pass its parts as separate arguments",
                        t.describe()
                    ),
                )
            }
        };
        if let Some(&(mem, index)) = self.elem_refs.get(&v) {
            // `g(v.last_mut().unwrap())`: the element, lent.
            return Ok(self.lend_place(mem, index, a.span()));
        }
        if self.mem_ty(v).is_some_and(|m| matches!(m.kind, MemKind::Record(_)) && m.access == Access::Owned) {
            return err_at(a, "cotan passes structs to calls by reference; let the callee take `&S` and pass `&s`");
        }
        let owned = self
            .mem_ty(v)
            .is_some_and(|m| m.access == Access::Owned && matches!(m.kind, MemKind::Array(_) | MemKind::Vec));
        if let (true, Some(&by_mut)) = (owned, self.lent_params.get(&v)) {
            // A reference parameter of the function lowered here, passed on (`g(y)`).
            return Ok((v, by_mut));
        }
        if let (true, true, Some(name)) = (owned, takes_refs, ident_of(a)) {
            return err_at(
                a,
                format!("cotan cannot tell whether `{name}` is a reference here (a closure's or helper's parameter bound to a local array); copy it and pass the copy: `let c = *{name};` then `&c`"),
            );
        }
        if owned {
            return err_at(a, "cotan passes arrays and vectors to calls by reference; let the callee take `&[f64; N]` (or `&[f64]`) and pass `&a`");
        }
        match self.mem_ty(v) {
            Some(m) => Ok((v, m.access == Access::Mut)),
            None => {
                let v = self.auto_load(v);
                Ok((v, false))
            }
        }
    }

    /// A method of the number types: the float functions, and `abs`/`min`/`max` on integers.
    fn numeric_method(&mut self, name: &str, recv: &syn::Expr, args: &[&syn::Expr], span: Span) -> syn::Result<Value> {
        if let Some(Binding::Agg(Tree::Enum(_))) = ident_of(recv).and_then(|n| self.lookup(&n)) {
            let r = quote::ToTokens::to_token_stream(recv);
            return err_at(
                recv,
                format!("cotan calls methods of fieldless enum values made in a function (or passed on from one) through the enum's path: write `EnumType::{name}(&{r}, ..)`"),
            );
        }
        let (x, t) = self.scalar(recv)?;
        let mut vals = vec![x];
        for (k, a) in args.iter().enumerate() {
            let (v, at) = self.scalar(a)?;
            if name == "powi" && k == 0 {
                self.unify(STy::Known(Scalar::I32), at, a.span())?;
            } else {
                self.unify(t, at, a.span())?;
            }
            vals.push(v);
        }
        self.at(span);
        let float_method = MathFn::from_name(name).is_some()
            || matches!(name, "is_nan" | "is_finite" | "is_infinite" | "is_sign_negative" | "is_sign_positive");
        if float_method && matches!(self.infer.current(t), STy::Flex(_)) && self.infer.class_of(t).is_none() {
            // `y.exp()` on a value whose type nothing else fixes (a field, a call's result).
            let f = self.infer.fresh(Class::Float);
            self.unify(t, f, span)?;
        }
        match self.infer.class_of(t) {
            Some(Class::Float) => {
                if let Some(v) = self.float_predicate(name, x, t, args.len()) {
                    return Ok(v);
                }
                match (name, vals.as_slice()) {
                    // As std computes them: a product by a constant; `x % y`, then `+ |y|`
                    // when negative; `x - x.trunc()`; `±|x|` as the sign of `y`.
                    ("to_degrees" | "to_radians", [x]) => {
                        let k = if name == "to_degrees" { 180.0 / std::f64::consts::PI } else { std::f64::consts::PI / 180.0 };
                        let c = self.emit_s(OpKind::Const(Const::Float(k)), t);
                        return Ok(self.emit_s(OpKind::Binary(BinOp::Mul, *x, c), t));
                    }
                    ("rem_euclid", [x, y]) => {
                        let r = self.emit_s(OpKind::Binary(BinOp::Rem, *x, *y), t);
                        let zero = self.zero(t);
                        let negative = self.emit_s(OpKind::Cmp(CmpOp::Lt, r, zero), STy::Known(Scalar::Bool));
                        let ay = self.emit_s(OpKind::Math(MathFn::Abs, vec![*y]), t);
                        let up = self.emit_s(OpKind::Binary(BinOp::Add, r, ay), t);
                        return Ok(self.emit_s(OpKind::Select(negative, up, r), t));
                    }
                    ("fract", [x]) => {
                        let t_x = self.emit_s(OpKind::Math(MathFn::Trunc, vec![*x]), t);
                        return Ok(self.emit_s(OpKind::Binary(BinOp::Sub, *x, t_x), t));
                    }
                    ("copysign", [x, y]) => {
                        let negative = self.float_predicate("is_sign_negative", *y, t, 0).expect("a float predicate");
                        let ax = self.emit_s(OpKind::Math(MathFn::Abs, vec![*x]), t);
                        let minus = self.emit_s(OpKind::Unary(UnOp::Neg, ax), t);
                        return Ok(self.emit_s(OpKind::Select(negative, minus, ax), t));
                    }
                    _ => {}
                }
                let Some(f) = MathFn::from_name(name) else {
                    return err(span, format!("cotan does not know how to differentiate the float method `.{name}()`; write it with the supported functions, or move it into a function of your own marked `#[cotan::custom_derivative(...)]` (or `#[cotan::zero_derivative]`)"));
                };
                if f.arity() != vals.len() {
                    return err(span, format!("`{name}` takes {} argument(s)", f.arity() - 1));
                }
                Ok(self.emit_s(OpKind::Math(f, vals), t))
            }
            Some(Class::Int) => self.int_method(name, &vals, t, span),
            _ => err(span, format!("cotan cannot differentiate through the method `.{name}()`; mark the method `#[cotan::differentiable]` if it is yours, or call it from a function of your own marked `#[cotan::custom_derivative(...)]` (or `#[cotan::zero_derivative]`)")),
        }
    }

    /// `is_nan`, `is_finite`, `is_infinite`, `is_sign_negative`, `is_sign_positive`: tests
    /// that need no derivative, written with comparisons.
    fn float_predicate(&mut self, name: &str, x: Value, t: STy, n_args: usize) -> Option<Value> {
        if n_args != 0 {
            return None;
        }
        let b = STy::Known(Scalar::Bool);
        let zero = self.emit_s(OpKind::Const(Const::Float(0.0)), t);
        Some(match name {
            "is_nan" => self.emit_s(OpKind::Cmp(CmpOp::Ne, x, x), b),
            // x - x is 0 for finite x and NaN for infinities and NaN.
            "is_finite" => {
                let d = self.emit_s(OpKind::Binary(BinOp::Sub, x, x), t);
                self.emit_s(OpKind::Cmp(CmpOp::Eq, d, zero), b)
            }
            "is_infinite" => {
                let a = self.emit_s(OpKind::Math(MathFn::Abs, vec![x]), t);
                let inf = self.emit_s(OpKind::Const(Const::Float(f64::INFINITY)), t);
                self.emit_s(OpKind::Cmp(CmpOp::Eq, a, inf), b)
            }
            "is_sign_negative" | "is_sign_positive" => {
                let s = self.emit_s(OpKind::Math(MathFn::Signum, vec![x]), t);
                let op = if name == "is_sign_negative" { CmpOp::Lt } else { CmpOp::Gt };
                self.emit_s(OpKind::Cmp(op, s, zero), b)
            }
            _ => return None,
        })
    }

    fn int_method(&mut self, name: &str, vals: &[Value], t: STy, span: Span) -> syn::Result<Value> {
        let b = STy::Known(Scalar::Bool);
        let unsigned = matches!(self.infer.current(t), STy::Known(s) if s.is_int() && !s.is_signed());
        match (name, vals) {
            ("min", [a, c]) => {
                let lt = self.emit_s(OpKind::Cmp(CmpOp::Lt, *c, *a), b);
                Ok(self.emit_s(OpKind::Select(lt, *c, *a), t))
            }
            ("max", [a, c]) => {
                let lt = self.emit_s(OpKind::Cmp(CmpOp::Lt, *c, *a), b);
                Ok(self.emit_s(OpKind::Select(lt, *a, *c), t))
            }
            ("abs", [a]) => {
                let zero = self.zero(t);
                let neg = self.emit_s(OpKind::Cmp(CmpOp::Lt, *a, zero), b);
                let minus = self.emit_s(OpKind::Unary(UnOp::Neg, *a), t);
                Ok(self.emit_s(OpKind::Select(neg, minus, *a), t))
            }
            ("clamp", [a, lo, hi]) => {
                let low = self.int_method("max", &[*a, *lo], t, span)?;
                self.int_method("min", &[low, *hi], t, span)
            }
            // (Of signed integers it gives the unsigned type: not lowered.)
            ("abs_diff", [a, c]) if unsigned => {
                let gt = self.emit_s(OpKind::Cmp(CmpOp::Gt, *a, *c), b);
                let (ac, ca) = (
                    self.emit_s(OpKind::Binary(BinOp::Sub, *a, *c), t),
                    self.emit_s(OpKind::Binary(BinOp::Sub, *c, *a), t),
                );
                Ok(self.emit_s(OpKind::Select(gt, ac, ca), t))
            }
            // Of unsigned integers, whose saturation is at 0 (`i.saturating_sub(1)`).
            ("saturating_sub", [a, c]) if unsigned => {
                let gt = self.emit_s(OpKind::Cmp(CmpOp::Gt, *a, *c), b);
                let diff = self.emit_s(OpKind::Binary(BinOp::Sub, *a, *c), t);
                let zero = self.zero(t);
                Ok(self.emit_s(OpKind::Select(gt, diff, zero), t))
            }
            // `a.rem_euclid(n)`: the remainder made non-negative (a periodic cell index).
            ("rem_euclid", [a, n]) => {
                let r = self.emit_s(OpKind::Binary(BinOp::Rem, *a, *n), t);
                let zero = self.zero(t);
                let neg = self.emit_s(OpKind::Cmp(CmpOp::Lt, r, zero), b);
                let size = self.int_method("abs", &[*n], t, span)?;
                let up = self.emit_s(OpKind::Binary(BinOp::Add, r, size), t);
                Ok(self.emit_s(OpKind::Select(neg, up, r), t))
            }
            _ => err(span, format!("cotan does not support the integer method `{name}`; write it with arithmetic")),
        }
    }

    /// `[init; N]`.
    fn repeat(&mut self, r: &syn::ExprRepeat) -> syn::Result<Value> {
        let Some(n) = crate::signature::array_len(&r.len) else {
            return err_at(&r.len, "cotan needs the length of `[x; N]` to be a literal");
        };
        if self.makes_row(&r.expr) || self.is_memory(&r.expr) {
            let row = self.memory(&r.expr)?;
            let len = self.emit_s(OpKind::Const(Const::Int(n as i128)), STy::Known(Scalar::Usize));
            return self.repeated_rows(&r.expr, row, len, cotan_ir::Dim::Array(n), r.span());
        }
        let (init, t) = self.scalar(&r.expr)?;
        let len = self.emit_s(OpKind::Const(Const::Int(n as i128)), STy::Known(Scalar::Usize));
        self.alloc(init, t, len, MemKind::Array(n), r.span())
    }

    pub(crate) fn alloc(&mut self, init: Value, t: STy, len: Value, kind: MemKind, span: Span) -> syn::Result<Value> {
        // The element type may still be inferred; `finalize` writes it into the memory type.
        let elem = self.infer.resolve(t);
        self.at(span);
        let m = self.emit(OpKind::Alloc { len, init }, mem(elem, kind, Access::Owned));
        self.set_elem_sty(m, t);
        Ok(m)
    }

    /// `Vec::new()`, `Vec::with_capacity(n)`: an empty vector that grows by `push`.
    fn empty_vec(&mut self, span: Span) -> syn::Result<Value> {
        let t = self.infer.fresh(Class::Any);
        let init = self.pending_zero(t);
        let len = self.emit_s(OpKind::Const(Const::Int(0)), STy::Known(Scalar::Usize));
        self.alloc(init, t, len, MemKind::Vec, span)
    }

    /// A new `Vec` holding a copy of `src` (`to_vec`, `clone`).
    fn copy_of(&mut self, src: Value, span: Span) -> syn::Result<Value> {
        if let Some(MemKind::Records(..)) = self.mem_ty(src).map(|m| m.kind) {
            return self.copy_records(src, span);
        }
        if let Some(MemKind::Nested(_, Dim::Array(k), None)) = self.mem_ty(src).map(|m| m.kind) {
            // Rows that are arrays (`&[[f64; 3]]`, `Vec<[f64; 3]>`): a vector of copies of them.
            let t = self.elem_sty(src);
            let usize_t = STy::Known(Scalar::Usize);
            let n = self.emit_s(OpKind::Len(src), usize_t);
            let k_v = self.usize_const(k as i128);
            let dst = self.zero_rows(t, MemKind::Array(k), k_v, n, Dim::Vec, span)?;
            self.copy_rows(dst, src, n);
            return Ok(dst);
        }
        if self.is_nested(src) {
            return err(span, "cotan copies vectors of numbers and of arrays (`&[[f64; 3]]`), not of vectors; make the copy with `vec![vec![0.0; m]; n]` and a loop");
        }
        let t = self.elem_sty(src);
        let init = self.pending_zero(t);
        let len = self.emit_s(OpKind::Len(src), STy::Known(Scalar::Usize));
        let dst = self.alloc(init, t, len, MemKind::Vec, span)?;
        self.copy_loop(dst, src, len);
        Ok(dst)
    }

    /// `for i in 0..n { dst[i].copy_from_slice(&src[i]) }` of nested memory.
    pub(crate) fn copy_rows(&mut self, dst: Value, src: Value, n: Value) {
        let usize_t = STy::Known(Scalar::Usize);
        self.index_loop(n, |l, i| {
            let (to, from) = (l.row(dst, i), l.row(src, i));
            let k = l.emit_s(OpKind::Len(from), usize_t);
            l.copy_loop(to, from, k);
        });
    }

    /// A local array holding a copy of the array `src`.
    pub(crate) fn local_copy(&mut self, src: Value, span: Span) -> syn::Result<Value> {
        let kind = self.mem_ty(src).unwrap().kind;
        if let MemKind::Nested(outer, row, _) = kind {
            // (Rows of their own: an array of arrays row by row.)
            if !matches!((outer, row), (Dim::Array(_), Dim::Array(_))) {
                return err(span, "cotan copies arrays of numbers and arrays of arrays (`[[f64; 3]; 3]`) here, not vectors of rows; build the copy row by row");
            }
            return self.array_copy(src, span);
        }
        let t = self.elem_sty(src);
        let init = self.pending_zero(t);
        let len = self.emit_s(OpKind::Len(src), STy::Known(Scalar::Usize));
        let dst = self.alloc(init, t, len, kind, span)?;
        self.copy_loop(dst, src, len);
        Ok(dst)
    }

    /// `for i in 0..len { dst[i] = src[i] }`.
    pub(crate) fn copy_loop(&mut self, dst: Value, src: Value, len: Value) {
        let t = self.elem_sty(src);
        self.index_loop(len, |l, i| {
            let v = l.emit_s(OpKind::Load { mem: src, index: Some(i) }, t);
            l.effect(OpKind::Store { mem: dst, index: Some(i), value: v });
        });
    }

    /// `for i in 0..len { body(i) }`.
    pub(crate) fn index_loop(&mut self, len: Value, body: impl FnOnce(&mut Self, Value)) {
        let usize_t = STy::Known(Scalar::Usize);
        let zero = self.emit_s(OpKind::Const(Const::Int(0)), usize_t);
        let i = self.func.new_value(cotan_ir::Ty::USIZE, Some("i".into()), cotan_ir::SpanId::NONE);
        self.set_sty(i, usize_t);
        self.push_region();
        body(self, i);
        let body = self.pop_region();
        self.effect(OpKind::For {
            index: i,
            lo: zero,
            hi: len,
            step: None,
            inclusive: false,
            reverse: false,
            body,
            exit: None,
        });
    }

    /// `a.map(f)` of an array `[T; N]`: a new array of `f`'s results, element by element.
    fn array_map(&mut self, m: &syn::ExprMethodCall) -> syn::Result<Value> {
        let src = self.memory(&m.receiver)?;
        let span = m.span();
        let n = match self.mem_ty(src).map(|t| t.kind) {
            Some(MemKind::Array(n)) => n,
            _ => {
                return err_at(
                    &m.method,
                    "cotan maps arrays of numbers with `.map(..)`; for a slice or a vector write `.iter().map(..).collect::<Vec<_>>()`",
                )
            }
        };
        let f = self.callable(&m.args[0], 1)?;
        let t = self.infer.fresh(Class::Any);
        let zero = self.pending_zero(t);
        let len = self.emit_s(OpKind::Const(Const::Int(n as i128)), STy::Known(Scalar::Usize));
        let dst = self.alloc(zero, t, len, MemKind::Array(n), span)?;
        let et = self.elem_sty(src);
        let mut result = Ok(());
        self.index_loop(len, |l, i| {
            result = (|| {
                let v = l.emit_s(OpKind::Load { mem: src, index: Some(i) }, et);
                let Tree::Leaf(r) = l.call_value(&f, vec![crate::chain::Item::Val(v)], span)? else {
                    return err(span, "cotan maps arrays of numbers to numbers");
                };
                let rt = l.scalar_sty(r, span)?;
                l.unify(t, rt, span)?;
                l.effect(OpKind::Store { mem: dst, index: Some(i), value: r });
                Ok(())
            })();
        });
        result.map(|()| dst)
    }

    /// `[a, b, c]` or `vec![a, b, c]`.
    fn array_literal(&mut self, elems: Vec<&syn::Expr>, kind: MemKind, span: Span) -> syn::Result<Value> {
        if let Some(ty) = elems.first().and_then(|e| self.struct_type_of(e)) {
            // Structs of numbers (`[a, b, c]` of `V3`s): a buffer of structs.
            let dim = kind.dim().expect("an array or a vector");
            return self.struct_list(&ty, &elems, dim, span);
        }
        let mut vals = vec![];
        let mut t: Option<STy> = None;
        for e in &elems {
            if self.is_enumish(e) {
                return err_at(
                    e,
                    "cotan does not support arrays of enum values; choose the value where it is used, with a `match` on the index (`let a = match i { 0 => Act::A, _ => Act::B };`)",
                );
            }
            let (v, vt) = self.scalar(e)?;
            if let Some(t) = t {
                self.unify(t, vt, e.span())?;
            }
            t = Some(vt);
            vals.push(v);
        }
        let Some(t) = t else {
            return err(span, "cotan needs at least one element to know the element type; use `[0.0; N]`");
        };
        let len = self.emit_s(OpKind::Const(Const::Int(vals.len() as i128)), STy::Known(Scalar::Usize));
        let m = self.alloc(vals[0], t, len, kind, span)?;
        for (k, v) in vals.into_iter().enumerate().skip(1) {
            let i = self.emit_s(OpKind::Const(Const::Int(k as i128)), STy::Known(Scalar::Usize));
            self.effect(OpKind::Store { mem: m, index: Some(i), value: v });
        }
        Ok(m)
    }

    fn expr_macro(&mut self, mac: &syn::Macro) -> syn::Result<Option<Value>> {
        let name = mac.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
        if name == "vec" {
            let repeat = |input: syn::parse::ParseStream| -> syn::Result<(syn::Expr, syn::Expr)> {
                let init: syn::Expr = input.parse()?;
                input.parse::<syn::Token![;]>()?;
                Ok((init, input.parse()?))
            };
            if let Ok((init_e, len_e)) = mac.parse_body_with(repeat) {
                if self.makes_row(&init_e) || self.is_memory(&init_e) {
                    let row = self.memory(&init_e)?;
                    let (len, lt) = self.scalar(&len_e)?;
                    self.unify(STy::Known(Scalar::Usize), lt, len_e.span())?;
                    return self.repeated_rows(&init_e, row, len, cotan_ir::Dim::Vec, mac.span()).map(Some);
                }
                let init = self.agg(&init_e)?;
                let (len, lt) = self.scalar(&len_e)?;
                self.unify(STy::Known(Scalar::Usize), lt, len_e.span())?;
                if let Tree::Struct(ty, _) = &init {
                    // `vec![V3::default(); n]`: a vector of structs.
                    return self.repeated_structs(&ty.clone(), &init, len, mac.span()).map(Some);
                }
                let init = self.single_value(Some(init), init_e.span())?.expect("a value");
                let init = self.auto_load(init);
                let t = self.scalar_sty(init, init_e.span())?;
                return self.alloc(init, t, len, MemKind::Vec, mac.span()).map(Some);
            }
            let elems = mac.parse_body_with(Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated)?;
            if elems.is_empty() {
                return self.empty_vec(mac.span()).map(Some);
            }
            if self.is_rows_literal(elems.iter()) {
                return self.rows_literal(elems.iter(), true, mac.span()).map(Some);
            }
            return self.array_literal(elems.iter().collect(), MemKind::Vec, mac.span()).map(Some);
        }
        if name == "matches" {
            return self.matches_macro(mac).map(Some);
        }
        if crate::print::is_print(&name) {
            return self.print_macro(mac, &name);
        }
        statement_macro(self, mac)?;
        Ok(None)
    }
}

/// The panic a macro of the `panic!` family raises, or `None` for other macros.
pub(crate) fn panic_message(mac: &syn::Macro) -> Option<String> {
    let name = mac.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
    let prefix = match name.as_str() {
        "panic" => "",
        "unimplemented" => "not implemented",
        "todo" => "not yet implemented",
        "unreachable" => "internal error: entered unreachable code",
        _ => return None,
    };
    // The format string as written (arguments are not formatted into it).
    let text =
        mac.parse_body_with(Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated).ok().and_then(|args| match args
            .first()
        {
            Some(syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. })) => Some(s.value()),
            _ => None,
        });
    Some(match (prefix, text) {
        ("", Some(t)) => t,
        ("", None) => "explicit panic".to_string(),
        (p, Some(t)) => format!("{p}: {t}"),
        (p, None) => p.to_string(),
    })
}

/// Whether a statement ends in a panic (`unimplemented!()`, `todo!()`, `panic!(..)`).
pub(crate) fn ends_in_panic(stmt: &syn::Stmt) -> bool {
    match stmt {
        syn::Stmt::Macro(m) => panic_message(&m.mac).is_some(),
        syn::Stmt::Expr(syn::Expr::Macro(m), _) => panic_message(&m.mac).is_some(),
        _ => false,
    }
}

#[derive(Clone, Copy)]
enum Place {
    Var(cotan_ir::Var),
    Mem(Value, Option<Value>),
}

/// `x` of `x.iter().copied().collect()` (or `.cloned()`, `.map(|p| *p)`).
fn copied_rows(m: &syn::ExprMethodCall) -> Option<&syn::Expr> {
    let syn::Expr::MethodCall(copied) = crate::lower::strip_parens(&m.receiver) else { return None };
    let copies = match copied.method.to_string().as_str() {
        "copied" | "cloned" => copied.args.is_empty(),
        "map" => matches!(copied.args.first(), Some(syn::Expr::Closure(c))
            if c.inputs.len() == 1
                && matches!(&c.inputs[0], syn::Pat::Ident(pi) if matches!(crate::lower::strip_parens(&c.body),
                    syn::Expr::Unary(syn::ExprUnary { op: syn::UnOp::Deref(_), expr, .. })
                        if matches!(&**expr, syn::Expr::Path(p) if p.path.is_ident(&pi.ident))))),
        _ => false,
    };
    let syn::Expr::MethodCall(iter) = crate::lower::strip_parens(&copied.receiver) else { return None };
    (m.method == "collect" && m.args.is_empty() && copies && iter.method == "iter" && iter.args.is_empty())
        .then_some(&*iter.receiver)
}

/// The std functions cotan lowers itself that a path may name, by their short names:
/// `Some`, `black_box` (`std::hint::black_box`, also imported), `swap` (`std::mem::swap`,
/// `mem::swap`), and the pointer functions of `POINTER_FNS`.
fn std_fn(p: &syn::ExprPath) -> Option<String> {
    let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
    let segs: Vec<&str> = segs.iter().map(|s| s.as_str()).skip_while(|s| matches!(*s, "std" | "core")).collect();
    match segs.as_slice() {
        // (`Ok` of a `Result`, held as an `Option` of its value.)
        ["Some"] | ["Option", "Some"] | ["Ok"] | ["Result", "Ok"] => Some("Some".into()),
        ["Err"] | ["Result", "Err"] => Some("Err".into()),
        ["black_box"] | ["hint", "black_box"] => Some("black_box".into()),
        ["mem", "swap"] => Some("swap".into()),
        ["ptr", "swap"] => Some("ptr_swap".into()),
        ["ptr", "read"] => Some("ptr_read".into()),
        ["ptr", "write"] => Some("ptr_write".into()),
        ["ptr", "copy"] => Some("ptr_copy".into()),
        ["ptr", "copy_nonoverlapping"] | ["copy_nonoverlapping"] => Some("copy_nonoverlapping".into()),
        ["slice", "from_raw_parts"] | ["from_raw_parts"] => Some("from_raw_parts".into()),
        ["slice", "from_raw_parts_mut"] | ["from_raw_parts_mut"] => Some("from_raw_parts_mut".into()),
        _ => None,
    }
}

/// The functions of `std::ptr` and `std::slice` that `pointers.rs` lowers, as `std_fn` names them.
const POINTER_FNS: [&str; 7] =
    ["ptr_swap", "ptr_read", "ptr_write", "ptr_copy", "copy_nonoverlapping", "from_raw_parts", "from_raw_parts_mut"];

impl Lower {
    /// A call of a function of the user's crate (not a local closure or a std function).
    pub(crate) fn is_user_call(&self, c: &syn::ExprCall) -> bool {
        let std = matches!(&*c.func, syn::Expr::Path(p) if std_fn(p).is_some());
        is_user_call(c) && !std && self.closure_called(c).is_none()
    }

    /// `std::mem::swap(&mut a, &mut b)` on locals or elements.
    fn mem_swap(&mut self, a: &syn::Expr, b: &syn::Expr) -> syn::Result<()> {
        let target = |e: &syn::Expr| -> syn::Result<syn::Expr> {
            match e {
                syn::Expr::Reference(r) if r.mutability.is_some() => Ok((*r.expr).clone()),
                e => Ok(syn::Expr::Unary(syn::parse_quote_spanned!(e.span()=> *#e))),
            }
        };
        let (ta, tb) = (target(a)?, target(b)?);
        if self.is_memory(&ta) && self.is_memory(&tb) {
            return self.swap_arrays(&ta, &tb);
        }
        let (va, pa) = self.read_place(&ta)?;
        let (vb, pb) = self.read_place(&tb)?;
        let (sa, sb) = (self.scalar_sty(va, a.span())?, self.scalar_sty(vb, b.span())?);
        self.unify(sa, sb, b.span())?;
        for (p, e) in [(pa, &ta), (pb, &tb)] {
            if let Place::Mem(m, _) = p {
                if self.mem_ty(m).is_some_and(|t| t.access == Access::Shared) {
                    return err_at(e, "cannot assign through a shared reference; take `&mut`");
                }
            }
        }
        self.write_place(pa, vb);
        self.write_place(pb, va);
        Ok(())
    }

    /// `std::mem::swap(&mut a, &mut b)` of two arrays of one length, or of two vectors the
    /// function owns (the double buffer of a time step: `swap(&mut cur, &mut prev)`):
    /// element by element. Vectors must have one length, which the derivative checks as it
    /// runs (cotan's buffers keep their lengths where the swap would exchange them).
    fn swap_arrays(&mut self, a: &syn::Expr, b: &syn::Expr) -> syn::Result<()> {
        let (ma, mb) = (self.memory(a)?, self.memory(b)?);
        let (ka, kb) = (self.mem_ty(ma).unwrap(), self.mem_ty(mb).unwrap());
        let owned_vecs = [ka, kb].iter().all(|k| k.kind == MemKind::Vec && k.access == Access::Owned);
        let vecs_of_numbers = owned_vecs && self.holds_numbers(ma) && self.holds_numbers(mb);
        if !(matches!(ka.kind, MemKind::Array(_)) && ka.kind == kb.kind || vecs_of_numbers) {
            return err_at(b, "cotan swaps two arrays of numbers of one length, or two vectors of numbers of the function (`std::mem::swap(&mut a, &mut b)`); swap other buffers element by element");
        }
        for (m, e) in [(ka, a), (kb, b)] {
            if !m.is_writable() {
                return err_at(e, "cannot assign through a shared reference; take `&mut`");
            }
        }
        let (ea, eb) = (self.elem_sty(ma), self.elem_sty(mb));
        self.unify(ea, eb, b.span())?;
        let n = self.emit_s(OpKind::Len(ma), STy::Known(Scalar::Usize));
        if owned_vecs {
            let nb = self.emit_s(OpKind::Len(mb), STy::Known(Scalar::Usize));
            let same = self.emit_s(OpKind::Cmp(CmpOp::Eq, n, nb), STy::Known(Scalar::Bool));
            let message = "cotan's derivative swaps vectors of one length only (`std::mem::swap`); these differ".into();
            self.effect(OpKind::Assert { cond: same, message });
        }
        self.index_loop(n, |l, i| {
            let x = l.emit_s(OpKind::Load { mem: ma, index: Some(i) }, ea);
            let y = l.emit_s(OpKind::Load { mem: mb, index: Some(i) }, ea);
            l.effect(OpKind::Store { mem: ma, index: Some(i), value: y });
            l.effect(OpKind::Store { mem: mb, index: Some(i), value: x });
        });
        Ok(())
    }
}

/// True for a call of a plain function path that is not one of the std functions cotan
/// lowers itself (`f64::sin`, `Vec::new`, ...).
pub(crate) fn is_user_call(c: &syn::ExprCall) -> bool {
    let syn::Expr::Path(p) = &*c.func else { return false };
    if p.qself.is_some() || p.path.segments.iter().any(|s| !s.arguments.is_none()) {
        return false;
    }
    let first = p.path.segments.first().map(|s| s.ident.to_string()).unwrap_or_default();
    let n = p.path.segments.len();
    !(n == 2 && (Scalar::from_name(&first).is_some() || first == "Vec"))
        && !matches!(first.as_str(), "std" | "core" | "alloc")
}

/// `assert!`, `debug_assert!` and their `_eq`/`_ne` forms keep their primal meaning.
pub(crate) fn statement_macro(l: &mut Lower, mac: &syn::Macro) -> syn::Result<()> {
    let name = mac.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
    if crate::print::is_print(&name) {
        return l.print_macro(mac, &name).map(|_| ());
    }
    if let Some(message) = panic_message(mac) {
        // Raised where the primal raises it; the code after it does not run.
        let f = l.bool_const(false);
        l.at(mac.span());
        l.effect(OpKind::Assert { cond: f, message });
        return Ok(());
    }
    const ASSERTS: [&str; 6] =
        ["assert", "debug_assert", "assert_eq", "assert_ne", "debug_assert_eq", "debug_assert_ne"];
    if !ASSERTS.contains(&name.as_str()) {
        return err_at(
            mac,
            format!("cotan does not support the macro `{name}!` in differentiated code; supported: `assert!`-style macros, `vec!`, `matches!`, `println!`-style macros, `dbg!`, `panic!`, `unreachable!`, `todo!`, `unimplemented!`; write out what other macros expand to"),
        );
    }
    let args = mac.parse_body_with(Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated)?;
    let args: Vec<&syn::Expr> = args.iter().collect();
    let (cond, n) = match name.as_str() {
        "assert" | "debug_assert" if !args.is_empty() => (l.bool_expr(args[0])?, 1),
        "assert_eq" | "assert_ne" | "debug_assert_eq" | "debug_assert_ne" if args.len() >= 2 => {
            let (a, at) = l.scalar(args[0])?;
            let (b, bt) = l.scalar(args[1])?;
            l.unify(at, bt, mac.span())?;
            let op = if name.ends_with("_eq") { CmpOp::Eq } else { CmpOp::Ne };
            (l.emit_s(OpKind::Cmp(op, a, b), STy::Known(Scalar::Bool)), 2)
        }
        _ => return err_at(&mac, format!("`{name}!` is missing its arguments")),
    };
    let message = match args.get(n) {
        Some(syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }))
            if args.len() == n + 1 && !s.value().contains('{') =>
        {
            s.value()
        }
        _ => format!("assertion failed: {}", mac.tokens),
    };
    l.at(mac.span());
    l.effect(OpKind::Assert { cond, message });
    Ok(())
}

/// The value of a float constant of the standard library: `PI`, `f64::consts::E`,
/// `f64::EPSILON`, ... (`ty` is the float type, `None` for a bare name such as `PI`).
pub fn float_constant(ty: Option<Scalar>, name: &str) -> Option<f64> {
    use std::f64::consts as c;
    let f32_ = ty == Some(Scalar::F32);
    Some(match name {
        "PI" => c::PI,
        "E" => c::E,
        "TAU" => c::TAU,
        "SQRT_2" => c::SQRT_2,
        "LN_2" => c::LN_2,
        "LN_10" => c::LN_10,
        "LOG2_E" => c::LOG2_E,
        "LOG10_E" => c::LOG10_E,
        "LOG2_10" => c::LOG2_10,
        "LOG10_2" => c::LOG10_2,
        "FRAC_PI_2" => c::FRAC_PI_2,
        "FRAC_PI_3" => c::FRAC_PI_3,
        "FRAC_PI_4" => c::FRAC_PI_4,
        "FRAC_PI_6" => c::FRAC_PI_6,
        "FRAC_PI_8" => c::FRAC_PI_8,
        "FRAC_1_PI" => c::FRAC_1_PI,
        "FRAC_2_PI" => c::FRAC_2_PI,
        "FRAC_2_SQRT_PI" => c::FRAC_2_SQRT_PI,
        "FRAC_1_SQRT_2" => c::FRAC_1_SQRT_2,
        "INFINITY" if ty.is_some() => f64::INFINITY,
        "NEG_INFINITY" if ty.is_some() => f64::NEG_INFINITY,
        "NAN" if ty.is_some() => f64::NAN,
        "EPSILON" if f32_ => f32::EPSILON as f64,
        "EPSILON" if ty.is_some() => f64::EPSILON,
        "MAX" if f32_ => f32::MAX as f64,
        "MAX" if ty.is_some() => f64::MAX,
        "MIN" if f32_ => f32::MIN as f64,
        "MIN" if ty.is_some() => f64::MIN,
        "MIN_POSITIVE" if f32_ => f32::MIN_POSITIVE as f64,
        "MIN_POSITIVE" if ty.is_some() => f64::MIN_POSITIVE,
        _ => return None,
    })
}

/// The value of `i32::MAX` and the like.
pub fn int_constant(s: Scalar, name: &str) -> Option<i128> {
    let (lo, hi) = s.int_range();
    match name {
        // (Above the IR's range.)
        "MAX" if s == Scalar::U128 => None,
        "MAX" => Some(hi),
        "MIN" => Some(lo),
        _ => None,
    }
}

/// `N` in `.method::<N>()`, an integer literal.
pub(crate) fn const_turbofish(m: &syn::ExprMethodCall) -> Option<u64> {
    let t = m.turbofish.as_ref()?;
    match t.args.iter().collect::<Vec<_>>()[..] {
        [syn::GenericArgument::Const(syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(n), .. }))] => {
            n.base10_parse().ok()
        }
        [syn::GenericArgument::Type(syn::Type::Verbatim(ts))] => ts.to_string().parse().ok(),
        _ => None,
    }
}

/// `<T as Trait>::f(args)` (or `<T>::f(args)`) as `T::f(args)`, if `T` is a path.
fn unqualified(c: &syn::ExprCall) -> Option<syn::ExprCall> {
    let syn::Expr::Path(p) = &*c.func else { return None };
    let q = p.qself.as_ref()?;
    let syn::Type::Path(t) = &*q.ty else { return None };
    if t.qself.is_some() {
        return None;
    }
    let method = &p.path.segments.last()?.ident;
    let args = &c.args;
    Some(syn::parse_quote_spanned!(c.func.span()=> #t::#method(#args)))
}

/// Rust tokens as text without the spaces the tokens' printing puts between punctuation
/// (`<Foo as Tr>::f`, not `< Foo as Tr > :: f`).
pub(crate) fn compact(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = String::new();
    for (k, &c) in chars.iter().enumerate() {
        if c == ' ' {
            let (before, after) = (out.chars().last(), chars.get(k + 1).copied());
            if !(before.is_some_and(word) && after.is_some_and(word)) {
                continue;
            }
        }
        out.push(c);
    }
    out
}

/// The name an expression is, if it is a bare name.
fn ident_of(e: &syn::Expr) -> Option<String> {
    match crate::lower::strip_parens(e) {
        syn::Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
        _ => None,
    }
}

/// The IR operation of an arithmetic or bit operator, plain or compound (`+`, `+=`).
fn arith_op(op: &syn::BinOp) -> Option<BinOp> {
    use syn::BinOp as B;
    Some(match op {
        B::Add(_) | B::AddAssign(_) => BinOp::Add,
        B::Sub(_) | B::SubAssign(_) => BinOp::Sub,
        B::Mul(_) | B::MulAssign(_) => BinOp::Mul,
        B::Div(_) | B::DivAssign(_) => BinOp::Div,
        B::Rem(_) | B::RemAssign(_) => BinOp::Rem,
        B::BitAnd(_) | B::BitAndAssign(_) => BinOp::BitAnd,
        B::BitOr(_) | B::BitOrAssign(_) => BinOp::BitOr,
        B::BitXor(_) | B::BitXorAssign(_) => BinOp::BitXor,
        B::Shl(_) | B::ShlAssign(_) => BinOp::Shl,
        B::Shr(_) | B::ShrAssign(_) => BinOp::Shr,
        _ => return None,
    })
}
