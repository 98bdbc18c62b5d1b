//! Modules: the `HloModule` line, the stack frame tables, and computations.

use std::collections::HashSet;

use super::lexer::Tok;
use super::{FxMap, PResult, Parser, Scope};
use crate::ir::edit::NameGen;
use crate::ir::{
    CompId, Computation, ComputationBuilder, ComputationLayout, InstrId, IrError, Module,
    ModuleAttr, ModuleAttrValue, StackFrameIndex, TableRow,
};

/// A parsed computation body.
pub(crate) struct Body {
    /// The computation.
    pub comp: Computation,
    /// The source offset of each instruction.
    pub offsets: Vec<usize>,
    /// The get-tuple-elements made for `%p#N` operands, with the names they ask for.
    pub steps: Vec<(InstrId, String)>,
}

/// Header attributes kept verbatim without a warning.
const KNOWN_RAW_HEADER_ATTRS: &[&str] = &[
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
            // XLA accepts (and its older dumps write) a colon after the name.
            self.eat(Tok::Colon);
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
        if name.is_none() && stack_frames.is_none() && self.at_single_instruction() {
            entry = Some(self.parse_single_instruction()?);
        }
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
        self.uniquify_instruction_names(entry);
        let name = name.unwrap_or_else(|| format!("module_{}", self.comps[entry.index()].name));
        let mut module = Module::new(name, std::mem::take(&mut self.comps), entry)
            .map_err(|e| self.error_at(0, e.to_string()))?;
        module.attrs = attrs;
        module.stack_frames = stack_frames;
        module.source_style = self.style.options();
        self.name_tuple_elements(&mut module);
        Ok(module)
    }

    /// True when the text is one instruction rather than computations: it starts with
    /// `name =` or with a shape (XLA's canonical instruction text, without a name).
    fn at_single_instruction(&mut self) -> bool {
        let t = self.lex.peek();
        let named = matches!(t.kind, Tok::Name | Tok::Ident)
            && !self.at_ident("ENTRY")
            && self.lex.peek2().kind == Tok::Equal;
        named || self.at_shape()
    }

    /// One instruction on its own (`%m = f32[2] multiply(f32[2] %x, f32[2] %y)`, or
    /// `f32[2] multiply(f32[2], f32[2])`): an entry computation whose parameters are the
    /// instruction's operands and whose root is the instruction.
    fn parse_single_instruction(&mut self) -> PResult<CompId> {
        let at = self.lex.offset();
        let mut scope = Scope {
            builder: ComputationBuilder::with_capacity("entry", 4),
            names: FxMap::default(),
            root: None,
            shape_text: Vec::new(),
            at,
            offsets: Vec::new(),
            steps: FxMap::default(),
            step_names: Vec::new(),
        };
        let name = if self.at_shape() {
            "instr".to_string()
        } else {
            let (name, _) = self.parse_instr_name("an instruction name")?;
            self.expect(Tok::Equal, "expected '=' after the instruction name")?;
            name.to_string()
        };
        let shape = if self.at_shape() {
            Some(self.parse_result_shape()?)
        } else {
            None
        };
        self.implicit_operands = true;
        let id = self.parse_instruction_rhs(&mut scope, name, shape, false)?;
        self.implicit_operands = false;
        self.expect(
            Tok::Eof,
            "Expected eof after a single instruction (a module needs its computations in braces)",
        )?;
        let comp = scope
            .builder
            .build(Some(id))
            .map_err(|e| self.error_at(at, e.to_string()))?;
        let cid = CompId::from_index(self.comps.len());
        self.comps.push(comp);
        self.source_map.push(scope.offsets);
        self.comp_names.insert("entry", cid);
        Ok(cid)
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
            // Checked here, kept as written.
            "input_output_alias" | "buffer_donor" | "debug_attributes" => {
                let start = self.lex.offset();
                match name {
                    "input_output_alias" => self.parse_input_output_alias()?,
                    "buffer_donor" => self.parse_buffer_donor()?,
                    _ => self.check_debug_attributes()?,
                }
                ModuleAttrValue::Raw(self.src[start..self.lex.prev_end()].to_string())
            }
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

    /// `{ {output index}: (parameter, {parameter index}, must-alias|may-alias?), ... }`
    /// (the kind is optional). Error wording follows XLA's.
    fn parse_input_output_alias(&mut self) -> PResult<()> {
        self.expect(Tok::LBrace, "expects '{' to start input_output_alias")?;
        if self.eat(Tok::RBrace) {
            return Ok(());
        }
        loop {
            self.parse_shape_index()?;
            self.expect(Tok::Colon, "expects ':' after the output ShapeIndex")?;
            self.expect(Tok::LParen, "expects '(' before the aliased parameter")?;
            self.parse_alias_int()?;
            self.expect(Tok::Comma, "expects ',' after the parameter number")?;
            self.parse_shape_index()?;
            if self.eat(Tok::Comma) {
                let t = self.lex.peek();
                if t.kind != Tok::Ident || !matches!(self.lex.text(t), "must-alias" | "may-alias") {
                    return Err(self.error_token(t, "expects must-alias or may-alias"));
                }
                self.lex.next();
            }
            self.expect(Tok::RParen, "expects ')' at the end of an alias")?;
            if self.eat(Tok::Comma) {
                continue;
            }
            self.expect(
                Tok::RBrace,
                "Expects '}' at the end of aliasing description",
            )?;
            return Ok(());
        }
    }

    /// `{ (parameter, {parameter index}), ... }`.
    fn parse_buffer_donor(&mut self) -> PResult<()> {
        self.expect(Tok::LBrace, "expects '{' to start buffer_donor")?;
        if self.eat(Tok::RBrace) {
            return Ok(());
        }
        loop {
            self.expect(Tok::LParen, "expects '(' before a buffer donor")?;
            self.parse_alias_int()?;
            self.expect(Tok::Comma, "expects ',' after the parameter number")?;
            self.parse_shape_index()?;
            self.expect(Tok::RParen, "expects ')' at the end of a buffer donor")?;
            if self.eat(Tok::Comma) {
                continue;
            }
            self.expect(
                Tok::RBrace,
                "Expects '}' at the end of buffer donor description",
            )?;
            return Ok(());
        }
    }

    /// A non-negative integer (parameter number or index).
    fn parse_alias_int(&mut self) -> PResult<i64> {
        let t = self.lex.peek();
        if t.kind != Tok::Int {
            return Err(self.error_token(t, "expects integer"));
        }
        let v = self.parse_i64()?;
        if v < 0 {
            return Err(self.error_at(t.start, "expects a non-negative integer"));
        }
        Ok(v)
    }

    /// `{i, j, ...}` (possibly empty).
    fn parse_shape_index(&mut self) -> PResult<()> {
        self.expect(Tok::LBrace, "Expects '{' at the start of ShapeIndex")?;
        if self.eat(Tok::RBrace) {
            return Ok(());
        }
        loop {
            self.parse_alias_int()?;
            if self.eat(Tok::Comma) {
                continue;
            }
            self.expect(Tok::RBrace, "Expects '}' at the end of ShapeIndex")?;
            return Ok(());
        }
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
        let mut param_shapes = None;
        if self.lex.peek().kind == Tok::LParen {
            let mut shapes = Vec::new();
            self.parse_list(Tok::LParen, Tok::RParen, |p| {
                p.parse_name("a parameter name")?;
                p.expect(Tok::Colon, "expected ':' after the parameter name")?;
                shapes.push(p.parse_shape()?);
                Ok(())
            })?;
            param_shapes = Some(shapes);
            self.expect(Tok::Arrow, "expected '->' before the result shape")?;
            let at = self.lex.offset();
            signature = Some((self.parse_shape()?, at));
        }
        self.style.signatures.get_or_insert(signature.is_some());
        let at = self.lex.offset();
        let Body {
            mut comp,
            offsets,
            steps,
        } = self.parse_body(name, at, true)?;
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
        self.adopt_steps(id, steps);
        if let Some(shapes) = param_shapes {
            self.source_map.set_signature(id, shapes);
        }
        self.comp_names.insert(name, id);
        Ok(id)
    }

    /// '{' instruction+ '}' as a computation named `name`; `at` locates errors about the
    /// whole body.
    pub(crate) fn parse_body(&mut self, name: &str, at: usize, top_level: bool) -> PResult<Body> {
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
            steps: FxMap::default(),
            step_names: Vec::new(),
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
        Ok(Body {
            comp,
            offsets: scope.offsets,
            steps: scope.step_names,
        })
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

    /// Records the get-tuple-elements made for `%p#N` operands in computation `id`, to be
    /// named once the whole module is read.
    pub(crate) fn adopt_steps(&mut self, id: CompId, steps: Vec<(InstrId, String)>) {
        self.tuple_elements
            .extend(steps.into_iter().map(|(i, name)| (id, i, name)));
    }

    /// Names the get-tuple-elements made for `%p#N` operands: the path with `#` replaced
    /// by `_` (`p_1_0`), or, when an instruction or computation of the module already has
    /// that name (written anywhere in the text, earlier or later), a fresh one from it
    /// (`p_1_0.1`, as [`NameGen`] gives). Until now their names held the path itself
    /// (`p#1#0`), which no written name can be.
    fn name_tuple_elements(&mut self, module: &mut Module) {
        if self.tuple_elements.is_empty() {
            return;
        }
        let mut names = NameGen::new(module);
        for (c, i, want) in std::mem::take(&mut self.tuple_elements) {
            let name = names.keep_or_fresh(&want);
            if let Some(instr) = module
                .computations
                .get_mut(c.index())
                .and_then(|c| c.instrs.get_mut(i.index()))
            {
                instr.name = name;
            }
        }
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
        self.uniquify_generated_instruction_names(&generated);
    }

    /// Makes instruction names unique in the module, as XLA's parser does when it adds each
    /// computation to the module: a name that another computation already uses is renamed
    /// (`p0` becomes `p0.1`). The entry computation keeps its names (the ones users name
    /// on the command line); the other computations are taken in text order. Names within
    /// one computation are already distinct (a repeat there is an error).
    fn uniquify_instruction_names(&mut self, entry: CompId) {
        let total: usize = self.comps.iter().map(|c| c.instrs.len()).sum();
        // Nearly always nothing clashes: find out without copying the names.
        {
            let mut seen: super::FxMap<&str, ()> =
                super::FxMap::with_capacity_and_hasher(total, Default::default());
            let clash = self
                .comps
                .iter()
                .flat_map(|c| c.instrs.iter())
                .any(|i| seen.insert(i.name.as_str(), ()).is_some());
            if !clash {
                return;
            }
        }
        let mut taken: HashSet<String> = HashSet::with_capacity(total);
        let mut clashes = Vec::new();
        let order = std::iter::once(entry.index())
            .chain((0..self.comps.len()).filter(|&i| i != entry.index()));
        for ci in order {
            let c = &self.comps[ci];
            let mut mine = Vec::new();
            for (ii, instr) in c.instrs.iter().enumerate() {
                if taken.contains(&instr.name) {
                    clashes.push((ci, ii));
                } else {
                    mine.push(instr.name.clone());
                }
            }
            taken.extend(mine);
        }
        let mut next: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
        for (ci, ii) in clashes {
            let base = self.comps[ci].instrs[ii].name.clone();
            let n = next.entry(base.clone()).or_insert(1);
            let mut name = format!("{base}.{n}");
            while taken.contains(&name) {
                *n += 1;
                name = format!("{base}.{n}");
            }
            *n += 1;
            taken.insert(name.clone());
            self.comps[ci].instrs[ii].name = name;
        }
    }

    /// Gives the instructions of generated computations (`async_param`, `async_op`, the
    /// names inside inline computations) names unique in the module, as XLA requires.
    fn uniquify_generated_instruction_names(&mut self, generated: &HashSet<usize>) {
        if generated.is_empty() {
            return;
        }
        let mut taken: HashSet<String> = self
            .comps
            .iter()
            .enumerate()
            .filter(|(i, _)| !generated.contains(i))
            .flat_map(|(_, c)| c.instrs.iter().map(|i| i.name.clone()))
            .collect();
        let mut next: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
        for id in self.generated.clone() {
            for instr in &mut self.comps[id.index()].instrs {
                if taken.insert(instr.name.clone()) {
                    continue;
                }
                let base = instr.name.clone();
                let n = next.entry(base.clone()).or_insert(1);
                let mut name = format!("{base}.{n}");
                while taken.contains(&name) {
                    *n += 1;
                    name = format!("{base}.{n}");
                }
                *n += 1;
                taken.insert(name.clone());
                instr.name = name;
            }
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
