//! Shapes and layouts.

use super::lexer::Tok;
use super::{PResult, Parser};
use crate::shape::{
    ElementType, Layout, LayoutSuffixes, Shape, SplitConfig, Tile, TILE_COMBINE_DIMENSION,
    UNBOUNDED_SIZE,
};

impl<'a> Parser<'a> {
    /// True when the next tokens start a shape: `(` or an element type followed by `[`.
    pub(crate) fn at_shape(&mut self) -> bool {
        let t = self.lex.peek();
        match t.kind {
            Tok::LParen => true,
            Tok::Ident => {
                self.lex.text(t).parse::<ElementType>().is_ok()
                    && (self.src.as_bytes().get(t.end) == Some(&b'[')
                        || self.lex.peek2().kind == Tok::LSquare)
            }
            _ => false,
        }
    }

    /// shape ::= '(' (shape (',' shape)*)? ')' | type '[' dims ']' layout?
    pub(crate) fn parse_shape(&mut self) -> PResult<Shape> {
        let start = self.lex.offset();
        if self.eat(Tok::LParen) {
            self.descend(start)?;
            let mut elements = Vec::new();
            if !self.eat(Tok::RParen) {
                loop {
                    elements.push(self.parse_shape()?);
                    if self.eat(Tok::Comma) {
                        continue;
                    }
                    self.expect(Tok::RParen, "expected ',' or ')' in a tuple shape")?;
                    break;
                }
            }
            self.ascend();
            return Ok(Shape::tuple(elements));
        }
        let t = self.lex.peek();
        let ty = match t.kind {
            Tok::Ident => self.lex.text(t).parse::<ElementType>().ok(),
            _ => None,
        };
        let Some(ty) = ty else {
            return Err(self.error_token(t, "expected a shape"));
        };
        self.lex.next();
        self.expect(Tok::LSquare, "expected '[' after the element type")?;
        let mut dims = Vec::new();
        let mut dynamic = Vec::new();
        if !self.eat(Tok::RSquare) {
            loop {
                let t = self.lex.peek();
                if self.eat(Tok::Question) {
                    dims.push(UNBOUNDED_SIZE);
                    dynamic.push(true);
                } else {
                    let is_dyn = self.eat(Tok::Leq);
                    let d = self.parse_i64()?;
                    if d < 0 {
                        return Err(self.error_at(t.start, "dimension sizes must not be negative"));
                    }
                    dims.push(d);
                    dynamic.push(is_dyn);
                }
                if self.eat(Tok::Comma) {
                    continue;
                }
                self.expect(Tok::RSquare, "expected ',' or ']' in dimensions")?;
                break;
            }
        }
        if !ty.is_array_type() && !dims.is_empty() {
            return Err(self.error_at(start, format!("{ty} shapes have no dimensions")));
        }
        let layout = if self.lex.peek().kind == Tok::LBrace
            && matches!(self.lex.peek2().kind, Tok::Int | Tok::Colon | Tok::RBrace)
        {
            let at = self.lex.offset();
            let l = self.parse_layout()?;
            if !l.is_permutation_of(dims.len()) {
                return Err(self.error_at(
                    at,
                    format!(
                        "layout {{{}}} is not a permutation of the {} dimensions",
                        l.minor_to_major
                            .iter()
                            .map(i64::to_string)
                            .collect::<Vec<_>>()
                            .join(","),
                        dims.len()
                    ),
                ));
            }
            Some(l)
        } else {
            None
        };
        let shape = Shape::array_with(ty, dims, dynamic, layout);
        if shape.dims().contains(&UNBOUNDED_SIZE) {
            return Ok(shape);
        }
        if shape.byte_size().is_err() {
            return Err(self.error_at(
                start,
                format!(
                    "shape {} has more elements or bytes than fit in a 64-bit integer",
                    shape.to_string_without_layout()
                ),
            ));
        }
        Ok(shape)
    }

    /// An int, or `*` for a combined tile dimension.
    fn parse_tile_dim(&mut self) -> PResult<i64> {
        if self.eat(Tok::Star) {
            return Ok(TILE_COMBINE_DIMENSION);
        }
        let at = self.lex.offset();
        let d = self.parse_i64()?;
        if d <= 0 {
            return Err(self.error_at(at, "a tile dimension must be positive (or `*`)"));
        }
        Ok(d)
    }

    /// `(` non-negative int `)`.
    fn parse_paren_int(&mut self) -> PResult<i64> {
        self.expect(Tok::LParen, "expected '('")?;
        let at = self.lex.offset();
        let v = self.parse_i64()?;
        if v < 0 {
            return Err(self.error_at(at, "a layout field must not be negative"));
        }
        self.expect(Tok::RParen, "expected ')'")?;
        Ok(v)
    }

    /// `(` element type `)`.
    fn parse_paren_type(&mut self) -> PResult<ElementType> {
        self.expect(Tok::LParen, "expected '('")?;
        let t = self.lex.next();
        let ty = self
            .lex
            .text(t)
            .parse::<ElementType>()
            .map_err(|_| self.error_token(t, "expected an element type"))?;
        self.expect(Tok::RParen, "expected ')'")?;
        Ok(ty)
    }

    /// layout ::= '{' ints (':' suffix*)? '}'
    fn parse_layout(&mut self) -> PResult<Layout> {
        self.expect(Tok::LBrace, "expected '{'")?;
        let mut minor_to_major = Vec::new();
        let mut l = LayoutSuffixes::default();
        if self.lex.peek().kind == Tok::Int {
            loop {
                minor_to_major.push(self.parse_i64()?);
                if !self.eat(Tok::Comma) {
                    break;
                }
            }
        }
        if self.eat(Tok::Colon) {
            loop {
                let t = self.lex.peek();
                match (t.kind, self.lex.text(t)) {
                    (Tok::RBrace, _) => break,
                    (Tok::Hash, _) => {
                        self.lex.next();
                        l.index_type = Some(self.parse_paren_type()?);
                    }
                    (Tok::Star, _) => {
                        self.lex.next();
                        l.pointer_type = Some(self.parse_paren_type()?);
                    }
                    (Tok::Ident, "D") => {
                        self.lex.next();
                        self.expect(Tok::LParen, "expected '(' after D")?;
                        while !self.eat(Tok::RParen) {
                            let t = self.lex.peek();
                            // Dense, compressed, singleton, loose compressed.
                            if t.kind != Tok::Ident
                                || !matches!(self.lex.text(t), "D" | "C" | "S" | "H")
                            {
                                return Err(self.error_token(
                                    t,
                                    "expected a DimLevelType abbreviation (D, C, S or H)",
                                ));
                            }
                            self.lex.next();
                            let mut s = self.lex.text(t).to_string();
                            loop {
                                if self.eat(Tok::Plus) {
                                    s.push('+');
                                } else if self.eat(Tok::Tilde) {
                                    s.push('~');
                                } else {
                                    break;
                                }
                            }
                            l.dim_level_types.push(s);
                            if !self.eat(Tok::Comma) {
                                self.expect(Tok::RParen, "expected ',' or ')'")?;
                                break;
                            }
                        }
                    }
                    (Tok::Ident, "T") => {
                        self.lex.next();
                        while self.eat(Tok::LParen) {
                            let mut tile = Tile::default();
                            if !self.eat(Tok::RParen) {
                                loop {
                                    tile.dims.push(self.parse_tile_dim()?);
                                    if !self.eat(Tok::Comma) {
                                        break;
                                    }
                                }
                                self.expect(Tok::RParen, "expected ',' or ')' in a tile")?;
                            }
                            l.tiles.push(tile);
                        }
                    }
                    (Tok::Ident, "L") => {
                        self.lex.next();
                        l.tail_padding_alignment = self.parse_paren_int()?;
                    }
                    (Tok::Ident, "E") => {
                        self.lex.next();
                        l.element_size_bits = self.parse_paren_int()?;
                    }
                    (Tok::Ident, "S") => {
                        self.lex.next();
                        l.memory_space = self.parse_paren_int()?;
                    }
                    (Tok::Ident, "M") => {
                        self.lex.next();
                        l.dynamic_shape_metadata_prefix_bytes = self.parse_paren_int()?;
                    }
                    (Tok::Ident, "SC") => {
                        self.lex.next();
                        while self.eat(Tok::LParen) {
                            let mut c = SplitConfig {
                                dimension: self.parse_i64()?,
                                split_indices: Vec::new(),
                            };
                            self.expect(Tok::Colon, "expected ':' in a split config")?;
                            loop {
                                c.split_indices.push(self.parse_i64()?);
                                if !self.eat(Tok::Comma) {
                                    break;
                                }
                            }
                            self.expect(Tok::RParen, "expected ')' in a split config")?;
                            l.split_configs.push(c);
                        }
                    }
                    (Tok::Ident, "P") => {
                        self.lex.next();
                        let at = self.lex.offset();
                        self.expect(Tok::LParen, "expected '(' after P")?;
                        self.descend(at)?;
                        l.physical_shape = Some(Box::new(self.parse_shape()?));
                        self.ascend();
                        self.expect(Tok::RParen, "expected ')' after the physical shape")?;
                    }
                    _ => {
                        return Err(self.error_token(
                            t,
                            "expected a layout attribute (D, T, L, #, *, E, S, SC, P, M) or '}'",
                        ))
                    }
                }
            }
        }
        let close = self.expect(Tok::RBrace, "expected '}' at the end of the layout")?;
        let sparse = l.dim_level_types.iter().any(|d| !d.starts_with('D'));
        if l.physical_shape.is_some() && !sparse {
            return Err(self.error_at(
                close.start,
                "Layout has physical shape, but is not for a sparse array",
            ));
        }
        Ok(Layout::with_suffixes(minor_to_major, l))
    }
}
