//! [`StreamError`]: what a [`StreamAssembler`](super::StreamAssembler) refuses, a call's own
//! failure or input it cannot tie to a call.

use crate::error::ToolError;

/// What [`StreamAssembler`](super::StreamAssembler) refuses. Errors about a call (`CallFailed`)
/// fail that call and no other; the rest are about keys the assembler cannot tie to a call it can
/// run.
///
/// ```
/// use pleach_core::assemble::{StreamAssembler, StreamError};
///
/// let mut assembler = StreamAssembler::new();
/// let err = assembler.push("7", "{").unwrap_err();
/// assert_eq!(err, StreamError::UnknownKey { key: "7".into() });
/// assert_eq!(err.to_string(), "no tool call was begun under the key `7`");
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StreamError {
    /// A fragment or end signal for a key no call was begun under; nothing else is affected.
    #[error("no tool call was begun under the key `{key}`")]
    UnknownKey {
        /// The key.
        key: String,
    },
    /// A call begun with an id another call of the response already has: it is refused (no
    /// events, left out of [`StreamAssembler::finish`](super::StreamAssembler::finish)); the
    /// first call goes on. Its fragments are dropped and its end signal returns this error again.
    #[error("the tool call id `{tool_call_id}` (key `{key}`) was already used by another call")]
    DuplicateCallId {
        /// The refused call's key.
        key: String,
        /// The id seen twice.
        tool_call_id: String,
    },
    /// A call begun under a key that already names another call (another id or name): it is
    /// refused; the call under the key goes on.
    #[error("the key `{key}` already names tool call `{tool_call_id}`")]
    KeyInUse {
        /// The key.
        key: String,
        /// The id of the call the key names.
        tool_call_id: String,
    },
    /// A fragment for a call that already ended: its arguments are final, the fragment is
    /// dropped.
    #[error("tool call `{tool_call_id}` (key `{key}`) already ended; its arguments are final")]
    Ended {
        /// The key.
        key: String,
        /// The call's id.
        tool_call_id: String,
    },
    /// The call failed and will not run: `error` is what its result will say. Later fragments
    /// for it are dropped without error; its end signal returns this error again.
    #[error("tool call `{tool_call_id}` (key `{key}`) failed: {error}")]
    CallFailed {
        /// The key.
        key: String,
        /// The call's id.
        tool_call_id: String,
        /// Why it failed.
        error: Box<ToolError>,
    },
}
