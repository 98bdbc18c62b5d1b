//! Modules: the `HloModule` line, the stack frame tables, and computations.

use std::collections::HashSet;

use super::lexer::Tok;
use super::{FxMap, PResult, Parser, Scope};
use crate::ir::{
    CompId, Computation, ComputationBuilder, ComputationLayout, IrError, Module, ModuleAttr,
    ModuleAttrValue, StackFrameIndex, TableRow,
};

/// Header attributes kept verbatim without a warning.
const KNOWN_RAW_HEADER_ATTRS: &[&str] = &[
    "input_output_alias",
    "buffer_donor",
    "frontend_attributes",
    "allow_spmd_sharding_propagation_to_parameters",
    "allow_spmd_sharding_propagation_to_output",
    "origin_recovery_table",
];

impl<'a> Parser<'a> {
    /// module ::= ('HloModule' name (',' attr)*)? stack_frames? computation+
    pub(crate) fn parse_module(&mut self) -> PResult<Module> {
        let mut name = None;
        let mut attrs = Vec::new();
        if self.at_ident("HloModule") {
            self.lex.next();
            name = Some(self.parse_name("the module name")?.0.to_string());
            while self.eat(Tok::Comma) {
                attrs.push(self.parse_module_attr()?);
            }
        }
        let stack_frames = if self.at_ident("FileNames") {
            Some(self.parse_stack_frames()?)
        } else {
            None
        };
        let mut entry: Option<CompId> = None;
        loop {
            if self.lex.peek().kind == Tok::Eof {
                break;
            }
            let at = self.lex.offset();
            let is_entry = self.at_ident("ENTRY");
            let id = self.parse_computation()?;
            if is_entry {
                if entry.is_some() {
                    return Err(self.error_at(at, "a module has only one ENTRY computation"));
                }
                entry = Some(id);
            }
        }
        if self.comps.is_empty() {
            return Err(self.error_here("expected a computation"));
        }
        self.uniquify_generated_names();
        let entry = entry.unwrap_or(CompId::from_index(self.comps.len() - 1));
        let name = name.unwrap_or_else(|| format!("module_{}", self.comps[entry.index()].name));
        let mut module = Module::new(name, std::mem::take(&mut self.comps), entry)
            .map_err(|e| self.error_at(0, e.to_string()))?;
        module.attrs = attrs;
        module.stack_frames = stack_frames;
        module.source_style = self.style.options();
        Ok(module)
    }

    fn parse_module_attr(&mut self) -> PResult<ModuleAttr> {
        let t = self.expect(Tok::Ident, "expected a module attribute")?;
        let name = self.lex.text(t);
        self.expect(Tok::Equal, "expected '=' after the attribute name")?;
        let value = match name {
            "is_scheduled" | "alias_passthrough_params" => {
                ModuleAttrValue::Bool(self.parse_bool()?)
            }
            "replica_count" | "num_partitions" => ModuleAttrValue::Int(self.parse_i64()?),
            "entry_computation_layout" => ModuleAttrValue::Layout(self.parse_computation_layout()?),
            _ => {
                if !KNOWN_RAW_HEADER_ATTRS.contains(&name) {
                    self.warn_at(
                        t.start,
                        format!("unknown module attribute `{name}` kept verbatim"),
                    );
                }
                ModuleAttrValue::Raw(self.parse_raw()?)
            }
        };
        Ok(ModuleAttr {
            name: name.to_string(),
            value,
        })
    }

    /// `{(shape, ...)->shape}`.
    fn parse_computation_layout(&mut self) -> PResult<ComputationLayout> {
        self.expect(Tok::LBrace, "expected '{'")?;
        let mut parameters = Vec::new();
        self.parse_list(Tok::LParen, Tok::RParen, |p| {
            parameters.push(p.parse_shape()?);
            Ok(())
        })?;
        self.expect(Tok::Arrow, "expected '->'")?;
        let result = self.parse_shape()?;
        self.expect(Tok::RBrace, "expected '}'")?;
        Ok(ComputationLayout { parameters, result })
    }

    /// FileNames / FunctionNames / FileLocations / StackFrames tables.
    fn parse_stack_frames(&mut self) -> PResult<StackFrameIndex> {
        let mut index = StackFrameIndex::default();
        self.lex.next();
        while self.lex.peek().kind == Tok::Int {
            let id = self.parse_i64()?;
            index.file_names.push((id, self.parse_string()?));
        }
        self.expect_word("FunctionNames")?;
        while self.lex.peek().kind == Tok::Int {
            let id = self.parse_i64()?;
            index.function_names.push((id, self.parse_string()?));
        }
        self.expect_word("FileLocations")?;
        index.file_locations = self.parse_table_rows()?;
        self.expect_word("StackFrames")?;
        index.stack_frames = self.parse_table_rows()?;
        Ok(index)
    }

    fn expect_word(&mut self, word: &str) -> PResult<()> {
        if self.at_ident(word) {
            self.lex.next();
            Ok(())
        } else {
            Err(self.error_here(format!("expected `{word}`")))
        }
    }

    /// Rows `id {key=int key=int ...}`.
    fn parse_table_rows(&mut self) -> PResult<Vec<TableRow>> {
        let mut rows = Vec::new();
        while self.lex.peek().kind == Tok::Int {
            let id = self.parse_i64()?;
            self.expect(Tok::LBrace, "expected '{'")?;
            let mut fields = Vec::new();
            loop {
                self.eat(Tok::Comma);
                if self.eat(Tok::RBrace) {
                    break;
                }
                let t = self.expect(Tok::Ident, "expected a field name or '}'")?;
                self.expect(Tok::Equal, "expected '='")?;
                fields.push((self.lex.text(t).to_string(), self.parse_i64()?));
            }
            rows.push(TableRow { id, fields });
        }
        Ok(rows)
    }

    /// computation ::= 'ENTRY'? name ('(' params ')' '->' shape)? '{' instr+ '}'
    ///                 (',' attr)*
    fn parse_computation(&mut self) -> PResult<CompId> {
        let is_entry = self.at_ident("ENTRY");
        if is_entry {
            self.lex.next();
        }
        let (name, name_at) = self.parse_name("a computation name")?;
        if self.comp_names.contains_key(name) {
            return Err(self.error_at(name_at, format!("computation `{name}` is already defined")));
        }
        let mut signature = None;
        if self.lex.peek().kind == Tok::LParen {
            self.parse_list(Tok::LParen, Tok::RParen, |p| {
                p.parse_name("a parameter name")?;
                p.expect(Tok::Colon, "expected ':' after the parameter name")?;
                p.parse_shape()?;
                Ok(())
            })?;
            self.expect(Tok::Arrow, "expected '->' before the result shape")?;
            let at = self.lex.offset();
            signature = Some((self.parse_shape()?, at));
        }
        self.style.signatures.get_or_insert(signature.is_some());
        let at = self.lex.offset();
        let (mut comp, offsets) = self.parse_body(name, at, true)?;
        if let Some((shape, at)) = signature {
            let root = comp.root_instr().shape();
            if !shape.compatible(root) {
                return Err(self.error_at(
                    at,
                    format!(
                        "computation `{name}` is declared to return {} but its root returns {}",
                        shape.to_string_without_layout(),
                        root.to_string_without_layout()
                    ),
                ));
            }
        }
        while self.eat(Tok::Comma) {
            let t = self.expect(Tok::Ident, "expected a computation attribute")?;
            self.expect(Tok::Equal, "expected '='")?;
            if self.lex.text(t) == "execution_thread" {
                comp.execution_thread = Some(self.parse_string()?);
            } else {
                return Err(self.error_at(
                    t.start,
                    format!("unknown computation attribute `{}`", self.lex.text(t)),
                ));
            }
        }
        let id = CompId::from_index(self.comps.len());
        self.comps.push(comp);
        self.source_map.push(offsets);
        self.comp_names.insert(name, id);
        Ok(id)
    }

    /// '{' instruction+ '}' as a computation named `name`; `at` locates errors about the
    /// whole body.
    pub(crate) fn parse_body(
        &mut self,
        name: &str,
        at: usize,
        top_level: bool,
    ) -> PResult<(Computation, Vec<usize>)> {
        self.expect(
            Tok::LBrace,
            "expected '{' to start the computation's instructions",
        )?;
        // Size the tables for about one instruction per 64 bytes up to the closing brace
        // (a guess that cannot reserve much more memory than the text's own size). Inline
        // computations are not measured: many of them on one line would make it quadratic.
        let lines = if top_level {
            let rest = &self.src[self.lex.offset().min(self.src.len())..];
            body_len(rest) / 64 + 1
        } else {
            4
        };
        // Capped: the guess can overshoot (a body without a closing line of its own), and
        // the builder gives unused room back.
        let lines = lines.min(1 << 16);
        let mut scope = Scope {
            builder: ComputationBuilder::with_capacity(name, lines),
            names: FxMap::with_capacity_and_hasher(lines.min(4096), Default::default()),
            root: None,
            shape_text: Vec::with_capacity(lines),
            at,
            offsets: Vec::with_capacity(lines),
        };
        while !self.eat(Tok::RBrace) {
            self.parse_instruction(&mut scope)?;
        }
        let comp = scope.builder.build(scope.root).map_err(|e| match e {
            IrError::EmptyComputation(_) => {
                self.error_at(at, format!("computation `{name}` has no instructions"))
            }
            e => self.error_at(at, e.to_string()),
        })?;
        Ok((comp, scope.offsets))
    }

    /// Adds a computation the parser created, with its instructions' source offsets, and
    /// returns its id.
    pub(crate) fn push_generated(&mut self, c: Computation, offsets: Vec<usize>) -> CompId {
        let id = CompId::from_index(self.comps.len());
        self.comps.push(c);
        self.source_map.push(offsets);
        self.generated.push(id);
        id
    }

    /// Gives generated computations names no declared computation uses.
    fn uniquify_generated_names(&mut self) {
        let generated: HashSet<usize> = self.generated.iter().map(|c| c.index()).collect();
        let mut taken: HashSet<String> = self
            .comps
            .iter()
            .enumerate()
            .filter(|(i, _)| !generated.contains(i))
            .map(|(_, c)| c.name.clone())
            .collect();
        // Next suffix to try per base name, so many generated computations with one base
        // name cost linear time.
        let mut next: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
        for id in self.generated.clone() {
            let base = self.comps[id.index()].name.clone();
            let n = next.entry(base.clone()).or_insert(0);
            let mut name = if *n == 0 {
                base.clone()
            } else {
                format!("{base}.{n}")
            };
            while taken.contains(&name) {
                *n += 1;
                name = format!("{base}.{n}");
            }
            *n += 1;
            taken.insert(name.clone());
            self.comps[id.index()].name = name;
        }
    }
}

/// Length of a computation body: up to the first line that starts with `}` (found line by
/// line, which is much faster than a substring search).
fn body_len(rest: &str) -> usize {
    let b = rest.as_bytes();
    let mut i = 0;
    while let Some(nl) = rest[i..].find('\n') {
        i += nl + 1;
        if b.get(i) == Some(&b'}') {
            return i;
        }
    }
    rest.len()
}
