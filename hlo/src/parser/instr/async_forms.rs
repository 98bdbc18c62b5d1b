//! The async forms in the instruction parser: the generic `async-start`/`-update`/`-done`
//! chains (one user each, one wrapped computation per chain, the thread it runs on) and
//! the short forms (`all-reduce-start`, `custom-call-update`, ...) turned into them with a
//! generated wrapped computation.

use super::*;

impl<'a> Parser<'a> {
    /// Checks the generic async ops and gives `async-update`/`async-done` the `calls=` of
    /// the chain they end.
    pub(super) fn check_async(
        &mut self,
        instr: &mut Instruction,
        scope: &Scope<'a>,
        at: usize,
    ) -> PResult<()> {
        match instr.opcode {
            Opcode::AsyncStart => {
                check_start_shape(&instr.shape).map_err(|m| self.error_at(at, m))?;
                let Some(comp) = instr.calls() else {
                    return Err(self.error_at(at, "async-start needs calls="));
                };
                if !self.async_wrapped.insert(comp) {
                    let name = &self.comps[comp.index()].name;
                    return Err(self.error_at(
                        at,
                        format!("Computation {name} is called by more than one async op"),
                    ));
                }
            }
            Opcode::AsyncUpdate | Opcode::AsyncDone => {
                self.check_async_thread(instr, scope, at)?;
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

    /// An `async-update`/`async-done` runs on the thread of the step before it (`main`
    /// unless `async_execution_thread=` says otherwise).
    pub(super) fn check_async_thread(
        &self,
        instr: &Instruction,
        scope: &Scope<'a>,
        at: usize,
    ) -> PResult<()> {
        let written = |i: &Instruction| match i.attr(&AttrName::AsyncExecutionThread) {
            Some(AttrValue::String(s)) => Some(s.clone()),
            _ => None,
        };
        let Some(mine) = written(instr) else {
            return Ok(());
        };
        // The chain's thread: the nearest step back that names one, else `main`. Each
        // step is earlier in the arena, so the walk ends.
        let mut chain = "main".to_string();
        let mut prev = instr.operands.first().and_then(|&o| scope.builder.get(o));
        while let Some(p) = prev {
            if let Some(t) = written(p) {
                chain = t;
                break;
            }
            if p.opcode != Opcode::AsyncUpdate {
                break;
            }
            prev = p.operands.first().and_then(|&o| scope.builder.get(o));
        }
        if mine != chain {
            return Err(self.error_at(
                at,
                format!("Expect async_execution_thread to be {chain}, but got {mine}"),
            ));
        }
        Ok(())
    }

    /// The computation of the async chain `instr` continues (its single operand must be an
    /// async-start or async-update).
    pub(super) fn async_chain(
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

    /// Attributes of a short `op-update`/`op-done`: its own (`async_execution_thread`,
    /// metadata, ...) or, as XLA allows, the wrapped op's (`custom_call_target="foo"` again),
    /// kept as written.
    pub(super) fn parse_short_step_attrs(
        &mut self,
        step: Opcode,
        wrapped: Opcode,
        scope: &Scope<'a>,
    ) -> PResult<Vec<Attribute>> {
        let mut attrs = Vec::new();
        let mut seen = SeenNames::default();
        while self.lex.peek().kind == Tok::Comma {
            let t2 = self.lex.peek2();
            let name = AttrName::from_text(self.lex.text(t2));
            let schema = if attr_kind(step, &name).is_some() {
                step
            } else {
                wrapped
            };
            let (a, at) = self.parse_attr(schema, scope)?;
            if !seen.insert(&a.name) {
                return Err(
                    self.error_at(at, format!("attribute `{}` given twice", a.name.as_str()))
                );
            }
            attrs.push(a);
        }
        Ok(attrs)
    }

    /// Builds the generic async representation of `op-start/-update/-done`.
    pub(super) fn finish_short_async(
        &mut self,
        mut instr: Instruction,
        step: AsyncStep,
        wrapped: Opcode,
        scope: &mut Scope<'a>,
        at: usize,
        shape_text: &'a str,
    ) -> PResult<InstrId> {
        if step != AsyncStep::Start {
            instr.attrs = self.parse_short_step_attrs(instr.opcode, wrapped, scope)?;
            self.check_async_thread(&instr, scope, at)?;
            if instr.calls().is_some() {
                return Err(
                    self.error_at(at, format!("{wrapped}-{} takes no calls=", step_name(step)))
                );
            }
            let comp = self.async_chain(&instr, scope, at)?;
            let root = self.comps[comp.index()].root_instr();
            if root.opcode != wrapped {
                return Err(self.error_at(
                    at,
                    format!("this async chain wraps {}, not {wrapped}", root.opcode),
                ));
            }
            // The wrapped op's attributes, when repeated here, must be the wrapped op's.
            for a in &instr.attrs {
                if attr_kind(instr.opcode, &a.name).is_none()
                    && root.attr(&a.name) != Some(&a.value)
                {
                    return Err(self.error_at(
                        at,
                        format!(
                            "async-{} expects its wrapped async computation to be identical to its operand's (`{}` differs)",
                            step_name(step),
                            a.name.as_str()
                        ),
                    ));
                }
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
        let mut comp = b
            .build(None)
            .map_err(|e| self.error_at(at, e.to_string()))?;
        // The wrapped computation runs on the thread the start names.
        comp.execution_thread = start_attrs.iter().find_map(|a| match &a.value {
            AttrValue::String(t) if a.name == AttrName::AsyncExecutionThread && t != "main" => {
                Some(t.clone())
            }
            _ => None,
        });
        let offsets = vec![at; comp.instrs.len()];
        let comp = self.push_generated(comp, offsets);
        instr.attrs = start_attrs;
        insert_calls(&mut instr.attrs, comp);
        Ok(scope.add(instr, shape_text))
    }
}

/// The short-form suffix of an async step (`start`, `update`, `done`).
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
