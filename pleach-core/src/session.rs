//! The runtime and its sessions: [`Runtime::builder`] wires the registry, plugins, limits and
//! timeouts; [`Runtime::create_session`] takes the spec's `{ tools: { enabled: [...] } }`; a
//! session runs a turn's calls through the pipeline (find → limits → parse → validate → execute
//! with a [`ToolContext`] → validate the output), streams their events, and writes results back
//! into the conversation in the model's call order.
//!
//! The guarantees (ARCHITECTURE.md, "Runtime guarantees") and the tests that prove them are listed
//! in `docs/events.md`.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::batch::{
    BatchingConfig, BatchingHint, BatchingStrategy, Gates, Lane, infer_batching_strategy,
};
use crate::conversation::Message;
use crate::error::{ErrorCode, ToolError};
use crate::event::{EventSender, EventStream, ToolEvent};
use crate::plugin::PleachPlugin;
use crate::registry::{self, Registry, RegistryError, ToolRegistry, ToolRegistryBuilder};
use crate::schema;
use crate::tool::{CallEvents, ToolCall, ToolContext, UnifiedToolDefinition};

/// Limits on a call's arguments, enforced before they are parsed into a value.
///
/// ```
/// let limits = pleach_core::Limits::default();
/// assert_eq!(limits.max_argument_bytes, 1024 * 1024);
/// assert_eq!(limits.max_argument_depth, 64);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// The longest arguments text accepted, in bytes (default 1 MiB).
    pub max_argument_bytes: usize,
    /// The deepest nesting of arrays and objects accepted (default 64).
    pub max_argument_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_argument_bytes: 1024 * 1024,
            max_argument_depth: 64,
        }
    }
}

impl Limits {
    /// Limits with the given size and depth.
    ///
    /// ```
    /// let limits = pleach_core::Limits::new(4096, 8);
    /// assert_eq!(limits.max_argument_depth, 8);
    /// ```
    pub fn new(max_argument_bytes: usize, max_argument_depth: usize) -> Self {
        Limits {
            max_argument_bytes,
            max_argument_depth,
        }
    }
}

/// Why a runtime could not be built.
///
/// ```rust,standalone_crate
/// use pleach_core::{define_pleach_plugin, Runtime, RuntimeError};
/// use std::time::Duration;
///
/// let typo = define_pleach_plugin("ops").tool_timeout("serch_corpus", Duration::from_secs(1));
/// let err = Runtime::builder()
///     .registry(pleach_core::ToolRegistryBuilder::new().build().unwrap())
///     .plugin(typo)
///     .build()
///     .unwrap_err();
/// assert!(matches!(err, RuntimeError::UnknownToolInConfig { .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// The tools do not form a valid registry (duplicate names, definitions that failed).
    #[error("{0}")]
    Registry(#[from] RegistryError),
    /// Configuration names a tool that does not exist.
    #[error("{source_name} configures tool `{tool}`, which is not registered{suggestion}")]
    UnknownToolInConfig {
        /// The unknown name.
        tool: String,
        /// Where the configuration came from (`runtime` or `plugin <name>`).
        source_name: String,
        /// `; did you mean …?`, or empty.
        suggestion: String,
    },
}

/// Builds a [`Runtime`]; see [`Runtime::builder`].
#[derive(Default)]
#[must_use = "a runtime builder does nothing until `build` is called"]
pub struct RuntimeBuilder {
    registry: Option<Arc<dyn ToolRegistry>>,
    plugins: Vec<PleachPlugin>,
    limits: Limits,
    default_timeout: Option<Duration>,
    tool_timeouts: Vec<(String, Duration)>,
    cancel_grace: Option<Duration>,
    max_repeated_failures: Option<u32>,
    max_concurrency: Option<usize>,
    max_in_flight: Option<usize>,
    overload: OverloadPolicy,
}

impl fmt::Debug for RuntimeBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuntimeBuilder")
            .field("registry", &self.registry.as_ref().map(|r| r.size()))
            .field("plugins", &self.plugins)
            .field("limits", &self.limits)
            .field("default_timeout", &self.default_timeout)
            .field("tool_timeouts", &self.tool_timeouts)
            .finish_non_exhaustive()
    }
}

/// The default grace period between a call's signal firing and the call being dropped.
pub const DEFAULT_CANCEL_GRACE: Duration = Duration::from_secs(2);
/// The default timeout of a call.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_mins(2);
/// How many times a call may fail recoverably with the same arguments in one user turn before
/// the next identical call fails as not recoverable.
pub const DEFAULT_MAX_REPEATED_FAILURES: u32 = 3;
/// How many calls run at once across all of a runtime's sessions by default.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 1024;

/// What a call does when the runtime already runs [`RuntimeBuilder::max_in_flight`] calls.
///
/// ```
/// use pleach_core::{OverloadPolicy, Runtime};
/// let runtime = Runtime::builder().max_in_flight(64).overload_policy(OverloadPolicy::FailFast).build();
/// # let _ = runtime;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OverloadPolicy {
    /// Wait for a slot (cancellation and the call's timeout still apply to the wait).
    #[default]
    Wait,
    /// Fail at once with 1014 (`Overloaded`, recoverable): the model or the host retries later.
    FailFast,
}

/// How many calls of one turn run at once by default.
pub const DEFAULT_MAX_CONCURRENCY: usize = 16;

impl RuntimeBuilder {
    /// Looks tools up in `registry` instead of the active registry
    /// ([`set_orchestrator_registry`](crate::set_orchestrator_registry), else
    /// [`tool_registry()`](crate::tool_registry)).
    pub fn registry(mut self, registry: impl ToolRegistry + 'static) -> Self {
        self.registry = Some(Arc::new(registry));
        self
    }

    /// Adds a plugin: its tools join the registry, its configuration applies.
    pub fn plugin(mut self, plugin: PleachPlugin) -> Self {
        self.plugins.push(plugin);
        self
    }

    /// Sets the argument limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets the timeout of every call without its own (default [`DEFAULT_TIMEOUT`]).
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = Some(timeout);
        self
    }

    /// Sets the timeout of one tool, by name.
    pub fn tool_timeout(mut self, tool_name: impl Into<String>, timeout: Duration) -> Self {
        self.tool_timeouts.push((tool_name.into(), timeout));
        self
    }

    /// Sets how long a call may take to finish after its signal fires (cancellation or timeout)
    /// before it is dropped (default [`DEFAULT_CANCEL_GRACE`]).
    pub fn cancel_grace(mut self, grace: Duration) -> Self {
        self.cancel_grace = Some(grace);
        self
    }

    /// Sets how many recoverable failures with the same arguments a tool may have in one user
    /// turn (default [`DEFAULT_MAX_REPEATED_FAILURES`]); the next identical call fails with 1015.
    pub fn max_repeated_failures(mut self, failures: u32) -> Self {
        self.max_repeated_failures = Some(failures);
        self
    }

    /// Sets how many calls of one turn run at once (default [`DEFAULT_MAX_CONCURRENCY`]): the
    /// global cap of [`BatchingConfig`]. Each tool's calls also follow its
    /// [`BatchingStrategy`].
    pub fn max_concurrency(mut self, calls: usize) -> Self {
        self.max_concurrency = Some(calls.max(1));
        self
    }

    /// Caps the calls running at once across all the runtime's sessions (default
    /// [`DEFAULT_MAX_IN_FLIGHT`]); what happens to a call beyond it is the
    /// [`OverloadPolicy`].
    pub fn max_in_flight(mut self, calls: usize) -> Self {
        self.max_in_flight = Some(calls.max(1));
        self
    }

    /// Sets what a call does when the runtime is at capacity: wait for a slot (the default) or
    /// fail at once with 1014.
    pub fn overload_policy(mut self, policy: OverloadPolicy) -> Self {
        self.overload = policy;
        self
    }

    /// Checks everything and builds the runtime: tool names unique across the registry and the
    /// plugins (an error names both definition sites), configuration naming only existing tools.
    ///
    /// ```rust,standalone_crate
    /// use pleach_core::{tool, Runtime};
    ///
    /// /// Adds two integers.
    /// #[tool]
    /// async fn add(a: i64, b: i64) -> i64 { a + b }
    ///
    /// let runtime = Runtime::builder().build().unwrap();
    /// assert!(runtime.registry().has("add"));
    /// ```
    pub fn build(self) -> Result<Runtime, RuntimeError> {
        let base: Vec<UnifiedToolDefinition> = match self.registry {
            Some(registry) => registry
                .get_tool_definitions()
                .into_iter()
                .cloned()
                .collect(),
            None => registry::checked_active_registry()?
                .get_tool_definitions()
                .into_iter()
                .cloned()
                .collect(),
        };
        let mut builder = ToolRegistryBuilder::new().register_all(base);
        for plugin in &self.plugins {
            builder = builder.register_all(plugin.tools.iter().cloned());
        }
        let registry = builder.build()?;

        let mut hints = HashMap::new();
        for plugin in &self.plugins {
            for hint in &plugin.batching_hints {
                if !registry.has(&hint.tool_name) {
                    let names: Vec<&str> = registry.names().collect();
                    return Err(RuntimeError::UnknownToolInConfig {
                        suggestion: suggestion(&hint.tool_name, &names),
                        tool: hint.tool_name.clone(),
                        source_name: format!("plugin `{}`", plugin.name),
                    });
                }
                hints.insert(hint.tool_name.clone(), hint.clone());
            }
        }

        let mut timeouts = HashMap::new();
        let configured = self
            .tool_timeouts
            .into_iter()
            .map(|(tool, timeout)| ("runtime".to_owned(), tool, timeout))
            .chain(self.plugins.iter().flat_map(|plugin| {
                plugin.tool_timeouts.iter().map(|(tool, timeout)| {
                    (format!("plugin `{}`", plugin.name), tool.clone(), *timeout)
                })
            }));
        for (source_name, tool, timeout) in configured {
            if !registry.has(&tool) {
                let names: Vec<&str> = registry.names().collect();
                return Err(RuntimeError::UnknownToolInConfig {
                    suggestion: suggestion(&tool, &names),
                    tool,
                    source_name,
                });
            }
            timeouts.insert(tool, timeout);
        }

        let max_in_flight = self.max_in_flight.unwrap_or(DEFAULT_MAX_IN_FLIGHT);
        Ok(Runtime {
            inner: Arc::new(RuntimeInner {
                in_flight: Arc::new(tokio::sync::Semaphore::new(max_in_flight)),
                max_in_flight,
                overload: self.overload,
                registry,
                config: Config {
                    limits: self.limits,
                    default_timeout: self.default_timeout.unwrap_or(DEFAULT_TIMEOUT),
                    tool_timeouts: timeouts,
                    cancel_grace: self.cancel_grace.unwrap_or(DEFAULT_CANCEL_GRACE),
                    max_repeated_failures: self
                        .max_repeated_failures
                        .unwrap_or(DEFAULT_MAX_REPEATED_FAILURES),
                    batching: BatchingConfig::new(
                        self.max_concurrency.unwrap_or(DEFAULT_MAX_CONCURRENCY),
                    ),
                    hints,
                },
            }),
        })
    }
}

/// `; did you mean `x`?` for the closest of `names`, or nothing.
pub(crate) fn suggestion(name: &str, names: &[&str]) -> String {
    names
        .iter()
        .map(|candidate| (strsim::damerau_levenshtein(name, candidate), *candidate))
        .filter(|(distance, candidate)| *distance <= (candidate.len().max(name.len()) / 3).max(1))
        .min()
        .map_or_else(String::new, |(_, near)| format!("; did you mean `{near}`?"))
}

#[derive(Debug)]
struct Config {
    limits: Limits,
    default_timeout: Duration,
    tool_timeouts: HashMap<String, Duration>,
    cancel_grace: Duration,
    max_repeated_failures: u32,
    batching: BatchingConfig,
    hints: HashMap<String, BatchingHint>,
}

#[derive(Debug)]
struct RuntimeInner {
    registry: Registry,
    config: Config,
    /// Slots for running calls, shared by every session: the runtime-wide backpressure.
    in_flight: Arc<tokio::sync::Semaphore>,
    max_in_flight: usize,
    overload: OverloadPolicy,
}

/// The tool runtime: a checked registry and its configuration, from which sessions are made.
/// Cheap to clone.
///
/// ```rust,standalone_crate
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use pleach_core::{tool, Runtime, SessionOptions, ToolCall};
///
/// /// Adds two integers.
/// #[tool]
/// async fn add(a: i64, b: i64) -> i64 { a + b }
///
/// let runtime = Runtime::builder().build().unwrap();
/// let session = runtime.create_session(SessionOptions::enabled(["add"])).unwrap();
/// let results = session
///     .run_turn(vec![ToolCall::new("call_1", "add", r#"{"a":1,"b":2}"#)])
///     .finish()
///     .await;
/// assert_eq!(results[0].outcome, Ok(serde_json::json!(3)));
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Runtime {
    inner: Arc<RuntimeInner>,
}

impl Runtime {
    /// Starts configuring a runtime.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    /// Every tool the runtime knows.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// The batching strategy of the tool named `name`: a plugin's hint, else the one inferred from
    /// its definition ([`infer_batching_strategy`]).
    ///
    /// ```rust,standalone_crate
    /// use pleach_core::{define_pleach_plugin, tool, BatchingHint, BatchingStrategy, Runtime};
    ///
    /// /// Sends a message.
    /// #[tool]
    /// async fn send_message(to: String) -> String { to }
    ///
    /// let plugin = define_pleach_plugin("mail")
    ///     .contribute_batching_hints([BatchingHint::new("send_message", BatchingStrategy::Parallel)]);
    /// let runtime = Runtime::builder().plugin(plugin).build().unwrap();
    /// assert_eq!(runtime.batching_strategy("send_message"), Some(BatchingStrategy::Parallel));
    /// assert_eq!(Runtime::builder().build().unwrap().batching_strategy("send_message"), Some(BatchingStrategy::Serial));
    /// ```
    pub fn batching_strategy(&self, name: &str) -> Option<BatchingStrategy> {
        self.batching(name).map(|(strategy, _)| strategy)
    }

    fn batching(&self, name: &str) -> Option<(BatchingStrategy, Option<usize>)> {
        match self.inner.config.hints.get(name) {
            Some(hint) => Some((hint.strategy.clone(), hint.max_concurrency)),
            None => self
                .inner
                .registry
                .definition(name)
                .map(|definition| (infer_batching_strategy(definition), None)),
        }
    }

    /// Creates a session with the tools `options` enables (the spec's
    /// `createSession({ tools: { enabled: [...] } })`). An unknown name is an error listing close
    /// matches.
    ///
    /// ```rust,standalone_crate
    /// use pleach_core::{Runtime, SessionOptions};
    /// let runtime = Runtime::builder().build().unwrap();
    /// let err = runtime.create_session(SessionOptions::enabled(["no_such_tool"])).unwrap_err();
    /// assert!(err.to_string().contains("`no_such_tool`"));
    /// ```
    pub fn create_session(&self, options: SessionOptions) -> Result<Session, SessionError> {
        let registry = &self.inner.registry;
        let mut tools = Vec::new();
        let mut unknown = Vec::new();
        let enabled = options.tools.enabled;
        if enabled.iter().any(|name| name == "*") {
            tools.extend(registry.tools().iter().cloned());
        }
        for name in enabled.iter().filter(|name| *name != "*") {
            match registry.get(name) {
                Some(tool) => tools.push(tool.clone()),
                None => unknown.push(name.clone()),
            }
        }
        if !unknown.is_empty() {
            let names: Vec<&str> = registry.names().collect();
            return Err(SessionError::UnknownTools(
                unknown
                    .into_iter()
                    .map(|name| {
                        let suggestion = suggestion(&name, &names);
                        format!("`{name}`{suggestion}")
                    })
                    .collect(),
            ));
        }
        tools.sort_by(|a, b| a.name().cmp(b.name()));
        tools.dedup_by(|a, b| a.name() == b.name());
        let config = &self.inner.config;
        let tools = tools
            .into_iter()
            .map(|tool| {
                let (strategy, max_concurrency) = self
                    .batching(tool.name())
                    .unwrap_or((BatchingStrategy::Serial, None));
                SessionTool {
                    timeout: config
                        .tool_timeouts
                        .get(tool.name())
                        .copied()
                        .unwrap_or(config.default_timeout),
                    strategy,
                    max_concurrency,
                    tool,
                }
            })
            .collect();
        Ok(Session {
            inner: Arc::new(SessionInner {
                runtime: self.inner.clone(),
                tools,
                state: Mutex::new(SessionState::default()),
                any_failures: std::sync::atomic::AtomicBool::new(false),
                signal: CancellationToken::new(),
            }),
        })
    }
}

/// The spec's session options: `{ tools: { enabled: [...] } }`.
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
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
pub struct ToolsOptions {
    /// Tool names; `"*"` enables every tool of the runtime.
    #[serde(default)]
    pub enabled: Vec<String>,
}

impl SessionOptions {
    /// Options enabling the tools named.
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
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// Enabled names that are not registered, each with a suggestion when one is close.
    #[error("unknown tools: {}", .0.join(", "))]
    UnknownTools(Vec<String>),
}

#[derive(Debug)]
struct SessionTool {
    tool: UnifiedToolDefinition,
    timeout: Duration,
    strategy: BatchingStrategy,
    max_concurrency: Option<usize>,
}

#[derive(Debug, Default)]
struct SessionState {
    conversation: Vec<Message>,
    /// Recoverable failures this user turn, by call fingerprint (name + canonical arguments).
    failures: HashMap<String, u32>,
}

#[derive(Debug)]
struct SessionInner {
    runtime: Arc<RuntimeInner>,
    /// Sorted by name.
    tools: Vec<SessionTool>,
    state: Mutex<SessionState>,
    /// Whether `state.failures` may be non-empty: lets the common case skip the lock.
    any_failures: std::sync::atomic::AtomicBool,
    /// Fires when the session is dropped: every running turn is cancelled.
    signal: CancellationToken,
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
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The call.
    pub tool_call: Arc<ToolCall>,
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

    /// The conversation so far.
    pub fn conversation(&self) -> Vec<Message> {
        self.inner.state().conversation.clone()
    }

    /// Appends the user's message. A new user turn starts: the repeated-failure counts reset.
    pub fn push_user_message(&self, content: impl Into<String>) {
        let mut state = self.inner.state();
        state.failures.clear();
        state.conversation.push(Message::User {
            content: content.into(),
        });
    }

    /// Appends a message of the model's that calls no tool.
    pub fn push_assistant_message(&self, content: impl Into<String>) {
        self.inner.state().conversation.push(Message::Assistant {
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
    /// Outside a Tokio runtime (the calls run as Tokio tasks).
    pub fn run_turn(&self, step: impl Into<AssistantStep>) -> Turn {
        let step = step.into();
        let calls: Vec<Arc<ToolCall>> = step.calls.iter().cloned().map(Arc::new).collect();
        self.inner.state().conversation.push(Message::Assistant {
            content: step.text,
            tool_calls: step.calls,
        });
        let (sink, events) = crate::event::channel();
        let signal = self.inner.signal.child_token();
        let channels: Vec<Arc<CallEvents>> = calls
            .iter()
            .map(|call| {
                sink.send(ToolEvent::Started {
                    tool_call: call.clone(),
                });
                Arc::new(CallEvents::new(call.clone(), sink.clone()))
            })
            .collect();
        let driver = drive_turn(
            self.inner.clone(),
            calls.clone(),
            channels,
            sink,
            signal.clone(),
        );
        Turn {
            events,
            signal,
            calls,
            driver: tokio::spawn(driver),
        }
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
    /// that schedule calls and stream events themselves.
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
        let call = Arc::new(call);
        events.send(ToolEvent::Started {
            tool_call: call.clone(),
        });
        let channel = Arc::new(CallEvents::new(call.clone(), events.clone()));
        // The call gets its own token in `run`; the session's stands for the turn here.
        let (outcome, failed) = self
            .inner
            .dispatch(&call, &channel, &self.inner.signal)
            .await;
        self.inner.record_failures(failed);
        ToolResult {
            tool_call: call,
            outcome,
        }
    }
}

/// Runs a turn's calls and writes their results back in call order.
async fn drive_turn(
    session: Arc<SessionInner>,
    calls: Vec<Arc<ToolCall>>,
    channels: Vec<Arc<CallEvents>>,
    sink: EventSender,
    signal: CancellationToken,
) -> Vec<ToolResult> {
    let lanes: Vec<Lane> = calls
        .iter()
        .map(|call| match session.tool(&call.name) {
            Some(tool) => Lane::for_call(
                &call.name,
                &tool.strategy,
                tool.max_concurrency,
                &call.arguments,
            ),
            // It fails at lookup, at once; nothing to order.
            None => Lane::Parallel { limit: None },
        })
        .collect();
    let gates = Arc::new(Gates::new(&lanes, session.runtime.config.batching));
    let mut tasks = JoinSet::new();
    let mut index_of = HashMap::new();
    for (index, (call, events)) in calls.iter().zip(&channels).enumerate() {
        let (session, call, events, signal, gates) = (
            session.clone(),
            call.clone(),
            events.clone(),
            signal.clone(),
            gates.clone(),
        );
        let handle = tasks.spawn(async move {
            let pass = tokio::select! {
                biased;
                () = signal.cancelled() => None,
                pass = gates.enter(index) => Some(pass),
            };
            let outcome = if let Some(_pass) = pass {
                session.dispatch(&call, &events, &signal).await
            } else {
                let error = cancelled_error();
                events.finish(|| ToolEvent::Failed {
                    tool_call: call.clone(),
                    error: error.clone(),
                });
                (Err(error), None)
            };
            (index, outcome)
        });
        index_of.insert(handle.id(), index);
    }
    let mut outcomes: Vec<Option<Result<Value, ToolError>>> = vec![None; calls.len()];
    let mut failures = Vec::new();
    while let Some(joined) = tasks.join_next_with_id().await {
        match joined {
            Ok((_, (index, (outcome, failed)))) => {
                outcomes[index] = Some(outcome);
                failures.extend(failed);
            }
            // Our pipeline catches tool panics itself; this is a task that died anyway.
            Err(error) => {
                if let Some(&index) = index_of.get(&error.id()) {
                    let failure = if error.is_cancelled() {
                        cancelled_error()
                    } else {
                        ToolError::new(ErrorCode::ToolPanicked, "the tool's task died")
                            .with_detail(error.to_string())
                    };
                    channels[index].finish(|| ToolEvent::Failed {
                        tool_call: calls[index].clone(),
                        error: failure.clone(),
                    });
                    outcomes[index] = Some(Err(failure));
                }
            }
        }
    }
    let results: Vec<ToolResult> = calls
        .into_iter()
        .zip(outcomes)
        .map(|(tool_call, outcome)| ToolResult {
            outcome: outcome.unwrap_or_else(|| Err(cancelled_error())),
            tool_call,
        })
        .collect();
    session.record_failures(failures);
    {
        let mut state = session.state();
        for result in &results {
            state
                .conversation
                .push(Message::tool_result(&result.tool_call, &result.outcome));
        }
    }
    // Every terminal event is sent and the conversation written: the turn's stream is over.
    sink.close();
    results
}

fn cancelled_error() -> ToolError {
    ToolError::new(
        ErrorCode::Cancelled,
        "the call was cancelled before it finished",
    )
}

/// A running turn: its events, its cancellation, and its results.
#[derive(Debug)]
pub struct Turn {
    events: EventStream,
    signal: CancellationToken,
    calls: Vec<Arc<ToolCall>>,
    driver: tokio::task::JoinHandle<Vec<ToolResult>>,
}

impl Turn {
    /// The turn's events, in the order they happened. The stream ends once every call's terminal
    /// event has been read.
    pub fn events(&mut self) -> &mut EventStream {
        &mut self.events
    }

    /// Cancels the turn: every running call's [`ToolContext::signal`] fires; a call that has not
    /// finished after the grace period is dropped. Cancelled calls fail with code 1011.
    pub fn cancel(&self) {
        self.signal.cancel();
    }

    /// The turn's cancellation token (cancel it from elsewhere, or tie it to a parent).
    pub fn cancellation_token(&self) -> CancellationToken {
        self.signal.clone()
    }

    /// Waits for every call and returns the results in the model's call order (they are already
    /// written into the conversation). Read the events first: finishing consumes the turn.
    pub async fn finish(self) -> Vec<ToolResult> {
        match self.driver.await {
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
                self.calls
                    .into_iter()
                    .map(|tool_call| ToolResult {
                        tool_call,
                        outcome: Err(failure.clone()),
                    })
                    .collect()
            }
        }
    }
}

impl SessionInner {
    fn state(&self) -> std::sync::MutexGuard<'_, SessionState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn tool(&self, name: &str) -> Option<&SessionTool> {
        self.tools
            .binary_search_by(|t| t.tool.name().cmp(name))
            .ok()
            .map(|index| &self.tools[index])
    }

    /// The whole pipeline for one call, ending in its terminal event.
    /// The whole pipeline for one call, ending in its terminal event. Returns the outcome and,
    /// for a recoverable failure, the call's fingerprint for the repeated-failure count (recorded
    /// by the caller: a turn records its failures when it ends, since calls of one model step are
    /// issued together and none of them repeats another).
    async fn dispatch(
        &self,
        call: &Arc<ToolCall>,
        events: &Arc<CallEvents>,
        turn_signal: &CancellationToken,
    ) -> (Result<Value, ToolError>, Option<String>) {
        let mut fingerprint = None;
        let outcome = self.run(call, events, turn_signal, &mut fingerprint).await;
        let failed = match &outcome {
            Ok(result) => {
                events.finish(|| ToolEvent::Completed {
                    tool_call: call.clone(),
                    result: result.clone(),
                });
                None
            }
            Err(error) => {
                events.finish(|| ToolEvent::Failed {
                    tool_call: call.clone(),
                    error: error.clone(),
                });
                error
                    .is_recoverable()
                    .then(|| fingerprint.unwrap_or_else(|| fingerprint_of(call)))
            }
        };
        (outcome, failed)
    }

    /// Counts recoverable failures toward the repeated-failure limit.
    fn record_failures(&self, fingerprints: impl IntoIterator<Item = String>) {
        let mut fingerprints = fingerprints.into_iter().peekable();
        if fingerprints.peek().is_none() {
            return;
        }
        let mut state = self.state();
        for key in fingerprints {
            *state.failures.entry(key).or_insert(0) += 1;
        }
        self.any_failures
            .store(true, std::sync::atomic::Ordering::Release);
    }

    async fn run(
        &self,
        call: &ToolCall,
        events: &Arc<CallEvents>,
        turn_signal: &CancellationToken,
        fingerprint: &mut Option<String>,
    ) -> Result<Value, ToolError> {
        let config = &self.runtime.config;
        let Some(session_tool) = self.tool(&call.name) else {
            return Err(self.not_found(&call.name));
        };
        let definition = session_tool.tool.definition();
        check_limits(&call.arguments, config.limits)?;
        self.check_repetition(call, fingerprint)?;

        // The call's own token, fired by its timeout or by the turn's cancellation (in `wait`, or
        // here when the turn is already over): a standalone token costs one allocation, a child
        // token a lock on the turn's as well. A tool that takes no context gets none of it: it
        // could not see a signal, so it is simply dropped when its call is.
        let call_signal = definition.takes_context().then(|| {
            let token = CancellationToken::new();
            if turn_signal.is_cancelled() {
                token.cancel();
            }
            token
        });
        let ctx = call_signal
            .as_ref()
            .map(|token| ToolContext::for_call(call.id.clone(), token.clone(), events.clone()));
        let _slot = self.slot(turn_signal).await?;
        let future = definition.start(&call.arguments, ctx)?;
        let mut future = CatchUnwind(future);
        // Most tools finish on their first poll: only a tool that waits arms the timer.
        let first = std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut future).poll(cx))).await;
        let outcome = match first {
            Poll::Ready(outcome) => outcome,
            Poll::Pending => {
                self.wait(
                    &mut future,
                    session_tool.timeout,
                    turn_signal,
                    call_signal.as_ref(),
                )
                .await?
            }
        };
        // A tool that returns because its signal fired (the cooperative way to stop) was still
        // cancelled: its result is whatever it had, not an answer.
        if turn_signal.is_cancelled() {
            return Err(cancelled_error());
        }
        let output = outcome?;
        definition.check_output(&output)?;
        Ok(output)
    }

    /// Waits for a tool that did not finish on its first poll, against its timeout and the
    /// turn's cancellation; either fires its signal and drops it after the grace period.
    async fn wait(
        &self,
        future: &mut CatchUnwind,
        timeout: Duration,
        turn_signal: &CancellationToken,
        call_signal: Option<&CancellationToken>,
    ) -> Result<Result<Value, ToolError>, ToolError> {
        tokio::select! {
            biased;
            outcome = &mut *future => Ok(outcome),
            () = turn_signal.cancelled() => {
                let _ = tokio::time::timeout(self.fire(call_signal), &mut *future).await;
                Err(cancelled_error())
            }
            () = tokio::time::sleep(timeout) => {
                let _ = tokio::time::timeout(self.fire(call_signal), &mut *future).await;
                Err(ToolError::new(
                    ErrorCode::TimedOut,
                    format!("the tool did not finish within {}", human(timeout)),
                ))
            }
        }
    }

    /// A runtime-wide slot for a running call, by the overload policy.
    async fn slot(
        &self,
        turn_signal: &CancellationToken,
    ) -> Result<tokio::sync::OwnedSemaphorePermit, ToolError> {
        let slots = &self.runtime.in_flight;
        let overloaded = || {
            ToolError::new(
                ErrorCode::Overloaded,
                format!(
                    "the runtime is at capacity ({} calls running); try again shortly",
                    self.runtime.max_in_flight
                ),
            )
        };
        if let Ok(permit) = slots.clone().try_acquire_owned() {
            return Ok(permit);
        }
        match self.runtime.overload {
            OverloadPolicy::FailFast => Err(overloaded()),
            OverloadPolicy::Wait => tokio::select! {
                biased;
                () = turn_signal.cancelled() => Err(cancelled_error()),
                permit = slots.clone().acquire_owned() => permit.map_err(|_| overloaded()),
            },
        }
    }

    /// Fires a call's signal and returns how long the tool may take to stop on its own: the grace
    /// period, or nothing for a tool without a signal (it could not notice).
    fn fire(&self, call_signal: Option<&CancellationToken>) -> Duration {
        match call_signal {
            Some(signal) => {
                signal.cancel();
                self.runtime.config.cancel_grace
            }
            None => Duration::ZERO,
        }
    }

    fn not_found(&self, name: &str) -> ToolError {
        let registry = &self.runtime.registry;
        if registry.has(name) {
            return ToolError::new(
                ErrorCode::ToolNotEnabled,
                format!(
                    "tool `{name}` is not enabled in this session; call one of the enabled tools"
                ),
            );
        }
        let names: Vec<&str> = self.tools.iter().map(|t| t.tool.name()).collect();
        let suggestion = suggestion(name, &names);
        ToolError::new(
            ErrorCode::UnknownTool,
            format!("no tool named `{name}`{suggestion}"),
        )
    }

    /// Refuses a call that already failed recoverably too often with the same arguments this
    /// user turn: the model is stuck in a loop, and another try will not help.
    fn check_repetition(
        &self,
        call: &ToolCall,
        fingerprint: &mut Option<String>,
    ) -> Result<(), ToolError> {
        if !self.any_failures.load(std::sync::atomic::Ordering::Acquire) {
            return Ok(());
        }
        let state = self.state();
        if state.failures.is_empty() {
            return Ok(());
        }
        let key = fingerprint_of(call);
        let failures = state.failures.get(&key).copied().unwrap_or(0);
        drop(state);
        let limit = self.runtime.config.max_repeated_failures;
        *fingerprint = Some(key);
        if failures >= limit {
            return Err(ToolError::new(
                ErrorCode::RepeatedFailure,
                format!(
                    "`{}` already failed {failures} times with these same arguments in this turn; \
                     trying again will not help: change the arguments or take another approach",
                    call.name
                ),
            ));
        }
        Ok(())
    }
}

/// The name and the canonical arguments (sorted keys, no spacing), or the raw text when it is not
/// JSON: the same call, however the model spelled it.
fn fingerprint_of(call: &ToolCall) -> String {
    match schema::parse_arguments(&call.arguments) {
        Ok(arguments) => format!("{}\u{0}{arguments}", call.name),
        Err(_) => format!("{}\u{0}{}", call.name, call.arguments),
    }
}

/// Size and nesting limits, checked on the text before anything is parsed.
fn check_limits(arguments: &str, limits: Limits) -> Result<(), ToolError> {
    if arguments.len() > limits.max_argument_bytes {
        return Err(ToolError::new(
            ErrorCode::ArgumentsTooLarge,
            format!(
                "the arguments are {} bytes, over the limit of {}; send less data",
                arguments.len(),
                limits.max_argument_bytes
            ),
        ));
    }
    let depth = schema::nesting_depth(arguments);
    if depth > limits.max_argument_depth {
        return Err(ToolError::new(
            ErrorCode::ArgumentsTooLarge,
            format!(
                "the arguments nest {depth} levels deep, over the limit of {}; flatten them",
                limits.max_argument_depth
            ),
        ));
    }
    Ok(())
}

fn human(duration: Duration) -> String {
    if duration.subsec_millis() == 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{} ms", duration.as_millis())
    }
}

/// Polls a tool's future, turning a panic into 1009 for that call alone.
struct CatchUnwind(crate::tool::ToolFuture);

impl Future for CatchUnwind {
    type Output = Result<Value, ToolError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let future = self.0.as_mut();
        match std::panic::catch_unwind(AssertUnwindSafe(|| future.poll(cx))) {
            Ok(poll) => poll,
            Err(payload) => Poll::Ready(Err(ToolError::new(
                ErrorCode::ToolPanicked,
                "the tool crashed (it panicked); this is a bug in the tool, not in the arguments",
            )
            .with_detail(panic_message(payload.as_ref())))),
        }
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with a non-string payload".to_owned())
}
