//! The runtime: [`Runtime::builder`] wires the registry, plugins, limits and timeouts
//! ([`RuntimeBuilder`], checked when it builds); a [`Runtime`] holds the checked registry and its
//! configuration, cheap to clone, and [`Runtime::create_session`] makes sessions from it with the
//! TypeScript spec's `{ tools: { enabled: [...] } }` (what a session does:
//! [`session`](crate::session)).
//!
//! The runtime sits above the sessions it makes: what they share of it (the registry, the
//! configuration, the slots) is `session/shared.rs`, which this module builds and reads.

mod builder;
mod checks;

pub use crate::session::shared::{CallSlot, Limits, OverloadPolicy};
pub use builder::RuntimeBuilder;
#[doc(hidden)]
pub use builder::warn_no_tools;
pub use checks::RuntimeError;

use std::sync::Arc;
use std::time::Duration;

use crate::batch::{BatchingStrategy, Lane, infer_batching_strategy, names_a_read};
use crate::registry::ToolRegistry;
use crate::session::shared::RuntimeInner;
use crate::session::suggestion::suggestion;
use crate::session::{Session, SessionError, SessionOptions, SessionTool};
use crate::tool::UnifiedToolDefinition;

/// The tool runtime: a checked registry and its configuration, from which sessions are made.
/// Cheap to clone.
///
/// ```rust
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use pleach_core::{tool, Runtime, SessionOptions, ToolCall};
///
/// /// Subtracts one integer from another.
/// #[tool]
/// async fn subtract(a: i64, b: i64) -> i64 { a - b }
///
/// let runtime = Runtime::builder().build().unwrap();
/// let session = runtime.create_session(SessionOptions::enabled(["subtract"])).unwrap();
/// let results = session
///     .run_turn(vec![ToolCall::new("call_1", "subtract", r#"{"a":5,"b":2}"#)])
///     .finish()
///     .await;
/// assert_eq!(results[0].outcome, Ok(serde_json::json!(3).into()));
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Runtime {
    inner: Arc<RuntimeInner>,
}

impl Runtime {
    /// Starts configuring a runtime.
    ///
    /// ```
    /// let runtime = pleach_core::Runtime::builder()
    ///     .registry(pleach_core::ToolRegistryBuilder::new().build().unwrap())
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(runtime.registry().len(), 0);
    /// ```
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    /// Every tool the runtime knows.
    ///
    /// ```
    /// use pleach_core::{Runtime, ToolError, ToolRegistryBuilder, ToolDefinition};
    ///
    /// let ping = ToolDefinition::builder("ping", "Answers pong.")
    ///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
    ///     .unwrap();
    /// let runtime = Runtime::builder()
    ///     .registry(ToolRegistryBuilder::new().register(ping).build().unwrap())
    ///     .build()
    ///     .unwrap();
    /// assert!(runtime.registry().contains("ping"));
    /// ```
    pub fn registry(&self) -> &ToolRegistry {
        &self.inner.registry
    }

    /// A runtime-wide slot taken now for a call to be made next, if one is free: for a host
    /// that refuses a request for capacity before it reads it (an HTTP 503), so that the call
    /// it lets through cannot then find the runtime full. The call carries the slot
    /// ([`Session::dispatch_reserved`]); dropped unused, it is given back.
    #[doc(hidden)] // Not API: for pleach-mcp (ARCHITECTURE.md, "Seams").
    pub fn try_reserve_call(&self) -> Option<CallSlot> {
        CallSlot::try_take(&self.inner)
    }

    /// What a call does when every slot is taken (`RuntimeBuilder::overload_policy`).
    #[doc(hidden)] // Not API: for pleach-mcp (ARCHITECTURE.md, "Seams").
    pub fn overload_policy(&self) -> OverloadPolicy {
        self.inner.overload
    }

    /// The key approval interrupts are sealed with, if one was given.
    #[doc(hidden)] // Not API: for pleach-mcp (ARCHITECTURE.md, "Seams").
    pub fn interrupt_key(&self) -> Option<&[u8]> {
        self.inner.safety.interrupt_key.as_deref()
    }

    /// How long a call waits for the user's approval (then 1016).
    #[doc(hidden)] // Not API: for pleach-mcp (ARCHITECTURE.md, "Seams").
    pub fn approval_timeout(&self) -> Duration {
        self.inner.config.approval_timeout
    }

    /// How long a cancelled tool has to stop before its call ends without it.
    #[doc(hidden)] // Not API: for pleach-mcp (ARCHITECTURE.md, "Seams").
    pub fn cancel_grace(&self) -> Duration {
        self.inner.config.cancel_grace
    }

    /// The batching strategy of the tool named `name`: a plugin's hint, else the one inferred from
    /// its definition ([`infer_batching_strategy`]). `None` for a tool the runtime does not know.
    /// The TypeScript spec's `getBatchingStrategyForTool` looks the name up in the active
    /// registry; a runtime's tools are the registry it was built with (the active one unless
    /// [`RuntimeBuilder::registry`] says otherwise) and its plugins' tools.
    ///
    /// ```rust
    /// use pleach_core::{tool, BatchingHint, BatchingStrategy, Runtime, PleachPlugin};
    ///
    /// /// Sends a message.
    /// #[tool]
    /// async fn send_message(to: String) -> String { to }
    ///
    /// let plugin = PleachPlugin::new("mail")
    ///     .batching_hints([BatchingHint::new("send_message", BatchingStrategy::Parallel)]);
    /// let runtime = Runtime::builder().plugin(plugin).build().unwrap();
    /// assert_eq!(runtime.batching_strategy("send_message"), Some(BatchingStrategy::Parallel));
    /// assert_eq!(Runtime::builder().build().unwrap().batching_strategy("send_message"), Some(BatchingStrategy::Serial));
    /// assert_eq!(runtime.batching_strategy("no_such_tool"), None);
    /// ```
    #[doc(alias = "getBatchingStrategyForTool")]
    #[doc(alias = "get_batching_strategy_for_tool")]
    pub fn batching_strategy(&self, name: &str) -> Option<BatchingStrategy> {
        let tool = self.inner.registry.get(name)?;
        Some(self.batching(tool).0)
    }

    /// Whether calls of the tool named `name` may run again when their first run's end is unknown
    /// (a durable engine's worker died mid-call): declared with [`RuntimeBuilder::idempotent`],
    /// else `true` for a tool that reads — its name starts with a read verb
    /// ([`infer_batching_strategy`]'s rule 1), whatever a hint makes of its lanes, or its batching
    /// strategy is `Parallel`. `None` for a tool the runtime does not know.
    ///
    /// ```rust
    /// use pleach_core::{tool, Runtime};
    ///
    /// /// Reads a counter.
    /// #[tool]
    /// async fn read_counter() -> u64 { 7 }
    ///
    /// let runtime = Runtime::builder().build().unwrap();
    /// assert_eq!(runtime.is_idempotent("read_counter"), Some(true));
    /// assert_eq!(runtime.is_idempotent("no_such_tool"), None);
    /// ```
    pub fn is_idempotent(&self, name: &str) -> Option<bool> {
        if let Some(declared) = self.inner.config.idempotent.get(name) {
            return Some(*declared);
        }
        let tool = self.inner.registry.get(name)?;
        Some(names_a_read(name) || self.batching(tool).0 == BatchingStrategy::Parallel)
    }

    /// [`validate_tool_call`](crate::validate_tool_call) against this runtime: its tools (the
    /// registry it was built with and its plugins' tools) and its size and nesting
    /// [`Limits`] (keyword `limits`). A valid verdict is a call a session of this
    /// runtime with the tool enabled would run.
    ///
    /// ```rust
    /// use pleach_core::{Runtime, ToolCall, ToolError, PleachPlugin, ToolDefinition};
    /// use serde_json::json;
    ///
    /// let fetch = ToolDefinition::builder("fetch_document", "Fetches a document.")
    ///     .input_schema(json!({ "type": "object", "properties": { "id": { "type": "string" } }, "required": ["id"] }))
    ///     .execute_json(|v, _| async move { Ok::<_, ToolError>(v) })
    ///     .unwrap();
    /// let runtime = Runtime::builder()
    ///     .plugin(PleachPlugin::new("docs").tools([fetch]))
    ///     .build()
    ///     .unwrap();
    /// assert!(runtime.validate_tool_call(&ToolCall::new("c1", "fetch_document", r#"{"id":"a"}"#)).valid);
    /// let verdict = runtime.validate_tool_call(&ToolCall::new("c2", "fetch_document", "{}"));
    /// assert_eq!(verdict.errors[0].keyword, "required");
    /// // The free function sees the active registry only, not a plugin's tools.
    /// assert!(!pleach_core::validate_tool_call(&ToolCall::new("c3", "fetch_document", r#"{"id":"a"}"#)).valid);
    /// ```
    pub fn validate_tool_call(&self, call: &crate::ToolCall) -> crate::ValidationResult {
        crate::session::limits::limits_verdict(call.arguments(), self.inner.config.limits)
            .unwrap_or_else(|| crate::registry::validate_in(&self.inner.registry, call))
    }

    /// The lane `call` runs in within its step: its tool's strategy and cap (a tool the runtime
    /// does not know fails at lookup and orders nothing).
    pub(crate) fn lane_of(&self, call: &crate::ToolCall) -> Lane {
        match self.inner.registry.get(call.name()) {
            Some(tool) => {
                let (strategy, cap) = self.batching(tool);
                Lane::for_call(call.name(), &strategy, cap, call.arguments())
            }
            None => Lane::Parallel { limit: None },
        }
    }

    /// A tool's strategy and per-tool cap: its hint's, else inferred without a cap (worked out
    /// when the runtime was built).
    fn batching(&self, tool: &UnifiedToolDefinition) -> (BatchingStrategy, Option<usize>) {
        match self.inner.config.lanes.get(tool.name()) {
            Some(lane) => lane.clone(),
            None => (infer_batching_strategy(tool.definition()), None),
        }
    }

    /// Creates a session with the tools `options` enables (the TypeScript spec's
    /// `createSession({ tools: { enabled: [...] } })`). An unknown name is an error listing close
    /// matches.
    ///
    /// ```rust
    /// use pleach_core::{Runtime, SessionOptions};
    /// let runtime = Runtime::builder().build().unwrap();
    /// let err = runtime.create_session(SessionOptions::enabled(["no_such_tool"])).unwrap_err();
    /// assert!(err.to_string().contains("`no_such_tool`"));
    /// ```
    pub fn create_session(&self, options: SessionOptions) -> Result<Session, SessionError> {
        let registry = &self.inner.registry;
        let enabled = options.tools.enabled;
        if let [all] = enabled.as_slice()
            && all == "*"
        {
            let tools = self
                .inner
                .all_tools
                .get_or_init(|| self.session_tools(registry.tools().to_vec()));
            return Ok(Session::new(self.inner.clone(), Arc::clone(tools)));
        }
        let mut tools = Vec::new();
        let mut unknown = Vec::new();
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
        Ok(Session::new(self.inner.clone(), self.session_tools(tools)))
    }

    /// `tools` as a session holds them: by name, once each, with their timeouts and lanes.
    fn session_tools(&self, mut tools: Vec<UnifiedToolDefinition>) -> Arc<[SessionTool]> {
        tools.sort_by(|a, b| a.name().cmp(b.name()));
        tools.dedup_by(|a, b| a.name() == b.name());
        let config = &self.inner.config;
        tools
            .into_iter()
            .map(|tool| {
                let (strategy, max_concurrency) = self.batching(&tool);
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
            .collect()
    }
}
