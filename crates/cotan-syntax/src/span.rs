//! The span of an expression without printing it. syn's `Spanned::span` prints the whole
//! expression to tokens and joins the first token's span with the last one's. Lowering asks
//! for the span of every sub-expression, so that printing made it quadratic in the depth
//! of an expression, and in a proc macro (unoptimized, every token a call into the
//! compiler) it was a large part of lowering's time.
//!
//! Where spans cannot be joined (the compiler's spans on stable Rust), syn's answer is the
//! first token's span, which `FirstToken::first_token` finds by walking down the left edge
//! of the expression. That is the answer everywhere, joined spans or not: a span is used
//! for where it starts (a diagnostic's place, a line in a callee's file), which is where
//! its first token starts, and the callees read from files (proc-macro2's own spans, which
//! join) would otherwise be printed whole at every sub-expression. For a form this module
//! does not walk it asks syn.

use proc_macro2::Span;
use syn::Expr;

/// The span syn's `Spanned` gives, found cheaply where it can be.
pub(crate) trait Spanned {
    fn span(&self) -> Span;
}

/// An expression form's first token, when it has no attributes; `None` to ask syn.
trait FirstToken {
    fn first_token(&self) -> Option<Span>;
}

fn span_of<T: FirstToken + syn::spanned::Spanned>(e: &T) -> Span {
    e.first_token().unwrap_or_else(|| syn::spanned::Spanned::span(e))
}

/// The first token of a path with neither `::` in front nor a qualified self type.
fn path_first(qself: &Option<syn::QSelf>, path: &syn::Path) -> Option<Span> {
    match (qself, &path.leading_colon) {
        (None, None) => path.segments.first().map(|s| s.ident.span()),
        _ => None,
    }
}

impl FirstToken for Expr {
    fn first_token(&self) -> Option<Span> {
        match self {
            Expr::Array(e) => e.first_token(),
            Expr::Assign(e) => e.first_token(),
            Expr::Binary(e) => e.first_token(),
            Expr::Block(e) if e.attrs.is_empty() && e.label.is_none() => Some(e.block.brace_token.span.join()),
            Expr::Break(e) => e.first_token(),
            Expr::Call(e) => e.first_token(),
            Expr::Cast(e) => e.first_token(),
            Expr::Continue(e) => e.first_token(),
            Expr::Field(e) => e.first_token(),
            Expr::ForLoop(e) if e.attrs.is_empty() && e.label.is_none() => Some(e.for_token.span),
            Expr::If(e) if e.attrs.is_empty() => Some(e.if_token.span),
            Expr::Index(e) => e.first_token(),
            Expr::Let(e) if e.attrs.is_empty() => Some(e.let_token.span),
            Expr::Lit(e) => e.first_token(),
            Expr::Loop(e) if e.attrs.is_empty() && e.label.is_none() => Some(e.loop_token.span),
            Expr::Macro(e) if e.attrs.is_empty() => e.mac.first_token(),
            Expr::MethodCall(e) => e.first_token(),
            Expr::Paren(e) if e.attrs.is_empty() => Some(e.paren_token.span.join()),
            Expr::Path(e) => e.first_token(),
            Expr::Range(e) => e.first_token(),
            Expr::Reference(e) if e.attrs.is_empty() => Some(e.and_token.span),
            Expr::Repeat(e) => e.first_token(),
            Expr::Return(e) if e.attrs.is_empty() => Some(e.return_token.span),
            Expr::Struct(e) => e.first_token(),
            Expr::Try(e) if e.attrs.is_empty() => e.expr.first_token(),
            Expr::Tuple(e) if e.attrs.is_empty() => Some(e.paren_token.span.join()),
            Expr::Unary(e) => e.first_token(),
            Expr::Unsafe(e) if e.attrs.is_empty() => Some(e.unsafe_token.span),
            Expr::While(e) if e.attrs.is_empty() && e.label.is_none() => Some(e.while_token.span),
            _ => None,
        }
    }
}

/// `FirstToken` for a form whose first token is its first sub-expression's.
macro_rules! left_operand {
    ($($ty:ident . $field:ident),* $(,)?) => {$(
        impl FirstToken for syn::$ty {
            fn first_token(&self) -> Option<Span> {
                if self.attrs.is_empty() { self.$field.first_token() } else { None }
            }
        }
    )*};
}
left_operand!(
    ExprAssign.left,
    ExprBinary.left,
    ExprCall.func,
    ExprCast.expr,
    ExprField.base,
    ExprIndex.expr,
    ExprMethodCall.receiver
);

impl FirstToken for syn::ExprArray {
    fn first_token(&self) -> Option<Span> {
        self.attrs.is_empty().then(|| self.bracket_token.span.join())
    }
}

/// `FirstToken` for a form that starts with a keyword or a literal.
macro_rules! first_is {
    ($($ty:ident => |$e:ident| $span:expr),* $(,)?) => {$(
        impl FirstToken for syn::$ty {
            fn first_token(&self) -> Option<Span> {
                let $e = self;
                if $e.attrs.is_empty() { Some($span) } else { None }
            }
        }
    )*};
}
first_is!(
    ExprBreak => |e| e.break_token.span,
    ExprContinue => |e| e.continue_token.span,
    ExprLit => |e| e.lit.span(),
);

impl FirstToken for syn::ExprRange {
    fn first_token(&self) -> Option<Span> {
        if !self.attrs.is_empty() {
            return None;
        }
        match (&self.start, &self.limits) {
            (Some(start), _) => start.first_token(),
            (None, syn::RangeLimits::HalfOpen(t)) => Some(t.spans[0]),
            (None, syn::RangeLimits::Closed(t)) => Some(t.spans[0]),
        }
    }
}

impl FirstToken for syn::ExprStruct {
    fn first_token(&self) -> Option<Span> {
        if self.attrs.is_empty() {
            path_first(&self.qself, &self.path)
        } else {
            None
        }
    }
}

impl FirstToken for syn::ExprRepeat {
    fn first_token(&self) -> Option<Span> {
        self.attrs.is_empty().then(|| self.bracket_token.span.join())
    }
}

impl FirstToken for syn::Macro {
    fn first_token(&self) -> Option<Span> {
        path_first(&None, &self.path)
    }
}

impl FirstToken for syn::ExprPath {
    fn first_token(&self) -> Option<Span> {
        if self.attrs.is_empty() {
            path_first(&self.qself, &self.path)
        } else {
            None
        }
    }
}

impl FirstToken for syn::ExprUnary {
    fn first_token(&self) -> Option<Span> {
        if !self.attrs.is_empty() {
            return None;
        }
        Some(match self.op {
            syn::UnOp::Deref(t) => t.span,
            syn::UnOp::Not(t) => t.span,
            syn::UnOp::Neg(t) => t.span,
            _ => return None,
        })
    }
}

macro_rules! spanned {
    ($($ty:ty),* $(,)?) => {$(
        impl Spanned for $ty {
            fn span(&self) -> Span {
                span_of(self)
            }
        }
    )*};
}
spanned!(
    Expr,
    syn::ExprArray,
    syn::ExprAssign,
    syn::ExprBinary,
    syn::ExprCall,
    syn::ExprCast,
    syn::ExprField,
    syn::ExprIndex,
    syn::ExprMethodCall,
    syn::ExprBreak,
    syn::ExprContinue,
    syn::ExprLit,
    syn::ExprPath,
    syn::ExprRange,
    syn::ExprRepeat,
    syn::ExprStruct,
    syn::ExprUnary,
    syn::Macro,
);

/// Syntax that is not an expression: syn's span, as before.
macro_rules! syns {
    ($($ty:ty),* $(,)?) => {$(
        impl Spanned for $ty {
            fn span(&self) -> Span {
                syn::spanned::Spanned::span(self)
            }
        }
    )*};
}
syns!(
    syn::Pat,
    syn::PatIdent,
    syn::PatSlice,
    syn::PatTuple,
    syn::PatType,
    syn::Stmt,
    syn::TypePath,
    syn::Block,
    syn::Path,
    syn::Receiver,
    syn::Type
);

impl<T: Spanned + Clone> Spanned for std::borrow::Cow<'_, T> {
    fn span(&self) -> Span {
        (**self).span()
    }
}

impl<T: Spanned + ?Sized> Spanned for &mut T {
    fn span(&self) -> Span {
        (**self).span()
    }
}

impl<T: Spanned + ?Sized> Spanned for &T {
    fn span(&self) -> Span {
        (**self).span()
    }
}

impl<T: Spanned + ?Sized> Spanned for Box<T> {
    fn span(&self) -> Span {
        (**self).span()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::ToTokens;

    fn start_end(s: Span) -> (proc_macro2::LineColumn, proc_macro2::LineColumn) {
        (s.start(), s.end())
    }

    /// The walk finds the token syn's printing puts first (a whole group for brackets).
    #[test]
    fn first_token_is_syns() {
        let texts = [
            "a.b[i] + f(x) * -y",
            "(a, b).0",
            "(a + b) * c",
            "[1.0; 3]",
            "[x, y][0]",
            "..n",
            "a..=b",
            "..=n",
            "x as f64",
            "!flag && *p",
            "v.iter().map(|x| x * 2.0).sum::<f64>()",
            "S { a: 1 }.a",
            "vec![1.0; n].len()",
            "{ a } + b",
            "&mut x[1..]",
            "y = x + 1.0",
            "f(x)?",
            "if c { a } else { b }",
            "for i in 0..n {}",
            "while i < n {}",
            "loop {}",
            "return x",
            "break",
            "unsafe { *p }",
            "1.5f64.sqrt()",
        ];
        for text in texts {
            let e: Expr = syn::parse_str(text).unwrap();
            let first = e.first_token().unwrap_or_else(|| panic!("{text}: not walked"));
            let syns = e.to_token_stream().into_iter().next().unwrap().span();
            assert_eq!(start_end(first), start_end(syns), "{text}");
        }
    }

    /// Forms the walk leaves to syn: attributes, labels, qualified and global paths.
    #[test]
    fn left_to_syn() {
        for text in ["#[allow(unused)] x", "'a: loop {}", "<T as Tr>::f(x)", "::std::f64::consts::PI", "|x| x"] {
            let e: Expr = syn::parse_str(text).unwrap();
            assert!(e.first_token().is_none(), "{text}");
            // Outside a proc macro spans join: the answer is syn's.
            assert_eq!(start_end(Spanned::span(&e)), start_end(syn::spanned::Spanned::span(&e)), "{text}");
        }
    }
}
