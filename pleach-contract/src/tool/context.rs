//! [`ToolContext`]: what a tool receives besides its input. It holds no runtime type: progress
//! goes to a [`ProgressSink`] the runtime implements, so the contract compiles alone.

use std::fmt;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::client::{
    Client, Elicitation, Elicited, LogLevel, LogMessage, Progress, Sampled, SamplingRequest,
};
use crate::error::ToolError;
use crate::extensions::{Extensions, Scope, SessionState};

/// The former name of [`Client`]: where a call's progress reports (and, since, its logs and
/// requests) go.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use pleach_core::{ProgressSink, ToolContext};
///
/// #[derive(Default)]
/// struct Collect(Mutex<Vec<serde_json::Value>>);
///
/// impl ProgressSink for Collect {
///     fn report(&self, delta: serde_json::Value) -> bool {
///         self.0.lock().unwrap().push(delta);
///         true
///     }
/// }
///
/// let sink = Arc::new(Collect::default());
/// let ctx = ToolContext::new("call_1").with_progress(sink.clone());
/// assert!(ctx.progress(serde_json::json!({ "percent": 50 })));
/// assert_eq!(sink.0.lock().unwrap().len(), 1);
/// ```
pub use crate::client::Client as ProgressSink;

/// What a tool receives besides its input. Intentionally minimal, so the contract stays portable
/// across hosts.
///
/// - `tool_call_id` correlates audit and event-log rows with the call;
/// - `signal` is the per-turn cancellation: propagate it into every request and child process.
///   A tool that ignores it keeps burning resources after the user hits stop.
///
/// ```
/// use pleach_core::ToolContext;
///
/// let ctx = ToolContext::new("call_1");
/// assert_eq!(ctx.tool_call_id, "call_1");
/// assert!(!ctx.signal.is_cancelled());
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct ToolContext {
    /// The id of the call, as the model (or the host) issued it.
    pub tool_call_id: String,
    /// Fires when the turn is cancelled or the call times out.
    pub signal: CancellationToken,
    progress: Option<Arc<dyn Client>>,
    scope: Option<Arc<Scope>>,
    /// The logger name [`ToolContext::log`] writes under, if any.
    logger: Option<Arc<str>>,
}

impl ToolContext {
    /// A context with a fresh, un-cancelled signal.
    ///
    /// ```
    /// let ctx = pleach_core::ToolContext::new("call_7");
    /// ctx.signal.cancel();
    /// assert!(ctx.signal.is_cancelled());
    /// ```
    pub fn new(tool_call_id: impl Into<String>) -> Self {
        ToolContext::with_signal(tool_call_id, CancellationToken::new())
    }

    /// A context whose signal is `signal` (typically a child token of the turn's).
    ///
    /// ```
    /// use tokio_util::sync::CancellationToken;
    /// let turn = CancellationToken::new();
    /// let ctx = pleach_core::ToolContext::with_signal("call_1", turn.child_token());
    /// turn.cancel();
    /// assert!(ctx.signal.is_cancelled());
    /// ```
    pub fn with_signal(tool_call_id: impl Into<String>, signal: CancellationToken) -> Self {
        ToolContext {
            tool_call_id: tool_call_id.into(),
            signal,
            progress: None,
            scope: None,
            logger: None,
        }
    }

    /// The same context with `extensions` and `state` in place of the ones a session would give:
    /// for calling a tool by hand (in a test, say) with the configuration and state it reads.
    ///
    /// ```
    /// use pleach_core::ToolContext;
    /// use pleach_core::extensions::{Extensions, SessionState};
    ///
    /// let state = SessionState::new();
    /// let ctx = ToolContext::new("c1").with_scope(Extensions::new().with(42_u32), state.clone());
    /// assert_eq!(ctx.get::<u32>(), Some(&42));
    /// *ctx.session_state::<std::sync::Mutex<u8>>().unwrap().lock().unwrap() = 7;
    /// assert_eq!(*state.get::<std::sync::Mutex<u8>>().unwrap().lock().unwrap(), 7);
    /// ```
    #[must_use]
    pub fn with_scope(mut self, extensions: Extensions, state: SessionState) -> Self {
        self.scope = Some(Arc::new(Scope { extensions, state }));
        self
    }

    /// The runtime's value of type `T` (set with
    /// [`RuntimeBuilder::provide`](https://docs.rs/pleach-core/latest/pleach_core/session/struct.RuntimeBuilder.html#method.provide)), if there is one: how a tool
    /// reads its configuration (a root folder, an allowlist, a client).
    ///
    /// ```
    /// use pleach_core::{ToolContext, extensions::{Extensions, SessionState}};
    ///
    /// struct MaxRows(usize);
    /// let ctx = ToolContext::new("c1");
    /// assert!(ctx.get::<MaxRows>().is_none()); // outside a session: nothing provided
    /// let ctx = ctx.with_scope(Extensions::new().with(MaxRows(50)), SessionState::new());
    /// assert_eq!(ctx.get::<MaxRows>().map(|m| m.0), Some(50));
    /// ```
    pub fn get<T: std::any::Any + Send + Sync>(&self) -> Option<&T> {
        self.scope.as_ref()?.extensions.get::<T>()
    }

    /// The session's `T`, created with `T::default()` on first use and shared by every later
    /// call of the same session; `None` for a context made outside a session (and not given a
    /// scope with [`ToolContext::with_scope`]). See [`SessionState`](crate::extensions::SessionState).
    ///
    /// ```
    /// use pleach_core::ToolContext;
    /// assert!(ToolContext::new("c1").session_state::<u32>().is_none());
    /// ```
    pub fn session_state<T: std::any::Any + Send + Sync + Default>(&self) -> Option<Arc<T>> {
        Some(self.scope.as_ref()?.state.get_or_default::<T>())
    }

    /// A context for code that asked for one where none was provided (it never happens for a
    /// definition that declares it takes one; this keeps that path total).
    pub(crate) fn detached() -> Self {
        ToolContext::new("")
    }

    /// The same context with its progress reports going to `sink` (a session does this for every
    /// call whose tool takes a context; by hand, to collect a tool's reports).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use pleach_core::{ProgressSink, ToolContext};
    ///
    /// struct Closed;
    /// impl ProgressSink for Closed {
    ///     fn report(&self, _: serde_json::Value) -> bool { false }
    /// }
    /// let ctx = ToolContext::new("c1").with_progress(Arc::new(Closed));
    /// assert!(!ctx.progress("the call has ended"));
    /// ```
    #[must_use]
    pub fn with_progress(mut self, sink: Arc<dyn Client>) -> Self {
        self.progress = Some(sink);
        self
    }

    /// A session's context for one call: its id, signal, progress sink and the session's scope,
    /// shared (no allocation per call).
    #[inline]
    #[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
    pub fn for_call(
        tool_call_id: String,
        signal: CancellationToken,
        progress: Arc<dyn Client>,
        scope: Arc<Scope>,
    ) -> Self {
        ToolContext {
            tool_call_id,
            signal,
            progress: Some(progress),
            scope: Some(scope),
            logger: None,
        }
    }

    /// Streams a fragment: a `tool.delta` event with `delta` as its payload, on the stream of the
    /// turn running this call (over MCP, a progress notification counting the fragments, the
    /// JSON as its message; [`report_progress`](ToolContext::report_progress) sends the tool's own
    /// numbers). Returns whether it was delivered: `false` outside a session, once the call has
    /// ended (nothing follows a call's terminal event), or when `delta` cannot be written as JSON.
    ///
    /// ```
    /// use pleach_core::{tool, ToolContext};
    ///
    /// /// Indexes the corpus.
    /// #[tool]
    /// async fn reindex(ctx: ToolContext) -> u32 {
    ///     for done in [25, 50, 75] {
    ///         ctx.progress(serde_json::json!({ "percent": done }));
    ///     }
    ///     100
    /// }
    /// # assert!(!ToolContext::new("c1").progress("outside a session: not delivered"));
    /// ```
    pub fn progress(&self, delta: impl Serialize) -> bool {
        match (&self.progress, serde_json::to_value(delta)) {
            (Some(sink), Ok(delta)) => sink.report(delta),
            _ => false,
        }
    }

    /// The same context, its [`log`](ToolContext::log) messages written under the logger name
    /// `name` (MCP's `logger`).
    ///
    /// ```
    /// use pleach_core::{tool, ToolContext};
    /// use pleach_core::client::LogLevel;
    ///
    /// /// Rebuilds the index.
    /// #[tool]
    /// async fn rebuild(ctx: ToolContext) -> u32 {
    ///     let log = ctx.with_logger("indexer");
    ///     log.log(LogLevel::Info, "started");
    ///     7
    /// }
    /// # assert!(!ToolContext::new("c1").with_logger("x").log(LogLevel::Info, "not delivered"));
    /// ```
    #[must_use]
    pub fn with_logger(mut self, name: impl Into<String>) -> Self {
        self.logger = Some(Arc::from(name.into()));
        self
    }

    /// Logs `data` (a line of text, or any JSON) at `level`: in a session, a `tracing` event
    /// (target `pleach::tool::log`) and a `tool.log` event on the turn's stream; over MCP, a
    /// `notifications/message` when the client's `logging/setLevel` lets `level` through. Returns
    /// whether it was delivered (`false` outside a session, once the call has ended, or when
    /// `data` cannot be written as JSON).
    ///
    /// ```
    /// use pleach_core::{tool, ToolContext};
    /// use pleach_core::client::LogLevel;
    ///
    /// /// Copies the table.
    /// #[tool]
    /// async fn copy_table(ctx: ToolContext) -> u32 {
    ///     ctx.log(LogLevel::Warning, serde_json::json!({ "skipped": 2 }));
    ///     40
    /// }
    /// # assert!(!ToolContext::new("c1").log(LogLevel::Info, "outside a session"));
    /// ```
    #[doc(alias = "sendLoggingMessage")]
    pub fn log(&self, level: LogLevel, data: impl Serialize) -> bool {
        let (Some(client), Ok(data)) = (&self.progress, serde_json::to_value(data)) else {
            return false;
        };
        let mut message = LogMessage::new(level, data);
        message.logger = self.logger.as_deref().map(str::to_owned);
        client.log(message)
    }

    /// Reports how far the tool has got, in its own numbers: a `tool.progress` event on the
    /// turn's stream; over MCP, a `notifications/progress` with the client's `progressToken`
    /// (when the request carries one). Returns whether it was delivered.
    ///
    /// ```
    /// use pleach_core::{tool, ToolContext};
    /// use pleach_core::client::Progress;
    ///
    /// /// Imports the files.
    /// #[tool]
    /// async fn import(ctx: ToolContext, files: Vec<String>) -> usize {
    ///     let total = files.len() as f64;
    ///     for (done, file) in files.iter().enumerate() {
    ///         ctx.report_progress(Progress::new(done as f64 + 1.0).total(total).message(file.clone()));
    ///     }
    ///     files.len()
    /// }
    /// # assert!(!ToolContext::new("c1").report_progress(Progress::new(1.0)));
    /// ```
    #[doc(alias = "sendProgress")]
    pub fn report_progress(&self, progress: Progress) -> bool {
        self.progress
            .as_ref()
            .is_some_and(|client| client.report_progress(progress))
    }

    /// Asks the user `message` with a form made from `T`'s schema (MCP elicitation) and waits
    /// for the answer: [`Elicited::Accept`] with the content checked against the form and read as
    /// a `T`, or [`Elicited::Decline`] / [`Elicited::Cancel`]. In a session the host answers an
    /// `elicitation.requested` event, within the runtime's approval timeout.
    ///
    /// An MCP 2026-07-28 client takes no requests during a call: the question ends the call, and
    /// the client's retry runs the tool again from its start, this `elicit` then returning the
    /// answer. What the tool does before a question runs again: ask first, act after
    /// (`docs/mcp.md`, "Tools that talk to the client").
    ///
    /// # Errors
    ///
    /// - `T` is not a flat object of primitive properties (see [`Elicitation::new`]), or the
    ///   accepted content does not fit it: 1008;
    /// - the client cannot elicit (an MCP client that declared no elicitation, a session nobody
    ///   reads events from, a context outside a session): 1020;
    /// - nobody answered within the approval timeout: 1022; the call was cancelled: 1011.
    ///
    /// ```
    /// use pleach_core::{tool, ToolContext, ToolError};
    /// use pleach_core::client::Elicited;
    ///
    /// #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    /// struct Confirm {
    ///     /// How many copies.
    ///     copies: u32,
    /// }
    ///
    /// /// Prints the report.
    /// #[tool]
    /// async fn print_report(ctx: ToolContext) -> Result<String, ToolError> {
    ///     Ok(match ctx.elicit::<Confirm>("How many copies?").await? {
    ///         Elicited::Accept(confirm) => format!("printing {}", confirm.copies),
    ///         Elicited::Decline | Elicited::Cancel => "not printed".to_owned(),
    ///     })
    /// }
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let refused = ToolContext::new("c1").elicit::<Confirm>("outside a session").await.unwrap_err();
    /// assert_eq!(refused.code().as_u16(), 1020);
    /// # }
    /// ```
    #[doc(alias = "elicitInput")]
    pub async fn elicit<T: JsonSchema + DeserializeOwned>(
        &self,
        message: impl Into<String>,
    ) -> Result<Elicited<T>, ToolError> {
        let elicitation = Elicitation::new::<T>(message)?;
        let answer = self.ask(elicitation.clone()).await?;
        Ok(match answer {
            Elicited::Accept(content) => Elicited::Accept(elicitation.read(content)?),
            Elicited::Decline => Elicited::Decline,
            Elicited::Cancel => Elicited::Cancel,
        })
    }

    /// Asks the user a question whose form is already built ([`Elicitation::with_schema`]: for
    /// instance another MCP server's question, passed on) and waits for the answer, its content
    /// checked against the form but left as JSON. Otherwise as [`elicit`](ToolContext::elicit),
    /// with the same errors.
    ///
    /// ```
    /// use pleach_core::ToolContext;
    /// use pleach_core::client::Elicitation;
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let form = serde_json::json!({ "type": "object", "properties": { "ok": { "type": "boolean" } } });
    /// let question = Elicitation::with_schema("Go on?", form).unwrap();
    /// let refused = ToolContext::new("c1").elicit_form(question).await.unwrap_err();
    /// assert_eq!(refused.code().as_u16(), 1020);
    /// # }
    /// ```
    #[doc(alias = "elicitation/create")]
    pub async fn elicit_form(
        &self,
        elicitation: Elicitation,
    ) -> Result<Elicited<serde_json::Value>, ToolError> {
        Ok(match self.ask(elicitation.clone()).await? {
            Elicited::Accept(content) => Elicited::Accept(elicitation.read(content)?),
            Elicited::Decline => Elicited::Decline,
            Elicited::Cancel => Elicited::Cancel,
        })
    }

    /// `elicitation` put to this context's client, its answer unchecked.
    async fn ask(
        &self,
        elicitation: Elicitation,
    ) -> Result<Elicited<serde_json::Value>, ToolError> {
        match &self.progress {
            Some(client) => client.elicit(elicitation).await,
            None => crate::client::Client::elicit(&Detached, elicitation).await,
        }
    }

    /// Asks the client's model to answer `request` (MCP `sampling/createMessage`) and waits for
    /// its answer. In a session the host answers a `sampling.requested` event, within the
    /// runtime's approval timeout. For an MCP 2026-07-28 client the tool runs again with the
    /// answer, as for [`elicit`](ToolContext::elicit).
    ///
    /// # Errors
    ///
    /// The client cannot sample (an MCP client that declared no sampling, a session nobody reads
    /// events from, a context outside a session): 1020; it refused or failed: 1008; nobody
    /// answered in time: 1022; the call was cancelled: 1011.
    ///
    /// ```
    /// use pleach_core::{tool, ToolContext, ToolError};
    /// use pleach_core::client::SamplingRequest;
    ///
    /// /// Names the file's language.
    /// #[tool]
    /// async fn language_of(ctx: ToolContext, text: String) -> Result<String, ToolError> {
    ///     let request = SamplingRequest::new(format!("Which language is this? {text}")).max_tokens(10);
    ///     let answer = ctx.sample(request).await?;
    ///     Ok(answer.text().unwrap_or("unknown").to_owned())
    /// }
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let refused = ToolContext::new("c1").sample(SamplingRequest::new("hi")).await.unwrap_err();
    /// assert_eq!(refused.code().as_u16(), 1020);
    /// # }
    /// ```
    #[doc(alias = "createMessage")]
    pub async fn sample(&self, request: SamplingRequest) -> Result<Sampled, ToolError> {
        match &self.progress {
            Some(client) => client.sample(request).await,
            None => crate::client::Client::sample(&Detached, request).await,
        }
    }
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("tool_call_id", &self.tool_call_id)
            .field("signal", &self.signal)
            .field("reports_progress", &self.progress.is_some())
            .field("logger", &self.logger)
            .field("scope", &self.scope)
            .finish()
    }
}

/// The client of a context outside a session: it takes nothing and answers every request with
/// 1020.
struct Detached;

impl Client for Detached {
    fn report(&self, _: serde_json::Value) -> bool {
        false
    }
}
