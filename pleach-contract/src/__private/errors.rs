//! A tool's error type turned into a [`ToolError`](crate::ToolError), by autoref specialization.

use std::cell::Cell;
use std::fmt::{Debug, Display};

use crate::error::ToolError;

// Error conversion, by autoref specialization on the concrete error type a tool returns:
// `(&&&&&ErrorProbe::new(e)).tool_error()` prefers `Into<ToolError>` (a `ToolError`, a user's own
// `From` impl), then `std::error::Error` (message + source chain), then `Display`, then `Debug`.

pub struct ErrorProbe<E>(Cell<Option<E>>);

impl<E> ErrorProbe<E> {
    pub fn new(error: E) -> Self {
        ErrorProbe(Cell::new(Some(error)))
    }

    fn take(&self) -> Option<E> {
        self.0.take()
    }
}

pub(super) fn lost() -> ToolError {
    ToolError::failed("the tool failed")
}

/// What a tool's error type must offer; reached only when it offers none of it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's error type: it implements neither `Into<ToolError>`, `std::error::Error`, `Display` nor `Debug`",
    label = "the tool returns `Err` of this type",
    note = "derive `Debug` on it, implement `Display` (the model reads that text), or implement `From<{Self}> for pleach_core::ToolError`"
)]
pub trait ToolErrorSource {}

impl<E: Debug> ToolErrorSource for E {}

pub trait ErrorViaInto {
    fn tool_error(&self) -> ToolError;
}

impl<E: Into<ToolError>> ErrorViaInto for &&&&ErrorProbe<E> {
    fn tool_error(&self) -> ToolError {
        self.take().map_or_else(lost, Into::into)
    }
}

pub trait ErrorViaStdError {
    fn tool_error(&self) -> ToolError;
}

impl<E: std::error::Error + 'static> ErrorViaStdError for &&&ErrorProbe<E> {
    fn tool_error(&self) -> ToolError {
        self.take().map_or_else(lost, |e| ToolError::from_error(&e))
    }
}

pub trait ErrorViaDisplay {
    fn tool_error(&self) -> ToolError;
}

impl<E: Display> ErrorViaDisplay for &&ErrorProbe<E> {
    fn tool_error(&self) -> ToolError {
        self.take()
            .map_or_else(lost, |e| ToolError::failed(e.to_string()))
    }
}

pub trait ErrorViaDebug {
    fn tool_error(&self) -> ToolError;
}

impl<E: Debug> ErrorViaDebug for &ErrorProbe<E> {
    fn tool_error(&self) -> ToolError {
        self.take()
            .map_or_else(lost, |e| ToolError::failed(format!("{e:?}")))
    }
}

pub trait ErrorViaNothing<E> {
    fn tool_error(&self) -> ToolError
    where
        E: ToolErrorSource;
}

impl<E> ErrorViaNothing<E> for ErrorProbe<E> {
    // Chosen only when every level above failed; the method's bound then reports the error with
    // `ToolErrorSource`'s message instead of "no method named `tool_error`".
    fn tool_error(&self) -> ToolError
    where
        E: ToolErrorSource,
    {
        lost()
    }
}
