//! Patterns that may fail to match: `match`, `if let`, `let ... else` and `matches!`, on
//! numbers, bools, tuples and `Option`s. A pattern becomes a bool test (comparisons joined
//! by `&` and `|`, which have no side effects) and its bindings; a `match` becomes a chain
//! of `if`/`else`, with a flag when guards can send control on to later arms.

use crate::span::Spanned;
use cotan_ir::{BinOp, CmpOp, Const, MemKind, OpKind, Region, Scalar, UnOp, Value};

use crate::agg::{spread, Agg, Merge, Tree};
use crate::infer::STy;
use crate::lower::{err_at, Binding, Lower};

const BOOL: STy = STy::Known(Scalar::Bool);

impl Lower {
    /// The number of a variant name: a `usize` constant.
    pub(crate) fn variant(&mut self, name: &str) -> Value {
        let k = match self.variants.iter().position(|v| v == name) {
            Some(k) => k,
            None => {
                self.variants.push(name.to_string());
                self.variants.len() - 1
            }
        };
        self.emit_s(OpKind::Const(Const::Int(k as i128)), STy::Known(Scalar::Usize))
    }

    /// A test of an enum parameter (memory: a record by value or behind `&`) against a
    /// pattern that names variants (`Mode::A | Mode::B`), or `None` for a catch-all.
    fn record_test(&mut self, pat: &syn::Pat, v: Value) -> syn::Result<Option<Value>> {
        match pat {
            syn::Pat::Wild(_) => return Ok(None),
            syn::Pat::Ident(pi) if pi.subpat.is_none() && !is_capitalised(&pi.ident) => return Ok(None),
            p if binds_names(p) && !matches!(p, syn::Pat::Ident(_)) => {
                variant_fields(p)?;
            }
            _ => {}
        }
        let pattern = quote::ToTokens::to_token_stream(&self.home_pattern(pat)).to_string();
        Ok(Some(self.emit_s(OpKind::Matches { value: v, pattern }, BOOL)))
    }

    /// A pattern with its enum paths as the generated code names them (`Act::Tanh` of a
    /// function of another module, lowered at its call: `crate::pm::Act::Tanh`).
    fn home_pattern(&self, pat: &syn::Pat) -> syn::Pat {
        struct Home<'a>(&'a dyn crate::env::Env);
        impl syn::visit_mut::VisitMut for Home<'_> {
            fn visit_path_mut(&mut self, p: &mut syn::Path) {
                if p.segments.len() < 2 || p.leading_colon.is_some() {
                    return;
                }
                let mut ty = p.clone();
                let variant = ty.segments.pop().unwrap().into_value();
                ty.segments.pop_punct();
                let Some(home) = self.0.home_type(&ty).and_then(|t| syn::parse_str::<syn::Path>(&t).ok()) else {
                    return;
                };
                let mut out = home;
                out.segments.push(variant);
                *p = out;
            }
        }
        let mut pat = pat.clone();
        syn::visit_mut::VisitMut::visit_pat_mut(&mut Home(&*self.env), &mut pat);
        pat
    }

    fn and(&mut self, a: Option<Value>, b: Option<Value>) -> Option<Value> {
        match (a, b) {
            (Some(a), Some(b)) => Some(self.emit_s(OpKind::Binary(BinOp::BitAnd, a, b), BOOL)),
            (a, None) => a,
            (None, b) => b,
        }
    }

    /// Whether `a` matches `pat`; `None` when it always does.
    pub(crate) fn pat_test(&mut self, pat: &syn::Pat, a: &Agg) -> syn::Result<Option<Value>> {
        use syn::Pat as P;
        match (pat, a) {
            (P::Wild(_) | P::Rest(_), _) => Ok(None),
            (p, Tree::Leaf(v)) if crate::record::is_record(self.func.ty(*v)) => self.record_test(p, *v),
            (P::Path(p), Tree::Enum(id)) if p.qself.is_none() => {
                let name = p.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
                let k = self.variant(&name);
                Ok(Some(self.compare(CmpOp::Eq, *id, k, p.span())?))
            }
            (P::Ident(pi), Tree::Enum(id)) if pi.subpat.is_none() && is_capitalised(&pi.ident) => {
                let k = self.variant(&pi.ident.to_string());
                Ok(Some(self.compare(CmpOp::Eq, *id, k, pi.span())?))
            }
            (P::TupleStruct(_) | P::Struct(_), Tree::Enum(_)) => {
                err_at(pat, "cotan supports enums without fields only; pass the numbers as parameters")
            }
            (P::Ident(pi), Tree::Option(some, _)) if pi.ident == "None" && pi.subpat.is_none() => {
                Ok(Some(self.emit_s(OpKind::Unary(UnOp::Not, *some), BOOL)))
            }
            (P::Ident(pi), a) => match &pi.subpat {
                Some((_, sub)) => self.pat_test(sub, a),
                None => {
                    check_not_const(pi)?;
                    Ok(None)
                }
            },
            (P::Paren(p), a) => self.pat_test(&p.pat, a),
            (P::Reference(r), a) => self.pat_test(&r.pat, a),
            (P::Type(t), a) => self.pat_test(&t.pat, a),
            (P::Or(o), a) => {
                let mut acc: Option<Value> = None;
                for case in &o.cases {
                    let Some(t) = self.pat_test(case, a)? else { return Ok(None) };
                    acc = Some(match acc {
                        None => t,
                        Some(x) => self.emit_s(OpKind::Binary(BinOp::BitOr, x, t), BOOL),
                    });
                }
                Ok(acc)
            }
            (P::Lit(l), Tree::Leaf(v)) => {
                let c = self.agg(&syn::Expr::Lit(l.clone()))?;
                let Tree::Leaf(c) = c else { unreachable!("a literal is a number") };
                Ok(Some(self.compare(CmpOp::Eq, *v, c, l.span())?))
            }
            (P::Range(r), Tree::Leaf(v)) => {
                let mut test = None;
                if let Some(lo) = &r.start {
                    let (lo, _) = self.scalar(lo)?;
                    test = Some(self.compare(CmpOp::Ge, *v, lo, r.span())?);
                }
                if let Some(hi) = &r.end {
                    let (hi, _) = self.scalar(hi)?;
                    let op = match r.limits {
                        syn::RangeLimits::Closed(_) => CmpOp::Le,
                        syn::RangeLimits::HalfOpen(_) => CmpOp::Lt,
                    };
                    let t = self.compare(op, *v, hi, r.span())?;
                    test = self.and(test, Some(t));
                }
                Ok(test)
            }
            (P::Path(p), Tree::Option(some, _)) if p.path.is_ident("None") => {
                Ok(Some(self.emit_s(OpKind::Unary(UnOp::Not, *some), BOOL)))
            }
            (P::Path(p), Tree::Leaf(v)) if p.qself.is_none() && is_const_path(&p.path) => {
                // `i32::MAX`, `f64::INFINITY`: a constant cotan knows.
                let (c, _) = self.scalar(&syn::Expr::Path(p.clone()))?;
                Ok(Some(self.compare(CmpOp::Eq, *v, c, p.span())?))
            }
            (P::TupleStruct(ts), Tree::Option(some, payload))
                if (ts.path.is_ident("Some") || ts.path.is_ident("Ok")) && ts.elems.len() == 1 =>
            {
                let inner = self.pat_test(&ts.elems[0], payload)?;
                Ok(self.and(Some(*some), inner))
            }
            // `Err(_)` of a `Result`, which cotan holds as an `Option` of its `Ok` value.
            (P::TupleStruct(ts), Tree::Option(some, _)) if ts.path.is_ident("Err") && ts.elems.len() == 1 => {
                Ok(Some(self.emit_s(OpKind::Unary(UnOp::Not, *some), BOOL)))
            }
            (P::Tuple(t), Tree::Tuple(es)) => {
                let pats: Vec<&syn::Pat> = t.elems.iter().collect();
                let mut test = None;
                for (p, e) in spread(&pats, es.len(), t.span())?.into_iter().zip(es) {
                    if let Some(p) = p {
                        let t = self.pat_test(p, e)?;
                        test = self.and(test, t);
                    }
                }
                Ok(test)
            }
            (P::Slice(s), Tree::Leaf(m)) if self.mem_ty(*m).is_some() => {
                let pats: Vec<&syn::Pat> = s.elems.iter().collect();
                let n = self.array_len_of(*m, s.span())?;
                let mut test = None;
                for (k, p) in spread(&pats, n, s.span())?.into_iter().enumerate() {
                    if let Some(p) = p {
                        let e = self.element_of(*m, k);
                        let t = self.pat_test(p, &e)?;
                        test = self.and(test, t);
                    }
                }
                Ok(test)
            }
            (P::Path(p), Tree::Leaf(_)) => {
                let shown = quote::ToTokens::to_token_stream(&p.path).to_string().replace(' ', "");
                err_at(
                    pat,
                    format!("cotan cannot see the value of `{shown}` from inside the function; match a literal, or pass the value as a parameter and test it in a guard (`k if k == limit =>`)"),
                )
            }
            (p, a) => err_at(
                p,
                format!("cotan cannot match {} against this pattern; it matches numbers (literals, ranges), bools, tuples and `Option`s (`Some(x)`, `None`) of them", a.describe()),
            ),
        }
    }

    /// `mem[k]` as a value.
    fn element_of(&mut self, m: Value, k: usize) -> Agg {
        let i = self.emit_s(OpKind::Const(Const::Int(k as i128)), STy::Known(Scalar::Usize));
        let t = self.elem_sty(m);
        Tree::Leaf(self.emit_s(OpKind::Load { mem: m, index: Some(i) }, t))
    }

    /// A comparison of a value with a pattern's constant, of the same type.
    fn compare(&mut self, op: CmpOp, v: Value, c: Value, span: proc_macro2::Span) -> syn::Result<Value> {
        let vt = self.scalar_sty(v, span)?;
        let ct = self.scalar_sty(c, span)?;
        self.unify(vt, ct, span)?;
        Ok(self.emit_s(OpKind::Cmp(op, v, c), BOOL))
    }

    /// Binds the names of a pattern that matched.
    pub(crate) fn pat_bind(&mut self, pat: &syn::Pat, a: Agg) -> syn::Result<()> {
        use syn::Pat as P;
        match (pat, a) {
            (P::Lit(_) | P::Range(_) | P::Path(_) | P::Wild(_) | P::Rest(_), _) => Ok(()),
            (P::Ident(pi), Tree::Enum(_)) if pi.subpat.is_none() && is_capitalised(&pi.ident) => Ok(()),
            (P::Ident(pi), Tree::Leaf(v)) if is_capitalised(&pi.ident) && crate::record::is_record(self.func.ty(v)) => {
                Ok(())
            }
            (P::Or(_), Tree::Leaf(v)) if crate::record::is_record(self.func.ty(v)) => Ok(()),
            (P::Ident(pi), Tree::Option(..)) if pi.ident == "None" && pi.subpat.is_none() => Ok(()),
            (P::Ident(pi), a) if pi.subpat.is_some() => {
                let (_, sub) = pi.subpat.as_ref().unwrap();
                self.pat_bind(sub, a.clone())?;
                let plain = syn::Pat::Ident(syn::PatIdent { subpat: None, ..pi.clone() });
                self.bind_agg(&plain, a)
            }
            (P::Paren(p), a) => self.pat_bind(&p.pat, a),
            (P::Reference(r), a) => {
                // `Some(&mut x)` of an element reference binds a copy of the element.
                let a = a.map(&mut |v| self.elem_copy(v));
                self.pat_bind(&r.pat, a)
            }
            (P::Or(o), _) => {
                if o.cases.iter().any(binds_names) {
                    return err_at(
                        o,
                        "cotan does not bind names in `|` patterns; match the alternatives in separate arms",
                    );
                }
                Ok(())
            }
            // The error of a `Result` is not kept: a name for it is an empty value, which
            // `return Err(e)` passes on (`Err(..)` is not made either) and nothing reads.
            (P::TupleStruct(ts), Tree::Option(..)) if ts.path.is_ident("Err") => match ts.elems.first() {
                Some(P::Wild(_)) | None => Ok(()),
                Some(P::Ident(pi)) if pi.subpat.is_none() => {
                    self.bind(pi.ident.to_string(), Binding::Agg(Tree::Tuple(vec![])));
                    Ok(())
                }
                Some(p) => err_at(p, "cotan does not keep the error of a `Result` (only whether there was one); match it with `Err(_)` or `Err(e)`"),
            },
            (P::TupleStruct(ts), Tree::Option(_, payload)) if ts.elems.len() == 1 => {
                self.pat_bind(&ts.elems[0], *payload)
            }
            (P::Tuple(t), Tree::Tuple(es)) => {
                let pats: Vec<&syn::Pat> = t.elems.iter().collect();
                for (p, e) in spread(&pats, es.len(), t.span())?.into_iter().zip(es) {
                    if let Some(p) = p {
                        self.pat_bind(p, e)?;
                    }
                }
                Ok(())
            }
            (P::Slice(s), Tree::Leaf(m)) if self.mem_ty(m).is_some() => {
                let pats: Vec<&syn::Pat> = s.elems.iter().collect();
                let n = self.array_len_of(m, s.span())?;
                for (k, p) in spread(&pats, n, s.span())?.into_iter().enumerate() {
                    if let Some(p) = p {
                        let e = self.element_of(m, k);
                        self.pat_bind(p, e)?;
                    }
                }
                Ok(())
            }
            (P::Ident(pi), _) if check_not_const(pi).is_err() => check_not_const(pi),
            (P::TupleStruct(_) | P::Struct(_), Tree::Leaf(v)) if crate::record::is_record(self.func.ty(v)) => {
                // `Shape::Circle(r)`: each named field is read from the matched variant.
                let (variant, fields) = variant_fields(&self.home_pattern(pat))?;
                for (field, name) in fields {
                    let t = self.infer.fresh(crate::infer::Class::Any);
                    let op = OpKind::VariantField { value: v, variant: variant.clone(), field };
                    let f = self.emit_s(op, t);
                    self.bind_pat(&syn::Pat::Ident(name), f)?;
                }
                Ok(())
            }
            (p, a) => self.bind_agg(p, a),
        }
    }

    /// `match e { arms }`.
    pub(crate) fn match_expr(&mut self, m: &syn::ExprMatch) -> syn::Result<Option<Agg>> {
        // `match ps.last() { Some(o) => a, None => b }` of a slice of structs: `if let`.
        if let [some, other] = m.arms.as_slice() {
            let none = matches!(&other.pat, syn::Pat::Wild(_))
                || matches!(&other.pat, syn::Pat::Ident(pi) if pi.ident == "None" && pi.subpat.is_none())
                || matches!(&other.pat, syn::Pat::Path(p) if p.path.is_ident("None"));
            if none
                && some.guard.is_none()
                && other.guard.is_none()
                && self.struct_element_option(&some.pat, &m.expr).is_some()
            {
                let (pat, e, a, b) = (&some.pat, &m.expr, &some.body, &other.body);
                let plain: syn::ExprIf =
                    syn::parse_quote_spanned!(m.match_token.span=> if let #pat = #e { #a } else { #b });
                return self.if_expr(&plain);
            }
        }
        let scrutinee = self.agg(&m.expr)?;
        let depth = self.stack.len();
        let mut result = Merge::new(depth);
        self.arms(&m.arms, &scrutinee, &mut result)?;
        Ok(result.get(self))
    }

    /// `match` on a value already lowered, with `arms` (`Option::map` is one).
    pub(crate) fn match_agg(&mut self, scrutinee: &Agg, arms: &[syn::Arm]) -> syn::Result<Option<Agg>> {
        let mut result = Merge::new(self.stack.len());
        self.arms(arms, scrutinee, &mut result)?;
        Ok(result.get(self))
    }

    /// The arms from the first on: the first whose pattern (and guard) matches runs. The
    /// last arm without a guard needs no test: rustc has checked that the match is exhaustive.
    fn arms(&mut self, arms: &[syn::Arm], scrutinee: &Agg, result: &mut Merge) -> syn::Result<()> {
        let Some((arm, rest)) = arms.split_first() else { return Ok(()) };
        let test = match (rest.is_empty(), &arm.guard) {
            (true, None) => None,
            _ => self.pat_test(&arm.pat, scrutinee)?,
        };
        match (test, &arm.guard) {
            (None, None) => self.arm_body(arm, scrutinee, result),
            (Some(cond), None) => {
                self.push_region();
                self.arm_body(arm, scrutinee, result)?;
                let then_region = self.pop_region();
                self.push_region();
                self.arms(rest, scrutinee, result)?;
                let else_region = self.pop_region();
                self.effect(OpKind::If { cond, then_region, else_region });
                Ok(())
            }
            (test, Some((_, guard))) => {
                // `if test { bind; if guard { body } }`, and later arms if the guard failed.
                let matched = self.new_var("matched", BOOL);
                let f = self.bool_const(false);
                self.effect(OpKind::DeclVar { var: matched, init: f });
                self.push_region();
                self.push_scope();
                let inner = (|| -> syn::Result<()> {
                    self.pat_bind(&arm.pat, scrutinee.clone())?;
                    let g = self.bool_expr(guard)?;
                    self.effect(OpKind::SetVar(matched, g));
                    self.push_region();
                    self.arm_value(arm, result)?;
                    let then_region = self.pop_region();
                    self.effect(OpKind::If { cond: g, then_region, else_region: Region::default() });
                    Ok(())
                })();
                self.pop_scope();
                inner?;
                let body = self.pop_region();
                match test {
                    Some(cond) => self.effect(OpKind::If { cond, then_region: body, else_region: Region::default() }),
                    None => self.stack.last_mut().unwrap().extend(body.ops),
                }
                if !rest.is_empty() {
                    let m = self.emit_s(OpKind::GetVar(matched), BOOL);
                    let not = self.emit_s(OpKind::Unary(UnOp::Not, m), BOOL);
                    self.push_region();
                    self.arms(rest, scrutinee, result)?;
                    let then_region = self.pop_region();
                    self.effect(OpKind::If { cond: not, then_region, else_region: Region::default() });
                }
                Ok(())
            }
        }
    }

    /// Binds an arm's names and lowers its body.
    fn arm_body(&mut self, arm: &syn::Arm, scrutinee: &Agg, result: &mut Merge) -> syn::Result<()> {
        self.push_scope();
        let r = self.pat_bind(&arm.pat, scrutinee.clone()).and_then(|_| self.arm_value(arm, result));
        self.pop_scope();
        r
    }

    fn arm_value(&mut self, arm: &syn::Arm, result: &mut Merge) -> syn::Result<()> {
        if let Some(v) = self.agg_opt(&arm.body)? {
            result.set(self, &v, arm.body.span())?;
        }
        Ok(())
    }

    /// `let PAT = e else { diverge };`
    pub(crate) fn let_else(&mut self, pat: &syn::Pat, e: &syn::Expr, diverge: &syn::Expr) -> syn::Result<()> {
        if let Some((found, inner, element)) = self.struct_element_option(pat, e) {
            // `let Some(p) = ps.last() else { .. };` of a slice of structs.
            let test: syn::Expr = syn::parse_quote_spanned!(e.span()=> if !(#found) { #diverge });
            self.agg_opt(&test)?;
            let bind: syn::Stmt = syn::parse_quote_spanned!(e.span()=> let #inner = #element;);
            return self.stmt(&bind, false).map(|_| ());
        }
        let scrutinee = self.agg(e)?;
        if let Some(test) = self.pat_test(pat, &scrutinee)? {
            let not = self.emit_s(OpKind::Unary(UnOp::Not, test), BOOL);
            self.push_region();
            self.agg_opt(diverge)?;
            let then_region = self.pop_region();
            self.effect(OpKind::If { cond: not, then_region, else_region: Region::default() });
        }
        self.pat_bind(pat, scrutinee)
    }

    /// `Some(p)` matched against `ps.first()`, `ps.last()` or `ps.get(i)` of a slice of
    /// structs, whose `Option<&S>` no value of cotan holds: whether there is one
    /// (`!ps.is_empty()`, `i < ps.len()`), the pattern `p`, and the element (`&ps[i]`), which
    /// is taken only where it is. `None` for anything else.
    pub(crate) fn struct_element_option(
        &self,
        pat: &syn::Pat,
        e: &syn::Expr,
    ) -> Option<(syn::Expr, syn::Pat, syn::Expr)> {
        let syn::Pat::TupleStruct(ts) = pat else { return None };
        if !ts.path.is_ident("Some") || ts.elems.len() != 1 {
            return None;
        }
        let syn::Expr::MethodCall(m) = crate::lower::strip_parens(e) else { return None };
        let syn::Expr::Path(r) = crate::lower::strip_parens(&m.receiver) else { return None };
        let Some(crate::lower::Binding::Value(v)) = self.lookup(&r.path.get_ident()?.to_string()) else { return None };
        if !matches!(self.mem_ty(v)?.kind, MemKind::Records(..)) {
            return None;
        }
        let span = m.method.span();
        let (found, element): (syn::Expr, syn::Expr) = match (m.method.to_string().as_str(), m.args.len()) {
            ("first", 0) => {
                (syn::parse_quote_spanned!(span=> !#r.is_empty()), syn::parse_quote_spanned!(span=> &#r[0]))
            }
            ("last", 0) => {
                (syn::parse_quote_spanned!(span=> !#r.is_empty()), syn::parse_quote_spanned!(span=> &#r[#r.len() - 1]))
            }
            // (An index that is a name or a literal, read twice.)
            ("get", 1) if matches!(&m.args[0], syn::Expr::Path(_) | syn::Expr::Lit(_)) => {
                let i = &m.args[0];
                (syn::parse_quote_spanned!(span=> #i < #r.len()), syn::parse_quote_spanned!(span=> &#r[#i]))
            }
            _ => return None,
        };
        Some((found, ts.elems[0].clone(), element))
    }

    /// `matches!(e, PAT)` and `matches!(e, PAT if guard)`.
    pub(crate) fn matches_macro(&mut self, mac: &syn::Macro) -> syn::Result<Value> {
        let (e, pat, guard) = mac.parse_body_with(|input: syn::parse::ParseStream| {
            let e: syn::Expr = input.parse()?;
            input.parse::<syn::Token![,]>()?;
            let pat = syn::Pat::parse_multi_with_leading_vert(input)?;
            let guard = if input.peek(syn::Token![if]) {
                input.parse::<syn::Token![if]>()?;
                Some(input.parse::<syn::Expr>()?)
            } else {
                None
            };
            let _ = input.parse::<Option<syn::Token![,]>>()?;
            Ok((e, pat, guard))
        })?;
        let scrutinee = self.agg(&e)?;
        let test = match self.pat_test(&pat, &scrutinee)? {
            Some(t) => t,
            None => self.bool_const(true),
        };
        let Some(guard) = guard else { return Ok(test) };
        let var = self.new_var("matches", BOOL);
        self.effect(OpKind::DeclVar { var, init: test });
        self.push_region();
        self.push_scope();
        let r = self.pat_bind(&pat, scrutinee).and_then(|_| self.bool_expr(&guard));
        self.pop_scope();
        let g = r?;
        self.effect(OpKind::SetVar(var, g));
        let then_region = self.pop_region();
        self.effect(OpKind::If { cond: test, then_region, else_region: Region::default() });
        Ok(self.emit_s(OpKind::GetVar(var), BOOL))
    }
}

/// `Mode::Fast`, `Self::A`: a path that names an enum variant (capitalised, not a std
/// constant, and not written like a constant, `config::MAX_ITER`).
pub(crate) fn is_variant_path(p: &syn::Path) -> bool {
    let (Some(first), Some(last)) = (p.segments.first(), p.segments.last()) else { return false };
    let first = first.ident.to_string();
    let last = last.ident.to_string();
    let std = Scalar::from_name(&first).is_some() || matches!(first.as_str(), "std" | "core" | "alloc");
    let constant_like = last.len() > 1 && !last.chars().any(|c| c.is_ascii_lowercase());
    p.segments.len() >= 2 && !std && !constant_like && last.starts_with(|c: char| c.is_ascii_uppercase())
}

fn is_capitalised(i: &syn::Ident) -> bool {
    i.to_string().starts_with(|c: char| c.is_ascii_uppercase())
}

/// `i32::MAX`, `f64::consts::PI`: a path to a number constant of std.
fn is_const_path(p: &syn::Path) -> bool {
    let first = p.segments.first().map(|s| s.ident.to_string()).unwrap_or_default();
    p.segments.len() >= 2 && (Scalar::from_name(&first).is_some() || first == "std" || first == "core")
}

/// The variant a pattern names and the fields it binds (`Shape::Circle(r)`: `("0", r)`;
/// `Shape::Square { side }`: `("side", side)`), for enum parameters. Fields may be bound
/// to names or ignored (`_`, a trailing `..`); nothing else is supported.
fn variant_fields(p: &syn::Pat) -> syn::Result<(String, Vec<(String, syn::PatIdent)>)> {
    fn unsupported<T>(p: &syn::Pat) -> syn::Result<T> {
        err_at(p, "cotan binds the fields of enum variants to plain names (`Shape::Circle(r)`, `Shape::Square { side }`) or ignores them (`_`, `..`); match nested patterns inside the arm")
    }
    let mut fields = vec![];
    let mut field = |name: String, sub: &syn::Pat| -> syn::Result<()> {
        match sub {
            syn::Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => fields.push((name, pi.clone())),
            syn::Pat::Wild(_) => {}
            p => return unsupported(p),
        }
        Ok(())
    };
    let path = match p {
        syn::Pat::TupleStruct(ts) => {
            let n = ts.elems.len();
            for (k, e) in ts.elems.iter().enumerate() {
                match e {
                    syn::Pat::Rest(_) if k + 1 == n => {}
                    e => field(k.to_string(), e)?,
                }
            }
            &ts.path
        }
        syn::Pat::Struct(st) => {
            for fp in &st.fields {
                field(crate::record::member_name(&fp.member), &fp.pat)?;
            }
            &st.path
        }
        p => return unsupported(p),
    };
    Ok((quote::ToTokens::to_token_stream(path).to_string(), fields))
}

/// A capitalised name in a pattern is a constant in Rust (`LIMIT => ..`), whose value cotan
/// cannot see, rather than a new binding.
fn check_not_const(pi: &syn::PatIdent) -> syn::Result<()> {
    let name = pi.ident.to_string();
    if pi.subpat.is_none() && name.starts_with(|c: char| c.is_ascii_uppercase()) {
        return err_at(pi, format!("cotan cannot see the value of `{name}` from inside the function; match a literal (`3 =>`) or test `x if x == {name}` with `{name}` passed as a parameter"));
    }
    Ok(())
}

/// Whether a pattern binds a name.
fn binds_names(p: &syn::Pat) -> bool {
    use syn::Pat as P;
    match p {
        // (A capitalised name is a variant or a constant in Rust, not a binding.)
        P::Ident(i) => !is_capitalised(&i.ident) || i.subpat.is_some(),
        P::Paren(p) => binds_names(&p.pat),
        P::Reference(r) => binds_names(&r.pat),
        P::Or(o) => o.cases.iter().any(binds_names),
        P::Tuple(t) => t.elems.iter().any(binds_names),
        P::TupleStruct(t) => t.elems.iter().any(binds_names),
        P::Slice(s) => s.elems.iter().any(binds_names),
        P::Type(t) => binds_names(&t.pat),
        _ => false,
    }
}
