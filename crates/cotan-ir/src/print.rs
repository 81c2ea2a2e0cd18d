//! The IR's text form: one operation per line, nested regions indented by two spaces.
//!
//! ```text
//! fn rosen(%0 "x": f64, %1 "y": &[f64]) -> (f64) {
//!   %2: f64 = const 1.0
//!   %3: f64 = sub %2, %0 @4
//!   var $0 "s": f64 = %2
//!   for %4 "i": usize in %5..%6 step %7 rev exit $1 {
//!     %8: f64 = load %1[%4]
//!   }
//!   return %3
//! }
//! ```
//!
//! `%N` is the value with arena index N and `$N` the var with index N; a quoted string after
//! either is its name. `@N` is a span, printed only when it is not `SpanId::NONE`: at the end
//! of an op's first line for the op, after the type of a defined value for the value (only
//! when it differs from its op's span). Values that no op or parameter defines are listed as
//! `undef %N: T` and vars that no `var` op declares as `local $N "name": T`, at the top of the
//! body, so that [`parse`](crate::parse()) rebuilds the function exactly. The grammar is in `parse.rs`.

use std::fmt::{self, Write};

use crate::{Access, BinOp, CmpOp, Const, Function, MemKind, Op, OpKind, Region, SpanId, Ty, UnOp, Value, Var};

/// The whole function as text.
pub fn print(f: &Function) -> String {
    let mut p = Printer { f, out: String::new(), depth: 0 };
    p.function();
    p.out
}

/// One op (with its nested regions, unindented) as text, without a trailing newline.
pub fn print_op(f: &Function, op: &Op) -> String {
    let mut p = Printer { f, out: String::new(), depth: 0 };
    p.op(op);
    p.out.pop();
    p.out
}

/// A type as the text form writes it. Unlike `Ty`'s `Display`, an owned cell is `Box<T>`
/// so that it cannot be confused with a scalar.
pub fn print_ty(ty: Ty) -> String {
    let m = match ty {
        Ty::Scalar(s) => return s.name().to_string(),
        Ty::Mem(m) => m,
    };
    let inner = match (m.kind, m.access) {
        (MemKind::Cell, Access::Owned) => format!("Box<{}>", m.elem),
        (MemKind::Ptr | MemKind::ArrayPtr(_), _) => return crate::types::ptr_text(m),
        (kind, _) => kind.rust(m.elem),
    };
    match m.access {
        Access::Shared => format!("&{inner}"),
        Access::Mut => format!("&mut {inner}"),
        Access::Owned => inner,
    }
}

/// A literal; floats use `{:?}` (shortest exact round trip), ints never contain `.` or `e`.
pub(crate) fn print_const(c: Const) -> String {
    match c {
        Const::Float(x) if x.is_nan() && x.to_bits() != f64::NAN.to_bits() => {
            // Keep the payload and sign of unusual NaNs.
            format!("NaN({})", x.to_bits())
        }
        Const::Float(x) => format!("{x:?}"),
        Const::Int(i) => i.to_string(),
        Const::Bool(b) => b.to_string(),
    }
}

pub(crate) fn unop_name(op: UnOp) -> &'static str {
    match op {
        UnOp::Neg => "neg",
        UnOp::Not => "not",
    }
}

pub(crate) fn binop_name(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "add",
        BinOp::Sub => "sub",
        BinOp::Mul => "mul",
        BinOp::Div => "div",
        BinOp::Rem => "rem",
        BinOp::BitAnd => "and",
        BinOp::BitOr => "or",
        BinOp::BitXor => "xor",
        BinOp::Shl => "shl",
        BinOp::Shr => "shr",
    }
}

pub(crate) fn cmpop_name(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Eq => "eq",
        CmpOp::Ne => "ne",
        CmpOp::Lt => "lt",
        CmpOp::Le => "le",
        CmpOp::Gt => "gt",
        CmpOp::Ge => "ge",
    }
}

impl fmt::Display for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print(self))
    }
}

/// True if `s` can be written bare (otherwise it is quoted).
fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

struct Printer<'f> {
    f: &'f Function,
    out: String,
    depth: usize,
}

impl Printer<'_> {
    fn function(&mut self) {
        let f = self.f;
        if is_ident(&f.name) {
            write!(self.out, "fn {}(", f.name).unwrap();
        } else {
            write!(self.out, "fn {:?}(", f.name).unwrap();
        }
        for (i, &p) in f.params.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            self.value_def(p, SpanId::NONE);
        }
        self.out.push(')');
        if !f.returns.is_empty() {
            let tys: Vec<String> = f.returns.iter().map(|&t| print_ty(t)).collect();
            write!(self.out, " -> ({})", tys.join(", ")).unwrap();
        }
        self.out.push_str(" {\n");
        self.depth = 1;
        self.declarations();
        for op in &f.body.ops {
            self.op(op);
        }
        self.out.push_str("}\n");
    }

    /// The vars and values that no op declares, so that the arenas survive a round trip.
    fn declarations(&mut self) {
        let f = self.f;
        let mut declared_vars = vec![false; f.vars.len()];
        let mut defined = vec![false; f.values.len()];
        let mut mark = |v: Value| {
            if let Some(d) = defined.get_mut(v.0 as usize) {
                *d = true;
            }
        };
        f.params.iter().for_each(|&p| mark(p));
        f.walk(&mut |op| {
            op.result.into_iter().chain(op.kind.inner_defs()).for_each(&mut mark);
            if let OpKind::DeclVar { var, .. } = op.kind {
                if let Some(d) = declared_vars.get_mut(var.0 as usize) {
                    *d = true;
                }
            }
        });
        if let Some(g) = &f.generic_float {
            self.indent();
            writeln!(self.out, "generic {g:?}").unwrap();
        }
        if f.tape_param {
            self.indent();
            self.out.push_str("tape\n");
        }
        if f.unsafe_code {
            self.indent();
            self.out.push_str("unsafe\n");
        }
        for t in &f.type_params {
            self.indent();
            writeln!(self.out, "typeparam {t:?}").unwrap();
        }
        for (i, r) in f.records.iter().enumerate() {
            self.indent();
            writeln!(self.out, "struct {i} = {r:?}").unwrap();
        }
        for (i, _) in declared_vars.iter().enumerate().filter(|(_, d)| !**d) {
            self.indent();
            self.out.push_str("local ");
            self.var_decl(Var(i as u32));
            self.out.push('\n');
        }
        for (i, _) in defined.iter().enumerate().filter(|(_, d)| !**d) {
            self.indent();
            self.out.push_str("undef ");
            self.value_def(Value(i as u32), SpanId::NONE);
            self.out.push('\n');
        }
    }

    fn indent(&mut self) {
        for _ in 0..self.depth {
            self.out.push_str("  ");
        }
    }

    /// `%N "name": T @S`; the span only when it differs from `default_span`.
    fn value_def(&mut self, v: Value, default_span: SpanId) {
        write!(self.out, "%{}", v.0).unwrap();
        let Some(data) = self.f.values.get(v.0 as usize) else {
            self.out.push_str(": ?");
            return;
        };
        if let Some(name) = &data.name {
            write!(self.out, " {name:?}").unwrap();
        }
        write!(self.out, ": {}", print_ty(data.ty)).unwrap();
        if data.span != default_span {
            write!(self.out, " @{}", data.span.0).unwrap();
        }
    }

    /// `$N "name": T`.
    fn var_decl(&mut self, v: Var) {
        match self.f.vars.get(v.0 as usize) {
            Some(data) => write!(self.out, "${} {:?}: {}", v.0, data.name, data.ty).unwrap(),
            None => write!(self.out, "${} \"?\": ?", v.0).unwrap(),
        }
    }

    fn span(&mut self, s: SpanId) {
        if s != SpanId::NONE {
            write!(self.out, " @{}", s.0).unwrap();
        }
    }

    fn values(&mut self, vs: &[Value]) {
        for (i, v) in vs.iter().enumerate() {
            let sep = if i > 0 { ", " } else { "" };
            write!(self.out, "{sep}%{}", v.0).unwrap();
        }
    }

    fn region(&mut self, r: &Region) {
        self.out.push_str(" {\n");
        self.depth += 1;
        for op in &r.ops {
            self.op(op);
        }
        self.depth -= 1;
        self.indent();
        self.out.push('}');
    }

    fn op(&mut self, op: &Op) {
        self.indent();
        if let Some(r) = op.result {
            self.value_def(r, op.span);
            self.out.push_str(" = ");
        }
        let o = &mut self.out;
        match &op.kind {
            OpKind::Const(c) => write!(o, "const {}", print_const(*c)).unwrap(),
            OpKind::Unary(u, a) => write!(o, "{} %{}", unop_name(*u), a.0).unwrap(),
            OpKind::Binary(b, x, y) => write!(o, "{} %{}, %{}", binop_name(*b), x.0, y.0).unwrap(),
            OpKind::Cmp(c, x, y) => write!(o, "{} %{}, %{}", cmpop_name(*c), x.0, y.0).unwrap(),
            OpKind::Cast(a) => write!(o, "cast %{}", a.0).unwrap(),
            OpKind::Math(m, args) => {
                write!(o, "{}", m.name()).unwrap();
                if !args.is_empty() {
                    self.out.push(' ');
                    self.values(args);
                }
            }
            OpKind::Select(c, a, b) => write!(o, "select %{}, %{}, %{}", c.0, a.0, b.0).unwrap(),
            OpKind::Load { mem, index } => {
                write!(o, "load %{}", mem.0).unwrap();
                if let Some(i) = index {
                    write!(o, "[%{}]", i.0).unwrap();
                }
            }
            OpKind::Store { mem, index, value } => {
                write!(o, "store %{}", mem.0).unwrap();
                if let Some(i) = index {
                    write!(o, "[%{}]", i.0).unwrap();
                }
                write!(o, ", %{}", value.0).unwrap();
            }
            OpKind::Len(a) => write!(o, "len %{}", a.0).unwrap(),
            OpKind::Field { base, name } => write!(o, "field %{}, {name:?}", base.0).unwrap(),
            OpKind::Matches { value, pattern } => write!(o, "matches %{}, {pattern:?}", value.0).unwrap(),
            OpKind::VariantField { value, variant, field } => {
                write!(o, "variant_field %{}, {variant:?}, {field:?}", value.0).unwrap()
            }
            OpKind::Alloc { len, init } => write!(o, "alloc [%{}; %{}]", init.0, len.0).unwrap(),
            OpKind::Slice { base, start, end } => write!(o, "slice %{}[%{}..%{}]", base.0, start.0, end.0).unwrap(),
            OpKind::Elem { base, index } => write!(o, "elem %{}[%{}]", base.0, index.0).unwrap(),
            OpKind::Offset { base, offset } => write!(o, "offset %{}, %{}", base.0, offset.0).unwrap(),
            OpKind::Fill { mem, value, resize: None } => write!(o, "fill %{}, %{}", mem.0, value.0).unwrap(),
            OpKind::Fill { mem, value, resize: Some([len, old]) } => {
                write!(o, "fill %{}, %{} len %{} from %{}", mem.0, value.0, len.0, old.0).unwrap()
            }
            OpKind::VecPush { mem, value } => write!(o, "vpush %{}, %{}", mem.0, value.0).unwrap(),
            OpKind::Call { callee, args, outs, tape } => {
                let args: Vec<String> =
                    args.iter().map(|(v, m)| format!("{}%{}", if *m { "mut " } else { "" }, v.0)).collect();
                let tape = if *tape { "tape " } else { "" };
                write!(o, "call {tape}{callee:?}({})", args.join(", ")).unwrap();
                if !outs.is_empty() {
                    let outs: Vec<String> = outs.iter().map(|v| format!("${}", v.0)).collect();
                    write!(o, " -> {}", outs.join(", ")).unwrap();
                }
            }
            OpKind::DeclVar { var, init } => {
                o.push_str("var ");
                self.var_decl(*var);
                write!(self.out, " = %{}", init.0).unwrap();
            }
            OpKind::GetVar(v) => write!(o, "get ${}", v.0).unwrap(),
            OpKind::SetVar(v, x) => write!(o, "set ${}, %{}", v.0, x.0).unwrap(),
            OpKind::Assert { cond, message } => write!(o, "assert %{}, {message:?}", cond.0).unwrap(),
            OpKind::Print { mac, format, args } => {
                write!(o, "print {mac:?}, {format:?}").unwrap();
                for a in args {
                    write!(o, ", %{}", a.0).unwrap();
                }
            }
            OpKind::Push(v) => write!(o, "push %{}", v.0).unwrap(),
            OpKind::Pop => o.push_str("pop"),
            OpKind::ZeroRecord(v) => write!(o, "zeroed %{}", v.0).unwrap(),
            OpKind::AllocRecords { len, fields } => {
                let fields: Vec<String> = fields
                    .iter()
                    .map(|(n, f)| match f {
                        crate::ZeroField::Number(s) => format!("{n}: {}", s.name()),
                        crate::ZeroField::Array(s, k) => format!("{n}: [{}; {k}]", s.name()),
                    })
                    .collect();
                write!(o, "zeroed_structs [{{{}}}; %{}]", fields.join(", "), len.0).unwrap()
            }
            OpKind::CopyRecords { src, zero, zeroed } => {
                write!(o, "{} %{}, {zero:?}", if *zeroed { "zeroed_copy" } else { "copy" }, src.0).unwrap()
            }
            OpKind::Return(vs) => {
                o.push_str("return");
                if !vs.is_empty() {
                    self.out.push(' ');
                    self.values(vs);
                }
            }
            OpKind::If { cond, then_region, else_region } => {
                write!(o, "if %{}", cond.0).unwrap();
                self.span(op.span);
                self.region(then_region);
                if !else_region.ops.is_empty() {
                    self.out.push_str(" else");
                    self.region(else_region);
                }
                self.out.push('\n');
                return;
            }
            OpKind::For { index, lo, hi, step, inclusive, reverse, body, exit } => {
                o.push_str("for ");
                self.value_def(*index, op.span);
                let range = if *inclusive { "..=" } else { ".." };
                write!(self.out, " in %{}{range}%{}", lo.0, hi.0).unwrap();
                if let Some(s) = step {
                    write!(self.out, " step %{}", s.0).unwrap();
                }
                if *reverse {
                    self.out.push_str(" rev");
                }
                if let Some(e) = exit {
                    write!(self.out, " exit ${}", e.0).unwrap();
                }
                self.span(op.span);
                self.region(body);
                self.out.push('\n');
                return;
            }
            OpKind::While { cond_region, cond, body, exit } => {
                o.push_str("while");
                if let Some(e) = exit {
                    write!(self.out, " exit ${}", e.0).unwrap();
                }
                self.span(op.span);
                self.region(cond_region);
                write!(self.out, " cond %{} do", cond.0).unwrap();
                self.region(body);
                self.out.push('\n');
                return;
            }
        }
        self.span(op.span);
        self.out.push('\n');
    }
}
