//! Running a compiled module: the backend's executable ([`plan::Executable`]) does the
//! work; errors come back as the driver's.

use hlo::Literal;

use crate::{Executable, Prepared, Profile, RawOutputs, RuntimeError};

impl Executable {
    /// Converts `args` (one array per parameter of the compiled program: a tuple-shaped
    /// entry parameter's leaves, as [`Executable::flatten_arguments`] gives them) into the
    /// parameters' physical layouts once, for any number of [`Executable::run_prepared`]
    /// calls.
    pub fn prepare<'a>(&'a self, args: &'a [Literal]) -> Result<Prepared<'a>, RuntimeError> {
        if args.iter().any(|a| matches!(a, Literal::Tuple(_))) {
            return Err(RuntimeError::Internal(
                "prepare takes arrays: pass a tuple argument's leaves \
                 (Executable::flatten_arguments)"
                    .into(),
            ));
        }
        Ok(self.exe.prepare(args)?)
    }

    /// The arguments as the compiled program takes them: a tuple argument (of a
    /// tuple-shaped entry parameter) replaced by its array leaves in flattened order
    /// (borrowed unchanged when there is none).
    pub fn flatten_arguments<'a>(&self, args: &'a [Literal]) -> std::borrow::Cow<'a, [Literal]> {
        if args.iter().any(|a| matches!(a, Literal::Tuple(_))) {
            std::borrow::Cow::Owned(crate::boundary::flatten_arguments(args))
        } else {
            std::borrow::Cow::Borrowed(args)
        }
    }

    /// Runs on prepared arguments (prepared by this executable: others' are refused); the
    /// outputs stay in the backend's form until [`Executable::literals`].
    pub fn run_prepared(&self, args: &Prepared<'_>) -> Result<RawOutputs, RuntimeError> {
        if !args.made_by(self.exe.as_ref()) {
            return Err(RuntimeError::Internal(
                "arguments prepared by another executable".into(),
            ));
        }
        Ok(args.run()?)
    }

    /// The outputs of a run as literals, the root's leaves in flattened tuple order.
    pub fn literals(&self, raw: &RawOutputs) -> Result<Vec<Literal>, RuntimeError> {
        Ok(self.exe.literals(raw)?)
    }

    /// Starts (or stops) recording per-thunk times ([`Executable::take_profile`]).
    pub fn set_profiling(&self, on: bool) {
        self.exe.set_profiling(on)
    }

    /// The per-thunk times recorded since profiling started (then starts afresh).
    pub fn take_profile(&self) -> Option<Profile> {
        self.exe.take_profile()
    }

    /// Runs on `args` (one literal per entry parameter, a [`Literal::Tuple`] for a
    /// tuple-shaped one); returns the outputs, the root's leaves in flattened tuple order
    /// (nested tuples included).
    pub fn run(&self, args: &[Literal]) -> Result<Vec<Literal>, RuntimeError> {
        Ok(self.exe.run(&self.flatten_arguments(args))?)
    }
}
