//! Errors of compiling and running a program on the CPU: the backends' one error type
//! ([`plan::BackendError`]), named here as the CPU backend's.

pub use plan::BackendError;
