//! Sessions: a [`Runtime`](crate::Runtime) makes them
//! ([`Runtime::create_session`](crate::Runtime::create_session), with the TypeScript spec's
//! `{ tools: { enabled: [...] } }`); a session runs a turn's calls through the pipeline (find →
//! limits → parse → validate → execute with a [`ToolContext`](crate::ToolContext) → validate the
//! output), streams their events, and writes results back into the conversation in the model's
//! call order.
//!
//! The guarantees (ARCHITECTURE.md, "Runtime guarantees") and the tests that prove them are listed
//! in `docs/events.md`.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use pleach_core::{define_tool, Runtime, SessionOptions, ToolCall, ToolError, ToolRegistryBuilder};
//!
//! let echo = define_tool("echo", "Returns its arguments.")
//!     .execute_json(|args, _| async move { Ok::<_, ToolError>(args) })
//!     .unwrap();
//! let runtime = Runtime::builder()
//!     .registry(ToolRegistryBuilder::new().register(echo).build().unwrap())
//!     .build()
//!     .unwrap();
//! let session = runtime.create_session(SessionOptions::enabled(["echo"])).unwrap();
//! let mut turn = session.run_turn(vec![
//!     ToolCall::new("c1", "echo", r#"{"x":1}"#),
//!     ToolCall::new("c2", "nope", "{}"), // 1003: unknown tool, and the turn goes on
//! ]);
//! while let Some(event) = turn.events().recv().await {
//!     println!("{}", event.to_json());
//! }
//! let results = turn.finish().await;
//! assert!(results[0].outcome.is_ok());
//! assert_eq!(results[1].outcome.as_ref().unwrap_err().code().as_u16(), 1003);
//! assert_eq!(session.conversation().len(), 3); // the assistant message and two results
//! # }
//! ```

mod call_events;
#[cfg(feature = "otel")]
pub(crate) mod metrics;
mod persisted;
pub(crate) mod pipeline;
mod screening;
pub(crate) mod shared;
pub(crate) mod suggestion;
pub(crate) mod telemetry;

pub(crate) use call_events::terminal_event;
pub use persisted::RestoreError;

use self::shared::{Limits, RuntimeInner};

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::batch::{BatchingStrategy, Lane, Step};
use crate::call::ToolCall;
use crate::conversation::Message;
use crate::error::{ErrorCode, ToolError};
use crate::event::{EventSender, EventStream, ToolEvent};
use crate::tool::UnifiedToolDefinition;

/// The TypeScript spec's session options: `{ tools: { enabled: [...] } }`.
///
/// ```
/// use pleach_core::SessionOptions;
/// let from_json: SessionOptions =
///     serde_json::from_str(r#"{ "tools": { "enabled": ["search_corpus", "calculator"] } }"#).unwrap();
/// assert_eq!(from_json, SessionOptions::enabled(["search_corpus", "calculator"]));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
pub struct SessionOptions {
    /// Which tools the session may call.
    #[serde(default)]
    pub tools: ToolsOptions,
}

/// The tools part of [`SessionOptions`].
///
/// ```
/// let options: pleach_core::SessionOptions =
///     serde_json::from_str(r#"{ "tools": { "enabled": ["math", "datetime"] } }"#).unwrap();
/// assert_eq!(options.tools.enabled, ["math", "datetime"]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
pub struct ToolsOptions {
    /// Tool names; `"*"` enables every tool of the runtime.
    #[serde(default)]
    pub enabled: Vec<String>,
}

impl SessionOptions {
    /// Options enabling the tools named.
    ///
    /// ```
    /// let options = pleach_core::SessionOptions::enabled(["math", "datetime"]);
    /// assert_eq!(options.tools.enabled, ["math", "datetime"]);
    /// ```
    pub fn enabled<S: Into<String>>(names: impl IntoIterator<Item = S>) -> Self {
        SessionOptions {
            tools: ToolsOptions {
                enabled: names.into_iter().map(Into::into).collect(),
            },
        }
    }

    /// Options enabling every tool of the runtime.
    ///
    /// ```
    /// assert_eq!(pleach_core::SessionOptions::all().tools.enabled, ["*"]);
    /// ```
    pub fn all() -> Self {
        SessionOptions::enabled(["*"])
    }
}

/// Why a session could not be created.
///
/// ```
/// use pleach_core::{Runtime, SessionError, SessionOptions, ToolRegistryBuilder};
///
/// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
/// let err = runtime.create_session(SessionOptions::enabled(["search"])).unwrap_err();
/// assert!(matches!(err, SessionError::UnknownTools(ref names) if names.len() == 1));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// Enabled names that are not registered, each with a suggestion when one is close.
    #[error("unknown tools: {}", .0.join(", "))]
    UnknownTools(Vec<String>),
}

#[derive(Debug)]
pub(crate) struct SessionTool {
    pub(crate) tool: UnifiedToolDefinition,
    pub(crate) timeout: Duration,
    pub(crate) strategy: BatchingStrategy,
    pub(crate) max_concurrency: Option<usize>,
}

#[derive(Debug, Default)]
struct SessionLog {
    conversation: Vec<Message>,
    /// Recoverable failures this user turn, by call fingerprint (name + canonical arguments).
    failures: HashMap<String, u32>,
}

#[derive(Debug)]
struct SessionInner {
    runtime: Arc<RuntimeInner>,
    /// Sorted by name.
    tools: Vec<SessionTool>,
    log: Mutex<SessionLog>,
    /// Whether `state.failures` may be non-empty: lets the common case skip the lock.
    any_failures: std::sync::atomic::AtomicBool,
    /// Fires when the session is dropped: every running turn is cancelled.
    signal: CancellationToken,
    /// The runtime's extensions and this session's state, handed to each call's context.
    scope: Arc<crate::extensions::Scope>,
    /// What the turn has seen, for fabrication detectors (kept only when one is registered).
    provenance: Mutex<crate::safety::Provenance>,
    /// Interrupts waiting for the host's decision.
    approvals: Mutex<screening::Approvals>,
    /// Whether turns write their calls and results into the conversation (not for a server
    /// whose client keeps the conversation: see [`Session::without_conversation`]).
    keeps_conversation: bool,
    /// Whether this session's host can answer an approval interrupt (not a server whose client
    /// has no way to give one: see [`Session::set_takes_approvals`]).
    takes_approvals: std::sync::atomic::AtomicBool,
}

/// A conversation with a set of enabled tools. Runs turns of tool calls and keeps the
/// conversation they write back into. Dropping the session cancels its running turns.
///
/// ```rust,standalone_crate
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use pleach_core::{tool, Message, Runtime, SessionOptions, ToolCall};
///
/// /// Adds two integers.
/// #[tool]
/// async fn add(a: i64, b: i64) -> i64 { a + b }
///
/// let session = Runtime::builder().build().unwrap().create_session(SessionOptions::enabled(["add"])).unwrap();
/// session.push_user_message("what is 1 + 2?");
/// session.run_turn(vec![ToolCall::new("c1", "add", r#"{"a":1,"b":2}"#)]).finish().await;
/// let conversation = session.conversation();
/// assert!(matches!(&conversation[2], Message::Tool { content, .. } if content == "3"));
/// # }
/// ```
#[derive(Debug)]
pub struct Session {
    inner: Arc<SessionInner>,
}

impl Drop for Session {
    fn drop(&mut self) {
        self.inner.signal.cancel();
    }
}

impl Session {
    /// A session of `runtime` with `tools` (sorted by name, each once): what
    /// [`Runtime::create_session`](crate::Runtime::create_session) makes.
    pub(crate) fn new(runtime: Arc<RuntimeInner>, tools: Vec<SessionTool>) -> Session {
        let extensions = runtime.extensions.clone();
        Session {
            inner: Arc::new(SessionInner {
                runtime,
                tools,
                log: Mutex::new(SessionLog::default()),
                any_failures: std::sync::atomic::AtomicBool::new(false),
                signal: CancellationToken::new(),
                scope: Arc::new(crate::extensions::Scope {
                    extensions,
                    state: crate::extensions::SessionState::new(),
                }),
                provenance: Mutex::default(),
                approvals: Mutex::default(),
                keeps_conversation: true,
                takes_approvals: std::sync::atomic::AtomicBool::new(true),
            }),
        }
    }
}

/// What the model said in one step: optional text and the calls to run.
///
/// ```
/// use pleach_core::{AssistantStep, ToolCall};
/// let step = AssistantStep::from(vec![ToolCall::new("c1", "add", "{}")]).with_text("Let me add.");
/// assert_eq!(step.text.as_deref(), Some("Let me add."));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AssistantStep {
    /// The model's text, if any.
    pub text: Option<String>,
    /// The calls, in the model's order.
    pub calls: Vec<ToolCall>,
}

impl AssistantStep {
    /// Adds the model's text.
    ///
    /// ```
    /// use pleach_core::{AssistantStep, ToolCall};
    ///
    /// let step = AssistantStep::from(vec![ToolCall::new("c1", "math", r#"{"expression":"2+2"}"#)])
    ///     .with_text("Let me compute that.");
    /// assert_eq!(step.text.as_deref(), Some("Let me compute that."));
    /// ```
    #[must_use]
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }
}

impl From<Vec<ToolCall>> for AssistantStep {
    fn from(calls: Vec<ToolCall>) -> Self {
        AssistantStep { text: None, calls }
    }
}

/// One call's outcome: the result, or the error with its code.
///
/// ```
/// use pleach_core::{ToolCall, ToolResult};
///
/// let result = ToolResult { tool_call: ToolCall::new("c1", "add", "{}"), outcome: Ok(3.into()) };
/// assert_eq!(result.tool_call.id(), "c1");
/// ```
///
/// It travels as JSON between processes (a durable engine's activities): the outcome as
/// `{"Ok": value}` or `{"Err": error}`, the error without its operator detail.
#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize)]
pub struct ToolResult {
    /// The call.
    pub tool_call: ToolCall,
    /// What came of it.
    pub outcome: Result<Value, ToolError>,
}

impl Session {
    /// The tools this session may call, sorted by name.
    ///
    /// ```rust,standalone_crate
    /// let runtime = pleach_core::Runtime::builder().build().unwrap();
    /// let session = runtime.create_session(pleach_core::SessionOptions::default()).unwrap();
    /// assert_eq!(session.tool_names().count(), 0);
    /// ```
    pub fn tool_names(&self) -> impl Iterator<Item = &str> {
        self.inner.tools.iter().map(|t| t.tool.name())
    }

    /// The session's `T` (see [`SessionState`](crate::extensions::SessionState)): the state its
    /// tools keep, such as a scratchpad's notes, created with `T::default()` on first use.
    ///
    /// ```rust,standalone_crate
    /// let runtime = pleach_core::Runtime::builder().build().unwrap();
    /// let session = runtime.create_session(pleach_core::SessionOptions::default()).unwrap();
    /// assert_eq!(*session.state::<u32>(), 0);
    /// ```
    pub fn state<T: std::any::Any + Send + Sync + Default>(&self) -> Arc<T> {
        self.inner.scope.state.get_or_default::<T>()
    }

    /// The conversation so far.
    ///
    /// ```
    /// use pleach_core::{Message, Runtime, SessionOptions, ToolRegistryBuilder};
    ///
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let session = runtime.create_session(SessionOptions::default()).unwrap();
    /// session.push_user_message("hello");
    /// assert_eq!(session.conversation(), [Message::User { content: "hello".into() }]);
    /// ```
    pub fn conversation(&self) -> Vec<Message> {
        self.inner.log().conversation.clone()
    }

    /// Appends the user's message. A new user turn starts: the repeated-failure counts reset.
    ///
    /// ```
    /// use pleach_core::{Runtime, SessionOptions, ToolRegistryBuilder};
    ///
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let session = runtime.create_session(SessionOptions::default()).unwrap();
    /// session.push_user_message("What is 2 + 2?");
    /// assert_eq!(session.conversation().len(), 1);
    /// ```
    pub fn push_user_message(&self, content: impl Into<String>) {
        let mut state = self.inner.log();
        state.failures.clear();
        self.inner
            .any_failures
            .store(false, std::sync::atomic::Ordering::Release);
        let content = content.into();
        if self.inner.screens() {
            let mut provenance = self.inner.provenance();
            provenance.clear();
            if self.inner.runtime.safety.provenance_from_user {
                provenance.record_user_message(&content);
            }
        }
        state.conversation.push(Message::User { content });
    }

    /// Replaces the conversation with `messages`: a conversation kept elsewhere (a durable
    /// engine's history, a host's store) continued in this session. What the safety stage knows
    /// is rebuilt from it as a turn would have built it: the values of the tool results since the
    /// last user message (and that message's, with
    /// [`provenance_includes_user_messages`](crate::RuntimeBuilder::provenance_includes_user_messages)).
    /// A result the user edited counts too; the repeated-failure counts start over.
    ///
    /// ```rust,standalone_crate
    /// use pleach_core::{Message, Runtime, SessionOptions, ToolCall};
    ///
    /// let session = Runtime::builder().build().unwrap().create_session(SessionOptions::default()).unwrap();
    /// let call = ToolCall::new("c1", "find", "{}");
    /// session.restore_conversation(vec![
    ///     Message::User { content: "find my account".into() },
    ///     Message::Assistant { content: None, tool_calls: vec![call.clone()] },
    ///     Message::tool_result(&call, &Ok(serde_json::json!({ "id": "ACC-1" }))),
    /// ]);
    /// assert_eq!(session.conversation().len(), 3);
    /// ```
    pub fn restore_conversation(&self, messages: Vec<Message>) {
        let mut state = self.inner.log();
        state.failures.clear();
        self.inner
            .any_failures
            .store(false, std::sync::atomic::Ordering::Release);
        if self.inner.screens() {
            let mut provenance = self.inner.provenance();
            provenance.clear();
            for message in &messages {
                match message {
                    Message::User { content } => {
                        provenance.clear();
                        if self.inner.runtime.safety.provenance_from_user {
                            provenance.record_user_message(content);
                        }
                    }
                    Message::Tool {
                        tool_call,
                        content,
                        is_error: false,
                        edited_arguments,
                    } => {
                        // An edited result's content says so before the value.
                        let text = match edited_arguments {
                            Some(arguments) => content
                                .strip_prefix(&crate::conversation::edited_prefix(arguments))
                                .unwrap_or_default(),
                            None => content,
                        };
                        if let Ok(value) = serde_json::from_str::<Value>(text) {
                            provenance.record_result(tool_call, &value);
                        }
                    }
                    _ => {}
                }
            }
        }
        state.conversation = messages;
    }

    /// Counts `times` recoverable failures of `call` (its tool and canonical arguments) toward
    /// the repeated-failure limit, as earlier steps of this turn would have: a durable worker
    /// runs one call of a turn in a session of its own.
    pub(crate) fn count_failures(&self, call: &ToolCall, times: u32) {
        if times > 0 {
            let key = self.inner.failure_key(call);
            self.inner
                .record_failures(std::iter::repeat_n(key, times as usize));
        }
    }

    /// Appends a message of the model's that calls no tool.
    ///
    /// ```
    /// use pleach_core::{Message, Runtime, SessionOptions, ToolRegistryBuilder};
    ///
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let session = runtime.create_session(SessionOptions::default()).unwrap();
    /// session.push_assistant_message("4.");
    /// assert!(matches!(&session.conversation()[0], Message::Assistant { content: Some(text), .. } if text == "4."));
    /// ```
    pub fn push_assistant_message(&self, content: impl Into<String>) {
        self.inner.log().conversation.push(Message::Assistant {
            content: Some(content.into()),
            tool_calls: Vec::new(),
        });
    }

    /// Runs one model step's calls: appends the assistant message with the calls, emits
    /// `tool.started` for each (in order), runs them (up to the runtime's concurrency), emits each
    /// one's terminal event as it finishes, and appends one result message per call in the
    /// model's order. Returns at once; read the [`Turn`]'s events, then `finish` it.
    ///
    /// Every call ends in exactly one `tool.completed` or `tool.failed` and exactly one result
    /// message: unknown tools, bad JSON, panics, timeouts and cancellation included.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime (the turn runs as a Tokio task).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use pleach_core::{define_tool, Runtime, SessionOptions, ToolCall, ToolError, ToolRegistryBuilder};
    ///
    /// let echo = define_tool("echo", "Returns its arguments.")
    ///     .execute_json(|args, _| async move { Ok::<_, ToolError>(args) })
    ///     .unwrap();
    /// let runtime = Runtime::builder()
    ///     .registry(ToolRegistryBuilder::new().register(echo).build().unwrap())
    ///     .build()
    ///     .unwrap();
    /// let session = runtime.create_session(SessionOptions::all()).unwrap();
    /// let mut turn = session.run_turn(vec![
    ///     ToolCall::new("c1", "echo", r#"{"n":1}"#),
    ///     ToolCall::new("c2", "echo", "not json"), // 1005, its own call only
    /// ]);
    /// let mut types = Vec::new();
    /// while let Some(event) = turn.events().recv().await {
    ///     types.push(event.event_type());
    /// }
    /// assert_eq!(types.iter().filter(|t| **t == "tool.started").count(), 2);
    /// let results = turn.finish().await;
    /// assert_eq!(results[0].outcome, Ok(serde_json::json!({ "n": 1 })));
    /// assert_eq!(results[1].outcome.as_ref().unwrap_err().code().as_u16(), 1005);
    /// # }
    /// ```
    pub fn run_turn(&self, step: impl Into<AssistantStep>) -> Turn {
        let step = step.into();
        let calls: Vec<ToolCall> = step.calls;
        if self.inner.keeps_conversation {
            self.inner.log().conversation.push(Message::Assistant {
                content: step.text,
                tool_calls: calls.clone(),
            });
        }
        self.start_turn(calls, None, None)
    }

    /// This session, with turns that write nothing into its conversation: for a server whose
    /// client keeps the conversation (MCP), so a long connection does not grow memory with every
    /// call. Called on a session just created (its only handle).
    #[doc(hidden)] // Not API: for pleach-mcp (ARCHITECTURE.md, "Seams").
    pub fn without_conversation(mut self) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.keeps_conversation = false;
        }
        self
    }

    /// Whether this session's host can answer approval interrupts. An MCP server learns it from
    /// its client (one that can elicit can ask its user; one that cannot, cannot): without, a
    /// call that needs an approval fails at once with 1012, its message saying that the call
    /// needs the user's approval, instead of waiting for a decision that cannot come.
    #[doc(hidden)] // Not API: for pleach-mcp (ARCHITECTURE.md, "Seams").
    pub fn set_takes_approvals(&self, takes: bool) {
        self.inner
            .takes_approvals
            .store(takes, std::sync::atomic::Ordering::Relaxed);
    }

    /// Forgets the recoverable failures counted against `call` (name and canonical arguments),
    /// so its next try runs: for a server without user turns (MCP), once the repeated-failure
    /// refusal has been given.
    #[doc(hidden)] // Not API: for pleach-mcp (ARCHITECTURE.md, "Seams").
    pub fn forget_failures_of(&self, call: &ToolCall) {
        let key = self.inner.failure_key(call);
        self.inner.log().failures.remove(&key);
    }

    /// Starts a turn of `calls`: their `tool.started` events (then `announce`, if any), and the
    /// driver task that runs them and writes their results back. `approved` is a decision made
    /// beforehand for one call, by index.
    fn start_turn(
        &self,
        calls: Vec<ToolCall>,
        approved: Option<(usize, crate::safety::Action)>,
        announce: Option<ToolEvent>,
    ) -> Turn {
        let (sink, events) = crate::event::channel();
        let signal = self.inner.signal.child_token();
        sink.send_all(calls.iter().map(|call| ToolEvent::Started {
            tool_call: call.clone(),
        }));
        if let Some(event) = announce {
            sink.send(event);
        }
        // The driver and the turn share the calls: the turn keeps them to answer for every call
        // should the driver die.
        let calls = Arc::new(calls);
        let driver = drive_turn(
            self.inner.clone(),
            calls.clone(),
            sink,
            signal.clone(),
            approved,
            Vec::new(),
        );
        Turn {
            events,
            signal,
            calls,
            // In the caller's span (an agent's `invoke_agent`), so the calls' spans are its
            // children; nothing when no span is current.
            driver: tokio::spawn(tracing::Instrument::in_current_span(driver)),
        }
    }

    /// Answers a pending approval interrupt (an `interrupt.requested` event of one of this
    /// session's turns): accept runs the call as it is, edit runs it with the new arguments (the
    /// conversation records the edit), reject fails it with 1013 and the user's reason.
    ///
    /// # Errors
    ///
    /// The interrupt is not pending here ([`DecisionError::UnknownInterrupt`](crate::safety::DecisionError::UnknownInterrupt)), the decision was
    /// made for another call ([`DecisionError::FingerprintMismatch`](crate::safety::DecisionError::FingerprintMismatch)), or the edited arguments are
    /// not valid for the tool ([`DecisionError::InvalidEdit`](crate::safety::DecisionError::InvalidEdit)). The interrupt then stays pending.
    ///
    /// ```rust,standalone_crate
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use pleach_core::{tool, Runtime, SessionOptions, ToolCall, ToolEvent, safety::ProvenanceDetector};
    ///
    /// /// Sends money to an account.
    /// #[tool]
    /// async fn pay(to_account: String, amount: u32) -> String { format!("sent {amount} to {to_account}") }
    ///
    /// let runtime = Runtime::builder()
    ///     .detector(ProvenanceDetector::new().guard("pay", ["/to_account"]))
    ///     .build()
    ///     .unwrap();
    /// let session = runtime.create_session(SessionOptions::enabled(["pay"])).unwrap();
    /// let mut turn = session.run_turn(vec![ToolCall::new("c1", "pay", r#"{"to_account":"ACC-9","amount":5}"#)]);
    /// while let Some(event) = turn.events().recv().await {
    ///     if let ToolEvent::InterruptRequested { interrupt } = &event {
    ///         // Show `interrupt.findings` and `interrupt.ground_truth` to the user; they fix the account.
    ///         session.resolve(interrupt.edit(r#"{"to_account":"ACC-1","amount":5}"#)).unwrap();
    ///     }
    /// }
    /// let results = turn.finish().await;
    /// assert_eq!(results[0].outcome, Ok(serde_json::json!("sent 5 to ACC-1")));
    /// # }
    /// ```
    pub fn resolve(
        &self,
        decision: crate::safety::Decision,
    ) -> Result<(), crate::safety::DecisionError> {
        self.inner.resolve(decision)
    }

    /// Seals a pending interrupt with the runtime's key
    /// ([`RuntimeBuilder::interrupt_key`](crate::RuntimeBuilder::interrupt_key)), so another process can [`resume`](Session::resume) it.
    ///
    /// # Errors
    ///
    /// [`SealError::NoKey`](crate::safety::SealError::NoKey) when the runtime has no key.
    pub fn seal(
        &self,
        interrupt: &crate::safety::Interrupt,
    ) -> Result<String, crate::safety::SealError> {
        let key = self.inner.runtime.safety.interrupt_key.as_deref();
        key.map(|key| interrupt.seal_with(key))
            .ok_or(crate::safety::SealError::NoKey)
    }

    /// Resumes a sealed interrupt in this session (in this process or another) with the user's
    /// decision: checks the seal with the runtime's key, binds the decision to the sealed call's
    /// fingerprint, then runs the call as a turn of its own (no detector runs again: the user
    /// decided). The result message is appended to the conversation; restore the conversation the
    /// call belongs to first. Each sealed interrupt resumes once per session.
    ///
    /// # Errors
    ///
    /// A seal that does not check out ([`DecisionError::Seal`](crate::safety::DecisionError::Seal)), a decision for another
    /// interrupt or call, an invalid edit, an interrupt already resumed here, or a tool that is
    /// `critical` in this session ([`DecisionError::CriticalTool`](crate::safety::DecisionError::CriticalTool):
    /// no decision overrides a critical tool's halt).
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime (the call runs as a Tokio task).
    pub fn resume(
        &self,
        sealed: &str,
        decision: crate::safety::Decision,
    ) -> Result<Turn, crate::safety::DecisionError> {
        let key = self
            .inner
            .runtime
            .safety
            .interrupt_key
            .as_deref()
            .ok_or(crate::safety::SealError::NoKey)?;
        let interrupt = crate::safety::Interrupt::open_with(sealed, key)?;
        let tool = self.inner.tool(interrupt.tool_call.name());
        self.inner.accept_resumed(&interrupt, &decision, tool)?;
        let call = interrupt.tool_call;
        let resolved = ToolEvent::InterruptResolved {
            tool_call_id: Arc::from(call.id()),
            interrupt_id: interrupt.id,
            action: decision.action.name(),
        };
        Ok(self.start_turn(vec![call], Some((0, decision.action)), Some(resolved)))
    }

    /// Runs one call in the caller's task, without a turn: the same pipeline and error codes,
    /// no events and no conversation write-back. For hosts that dispatch calls themselves.
    ///
    /// ```rust,standalone_crate
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use pleach_core::{tool, Runtime, SessionOptions, ToolCall};
    ///
    /// /// Adds two integers.
    /// #[tool]
    /// async fn add(a: i64, b: i64) -> i64 { a + b }
    ///
    /// let session = Runtime::builder().build().unwrap().create_session(SessionOptions::all()).unwrap();
    /// let result = session.call(ToolCall::new("c1", "add", r#"{"a":2,"b":2}"#)).await;
    /// assert_eq!(result.outcome, Ok(serde_json::json!(4)));
    /// # }
    /// ```
    pub async fn call(&self, call: ToolCall) -> ToolResult {
        self.dispatch(call, &EventSender::discard()).await
    }

    /// Runs one call in the caller's task, sending its events (`tool.started`, any
    /// `tool.delta`, then its terminal event) to `events`; no conversation write-back. For hosts
    /// that schedule calls and stream events themselves. A host that drops this future before the
    /// call ends (its own timeout, a `select!`) stops the call there, and it still ends once:
    /// `tool.failed` with 1011, and nothing after it.
    ///
    /// ```rust,standalone_crate
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use pleach_core::{event, tool, Runtime, SessionOptions, ToolCall};
    ///
    /// /// Adds two integers.
    /// #[tool]
    /// async fn add(a: i64, b: i64) -> i64 { a + b }
    ///
    /// let session = Runtime::builder().build().unwrap().create_session(SessionOptions::all()).unwrap();
    /// let (sender, mut stream) = event::channel();
    /// session.dispatch(ToolCall::new("c1", "add", r#"{"a":2,"b":2}"#), &sender).await;
    /// let types: Vec<_> = stream.drain().iter().map(|e| e.event_type()).collect();
    /// assert_eq!(types, ["tool.started", "tool.completed"]);
    /// # }
    /// ```
    pub async fn dispatch(&self, call: ToolCall, events: &EventSender) -> ToolResult {
        // The session's token stands for the turn: it fires only when the session is dropped,
        // which cannot happen while it is borrowed here, so a call run in place need not look at
        // it (a call that waits gets its own token in `run`).
        self.dispatch_with(call, events, &self.inner.signal, None)
            .await
    }

    /// [`dispatch`](Session::dispatch) under a signal of the host's own (cancelling it cancels
    /// the call as cancelling a turn does: the tool's signal, its grace, then 1011) and, for a
    /// call whose approval the user already gave ([`Session::accept_decision`]), the decision.
    #[doc(hidden)] // Not API: for pleach-mcp (ARCHITECTURE.md, "Seams").
    pub async fn dispatch_with(
        &self,
        call: ToolCall,
        events: &EventSender,
        signal: &CancellationToken,
        approved: Option<crate::safety::Action>,
    ) -> ToolResult {
        // Built only when someone listens (`Session::call` dispatches into a sender that drops
        // everything).
        if events.is_connected() {
            events.send(ToolEvent::Started {
                tool_call: call.clone(),
            });
        }
        let in_place = if approved.is_none() {
            self.inner.dispatch_now(call, events, None, None, None)
        } else {
            Err(call)
        };
        let (dispatched, issued) = match in_place {
            // Run in place: no safety stage, so the call ran as the model issued it.
            Ok(dispatched) => (dispatched, None),
            Err(call) => {
                // A user's edit (an approval interrupt) may replace the call; a failure counts
                // against the call as the model issued it.
                let issued = call.clone();
                // Declared before the pipeline's future, so dropped after it (and its progress
                // gate) should the host drop this future mid-call.
                let unfinished = Unfinished {
                    call: &issued,
                    events,
                };
                let dispatched = self.inner.dispatch(call, events, signal, approved).await;
                std::mem::forget(unfinished);
                (dispatched, Some(issued))
            }
        };
        if dispatched.counts {
            let issued = issued.as_ref().unwrap_or(&dispatched.call);
            self.inner.record_failures([self.inner.failure_key(issued)]);
        }
        ToolResult {
            tool_call: dispatched.call,
            outcome: dispatched.outcome,
        }
    }

    /// Checks the user's decision on an interrupt its caller kept itself (an MCP server's client
    /// carried it sealed between requests; a durable engine keeps it in its history) and marks it
    /// answered; the call then runs by [`dispatch_with`](Session::dispatch_with) with the
    /// decision's action.
    #[doc(hidden)] // Not API: for pleach-mcp (ARCHITECTURE.md, "Seams").
    pub fn accept_decision(
        &self,
        interrupt: &crate::safety::Interrupt,
        decision: &crate::safety::Decision,
    ) -> Result<(), crate::safety::DecisionError> {
        let tool = self.inner.tool(interrupt.tool_call.name());
        self.inner.accept_resumed(interrupt, decision, tool)
    }
}

/// A call [`Session::dispatch`] has started and not ended. Should the host drop the dispatch
/// mid-call (a `select!`, a timeout of its own), the call still ends, once: its `tool.started`
/// went out, so its terminal event follows, 1011 (cancelled: the host stopped it). The
/// pipeline's future, dropped first, has closed the call's progress by then, so nothing follows.
/// Forgotten when the call ends, having sent its own terminal event.
struct Unfinished<'a> {
    call: &'a ToolCall,
    events: &'a EventSender,
}

impl Drop for Unfinished<'_> {
    fn drop(&mut self) {
        let error = if std::thread::panicking() {
            // Tool panics end as 1009 inside the pipeline: this is pleach's own.
            ToolError::new(ErrorCode::ToolPanicked, "the call failed inside pleach")
                .with_detail("the call's pipeline panicked")
        } else {
            ToolError::new(
                ErrorCode::Cancelled,
                "the call was cancelled before it finished",
            )
            .with_detail("the host dropped `Session::dispatch` before the call ended")
        };
        crate::session::call_events::send_terminal(self.events, self.call, None, &Err(error));
    }
}

/// The agent loop's hold on a session (`crate::agent`): its state and turn machinery, without
/// owning it (dropping a handle cancels nothing; dropping the [`Session`] still cancels the loop).
#[derive(Debug, Clone)]
pub(crate) struct SessionHandle(Arc<SessionInner>);

impl Session {
    pub(crate) fn handle(&self) -> SessionHandle {
        SessionHandle(self.inner.clone())
    }
}

impl SessionHandle {
    /// The session's token: it fires when the session is dropped.
    pub(crate) fn signal(&self) -> &CancellationToken {
        &self.0.signal
    }

    /// The argument limits of the session's runtime.
    pub(crate) fn limits(&self) -> Limits {
        self.0.runtime.config.limits
    }

    /// The session's enabled tools, sorted by name.
    pub(crate) fn tools(&self) -> Vec<UnifiedToolDefinition> {
        self.0.tools.iter().map(|t| t.tool.clone()).collect()
    }

    pub(crate) fn conversation(&self) -> Vec<Message> {
        self.0.log().conversation.clone()
    }

    /// Appends the model's answer (a message that calls no tool).
    pub(crate) fn push_assistant_text(&self, content: String) {
        self.0.log().conversation.push(Message::Assistant {
            content: Some(content),
            tool_calls: Vec::new(),
        });
    }

    /// One model step whose calls were streamed and already announced (`tool.started` went out
    /// as each was first seen): writes the assistant message, runs the calls that may run, fails
    /// the others with their error (`failed`, by index) without running them, and writes one
    /// result per call back in call order. Events go to `sink`, which is closed at the end.
    pub(crate) async fn run_streamed_step(
        &self,
        text: Option<String>,
        calls: Vec<ToolCall>,
        failed: Vec<Option<ToolError>>,
        sink: EventSender,
        signal: CancellationToken,
    ) -> Vec<ToolResult> {
        self.0.log().conversation.push(Message::Assistant {
            content: text,
            tool_calls: calls.clone(),
        });
        drive_turn(self.0.clone(), Arc::new(calls), sink, signal, None, failed).await
    }
}

/// What a turn's run of calls run in place (one after another, in its task) keeps between them:
/// one runtime-wide slot for them all, and their terminal events, sent under one lock. Both go
/// when the turn pauses (before it yields to other tasks or waits for other calls), so another
/// session finds the slot free and a reader finds the events in the order the calls ended.
#[derive(Default)]
struct Burst<'a> {
    slot: Option<crate::batch::Slot<'a>>,
    events: Vec<ToolEvent>,
}

impl Burst<'_> {
    fn pause(&mut self, sink: &EventSender) {
        self.slot = None;
        if !self.events.is_empty() {
            sink.send_all(self.events.drain(..));
        }
    }
}

/// Runs a turn's calls and writes their results back in call order. `approved` is a decision
/// made beforehand for one call (a resumed interrupt), by index. `failed` holds, by index, the
/// calls that failed before the turn (a streamed call its stream broke): they do not run, and get
/// their terminal event and result message like any other (missing entries: none failed).
async fn drive_turn(
    session: Arc<SessionInner>,
    calls: Arc<Vec<ToolCall>>,
    sink: EventSender,
    signal: CancellationToken,
    mut approved: Option<(usize, crate::safety::Action)>,
    failed: Vec<Option<ToolError>>,
) -> Vec<ToolResult> {
    // `failed` is usually empty (only a streamed step has calls that failed in assembly): look
    // calls up in it rather than grow it to one entry per call.
    let has_failed = |index: usize| failed.get(index).is_some_and(Option::is_some);
    let lanes: Vec<Lane> = calls
        .iter()
        .enumerate()
        .map(|(index, call)| match session.tool(call.name()) {
            // A call that will not run orders nothing; it only passes its gate.
            _ if has_failed(index) => Lane::Parallel { limit: None },
            Some(tool) => Lane::for_call(
                call.name(),
                &tool.strategy,
                tool.max_concurrency,
                call.arguments(),
            ),
            // It fails at lookup, at once; nothing to order.
            None => Lane::Parallel { limit: None },
        })
        .collect();
    // One sender and one token shared by the turn's calls: cloning an `Arc` is an atomic
    // increment, cloning a sender or a token takes a lock (and so does dropping it).
    let shared_sink = Arc::new(sink.clone());
    let shared_signal = Arc::new(signal.clone());
    // Usually empty (only a streamed step has calls that failed in assembly).
    let any_failed = failed.iter().any(Option::is_some);
    let failed = std::sync::Mutex::new(failed);
    let failure_of = |index: usize| {
        if !any_failed {
            return None;
        }
        let mut failed = failed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        failed.get_mut(index).and_then(Option::take)
    };
    let multi_thread = crate::batch::on_multi_thread_runtime();
    let outcomes = crate::batch::run_scheduled(
        &lanes,
        session.runtime.config.batching,
        Some(&signal),
        &mut Burst::default(),
        |burst: &mut Burst<'_>, index| {
            let failure = failure_of(index);
            let decision = approved
                .take_if(|(approved_index, _)| *approved_index == index)
                .map(|(_, action)| action);
            let call = calls[index].clone();
            if let Some(error) = failure {
                return Step::Done(pipeline::Dispatched::never_ran(call, error, &sink));
            }
            // A call that can finish where it starts does, unless other workers could run it
            // beside the rest (a multi-thread runtime: it is spawned like any call there).
            let call = if decision.is_none() && !multi_thread {
                // The turn's token is looked at before each run of starts and every 32 calls
                // (`run_scheduled`): nothing else can cancel the turn while this task runs.
                let Burst { slot, events } = burst;
                match session.dispatch_now(call, &sink, None, Some(slot), Some(events)) {
                    Ok(dispatched) => return Step::Done(dispatched),
                    Err(call) => call,
                }
            } else {
                call
            };
            let (session, sink, signal) =
                (session.clone(), shared_sink.clone(), shared_signal.clone());
            Step::Later(async move { session.dispatch(call, &sink, &signal, decision).await })
        },
        // The turn was cancelled before these started: they end now, with their own failure if
        // they had one.
        |index| {
            let error = failure_of(index).unwrap_or_else(cancelled_error);
            Some(pipeline::Dispatched::never_ran(
                calls[index].clone(),
                error,
                &sink,
            ))
        },
        |burst| burst.pause(&sink),
    )
    .await;
    let mut failures = Vec::new();
    // Collected into the outcomes' own buffer (the outcomes lead the chain): a step's results
    // take no second allocation.
    let results: Vec<(ToolResult, bool)> = outcomes
        .into_iter()
        .zip(calls.iter())
        .map(|(dispatched, issued)| {
            let (result, edited, failed) = settle(&session, issued, dispatched, &sink);
            failures.extend(failed);
            (result, edited)
        })
        .collect();
    session.record_failures(failures);
    if session.keeps_conversation {
        let mut state = session.log();
        state.conversation.reserve(results.len());
        for (result, edited) in &results {
            let message = if *edited {
                Message::edited_tool_result(&result.tool_call, &result.outcome)
            } else {
                Message::tool_result(&result.tool_call, &result.outcome)
            };
            state.conversation.push(message);
        }
    }
    // Every terminal event is sent and the conversation written: the turn's stream is over.
    sink.close();
    results.into_iter().map(|(result, _)| result).collect()
}

/// A call's result, whether the user edited it, and for a recoverable failure the key it is counted
/// under ([`SessionInner::failure_key`]).
/// A call left without an outcome is one whose pipeline panicked (a bug in pleach, not in the
/// tool: tool panics are caught as 1009 inside the pipeline): it still ends, once.
fn settle(
    session: &SessionInner,
    issued: &ToolCall,
    dispatched: Option<pipeline::Dispatched>,
    sink: &EventSender,
) -> (ToolResult, bool, Option<String>) {
    let dispatched = dispatched.unwrap_or_else(|| {
        let failure = ToolError::new(ErrorCode::ToolPanicked, "the call failed inside pleach")
            .with_detail("the call's pipeline panicked");
        pipeline::Dispatched::never_ran(issued.clone(), failure, sink)
    });
    let edited = !issued.same(&dispatched.call);
    let result = ToolResult {
        tool_call: dispatched.call,
        outcome: dispatched.outcome,
    };
    // Counted against the call as the model issued it, whatever a user's edit made it.
    let failed = dispatched.counts.then(|| session.failure_key(issued));
    (result, edited, failed)
}

fn cancelled_error() -> ToolError {
    ToolError::new(
        ErrorCode::Cancelled,
        "the call was cancelled before it finished",
    )
}

/// A running turn: its events, its cancellation, and its results.
///
/// The turn runs as a task of its own from [`Session::run_turn`] on. Dropping the `Turn` does not
/// stop it: its calls still end and their results are still written to the conversation (its
/// events then go nowhere). To stop it, [`cancel`](Turn::cancel) it first; dropping the
/// [`Session`] cancels every turn still running.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use pleach_core::{Runtime, SessionOptions, ToolCall, ToolRegistryBuilder};
///
/// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
/// let session = runtime.create_session(SessionOptions::default()).unwrap();
/// let mut turn = session.run_turn(vec![ToolCall::new("c1", "missing", "{}")]);
/// while turn.events().recv().await.is_some() {}
/// let results = turn.finish().await;
/// assert_eq!(results[0].outcome.as_ref().unwrap_err().code().as_u16(), 1003);
/// # }
/// ```
#[derive(Debug)]
pub struct Turn {
    events: EventStream,
    signal: CancellationToken,
    calls: Arc<Vec<ToolCall>>,
    driver: tokio::task::JoinHandle<Vec<ToolResult>>,
}

impl Turn {
    /// The turn's events, in the order they happened. The stream ends once every call's terminal
    /// event has been read.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use pleach_core::{Runtime, SessionOptions, ToolCall, ToolRegistryBuilder};
    ///
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let session = runtime.create_session(SessionOptions::default()).unwrap();
    /// let mut turn = session.run_turn(vec![ToolCall::new("c1", "missing", "{}")]);
    /// let mut types = Vec::new();
    /// while let Some(event) = turn.events().recv().await {
    ///     types.push(event.event_type());
    /// }
    /// assert_eq!(types, ["tool.started", "tool.failed"]);
    /// # }
    /// ```
    pub fn events(&mut self) -> &mut EventStream {
        &mut self.events
    }

    /// Cancels the turn: every running call's [`ToolContext::signal`](crate::ToolContext::signal) fires; a call that has not
    /// finished after the grace period is dropped. Cancelled calls fail with code 1011.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use pleach_core::{define_tool, Runtime, SessionOptions, ToolCall, ToolError, ToolRegistryBuilder};
    ///
    /// // A tool that waits until its call is cancelled.
    /// let wait = define_tool("wait", "Waits for its signal.")
    ///     .execute_json(|_, ctx| async move {
    ///         ctx.signal.cancelled().await;
    ///         Err::<serde_json::Value, _>(ToolError::failed("stopped"))
    ///     })
    ///     .unwrap();
    /// let runtime = Runtime::builder()
    ///     .registry(ToolRegistryBuilder::new().register(wait).build().unwrap())
    ///     .build()
    ///     .unwrap();
    /// let session = runtime.create_session(SessionOptions::all()).unwrap();
    /// let turn = session.run_turn(vec![ToolCall::new("c1", "wait", "{}")]);
    /// turn.cancel();
    /// let results = turn.finish().await;
    /// assert_eq!(results[0].outcome.as_ref().unwrap_err().code().as_u16(), 1011);
    /// # }
    /// ```
    pub fn cancel(&self) {
        self.signal.cancel();
    }

    /// The turn's cancellation token (cancel it from elsewhere, or tie it to a parent).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use pleach_core::{Runtime, SessionOptions, ToolRegistryBuilder};
    ///
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let session = runtime.create_session(SessionOptions::default()).unwrap();
    /// let turn = session.run_turn(Vec::new());
    /// let token = turn.cancellation_token(); // hand it to whatever should be able to stop the turn
    /// token.cancel();
    /// assert!(turn.finish().await.is_empty());
    /// # }
    /// ```
    pub fn cancellation_token(&self) -> CancellationToken {
        self.signal.clone()
    }

    /// Waits for every call and returns the results in the model's call order (they are already
    /// written into the conversation). Read the events first: finishing consumes the turn.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use pleach_core::{Message, Runtime, SessionOptions, ToolCall, ToolRegistryBuilder};
    ///
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let session = runtime.create_session(SessionOptions::default()).unwrap();
    /// let turn = session.run_turn(vec![ToolCall::new("c1", "a", "{}"), ToolCall::new("c2", "b", "{}")]);
    /// let results = turn.finish().await; // the events were not read: finishing drops them
    /// let ids: Vec<&str> = results.iter().map(|r| r.tool_call.id()).collect();
    /// assert_eq!(ids, ["c1", "c2"]);
    /// assert!(matches!(&session.conversation()[2], Message::Tool { is_error: true, .. }));
    /// # }
    /// ```
    pub async fn finish(self) -> Vec<ToolResult> {
        let Turn {
            events,
            driver,
            calls,
            ..
        } = self;
        // Finishing consumes the events: nobody can read them from here on, which a call waiting
        // for the user's approval must hear of, or it would wait for ever.
        drop(events);
        match driver.await {
            Ok(results) => results,
            // The driver runs no user code; should it die anyway (or the runtime shut down), every
            // call still gets its one result rather than vanishing.
            Err(error) => {
                tracing::error!(%error, "a turn's driver task died");
                let failure = if error.is_cancelled() {
                    cancelled_error()
                } else {
                    ToolError::new(
                        ErrorCode::ToolPanicked,
                        "the runtime failed while running this call",
                    )
                    .with_detail(error.to_string())
                };
                calls
                    .iter()
                    .map(|tool_call| ToolResult {
                        tool_call: tool_call.clone(),
                        outcome: Err(failure.clone()),
                    })
                    .collect()
            }
        }
    }
}
