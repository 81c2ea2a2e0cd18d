//! Structs and tuples (records): parameters of a struct or tuple type, read and written
//! field by field. A field path (`p.layer.w`) becomes one `Field` op at the top of the
//! function, so each field is memory with a single identity, like a parameter. Whether a
//! field is a number, an array or a nested record is read off how the body uses it (the
//! function compiles as the user wrote it, so its uses agree with the field's real type);
//! its number type is inferred like any other.

use cotan_ir::HashMap;

use crate::span::Spanned;
use cotan_ir::{Access, MemKind, OpKind, Scalar, Ty, Value};
use syn::visit::Visit;

use crate::env::FieldType;
use crate::infer::{Class, STy};
use crate::lower::{err, err_at, mem, Binding, Lower};

/// What a field is, as its uses show.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) enum Shape {
    /// Only passed on by reference: kept opaque (the callee knows its type).
    Passed,
    Number,
    Array,
    Record,
}

/// Generic types of std that are not plain structs of numbers (a user's own `Cell` is).
const NOT_RECORDS: [&str; 11] =
    ["Vec", "Box", "Option", "Result", "HashMap", "BTreeMap", "HashSet", "Rc", "Arc", "RefCell", "Cell"];

/// The Rust type of a record parameter and how it is held, or `None` for other types.
pub fn record_type(ty: &syn::Type) -> Option<(String, Access)> {
    let (inner, access) = match ty {
        syn::Type::Reference(r) => (&*r.elem, if r.mutability.is_some() { Access::Mut } else { Access::Shared }),
        t => (t, Access::Owned),
    };
    match inner {
        syn::Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?;
            let name = last.ident.to_string();
            let std_generic = NOT_RECORDS.contains(&name.as_str()) && !last.arguments.is_none();
            if crate::signature::scalar_type(inner).is_some() || std_generic || name == "String" || name == "str" {
                return None;
            }
            Some((tokens_text(inner), access))
        }
        // `()` too: a zero-sized parameter, as std accepts.
        syn::Type::Tuple(_) => Some((tokens_text(inner), access)),
        _ => None,
    }
}

/// A slice, vector or array of structs behind a reference (`&[Particle]`, `&mut Vec<Spring>`,
/// `&[Body; 3]`): the container, the struct's type as written, and the access.
pub fn records_type(ty: &syn::Type) -> Option<(cotan_ir::Dim, String, Access)> {
    let syn::Type::Reference(r) = ty else { return None };
    let access = if r.mutability.is_some() { Access::Mut } else { Access::Shared };
    let (dim, elem) = container_of(&r.elem)?;
    match elem {
        // (`()` too: a zero-sized element, as std accepts.)
        syn::Type::Path(_) | syn::Type::Tuple(_) => record_type(elem).map(|(t, _)| (dim, t, access)),
        _ => None,
    }
}

/// The container level of `[T]`, `[T; N]` (a literal `N`) or `Vec<T>`, and `T`.
pub fn container_of(ty: &syn::Type) -> Option<(cotan_ir::Dim, &syn::Type)> {
    match ty {
        syn::Type::Slice(s) => Some((cotan_ir::Dim::Slice, &*s.elem)),
        syn::Type::Array(a) => {
            let syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(n), .. }) = &a.len else { return None };
            Some((cotan_ir::Dim::Array(n.base10_parse().ok()?), &*a.elem))
        }
        syn::Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?;
            let syn::PathArguments::AngleBracketed(args) = &last.arguments else { return None };
            match (last.ident == "Vec", &args.args.iter().collect::<Vec<_>>()[..]) {
                (true, [syn::GenericArgument::Type(t)]) => Some((cotan_ir::Dim::Vec, t)),
                _ => None,
            }
        }
        _ => None,
    }
}

pub(crate) fn tokens_text(t: &impl quote::ToTokens) -> String {
    let s = t.to_token_stream().to_string();
    // `model :: Params < f64 >` as `model::Params<f64>`; tuples keep `, `.
    s.replace(" :: ", "::").replace(" < ", "<").replace(" >", ">").replace(" ,", ",")
}

/// The shapes of the field paths (`"p.w"`, `"self.inner.b"`) used in a body.
pub(crate) fn field_shapes(body: &syn::Block) -> HashMap<String, Shape> {
    let mut v = Uses::default();
    v.visit_block(body);
    v.shapes
}

#[derive(Default)]
struct Uses {
    shapes: HashMap<String, Shape>,
}

/// The path of a field expression rooted at a plain name: `p.a.0` is `"p.a.0"`.
pub(crate) fn field_path(e: &syn::Expr) -> Option<String> {
    match e {
        syn::Expr::Field(f) => {
            let base = field_path(&f.base).or_else(|| root_name(&f.base))?;
            Some(format!("{base}.{}", member_name(&f.member)))
        }
        syn::Expr::Paren(p) => field_path(&p.expr),
        _ => None,
    }
}

pub(crate) fn root_name(e: &syn::Expr) -> Option<String> {
    match e {
        syn::Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
        _ => None,
    }
}

pub(crate) fn member_name(m: &syn::Member) -> String {
    match m {
        syn::Member::Named(i) => i.to_string(),
        syn::Member::Unnamed(i) => i.index.to_string(),
    }
}

const ARRAY_METHODS: [&str; 13] = [
    "len",
    "is_empty",
    "iter",
    "iter_mut",
    "fill",
    "swap",
    "reverse",
    "copy_from_slice",
    "to_vec",
    "chunks",
    "windows",
    "push",
    "clone",
];

impl Uses {
    fn mark(&mut self, e: &syn::Expr, shape: Shape) {
        if let Some(p) = field_path(e) {
            let s = self.shapes.entry(p).or_insert(shape);
            *s = (*s).max(shape);
        }
    }
}

impl<'a> Visit<'a> for Uses {
    /// Macro arguments (`vec![0.0; p.n]`, `assert!(p.x > 0.0)`) are expressions too.
    fn visit_macro(&mut self, m: &'a syn::Macro) {
        use syn::parse::Parser;
        let exprs = syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated
            .parse2(m.tokens.clone())
            .map(|p| p.into_iter().collect::<Vec<_>>())
            .or_else(|_| {
                (|input: syn::parse::ParseStream| {
                    let a: syn::Expr = input.parse()?;
                    input.parse::<syn::Token![;]>()?;
                    let b: syn::Expr = input.parse()?;
                    Ok(vec![a, b])
                })
                .parse2(m.tokens.clone())
            });
        for e in exprs.unwrap_or_default() {
            // Owned, so visited by a fresh visitor whose findings are merged.
            let mut inner = Uses::default();
            inner.visit_expr(&e);
            for (path, shape) in inner.shapes {
                let s = self.shapes.entry(path).or_insert(shape);
                *s = (*s).max(shape);
            }
        }
    }

    fn visit_expr(&mut self, e: &'a syn::Expr) {
        match e {
            syn::Expr::Field(f) => {
                self.mark(&f.base, Shape::Record);
                self.mark(e, Shape::Number);
            }
            syn::Expr::Index(i) => self.mark(&i.expr, Shape::Array),
            syn::Expr::MethodCall(m) => {
                let name = m.method.to_string();
                if ARRAY_METHODS.contains(&name.as_str()) {
                    self.mark(&m.receiver, Shape::Array);
                } else if cotan_ir::MathFn::from_name(&name).is_none()
                    && !name.starts_with("is_")
                    && !name.starts_with("to_")
                {
                    // A method that is neither a slice's nor a number's: the field is a struct.
                    self.mark(&m.receiver, Shape::Record);
                }
            }
            syn::Expr::ForLoop(f) => {
                let it = match &*f.expr {
                    syn::Expr::Reference(r) => &*r.expr,
                    e => e,
                };
                self.mark(it, Shape::Array);
            }
            syn::Expr::Reference(r) => {
                if let syn::Expr::Field(f) = &*r.expr {
                    // `&p.x` passes the field on: it is not read as a number here.
                    self.mark(&r.expr, Shape::Passed);
                    self.mark(&f.base, Shape::Record);
                    self.visit_expr(&f.base);
                    return;
                }
            }
            _ => {}
        }
        syn::visit::visit_expr(self, e);
    }
}

impl Lower {
    /// A record parameter, bound by name; its fields are created when first used.
    pub(crate) fn record_param(&mut self, name: &str, rust_type: &str, access: Access, span: proc_macro2::Span) {
        let id = self.func.record(rust_type);
        let at = self.at(span);
        let v = self.func.add_param(mem(Scalar::F64, MemKind::Record(id), access), name.to_string(), at);
        self.bind(name.to_string(), Binding::Value(v));
    }

    /// A slice (vector, array) of structs parameter, bound by name.
    pub(crate) fn records_param(
        &mut self,
        name: &str,
        rust_type: &str,
        dim: cotan_ir::Dim,
        access: Access,
        span: proc_macro2::Span,
    ) {
        let id = self.func.record(rust_type);
        let at = self.at(span);
        let v = self.func.add_param(mem(Scalar::F64, MemKind::Records(dim, id), access), name.to_string(), at);
        self.bind(name.to_string(), Binding::Value(v));
    }

    /// `src.to_vec()` of a slice of structs: a copy (`CopyRecords`), whose float fields are
    /// then written again from `src`'s, element by element, so that derivatives flow.
    pub(crate) fn copy_records(&mut self, src: Value, span: proc_macro2::Span) -> syn::Result<Value> {
        let m = self.mem_ty(src).expect("memory");
        let MemKind::Records(_, id) = m.kind else { unreachable!("checked: structs") };
        let ty = self.func.records[id as usize].clone();
        let unsupported = |what: String| {
            err(span, format!("cotan copies vectors of structs whose fields are numbers, and arrays or vectors of numbers; {what}; take the copy as a `&mut [{ty}]` parameter instead"))
        };
        let Some(fields) = self.env.record_fields(&ty) else {
            return unsupported(format!("it cannot read the definition of `{ty}`"));
        };
        let mut zero = String::new();
        let mut floats = vec![];
        for (name, ft) in fields {
            match ft {
                FieldType::Number(s) if s.is_float() => {
                    zero.push_str(&format!("e.{name} = 0.0; "));
                    floats.push((name, false));
                }
                FieldType::Memory(s, kind) if s.is_float() && kind.row().is_none() => {
                    zero.push_str(&format!("e.{name}.fill(0.0); "));
                    floats.push((name, true));
                }
                FieldType::Number(_) => {}
                FieldType::Memory(s, _) if !s.is_float() => {}
                _ => return unsupported(format!("`{ty}` has the field `{name}`")),
            }
        }
        self.at(span);
        let ty = mem(Scalar::F64, MemKind::Records(cotan_ir::Dim::Vec, id), Access::Owned);
        let dst = self.emit(OpKind::CopyRecords { src, zero, zeroed: false }, ty);
        let usize_t = STy::Known(Scalar::Usize);
        let len = self.emit_s(OpKind::Len(src), usize_t);
        self.index_loop(len, |l, i| {
            let (d, s) = (l.row(dst, i), l.row(src, i));
            for (name, is_array) in floats {
                let fd = l.field_of(d, name.clone(), String::new(), span);
                let fs = l.field_of(s, name, String::new(), span);
                if is_array {
                    let n = l.emit_s(OpKind::Len(fs), usize_t);
                    l.copy_loop(fd, fs, n);
                } else {
                    let t = l.elem_sty(fs);
                    let v = l.emit_s(OpKind::Load { mem: fs, index: None }, t);
                    l.effect(OpKind::Store { mem: fd, index: None, value: v });
                }
            }
        });
        Ok(dst)
    }

    /// Emits a `Field` op: the fields of parameters (and their fields) once, at the top of the
    /// function; a field of an element of a slice of structs (`springs[i].k`) where it is.
    pub(crate) fn field_op(&mut self, op: cotan_ir::Op) {
        let (OpKind::Field { base, .. }, Some(v)) = (&op.kind, op.result) else { unreachable!("a field op") };
        if self.func.params.contains(base) || self.top_fields.contains(base) {
            self.hoist(op);
            self.top_fields.insert(v);
        } else {
            let OpKind::Field { base, name } = &op.kind else { unreachable!("a field op") };
            self.local_fields.push((self.stack.len(), (*base, name.clone())));
            self.stack.last_mut().unwrap().push(op);
        }
    }

    /// The value of a field expression: memory (a cell for a number field).
    pub(crate) fn field(&mut self, f: &syn::ExprField) -> syn::Result<Value> {
        let base = self.expr(&f.base)?;
        if !self.mem_ty(base).is_some_and(|m| matches!(m.kind, MemKind::Record(_))) {
            return err_at(
                &f.base,
                "cotan reads fields of struct and tuple parameters only (not of array elements like `v[i].x`, or of locals); pass the struct itself as a parameter",
            );
        };
        let name = member_name(&f.member);
        let path = field_path(&syn::Expr::Field(f.clone())).unwrap_or_default();
        Ok(self.field_of(base, name, path, f.span()))
    }

    /// Field `name` of record `base` (its path `p.x` for names and shapes, if it has one).
    pub(crate) fn field_of(&mut self, base: Value, name: String, path: String, at: proc_macro2::Span) -> Value {
        if let Some(v) = self.fields.get(&(base, name.clone())) {
            return *v;
        }
        let bt = self.mem_ty(base).expect("a record");
        let shape = self.field_shapes.get(&path).copied().unwrap_or(Shape::Number);
        // The field's type, when the crate's sources say it.
        let MemKind::Record(rid) = bt.kind else { unreachable!("checked: a record") };
        let rust_type = &self.func.records[rid as usize];
        let typed = self
            .env
            .record_fields(rust_type.strip_prefix("*const ").unwrap_or(rust_type))
            .and_then(|fs| fs.into_iter().find(|(n, _)| *n == name).map(|(_, t)| t));
        let (ty, elem) = match typed {
            Some(FieldType::Number(s)) => (mem(s, MemKind::Cell, bt.access), Some(STy::Known(s))),
            Some(FieldType::Memory(s, kind)) => (mem(s, kind, bt.access), Some(STy::Known(s))),
            Some(FieldType::Record(ty)) => {
                let id = self.func.record(&ty);
                (mem(Scalar::F64, MemKind::Record(id), bt.access), None)
            }
            Some(FieldType::Records(dim, ty)) => {
                let id = self.func.record(&ty);
                (mem(Scalar::F64, MemKind::Records(dim, id), bt.access), None)
            }
            Some(FieldType::Other) | None => self.field_by_use(shape, bt.access),
        };
        let span = self.at(at);
        let v = self.func.new_value(ty, (!path.is_empty()).then(|| path.replace('.', "_")), span);
        self.field_op(cotan_ir::Op { kind: OpKind::Field { base, name: name.clone() }, result: Some(v), span });
        if let Some(t) = elem {
            self.set_elem_sty(v, t);
        }
        self.fields.insert((base, name), v);
        self.field_paths.insert(v, path);
        v
    }

    /// A field's type as its uses show it (when the sources do not say).
    fn field_by_use(&mut self, shape: Shape, access: Access) -> (cotan_ir::Ty, Option<crate::infer::STy>) {
        match shape {
            Shape::Record => {
                let id = self.func.record("_");
                (mem(Scalar::F64, MemKind::Record(id), access), None)
            }
            // Only passed on (`g(&p.w)`): most often a `Vec` or an array of floats.
            Shape::Passed => (mem(Scalar::F64, MemKind::Slice, access), None),
            Shape::Array | Shape::Number => {
                let kind = if shape == Shape::Array { MemKind::Slice } else { MemKind::Cell };
                (mem(Scalar::F64, kind, access), Some(self.infer.fresh(Class::Any)))
            }
        }
    }

    /// Whether an expression names a record parameter (checked without lowering anything).
    pub(crate) fn is_record_receiver(&self, e: &syn::Expr) -> bool {
        self.record_type_of(e).is_some()
    }

    /// The Rust type of a record parameter (`p`) or of a field that the crate's sources
    /// declare as a struct or enum (`self.activation`), checked without lowering anything.
    pub(crate) fn record_type_of(&self, e: &syn::Expr) -> Option<String> {
        match e {
            syn::Expr::Paren(p) => self.record_type_of(&p.expr),
            // An element of a slice of structs (`springs[i]`).
            syn::Expr::Index(i) => match root_name(&i.expr).and_then(|n| self.lookup(&n)) {
                Some(Binding::Value(v)) => match self.mem_ty(v)?.kind {
                    MemKind::Records(_, id) => Some(self.func.records[id as usize].clone()),
                    _ => None,
                },
                _ => None,
            },
            syn::Expr::Field(f) => {
                let base = self.record_type_of(&f.base)?;
                let name = member_name(&f.member);
                match self.env.record_fields(&base)?.into_iter().find(|(n, _)| *n == name)?.1 {
                    FieldType::Record(t) => Some(t),
                    _ => None,
                }
            }
            // `*p` with `p: *const S` or `p: &S`: the struct.
            syn::Expr::Unary(syn::ExprUnary { op: syn::UnOp::Deref(_), expr, .. }) => {
                let t = self.record_type_of_name(expr)?;
                Some(t.strip_prefix("*const ").unwrap_or(&t).to_string())
            }
            _ => self.record_type_of_name(e).filter(|t| !t.starts_with('*')),
        }
    }

    /// The Rust type of the record a name is bound to (`*const S` for a pointer to one).
    pub(crate) fn record_type_of_name(&self, e: &syn::Expr) -> Option<String> {
        match root_name(e).and_then(|n| self.lookup(&n)) {
            Some(Binding::Value(v)) => match self.mem_ty(v)?.kind {
                MemKind::Record(id) => Some(self.func.records[id as usize].clone()),
                _ => None,
            },
            _ => None,
        }
    }

    /// A method call on a record (`self.energy(x)`, `p.update(&mut g)`): a call of
    /// `Type::method` with the record first. `None` if the receiver is not a record.
    pub(crate) fn record_method(
        &mut self,
        m: &syn::ExprMethodCall,
        results: Option<usize>,
    ) -> Option<syn::Result<Vec<Value>>> {
        let call = match self.record_call(m)? {
            Ok(call) => call,
            Err(e) => return Some(Err(e)),
        };
        // (Unless told, as many results as the method returns numbers: a tuple's each.)
        let results = results.unwrap_or_else(|| {
            self.env.callee(&call_path(&call)).map_or(1, |s| match s.ret.is_none() && s.ret_array.is_none() {
                // (`()`: none, as `p[i] += v` of `impl AddAssign` or `p[i].bump(d)` give.)
                true => s.results,
                false => s.results.max(1),
            })
        });
        Some(self.user_call_n(&call, results))
    }

    /// A method call on a record whose method is lowered at the call (it returns a vector,
    /// a tuple with one, a struct with vectors: `let s = self.step(h); s.h`): its value, of
    /// any shape. `None` for other methods and receivers.
    pub(crate) fn record_inlined_method(
        &mut self,
        m: &syn::ExprMethodCall,
    ) -> Option<syn::Result<Option<crate::agg::Agg>>> {
        if !self.is_record_receiver(&m.receiver) {
            return None;
        }
        let call = match self.record_call(m)? {
            Ok(call) => call,
            Err(e) => return Some(Err(e)),
        };
        let args: Vec<&syn::Expr> = call.args.iter().collect();
        if let Err(e) = self.inlined_for(&call_path(&call), &args)? {
            return Some(Err(e));
        }
        Some(self.call(&call))
    }

    /// `Type::method(receiver, args..)` for a method call on a record (the receiver lent
    /// as the method takes it). `None` if the receiver is not a record.
    fn record_call(&mut self, m: &syn::ExprMethodCall) -> Option<syn::Result<syn::ExprCall>> {
        if !self.is_record_receiver(&m.receiver) {
            if let Some(path) = field_path(&m.receiver) {
                if self.field_shapes.get(&path) == Some(&Shape::Record) {
                    return Some(err_at(
                        &m.receiver,
                        format!("cotan cannot name the type of `{path}` to call its method `{}`; call it as `Type::{}({path}, ..)` (`&{path}` for a `&self` method)", m.method, m.method),
                    ));
                }
            }
            return None;
        }
        let ty = self.record_type_of(&m.receiver)?;
        let path: syn::Path = match syn::parse_str::<syn::Path>(&format!("{ty}::{}", m.method)) {
            Ok(mut p) => {
                // Errors about the call point at the method's name.
                for seg in p.segments.iter_mut() {
                    seg.ident.set_span(m.method.span());
                }
                p
            }
            Err(_) => {
                return Some(err_at(
                    m,
                    format!("cotan cannot name the method `{}` of `{ty}`; call it as a function", m.method),
                ))
            }
        };
        let mut args: syn::punctuated::Punctuated<syn::Expr, syn::Token![,]> = Default::default();
        // A struct held by value is lent to the method, as auto-referencing does for `&self`.
        let r = &m.receiver;
        let owned = match root_name(r).and_then(|n| self.lookup(&n)) {
            Some(Binding::Value(v)) => self.mem_ty(v).is_some_and(|t| t.access == Access::Owned),
            _ => true,
        };
        // (A `&mut self` method gets the receiver by `&mut`: it writes it.)
        let mut_receiver = self.env.callee(&path).is_some_and(|s| s.mut_receiver);
        let receiver = match (mut_receiver, owned) {
            (true, _) => syn::parse_quote_spanned!(r.span()=> &mut #r),
            (false, true) => syn::parse_quote_spanned!(r.span()=> &#r),
            (false, false) => (**r).clone(),
        };
        args.push(receiver);
        args.extend(m.args.iter().cloned());
        Some(Ok(syn::ExprCall {
            attrs: vec![],
            func: Box::new(syn::Expr::Path(syn::ExprPath { attrs: vec![], qself: None, path })),
            paren_token: m.paren_token,
            args,
        }))
    }
}

fn call_path(c: &syn::ExprCall) -> syn::Path {
    match &*c.func {
        syn::Expr::Path(p) => p.path.clone(),
        _ => unreachable!("built from a path"),
    }
}

/// Whether an IR type is a record.
pub fn is_record(t: Ty) -> bool {
    t.mem().is_some_and(|m| matches!(m.kind, MemKind::Record(_)))
}
