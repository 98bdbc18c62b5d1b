//! Tuple-element operands: `%p#1#0` in an operand list, as current XLA prints them. Each
//! `#N` selects tuple element N of the value selected so far; the parser turns each step
//! into a `get-tuple-element` of the current computation, made at the path's first use
//! (just before the using instruction) and shared by every later use of the same path.
//! Their names are given when the module is complete (`Parser::adopt_steps`).

use super::*;
use crate::attrs::{AttrName, AttrValue};

impl<'a> Parser<'a> {
    /// The `#N` steps written right after an operand name (no space in between), starting
    /// from the value `id` named at `name_at`; returns the value selected. Without steps,
    /// `id` itself.
    pub(super) fn parse_tuple_path(
        &mut self,
        scope: &mut Scope<'a>,
        mut id: InstrId,
        name_at: usize,
    ) -> PResult<InstrId> {
        loop {
            let hash = self.lex.peek();
            if hash.kind != Tok::Hash || hash.start != self.lex.prev_end() {
                return Ok(id);
            }
            // The path so far, as written (`p#1`), for messages.
            let path = &self.src[name_at..self.lex.prev_end()];
            self.lex.next();
            let t = self.lex.peek();
            let text = self.lex.text(t);
            if t.kind != Tok::Int
                || t.start != hash.end
                || !text.bytes().all(|b| b.is_ascii_digit())
            {
                return Err(self.error_at(
                    hash.start,
                    "expected a tuple index (digits) right after '#'",
                ));
            }
            self.lex.next();
            let Some(base) = scope.builder.get(id) else {
                return Err(self.error_at(name_at, format!("`{path}` is not defined")));
            };
            let shape = base.shape();
            if !shape.is_tuple() {
                return Err(self.error_at(
                    hash.start,
                    format!(
                        "`#{text}` selects a tuple element, but `{path}` is {}, not a tuple",
                        shape.to_string_without_layout()
                    ),
                ));
            }
            let elements = shape.tuple_shapes();
            let Some(index) = text.parse::<usize>().ok().filter(|&i| i < elements.len()) else {
                return Err(self.error_at(
                    t.start,
                    format!(
                        "tuple index {text} is out of range: `{path}` has {} element{}",
                        elements.len(),
                        if elements.len() == 1 { "" } else { "s" }
                    ),
                ));
            };
            if let Some(&step) = scope.steps.get(&(id, index)) {
                id = step;
                continue;
            }
            // Named by the path (`p#1`) until every written name is known; `#` is in no
            // written name, so this one clashes with none of them.
            let provisional = format!("{}#{index}", base.name());
            let wanted = provisional.replace('#', "_");
            let gte = Instruction::new(
                provisional,
                Opcode::GetTupleElement,
                elements[index].clone(),
                vec![id],
            )
            .with_attr(AttrName::Index, AttrValue::Int(index as i64));
            let step = scope.add(gte, "");
            scope.steps.insert((id, index), step);
            scope.step_names.push((step, wanted));
            id = step;
        }
    }
}
