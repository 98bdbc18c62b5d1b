//! Instructions: `ROOT? name = shape opcode(operands), attr=value, ...`, including the
//! short async forms (`all-to-all-start` / `-update` / `-done`).

use super::lexer::Tok;
use super::{PResult, Parser, Scope};
use crate::attrs::{
    attr_kind, is_generic, unknown_attribute_message, AttrName, AttrValue, Attribute,
};
use crate::ir::{ComputationBuilder, InstrId, Instruction, Payload};
use crate::opcode::Opcode;
use crate::shape::Shape;
use std::sync::Arc;

mod async_forms;
mod tuple_paths;

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
        let (name, name_at) = self.parse_instr_name("an instruction or '}'")?;
        self.style.sigils.get_or_insert(name_tok.kind == Tok::Name);
        self.expect(Tok::Equal, "expected '=' after the instruction name")?;
        let shape = if self.at_shape() {
            Some(self.parse_result_shape()?)
        } else {
            None
        };
        let id = self.parse_instruction_rhs(scope, name.to_string(), shape, false)?;
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

    /// The part of an instruction after its result shape: `opcode(operands), attrs`, added
    /// to `scope` as `name`. Without a written `shape` the shape is inferred from the
    /// operands (XLA's rules). `nested`: an operand written as an instruction, whose
    /// attributes end where a `,` is not followed by `name=`.
    pub(crate) fn parse_instruction_rhs(
        &mut self,
        scope: &mut Scope<'a>,
        name: String,
        shape: Option<(Arc<Shape>, &'a str)>,
        nested: bool,
    ) -> PResult<InstrId> {
        let op_tok = self.expect(Tok::Ident, "expected an opcode")?;
        let op_text = self.lex.text(op_tok);
        let (opcode, sugar) = resolve_opcode(op_text)
            .ok_or_else(|| self.error_at(op_tok.start, format!("unknown opcode `{op_text}`")))?;
        let written = shape.is_some();
        if !written && (sugar.is_some() || matches!(opcode, Opcode::Parameter | Opcode::Constant)) {
            return Err(self.error_at(
                op_tok.start,
                format!("{op_text} needs its result shape written before the opcode"),
            ));
        }
        let (shape, shape_text) = shape.unwrap_or_else(|| (Arc::new(Shape::tuple(vec![])), ""));

        let mut instr = Instruction::with_shared_shape(name, opcode, shape, Vec::new());
        match opcode {
            Opcode::Parameter => {
                self.expect(Tok::LParen, "expected '(' before the parameter number")?;
                let at = self.lex.offset();
                let n = self.parse_i64()?;
                if n < 0 {
                    return Err(self.error_at(at, "parameter number must be >= 0"));
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

        match sugar {
            None => {
                instr.attrs = self.parse_attrs(opcode, scope, nested)?;
                if let Some(AttrValue::Bools(r)) = instr.attr(&AttrName::ParameterReplication) {
                    let leaves = instr.shape.leaf_count();
                    if r.len() != leaves {
                        return Err(self.error_at(
                            op_tok.start,
                            format!(
                                "parameter has {leaves} leaf buffers, but parameter_replication has {} elements",
                                r.len()
                            ),
                        ));
                    }
                }
                self.default_broadcast_dimensions(&mut instr, scope, op_tok.start)?;
                self.check_async(&mut instr, scope, op_tok.start)?;
                if !written {
                    self.infer_written(&mut instr, scope, op_tok.start)?;
                }
                Ok(scope.add(instr, shape_text))
            }
            Some((step, wrapped)) => {
                self.finish_short_async(instr, step, wrapped, scope, op_tok.start, shape_text)
            }
        }
    }

    /// A `broadcast` of a scalar may leave out `dimensions={}` (as XLA allows).
    fn default_broadcast_dimensions(
        &self,
        instr: &mut Instruction,
        scope: &Scope<'a>,
        at: usize,
    ) -> PResult<()> {
        if instr.opcode != Opcode::Broadcast || instr.attr(&AttrName::Dimensions).is_some() {
            return Ok(());
        }
        let scalar = match instr.operands[..] {
            [op] => scope
                .builder
                .get(op)
                .is_some_and(|o| o.shape().is_array() && o.shape().dims().is_empty()),
            _ => false,
        };
        if !scalar {
            return Err(self.error_at(at, "broadcast of a non-scalar needs dimensions="));
        }
        instr.attrs.push(Attribute::new(
            AttrName::Dimensions,
            AttrValue::IntList(vec![]),
        ));
        Ok(())
    }

    /// Gives an instruction written without a result shape the one XLA's rules infer.
    fn infer_written(&self, instr: &mut Instruction, scope: &Scope<'a>, at: usize) -> PResult<()> {
        let mut ops = Vec::with_capacity(instr.operands.len());
        for &op in &instr.operands {
            match scope.builder.get(op) {
                Some(o) => ops.push(o.shape()),
                None => return Err(self.error_at(at, "an operand is not defined")),
            }
        }
        match crate::verifier::infer_written_shape(&self.comps, instr, &ops) {
            Ok(Some(shape)) => {
                instr.set_shape(shape);
                Ok(())
            }
            Ok(None) => Err(self.error_at(
                at,
                format!(
                    "the shape of {} cannot be inferred: write its result shape",
                    instr.opcode
                ),
            )),
            Err(m) => Err(self.error_at(
                at,
                format!("cannot infer the shape of this {}: {m}", instr.opcode),
            )),
        }
    }

    /// An instruction's result shape and its source text. Shapes written with the same text
    /// are parsed once and shared.
    pub(crate) fn parse_result_shape(&mut self) -> PResult<(Arc<Shape>, &'a str)> {
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
    fn parse_operands(&mut self, scope: &mut Scope<'a>) -> PResult<Vec<InstrId>> {
        let mut operands = Vec::new();
        // Only the operand list of a single instruction parsed on its own.
        let implicit = std::mem::take(&mut self.implicit_operands);
        self.expect(Tok::LParen, "expected '(' before the operands")?;
        if self.eat(Tok::RParen) {
            return Ok(operands);
        }
        loop {
            if implicit {
                operands.push(self.parse_implicit_operand(scope)?);
                if self.eat(Tok::Comma) {
                    continue;
                }
                self.expect(Tok::RParen, "expected ',' or ')' after an operand")?;
                return Ok(operands);
            }
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
                        // A name followed by '(' is an opcode: a nested instruction;
                        // one followed by `#N` selects a tuple element, whose shape is
                        // checked below.
                        let rest = &self.src[name_end..];
                        if rest.trim_start().starts_with('(') || rest.starts_with('#') {
                            return false;
                        }
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
            let t = self.lex.peek();
            if t.kind == Tok::Ident && self.src[t.end..].trim_start().starts_with('(') {
                let at = self.lex.offset();
                let id = self.parse_nested_instruction(scope, declared.take(), at)?;
                operands.push(id);
                if self.eat(Tok::Comma) {
                    continue;
                }
                self.expect(Tok::RParen, "expected ',' or ')' after an operand")?;
                return Ok(operands);
            }
            let (name, at) = self.parse_instr_name("an operand name")?;
            let id = *scope
                .names
                .get(name)
                .ok_or_else(|| self.error_at(at, format!("instruction `{name}` is not defined")))?;
            // `%p#1#0`: tuple elements of `p`.
            let id = self.parse_tuple_path(scope, id, at)?;
            let name = &self.src[at..self.lex.prev_end()];
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

    /// An operand of a single instruction parsed on its own (`multiply(f32[2] %x, f32[2])`):
    /// its shape must be written; it becomes a parameter of the computation built around
    /// the instruction (one per distinct name, in order), unless it is written as an
    /// instruction (`add(f32[] constant(0), ...)`), which is added before its user.
    fn parse_implicit_operand(&mut self, scope: &mut Scope<'a>) -> PResult<InstrId> {
        if !self.at_shape() {
            return Err(self.error_here("Operand had no shape in HLO text"));
        }
        let shape = self.parse_shape()?;
        let t = self.lex.peek();
        // `f32[] constant(0)`: an operand written as an instruction, as in a computation.
        if t.kind == Tok::Ident && self.lex.peek2().kind == Tok::LParen {
            let at = self.lex.offset();
            return self.parse_nested_instruction(scope, Some(shape), at);
        }
        let named =
            t.kind == Tok::Name || t.kind == Tok::Ident && self.lex.peek2().kind != Tok::LParen;
        let name = if named {
            self.lex.next();
            Some(self.lex.text(t))
        } else {
            None
        };
        if let Some(&id) = name.and_then(|n| scope.names.get(n)) {
            return Ok(id);
        }
        let number = self.implicit_params;
        self.implicit_params += 1;
        let pname = name.map_or_else(|| format!("param.{number}"), str::to_string);
        let id = scope.add(Instruction::parameter(pname, number as i64, shape), "");
        if let Some(n) = name {
            scope.names.insert(n, id);
        }
        Ok(id)
    }

    /// An operand written as an instruction (`add(f32[10] parameter(0), ...)`): added to
    /// `scope` under a generated name (`add.anon`, `add.anon.1`, ...) before its user.
    fn parse_nested_instruction(
        &mut self,
        scope: &mut Scope<'a>,
        declared: Option<Shape>,
        at: usize,
    ) -> PResult<InstrId> {
        self.descend(at)?;
        let op_tok = self.lex.peek();
        let opcode_text = self.lex.text(op_tok);
        let base = format!("{opcode_text}.anon");
        let mut name = base.clone();
        let mut n = 0u64;
        while scope.names.contains_key(name.as_str()) || self.anon_names.contains(&name) {
            n += 1;
            name = format!("{base}.{n}");
        }
        self.anon_names.insert(name.clone());
        let shape = declared.map(|s| (Arc::new(s), ""));
        let id = self.parse_instruction_rhs(scope, name, shape, true)?;
        self.ascend();
        Ok(id)
    }

    /// True at `, name=`: another attribute (rather than the next operand after a nested
    /// instruction).
    fn at_attribute(&mut self) -> bool {
        let mut look = self.lex;
        look.peek().kind == Tok::Comma
            && look.next().kind == Tok::Comma
            && look.next().kind == Tok::Ident
            && look.peek().kind == Tok::Equal
    }

    /// (',' name '=' value)*, read with `opcode`'s attribute schema. `nested`: stop before
    /// a `,` that does not start an attribute.
    fn parse_attrs(
        &mut self,
        opcode: Opcode,
        scope: &Scope<'a>,
        nested: bool,
    ) -> PResult<Vec<Attribute>> {
        if self.lex.peek().kind != Tok::Comma || nested && !self.at_attribute() {
            return Ok(Vec::new());
        }
        // Collect in a reused buffer so the result is allocated once at its exact size.
        let mut attrs = std::mem::take(&mut self.attr_scratch);
        attrs.clear();
        let mut seen = SeenNames::default();
        while self.lex.peek().kind == Tok::Comma && (!nested || self.at_attribute()) {
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

    /// One `, name=value`, read with `opcode`'s schema (an unknown name is an error).
    /// Returns the attribute and the offset of its name.
    fn parse_attr(&mut self, opcode: Opcode, scope: &Scope<'a>) -> PResult<(Attribute, usize)> {
        self.expect(Tok::Comma, "expected ','")?;
        let t = self.expect(Tok::Ident, "expected an attribute name")?;
        let text = self.lex.text(t);
        self.expect(Tok::Equal, "expected '=' after the attribute name")?;
        let name = AttrName::from_text(text);
        let value_at = self.lex.offset();
        let value = match attr_kind(opcode, &name) {
            Some(kind) => {
                if name == AttrName::ResultAccuracy {
                    // Checked on a copy of the lexer, then kept as written.
                    let saved = self.lex;
                    self.check_result_accuracy()?;
                    self.lex = saved;
                }
                let v = self.parse_attr_value(kind, scope)?;
                if opcode == Opcode::CustomCall && name == AttrName::ApiVersion {
                    check_api_version(&v).map_err(|m| self.error_at(value_at, m))?;
                }
                if name == AttrName::Algorithm && opcode != Opcode::RngBitGenerator {
                    check_dot_algorithm(&v).map_err(|m| self.error_at(value_at, m))?;
                }
                match (&name, v) {
                    (AttrName::Sharding, AttrValue::Opaque(text)) => {
                        let at = value_at + text.len() - text.trim_start().len();
                        let sharding = crate::sharding_text::parse_sharding(text.trim())
                            .map_err(|e| self.error_at(at + e.offset, e.message))?;
                        AttrValue::Sharding(Box::new(crate::sharding_types::ShardingAttr {
                            text,
                            sharding,
                        }))
                    }
                    (_, v) => v,
                }
            }
            // A name hloc knows, on an opcode that does not take it: an error, as in XLA.
            None if !matches!(name, AttrName::Other(_)) => {
                return Err(self.error_at(
                    t.start,
                    format!("unexpected attribute \"{text}\" (not taken by {opcode})"),
                ));
            }
            // An unknown name: an error, as in XLA (a misspelled attribute must not leave
            // the op with its default).
            None => {
                return Err(self.error_at(t.start, unknown_attribute_message(opcode, text)));
            }
        };
        Ok((Attribute::new(name, value), t.start))
    }

    /// `{mode=default|highest}` or `{tolerance={rtol=x, atol=y, ulps=n}}` (any of the three
    /// fields), with XLA's error wording.
    fn check_result_accuracy(&mut self) -> PResult<()> {
        self.expect(Tok::LBrace, "expects '{' to start result_accuracy")?;
        let t = self.lex.peek();
        if t.kind != Tok::Ident {
            return Err(self.error_token(t, "expects attribute name"));
        }
        self.lex.next();
        self.expect(Tok::Equal, "expects '=' after the attribute name")?;
        match self.lex.text(t) {
            "mode" => {
                let m = self.lex.peek();
                let text = self.lex.text(m);
                if m.kind != Tok::Ident
                    || !matches!(text.to_ascii_lowercase().as_str(), "default" | "highest")
                {
                    return Err(self.error_at(
                        m.start,
                        format!("expects ResultAccuracy type but sees: {text}"),
                    ));
                }
                self.lex.next();
            }
            "tolerance" => {
                let mut seen: Vec<&str> = Vec::new();
                self.parse_list(Tok::LBrace, Tok::RBrace, |p| {
                    let f = p.lex.peek();
                    let field = p.lex.text(f);
                    if f.kind != Tok::Ident || !matches!(field, "rtol" | "atol" | "ulps") {
                        return Err(p.error_token(f, "invalid attribute name"));
                    }
                    if seen.contains(&field) {
                        return Err(p.error_at(f.start, format!("`{field}` is given twice")));
                    }
                    seen.push(field);
                    p.lex.next();
                    p.expect(Tok::Equal, "expects '=' after the attribute name")?;
                    let v = p.lex.peek();
                    let ok = match field {
                        "ulps" => v.kind == Tok::Int,
                        _ => matches!(v.kind, Tok::Int | Tok::Float),
                    };
                    if !ok {
                        return Err(p.error_token(v, format!("expects a number for {field}")));
                    }
                    p.lex.next();
                    Ok(())
                })?;
            }
            _ => return Err(self.error_at(t.start, "invalid attribute name")),
        }
        self.expect(Tok::RBrace, "expects '}' at the end of result_accuracy")?;
        Ok(())
    }
}

/// The `algorithm=` of a dot or convolution names one of XLA's dot algorithms
/// (`PrecisionConfig::Algorithm` without its `ALG_` prefix, any case:
/// `dot_bf16_bf16_f32_x3`).
fn check_dot_algorithm(v: &AttrValue) -> Result<(), String> {
    const NAMES: [&str; 16] = [
        "UNSET",
        "DOT_ANY_F8_ANY_F8_F32",
        "DOT_ANY_F8_ANY_F8_F32_FAST_ACCUM",
        "DOT_ANY_F8_ANY_F8_ANY",
        "DOT_ANY_F8_ANY_F8_ANY_FAST_ACCUM",
        "DOT_F16_F16_F16",
        "DOT_F16_F16_F32",
        "DOT_BF16_BF16_BF16",
        "DOT_BF16_BF16_F32",
        "DOT_BF16_BF16_F32_X3",
        "DOT_BF16_BF16_F32_X6",
        "DOT_BF16_BF16_F32_X9",
        "DOT_TF32_TF32_F32",
        "DOT_TF32_TF32_F32_X3",
        "DOT_F32_F32_F32",
        "DOT_F64_F64_F64",
    ];
    match v {
        AttrValue::Ident(s) if NAMES.contains(&s.to_ascii_uppercase().as_str()) => Ok(()),
        AttrValue::Ident(s) => Err(format!("Unknown algorithm: {s}")),
        _ => Err("expects a dot algorithm".to_string()),
    }
}

/// A custom call's `api_version` must name one of XLA's calling conventions.
fn check_api_version(v: &AttrValue) -> Result<(), String> {
    match v {
        AttrValue::Ident(s) => match s.as_str() {
            "API_VERSION_ORIGINAL"
            | "API_VERSION_STATUS_RETURNING"
            | "API_VERSION_STATUS_RETURNING_UNIFIED"
            | "API_VERSION_TYPED_FFI" => Ok(()),
            "API_VERSION_UNSPECIFIED" => Err(format!("Invalid API version: {s}")),
            _ => Err(format!("Unknown API version: {s}")),
        },
        _ => Err("expects an API version".to_string()),
    }
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
