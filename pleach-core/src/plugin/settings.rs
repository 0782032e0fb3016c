//! The settings a [`PleachPlugin`](super::PleachPlugin) and the
//! [`RuntimeBuilder`](crate::RuntimeBuilder) both take: per-tool timeouts and idempotency, the
//! values tools read, the session state that persists, fabrication detectors. They are held in
//! one [`SharedSettings`] and their setters are written once, in [`shared_setters!`], which both
//! types' `impl` blocks expand: one name, one doc and one merge rule for each.
//!
//! How [`RuntimeBuilder::build`](crate::RuntimeBuilder::build) merges a plugin's and the
//! builder's values is stated in each setter's doc and done in `runtime/checks.rs`.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::extensions::{Extensions, PersistedKind};
use crate::safety::FabricationDetector;

/// What [`shared_setters!`] sets, on a plugin or on the runtime builder.
#[derive(Clone, Default)]
pub(crate) struct SharedSettings {
    /// Per-tool timeouts, in the order they were set.
    pub(crate) tool_timeouts: Vec<(String, Duration)>,
    /// Per-tool idempotency declarations, in the order they were made.
    pub(crate) idempotent: Vec<(String, bool)>,
    /// The values tools read with `ToolContext::get`.
    pub(crate) extensions: Extensions,
    /// Fabrication detectors.
    pub(crate) detectors: Vec<Arc<dyn FabricationDetector>>,
    /// The session state kinds that persist.
    pub(crate) persisted: Vec<PersistedKind>,
}

impl fmt::Debug for SharedSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedSettings")
            .field("tool_timeouts", &self.tool_timeouts)
            .field("idempotent", &self.idempotent)
            .field("extensions", &self.extensions)
            .field(
                "detectors",
                &self.detectors.iter().map(|d| d.name()).collect::<Vec<_>>(),
            )
            .field("persisted", &self.persisted)
            .finish()
    }
}

/// The setters of [`SharedSettings`], expanded in the `impl` block of each type that holds one in
/// a field named `settings` (`PleachPlugin` and `RuntimeBuilder`). The examples do not define
/// `#[tool]`s: each runs once per type, and the crate's doc tests share one registry.
macro_rules! shared_setters {
    () => {
        /// Sets the timeout of the tool named `tool_name` (without one, the runtime's
        /// [`default_timeout`](crate::RuntimeBuilder::default_timeout) applies): when it passes,
        /// the call's signal fires and the call fails with 1010
        /// ([`ErrorCode::TimedOut`](crate::ErrorCode::TimedOut)).
        ///
        /// Set by a plugin and by the runtime builder, the plugin's timeout wins (a later
        /// plugin's over an earlier one's). A tool the runtime does not have is an error at
        /// [`RuntimeBuilder::build`](crate::RuntimeBuilder::build).
        ///
        /// ```
        /// use std::time::Duration;
        /// use pleach_core::{PleachPlugin, Runtime, ToolDefinition, ToolError, ToolRegistryBuilder};
        ///
        /// let fetch = ToolDefinition::builder("fetch", "Fetches.")
        ///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!(null)) })
        ///     .unwrap();
        /// let registry = || ToolRegistryBuilder::new().register(fetch.clone()).build().unwrap();
        /// let plugin = PleachPlugin::new("web").tool_timeout("fetch", Duration::from_secs(10));
        /// let runtime = Runtime::builder()
        ///     .registry(registry())
        ///     .plugin(plugin)
        ///     .tool_timeout("fetch", Duration::from_secs(30)) // the plugin's 10 s hold
        ///     .build();
        /// assert!(runtime.is_ok());
        /// // A timeout for a tool that does not exist is a configuration error.
        /// let err = Runtime::builder().registry(registry()).tool_timeout("fetc", Duration::from_secs(10)).build();
        /// assert!(err.is_err());
        /// ```
        pub fn tool_timeout(
            mut self,
            tool_name: impl Into<String>,
            timeout: ::std::time::Duration,
        ) -> Self {
            self.settings
                .tool_timeouts
                .push((tool_name.into(), timeout));
            self
        }

        /// Declares whether calls of the tool named `tool_name` may run again when their first
        /// run's end is unknown (a durable engine's worker died while running it;
        /// `docs/durable.md`). An idempotent tool's call is retried; any other's fails with 1018
        /// ([`ErrorCode::OutcomeUnknown`](crate::ErrorCode::OutcomeUnknown)) so the model
        /// decides. Without a declaration a tool is idempotent when it reads: its batching
        /// strategy is `Parallel` (a read verb in its name, or a plugin's hint;
        /// [`Runtime::is_idempotent`](crate::Runtime::is_idempotent)).
        ///
        /// Declared by a plugin and by the runtime builder, the builder's declaration wins. A
        /// tool the runtime does not have is an error at
        /// [`RuntimeBuilder::build`](crate::RuntimeBuilder::build).
        ///
        /// ```
        /// use pleach_core::{PleachPlugin, Runtime, ToolDefinition, ToolError, ToolRegistryBuilder};
        ///
        /// let tool = |name: &str| ToolDefinition::builder(name, "A tool.")
        ///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!(null)) })
        ///     .unwrap();
        /// let registry = ToolRegistryBuilder::new()
        ///     .register(tool("get_balance"))
        ///     .register(tool("charge_card"))
        ///     .register(tool("set_flag"))
        ///     .build()
        ///     .unwrap();
        /// let runtime = Runtime::builder()
        ///     .registry(registry)
        ///     .plugin(PleachPlugin::new("flags").idempotent("set_flag", false))
        ///     .idempotent("set_flag", true) // the builder's declaration wins
        ///     .build()
        ///     .unwrap();
        /// assert_eq!(runtime.is_idempotent("get_balance"), Some(true)); // a read
        /// assert_eq!(runtime.is_idempotent("charge_card"), Some(false)); // a write
        /// assert_eq!(runtime.is_idempotent("set_flag"), Some(true)); // declared
        /// ```
        pub fn idempotent(mut self, tool_name: impl Into<String>, idempotent: bool) -> Self {
            self.settings
                .idempotent
                .push((tool_name.into(), idempotent));
            self
        }

        /// Provides a value tools read with [`ToolContext::get`](crate::ToolContext::get): their
        /// configuration (a root folder, an allowlist, an HTTP client). One value per type: a
        /// second replaces the first.
        ///
        /// Provided by a plugin and by the runtime builder, the builder's value wins (the host
        /// has the last word), and a later plugin's over an earlier one's.
        ///
        /// ```
        /// # #[tokio::main(flavor = "current_thread")] async fn main() {
        /// use pleach_core::{PleachPlugin, Runtime, SessionOptions, ToolCall, ToolDefinition, ToolError};
        ///
        /// struct Currency(&'static str);
        ///
        /// let price = ToolDefinition::builder("show_price", "Shows the price's currency.")
        ///     .execute_json(|_, ctx| async move {
        ///         Ok::<_, ToolError>(serde_json::json!(ctx.get::<Currency>().map_or("USD", |c| c.0)))
        ///     })
        ///     .unwrap();
        /// let plugin = PleachPlugin::new("shop").tools([price]).provide(Currency("GBP"));
        /// let runtime = Runtime::builder()
        ///     .registry(pleach_core::ToolRegistryBuilder::new().build().unwrap())
        ///     .plugin(plugin)
        ///     .provide(Currency("EUR")) // the builder's value wins
        ///     .build()
        ///     .unwrap();
        /// let session = runtime.create_session(SessionOptions::all()).unwrap();
        /// let out = session.call(ToolCall::new("c1", "show_price", "{}")).await.outcome.unwrap();
        /// assert_eq!(out.value(), "EUR");
        /// # }
        /// ```
        pub fn provide<T: ::std::any::Any + Send + Sync>(mut self, value: T) -> Self {
            self.settings.extensions.insert(value);
            self
        }

        /// Makes the session state `T` persistent:
        /// [`Session::save_state`](crate::Session::save_state) saves it and
        /// [`Session::restore_state`](crate::Session::restore_state) restores it, so a host can
        /// keep a session's state outside the process (`pleach mcp --http --session-store` keeps
        /// the scratchpad's notes in Redis this way).
        ///
        /// The kinds a plugin and the runtime builder name all persist; a type named twice is
        /// one kind, and of two types with one [`KEY`](crate::extensions::PersistentState::KEY)
        /// the first named is kept (the plugins', in order, before the builder's).
        ///
        /// ```rust
        /// # use std::sync::Mutex;
        /// use pleach_core::extensions::PersistentState;
        /// use pleach_core::{PleachPlugin, Runtime, SessionOptions};
        ///
        /// #[derive(Default)]
        /// struct Seen(Mutex<Vec<String>>);
        /// impl PersistentState for Seen {
        ///     const KEY: &'static str = "doc_persist_state::Seen";
        ///     fn save(&self) -> serde_json::Value { self.0.lock().unwrap().clone().into() }
        ///     fn restore(&self, v: serde_json::Value) -> Result<(), String> {
        ///         *self.0.lock().unwrap() = serde_json::from_value(v).map_err(|e| e.to_string())?;
        ///         Ok(())
        ///     }
        /// }
        ///
        /// let runtime = Runtime::builder()
        ///     .registry(pleach_core::ToolRegistryBuilder::new().build().unwrap())
        ///     .plugin(PleachPlugin::new("files").persist_state::<Seen>())
        ///     .persist_state::<Seen>() // the same kind: persisted once
        ///     .build()
        ///     .unwrap();
        /// let session = runtime.create_session(SessionOptions::default()).unwrap();
        /// session.state::<Seen>().0.lock().unwrap().push("report.csv".into());
        /// assert_eq!(session.save_state()["doc_persist_state::Seen"], serde_json::json!(["report.csv"]));
        /// ```
        pub fn persist_state<T: $crate::extensions::PersistentState>(mut self) -> Self {
            self.settings
                .persisted
                .push($crate::extensions::PersistedKind::of::<T>());
            self
        }

        /// Adds a fabrication detector (see [`safety`](crate::safety)): before a call to a tool
        /// it covers runs, it inspects the arguments, and its findings route the call by the
        /// tool's safety tier (`docs/safety.md`). Call it again for more.
        ///
        /// A plugin's detectors and the runtime builder's all apply. Every `critical` tool must
        /// be covered by one, and every tool a detector guards must exist, or
        /// [`RuntimeBuilder::build`](crate::RuntimeBuilder::build) fails.
        ///
        /// ```
        /// use pleach_core::safety::ProvenanceDetector;
        /// use pleach_core::{PleachPlugin, Runtime, RuntimeError, SafetyTier, ToolDefinition, ToolError};
        /// use pleach_core::{ToolRegistryBuilder, UnifiedToolDefinition};
        ///
        /// let close = ToolDefinition::builder("close_account", "Closes an account.")
        ///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!(true)) })
        ///     .unwrap();
        /// let close = UnifiedToolDefinition::from(close).with_safety_tier(SafetyTier::Critical);
        /// let registry = || ToolRegistryBuilder::new().register(close.clone()).build().unwrap();
        ///
        /// let err = Runtime::builder().registry(registry()).build().unwrap_err();
        /// assert!(matches!(err, RuntimeError::UncoveredCriticalTools(ref tools) if tools == &["close_account"]));
        ///
        /// let guard = || ProvenanceDetector::new().guard("close_account", ["/account_id"]);
        /// assert!(Runtime::builder().registry(registry()).detector(guard()).build().is_ok());
        /// let plugin = PleachPlugin::new("accounts").detector(guard());
        /// assert!(Runtime::builder().registry(registry()).plugin(plugin).build().is_ok());
        /// ```
        pub fn detector(mut self, detector: impl $crate::safety::FabricationDetector) -> Self {
            self.settings
                .detectors
                .push(::std::sync::Arc::new(detector));
            self
        }
    };
}

pub(crate) use shared_setters;
