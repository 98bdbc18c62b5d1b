//! The module header's `debug_attributes={ORIGIN:VALUE, ...}`: checked here, kept as
//! written. `ORIGIN` is an original value (`{"name"}`, optionally with a tuple index
//! `{"name" {1,0}}`); `VALUE` is one attribute set `{key=value, ...}` or a tuple of them
//! `({...}, {...})`. The keys are `log_mode` (`default` or `fusion_debugger`),
//! `callback_id` and `op_id` (integers) and `partitioned` (a boolean), each at most once.

use super::lexer::Tok;
use super::{PResult, Parser};

impl Parser<'_> {
    /// Checks `{ORIGIN:VALUE, ...}` and leaves the lexer after its closing brace.
    pub(super) fn check_debug_attributes(&mut self) -> PResult<()> {
        self.expect(Tok::LBrace, "expects '{' to start debug_attributes")?;
        if self.eat(Tok::RBrace) {
            return Ok(());
        }
        loop {
            self.debug_origin()?;
            self.expect(Tok::Colon, "expects ':' after the original value")?;
            if self.lex.peek().kind == Tok::LParen {
                self.parse_list(Tok::LParen, Tok::RParen, |p| p.debug_attr_set())?;
            } else {
                self.debug_attr_set()?;
            }
            if self.eat(Tok::Comma) {
                continue;
            }
            self.expect(Tok::RBrace, "expects ',' or '}' in debug_attributes")?;
            return Ok(());
        }
    }

    /// `{"name"}` or `{"name" {i,j}}`: the original value the attributes belong to.
    fn debug_origin(&mut self) -> PResult<()> {
        self.expect(
            Tok::LBrace,
            "expects '{' to start an original value in debug_attributes",
        )?;
        self.parse_string()?;
        if self.lex.peek().kind == Tok::LBrace {
            self.parse_int_list(Tok::LBrace, Tok::RBrace)?;
        }
        self.expect(Tok::RBrace, "expects '}' at the end of an original value")?;
        Ok(())
    }

    /// `{key=value, ...}` with the keys XLA knows.
    fn debug_attr_set(&mut self) -> PResult<()> {
        let mut seen: Vec<&str> = Vec::new();
        self.parse_list(Tok::LBrace, Tok::RBrace, |p| {
            let k = p.lex.peek();
            let key = p.lex.text(k);
            let known = ["log_mode", "callback_id", "op_id", "partitioned"];
            if k.kind != Tok::Ident || !known.contains(&key) {
                return Err(p.error_at(
                    k.start,
                    format!(
                        "unknown debug attribute `{key}` (expects log_mode, callback_id, op_id or partitioned)"
                    ),
                ));
            }
            if seen.contains(&key) {
                return Err(p.error_at(k.start, format!("debug attribute `{key}` is given twice")));
            }
            seen.push(key);
            p.lex.next();
            p.expect(Tok::Equal, "expects '=' after the debug attribute name")?;
            match key {
                "log_mode" => {
                    let v = p.lex.peek();
                    let mode = p.lex.text(v);
                    if v.kind != Tok::Ident || !matches!(mode, "default" | "fusion_debugger") {
                        return Err(p.error_at(
                            v.start,
                            format!("log_mode must be default or fusion_debugger, not `{mode}`"),
                        ));
                    }
                    p.lex.next();
                }
                "partitioned" => {
                    p.parse_bool()?;
                }
                _ => {
                    p.parse_i64()?;
                }
            }
            Ok(())
        })
    }
}
