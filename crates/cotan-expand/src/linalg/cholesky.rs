//! Cholesky factors in differentiated functions: nalgebra's `a.clone().cholesky().unwrap()`
//! and faer's `a.llt(Side::Lower).unwrap()` (or `.expect(..)`) become a new buffer holding
//! `L` (column-major, zeros above the diagonal), written by `cotan::rt::{nalgebra,
//! faer}::cholesky`, whose derivative rules are Murray's (2016) in triangular solves. The
//! name bound to it is a factor: `solve`, `l`/`L`, and nalgebra's `determinant` and
//! `ln_determinant` read `L`; anything else is an error.

use proc_macro2::Span;
use quote::quote;
use syn::spanned::Spanned;

use super::{fail, strip, Lib, Mat, Rewriter, Val, R};

impl Rewriter {
    /// `x.cholesky().unwrap()` or `.expect(msg)` on a nalgebra matrix (also `x.clone()`),
    /// `x.llt(Side::Lower)` (or `Upper`) on a faer one: the factor, or `None` when `mc` is
    /// something else.
    pub(super) fn cholesky(&mut self, mc: &syn::ExprMethodCall, dest: Option<&syn::Ident>) -> syn::Result<Option<R>> {
        let how = mc.method.to_string();
        if !["unwrap", "expect"].contains(&how.as_str()) {
            return Ok(None);
        }
        let syn::Expr::MethodCall(chol) = strip(&mc.receiver) else { return Ok(None) };
        let lib = match (chol.method.to_string().as_str(), chol.args.len()) {
            ("cholesky", 0) => Lib::Nalgebra,
            ("llt", 1) => Lib::Faer,
            _ => return Ok(None),
        };
        // faer's `Side::Upper` reads the upper triangle: the lower one of the transpose.
        let upper = match chol.args.first().map(strip) {
            None => false,
            Some(syn::Expr::Path(p))
                if p.path.segments.len() >= 2 && p.path.segments.last().unwrap().ident == "Lower" =>
            {
                false
            }
            Some(syn::Expr::Path(p))
                if p.path.segments.len() >= 2 && p.path.segments.last().unwrap().ident == "Upper" =>
            {
                true
            }
            Some(e) => return fail(e.span(), "cotan takes `llt(Side::Lower)` or `llt(Side::Upper)` here"),
        };
        let base = match strip(&chol.receiver) {
            syn::Expr::MethodCall(c) if c.method == "clone" && c.args.is_empty() => &*c.receiver,
            e => e,
        };
        let R::La(a) = self.expr(base, None)? else { return Ok(None) };
        let span = chol.method.span();
        let Some(m) = a.mat.clone().filter(|_| a.lib == lib && !self.is_factor(&a)) else {
            return fail(span, "cotan takes the Cholesky factor of a nalgebra matrix, `a.clone().cholesky().unwrap()`, or of a faer one, `a.llt(Side::Lower).unwrap()`");
        };
        let m = if upper { m.transposed() } else { m };
        // What the user's `unwrap`/`expect` says when nalgebra returns `None` (faer's `Err`:
        // std's text, without the error's `Debug`, which cotan does not have).
        let message = match (how.as_str(), mc.args.first()) {
            // Derivatives panic with a message as written (cotan formats nothing into it).
            ("expect", Some(syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. })))
                if !s.value().contains(['{', '}']) =>
            {
                quote!(#s)
            }
            ("expect", Some(msg)) => {
                return fail(
                    msg.span(),
                    "cotan takes `expect` of a Cholesky factor with a string literal (without braces) as its message",
                );
            }
            _ if lib == Lib::Faer => {
                quote!("called `Result::unwrap()` on an `Err` value: the matrix is not positive definite")
            }
            _ => quote!("called `Option::unwrap()` on a `None` value"),
        };
        let (rows, cols, rs, cs) = (&m.rows, &m.cols, &m.rs, &m.cs);
        let ab = a.arg();
        let k = self.krate.clone();
        let l = lib.ident();
        let t = self.fresh(dest);
        let (r, c) = self.shape_locals(&t, quote!(#rows), quote!(#cols))?;
        self.push(quote! {
            assert!(#r == #c, "The input matrix must be square.");
            let mut #t: Vec<f64> = vec![0.0f64; #r * #r];
            #k::rt::#l::cholesky(#ab, #r, #rs, #cs, &mut #t[..]);
            if #k::rt::#l::not_positive_definite(&#t[..]) {
                panic!(#message);
            }
        })?;
        self.factors.insert(t.to_string());
        Ok(Some(R::La(Val { lib, buf: t, owned: true, mat: Some(Mat::native(lib, r, c)) })))
    }

    /// Whether `v` is a Cholesky factor (not a matrix).
    pub(super) fn is_factor(&self, v: &Val) -> bool {
        self.factors.contains(&v.buf.to_string())
    }

    /// An error unless `v` is a matrix or vector (a factor is read by its methods only).
    pub(super) fn not_factor(&self, v: &Val, span: Span) -> syn::Result<()> {
        if self.is_factor(v) {
            return fail(span, "this is a Cholesky factor: cotan supports its `solve(&b)`, `l()`, `determinant()` and `ln_determinant()`; take `c.l()` for the matrix");
        }
        Ok(())
    }

    /// A method of a Cholesky factor.
    pub(super) fn factor_method(
        &mut self,
        v: Val,
        mc: &syn::ExprMethodCall,
        dest: Option<&syn::Ident>,
    ) -> syn::Result<R> {
        let name = mc.method.to_string();
        let span = mc.method.span();
        let k = self.krate.clone();
        let Some(m) = v.mat.clone() else { return fail(span, "internal error: a Cholesky factor without a shape") };
        let n = m.rows.clone();
        let lb = v.buf.clone();
        let l = v.lib.ident();
        match (name.as_str(), mc.args.len()) {
            ("solve", 1) => {
                let b = self.la_or_fail(&mc.args[0], "the right-hand side of `solve`")?;
                self.not_factor(&b, mc.args[0].span())?;
                if b.mat.is_some() {
                    return fail(span, "cotan solves for one right-hand side, a vector; solve column by column");
                }
                let (bb, bl) = (b.arg(), b.len());
                let t = self.zeros(dest, quote!(#n))?;
                self.push(quote! {
                    assert_eq!(#n, #bl, "`solve` with a right-hand side of another length");
                    #k::rt::#l::chol_solve(&#lb[..], #n, #bb, &mut #t[..]);
                })?;
                Ok(R::La(Val { lib: v.lib, buf: t, owned: true, mat: None }))
            }
            // `l()` is a copy in nalgebra too; `l_dirty`'s upper triangle is unspecified there.
            ("l" | "l_dirty" | "unpack" | "unpack_dirty", 0) if v.lib == Lib::Nalgebra => {
                let copy = self.copy(Val { buf: v.buf.clone(), ..v }, dest)?;
                Ok(R::La(copy))
            }
            // faer's `L()` is a view of the factor's storage: a copy here, which is read only.
            ("L", 0) if v.lib == Lib::Faer => {
                let copy = self.copy(Val { buf: v.buf.clone(), ..v }, dest)?;
                Ok(R::La(copy))
            }
            ("determinant" | "ln_determinant", 0) if v.lib == Lib::Nalgebra => {
                self.tmp += 1;
                let s = quote::format_ident!("la_s{}", self.tmp);
                // As nalgebra computes them: (Π Lᵢᵢ)², Σ ln(Lᵢᵢ²).
                let body = if name == "determinant" {
                    quote!(let mut #s: f64 = 1.0f64; for i in 0..#n { #s *= #lb[i * #n + i]; } #s = #s * #s;)
                } else {
                    quote!(let mut #s: f64 = 0.0f64; for i in 0..#n { #s += (#lb[i * #n + i] * #lb[i * #n + i]).ln(); })
                };
                self.push(body)?;
                Ok(R::Plain(syn::parse_quote!(#s)))
            }
            _ if v.lib == Lib::Faer => fail(
                span,
                format!("cotan does not support `{name}` on faer's `Llt`; supported: `solve(&b)` (a vector), `L()`"),
            ),
            _ => fail(
                span,
                format!("cotan does not support `{name}` on a Cholesky factor; supported: `solve(&b)` (a vector), `l()`, `determinant()`, `ln_determinant()`"),
            ),
        }
    }
}
