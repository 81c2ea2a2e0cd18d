//! Structs of numbers as values (see `env.rs`): literals (`Wishart { gamma, m }`,
//! `Point(x, y)`), the structs functions of the crate take and return (`Normal::new(mu, s)`,
//! `n.logpdf(x)`), copies of struct parameters (`*w`). Each is a tree of its fields'
//! values; functions of the crate get and give them field by field.

use crate::span::Spanned;
use cotan_ir::{Access, MemKind, OpKind, Scalar, Value};
use proc_macro2::Span;

use crate::agg::{Agg, Tree};
use crate::env::{CalleeShape, FieldShape, FieldType, Structure};
use crate::infer::STy;
use crate::lower::{err, err_at, mem, Binding, Lower};

impl Lower {
    /// `Path { a: x, b, ..rest }`.
    pub(crate) fn struct_literal(&mut self, s: &syn::ExprStruct) -> syn::Result<Agg> {
        if let Some(a) = self.struct_with_arrays(s) {
            return a;
        }
        let Some(st) = self.env.structure(&s.path) else {
            return err_at(
                &s.path,
                "cotan builds structs whose fields are numbers, arrays or vectors of numbers, or structs of numbers, and whose definition it can read; pass this struct as a parameter (`&S` or `&mut S`) instead",
            );
        };
        let rest = match &s.rest {
            // `..Default::default()` of a struct that derives `Default`: zeros.
            Some(r) if is_default_call(r) && self.env.derives_default(&s.path) => Some(self.zeros_of(&st)),
            // `..Default::default()` of a hand-written `impl Default`: the struct's own.
            Some(r) if is_default_call(r) => {
                let path = &s.path;
                let own: syn::Expr = syn::parse_quote_spanned!(r.span()=> #path::default());
                Some(self.struct_value(&own, &st)?)
            }
            Some(r) => Some(self.struct_value(r, &st)?),
            None => None,
        };
        only_fields_of(s, &st.path, st.fields.iter().map(|(n, _)| n))?;
        let mut fields = vec![];
        for (name, shape) in &st.fields {
            let given = s.fields.iter().find(|f| crate::record::member_name(&f.member) == *name);
            let value = match (given, &rest) {
                (Some(f), _) => self.field_value(&f.expr, shape)?,
                (None, Some(Tree::Struct(_, fs))) => fs.iter().find(|(n, _)| n == name).unwrap().1.clone(),
                _ => return err_at(&s.path, format!("missing the field `{name}`")),
            };
            fields.push((name.clone(), value));
        }
        Ok(Tree::Struct(st.path.clone(), fields))
    }

    /// `vec![s; n]` of a struct of numbers `s` (`vec![V3::default(); n]`): a vector of `n`
    /// structs (`AllocRecords`), each written with `s`'s fields.
    pub(crate) fn repeated_structs(&mut self, ty: &str, value: &Agg, len: Value, span: Span) -> syn::Result<Value> {
        let (buf, stores) = self.struct_buffer(ty, &[value], len, cotan_ir::Dim::Vec, span)?;
        let [stores] = <[_; 1]>::try_from(stores).expect("one struct");
        self.index_loop(len, |l, k| {
            let row = l.row(buf, k);
            l.write_fields(row, stores, span);
        });
        Ok(buf)
    }

    /// `[a, b, c]` or `vec![a, b, c]` (`dim`) of structs of numbers, the first a `ty`: a
    /// buffer of structs (`AllocRecords`), each written with its element's fields.
    pub(crate) fn struct_list(
        &mut self,
        ty: &str,
        elems: &[&syn::Expr],
        dim: cotan_ir::Dim,
        span: Span,
    ) -> syn::Result<Value> {
        let mut values = vec![];
        for e in elems {
            values.push(self.agg(e)?);
        }
        let len = self.usize_const(values.len() as i128);
        let (buf, stores) = self.struct_buffer(ty, &values.iter().collect::<Vec<_>>(), len, dim, span)?;
        for (k, fields) in stores.into_iter().enumerate() {
            let k = self.usize_const(k as i128);
            let row = self.row(buf, k);
            self.write_fields(row, fields, span);
        }
        Ok(buf)
    }

    /// Stores numbers into the fields of the struct `row` (in memory), by name.
    fn write_fields(&mut self, row: Value, fields: Vec<(String, Value)>, span: Span) {
        for (name, v) in fields {
            let field = self.field_of(row, name, String::new(), span);
            self.effect(OpKind::Store { mem: field, index: None, value: v });
        }
    }

    /// A buffer of `len` zeroed structs `ty` (`AllocRecords`, of `dim`), and the fields of
    /// `values` to write into them, checked against `ty`'s definition.
    #[allow(clippy::type_complexity)]
    fn struct_buffer(
        &mut self,
        ty: &str,
        values: &[&Agg],
        len: Value,
        dim: cotan_ir::Dim,
        span: Span,
    ) -> syn::Result<(Value, Vec<Vec<(String, Value)>>)> {
        let refuse = |why: String| {
            err(span, format!("cotan makes arrays and vectors of structs whose fields are numbers; {why}; take them as a `&mut [{ty}]` parameter instead"))
        };
        let Some(defs) = self.env.record_fields(ty) else {
            return refuse(format!("it cannot read the definition of `{ty}`"));
        };
        let mut fields = vec![];
        for (name, ft) in &defs {
            let FieldType::Number(s) = ft else { return refuse(format!("`{ty}` has the field `{name}`")) };
            fields.push((name.clone(), cotan_ir::ZeroField::Number(*s)));
        }
        let mut stores = vec![];
        for value in values {
            let Tree::Struct(t, given) = value else { return err(span, format!("expected a `{ty}` here")) };
            // (The same struct may be named by several paths: `P3`, `crate::P3`.)
            if t.rsplit("::").next() != ty.rsplit("::").next() {
                return err(span, format!("expected a `{ty}` here, found a `{t}`"));
            }
            let mut one = vec![];
            for (name, ft) in &defs {
                let (FieldType::Number(s), Some((_, Tree::Leaf(v)))) = (ft, given.iter().find(|(n, _)| n == name))
                else {
                    return refuse(format!("the field `{name}` is not a number"));
                };
                let vt = self.scalar_sty(*v, span)?;
                self.unify(STy::Known(*s), vt, span)?;
                one.push((name.clone(), *v));
            }
            stores.push(one);
        }
        let id = self.func.record(ty);
        self.at(span);
        let buf_ty = mem(Scalar::F64, MemKind::Records(dim, id), Access::Owned);
        let buf = self.emit(OpKind::AllocRecords { len, fields }, buf_ty);
        Ok((buf, stores))
    }

    /// A literal of a struct whose fields are numbers and arrays of numbers, with at least
    /// one array (`Particle { vel, ..*p }`): its numbers and copies of its arrays (the
    /// struct owns them), `None` for other structs. Its arrays are memory, so such a value
    /// is only stored whole (`.map(|..| S { .. }).collect()`) or read field by field.
    fn struct_with_arrays(&mut self, s: &syn::ExprStruct) -> Option<syn::Result<Agg>> {
        let ty = crate::record::tokens_text(&s.path);
        let defs = self.env.record_fields(&ty)?;
        if !defs.iter().any(|(_, ft)| ft.is_buffer())
            || !defs.iter().all(|(_, ft)| ft.is_buffer() || matches!(ft, FieldType::Number(_)))
        {
            return None;
        }
        Some((|| {
            only_fields_of(s, &ty, defs.iter().map(|(n, _)| n))?;
            // `..base`: a struct parameter or an element of a slice of them, or a struct
            // value of the function (`..*self` in a method lowered at its call).
            let (base, local) = match &s.rest {
                Some(r) => match (self.record_named(strip_refs(r)), self.slots_of(strip_refs(r))) {
                    (Some(rec), _) => (Some(rec), None),
                    (None, Some(slots)) => match slots? {
                        crate::agg::Tree::Struct(t, fs) if t == ty || fs.len() == defs.len() => (None, Some(fs)),
                        _ => return err_at(r, format!("expected a `{ty}` here")),
                    },
                    (None, None) => {
                        return err_at(
                            r,
                            format!("cotan fills the rest of a `{ty}` from a struct parameter, an element of a slice of them (`..*p`) or a struct made in this function; name each field here instead"),
                        )
                    }
                },
                None => (None, None),
            };
            let mut fields = vec![];
            for (name, ft) in &defs {
                let given = s.fields.iter().find(|f| crate::record::member_name(&f.member) == *name);
                if let (None, Some(fs)) = (given, &local) {
                    // (Numbers read now, arrays copied: the new struct's own.)
                    let Some((_, slot)) = fs.iter().find(|(n, _)| n == name) else {
                        return err_at(&s.path, format!("missing the field `{name}`"));
                    };
                    let value = match self.read_slots(slot) {
                        crate::agg::Tree::Leaf(v) if self.mem_ty(v).is_some() => self.local_copy(v, s.span())?,
                        crate::agg::Tree::Leaf(v) => v,
                        _ => {
                            return err_at(
                                &s.path,
                                format!("cotan copies the field `{name}` of numbers and arrays only"),
                            )
                        }
                    };
                    fields.push((name.clone(), Tree::Leaf(value)));
                    continue;
                }
                let value = match (given, base, ft) {
                    (Some(f), _, FieldType::Number(t)) => {
                        let (v, vt) = self.scalar(&f.expr)?;
                        self.unify(STy::Known(*t), vt, f.expr.span())?;
                        v
                    }
                    (Some(f), _, _) => {
                        let m = self.memory(strip_refs(&f.expr))?;
                        self.local_copy(m, f.expr.span())?
                    }
                    (None, Some(rec), FieldType::Number(t)) => {
                        let cell = self.field_of(rec, name.clone(), String::new(), s.span());
                        self.emit_s(OpKind::Load { mem: cell, index: None }, STy::Known(*t))
                    }
                    (None, Some(rec), _) => {
                        let m = self.field_of(rec, name.clone(), String::new(), s.span());
                        self.local_copy(m, s.span())?
                    }
                    (None, None, _) => return err_at(&s.path, format!("missing the field `{name}`")),
                };
                fields.push((name.clone(), Tree::Leaf(value)));
            }
            // (Named as the function being lowered names it: `Self` in a method lowered at
            // its call is the caller's `Poly`.)
            let name = self.env.struct_path(&s.path).unwrap_or_else(|| ty.clone());
            Ok(Tree::Struct(name, fields))
        })())
    }

    /// A field's value in a literal: a number, or a struct of numbers.
    fn field_value(&mut self, e: &syn::Expr, shape: &FieldShape) -> syn::Result<Agg> {
        match shape {
            FieldShape::Number(t) => {
                let (v, vt) = self.scalar(e)?;
                self.unify(STy::Known(*t), vt, e.span())?;
                Ok(Tree::Leaf(v))
            }
            FieldShape::Struct(s) => self.struct_value(e, s),
        }
    }

    /// The value of `e` as a struct of numbers `st`: a struct value, or a struct parameter
    /// (`w`, `*w`, `&w`) whose fields are read.
    pub(crate) fn struct_value(&mut self, e: &syn::Expr, st: &Structure) -> syn::Result<Agg> {
        let inner = strip_refs(e);
        if let Some(rec) = self.record_named(inner) {
            return self.record_fields(rec, st, &field_prefix(inner), e.span());
        }
        let a = self.agg(inner)?;
        // The same struct, perhaps written by another path: its fields take its types.
        self.leaves_of(a.clone(), st, e.span())?;
        Ok(a)
    }

    /// The values of the fields of struct value `a`, which must be a `st`.
    pub(crate) fn leaves_of(&mut self, a: Agg, st: &Structure, span: Span) -> syn::Result<Vec<Value>> {
        match &a {
            Tree::Struct(_, fs) if fits(fs, st) => {
                let leaves = a.leaves();
                for (v, t) in leaves.iter().zip(st.leaves()) {
                    let vt = self.scalar_sty(*v, span)?;
                    self.unify(STy::Known(t), vt, span)?;
                }
                Ok(leaves)
            }
            a => err(span, format!("expected a `{}` here, found {}", st.path, a.describe())),
        }
    }

    /// Field `name` of record parameter `rec`, of type `ty` if it is new: one `Field` op at the
    /// top of the function per field (see `record.rs`).
    pub(crate) fn record_field(
        &mut self,
        rec: Value,
        name: &str,
        ty: cotan_ir::Ty,
        elem: Option<STy>,
        path: &str,
        span: Span,
    ) -> Value {
        if let Some(v) = self.fields.get(&(rec, name.to_string())).copied() {
            return v;
        }
        let at = self.at(span);
        let v = self.func.new_value(ty, (!path.is_empty()).then(|| path.replace('.', "_")), at);
        self.field_op(cotan_ir::Op {
            kind: OpKind::Field { base: rec, name: name.to_string() },
            result: Some(v),
            span: at,
        });
        if let Some(t) = elem {
            self.set_elem_sty(v, t);
        }
        self.fields.insert((rec, name.to_string()), v);
        self.field_paths.insert(v, path.to_string());
        v
    }

    /// The elements of a tuple parameter (`let (n, m) = shape;`), read, as a tuple value;
    /// `None` if `rec` is not a tuple of numbers and containers.
    pub(crate) fn tuple_record(&mut self, rec: Value, span: Span) -> Option<Agg> {
        let MemKind::Record(id) = self.mem_ty(rec)?.kind else { return None };
        let access = self.mem_ty(rec)?.access;
        let syn::Type::Tuple(t) = syn::parse_str::<syn::Type>(&self.func.records[id as usize]).ok()? else {
            return None;
        };
        let name = self.func.value(rec).name.clone().unwrap_or_default();
        let mut out = vec![];
        for (k, ty) in t.elems.iter().enumerate() {
            let path = format!("{name}.{k}");
            let leaf = if let Some(s) = crate::signature::scalar_type(ty) {
                let f = self.record_field(
                    rec,
                    &k.to_string(),
                    mem(s, MemKind::Cell, access),
                    Some(STy::Known(s)),
                    &path,
                    span,
                );
                self.emit_s(OpKind::Load { mem: f, index: None }, STy::Known(s))
            } else {
                let (s, kind) = crate::signature::container_type(match ty {
                    syn::Type::Reference(r) => &r.elem,
                    t => t,
                })?;
                self.record_field(rec, &k.to_string(), mem(s, kind, access), Some(STy::Known(s)), &path, span)
            };
            out.push(Tree::Leaf(leaf));
        }
        Some(Tree::Tuple(out))
    }

    /// A record parameter (or a field of one) that `e` names, if it does.
    fn record_named(&mut self, e: &syn::Expr) -> Option<Value> {
        let is_record = match e {
            syn::Expr::Path(p) => p.path.get_ident().is_some_and(|i| {
                matches!(self.lookup(&i.to_string()), Some(Binding::Value(v)) if crate::record::is_record(self.func.ty(v)))
            }),
            syn::Expr::Field(f) => self.record_named(&f.base).is_some(),
            syn::Expr::Index(i) => matches!(
                crate::record::root_name(&i.expr).and_then(|n| self.lookup(&n)),
                Some(Binding::Value(v)) if matches!(self.mem_ty(v).map(|m| m.kind), Some(cotan_ir::MemKind::Records(..)))
            ),
            _ => false,
        };
        if !is_record {
            return None;
        }
        match e {
            syn::Expr::Field(f) => self.field(f).ok().filter(|v| crate::record::is_record(self.func.ty(*v))),
            e => self.expr(e).ok(),
        }
    }

    /// The fields of record `rec` (a struct parameter), read, as a struct value.
    fn record_fields(&mut self, rec: Value, st: &Structure, path: &str, span: Span) -> syn::Result<Agg> {
        let access = self.mem_ty(rec).unwrap().access;
        let mut fields = vec![];
        for (name, shape) in &st.fields {
            let field_path = format!("{path}.{name}");
            let (ty, elem) = match shape {
                FieldShape::Number(t) => (mem(*t, MemKind::Cell, access), Some(STy::Known(*t))),
                FieldShape::Struct(_) => {
                    let id = self.func.record("_");
                    (mem(Scalar::F64, MemKind::Record(id), access), None)
                }
            };
            let v = self.record_field(rec, name, ty, elem, &field_path, span);
            let value = match shape {
                FieldShape::Number(t) => {
                    if self.mem_ty(v).is_some_and(|m| m.kind != MemKind::Cell) {
                        return err(span, format!("the field `{name}` of `{}` is not a number here", st.path));
                    }
                    let x = self.emit_s(OpKind::Load { mem: v, index: None }, STy::Known(*t));
                    Tree::Leaf(x)
                }
                FieldShape::Struct(s) => self.record_fields(v, s, &field_path, span)?,
            };
            fields.push((name.clone(), value));
        }
        Ok(Tree::Struct(st.path.clone(), fields))
    }

    /// `S::default()` (or `<S as Default>::default()`) of a struct of numbers that derives
    /// `Default`: zeros.
    pub(crate) fn derived_default(&mut self, c: &syn::ExprCall) -> Option<Agg> {
        let syn::Expr::Path(p) = &*c.func else { return None };
        if !c.args.is_empty() || p.path.segments.last()?.ident != "default" {
            return None;
        }
        let ty: syn::Path = match &p.qself {
            Some(q) => match &*q.ty {
                syn::Type::Path(t) if t.qself.is_none() => t.path.clone(),
                _ => return None,
            },
            None if p.path.segments.len() >= 2 => syn::Path {
                leading_colon: p.path.leading_colon,
                segments: p.path.segments.iter().take(p.path.segments.len() - 1).cloned().collect(),
            },
            None => return None,
        };
        if !self.env.derives_default(&ty) {
            return None;
        }
        let st = self.env.structure(&ty)?;
        Some(self.zeros_of(&st))
    }

    /// A struct of numbers whose fields are all zero (`false` for bools).
    fn zeros_of(&mut self, st: &Structure) -> Agg {
        let fields = st
            .fields
            .iter()
            .map(|(name, shape)| {
                let v = match shape {
                    FieldShape::Number(t) => Tree::Leaf(self.zero(STy::Known(*t))),
                    FieldShape::Struct(inner) => self.zeros_of(inner),
                };
                (name.clone(), v)
            })
            .collect();
        Tree::Struct(st.path.clone(), fields)
    }

    /// `Point(x, y)`: a tuple struct built by its constructor, if `c` is one.
    pub(crate) fn struct_constructor(&mut self, c: &syn::ExprCall) -> Option<syn::Result<Agg>> {
        let syn::Expr::Path(p) = &*c.func else { return None };
        let Some(st) = self.env.structure(&p.path) else {
            // `M2([[a, b], [c, d]])` of a tuple struct with arrays: its literal `M2 { 0: .. }`.
            let fields = self.env.record_fields(&crate::record::tokens_text(&p.path))?;
            if fields.len() != c.args.len() || fields.iter().any(|(n, _)| n.parse::<usize>().is_err()) {
                return None;
            }
            let path = &p.path;
            let args = c.args.iter().enumerate().map(|(k, a)| {
                let k = syn::Index { index: k as u32, span: a.span() };
                quote::quote!(#k: #a)
            });
            let literal: syn::ExprStruct = syn::parse_quote_spanned!(c.span()=> #path { #(#args),* });
            return self.struct_with_arrays(&literal);
        };
        Some((|| {
            if st.fields.len() != c.args.len() || st.fields.iter().any(|(n, _)| n.parse::<usize>().is_err()) {
                return err_at(c, format!("`{}` takes {} fields", st.path, st.fields.len()));
            }
            let mut fields = vec![];
            for ((name, shape), a) in st.fields.iter().zip(&c.args) {
                fields.push((name.clone(), self.field_value(a, shape)?));
            }
            Ok(Tree::Struct(st.path.clone(), fields))
        })())
    }

    /// How the crate's function `path` takes and returns structs of numbers, if it takes or
    /// returns any.
    pub(crate) fn flat_shape(&self, path: &syn::Path) -> Option<CalleeShape> {
        self.env.callee(path).filter(CalleeShape::flattens)
    }

    /// The arguments of a call of a function that takes structs of numbers field by field.
    pub(crate) fn flat_args(
        &mut self,
        args: &[&syn::Expr],
        shape: &CalleeShape,
        span: Span,
    ) -> syn::Result<Vec<(Value, bool)>> {
        if args.len() != shape.params.len() {
            return err(span, format!("this function takes {} arguments", shape.params.len()));
        }
        let mut out = vec![];
        for (k, (a, p)) in args.iter().zip(&shape.params).enumerate() {
            match p {
                Some(st) => {
                    let v = self.struct_value(a, st)?;
                    out.extend(v.leaves().into_iter().map(|v| (v, false)));
                }
                // A value the callee takes by value, lent to it (it cannot change the
                // caller's: its copy cotan makes takes it by reference and copies it if it
                // writes it).
                None if shape.by_ref.get(k).copied().unwrap_or(false) => {
                    let v = self.memory(strip_refs(a))?;
                    out.push((v, false));
                }
                None => {
                    let arg = self.call_arg_to(a, true)?;
                    self.takes_param_type(arg.0, shape.param_scalars.get(k).copied().flatten(), a.span())?;
                    out.push(arg);
                }
            }
        }
        Ok(out)
    }

    /// A number argument takes the type of the parameter it is passed to, if that is a
    /// number type.
    pub(crate) fn takes_param_type(&mut self, v: Value, param: Option<Scalar>, span: Span) -> syn::Result<()> {
        let Some(t) = param else { return Ok(()) };
        if self.mem_ty(v).is_some() {
            return Ok(());
        }
        let vt = self.scalar_sty(v, span)?;
        self.unify(STy::Known(t), vt, span)
    }

    /// A struct of numbers `st` from the values of its fields, depth first.
    pub(crate) fn struct_of_leaves(st: &Structure, leaves: &mut impl Iterator<Item = Value>) -> Agg {
        let fields = st
            .fields
            .iter()
            .map(|(n, f)| {
                let v = match f {
                    FieldShape::Number(_) => Tree::Leaf(leaves.next().expect("one value per field")),
                    FieldShape::Struct(s) => Lower::struct_of_leaves(s, leaves),
                };
                (n.clone(), v)
            })
            .collect();
        Tree::Struct(st.path.clone(), fields)
    }

    /// A local array `[vals...]` of numbers of type `elem`.
    fn array_of(&mut self, vals: &[Value], elem: Scalar, span: Span) -> syn::Result<Value> {
        let usize_t = STy::Known(Scalar::Usize);
        let len = self.emit_s(OpKind::Const(cotan_ir::Const::Int(vals.len() as i128)), usize_t);
        let zero = self.zero(STy::Known(elem));
        let kind = MemKind::Array(vals.len() as u64);
        let m = self.alloc(zero, STy::Known(elem), len, kind, span)?;
        for (k, &v) in vals.iter().enumerate() {
            let i = self.emit_s(OpKind::Const(cotan_ir::Const::Int(k as i128)), usize_t);
            self.effect(OpKind::Store { mem: m, index: Some(i), value: v });
        }
        Ok(m)
    }

    /// `v.method(args)` on a struct of numbers: `Type::method(v, args)`.
    pub(crate) fn struct_method(&mut self, m: &syn::ExprMethodCall) -> Option<syn::Result<Option<Agg>>> {
        if m.method == "clone" && m.args.is_empty() {
            // `s.clone()` of a struct made in the function: its numbers, and copies of its
            // arrays and vectors (a derived `Clone`; a `clone` of the crate's own is lowered
            // as the method it is).
            if let syn::Expr::Path(p) = crate::lower::strip_parens(&m.receiver) {
                if let Some(Binding::Agg(t @ Tree::Struct(..))) =
                    p.path.get_ident().and_then(|i| self.lookup(&i.to_string()))
                {
                    let Tree::Struct(ty, _) = &t else { unreachable!("matched a struct") };
                    let own_clone = syn::parse_str::<syn::Path>(&format!("{ty}::clone"))
                        .ok()
                        .is_some_and(|path| self.env.callee(&path).is_some() || self.env.inline(&path).is_some());
                    if own_clone {
                        return self.lent_receiver_call(m, ty);
                    }
                    let v = self.read_slots(&t);
                    let span = m.span();
                    let copy = v.try_map(&mut |x| match self.mem_ty(x) {
                        Some(_) => self.local_copy(x, span),
                        None => Ok(x),
                    });
                    return Some(copy.map(Some));
                }
            }
        }
        let Some(ty) = self.struct_type_of(&m.receiver) else { return self.returned_receiver_method(m) };
        let path: syn::Path = syn::parse_str(&format!("{ty}::{}", m.method)).ok()?;
        // A local struct with arrays is lent to its method, which is lowered here on its
        // slots (no signature takes such a struct field by field).
        if self.local_struct_with_arrays(&m.receiver).is_some() {
            return self.lent_receiver_call(m, &ty);
        }
        let Some(shape) = self.flat_shape(&path) else { return self.lent_receiver_call(m, &ty) };
        // A `&mut self` method (its receiver not taken field by field): the struct is lent.
        let lent: syn::Expr;
        let mut args: Vec<&syn::Expr> = vec![&m.receiver];
        if let (Some(None), Some(false), r @ (syn::Expr::Path(_) | syn::Expr::Field(_))) =
            (shape.params.first(), shape.by_ref.first().copied(), crate::lower::strip_parens(&m.receiver))
        {
            // (Of a local struct, or of a struct field of one: `b.pos += v` of `AddAssign`.)
            let at = m.receiver.span();
            lent = syn::parse_quote_spanned!(at=> &mut #r);
            args[0] = &lent;
        }
        args.extend(m.args.iter());
        Some(self.flat_call(&path, &args, &shape, m.method.span()))
    }

    /// `f(..).method(..)` on the struct with arrays a call returns
    /// (`Mat3::rot_z(t).transpose()`): the struct, made first, lent to its method as a local
    /// one is. `None` for other receivers.
    fn returned_receiver_method(&mut self, m: &syn::ExprMethodCall) -> Option<syn::Result<Option<Agg>>> {
        self.returned_struct_with_arrays(&m.receiver)?;
        Some((|| {
            let made = self.agg(crate::lower::strip_parens(&m.receiver))?;
            // (Under a name no source can write, as an operand of an operator is.)
            let span = m.receiver.span();
            let name = syn::Ident::new(&format!("__cotan_receiver{}", self.func.values.len()), span);
            self.bind(name.to_string(), Binding::Agg(made.map(&mut crate::agg::Slot::Value)));
            let mut call = m.clone();
            *call.receiver = syn::parse_quote_spanned!(span=> #name);
            self.method_call(&call)
        })())
    }

    /// A method of a struct of numbers called on a record (a struct parameter, an element
    /// of a slice of structs: `p[i].minus(p[j])`) whose signature takes or gives such structs
    /// by value: called field by field, as `struct_method` does, so that a struct it returns
    /// is a struct value (`let d = ..; d.norm()`). `None` for other receivers and methods.
    pub(crate) fn record_flat_method(&mut self, m: &syn::ExprMethodCall) -> Option<syn::Result<Option<Agg>>> {
        let ty = self.record_type_of(&m.receiver)?;
        let path: syn::Path = syn::parse_str(&format!("{ty}::{}", m.method)).ok()?;
        let shape = self.flat_shape(&path)?;
        if !matches!(shape.params.first(), Some(Some(_))) {
            return None;
        }
        let mut args: Vec<&syn::Expr> = vec![&m.receiver];
        args.extend(m.args.iter());
        Some(self.flat_call(&path, &args, &shape, m.method.span()))
    }

    /// The struct type `e` has, if it is a struct of the crate (judged without lowering
    /// it): a struct value (`struct_type_of`), a struct parameter or an element of a slice
    /// of them (`record_type_of`).
    pub(crate) fn any_struct_type_of(&self, e: &syn::Expr) -> Option<String> {
        self.struct_type_of(e).or_else(|| self.record_type_of(e))
    }

    /// The path of the struct-of-numbers type `e` is (without lowering it), if it is one.
    pub(crate) fn struct_type_of(&self, e: &syn::Expr) -> Option<String> {
        match e {
            syn::Expr::Paren(p) => self.struct_type_of(&p.expr),
            syn::Expr::Reference(r) => self.struct_type_of(&r.expr),
            syn::Expr::Unary(syn::ExprUnary { op: syn::UnOp::Deref(_), expr, .. }) => self.struct_type_of(expr),
            syn::Expr::Path(p) => match self.lookup(&p.path.get_ident()?.to_string()) {
                Some(Binding::Agg(Tree::Struct(ty, _))) => Some(ty),
                _ => None,
            },
            syn::Expr::Struct(s) => self.env.structure(&s.path).map(|s| s.path),
            // A struct field of a struct value (`c.pos` of a struct taken field by field).
            syn::Expr::Field(_) => match self.slots_of(e)? {
                Ok(Tree::Struct(ty, _)) => Some(ty),
                _ => None,
            },
            syn::Expr::Call(c) => match &*c.func {
                syn::Expr::Path(p) => self.flat_shape(&p.path).and_then(|s| s.ret).map(|s| s.path),
                _ => None,
            },
            syn::Expr::MethodCall(m) => {
                let ty = self.any_struct_type_of(&m.receiver)?;
                let path: syn::Path = syn::parse_str(&format!("{ty}::{}", m.method)).ok()?;
                self.flat_shape(&path)?.ret.map(|s| s.path)
            }
            // An operator of a struct's own (`a - b`, `-a`; see `operators.rs`).
            syn::Expr::Binary(b) => {
                let method = crate::operators::method_of(&b.op)?;
                self.operator_type(&b.left, method)
                    .or_else(|| self.number_operator_type(&b.right, method))
                    .or_else(|| self.operator_result(b).and_then(|(_, out, _)| self.structure_named(&out)))
            }
            syn::Expr::Unary(u @ syn::ExprUnary { op: syn::UnOp::Neg(_), .. }) => self.operator_type(&u.expr, "neg"),
            _ => None,
        }
    }

    /// The path of the struct of numbers named `ty`, if it is one.
    fn structure_named(&self, ty: &str) -> Option<String> {
        self.env.structure(&syn::parse_str(ty).ok()?).map(|s| s.path)
    }

    /// The struct type `2.0 * v` gives (`impl Mul<V3> for f64`), `v` the right operand.
    fn number_operator_type(&self, right: &syn::Expr, method: &str) -> Option<String> {
        let ty = self.any_struct_type_of(right)?;
        let path: syn::Path = syn::parse_str(&ty).ok()?;
        let inl = ["f64", "f32"].iter().find_map(|n| self.env.number_operator(n, method, &path))?.ok()?;
        match &inl.item.sig.output {
            syn::ReturnType::Type(_, t) => match &**t {
                syn::Type::Path(p) if p.qself.is_none() => self.env.structure(&p.path).map(|s| s.path),
                _ => None,
            },
            syn::ReturnType::Default => None,
        }
    }

    /// The struct type an operator method of `operand`'s struct type returns.
    fn operator_type(&self, operand: &syn::Expr, method: &str) -> Option<String> {
        let ty = self.any_struct_type_of(operand)?;
        let path: syn::Path = syn::parse_str(&format!("{ty}::{method}")).ok()?;
        self.flat_shape(&path)?.ret.map(|s| s.path)
    }

    /// A call of the crate's function `path` that takes or returns structs of numbers.
    pub(crate) fn flat_call(
        &mut self,
        path: &syn::Path,
        args: &[&syn::Expr],
        shape: &CalleeShape,
        span: Span,
    ) -> syn::Result<Option<Agg>> {
        let ret = shape.ret.clone();
        if let Some((elem, len)) = shape.ret_array {
            // An array: its elements, into a local array.
            let types = vec![elem; len as usize];
            let vals = self.call_path(path, args, Some(shape), len as usize, Some(&types), span)?;
            return self.array_of(&vals, elem, span).map(|m| Some(Tree::Leaf(m)));
        }
        let n = ret.as_ref().map_or(shape.results, |s| s.leaves().len());
        let types = ret.as_ref().map(|s| s.leaves());
        let vals = self.call_path(path, args, Some(shape), n, types.as_deref(), span)?;
        Ok(Some(match ret {
            Some(st) => Lower::struct_of_leaves(&st, &mut vals.into_iter()),
            None => match vals.as_slice() {
                [] => return Ok(None),
                [v] => Tree::Leaf(*v),
                vs => Tree::Tuple(vs.iter().map(|v| Tree::Leaf(*v)).collect()),
            },
        }))
    }
}

impl Lower {
    /// How a parameter held as `access` is taken: with `flatten`, one taken by value is
    /// taken by reference (its callers lend it; see `CalleeShape::by_ref`).
    pub(crate) fn by_ref(&self, access: Access) -> Access {
        if self.flatten && access == Access::Owned {
            Access::Shared
        } else {
            access
        }
    }

    /// With `flatten`, a parameter that is a struct of numbers (by value or `&`) is taken
    /// field by field: its fields become parameters, and its name a struct value. Returns
    /// whether it was.
    pub(crate) fn flat_param(&mut self, name: &str, ty: &syn::Type, mutable: bool, span: Span) -> syn::Result<bool> {
        let Some(st) = self.flat_struct_type(ty) else { return Ok(false) };
        let at = self.at(span);
        let mut params = vec![];
        fn add(l: &mut Lower, st: &Structure, prefix: &str, at: cotan_ir::SpanId, out: &mut Vec<Value>) {
            for (n, f) in &st.fields {
                let name = format!("{prefix}_{n}");
                match f {
                    FieldShape::Number(t) => {
                        let v = l.func.add_param(cotan_ir::Ty::Scalar(*t), name, at);
                        l.set_sty(v, STy::Known(*t));
                        out.push(v);
                    }
                    FieldShape::Struct(s) => add(l, s, &name, at, out),
                }
            }
        }
        add(self, &st, name, at, &mut params);
        let value = Lower::struct_of_leaves(&st, &mut params.into_iter());
        let slots = if mutable {
            self.declare_vars(name, &value, span)?.map(&mut crate::agg::Slot::Var)
        } else {
            value.map(&mut crate::agg::Slot::Value)
        };
        self.bind(name.to_string(), Binding::Agg(slots));
        Ok(true)
    }

    /// The struct of numbers a parameter or result type takes field by field (`W`, `&W`,
    /// `Self`), when the function is lowered to be called by cotan.
    pub(crate) fn flat_struct_type(&self, ty: &syn::Type) -> Option<Structure> {
        if !self.flatten {
            return None;
        }
        let inner = match ty {
            syn::Type::Reference(r) if r.mutability.is_none() => &*r.elem,
            syn::Type::Reference(_) => return None,
            t => t,
        };
        match inner {
            syn::Type::Path(p) if p.qself.is_none() => self.env.structure(&p.path),
            syn::Type::Paren(p) => self.flat_struct_type(&p.elem),
            _ => None,
        }
    }
}

/// An error at the first field literal `s` names that is not among `fields` of struct `ty`.
fn only_fields_of<'f>(
    s: &syn::ExprStruct,
    ty: &str,
    fields: impl Iterator<Item = &'f String> + Clone,
) -> syn::Result<()> {
    for f in &s.fields {
        let name = crate::record::member_name(&f.member);
        if !fields.clone().any(|n| *n == name) {
            return err_at(&f.member, format!("`{ty}` has no field `{name}`"));
        }
    }
    Ok(())
}

/// `e` without `&`, `&mut`, `*` and parentheses.
fn strip_refs(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Reference(r) => strip_refs(&r.expr),
        syn::Expr::Paren(p) => strip_refs(&p.expr),
        syn::Expr::Unary(syn::ExprUnary { op: syn::UnOp::Deref(_), expr, .. }) => strip_refs(expr),
        e => e,
    }
}

/// The field path (`p.inner`) of a record expression, for names of its fields.
fn field_prefix(e: &syn::Expr) -> String {
    crate::record::field_path(e)
        .or_else(|| match e {
            syn::Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
            _ => None,
        })
        .unwrap_or_default()
}

/// Whether struct value fields `fs` have the fields of `st`.
fn fits(fs: &[(String, Agg)], st: &Structure) -> bool {
    fs.len() == st.fields.len()
        && fs.iter().zip(&st.fields).all(|((n, v), (m, f))| {
            n == m
                && match (v, f) {
                    (Tree::Leaf(_), FieldShape::Number(_)) => true,
                    (Tree::Struct(_, inner), FieldShape::Struct(s)) => fits(inner, s),
                    _ => false,
                }
        })
}

/// `Default::default()` (also `std::default::Default::default()`).
fn is_default_call(e: &syn::Expr) -> bool {
    let syn::Expr::Call(c) = e else { return false };
    let syn::Expr::Path(p) = &*c.func else { return false };
    let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
    c.args.is_empty() && p.qself.is_none() && matches!(segs.as_slice(), [.., d, f] if d == "Default" && f == "default")
}
