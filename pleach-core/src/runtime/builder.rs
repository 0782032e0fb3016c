//! [`RuntimeBuilder`] and the settings that are the runtime's alone: the registry and plugins,
//! limits, timeouts, concurrency and overload, the interrupt key, what is recorded. The settings a
//! plugin takes too (per-tool timeouts and idempotency, provided values, persisted state,
//! detectors) come from `plugin/settings.rs`, and the defaults from [`defaults`]. `build` checks
//! it all (`checks.rs`) into a [`Runtime`].

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::Runtime;
use super::checks::{
    RuntimeError, check_detectors, of_plugins, own, per_tool, persisted_kinds, require_tool,
};
use crate::batch::{
    BatchingConfig, BatchingHint, BatchingStrategy, Slots, infer_batching_strategy,
};
use crate::defaults;
use crate::extensions::Extensions;
use crate::plugin::PleachPlugin;
use crate::plugin::settings::{SharedSettings, shared_setters};
use crate::registry::{self, ToolRegistry, ToolRegistryBuilder, ToolSource};
use crate::safety::FabricationDetector;
use crate::session::shared::{Config, Limits, OverloadPolicy, RuntimeInner, Safety};

/// Builds a [`Runtime`]; see [`Runtime::builder`].
///
/// ```
/// use std::time::Duration;
/// use pleach_core::{Runtime, ToolRegistryBuilder};
///
/// let runtime = Runtime::builder()
///     .registry(ToolRegistryBuilder::new().build().unwrap())
///     .default_timeout(Duration::from_secs(30))
///     .max_concurrency(8)
///     .build()
///     .unwrap();
/// assert_eq!(runtime.registry().len(), 0);
/// ```
#[derive(Default)]
#[must_use = "a runtime builder does nothing until `build` is called"]
pub struct RuntimeBuilder {
    registry: Option<Arc<dyn ToolSource>>,
    plugins: Vec<PleachPlugin>,
    limits: Limits,
    default_timeout: Option<Duration>,
    cancel_grace: Option<Duration>,
    approval_timeout: Option<Duration>,
    max_repeated_failures: Option<u32>,
    max_concurrency: Option<usize>,
    max_in_flight: Option<usize>,
    overload: OverloadPolicy,
    settings: SharedSettings,
    interrupt_key: Option<Vec<u8>>,
    provenance_from_user: bool,
    trace_payloads: Option<usize>,
    tool_result_caps: Vec<(String, usize)>,
    #[cfg(feature = "otel")]
    meter: Option<opentelemetry::metrics::Meter>,
}

impl fmt::Debug for RuntimeBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuntimeBuilder")
            .field("registry", &self.registry.as_ref().map(|r| r.len()))
            .field("plugins", &self.plugins)
            .field("limits", &self.limits)
            .field("default_timeout", &self.default_timeout)
            .field("settings", &self.settings)
            .field("tool_result_caps", &self.tool_result_caps)
            .finish_non_exhaustive()
    }
}

impl RuntimeBuilder {
    /// Looks tools up in `registry` instead of the active registry
    /// ([`set_active_registry`](crate::set_active_registry), else
    /// [`tool_registry()`](crate::tool_registry)).
    ///
    /// ```
    /// use pleach_core::{Runtime, ToolError, ToolRegistryBuilder, ToolDefinition};
    ///
    /// let ping = ToolDefinition::builder("ping", "Answers pong.")
    ///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
    ///     .unwrap();
    /// let registry = ToolRegistryBuilder::new().register(ping).build().unwrap();
    /// let runtime = Runtime::builder().registry(registry).build().unwrap();
    /// assert_eq!(runtime.registry().names().collect::<Vec<_>>(), ["ping"]);
    /// ```
    pub fn registry(mut self, registry: impl ToolSource + 'static) -> Self {
        self.registry = Some(Arc::new(registry));
        self
    }

    /// Adds a plugin: its tools join the registry, its configuration applies.
    ///
    /// ```
    /// use pleach_core::{Runtime, ToolError, ToolRegistryBuilder, PleachPlugin, ToolDefinition};
    ///
    /// let ping = ToolDefinition::builder("ping", "Answers pong.")
    ///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
    ///     .unwrap();
    /// let runtime = Runtime::builder()
    ///     .registry(ToolRegistryBuilder::new().build().unwrap())
    ///     .plugin(PleachPlugin::new("net").tools([ping]))
    ///     .build()
    ///     .unwrap();
    /// assert!(runtime.registry().contains("ping"));
    /// ```
    pub fn plugin(mut self, plugin: PleachPlugin) -> Self {
        self.plugins.push(plugin);
        self
    }

    /// Sets the limits on a call's arguments and result (default [`Limits::default`]: the sizes
    /// in [`defaults`]).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use pleach_core::{Limits, Runtime, SessionOptions, ToolCall, ToolError, ToolRegistryBuilder, ToolDefinition};
    ///
    /// let echo = ToolDefinition::builder("echo", "Returns its arguments.")
    ///     .execute_json(|args, _| async move { Ok::<_, ToolError>(args) })
    ///     .unwrap();
    /// let mut limits = Limits::default();
    /// limits.max_argument_bytes = 16;
    /// let runtime = Runtime::builder()
    ///     .registry(ToolRegistryBuilder::new().register(echo).build().unwrap())
    ///     .limits(limits)
    ///     .build()
    ///     .unwrap();
    /// let session = runtime.create_session(SessionOptions::all()).unwrap();
    /// let result = session.call(ToolCall::new("c1", "echo", r#"{"text":"far too long"}"#)).await;
    /// assert_eq!(result.outcome.unwrap_err().code().as_u16(), 1006);
    /// # }
    /// ```
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets the largest result the tool named `tool_name` may give the model, in bytes, in place
    /// of the runtime's [`Limits::max_result_bytes`] (default 8 MiB) for it. Over the cap, text
    /// blocks are cut, with a line saying how much was dropped and to ask for less; a medium
    /// (an image, a recording, a file) fails the call with 1019
    /// ([`ErrorCode::ContentRefused`](crate::ErrorCode::ContentRefused)); a structured value
    /// fails it with 1002. A tool the runtime does not have is an error at [`build`](Self::build).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use pleach_core::{ContentBlock, Runtime, SessionOptions, ToolCall, ToolError, ToolOutput, ToolRegistryBuilder, ToolDefinition};
    ///
    /// let log = ToolDefinition::builder("read_log", "Reads the log.")
    ///     .execute_json(|_, _| async {
    ///         Ok::<_, ToolError>(ToolOutput::from_blocks([ContentBlock::text("x".repeat(1000))]))
    ///     })
    ///     .unwrap();
    /// let runtime = Runtime::builder()
    ///     .registry(ToolRegistryBuilder::new().register(log).build().unwrap())
    ///     .tool_result_cap("read_log", 100)
    ///     .build()
    ///     .unwrap();
    /// let session = runtime.create_session(SessionOptions::all()).unwrap();
    /// let out = session.call(ToolCall::new("c1", "read_log", "{}")).await.outcome.unwrap();
    /// let text = out.content[0].as_text().unwrap();
    /// assert!(text.starts_with("xxx"));
    /// assert!(text.contains("900 of 1000 bytes dropped"), "{text}");
    /// # }
    /// ```
    pub fn tool_result_cap(mut self, tool_name: impl Into<String>, bytes: usize) -> Self {
        self.tool_result_caps.push((tool_name.into(), bytes));
        self
    }

    /// Sets the timeout of every call without its own (default [`defaults::TIMEOUT`]).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
    /// use std::time::Duration;
    /// use pleach_core::{Runtime, SessionOptions, ToolCall, ToolError, ToolRegistryBuilder, ToolDefinition};
    ///
    /// let slow = ToolDefinition::builder("slow", "Takes a minute.")
    ///     .execute_json(|_, _| async {
    ///         tokio::time::sleep(Duration::from_secs(60)).await;
    ///         Ok::<_, ToolError>(serde_json::json!("done"))
    ///     })
    ///     .unwrap();
    /// let runtime = Runtime::builder()
    ///     .registry(ToolRegistryBuilder::new().register(slow).build().unwrap())
    ///     .default_timeout(Duration::from_secs(5))
    ///     .build()
    ///     .unwrap();
    /// let session = runtime.create_session(SessionOptions::all()).unwrap();
    /// let result = session.call(ToolCall::new("c1", "slow", "{}")).await;
    /// assert_eq!(result.outcome.unwrap_err().code().as_u16(), 1010);
    /// # }
    /// ```
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = Some(timeout);
        self
    }

    /// Sets how long a call may take to finish after its signal fires (cancellation or timeout)
    /// before it is dropped (default [`defaults::CANCEL_GRACE`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// use pleach_core::{Runtime, ToolRegistryBuilder};
    ///
    /// let runtime = Runtime::builder()
    ///     .registry(ToolRegistryBuilder::new().build().unwrap())
    ///     .cancel_grace(Duration::from_millis(500))
    ///     .build();
    /// assert!(runtime.is_ok());
    /// ```
    pub fn cancel_grace(mut self, grace: Duration) -> Self {
        self.cancel_grace = Some(grace);
        self
    }

    /// Sets how long a call waits for the host's decision on its approval interrupt (default
    /// [`defaults::APPROVAL_TIMEOUT`]). A call still waiting then fails with 1016
    /// ([`ErrorCode::ApprovalTimedOut`](crate::ErrorCode::ApprovalTimedOut), not recoverable) and
    /// its interrupt can no longer be resolved. The wait holds the turn (and its task) open: for
    /// decisions that take hours, [seal](crate::Session::seal) the interrupt, let the turn end, and
    /// [resume](crate::Session::resume) it when the user answers.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use std::time::Duration;
    /// use pleach_core::{ErrorCode, Runtime, SessionOptions, ToolCall, ToolError, ToolRegistryBuilder, ToolDefinition};
    /// use pleach_core::safety::ApprovalRequired;
    ///
    /// let delete = ToolDefinition::builder("delete_expense", "Deletes an expense.")
    ///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!(true)) })
    ///     .unwrap();
    /// let runtime = Runtime::builder()
    ///     .registry(ToolRegistryBuilder::new().register(delete).build().unwrap())
    ///     .detector(ApprovalRequired::tools(["delete_expense"]))
    ///     .approval_timeout(Duration::from_millis(50))
    ///     .build()
    ///     .unwrap();
    /// let session = runtime.create_session(SessionOptions::all()).unwrap();
    /// let mut turn = session.run_turn(vec![ToolCall::new("c1", "delete_expense", "{}")]);
    /// while turn.events().recv().await.is_some() {} // the interrupt comes; nobody answers it
    /// let error = turn.finish().await.remove(0).outcome.unwrap_err();
    /// assert_eq!(error.code(), ErrorCode::ApprovalTimedOut);
    /// # }
    /// ```
    pub fn approval_timeout(mut self, timeout: Duration) -> Self {
        self.approval_timeout = Some(timeout);
        self
    }

    /// Sets how many recoverable failures with the same arguments a tool may have in one user
    /// turn (default [`defaults::MAX_REPEATED_FAILURES`]); the next identical call fails with 1015.
    /// Only identical calls are counted and refused; 0 acts as 1 (a call that failed once is
    /// refused the next time).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use pleach_core::{Runtime, SessionOptions, ToolCall, ToolError, ToolRegistryBuilder, ToolDefinition};
    ///
    /// let lookup = ToolDefinition::builder("lookup", "Finds nothing.")
    ///     .execute_json(|_, _| async { Err::<serde_json::Value, _>(ToolError::failed("not found")) })
    ///     .unwrap();
    /// let runtime = Runtime::builder()
    ///     .registry(ToolRegistryBuilder::new().register(lookup).build().unwrap())
    ///     .max_repeated_failures(1)
    ///     .build()
    ///     .unwrap();
    /// let session = runtime.create_session(SessionOptions::all()).unwrap();
    /// let call = || ToolCall::new("c1", "lookup", r#"{"id":"x"}"#);
    /// assert_eq!(session.call(call()).await.outcome.unwrap_err().code().as_u16(), 1008);
    /// assert_eq!(session.call(call()).await.outcome.unwrap_err().code().as_u16(), 1015);
    /// # }
    /// ```
    pub fn max_repeated_failures(mut self, failures: u32) -> Self {
        self.max_repeated_failures = Some(failures);
        self
    }

    /// Sets how many calls of one turn run at once (default [`defaults::MAX_CONCURRENCY`]): the
    /// global cap of [`BatchingConfig`]. Each tool's calls also follow its
    /// [`BatchingStrategy`](crate::BatchingStrategy).
    ///
    /// ```
    /// use pleach_core::{Runtime, ToolRegistryBuilder};
    ///
    /// let runtime = Runtime::builder()
    ///     .registry(ToolRegistryBuilder::new().build().unwrap())
    ///     .max_concurrency(4) // at most 4 calls of one turn at once
    ///     .build();
    /// assert!(runtime.is_ok());
    /// ```
    pub fn max_concurrency(mut self, calls: usize) -> Self {
        self.max_concurrency = Some(calls.max(1));
        self
    }

    /// Caps the calls running at once across all the runtime's sessions (default
    /// [`defaults::MAX_IN_FLIGHT`]); what happens to a call beyond it is the
    /// [`OverloadPolicy`].
    ///
    /// ```
    /// use pleach_core::{OverloadPolicy, Runtime, ToolRegistryBuilder};
    ///
    /// let runtime = Runtime::builder()
    ///     .registry(ToolRegistryBuilder::new().build().unwrap())
    ///     .max_in_flight(256) // across every session of this runtime
    ///     .overload_policy(OverloadPolicy::Wait)
    ///     .build();
    /// assert!(runtime.is_ok());
    /// ```
    pub fn max_in_flight(mut self, calls: usize) -> Self {
        self.max_in_flight = Some(calls.max(1));
        self
    }

    /// Sets what a call does when the runtime is at capacity: wait for a slot (the default) or
    /// fail at once with 1014.
    ///
    /// ```
    /// use pleach_core::{OverloadPolicy, Runtime, ToolRegistryBuilder};
    ///
    /// let runtime = Runtime::builder()
    ///     .registry(ToolRegistryBuilder::new().build().unwrap())
    ///     .max_in_flight(64)
    ///     .overload_policy(OverloadPolicy::FailFast) // beyond 64 running calls: 1014 at once
    ///     .build();
    /// assert!(runtime.is_ok());
    /// ```
    pub fn overload_policy(mut self, policy: OverloadPolicy) -> Self {
        self.overload = policy;
        self
    }

    /// Records each call's arguments and result on its span (`gen_ai.tool.call.arguments`,
    /// `gen_ai.tool.call.result`), each cut to `max_bytes`. Off by default: arguments and results
    /// can hold secrets and personal data, and a trace backend is seldom the place for them
    /// (`docs/observability.md`).
    ///
    /// ```
    /// use pleach_core::{Runtime, ToolRegistryBuilder};
    /// let runtime = Runtime::builder()
    ///     .registry(ToolRegistryBuilder::new().build().unwrap())
    ///     .trace_payloads(4096)
    ///     .build();
    /// assert!(runtime.is_ok());
    /// ```
    pub fn trace_payloads(mut self, max_bytes: usize) -> Self {
        self.trace_payloads = Some(max_bytes);
        self
    }

    /// Records the tool-call metrics on `meter` (feature `otel`, `docs/observability.md`):
    /// `pleach.tool.call.duration` (seconds, per tool and outcome),
    /// `pleach.tool.calls.in_flight`, `pleach.tool.calls.refused` (backpressure, 1014) and
    /// `pleach.tool.calls.awaiting_approval`. Without a meter nothing is measured.
    ///
    /// ```
    /// use pleach_core::{Runtime, ToolRegistryBuilder};
    /// let meter = opentelemetry::global::meter("my-agent");
    /// let runtime = Runtime::builder()
    ///     .registry(ToolRegistryBuilder::new().build().unwrap())
    ///     .meter(meter)
    ///     .build();
    /// assert!(runtime.is_ok());
    /// ```
    #[cfg(feature = "otel")]
    pub fn meter(mut self, meter: opentelemetry::metrics::Meter) -> Self {
        self.meter = Some(meter);
        self
    }

    /// The key that seals pending approval interrupts ([`Session::seal`](crate::Session::seal)) and
    /// checks them on [`Session::resume`](crate::Session::resume) (default: none, and sealing
    /// fails). Keep it secret: whoever has it can forge an approval.
    ///
    /// ```
    /// use pleach_core::{Runtime, ToolRegistryBuilder};
    ///
    /// // In production, read the key from a secret store; never hard-code it.
    /// let key = std::env::var("PLEACH_INTERRUPT_KEY").unwrap_or_else(|_| "test key".into());
    /// let runtime = Runtime::builder()
    ///     .registry(ToolRegistryBuilder::new().build().unwrap())
    ///     .interrupt_key(key)
    ///     .build();
    /// assert!(runtime.is_ok());
    /// ```
    pub fn interrupt_key(mut self, key: impl Into<Vec<u8>>) -> Self {
        self.interrupt_key = Some(key.into());
        self
    }

    /// Whether the values in the user's messages count as provenance (default: no, only prior
    /// tool results do). Turn it on when users legitimately type ids and amounts themselves.
    ///
    /// ```
    /// use pleach_core::{Runtime, ToolRegistryBuilder};
    ///
    /// let runtime = Runtime::builder()
    ///     .registry(ToolRegistryBuilder::new().build().unwrap())
    ///     .provenance_includes_user_messages(true) // users type account ids themselves
    ///     .build();
    /// assert!(runtime.is_ok());
    /// ```
    pub fn provenance_includes_user_messages(mut self, include: bool) -> Self {
        self.provenance_from_user = include;
        self
    }

    shared_setters!();

    /// Checks everything and builds the runtime: tool names unique across the registry and the
    /// plugins (an error names both definition sites), configuration naming only existing tools.
    ///
    /// ```rust
    /// use pleach_core::{tool, Runtime};
    ///
    /// /// Multiplies two integers.
    /// #[tool]
    /// async fn multiply(a: i64, b: i64) -> i64 { a * b }
    ///
    /// let runtime = Runtime::builder().build().unwrap();
    /// assert!(runtime.registry().contains("multiply"));
    /// ```
    pub fn build(self) -> Result<Runtime, RuntimeError> {
        let implicit = self.registry.is_none();
        let source = Option::map_or_else(self.registry, registry::try_active_registry, Ok)?;
        let mut builder =
            ToolRegistryBuilder::new().register_all(source.tools().into_iter().cloned());
        for plugin in &self.plugins {
            builder = builder.register_all(plugin.tools.iter().cloned());
        }
        let registry = builder.build()?;
        if implicit && registry.is_empty() {
            static WARNED: std::sync::Once = std::sync::Once::new();
            WARNED.call_once(|| warn_no_tools("the runtime"));
        }

        let lanes = lanes(&registry, &self.plugins)?;

        // A plugin's timeout wins over the runtime's; the runtime's idempotency over a plugin's.
        let timeouts = per_tool(
            &registry,
            own(self.settings.tool_timeouts)
                .chain(of_plugins(&self.plugins, |p| &p.settings.tool_timeouts)),
        )?;
        let idempotent = per_tool(
            &registry,
            of_plugins(&self.plugins, |p| &p.settings.idempotent)
                .chain(own(self.settings.idempotent)),
        )?;

        let detectors: Vec<Arc<dyn FabricationDetector>> = self
            .plugins
            .iter()
            .flat_map(|plugin| plugin.settings.detectors.iter().cloned())
            .chain(self.settings.detectors)
            .collect();
        check_detectors(&registry, &detectors)?;

        let persisted = persisted_kinds(&self.plugins, &self.settings.persisted);

        let mut extensions = Extensions::new();
        for plugin in &self.plugins {
            extensions.extend(&plugin.settings.extensions);
        }
        extensions.extend(&self.settings.extensions);

        let max_in_flight = self.max_in_flight.unwrap_or(defaults::MAX_IN_FLIGHT);
        Ok(Runtime {
            inner: Arc::new(RuntimeInner {
                in_flight: Slots::new(max_in_flight),
                overload: self.overload,
                persisted,
                all_tools: std::sync::OnceLock::new(),
                extensions,
                safety: Safety {
                    detectors,
                    interrupt_key: self.interrupt_key,
                    provenance_from_user: self.provenance_from_user,
                },
                config: Config {
                    limits: self.limits,
                    default_timeout: self.default_timeout.unwrap_or(defaults::TIMEOUT),
                    tool_timeouts: timeouts,
                    result_caps: per_tool(&registry, own(self.tool_result_caps))?,
                    idempotent,
                    cancel_grace: self.cancel_grace.unwrap_or(defaults::CANCEL_GRACE),
                    approval_timeout: self.approval_timeout.unwrap_or(defaults::APPROVAL_TIMEOUT),
                    max_repeated_failures: self
                        .max_repeated_failures
                        .unwrap_or(defaults::MAX_REPEATED_FAILURES),
                    batching: BatchingConfig::new(
                        self.max_concurrency.unwrap_or(defaults::MAX_CONCURRENCY),
                    ),
                    lanes,
                    recording: crate::session::telemetry::Recording {
                        trace_payloads: self.trace_payloads,
                        #[cfg(feature = "otel")]
                        metrics: self
                            .meter
                            .as_ref()
                            .map(crate::session::metrics::Instruments::new),
                    },
                },
                // Last: `config` reads it first.
                registry,
            }),
        })
    }
}

/// Says that `what` has no tools, and why that usually happens: through `tracing` when a
/// subscriber is installed, else on stderr (a newcomer has none, and would see nothing).
#[doc(hidden)] // Not API: for pleach-mcp (ARCHITECTURE.md, "Seams").
pub fn warn_no_tools(what: &str) {
    let message = format!(
        "pleach: {what} has no tools: no `#[tool]` fn is linked into this binary. Tools defined \
         in a library crate join a binary only if it refers to them: give that crate a \
         `pub fn link() {{ pleach_core::link_tools!(tool_a, tool_b) }}` and call it from `main` \
         (for pleach's catalog, `pleach_tools::link()`); see the README, \"Tools in your own \
         crates\""
    );
    if tracing::dispatcher::has_been_set() {
        tracing::warn!("{message}");
    } else {
        eprintln!("{message}");
    }
}

/// Every tool's batching strategy and per-tool cap: the hint a plugin gave it (two plugins that
/// disagree are an error), else the one inferred from its definition.
fn lanes(
    registry: &ToolRegistry,
    plugins: &[PleachPlugin],
) -> Result<HashMap<String, (BatchingStrategy, Option<usize>)>, RuntimeError> {
    // Each tool's hint, with the plugin it came from.
    let mut hinted: HashMap<String, (BatchingHint, String)> = HashMap::new();
    for plugin in plugins {
        let source = format!("plugin `{}`", plugin.name);
        for hint in &plugin.batching_hints {
            require_tool(registry, &hint.tool_name, || source.clone())?;
            match hinted.get(&hint.tool_name) {
                Some((known, first)) if known != hint => {
                    return Err(RuntimeError::ConflictingHints {
                        tool: hint.tool_name.clone(),
                        first: first.clone(),
                        second: source,
                    });
                }
                Some(_) => {}
                None => {
                    hinted.insert(hint.tool_name.clone(), (hint.clone(), source.clone()));
                }
            }
        }
    }
    let lanes = registry
        .tools()
        .iter()
        .map(|tool| {
            let lane = match hinted.remove(tool.name()) {
                Some((hint, _)) => (hint.strategy, hint.max_concurrency),
                None => (infer_batching_strategy(tool.definition()), None),
            };
            (tool.name().to_owned(), lane)
        })
        .collect();
    Ok(lanes)
}
