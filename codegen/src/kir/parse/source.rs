//! The parser's source and state: lines with their byte offsets, errors at a byte, the
//! kernel being parsed (`Ctx`).

use std::collections::BTreeMap;

use affine::{Interval, Var, VarKind};

use crate::kir::kernel::{BufferParam, Local};
use crate::kir::types::ScalarType;
use thiserror::Error;

/// A syntax or type error in kernel IR text, at a 1-based line and column (in characters).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{line}:{column}: {message}")]
pub struct KirParseError {
    /// Line of the offending text, from 1.
    pub line: usize,
    /// Column of the offending text, from 1.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

/// Builds an error pointing at byte `pos` of `src`.
pub(super) fn error_at(src: &str, pos: usize, message: String) -> KirParseError {
    let mut pos = pos.min(src.len());
    while !src.is_char_boundary(pos) {
        pos -= 1;
    }
    let before = &src[..pos];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = src[line_start..pos].chars().count() + 1;
    KirParseError {
        line,
        column,
        message,
    }
}

/// A non-blank line, trimmed, with the byte offset of its first character in the source.
#[derive(Clone, Copy)]
pub(super) struct Line<'a> {
    pub(super) text: &'a str,
    pub(super) start: usize,
}

pub(super) fn split_lines(text: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut offset = 0;
    for raw in text.split('\n') {
        let l = raw.strip_suffix('\r').unwrap_or(raw);
        let trimmed_start = l.len() - l.trim_start().len();
        let t = l.trim();
        if !t.is_empty() {
            out.push(Line {
                text: t,
                start: offset + trimmed_start,
            });
        }
        offset += raw.len() + 1;
    }
    out
}

pub(super) type PResult<T> = Result<T, KirParseError>;

pub(super) struct Parser<'a> {
    pub(super) src: &'a str,
    pub(super) lines: Vec<Line<'a>>,
    pub(super) next: usize,
}

/// The state of one kernel being parsed.
pub(super) struct Ctx {
    pub(super) buffers: Vec<BufferParam>,
    pub(super) locals: Vec<Local>,
    pub(super) vars: BTreeMap<u32, ScalarType>,
    pub(super) dims: BTreeMap<u32, Interval>,
    pub(super) ranges: BTreeMap<u32, Interval>,
    pub(super) runtimes: BTreeMap<u32, Interval>,
}

impl Ctx {
    pub(super) fn widen(&mut self, var: Var, iv: Interval) {
        let map = match var.kind {
            VarKind::Dim => &mut self.dims,
            VarKind::Range => &mut self.ranges,
            VarKind::Runtime => &mut self.runtimes,
        };
        map.entry(var.index)
            .and_modify(|old| *old = Interval::new(old.lo.min(iv.lo), old.hi.max(iv.hi)))
            .or_insert(iv);
    }
}

pub(super) fn dense<T: Copy>(map: &BTreeMap<u32, T>, fill: T) -> Vec<T> {
    let n = map.keys().next_back().map_or(0, |&k| k as usize + 1);
    (0..n)
        .map(|i| map.get(&(i as u32)).copied().unwrap_or(fill))
        .collect()
}
