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
//! This file holds [`Session`] itself (its tools, state and conversation) and [`ToolResult`].
//! What a session is made with is `options.rs`; turns and their driver `turn.rs`; calls run in
//! the caller's task `dispatch.rs`; answers to approval interrupts `decisions.rs`; the agent
//! loop's hold on a session `handle.rs`; what it shares of its runtime `shared.rs`; one call's
//! pipeline `pipeline.rs` and its safety stage `screening.rs`.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use pleach_core::{Runtime, SessionOptions, ToolCall, ToolError, ToolRegistryBuilder, ToolDefinition};
//!
//! let echo = ToolDefinition::builder("echo", "Returns its arguments.")
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
mod decisions;
mod dispatch;
mod handle;
pub(crate) mod limits;
#[cfg(feature = "otel")]
pub(crate) mod metrics;
mod options;
mod persisted;
pub(crate) mod pipeline;
mod screening;
pub(crate) mod shared;
mod signal;
pub(crate) mod suggestion;
pub(crate) mod telemetry;
mod turn;

pub(crate) use call_events::terminal_event;
pub(crate) use handle::SessionHandle;
pub use options::{SessionError, SessionOptions, ToolsOptions};
pub use persisted::RestoreError;
pub use turn::{AssistantStep, Turn};

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use self::shared::RuntimeInner;
use crate::batch::BatchingStrategy;
use crate::call::ToolCall;
use crate::content::ToolOutput;
use crate::conversation::Message;
use crate::error::{ErrorCode, ToolError};
use crate::tool::UnifiedToolDefinition;

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
    tools: Arc<[SessionTool]>,
    log: Mutex<SessionLog>,
    /// Whether `state.failures` may be non-empty: lets the common case skip the lock.
    any_failures: std::sync::atomic::AtomicBool,
    /// Fires when the session is dropped: every running turn is cancelled.
    signal: signal::SessionSignal,
    /// The runtime's extensions and this session's state, handed to each call's context: made
    /// when first needed ([`SessionInner::scope`]), so a session whose calls take no context (a
    /// server's session for one request, say) makes none.
    scope: std::sync::OnceLock<Arc<crate::extensions::Scope>>,
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
    /// Whether this session's host answers a tool's elicitation (see
    /// [`Session::set_client_capabilities`]).
    answers_elicitation: std::sync::atomic::AtomicBool,
    /// Whether this session's host answers a tool's sampling requests.
    answers_sampling: std::sync::atomic::AtomicBool,
}

impl SessionInner {
    /// The runtime's extensions and this session's state, made on first use.
    fn scope(&self) -> &Arc<crate::extensions::Scope> {
        self.scope.get_or_init(|| {
            Arc::new(crate::extensions::Scope {
                extensions: self.runtime.extensions.clone(),
                state: crate::extensions::SessionState::new(),
            })
        })
    }
}

/// A conversation with a set of enabled tools. Runs turns of tool calls and keeps the
/// conversation they write back into. Dropping the session cancels its running turns.
///
/// ```rust
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use pleach_core::{tool, Message, Runtime, SessionOptions, ToolCall};
///
/// /// Adds two integers.
/// #[tool]
/// async fn plus(a: i64, b: i64) -> i64 { a + b }
///
/// let session = Runtime::builder().build().unwrap().create_session(SessionOptions::enabled(["plus"])).unwrap();
/// session.push_user_message("what is 1 + 2?");
/// session.run_turn(vec![ToolCall::new("c1", "plus", r#"{"a":1,"b":2}"#)]).finish().await;
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
        self.inner.signal.fire();
    }
}

impl Session {
    /// A session of `runtime` with `tools` (sorted by name, each once): what
    /// [`Runtime::create_session`](crate::Runtime::create_session) makes.
    pub(crate) fn new(runtime: Arc<RuntimeInner>, tools: Arc<[SessionTool]>) -> Session {
        Session {
            inner: Arc::new(SessionInner {
                runtime,
                tools,
                log: Mutex::new(SessionLog::default()),
                any_failures: std::sync::atomic::AtomicBool::new(false),
                signal: signal::SessionSignal::default(),
                scope: std::sync::OnceLock::new(),
                provenance: Mutex::default(),
                approvals: Mutex::default(),
                keeps_conversation: true,
                takes_approvals: std::sync::atomic::AtomicBool::new(true),
                answers_elicitation: std::sync::atomic::AtomicBool::new(true),
                answers_sampling: std::sync::atomic::AtomicBool::new(true),
            }),
        }
    }
}

/// One call's outcome: the result, or the error with its code.
///
/// ```
/// use pleach_core::{ToolCall, ToolResult};
///
/// let result = ToolResult { tool_call: ToolCall::new("c1", "add", "{}"), outcome: Ok(serde_json::json!(3).into()) };
/// assert_eq!(result.tool_call.id(), "c1");
/// ```
///
/// It travels as JSON between processes (a durable engine's activities): the outcome as
/// `{"Ok": value}` or `{"Err": error}`, the error without its operator detail; a result with
/// content blocks as `{"Content": {"structured": value, "content": [blocks]}}`, each block in
/// MCP's JSON shape (`pleach_core::content`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize)]
pub struct ToolResult {
    /// The call.
    pub tool_call: ToolCall,
    /// What came of it.
    #[serde(with = "outcome_wire")]
    pub outcome: Result<ToolOutput, ToolError>,
}

/// A call's outcome as JSON (see [`ToolResult`]).
pub(crate) mod outcome_wire {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::Value;

    use crate::content::{ContentBlock, ToolOutput, wire};
    use crate::error::ToolError;

    #[derive(Serialize)]
    enum Written<'a> {
        Ok(&'a Value),
        Content {
            structured: Option<&'a Value>,
            #[serde(serialize_with = "blocks")]
            content: &'a [ContentBlock],
        },
        Err(&'a ToolError),
    }

    #[allow(clippy::ref_option_ref, clippy::trivially_copy_pass_by_ref)] // serde's signature
    fn blocks<S: Serializer>(blocks: &&[ContentBlock], serializer: S) -> Result<S::Ok, S::Error> {
        wire::serialize(blocks, serializer)
    }

    #[derive(Deserialize)]
    enum Read {
        Ok(Value),
        Content {
            #[serde(default)]
            structured: Option<Value>,
            #[serde(with = "wire")]
            content: Vec<ContentBlock>,
        },
        Err(ToolError),
    }

    pub(crate) fn serialize<S: Serializer>(
        outcome: &Result<ToolOutput, ToolError>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        const NULL: &Value = &Value::Null;
        match outcome {
            Ok(output) if output.content.is_empty() => {
                Written::Ok(output.structured.as_ref().unwrap_or(NULL))
            }
            Ok(output) => Written::Content {
                structured: output.structured.as_ref(),
                content: &output.content,
            },
            Err(error) => Written::Err(error),
        }
        .serialize(serializer)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Result<ToolOutput, ToolError>, D::Error> {
        Ok(match Read::deserialize(deserializer)? {
            Read::Ok(value) => Ok(ToolOutput::new(value)),
            Read::Content {
                structured,
                content,
            } => {
                let mut output = ToolOutput::from_blocks(content);
                output.structured = structured;
                Ok(output)
            }
            Read::Err(error) => Err(error),
        })
    }
}

impl Session {
    /// The tools this session may call, sorted by name.
    ///
    /// ```rust
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
    /// ```rust
    /// let runtime = pleach_core::Runtime::builder().build().unwrap();
    /// let session = runtime.create_session(pleach_core::SessionOptions::default()).unwrap();
    /// assert_eq!(*session.state::<u32>(), 0);
    /// ```
    pub fn state<T: std::any::Any + Send + Sync + Default>(&self) -> Arc<T> {
        self.inner.scope().state.get_or_default::<T>()
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
    /// ```rust
    /// use pleach_core::{Message, Runtime, SessionOptions, ToolCall};
    ///
    /// let session = Runtime::builder().build().unwrap().create_session(SessionOptions::default()).unwrap();
    /// let call = ToolCall::new("c1", "find", "{}");
    /// session.restore_conversation(vec![
    ///     Message::User { content: "find my account".into() },
    ///     Message::Assistant { content: None, tool_calls: vec![call.clone()] },
    ///     Message::tool_result(&call, &Ok(serde_json::json!({ "id": "ACC-1" }).into())),
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
                        ..
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
                        } else {
                            // A result with text blocks: its JSON line, then one line a block.
                            for line in text.lines() {
                                let value = serde_json::from_str::<Value>(line)
                                    .unwrap_or_else(|_| Value::from(line));
                                provenance.record_result(tool_call, &value);
                            }
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

    /// This session, with turns that write nothing into its conversation: for a server whose
    /// client keeps the conversation (MCP), so a long connection does not grow memory with every
    /// call. Called on a session just created (its only handle).
    #[doc(hidden)] // Not API: for pleach-mcp (ARCHITECTURE.md, "Seams").
    #[must_use]
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

    /// Whether this session's host answers a tool's requests to its client: elicitation
    /// (`elicitation.requested` events) and sampling (`sampling.requested`). An MCP server learns
    /// it from its client's declared capabilities; without, a tool's request fails at once with
    /// 1020 instead of waiting for an answer that cannot come. A session answers both by default
    /// (its host reads the events and answers them, as it answers approvals).
    #[doc(hidden)] // Not API: for pleach-mcp (ARCHITECTURE.md, "Seams").
    pub fn set_client_capabilities(&self, elicitation: bool, sampling: bool) {
        use std::sync::atomic::Ordering::Relaxed;
        self.inner.answers_elicitation.store(elicitation, Relaxed);
        self.inner.answers_sampling.store(sampling, Relaxed);
    }

    /// Forgets the recoverable failures counted against `call` (name and canonical arguments),
    /// so its next try runs: for a server without user turns (MCP), once the repeated-failure
    /// refusal has been given.
    #[doc(hidden)] // Not API: for pleach-mcp (ARCHITECTURE.md, "Seams").
    pub fn forget_failures_of(&self, call: &ToolCall) {
        let key = self.inner.failure_key(call);
        self.inner.log().failures.remove(&key);
    }
}

fn cancelled_error() -> ToolError {
    ToolError::new(
        ErrorCode::Cancelled,
        "the call was cancelled before it finished",
    )
}
