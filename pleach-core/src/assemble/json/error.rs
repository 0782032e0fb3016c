//! [`IncrementalJsonError`]: why fed text is not one JSON value, and the tool error a call's
//! arguments refused with it get.

use crate::error::{ErrorCode, ToolError};
use crate::schema;

/// Why text fed to an [`IncrementalJson`](super::IncrementalJson) is not one JSON value.
///
/// ```
/// use pleach_core::assemble::{IncrementalJson, IncrementalJsonError};
///
/// let mut parser = IncrementalJson::new();
/// let err = parser.feed(r#"{"a":1,}"#).unwrap_err();
/// assert!(matches!(err, IncrementalJsonError::Syntax { offset: 7, .. }));
/// assert_eq!(err.to_string(), "trailing comma at byte 7");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IncrementalJsonError {
    /// The text breaks JSON's grammar at byte `offset` (counted from the start of the input).
    #[error("{reason} at byte {offset}")]
    Syntax {
        /// Where, in bytes from the start of the input.
        offset: usize,
        /// What was wrong there.
        reason: &'static str,
    },
    /// The bytes at `offset` are not UTF-8 (a sequence split across pieces is fine; one that is
    /// wrong, or cut off by the end of the input, is not).
    #[error("invalid UTF-8 at byte {offset}")]
    InvalidUtf8 {
        /// Where, in bytes from the start of the input.
        offset: usize,
    },
    /// The object at JSON pointer `pointer` repeats `key`.
    #[error("the object at `{pointer}` repeats the key `{key}`")]
    DuplicateKey {
        /// The object's JSON pointer (`""` for the top level).
        pointer: String,
        /// The repeated key.
        key: String,
    },
    /// Arrays and objects nest deeper than `limit`.
    #[error("arrays and objects nest deeper than {limit} levels")]
    TooDeep {
        /// The deepest nesting allowed.
        limit: usize,
    },
    /// The input ended after `offset` bytes, before the value did.
    #[error("the text ends after {offset} bytes, before the JSON value does")]
    Incomplete {
        /// How many bytes came.
        offset: usize,
    },
}

impl IncrementalJsonError {
    /// The tool error for arguments refused with this error: 1006 for nesting past the limit,
    /// 1005 for the rest (with the duplicate key's pointer, as a whole-text parse reports it).
    pub(crate) fn to_tool_error(&self) -> ToolError {
        match self {
            IncrementalJsonError::TooDeep { limit } => ToolError::new(
                ErrorCode::ArgumentsTooLarge,
                format!(
                    "the arguments nest more than {limit} levels deep, over the limit of {limit}; \
                     flatten them"
                ),
            ),
            IncrementalJsonError::DuplicateKey { pointer, key } => {
                schema::duplicate_key(pointer.clone(), key).into_tool_error()
            }
            _ => schema::not_json(self).into_tool_error(),
        }
    }
}
