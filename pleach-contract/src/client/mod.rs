//! What a running tool asks of its client through its [`ToolContext`](crate::ToolContext): log
//! messages, progress with the tool's own numbers, questions to the user (elicitation) and
//! completions from the client's model (sampling).
//!
//! The contract knows no host: a tool's context reaches its host through [`Client`], which the
//! runtime implements for every call (each message an event of the call's stream; over MCP, the
//! client's notifications and requests). A host that cannot give what a tool asks (an MCP client
//! that declared no elicitation or sampling, a session nobody reads events from) answers with
//! error 1020 ([`ErrorCode::CapabilityMissing`]) at once,
//! never a wait.
//!
//! | file | owns |
//! | --- | --- |
//! | `mod.rs` | [`Client`], [`LogLevel`], [`LogMessage`], [`Progress`] |
//! | `elicit.rs` | [`Elicitation`], [`Elicited`]: a question, its answer, and the check that a type's schema is one MCP elicitation can ask |
//! | `sample.rs` | [`SamplingRequest`], [`SamplingMessage`], [`Sampled`]: a request for the client's model and its answer |

mod elicit;
mod sample;

pub use elicit::{Elicitation, Elicited};
pub use sample::{Role, Sampled, SamplingMessage, SamplingRequest};

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{ErrorCode, ToolError};

/// A future a [`Client`] answers a request with.
pub type ClientFuture<T> = Pin<Box<dyn Future<Output = Result<T, ToolError>> + Send + 'static>>;

/// Where a running tool's messages go and who answers its requests: the runtime implements it for
/// each call it runs (each message an event of the call's stream, nothing delivered once the call
/// has ended); a host that runs tools by hand can implement it to collect them. Only
/// [`report`](Client::report) is required: a client that cannot elicit or sample answers with
/// 1020, one that takes no logs drops them.
///
/// It was named `ProgressSink` first, and that name still works.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use pleach_core::ToolContext;
/// use pleach_core::client::{Client, LogLevel, LogMessage};
///
/// #[derive(Default)]
/// struct Collect(Mutex<Vec<LogMessage>>);
///
/// impl Client for Collect {
///     fn report(&self, _delta: serde_json::Value) -> bool { true }
///     fn log(&self, message: LogMessage) -> bool {
///         self.0.lock().unwrap().push(message);
///         true
///     }
/// }
///
/// let client = Arc::new(Collect::default());
/// let ctx = ToolContext::new("call_1").with_progress(client.clone());
/// assert!(ctx.log(LogLevel::Info, "indexing"));
/// assert_eq!(client.0.lock().unwrap()[0].data, "indexing");
/// ```
pub trait Client: Send + Sync {
    /// Delivers one `tool.delta` (any JSON); returns whether it was delivered (`false` once the
    /// call has ended).
    fn report(&self, delta: Value) -> bool;

    /// Delivers one log message; returns whether it was delivered. By default, drops it.
    fn log(&self, message: LogMessage) -> bool {
        let _ = message;
        false
    }

    /// Delivers one progress report; returns whether it was delivered. By default, as a
    /// `tool.delta` whose delta is the report's JSON.
    fn report_progress(&self, progress: Progress) -> bool {
        serde_json::to_value(progress).is_ok_and(|delta| self.report(delta))
    }

    /// Asks the user `elicitation` and waits for the answer (its content not yet checked). By
    /// default, 1020: this client cannot ask.
    fn elicit(&self, elicitation: Elicitation) -> ClientFuture<Elicited<Value>> {
        let _ = elicitation;
        Box::pin(std::future::ready(Err(missing("elicitation"))))
    }

    /// Asks the client's model for a completion of `request` and waits for it. By default, 1020:
    /// this client cannot sample.
    fn sample(&self, request: SamplingRequest) -> ClientFuture<Sampled> {
        let _ = request;
        Box::pin(std::future::ready(Err(missing("sampling"))))
    }
}

/// The 1020 error for a capability this host has no way to give.
fn missing(capability: &str) -> ToolError {
    ToolError::new(
        ErrorCode::CapabilityMissing,
        format!(
            "this tool needs its client's `{capability}`, and this host cannot provide it; the \
             tool cannot do this here"
        ),
    )
}

/// How severe a log message is: MCP's levels, which are syslog's (RFC 5424), least severe first.
///
/// ```
/// use pleach_core::client::LogLevel;
/// assert!(LogLevel::Warning > LogLevel::Info);
/// assert_eq!(LogLevel::Warning.as_str(), "warning");
/// assert_eq!(serde_json::to_value(LogLevel::Critical).unwrap(), "critical");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Detail for debugging.
    Debug,
    /// What the tool is doing.
    Info,
    /// Normal but significant.
    Notice,
    /// Something that may need attention.
    Warning,
    /// Something failed.
    Error,
    /// A component failed.
    Critical,
    /// Action is needed now.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    /// Every level, least severe first.
    ///
    /// ```
    /// use pleach_core::client::LogLevel;
    /// assert_eq!(LogLevel::ALL.first(), Some(&LogLevel::Debug));
    /// ```
    pub const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    /// The level's name as MCP writes it.
    ///
    /// ```
    /// assert_eq!(pleach_core::client::LogLevel::Emergency.as_str(), "emergency");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One log message of a running tool: MCP's `notifications/message` params.
///
/// ```
/// use pleach_core::client::{LogLevel, LogMessage};
///
/// let message = LogMessage::new(LogLevel::Info, serde_json::json!({ "rows": 3 })).logger("db");
/// assert_eq!(message.logger.as_deref(), Some("db"));
/// assert_eq!(
///     serde_json::to_value(&message).unwrap(),
///     serde_json::json!({ "level": "info", "logger": "db", "data": { "rows": 3 } })
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LogMessage {
    /// How severe it is.
    pub level: LogLevel,
    /// The name of the logger that wrote it, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// What was logged: any JSON (a string for a line of text).
    pub data: Value,
}

impl LogMessage {
    /// A message at `level` with `data` and no logger name.
    ///
    /// ```
    /// use pleach_core::client::{LogLevel, LogMessage};
    /// assert_eq!(LogMessage::new(LogLevel::Debug, "x".into()).logger, None);
    /// ```
    pub fn new(level: LogLevel, data: Value) -> LogMessage {
        LogMessage {
            level,
            logger: None,
            data,
        }
    }

    /// The same message, from the logger named `name`.
    ///
    /// ```
    /// use pleach_core::client::{LogLevel, LogMessage};
    /// let message = LogMessage::new(LogLevel::Info, "x".into()).logger("indexer");
    /// assert_eq!(message.logger.as_deref(), Some("indexer"));
    /// ```
    #[must_use]
    pub fn logger(mut self, name: impl Into<String>) -> LogMessage {
        self.logger = Some(name.into());
        self
    }
}

/// How far a running tool has got, in its own numbers: MCP's `notifications/progress` params
/// (`progress` only grows; `total` when the tool knows it).
///
/// ```
/// use pleach_core::client::Progress;
///
/// let progress = Progress::new(3.0).total(10.0).message("3 of 10 files");
/// assert_eq!(
///     serde_json::to_value(&progress).unwrap(),
///     serde_json::json!({ "progress": 3.0, "total": 10.0, "message": "3 of 10 files" })
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Progress {
    /// The progress so far; it should grow with every report, even when the total is unknown.
    pub progress: f64,
    /// The progress at which the tool is done, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// What the tool is doing, for a person to read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Progress {
    /// A report of `progress`, with no total and no message.
    ///
    /// ```
    /// let progress = pleach_core::client::Progress::new(1.0);
    /// assert_eq!((progress.total, progress.message), (None, None));
    /// ```
    pub fn new(progress: f64) -> Progress {
        Progress {
            progress,
            total: None,
            message: None,
        }
    }

    /// The same report, with `total` the progress at which the tool is done.
    ///
    /// ```
    /// assert_eq!(pleach_core::client::Progress::new(1.0).total(4.0).total, Some(4.0));
    /// ```
    #[must_use]
    pub fn total(mut self, total: f64) -> Progress {
        self.total = Some(total);
        self
    }

    /// The same report, with `message` saying what the tool is doing.
    ///
    /// ```
    /// let progress = pleach_core::client::Progress::new(1.0).message("reading");
    /// assert_eq!(progress.message.as_deref(), Some("reading"));
    /// ```
    #[must_use]
    pub fn message(mut self, message: impl Into<String>) -> Progress {
        self.message = Some(message.into());
        self
    }
}
