//! Where each parsed instruction was written: a side table from (computation,
//! instruction) to the byte offset of its line's start, and [`Parsed`] (a module with its
//! source map and parse warnings), shared by the parser that fills them and the tools that
//! report problems found after parsing (the verifier, `hloc verify`), so that neither
//! depends on the other.

use crate::ir::{CompId, InstrId};
use crate::shape::Shape;
use crate::{Module, ParseWarning};

/// A parsed module and the warnings collected while parsing it.
#[derive(Clone, Debug)]
pub struct Parsed {
    /// The module.
    pub module: Module,
    /// Warnings (unknown attributes kept verbatim, ...), in source order.
    pub warnings: Vec<ParseWarning>,
    /// Where each instruction was written.
    pub source_map: SourceMap,
}

/// Byte offsets of parsed instructions in their source text.
///
/// Instructions the parser generated (the wrapped computation of a short async form, the
/// instructions of an inline `to_apply={...}`) map to the text that produced them.
/// Modules built in code have no source map.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceMap {
    /// Per computation (by [`CompId`] index), per instruction (by [`InstrId`] index).
    offsets: Vec<Vec<usize>>,
    /// Parameter shapes of written signatures `(p: f32[4], ...)`, by computation.
    signatures: Vec<(CompId, Vec<Shape>)>,
}

impl SourceMap {
    /// Records the offsets of the next computation (its id is the number recorded so far).
    pub(crate) fn push(&mut self, offsets: Vec<usize>) {
        self.offsets.push(offsets);
    }

    /// Records the parameter shapes written in computation `comp`'s signature.
    pub(crate) fn set_signature(&mut self, comp: CompId, params: Vec<Shape>) {
        self.signatures.push((comp, params));
    }

    /// The parameter shapes written in the signatures of computations, in text order
    /// (the parser checks the result shape itself; the verifier checks these).
    pub fn signatures(&self) -> &[(CompId, Vec<Shape>)] {
        &self.signatures
    }

    /// The byte offset where instruction `instr` of computation `comp` was written.
    pub fn offset(&self, comp: CompId, instr: InstrId) -> Option<usize> {
        self.offsets.get(comp.index())?.get(instr.index()).copied()
    }

    /// Line and column (1-based, column in characters) of `instr` in `src`, the text this
    /// map was parsed from.
    pub fn line_col(&self, src: &str, comp: CompId, instr: InstrId) -> Option<(usize, usize)> {
        self.offset(comp, instr)
            .map(|o| LineIndex::new(src).line_col(src, o))
    }
}

/// Line starts of a text, for locating many offsets in `O(log n)` each.
#[derive(Clone, Debug)]
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    /// Indexes the lines of `src`.
    pub fn new(src: &str) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(
            src.bytes()
                .enumerate()
                .filter(|&(_, b)| b == b'\n')
                .map(|(i, _)| i + 1),
        );
        LineIndex { starts }
    }

    /// Line and column (1-based; column in characters) of byte `offset` of `src`.
    pub fn line_col(&self, src: &str, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(src.len());
        while !src.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&s| s <= offset);
        let start = self.starts[line - 1];
        (line, src[start..offset].chars().count() + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_columns() {
        let src = "ab\n\tcé x\n";
        let idx = LineIndex::new(src);
        assert_eq!(idx.line_col(src, 0), (1, 1));
        assert_eq!(idx.line_col(src, src.find('x').unwrap()), (2, 5));
        assert_eq!(idx.line_col(src, 1000), (3, 1));
    }
}
