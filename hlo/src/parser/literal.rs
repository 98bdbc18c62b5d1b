//! Literals: scalars, nested arrays, tuples, complex values, `inf`/`nan` (with payloads),
//! elided `{...}`, and a scalar for a non-scalar shape (`f32[2,3] constant(1)`: the value
//! of every element, stored once). Values are appended as read, so memory follows the
//! input size whatever the shape claims.

use super::lexer::{Tok, Token};
use super::{parse_int_text, PResult, Parser};
use crate::literal::{ArrayData, ArrayLiteral, Literal};
use crate::shape::{ElementType, Shape};

/// A number read in literal position.
enum Num {
    Int(i128),
    Float(f64, Option<u64>),
}

impl<'a> Parser<'a> {
    /// True for `{` `...` `}` ahead.
    fn at_elided(&mut self) -> bool {
        if self.lex.peek().kind != Tok::LBrace || self.lex.peek2().kind != Tok::Dots {
            return false;
        }
        let mut copy = self.lex;
        copy.next();
        copy.next();
        copy.peek().kind == Tok::RBrace
    }

    /// A literal of the given shape (the inside of `constant(...)`).
    pub(crate) fn parse_literal(&mut self, shape: &Shape) -> PResult<Literal> {
        if self.at_elided() {
            for _ in 0..3 {
                self.lex.next();
            }
            return Ok(Literal::Elided(shape.clone()));
        }
        match shape {
            Shape::Tuple(elements) => {
                let at = self.lex.offset();
                self.expect(Tok::LParen, "expected '(' to start a tuple literal")?;
                self.descend(at)?;
                let mut out = Vec::with_capacity(elements.len().min(64));
                for (i, e) in elements.iter().enumerate() {
                    if i > 0 {
                        self.expect(Tok::Comma, "expected ',' between tuple literal elements")?;
                    }
                    out.push(self.parse_literal(e)?);
                }
                self.ascend();
                self.expect(
                    Tok::RParen,
                    "expected ')' after the tuple literal's elements",
                )?;
                Ok(Literal::Tuple(out))
            }
            Shape::Array(a) => {
                let ty = a.element_type();
                let Some(mut data) = ArrayData::new(ty) else {
                    let at = self.lex.offset();
                    return Err(self.error_at(at, format!("{ty} constants are not supported")));
                };
                if a.dims().is_empty() {
                    self.parse_value(ty, &mut data)?;
                } else if self.lex.peek().kind != Tok::LBrace {
                    // XLA's scalar literal for a non-scalar shape (`f32[2,3]
                    // constant(1)`): the value of every element, stored once.
                    self.parse_value(ty, &mut data)?;
                    let lit = ArrayLiteral::splat(shape.clone(), data)
                        .ok_or_else(|| self.error_here("literal does not match its shape"))?;
                    return Ok(Literal::Array(lit));
                } else if !self.parse_dense(shape, &mut data)? {
                    return Ok(Literal::Elided(shape.clone()));
                }
                let lit = ArrayLiteral::new(shape.clone(), data)
                    .ok_or_else(|| self.error_here("literal does not match its shape"))?;
                Ok(Literal::Array(lit))
            }
        }
    }

    /// A literal preceded by its shape (`s32[2] {1, 2}`), or a tuple of those in
    /// parentheses: the value of custom-call `literal=`.
    pub(crate) fn parse_literal_with_shape(&mut self) -> PResult<Literal> {
        let at = self.lex.offset();
        if self.eat(Tok::LParen) {
            self.descend(at)?;
            let mut out = Vec::new();
            if !self.eat(Tok::RParen) {
                loop {
                    out.push(self.parse_literal_with_shape()?);
                    if self.eat(Tok::Comma) {
                        continue;
                    }
                    self.expect(Tok::RParen, "expected ',' or ')' in a tuple literal")?;
                    break;
                }
            }
            self.ascend();
            return Ok(Literal::Tuple(out));
        }
        let shape = self.parse_shape()?;
        self.parse_literal(&shape)
    }

    /// Nested braces of a rank >= 1 array, checked against the dimensions the way XLA
    /// does. Returns false when the values are elided (`{...}`).
    fn parse_dense(&mut self, shape: &Shape, data: &mut ArrayData) -> PResult<bool> {
        let dims = shape.dims();
        let rank = dims.len();
        let ty = shape.element_type().unwrap_or(ElementType::F32);
        let mut seen = vec![0i64; rank];
        let mut nest = 0usize;
        let mut elided = false;
        loop {
            let t = self.lex.peek();
            match t.kind {
                Tok::LBrace => {
                    self.lex.next();
                    nest += 1;
                    if nest > rank {
                        return Err(self.error_at(
                            t.start,
                            format!("literal nests deeper than the shape's rank {rank}"),
                        ));
                    }
                    if nest > 1 {
                        seen[nest - 2] += 1;
                        if seen[nest - 2] > dims[nest - 2] {
                            return Err(self.error_at(
                                t.start,
                                format!(
                                    "too many elements in dimension {} (expected {})",
                                    nest - 2,
                                    dims[nest - 2]
                                ),
                            ));
                        }
                    }
                }
                Tok::RBrace => {
                    if nest == 0 {
                        return Err(self.error_token(t, "expected '{' to start an array literal"));
                    }
                    self.lex.next();
                    let d = nest - 1;
                    if seen[d] != dims[d] {
                        return Err(self.error_at(
                            t.start,
                            format!(
                                "dimension {d} has {} elements here, expected {}",
                                seen[d], dims[d]
                            ),
                        ));
                    }
                    seen[d] = 0;
                    nest -= 1;
                    if nest == 0 {
                        return Ok(!elided);
                    }
                }
                Tok::Comma if nest > 0 => {
                    self.lex.next();
                }
                Tok::Dots if nest == 1 => {
                    self.lex.next();
                    elided = true;
                    seen[0] = dims[0];
                }
                _ if nest == 0 => {
                    return Err(self.error_token(t, "expected '{' to start an array literal"));
                }
                _ => {
                    if nest != rank {
                        return Err(self.error_token(
                            t,
                            format!("expected '{{' (values belong at nesting level {rank})"),
                        ));
                    }
                    seen[rank - 1] += 1;
                    if seen[rank - 1] > dims[rank - 1] {
                        return Err(self.error_at(
                            t.start,
                            format!(
                                "too many elements in the minor dimension (expected {})",
                                dims[rank - 1]
                            ),
                        ));
                    }
                    if elided {
                        // Values mixed with `...` are dropped with the rest.
                        let mut scratch = ArrayData::new(ty).unwrap_or(ArrayData::F32(Vec::new()));
                        self.parse_value(ty, &mut scratch)?;
                    } else {
                        self.parse_value(ty, data)?;
                    }
                }
            }
        }
    }

    /// One element: a number, `true`/`false`, `inf`/`nan`, or `(re, im)`.
    fn parse_value(&mut self, ty: ElementType, data: &mut ArrayData) -> PResult<()> {
        let t = self.lex.peek();
        if t.kind == Tok::LParen {
            self.lex.next();
            let re = self.parse_num()?;
            self.expect(Tok::Comma, "expected ',' in a complex value")?;
            let im = self.parse_num()?;
            self.expect(Tok::RParen, "expected ')' after a complex value")?;
            let text = &self.src[t.start..self.lex.offset().min(self.src.len())];
            let text = text.trim_end();
            let c = [num_f64(&re), num_f64(&im)];
            return data
                .push_complex(ty, c, text)
                .map_err(|e| self.error_at(t.start, e.to_string()));
        }
        if t.kind == Tok::Ident && matches!(self.lex.text(t), "true" | "false") {
            self.lex.next();
            return data
                .push_bool(ty, self.lex.text(t) == "true")
                .map_err(|e| self.error_at(t.start, e.to_string()));
        }
        let n = self.parse_num()?;
        let text = self.lex.text(t);
        let r = match n {
            // `-0` is an integer token; keep its sign for floating-point types.
            Num::Int(0) if text.starts_with('-') && (ty.is_float() || ty.is_complex()) => {
                data.push_float(ty, -0.0, None, text)
            }
            Num::Int(i) => data.push_int(ty, i),
            Num::Float(f, payload) => {
                if ty.is_integral() || ty.is_pred() {
                    return Err(self.error_at(t.start, format!("expected an integer for {ty}")));
                }
                data.push_float(ty, f, payload, text)
            }
        };
        r.map_err(|e| self.error_at(t.start, e.to_string()))
    }

    /// A number: integer, decimal, `inf`, `-inf`, `nan`, `-nan`, `nan(0x...)`.
    fn parse_num(&mut self) -> PResult<Num> {
        let t: Token = self.lex.peek();
        let text = self.lex.text(t);
        match t.kind {
            Tok::Int => {
                self.lex.next();
                parse_int_text(text)
                    .map(Num::Int)
                    .ok_or_else(|| self.error_at(t.start, "integer out of range"))
            }
            Tok::Float | Tok::Ident if matches!(text, "inf" | "-inf") => {
                self.lex.next();
                Ok(Num::Float(
                    if text == "inf" {
                        f64::INFINITY
                    } else {
                        f64::NEG_INFINITY
                    },
                    None,
                ))
            }
            Tok::Float | Tok::Ident if matches!(text, "nan" | "-nan") => {
                self.lex.next();
                let payload = match self.lex.nan_payload() {
                    Some((s, e)) => Some(
                        u64::from_str_radix(&self.src[s..e], 16)
                            .ok()
                            .filter(|&p| p > 0)
                            .ok_or_else(|| self.error_at(s, "invalid NaN payload"))?,
                    ),
                    None => None,
                };
                let v = if text == "nan" { f64::NAN } else { -f64::NAN };
                Ok(Num::Float(v, payload))
            }
            Tok::Float => {
                self.lex.next();
                let v: f64 = text
                    .parse()
                    .map_err(|_| self.error_at(t.start, "invalid number"))?;
                if v.is_infinite() {
                    return Err(self.error_at(t.start, "number out of range for a double"));
                }
                Ok(Num::Float(v, None))
            }
            _ => Err(self.error_token(t, "expected a literal value")),
        }
    }
}

fn num_f64(n: &Num) -> f64 {
    match n {
        Num::Int(i) => *i as f64,
        Num::Float(f, _) => *f,
    }
}
