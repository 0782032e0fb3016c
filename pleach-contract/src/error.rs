//! Tool errors: stable numeric codes in the 1xxx range, a recoverable flag, and model-visible text
//! kept apart from operator detail.
//!
//! `docs/error-codes.md` is the contract for the codes; [`ErrorCode`] is its Rust form.
//!
//! ```
//! use pleach_core::{ErrorCode, ToolError};
//!
//! let error = ToolError::new(ErrorCode::TimedOut, "`slow_tool` took longer than 30 s")
//!     .with_detail("deadline from the runtime's default_timeout");
//! assert_eq!(error.code().as_u16(), 1010);
//! assert!(error.is_recoverable());
//! assert!(!error.message().contains("default_timeout")); // operator detail stays out
//! ```

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The stable code of a [`ToolError`]. The number never changes once published; new codes are added
/// at the end of the range (the enum is `#[non_exhaustive]`).
///
/// ```
/// use pleach_core::ErrorCode;
///
/// assert_eq!(ErrorCode::InputInvalid.as_u16(), 1001);
/// assert_eq!(ErrorCode::from_u16(1002), Some(ErrorCode::OutputInvalid));
/// assert_eq!(ErrorCode::InputInvalid.to_string(), "1001");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// 1001: the arguments do not match the tool's input schema.
    InputInvalid,
    /// 1002: the tool's result does not match its output schema, cannot be written as JSON, or
    /// is larger than [`Limits::max_result_bytes`](https://docs.rs/pleach-core/latest/pleach_core/session/struct.Limits.html#structfield.max_result_bytes).
    OutputInvalid,
    /// 1003: no tool of that name is registered.
    UnknownTool,
    /// 1004: the tool exists but is not enabled in this session.
    ToolNotEnabled,
    /// 1005: the arguments are not valid JSON (or carry a duplicate object key).
    ArgumentsNotJson,
    /// 1006: the arguments exceed the size or nesting-depth limit.
    ArgumentsTooLarge,
    /// 1007: the arguments stream ended before its provider's end signal.
    ArgumentsIncomplete,
    /// 1008: the tool ran and returned an error.
    ToolFailed,
    /// 1009: the tool panicked.
    ToolPanicked,
    /// 1010: the tool did not finish within its timeout.
    TimedOut,
    /// 1011: the call was cancelled.
    Cancelled,
    /// 1012: a safety policy halted the call before it ran.
    SafetyHalt,
    /// 1013: the user rejected the call.
    RejectedByUser,
    /// 1014: the runtime is at capacity and did not queue the call.
    Overloaded,
    /// 1015: the model repeated a failing call too many times in one turn.
    RepeatedFailure,
    /// 1016: the call waited for the user's approval longer than the runtime's approval timeout.
    ApprovalTimedOut,
    /// 1017: the remote server the tool lives on (an MCP server) could not be reached, or its
    /// connection failed during the call; pleach reconnects, so a later try may succeed.
    RemoteUnavailable,
    /// 1018: the worker running the call died before it ended and the tool is not declared
    /// idempotent, so the call was not run again; whether it took effect is unknown.
    #[doc(alias = "OUTCOME_UNKNOWN")]
    OutcomeUnknown,
    /// 1019: a content block of the result cannot be given to the model: a medium larger than
    /// the result cap, or media for a model API that takes text only.
    ContentRefused,
    // Declared in the order the variants were added, so that each keeps its discriminant; the
    // order of codes (`Ord`) is numeric all the same (see the impls below).
    /// 1021: the tool is deferred (sent only once a search found it) and no search has loaded it
    /// yet; the message names the search tool to call first.
    #[doc(alias = "TOOL_NOT_LOADED")]
    ToolNotLoaded,
    /// 1020: the tool asked its client for something the client cannot give: elicitation or
    /// sampling from an MCP client that did not declare it, or from a host nobody answers
    /// (no event stream).
    #[doc(alias = "CAPABILITY_MISSING")]
    CapabilityMissing,
    /// 1022: the tool's question to the user (elicitation) or request to the client's model
    /// (sampling) got no answer within the runtime's approval timeout.
    #[doc(alias = "NO_ANSWER")]
    NoAnswer,
}

/// Codes order by their number.
///
/// ```
/// use pleach_core::ErrorCode;
/// assert!(ErrorCode::CapabilityMissing < ErrorCode::ToolNotLoaded);
/// assert!(ErrorCode::ToolNotLoaded < ErrorCode::NoAnswer);
/// ```
impl Ord for ErrorCode {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_u16().cmp(&other.as_u16())
    }
}

impl PartialOrd for ErrorCode {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl ErrorCode {
    /// Every code, in numeric order.
    ///
    /// ```
    /// use pleach_core::ErrorCode;
    /// let numbers: Vec<u16> = ErrorCode::ALL.iter().map(|c| c.as_u16()).collect();
    /// assert_eq!(numbers, (1001..=1022).collect::<Vec<_>>());
    /// ```
    pub const ALL: [ErrorCode; 22] = [
        ErrorCode::InputInvalid,
        ErrorCode::OutputInvalid,
        ErrorCode::UnknownTool,
        ErrorCode::ToolNotEnabled,
        ErrorCode::ArgumentsNotJson,
        ErrorCode::ArgumentsTooLarge,
        ErrorCode::ArgumentsIncomplete,
        ErrorCode::ToolFailed,
        ErrorCode::ToolPanicked,
        ErrorCode::TimedOut,
        ErrorCode::Cancelled,
        ErrorCode::SafetyHalt,
        ErrorCode::RejectedByUser,
        ErrorCode::Overloaded,
        ErrorCode::RepeatedFailure,
        ErrorCode::ApprovalTimedOut,
        ErrorCode::RemoteUnavailable,
        ErrorCode::OutcomeUnknown,
        ErrorCode::ContentRefused,
        ErrorCode::CapabilityMissing,
        ErrorCode::ToolNotLoaded,
        ErrorCode::NoAnswer,
    ];

    /// The numeric code.
    ///
    /// ```
    /// assert_eq!(pleach_core::ErrorCode::UnknownTool.as_u16(), 1003);
    /// ```
    pub const fn as_u16(self) -> u16 {
        match self {
            ErrorCode::InputInvalid => 1001,
            ErrorCode::OutputInvalid => 1002,
            ErrorCode::UnknownTool => 1003,
            ErrorCode::ToolNotEnabled => 1004,
            ErrorCode::ArgumentsNotJson => 1005,
            ErrorCode::ArgumentsTooLarge => 1006,
            ErrorCode::ArgumentsIncomplete => 1007,
            ErrorCode::ToolFailed => 1008,
            ErrorCode::ToolPanicked => 1009,
            ErrorCode::TimedOut => 1010,
            ErrorCode::Cancelled => 1011,
            ErrorCode::SafetyHalt => 1012,
            ErrorCode::RejectedByUser => 1013,
            ErrorCode::Overloaded => 1014,
            ErrorCode::RepeatedFailure => 1015,
            ErrorCode::ApprovalTimedOut => 1016,
            ErrorCode::RemoteUnavailable => 1017,
            ErrorCode::OutcomeUnknown => 1018,
            ErrorCode::ContentRefused => 1019,
            ErrorCode::CapabilityMissing => 1020,
            ErrorCode::ToolNotLoaded => 1021,
            ErrorCode::NoAnswer => 1022,
        }
    }

    /// The code for a number, if the number is one.
    ///
    /// ```
    /// use pleach_core::ErrorCode;
    /// assert_eq!(ErrorCode::from_u16(1011), Some(ErrorCode::Cancelled));
    /// assert_eq!(ErrorCode::from_u16(42), None);
    /// ```
    pub fn from_u16(code: u16) -> Option<ErrorCode> {
        ErrorCode::ALL.into_iter().find(|c| c.as_u16() == code)
    }

    /// Whether a model can fix the call by trying again with other arguments (the default
    /// `_recoverable` of errors with this code).
    ///
    /// ```
    /// use pleach_core::ErrorCode;
    /// assert!(ErrorCode::InputInvalid.default_recoverable());
    /// assert!(!ErrorCode::SafetyHalt.default_recoverable());
    /// ```
    pub const fn default_recoverable(self) -> bool {
        !matches!(
            self,
            ErrorCode::OutputInvalid
                | ErrorCode::ToolPanicked
                | ErrorCode::Cancelled
                | ErrorCode::SafetyHalt
                | ErrorCode::RepeatedFailure
                | ErrorCode::ApprovalTimedOut
                | ErrorCode::CapabilityMissing
                | ErrorCode::NoAnswer
        )
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.as_u16())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u16(self.as_u16())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let number = u16::deserialize(deserializer)?;
        ErrorCode::from_u16(number).ok_or_else(|| {
            serde::de::Error::custom(format_args!("{number} is not a pleach error code"))
        })
    }
}

/// The error of one tool call.
///
/// `message` is written for the model: which field, what was expected, what came. `detail` is for
/// operators (logs, traces) and is never serialized into what the model reads. `recoverable` (on the
/// wire `_recoverable`) tells the model whether trying again with other arguments can help.
///
/// Tools return it (or any error type: `#[tool]` converts errors into code 1008) and the runtime
/// builds it for everything that goes wrong around a tool.
///
/// ```
/// use pleach_core::{ErrorCode, ToolError};
///
/// let err = ToolError::new(ErrorCode::ToolFailed, "the corpus has no document `42`")
///     .with_detail("GET /docs/42 -> 404");
/// assert_eq!(err.code(), ErrorCode::ToolFailed);
/// assert!(err.is_recoverable());
/// let wire = serde_json::to_value(&err).unwrap();
/// assert_eq!(wire["code"], 1008);
/// assert_eq!(wire["_recoverable"], true);
/// assert!(wire.get("detail").is_none()); // operator detail never reaches the model
/// // Read back from the wire (a durable engine carries results between processes so), without
/// // the operator detail.
/// let read: ToolError = serde_json::from_value(wire).unwrap();
/// assert_eq!((read.code(), read.message(), read.detail()), (ErrorCode::ToolFailed, err.message(), None));
/// ```
#[derive(Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("[{}] {}", .0.code, .0.message)]
#[serde(transparent)]
pub struct ToolError(Box<ErrorParts>);

/// A [`ToolError`]'s fields, boxed: an error travels inside every call's `Result`, and most calls
/// carry none, so the `Result` stays as small as its success value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct ErrorParts {
    code: ErrorCode,
    message: Cow<'static, str>,
    #[serde(rename = "_recoverable")]
    recoverable: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    keyword: Option<String>,
    #[serde(skip)]
    detail: Option<String>,
}

impl fmt::Debug for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts = &self.0;
        f.debug_struct("ToolError")
            .field("code", &parts.code)
            .field("message", &parts.message)
            .field("recoverable", &parts.recoverable)
            .field("path", &parts.path)
            .field("keyword", &parts.keyword)
            .field("detail", &parts.detail)
            .finish()
    }
}

impl ToolError {
    /// An error with `code`, the model-visible `message`, and the code's default recoverability.
    ///
    /// ```
    /// use pleach_core::{ErrorCode, ToolError};
    /// let err = ToolError::new(ErrorCode::TimedOut, "the tool took longer than 30 s");
    /// assert_eq!(err.message(), "the tool took longer than 30 s");
    /// ```
    pub fn new(code: ErrorCode, message: impl Into<Cow<'static, str>>) -> Self {
        ToolError(Box::new(ErrorParts {
            code,
            message: message.into(),
            recoverable: code.default_recoverable(),
            path: None,
            keyword: None,
            detail: None,
        }))
    }

    /// A tool's own failure (code 1008), the message as the model should read it.
    ///
    /// ```
    /// let err = pleach_core::ToolError::failed("no such city");
    /// assert_eq!(err.code().as_u16(), 1008);
    /// ```
    pub fn failed(message: impl Into<Cow<'static, str>>) -> Self {
        ToolError::new(ErrorCode::ToolFailed, message)
    }

    /// Sets operator detail: kept for logs, never shown to the model.
    ///
    /// ```
    /// let err = pleach_core::ToolError::failed("lookup failed").with_detail("db timeout on shard 3");
    /// assert_eq!(err.detail(), Some("db timeout on shard 3"));
    /// ```
    #[must_use]
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.0.detail = Some(detail.into());
        self
    }

    /// Overrides the code's default recoverability.
    ///
    /// ```
    /// let err = pleach_core::ToolError::failed("account closed").with_recoverable(false);
    /// assert!(!err.is_recoverable());
    /// ```
    #[must_use]
    pub fn with_recoverable(mut self, recoverable: bool) -> Self {
        self.0.recoverable = recoverable;
        self
    }

    /// Sets the JSON pointer (into the arguments or the result) and the schema keyword at fault.
    ///
    /// ```
    /// use pleach_core::{ErrorCode, ToolError};
    /// let err = ToolError::new(ErrorCode::InputInvalid, "`limit` must be at most 50, got 80")
    ///     .with_location("/limit", "maximum");
    /// assert_eq!(err.path(), Some("/limit"));
    /// assert_eq!(err.keyword(), Some("maximum"));
    /// ```
    #[must_use]
    pub fn with_location(mut self, path: impl Into<String>, keyword: impl Into<String>) -> Self {
        self.0.path = Some(path.into());
        self.0.keyword = Some(keyword.into());
        self
    }

    /// The stable code.
    ///
    /// ```
    /// use pleach_core::{ErrorCode, ToolError};
    /// assert_eq!(ToolError::failed("no such account").code(), ErrorCode::ToolFailed);
    /// ```
    pub fn code(&self) -> ErrorCode {
        self.0.code
    }

    /// The text the model reads.
    ///
    /// ```
    /// let error = pleach_core::ToolError::failed("no such account").with_detail("row 17 missing");
    /// assert_eq!(error.message(), "no such account");
    /// ```
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// Whether a retry with other arguments can help (`_recoverable` on the wire).
    ///
    /// ```
    /// use pleach_core::{ErrorCode, ToolError};
    /// assert!(ToolError::new(ErrorCode::InputInvalid, "bad").is_recoverable());
    /// assert!(!ToolError::new(ErrorCode::Cancelled, "cancelled").is_recoverable());
    /// ```
    pub fn is_recoverable(&self) -> bool {
        self.0.recoverable
    }

    /// The JSON pointer at fault, if the error is about one place.
    ///
    /// ```
    /// use pleach_core::{ErrorCode, ToolError};
    /// let error = ToolError::new(ErrorCode::InputInvalid, "bad").with_location("/items/0", "type");
    /// assert_eq!(error.path(), Some("/items/0"));
    /// assert_eq!(ToolError::failed("no").path(), None);
    /// ```
    pub fn path(&self) -> Option<&str> {
        self.0.path.as_deref()
    }

    /// The JSON Schema keyword at fault (`type`, `maximum`, `required`, …), if any.
    ///
    /// ```
    /// use pleach_core::{ErrorCode, ToolError};
    /// let error = ToolError::new(ErrorCode::InputInvalid, "bad").with_location("", "required");
    /// assert_eq!(error.keyword(), Some("required"));
    /// ```
    pub fn keyword(&self) -> Option<&str> {
        self.0.keyword.as_deref()
    }

    /// Operator detail, never shown to the model.
    ///
    /// ```
    /// let error = pleach_core::ToolError::failed("lookup failed");
    /// assert_eq!(error.detail(), None);
    /// assert_eq!(error.with_detail("shard 3").detail(), Some("shard 3"));
    /// ```
    pub fn detail(&self) -> Option<&str> {
        self.0.detail.as_deref()
    }

    /// The result text the model reads for this failure: the message with its code.
    ///
    /// ```
    /// let err = pleach_core::ToolError::failed("no such city");
    /// assert_eq!(err.model_text(), "error 1008: no such city");
    /// ```
    pub fn model_text(&self) -> String {
        format!("error {}: {}", self.0.code, self.0.message)
    }
}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        ToolError::failed(message)
    }
}

impl From<&'static str> for ToolError {
    fn from(message: &'static str) -> Self {
        ToolError::failed(message)
    }
}

impl From<std::io::Error> for ToolError {
    fn from(err: std::io::Error) -> Self {
        ToolError::from_error(&err)
    }
}

impl From<Box<dyn std::error::Error + Send + Sync>> for ToolError {
    fn from(err: Box<dyn std::error::Error + Send + Sync>) -> Self {
        ToolError::from_error(&*err)
    }
}

impl ToolError {
    /// A tool failure (1008) from any error: its `Display` is the model's text and the chain of
    /// sources becomes the operator detail.
    ///
    /// ```
    /// let io = std::io::Error::new(std::io::ErrorKind::NotFound, "notes.txt not found");
    /// let err = pleach_core::ToolError::from_error(&io);
    /// assert_eq!(err.message(), "notes.txt not found");
    /// ```
    pub fn from_error(err: &(dyn std::error::Error + 'static)) -> Self {
        let mut chain = Vec::new();
        let mut source = err.source();
        while let Some(cause) = source {
            chain.push(cause.to_string());
            source = cause.source();
        }
        let error = ToolError::failed(err.to_string());
        if chain.is_empty() {
            error
        } else {
            error.with_detail(format!("caused by: {}", chain.join(": ")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_in_the_1xxx_range() {
        let mut seen = std::collections::BTreeSet::new();
        for code in ErrorCode::ALL {
            assert!((1000..2000).contains(&code.as_u16()));
            assert!(seen.insert(code.as_u16()), "duplicate {code}");
            assert_eq!(ErrorCode::from_u16(code.as_u16()), Some(code));
        }
    }

    #[test]
    fn detail_is_never_serialized() {
        let err = ToolError::failed("visible").with_detail("secret");
        let text = serde_json::to_string(&err).unwrap();
        assert!(!text.contains("secret"), "{text}");
        assert_eq!(
            text,
            r#"{"code":1008,"message":"visible","_recoverable":true}"#
        );
    }

    #[test]
    fn source_chain_becomes_detail() {
        #[derive(Debug, thiserror::Error)]
        #[error("outer")]
        struct Outer(#[source] std::io::Error);
        let err = ToolError::from_error(&Outer(std::io::Error::other("inner")));
        assert_eq!(err.message(), "outer");
        assert_eq!(err.detail(), Some("caused by: inner"));
    }
}
