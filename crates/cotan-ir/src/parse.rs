//! Reads the text form written by [`print`](crate::print()) back into a [`Function`].
//!
//! ```text
//! function  := "fn" (IDENT | STRING) "(" [valuedef ("," valuedef)*] ")" ["->" "(" [ty ("," ty)*] ")"] body
//! body      := "{" NL (decl NL | op NL)* "}"           decl lines only at the top level
//! region    := "{" NL (op NL)* "}"
//! decl      := "local" VAR STRING ":" scalar  |  "undef" valuedef  |  "unsafe" | "tape" | ...
//! valuedef  := VALUE [STRING] ":" ty [SPAN]            VALUE = %N, VAR = $N, SPAN = @N
//! op        := [valuedef "="] kind
//! kind      := "const" literal [SPAN]
//!            | ("neg" | "not" | "cast" | "len" | "push") VALUE [SPAN]
//!            | binop VALUE "," VALUE [SPAN]            add sub mul div rem and or xor shl shr
//!            | cmpop VALUE "," VALUE [SPAN]            eq ne lt le gt ge
//!            | mathfn [VALUE ("," VALUE)*] [SPAN]      sin, powi, mul_add, ... (MathFn names)
//!            | "select" VALUE "," VALUE "," VALUE [SPAN]
//!            | "load" VALUE ["[" VALUE "]"] [SPAN]
//!            | "store" VALUE ["[" VALUE "]"] "," VALUE [SPAN]
//!            | "alloc" "[" VALUE ";" VALUE "]" [SPAN]    alloc [init; len]
//!            | "slice" VALUE "[" VALUE ".." VALUE "]" [SPAN]    &base[start..end]
//!            | "elem" VALUE "[" VALUE "]" [SPAN]    &base[index], a row of nested memory
//!            | "offset" VALUE "," VALUE [SPAN]         base from element k on (a pointer, a cell, an array)
//!            | "fill" VALUE "," VALUE [SPAN]
//!            | "var" VAR STRING ":" scalar "=" VALUE [SPAN]
//!            | "get" VAR [SPAN]  |  "set" VAR "," VALUE [SPAN]
//!            | "assert" VALUE "," STRING [SPAN]  |  "pop" [SPAN]
//!            | "return" [VALUE ("," VALUE)*] [SPAN]
//!            | "if" VALUE [SPAN] region ["else" region]
//!            | "for" valuedef "in" VALUE (".." | "..=") VALUE ["step" VALUE] ["rev"] ["exit" VAR] [SPAN] region
//!            | "while" ["exit" VAR] [SPAN] region "cond" VALUE "do" region
//! ty        := scalar | "&" ["mut"] mem | mem | "Box" "<" scalar ">" | "*" ("const" | "mut") (scalar | "[" scalar ";" INT "]")
//! mem       := "[" elem [";" INT] "]" | "Vec" "<" elem ">" | scalar (a cell, only after "&")
//! elem      := scalar | "[" elem [";" INT] "]" | "Vec" "<" elem ">"   (rows of nested memory)
//! literal   := ["-"] (INT | FLOAT | "inf" | "NaN" ["(" INT ")"]) | "true" | "false"
//! ```
//!
//! A defined value's `@N` is written only when it differs from its op's span, which ends the
//! op's first line; a parameter's or `undef` value's only when it is not `SpanId::NONE`.
//! `//` starts a comment. Value numbers are arena indices: the parser puts every value at its
//! index, and fills indices that nothing defines with an unnamed `f64` value.

use std::collections::BTreeMap;
use std::fmt;

use crate::{
    Access, BinOp, CmpOp, Const, Dim, Function, MathFn, MemKind, MemTy, Op, OpKind, Region, Scalar, SpanId, Ty, UnOp,
    Value, ValueData, Var, VarData,
};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub col: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.col, self.message)
    }
}

impl std::error::Error for ParseError {}

/// Parses a function in the text form.
pub fn parse(text: &str) -> Result<Function, ParseError> {
    let mut p = Parser {
        toks: lex(text)?,
        pos: 0,
        values: BTreeMap::new(),
        vars: BTreeMap::new(),
        value_uses: vec![],
        var_uses: vec![],
        records: vec![],
        generic_float: None,
        tape_param: false,
        unsafe_code: false,
        type_params: vec![],
    };
    p.skip_newlines();
    let f = p.function()?;
    p.skip_newlines();
    if p.peek() != &Tok::Eof {
        return Err(p.expected("end of input after the function's closing `}`"));
    }
    p.finish(f)
}

/// Indices above this are rejected, so that a typo cannot make the parser allocate gigabytes.
const MAX_INDEX: u32 = 1 << 22;

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Value(u32),
    Var(u32),
    Span(u32),
    Ident(String),
    /// Digits, possibly with a fraction and an exponent; never a sign.
    Num(String),
    Str(String),
    Punct(&'static str),
    Newline,
    Eof,
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Value(n) => write!(f, "`%{n}`"),
            Tok::Var(n) => write!(f, "`${n}`"),
            Tok::Span(n) => write!(f, "`@{n}`"),
            Tok::Ident(s) | Tok::Num(s) => write!(f, "`{s}`"),
            Tok::Str(s) => write!(f, "string {s:?}"),
            Tok::Punct(p) => write!(f, "`{p}`"),
            Tok::Newline => f.write_str("end of line"),
            Tok::Eof => f.write_str("end of input"),
        }
    }
}

struct Token {
    tok: Tok,
    line: usize,
    col: usize,
}

/// Longest first, so that `..=` is not read as `..` then `=`.
const PUNCTS: &[&str] = &["->", "..=", "..", "(", ")", "{", "}", "[", "]", "<", ">", ",", ";", ":", "=", "&", "-", "*"];

fn lex(text: &str) -> Result<Vec<Token>, ParseError> {
    let chars: Vec<char> = text.chars().collect();
    let mut toks = vec![];
    let (mut i, mut line, mut line_start) = (0, 1, 0);
    while i < chars.len() {
        let c = chars[i];
        let (tok_line, col) = (line, i - line_start + 1);
        let err = |message: String| ParseError { line: tok_line, col, message };
        let start = i;
        let tok = if c == '\n' {
            line += 1;
            line_start = i + 1;
            i += 1;
            Tok::Newline
        } else if c.is_whitespace() {
            i += 1;
            continue;
        } else if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        } else if matches!(c, '%' | '$' | '@') {
            i += 1;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            let digits: String = chars[start + 1..i].iter().collect();
            let what = match c {
                '%' => "a value number",
                '$' => "a var number",
                _ => "a span number",
            };
            if digits.is_empty() {
                return Err(err(format!("expected {what} after `{c}`")));
            }
            let n: u32 = digits.parse().map_err(|_| err(format!("{what} `{c}{digits}` is too large")))?;
            match c {
                '%' => Tok::Value(n),
                '$' => Tok::Var(n),
                _ => Tok::Span(n),
            }
        } else if c.is_ascii_alphabetic() || c == '_' {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            Tok::Ident(chars[start..i].iter().collect())
        } else if c.is_ascii_digit() {
            i = lex_number(&chars, i);
            Tok::Num(chars[start..i].iter().collect())
        } else if c == '"' {
            let (s, end) = lex_string(&chars, i).map_err(err)?;
            i = end;
            Tok::Str(s)
        } else if let Some(p) =
            PUNCTS.iter().find(|p| p.chars().enumerate().all(|(k, pc)| chars.get(i + k) == Some(&pc)))
        {
            i += p.chars().count();
            Tok::Punct(p)
        } else {
            return Err(err(format!("unexpected character `{c}`")));
        };
        toks.push(Token { tok, line: tok_line, col });
    }
    let col = chars.len() - line_start + 1;
    toks.push(Token { tok: Tok::Eof, line, col });
    Ok(toks)
}

/// The end of the number starting at `i`: digits, then `.digits`, then `e[+-]digits`.
fn lex_number(chars: &[char], mut i: usize) -> usize {
    let digits = |mut i: usize| {
        while i < chars.len() && chars[i].is_ascii_digit() {
            i += 1;
        }
        i
    };
    i = digits(i);
    if chars.get(i) == Some(&'.') && chars.get(i + 1).is_some_and(char::is_ascii_digit) {
        i = digits(i + 1);
    }
    if matches!(chars.get(i), Some('e' | 'E')) {
        let sign = usize::from(matches!(chars.get(i + 1), Some('+' | '-')));
        if chars.get(i + 1 + sign).is_some_and(char::is_ascii_digit) {
            i = digits(i + 1 + sign);
        }
    }
    i
}

/// A string in Rust's `{:?}` form starting at the quote at `i`; returns it and the index after it.
fn lex_string(chars: &[char], mut i: usize) -> Result<(String, usize), String> {
    let mut s = String::new();
    i += 1;
    loop {
        match chars.get(i) {
            None | Some('\n') => return Err("unterminated string".into()),
            Some('"') => return Ok((s, i + 1)),
            Some('\\') => {
                let esc = chars.get(i + 1).copied();
                i += 2;
                s.push(match esc {
                    Some('n') => '\n',
                    Some('r') => '\r',
                    Some('t') => '\t',
                    Some('0') => '\0',
                    Some(c @ ('\\' | '"' | '\'')) => c,
                    Some('u') if chars.get(i) == Some(&'{') => {
                        let close = chars[i..].iter().position(|&c| c == '}').ok_or("unterminated `\\u{` escape")?;
                        let hex: String = chars[i + 1..i + close].iter().collect();
                        i += close + 1;
                        u32::from_str_radix(&hex, 16)
                            .ok()
                            .and_then(char::from_u32)
                            .ok_or(format!("bad escape `\\u{{{hex}}}`"))?
                    }
                    Some(c) => return Err(format!("unknown escape `\\{c}` in string")),
                    None => return Err("unterminated string".into()),
                });
            }
            Some(&c) => {
                s.push(c);
                i += 1;
            }
        }
    }
}

struct Parser {
    toks: Vec<Token>,
    pos: usize,
    /// Defined values, by index.
    values: BTreeMap<u32, ValueData>,
    /// Declared vars, by index.
    vars: BTreeMap<u32, VarData>,
    /// Every value operand and var reference, with its position, checked once all are defined.
    value_uses: Vec<(u32, usize, usize)>,
    var_uses: Vec<(u32, usize, usize)>,
    /// Record types, from `struct N = "Type"` lines.
    records: Vec<String>,
    generic_float: Option<String>,
    tape_param: bool,
    unsafe_code: bool,
    type_params: Vec<String>,
}

/// A value definition before its span default (the op's span) is known.
struct ValueDef {
    id: u32,
    name: Option<String>,
    ty: Ty,
    span: Option<SpanId>,
    at: (usize, usize),
}

type PResult<T> = Result<T, ParseError>;

impl Parser {
    /// The current token; the last one (end of input) once everything is consumed.
    fn token(&self) -> &Token {
        &self.toks[self.pos.min(self.toks.len() - 1)]
    }

    fn peek(&self) -> &Tok {
        &self.token().tok
    }

    /// Consumes a token; `self.pos -= 1` undoes it, even at the end of input.
    fn next(&mut self) -> Tok {
        let t = self.peek().clone();
        self.pos += 1;
        t
    }

    fn here(&self) -> (usize, usize) {
        (self.token().line, self.token().col)
    }

    fn error_at(&self, (line, col): (usize, usize), message: String) -> ParseError {
        ParseError { line, col, message }
    }

    fn expected(&self, what: &str) -> ParseError {
        self.error_at(self.here(), format!("expected {what}, found {}", self.peek()))
    }

    fn eat_punct(&mut self, p: &str) -> bool {
        let found = matches!(self.peek(), Tok::Punct(q) if *q == p);
        if found {
            self.pos += 1;
        }
        found
    }

    fn expect_punct(&mut self, p: &str) -> PResult<()> {
        if self.eat_punct(p) {
            Ok(())
        } else {
            Err(self.expected(&format!("`{p}`")))
        }
    }

    fn eat_keyword(&mut self, kw: &str) -> bool {
        let found = matches!(self.peek(), Tok::Ident(s) if s == kw);
        if found {
            self.pos += 1;
        }
        found
    }

    fn expect_keyword(&mut self, kw: &str) -> PResult<()> {
        if self.eat_keyword(kw) {
            Ok(())
        } else {
            Err(self.expected(&format!("`{kw}`")))
        }
    }

    fn skip_newlines(&mut self) {
        while self.peek() == &Tok::Newline {
            self.pos += 1;
        }
    }

    fn expect_newline(&mut self) -> PResult<()> {
        if self.peek() != &Tok::Newline {
            return Err(self.expected("end of line"));
        }
        self.skip_newlines();
        Ok(())
    }

    fn string_opt(&mut self) -> Option<String> {
        match self.peek().clone() {
            Tok::Str(s) => {
                self.pos += 1;
                Some(s)
            }
            _ => None,
        }
    }

    fn span_opt(&mut self) -> Option<SpanId> {
        match *self.peek() {
            Tok::Span(n) => {
                self.pos += 1;
                Some(SpanId(n))
            }
            _ => None,
        }
    }

    /// A value operand `%N`.
    fn value(&mut self) -> PResult<Value> {
        let (line, col) = self.here();
        match *self.peek() {
            Tok::Value(n) => {
                self.pos += 1;
                self.value_uses.push((n, line, col));
                Ok(Value(n))
            }
            _ => Err(self.expected("a value like `%3`")),
        }
    }

    /// Zero or more comma-separated value operands.
    fn value_list(&mut self) -> PResult<Vec<Value>> {
        let mut vs = vec![];
        if matches!(self.peek(), Tok::Value(_)) {
            vs.push(self.value()?);
            while self.eat_punct(",") {
                vs.push(self.value()?);
            }
        }
        Ok(vs)
    }

    /// A var reference `$N`.
    fn var(&mut self) -> PResult<Var> {
        let (line, col) = self.here();
        match *self.peek() {
            Tok::Var(n) => {
                self.pos += 1;
                self.var_uses.push((n, line, col));
                Ok(Var(n))
            }
            _ => Err(self.expected("a var like `$0`")),
        }
    }

    /// `$N "name": T`, recorded in the var table.
    fn var_decl(&mut self) -> PResult<Var> {
        let at = self.here();
        let var = self.var()?;
        let name = self.string_opt().ok_or_else(|| self.expected("the var's name as a string"))?;
        self.expect_punct(":")?;
        let ty = self.scalar()?;
        if var.0 > MAX_INDEX {
            return Err(self.error_at(at, format!("var number ${} is too large", var.0)));
        }
        let data = VarData { ty, name };
        match self.vars.get(&var.0) {
            Some(old) if *old != data => Err(self.error_at(
                at,
                format!(
                    "var ${} was declared earlier as {:?}: {}; here it is {:?}: {}",
                    var.0, old.name, old.ty, data.name, data.ty
                ),
            )),
            Some(_) => Ok(var),
            None => {
                self.vars.insert(var.0, data);
                Ok(var)
            }
        }
    }

    fn scalar(&mut self) -> PResult<Scalar> {
        match self.peek() {
            Tok::Ident(s) if Scalar::from_name(s).is_some() => {
                let s = Scalar::from_name(s).unwrap();
                self.pos += 1;
                Ok(s)
            }
            _ => Err(self.expected("a scalar type like `f64`, `usize` or `bool`")),
        }
    }

    /// `[X]`, `[X; N]` or `Vec<X>`, `X` a scalar or (for nested memory) another container.
    fn container(&mut self) -> PResult<Option<(Scalar, MemKind)>> {
        let (dim, (elem, inner)) = if self.eat_punct("[") {
            let inner = self.element()?;
            let dim = if self.eat_punct(";") {
                let at = self.here();
                match self.next() {
                    Tok::Num(n) => {
                        Dim::Array(n.parse().map_err(|_| self.error_at(at, format!("bad array length `{n}`")))?)
                    }
                    _ => {
                        self.pos -= 1;
                        return Err(self.expected("an array length"));
                    }
                }
            } else {
                Dim::Slice
            };
            self.expect_punct("]")?;
            (dim, inner)
        } else if self.eat_keyword("Vec") {
            self.expect_punct("<")?;
            let inner = self.element()?;
            self.expect_punct(">")?;
            (Dim::Vec, inner)
        } else {
            return Ok(None);
        };
        let kind = match inner {
            None => dim.kind(),
            Some(row) => MemKind::nest(dim, row).ok_or_else(|| self.expected("rows that are arrays or vectors"))?,
        };
        Ok(Some((elem, kind)))
    }

    /// The element of a container: a scalar, or rows (`None` for a scalar).
    fn element(&mut self) -> PResult<(Scalar, Option<MemKind>)> {
        match self.container()? {
            Some((elem, kind)) => Ok((elem, Some(kind))),
            None => Ok((self.scalar()?, None)),
        }
    }

    fn ty(&mut self) -> PResult<Ty> {
        if self.eat_punct("*") {
            // A raw pointer: `*const f64`, `*mut [f64; 3]`.
            let access = if self.eat_keyword("mut") {
                Access::Mut
            } else {
                self.expect_keyword("const")?;
                Access::Shared
            };
            let (elem, kind) = if self.eat_punct("[") {
                let elem = self.scalar()?;
                self.expect_punct(";")?;
                let at = self.here();
                let n = match self.next() {
                    Tok::Num(n) => n.parse().map_err(|_| self.error_at(at, format!("bad array length `{n}`")))?,
                    _ => {
                        self.pos -= 1;
                        return Err(self.expected("an array length"));
                    }
                };
                self.expect_punct("]")?;
                (elem, MemKind::ArrayPtr(n))
            } else {
                (self.scalar()?, MemKind::Ptr)
            };
            return Ok(Ty::Mem(MemTy { elem, kind, access }));
        }
        let access = if self.eat_punct("&") {
            if self.eat_keyword("mut") {
                Access::Mut
            } else {
                Access::Shared
            }
        } else {
            Access::Owned
        };
        let mem = |elem, kind| Ok(Ty::Mem(MemTy { elem, kind, access }));
        if self.eat_keyword("struct") {
            let at = self.here();
            return match self.next() {
                Tok::Num(n) => mem(
                    Scalar::F64,
                    MemKind::Record(n.parse().map_err(|_| self.error_at(at, format!("bad struct number `{n}`")))?),
                ),
                _ => Err(self.error_at(at, "expected a struct number".to_string())),
            };
        }
        if let Some((elem, kind)) = self.container()? {
            return mem(elem, kind);
        }
        if access == Access::Owned && self.eat_keyword("Box") {
            self.expect_punct("<")?;
            let elem = self.scalar()?;
            self.expect_punct(">")?;
            return mem(elem, MemKind::Cell);
        }
        let s = self.scalar().map_err(|_| self.expected("a type like `f64`, `&[f64]`, `&mut f64` or `Vec<f32>`"))?;
        match access {
            Access::Owned => Ok(Ty::Scalar(s)),
            _ => mem(s, MemKind::Cell),
        }
    }

    /// `%N "name": T @S`; the caller records it once the default span is known.
    fn value_def(&mut self) -> PResult<ValueDef> {
        let at = self.here();
        let Tok::Value(id) = *self.peek() else {
            return Err(self.expected("a value definition like `%3: f64`"));
        };
        self.pos += 1;
        let name = self.string_opt();
        self.expect_punct(":")?;
        let ty = self.ty()?;
        let span = self.span_opt();
        Ok(ValueDef { id, name, ty, span, at })
    }

    fn define(&mut self, d: ValueDef, default_span: SpanId) -> PResult<Value> {
        if d.id > MAX_INDEX {
            return Err(self.error_at(d.at, format!("value number %{} is too large", d.id)));
        }
        if self.values.contains_key(&d.id) {
            return Err(self.error_at(d.at, format!("value %{} is defined twice", d.id)));
        }
        let data = ValueData { ty: d.ty, name: d.name, span: d.span.unwrap_or(default_span) };
        self.values.insert(d.id, data);
        Ok(Value(d.id))
    }

    fn function(&mut self) -> PResult<Function> {
        self.expect_keyword("fn")?;
        let name = match self.next() {
            Tok::Ident(s) | Tok::Str(s) => s,
            _ => {
                self.pos -= 1;
                return Err(self.expected("the function's name"));
            }
        };
        let mut f = Function::new(name);
        self.expect_punct("(")?;
        if !self.eat_punct(")") {
            loop {
                let d = self.value_def()?;
                f.params.push(self.define(d, SpanId::NONE)?);
                if self.eat_punct(")") {
                    break;
                }
                self.expect_punct(",").map_err(|_| self.expected("`,` or `)`"))?;
            }
        }
        if self.eat_punct("->") {
            self.expect_punct("(")?;
            if !self.eat_punct(")") {
                loop {
                    f.returns.push(self.ty()?);
                    if self.eat_punct(")") {
                        break;
                    }
                    self.expect_punct(",").map_err(|_| self.expected("`,` or `)`"))?;
                }
            }
        }
        f.body = self.region(true)?;
        Ok(f)
    }

    /// `{` NL ops `}`; at the top level also `local` and `undef` declarations.
    fn region(&mut self, top: bool) -> PResult<Region> {
        let open = self.here();
        self.expect_punct("{")?;
        self.expect_newline()?;
        let mut ops = vec![];
        loop {
            if self.eat_punct("}") {
                return Ok(Region { ops });
            }
            if self.peek() == &Tok::Eof {
                return Err(
                    self.error_at(open, format!("this `{{` is never closed (input ends at line {})", self.here().0))
                );
            }
            if top && self.eat_keyword("tape") {
                self.tape_param = true;
            } else if top && self.eat_keyword("unsafe") {
                self.unsafe_code = true;
            } else if top && self.eat_keyword("typeparam") {
                match self.next() {
                    Tok::Str(t) => self.type_params.push(t),
                    _ => {
                        self.pos -= 1;
                        return Err(self.expected("the type parameter's declaration, quoted"));
                    }
                }
            } else if top && self.eat_keyword("generic") {
                match self.next() {
                    Tok::Str(name) => self.generic_float = Some(name),
                    _ => {
                        self.pos -= 1;
                        return Err(self.expected("the generic float type's name, quoted"));
                    }
                }
            } else if top && self.eat_keyword("struct") {
                let at = self.here();
                let n = self.next();
                self.expect_punct("=")?;
                match (n, self.next()) {
                    (Tok::Num(n), Tok::Str(name)) if n == self.records.len().to_string() => self.records.push(name),
                    _ => return Err(self.error_at(at, "expected `struct N = \"Type\"`, numbered from 0".to_string())),
                }
            } else if top && self.eat_keyword("local") {
                self.var_decl()?;
            } else if top && self.eat_keyword("undef") {
                let d = self.value_def()?;
                self.define(d, SpanId::NONE)?;
            } else {
                ops.push(self.op()?);
            }
            self.expect_newline()?;
        }
    }

    fn op(&mut self) -> PResult<Op> {
        let result = if matches!(self.peek(), Tok::Value(_)) {
            let d = self.value_def()?;
            self.expect_punct("=")?;
            Some(d)
        } else {
            None
        };
        let at = self.here();
        let Tok::Ident(kw) = self.next() else {
            self.pos -= 1;
            return Err(self.expected("an operation"));
        };
        let (kind, span) = self.kind(&kw, at)?;
        let result = match result {
            Some(d) => Some(self.define(d, span)?),
            None => None,
        };
        Ok(Op { kind, result, span })
    }

    /// The op after its keyword `kw`, and the op's span.
    fn kind(&mut self, kw: &str, at: (usize, usize)) -> PResult<(OpKind, SpanId)> {
        let kind = match kw {
            "if" => return self.if_op(),
            "for" => return self.for_op(),
            "while" => return self.while_op(),
            "const" => OpKind::Const(self.literal()?),
            "neg" => OpKind::Unary(UnOp::Neg, self.value()?),
            "not" => OpKind::Unary(UnOp::Not, self.value()?),
            "cast" => OpKind::Cast(self.value()?),
            "len" => OpKind::Len(self.value()?),
            "variant_field" => {
                let value = self.value()?;
                self.expect_punct(",")?;
                let variant = self.string_opt().ok_or_else(|| self.expected("the variant as a string"))?;
                self.expect_punct(",")?;
                let field = self.string_opt().ok_or_else(|| self.expected("the field as a string"))?;
                OpKind::VariantField { value, variant, field }
            }
            "matches" => {
                let value = self.value()?;
                self.expect_punct(",")?;
                let pattern = self.string_opt().ok_or_else(|| self.expected("the pattern as a string"))?;
                OpKind::Matches { value, pattern }
            }
            "field" => {
                let base = self.value()?;
                self.expect_punct(",")?;
                match self.next() {
                    Tok::Str(name) => OpKind::Field { base, name },
                    _ => {
                        self.pos -= 1;
                        return Err(self.expected("the field's name, quoted"));
                    }
                }
            }
            "push" => OpKind::Push(self.value()?),
            "pop" => OpKind::Pop,
            "zeroed" => OpKind::ZeroRecord(self.value()?),
            "select" => {
                let c = self.value()?;
                let [a, b] = self.comma_pair()?;
                OpKind::Select(c, a, b)
            }
            "load" => {
                let mem = self.value()?;
                OpKind::Load { mem, index: self.index_opt()? }
            }
            "store" => {
                let mem = self.value()?;
                let index = self.index_opt()?;
                self.expect_punct(",")?;
                OpKind::Store { mem, index, value: self.value()? }
            }
            "alloc" => {
                self.expect_punct("[")?;
                let init = self.value()?;
                self.expect_punct(";")?;
                let len = self.value()?;
                self.expect_punct("]")?;
                OpKind::Alloc { len, init }
            }
            "elem" => {
                let base = self.value()?;
                self.expect_punct("[")?;
                let index = self.value()?;
                self.expect_punct("]")?;
                OpKind::Elem { base, index }
            }
            "offset" => {
                let [base, offset] = self.pair()?;
                OpKind::Offset { base, offset }
            }
            "slice" => {
                let base = self.value()?;
                self.expect_punct("[")?;
                let start = self.value()?;
                self.expect_punct("..")?;
                let end = self.value()?;
                self.expect_punct("]")?;
                OpKind::Slice { base, start, end }
            }
            "fill" => {
                let [mem, value] = self.pair()?;
                let resize = if self.eat_keyword("len") {
                    let len = self.value()?;
                    self.expect_keyword("from")?;
                    Some([len, self.value()?])
                } else {
                    None
                };
                OpKind::Fill { mem, value, resize }
            }
            "vpush" => {
                let [mem, value] = self.pair()?;
                OpKind::VecPush { mem, value }
            }
            "call" => {
                let tape = self.eat_keyword("tape");
                let callee = self.string_opt().ok_or_else(|| self.expected("the callee's path as a string"))?;
                self.expect_punct("(")?;
                let mut args = vec![];
                while !self.eat_punct(")") {
                    if !args.is_empty() {
                        self.expect_punct(",")?;
                    }
                    let by_mut = self.eat_keyword("mut");
                    args.push((self.value()?, by_mut));
                }
                let mut outs = vec![];
                if self.eat_punct("->") {
                    outs.push(self.var()?);
                    while self.eat_punct(",") {
                        outs.push(self.var()?);
                    }
                }
                OpKind::Call { callee, args, outs, tape }
            }
            "var" => {
                let var = self.var_decl()?;
                self.expect_punct("=")?;
                OpKind::DeclVar { var, init: self.value()? }
            }
            "get" => OpKind::GetVar(self.var()?),
            "set" => {
                let var = self.var()?;
                self.expect_punct(",")?;
                OpKind::SetVar(var, self.value()?)
            }
            "assert" => {
                let cond = self.value()?;
                self.expect_punct(",")?;
                let message = self.string_opt().ok_or_else(|| self.expected("the assertion's message as a string"))?;
                OpKind::Assert { cond, message }
            }
            "print" => {
                let mac = self.string_opt().ok_or_else(|| self.expected("the macro's name as a string"))?;
                self.expect_punct(",")?;
                let format = self.string_opt().ok_or_else(|| self.expected("the format as a string"))?;
                let args = if self.eat_punct(",") { self.value_list()? } else { vec![] };
                OpKind::Print { mac, format, args }
            }
            "return" => OpKind::Return(self.value_list()?),
            _ => {
                if let Some(op) = binop(kw) {
                    let [a, b] = self.pair()?;
                    OpKind::Binary(op, a, b)
                } else if let Some(op) = cmpop(kw) {
                    let [a, b] = self.pair()?;
                    OpKind::Cmp(op, a, b)
                } else if let Some(m) = MathFn::from_name(kw) {
                    OpKind::Math(m, self.value_list()?)
                } else {
                    return Err(self.error_at(at, format!("unknown operation `{kw}`")));
                }
            }
        };
        let span = self.span_opt().unwrap_or(SpanId::NONE);
        Ok((kind, span))
    }

    /// `%a, %b`.
    fn pair(&mut self) -> PResult<[Value; 2]> {
        let a = self.value()?;
        self.expect_punct(",")?;
        Ok([a, self.value()?])
    }

    /// `, %a, %b`.
    fn comma_pair(&mut self) -> PResult<[Value; 2]> {
        self.expect_punct(",")?;
        self.pair()
    }

    fn index_opt(&mut self) -> PResult<Option<Value>> {
        if !self.eat_punct("[") {
            return Ok(None);
        }
        let i = self.value()?;
        self.expect_punct("]")?;
        Ok(Some(i))
    }

    fn literal(&mut self) -> PResult<Const> {
        let at = self.here();
        let neg = self.eat_punct("-");
        let sign = if neg { "-" } else { "" };
        let bad = |s: &str| ParseError { line: at.0, col: at.1, message: format!("bad literal `{sign}{s}`") };
        match self.next() {
            Tok::Num(s) if s.contains(['.', 'e', 'E']) => {
                format!("{sign}{s}").parse().map(Const::Float).map_err(|_| bad(&s))
            }
            Tok::Num(s) => format!("{sign}{s}").parse().map(Const::Int).map_err(|_| bad(&s)),
            Tok::Ident(s) if s == "inf" => Ok(Const::Float(if neg { f64::NEG_INFINITY } else { f64::INFINITY })),
            Tok::Ident(s) if s == "NaN" && !neg => {
                if !self.eat_punct("(") {
                    return Ok(Const::Float(f64::NAN));
                }
                let bits = match self.next() {
                    Tok::Num(n) => n.parse::<u64>().map_err(|_| bad(&format!("NaN({n})")))?,
                    _ => {
                        self.pos -= 1;
                        return Err(self.expected("the NaN's bits as an integer"));
                    }
                };
                self.expect_punct(")")?;
                Ok(Const::Float(f64::from_bits(bits)))
            }
            Tok::Ident(s) if !neg && (s == "true" || s == "false") => Ok(Const::Bool(s == "true")),
            _ => {
                self.pos -= 1;
                Err(self.expected("a literal like `1.5`, `-3`, `inf`, `NaN` or `true`"))
            }
        }
    }

    fn if_op(&mut self) -> PResult<(OpKind, SpanId)> {
        let cond = self.value()?;
        let span = self.span_opt().unwrap_or(SpanId::NONE);
        let then_region = self.region(false)?;
        let else_region = if self.eat_keyword("else") { self.region(false)? } else { Region::default() };
        Ok((OpKind::If { cond, then_region, else_region }, span))
    }

    fn for_op(&mut self) -> PResult<(OpKind, SpanId)> {
        let index = self.value_def()?;
        self.expect_keyword("in")?;
        let lo = self.value()?;
        let inclusive = if self.eat_punct("..=") {
            true
        } else {
            self.expect_punct("..").map_err(|_| self.expected("`..` or `..=`"))?;
            false
        };
        let hi = self.value()?;
        let step = if self.eat_keyword("step") { Some(self.value()?) } else { None };
        let reverse = self.eat_keyword("rev");
        let exit = if self.eat_keyword("exit") { Some(self.var()?) } else { None };
        let span = self.span_opt().unwrap_or(SpanId::NONE);
        if self.peek() != &Tok::Punct("{") {
            return Err(self.expected("`step`, `rev`, `exit` (in this order) or `{`"));
        }
        let index = self.define(index, span)?;
        let body = self.region(false)?;
        Ok((OpKind::For { index, lo, hi, step, inclusive, reverse, body, exit }, span))
    }

    fn while_op(&mut self) -> PResult<(OpKind, SpanId)> {
        let exit = if self.eat_keyword("exit") { Some(self.var()?) } else { None };
        let span = self.span_opt().unwrap_or(SpanId::NONE);
        let cond_region = self.region(false)?;
        self.expect_keyword("cond")?;
        let cond = self.value()?;
        self.expect_keyword("do")?;
        let body = self.region(false)?;
        Ok((OpKind::While { cond_region, cond, body, exit }, span))
    }

    /// Checks that every value and var used is defined, and builds the arenas.
    fn finish(mut self, mut f: Function) -> PResult<Function> {
        f.records = std::mem::take(&mut self.records);
        f.generic_float = self.generic_float.take();
        f.tape_param = self.tape_param;
        f.unsafe_code = self.unsafe_code;
        f.type_params = std::mem::take(&mut self.type_params);
        for &(n, line, col) in &self.value_uses {
            if !self.values.contains_key(&n) {
                return Err(ParseError { line, col, message: format!("value %{n} is used but never defined") });
            }
        }
        for &(n, line, col) in &self.var_uses {
            if !self.vars.contains_key(&n) {
                return Err(ParseError {
                    line,
                    col,
                    message: format!("var ${n} is used but never declared (by `var` or `local`)"),
                });
            }
        }
        let value_count = self.values.keys().next_back().map_or(0, |&n| n as usize + 1);
        let gap = ValueData { ty: Ty::F64, name: None, span: SpanId::NONE };
        f.values = vec![gap; value_count];
        for (n, data) in self.values {
            f.values[n as usize] = data;
        }
        let var_count = self.vars.keys().next_back().map_or(0, |&n| n as usize + 1);
        f.vars = vec![VarData { ty: Scalar::F64, name: String::new() }; var_count];
        for (n, data) in self.vars {
            f.vars[n as usize] = data;
        }
        Ok(f)
    }
}

pub(crate) fn binop(name: &str) -> Option<BinOp> {
    use BinOp::*;
    [Add, Sub, Mul, Div, Rem, BitAnd, BitOr, BitXor, Shl, Shr]
        .into_iter()
        .find(|&op| crate::print::binop_name(op) == name)
}

pub(crate) fn cmpop(name: &str) -> Option<CmpOp> {
    use CmpOp::*;
    [Eq, Ne, Lt, Le, Gt, Ge].into_iter().find(|&op| crate::print::cmpop_name(op) == name)
}
