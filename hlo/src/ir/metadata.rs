//! Op metadata (`metadata={op_type="..." op_name="..." source_file="..." source_line=N}`)
//! and the module's stack frame tables (`FileNames`, `FunctionNames`, `FileLocations`,
//! `StackFrames`).

use std::borrow::Cow;

/// One value in a metadata entry.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MetaValue {
    /// A quoted string, unescaped.
    Str(String),
    /// An integer.
    Int(i64),
    /// Anything else, verbatim (e.g. `profile_type={1,2}`).
    Raw(String),
}

/// Op metadata: `key=value` entries in the order written.
///
/// Known keys: `op_type`, `op_name`, `source_file`, `deduplicated_name`,
/// `scheduling_name` (strings); `source_line`, `source_end_line`, `source_column`,
/// `source_end_column`, `stack_frame_id` (integers). Other keys are kept verbatim.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Metadata {
    /// Entries in written order.
    pub entries: Vec<(Cow<'static, str>, MetaValue)>,
}

/// Metadata keys whose value is a quoted string.
pub(crate) const STRING_KEYS: &[&str] = &[
    "op_type",
    "op_name",
    "source_file",
    "deduplicated_name",
    "scheduling_name",
];

/// Metadata keys whose value is an integer.
pub(crate) const INT_KEYS: &[&str] = &[
    "source_line",
    "source_end_line",
    "source_column",
    "source_end_column",
    "stack_frame_id",
];

impl Metadata {
    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&MetaValue> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    fn get_str(&self, key: &str) -> Option<&str> {
        match self.get(key)? {
            MetaValue::Str(s) => Some(s),
            _ => None,
        }
    }

    fn get_int(&self, key: &str) -> Option<i64> {
        match self.get(key)? {
            MetaValue::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// `op_type`.
    pub fn op_type(&self) -> Option<&str> {
        self.get_str("op_type")
    }

    /// `op_name`.
    pub fn op_name(&self) -> Option<&str> {
        self.get_str("op_name")
    }

    /// `source_file`.
    pub fn source_file(&self) -> Option<&str> {
        self.get_str("source_file")
    }

    /// `source_line`.
    pub fn source_line(&self) -> Option<i64> {
        self.get_int("source_line")
    }

    /// `stack_frame_id` (an id in the module's [`StackFrameIndex`]).
    pub fn stack_frame_id(&self) -> Option<i64> {
        self.get_int("stack_frame_id")
    }

    /// Sets `key` to `value`, replacing an existing entry in place or appending.
    pub fn set(&mut self, key: impl Into<Cow<'static, str>>, value: MetaValue) {
        let key = key.into();
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some(e) => e.1 = value,
            None => self.entries.push((key, value)),
        }
    }
}

/// One row of a `FileLocations` or `StackFrames` table: an id and its `key=int` fields.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct TableRow {
    /// The row id (1-based in XLA's text).
    pub id: i64,
    /// Fields in written order (`file_name_id=1 function_name_id=1 line=3 ...`).
    pub fields: Vec<(String, i64)>,
}

impl TableRow {
    /// The value of field `key`.
    pub fn get(&self, key: &str) -> Option<i64> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }
}

/// The stack frame tables newer JAX dumps print before the computations; metadata refers
/// to them with `stack_frame_id=`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct StackFrameIndex {
    /// `FileNames`: id and file name.
    pub file_names: Vec<(i64, String)>,
    /// `FunctionNames`: id and function name.
    pub function_names: Vec<(i64, String)>,
    /// `FileLocations`: `file_name_id`, `function_name_id`, `line`, `end_line`, `column`,
    /// `end_column`.
    pub file_locations: Vec<TableRow>,
    /// `StackFrames`: `file_location_id`, `parent_frame_id` (0 = no parent).
    pub stack_frames: Vec<TableRow>,
}

/// A source location resolved from a stack frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceLocation<'a> {
    /// File name.
    pub file: &'a str,
    /// Function name.
    pub function: &'a str,
    /// Line, if recorded.
    pub line: Option<i64>,
    /// Column, if recorded.
    pub column: Option<i64>,
}

impl StackFrameIndex {
    fn lookup<T>(rows: &[(i64, T)], id: i64) -> Option<&T> {
        rows.iter().find(|(i, _)| *i == id).map(|(_, v)| v)
    }

    /// The innermost source location of stack frame `frame_id`.
    pub fn location(&self, frame_id: i64) -> Option<SourceLocation<'_>> {
        let frame = self.stack_frames.iter().find(|r| r.id == frame_id)?;
        let loc_id = frame.get("file_location_id")?;
        let loc = self.file_locations.iter().find(|r| r.id == loc_id)?;
        Some(SourceLocation {
            file: Self::lookup(&self.file_names, loc.get("file_name_id")?)?,
            function: Self::lookup(&self.function_names, loc.get("function_name_id")?)?,
            line: loc.get("line"),
            column: loc.get("column"),
        })
    }

    /// The frames from `frame_id` outwards (following `parent_frame_id`), at most
    /// `stack_frames.len()` of them (so a cycle cannot loop).
    pub fn call_stack(&self, frame_id: i64) -> Vec<SourceLocation<'_>> {
        let mut out = Vec::new();
        let mut id = frame_id;
        for _ in 0..self.stack_frames.len() {
            let Some(frame) = self.stack_frames.iter().find(|r| r.id == id) else {
                break;
            };
            if let Some(loc) = self.location(id) {
                out.push(loc);
            }
            match frame.get("parent_frame_id") {
                Some(p) if p != id && p != 0 => id = p,
                _ => break,
            }
        }
        out
    }
}
