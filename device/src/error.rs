//! Errors of loading a device description.

/// Why a device description could not be loaded. Every variant names the file and, where
/// there is one, the line and the field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DeviceError {
    /// No description of that name ships with hloc.
    #[error("unknown device `{name}` (known: {known})")]
    Unknown {
        /// The name asked for.
        name: String,
        /// The shipped names, comma-separated.
        known: String,
    },
    /// Text that is not TOML, or not `[section]`s of `key = value` fields.
    #[error("{file}:{line}: {message}")]
    Syntax {
        /// The description's file name.
        file: String,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A field with a value of the wrong kind or out of range.
    #[error("{file}:{line}: field `{field}`: {message}")]
    Field {
        /// The description's file name.
        file: String,
        /// 1-based line of the field.
        line: usize,
        /// `section.key`.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A required field that is not written.
    #[error("{file}: missing field `{field}`")]
    Missing {
        /// The description's file name.
        file: String,
        /// `section.key`.
        field: String,
    },
    /// A field that no description has.
    #[error("{file}:{line}: unknown field `{field}`")]
    UnknownField {
        /// The description's file name.
        file: String,
        /// 1-based line.
        line: usize,
        /// `section.key`.
        field: String,
    },
    /// Reading a description file failed.
    #[error("{file}: {message}")]
    Io {
        /// The file.
        file: String,
        /// The I/O error.
        message: String,
    },
}
