//! Instructions: `ROOT? name = shape opcode(operands), attr=value, ...`, including the
//! short async forms (`all-to-all-start` / `-update` / `-done`).

use super::lexer::Tok;
use super::{PResult, Parser, Scope};
use crate::attrs::{attr_kind, is_generic, AttrName, AttrValue, Attribute};
use crate::ir::{ComputationBuilder, InstrId, Instruction, Payload};
use crate::opcode::Opcode;
use crate::shape::Shape;
use std::sync::Arc;

/// The async step a short form names.
#[derive(Clone, Copy, PartialEq, Eq)]
enum AsyncStep {
    Start,
    Update,
    Done,
}

impl AsyncStep {
    fn opcode(self) -> Opcode {
        match self {
            AsyncStep::Start => Opcode::AsyncStart,
            AsyncStep::Update => Opcode::AsyncUpdate,
            AsyncStep::Done => Opcode::AsyncDone,
        }
    }
}

/// Resolves an opcode spelling: a real opcode, or `<op>-start|update|done` for an `<op>`
/// without its own such opcode (the short async form).
fn resolve_opcode(text: &str) -> Option<(Opcode, Option<(AsyncStep, Opcode)>)> {
    if let Ok(op) = text.parse::<Opcode>() {
        return Some((op, None));
    }
    for (suffix, step) in [
        ("-start", AsyncStep::Start),
        ("-update", AsyncStep::Update),
        ("-done", AsyncStep::Done),
    ] {
        if let Some(base) = text.strip_suffix(suffix) {
            let wrapped = base.parse::<Opcode>().ok()?;
            return Some((step.opcode(), Some((step, wrapped))));
        }
    }
    None
}

impl<'a> Parser<'a> {
    /// One instruction, added to `scope`.
    pub(crate) fn parse_instruction(&mut self, scope: &mut Scope<'a>) -> PResult<()> {
        let root_at = self.lex.offset();
        scope.at = root_at;
        let is_root = self.at_ident("ROOT");
        if is_root {
            self.lex.next();
        }
        let name_tok = self.lex.peek();
        let (name, name_at) = self.parse_name("an instruction or '}'")?;
        self.style.sigils.get_or_insert(name_tok.kind == Tok::Name);
        self.expect(Tok::Equal, "expected '=' after the instruction name")?;
        if !self.at_shape() {
            return Err(self.error_here(
                "expected the instruction's result shape (every instruction needs one)",
            ));
        }
        let (shape, shape_text) = self.parse_result_shape()?;
        let op_tok = self.expect(Tok::Ident, "expected an opcode")?;
        let op_text = self.lex.text(op_tok);
        let (opcode, sugar) = resolve_opcode(op_text)
            .ok_or_else(|| self.error_at(op_tok.start, format!("unknown opcode `{op_text}`")))?;

        let mut instr = Instruction::with_shared_shape(name.to_string(), opcode, shape, Vec::new());
        match opcode {
            Opcode::Parameter => {
                self.expect(Tok::LParen, "expected '(' before the parameter number")?;
                let at = self.lex.offset();
                let n = self.parse_i64()?;
                if n < 0 {
                    return Err(self.error_at(at, "parameter numbers must not be negative"));
                }
                self.expect(Tok::RParen, "expected ')' after the parameter number")?;
                instr.payload = Payload::Parameter(n);
            }
            Opcode::Constant => {
                self.expect(Tok::LParen, "expected '(' before the constant's value")?;
                let lit = self.parse_literal(&instr.shape)?;
                self.expect(Tok::RParen, "expected ')' after the constant's value")?;
                instr.payload = Payload::Constant(Box::new(lit));
            }
            _ => instr.operands = self.parse_operands(scope)?,
        }

        let id = match sugar {
            None => {
                instr.attrs = self.parse_attrs(opcode, scope)?;
                self.check_async(&mut instr, scope, op_tok.start)?;
                scope.add(instr, shape_text)
            }
            Some((step, wrapped)) => {
                self.finish_short_async(instr, step, wrapped, scope, op_tok.start, shape_text)?
            }
        };
        if scope.names.insert(name, id).is_some() {
            return Err(self.error_at(name_at, format!("instruction `{name}` is already defined")));
        }
        if is_root {
            if scope.root.is_some() {
                return Err(self.error_at(root_at, "a computation has only one ROOT"));
            }
            scope.root = Some(id);
        }
        Ok(())
    }

    /// An instruction's result shape and its source text. Shapes written with the same text
    /// are parsed once and shared.
    fn parse_result_shape(&mut self) -> PResult<(Arc<Shape>, &'a str)> {
        let start = self.lex.offset();
        let end = self.lex.shape_text_end();
        if let Some(end) = end {
            let text = &self.src[start..end];
            if let Some(shape) = self.shapes.get(text) {
                let shape = Arc::clone(shape);
                self.lex.seek(end);
                return Ok((shape, text));
            }
        }
        let shape = Arc::new(self.parse_shape()?);
        let text = &self.src[start..self.lex.prev_end()];
        if end == Some(self.lex.prev_end()) {
            self.shapes.insert(text, Arc::clone(&shape));
        }
        Ok((shape, text))
    }

    /// '(' (shape? name (',' shape? name)*)? ')'
    fn parse_operands(&mut self, scope: &Scope<'a>) -> PResult<Vec<InstrId>> {
        let mut operands = Vec::new();
        self.expect(Tok::LParen, "expected '(' before the operands")?;
        if self.eat(Tok::RParen) {
            return Ok(operands);
        }
        loop {
            let has_shape = self.at_shape();
            self.style.operand_shapes.get_or_insert(has_shape);
            // Find the operand first, to check its declared shape without building it.
            let mut declared = None;
            if has_shape {
                // Written exactly like the operand's own result shape: nothing to parse.
                let start = self.lex.offset();
                let same = self
                    .lex
                    .split_operand()
                    .filter(|&(shape_end, _, name_end)| {
                        let name = self.src[..name_end]
                            .rsplit(['%', ' ', '\t', '\n', '\r'])
                            .next();
                        let id = name.and_then(|n| scope.names.get(n));
                        id.and_then(|id| scope.shape_text.get(id.index()))
                            == Some(&&self.src[start..shape_end])
                    });
                match same {
                    Some((_, name_at, _)) => self.lex.seek(name_at),
                    None => declared = Some(self.parse_shape()?),
                }
            }
            let (name, at) = self.parse_name("an operand name")?;
            let id = *scope
                .names
                .get(name)
                .ok_or_else(|| self.error_at(at, format!("instruction `{name}` is not defined")))?;
            if let Some(d) = declared {
                let actual = scope.builder.get(id).map(Instruction::shape);
                if let Some(actual) = actual.filter(|a| !d.compatible(a)) {
                    return Err(self.error_at(
                        at,
                        format!(
                            "operand `{name}` is declared as {} but has shape {}",
                            d.to_string_without_layout(),
                            actual.to_string_without_layout()
                        ),
                    ));
                }
            }
            operands.push(id);
            if self.lex.peek().kind == Tok::Comma {
                let comma = self.lex.next();
                if operands.len() == 5 && self.style.index_comments.is_none() {
                    let gap = &self.src[comma.end..self.lex.offset()];
                    self.style.index_comments = Some(gap.contains("/*index="));
                }
                continue;
            }
            self.expect(Tok::RParen, "expected ',' or ')' after an operand")?;
            return Ok(operands);
        }
    }

    /// (',' name '=' value)*, read with `opcode`'s attribute schema.
    fn parse_attrs(&mut self, opcode: Opcode, scope: &Scope<'a>) -> PResult<Vec<Attribute>> {
        if self.lex.peek().kind != Tok::Comma {
            return Ok(Vec::new());
        }
        // Collect in a reused buffer so the result is allocated once at its exact size.
        let mut attrs = std::mem::take(&mut self.attr_scratch);
        attrs.clear();
        let mut seen = SeenNames::default();
        while self.lex.peek().kind == Tok::Comma {
            let (a, at) = self.parse_attr(opcode, scope)?;
            if !seen.insert(&a.name) {
                return Err(
                    self.error_at(at, format!("attribute `{}` given twice", a.name.as_str()))
                );
            }
            attrs.push(a);
        }
        let mut out = Vec::with_capacity(attrs.len());
        out.append(&mut attrs);
        self.attr_scratch = attrs;
        Ok(out)
    }

    /// One `, name=value`, read with `opcode`'s schema (unknown names are kept verbatim
    /// with a warning). Returns the attribute and the offset of its name.
    fn parse_attr(&mut self, opcode: Opcode, scope: &Scope<'a>) -> PResult<(Attribute, usize)> {
        self.expect(Tok::Comma, "expected ','")?;
        let t = self.expect(Tok::Ident, "expected an attribute name")?;
        let text = self.lex.text(t);
        self.expect(Tok::Equal, "expected '=' after the attribute name")?;
        let name = AttrName::from_text(text);
        let value = match attr_kind(opcode, &name) {
            Some(kind) => self.parse_attr_value(kind, scope)?,
            None => {
                self.warn_at(
                    t.start,
                    format!("unknown attribute `{text}` on {opcode} kept verbatim"),
                );
                AttrValue::Raw(self.parse_raw()?)
            }
        };
        Ok((Attribute::new(name, value), t.start))
    }

    /// Checks the generic async ops and gives `async-update`/`async-done` the `calls=` of
    /// the chain they end.
    fn check_async(
        &mut self,
        instr: &mut Instruction,
        scope: &Scope<'a>,
        at: usize,
    ) -> PResult<()> {
        match instr.opcode {
            Opcode::AsyncStart => {
                check_start_shape(&instr.shape).map_err(|m| self.error_at(at, m))?;
                if instr.calls().is_none() {
                    return Err(self.error_at(at, "async-start needs calls="));
                }
            }
            Opcode::AsyncUpdate | Opcode::AsyncDone => {
                let comp = self.async_chain(instr, scope, at)?;
                match instr.calls() {
                    Some(c) if c != comp => {
                        return Err(self.error_at(
                            at,
                            "calls= differs from the computation of the async-start",
                        ))
                    }
                    Some(_) => {}
                    None => insert_calls(&mut instr.attrs, comp),
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The computation of the async chain `instr` continues (its single operand must be an
    /// async-start or async-update).
    fn async_chain(
        &self,
        instr: &Instruction,
        scope: &Scope<'a>,
        at: usize,
    ) -> PResult<crate::ir::CompId> {
        let prev = match instr.operands[..] {
            [op] => scope.builder.get(op),
            _ => None,
        };
        match prev {
            Some(p) if matches!(p.opcode, Opcode::AsyncStart | Opcode::AsyncUpdate) => p
                .calls()
                .ok_or_else(|| self.error_at(at, "the async operand has no computation")),
            _ => Err(self.error_at(
                at,
                format!(
                    "{} expects a single async-start or async-update operand",
                    instr.opcode
                ),
            )),
        }
    }

    /// Builds the generic async representation of `op-start/-update/-done`.
    fn finish_short_async(
        &mut self,
        mut instr: Instruction,
        step: AsyncStep,
        wrapped: Opcode,
        scope: &mut Scope<'a>,
        at: usize,
        shape_text: &'a str,
    ) -> PResult<InstrId> {
        if step != AsyncStep::Start {
            instr.attrs = self.parse_attrs(instr.opcode, scope)?;
            if instr.calls().is_some() {
                return Err(
                    self.error_at(at, format!("{wrapped}-{} takes no calls=", step_name(step)))
                );
            }
            let comp = self.async_chain(&instr, scope, at)?;
            let root = self.comps[comp.index()].root_instr().opcode;
            if root != wrapped {
                return Err(
                    self.error_at(at, format!("this async chain wraps {root}, not {wrapped}"))
                );
            }
            insert_calls(&mut instr.attrs, comp);
            return Ok(scope.add(instr, shape_text));
        }
        // Start: attributes of the wrapped op go to it, shared ones stay on the start.
        let start_only = |n: &AttrName| {
            is_generic(n)
                || (attr_kind(wrapped, n).is_none() && attr_kind(Opcode::AsyncStart, n).is_some())
        };
        let mut start_attrs: Vec<Attribute> = Vec::new();
        let mut wrapped_attrs: Vec<Attribute> = Vec::new();
        let mut seen = SeenNames::default();
        while self.lex.peek().kind == Tok::Comma {
            let t2 = self.lex.peek2();
            let on_start = start_only(&AttrName::from_text(self.lex.text(t2)));
            let opcode = if on_start {
                Opcode::AsyncStart
            } else {
                wrapped
            };
            let (a, at_attr) = self.parse_attr(opcode, scope)?;
            if on_start && a.name == AttrName::Calls {
                return Err(self.error_at(at_attr, format!("{wrapped}-start takes no calls=")));
            }
            if !seen.insert(&a.name) {
                return Err(self.error_at(
                    at_attr,
                    format!("attribute `{}` given twice", a.name.as_str()),
                ));
            }
            if on_start {
                start_attrs.push(a);
            } else {
                wrapped_attrs.push(a);
            }
        }
        check_start_shape(&instr.shape).map_err(|m| self.error_at(at, m))?;
        let result = instr.shape.tuple_shapes()[1].clone();
        let mut b = ComputationBuilder::new("async_wrapped");
        let mut params = Vec::with_capacity(instr.operands.len());
        for (i, &op) in instr.operands.iter().enumerate() {
            let shape = scope
                .builder
                .get(op)
                .map(|o| o.shape().clone())
                .unwrap_or_else(|| Shape::tuple(vec![]));
            let pname = if i == 0 {
                "async_param".to_string()
            } else {
                format!("async_param.{i}")
            };
            params.push(b.add(Instruction::parameter(pname, i as i64, shape)));
        }
        let mut root = Instruction::new("async_op", wrapped, result, params);
        root.attrs = wrapped_attrs;
        b.add(root);
        let comp = b
            .build(None)
            .map_err(|e| self.error_at(at, e.to_string()))?;
        let offsets = vec![at; comp.instrs.len()];
        let comp = self.push_generated(comp, offsets);
        instr.attrs = start_attrs;
        insert_calls(&mut instr.attrs, comp);
        Ok(scope.add(instr, shape_text))
    }
}

fn step_name(step: AsyncStep) -> &'static str {
    match step {
        AsyncStep::Start => "start",
        AsyncStep::Update => "update",
        AsyncStep::Done => "done",
    }
}

/// An async-start's shape is `((operands...), outputs, state...)`.
fn check_start_shape(shape: &Shape) -> Result<(), String> {
    let t = shape.tuple_shapes();
    if shape.is_tuple() && t.len() >= 2 && t[0].is_tuple() {
        Ok(())
    } else {
        Err(format!(
            "an async start's shape must be ((operands...), outputs, context...), not {}",
            shape.to_string_without_layout()
        ))
    }
}

/// Puts `calls=comp` after an `async_execution_thread=` if there is one, else first
/// (where XLA prints it).
fn insert_calls(attrs: &mut Vec<Attribute>, comp: crate::ir::CompId) {
    let pos = attrs
        .iter()
        .position(|a| a.name == AttrName::AsyncExecutionThread)
        .map_or(0, |i| i + 1);
    attrs.insert(
        pos,
        Attribute::new(AttrName::Calls, AttrValue::Computation(comp)),
    );
}

/// Attribute names seen on one instruction: a list while short, a hash set beyond, so
/// thousands of attributes cost linear time.
#[derive(Default)]
struct SeenNames {
    few: Vec<AttrName>,
    many: std::collections::HashSet<AttrName>,
}

impl SeenNames {
    /// Records `name`; false if it was already there.
    fn insert(&mut self, name: &AttrName) -> bool {
        if self.few.contains(name) {
            return false;
        }
        if self.few.len() < 16 {
            self.few.push(name.clone());
            return true;
        }
        self.many.insert(name.clone())
    }
}
