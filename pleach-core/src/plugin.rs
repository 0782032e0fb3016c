//! Plugins: the standard way to wire tools and their configuration into a runtime
//! ([`define_pleach_plugin`]).
//!
//! ```
//! use std::time::Duration;
//! use pleach_core::{define_pleach_plugin, define_tool, Runtime, ToolError, ToolRegistryBuilder};
//!
//! let fetch = define_tool("fetch_page", "Fetches a page.")
//!     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("<html>")) })
//!     .unwrap();
//! let plugin = define_pleach_plugin("web")
//!     .contribute_tools([fetch])
//!     .tool_timeout("fetch_page", Duration::from_secs(10));
//! let runtime = Runtime::builder()
//!     .registry(ToolRegistryBuilder::new().build().unwrap())
//!     .plugin(plugin)
//!     .build()
//!     .unwrap();
//! assert!(runtime.registry().contains("fetch_page"));
//! ```

use std::time::Duration;

use crate::batch::BatchingHint;
use crate::extensions::Extensions;
use crate::safety::FabricationDetector;
use crate::tool::UnifiedToolDefinition;
use std::sync::Arc;

/// A bundle of tools and configuration a host (or a library) contributes to a
/// [`Runtime`](crate::Runtime): the Rust form of the TypeScript spec's `definePleachPlugin`.
///
/// - `contribute_tools`: tools to register (besides the runtime's registry); a name clash with
///   another tool is an error at [`RuntimeBuilder::build`](crate::RuntimeBuilder::build) naming
///   both definition sites.
/// - `tool_timeout`: a per-tool timeout, keyed by tool name (timeouts are runtime configuration,
///   not a field of the tool).
///
/// ```rust
/// use std::time::Duration;
/// use pleach_core::{define_pleach_plugin, define_tool, Runtime, ToolError};
///
/// let lookup = define_tool("lookup_order", "Finds an order by id.")
///     .execute_json(|input, _| async move { Ok::<_, ToolError>(input) })
///     .unwrap();
/// let plugin = define_pleach_plugin("orders")
///     .contribute_tools([lookup])
///     .tool_timeout("lookup_order", Duration::from_secs(5));
///
/// let runtime = Runtime::builder().plugin(plugin).build().unwrap();
/// assert!(runtime.registry().contains("lookup_order"));
/// ```
#[derive(Clone)]
#[must_use]
pub struct PleachPlugin {
    pub(crate) name: String,
    pub(crate) tools: Vec<UnifiedToolDefinition>,
    pub(crate) tool_timeouts: Vec<(String, Duration)>,
    pub(crate) idempotent: Vec<(String, bool)>,
    pub(crate) batching_hints: Vec<BatchingHint>,
    pub(crate) extensions: Extensions,
    pub(crate) detectors: Vec<Arc<dyn FabricationDetector>>,
    pub(crate) persisted: Vec<crate::extensions::PersistedKind>,
}

/// Starts a plugin named `name` (the name appears in configuration errors).
///
/// ```
/// let plugin = pleach_core::define_pleach_plugin("empty");
/// assert_eq!(plugin.name(), "empty");
/// ```
pub fn define_pleach_plugin(name: impl Into<String>) -> PleachPlugin {
    PleachPlugin {
        name: name.into(),
        tools: Vec::new(),
        tool_timeouts: Vec::new(),
        idempotent: Vec::new(),
        batching_hints: Vec::new(),
        extensions: Extensions::new(),
        detectors: Vec::new(),
        persisted: Vec::new(),
    }
}

impl PleachPlugin {
    /// The plugin's name.
    ///
    /// ```
    /// assert_eq!(pleach_core::define_pleach_plugin("web").name(), "web");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Contributes tools (basic or registry-level definitions).
    ///
    /// ```
    /// use pleach_core::{define_pleach_plugin, define_tool, ToolError};
    /// let ping = define_tool("ping", "Answers pong.")
    ///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
    ///     .unwrap();
    /// let plugin = define_pleach_plugin("net").contribute_tools([ping]);
    /// # let _ = plugin;
    /// ```
    pub fn contribute_tools<T: Into<UnifiedToolDefinition>>(
        mut self,
        tools: impl IntoIterator<Item = T>,
    ) -> Self {
        self.tools.extend(tools.into_iter().map(Into::into));
        self
    }

    /// Overrides inferred batching strategies, keyed by tool name: the TypeScript spec's
    /// `contributeBatchingHints` hook. A hint for a tool the runtime does not have is an error at
    /// build.
    ///
    /// ```
    /// use pleach_core::{define_pleach_plugin, BatchingHint, BatchingStrategy};
    /// let plugin = define_pleach_plugin("docs").contribute_batching_hints([
    ///     BatchingHint::new("fetch_document", BatchingStrategy::Parallel).max_concurrency(5),
    /// ]);
    /// # let _ = plugin;
    /// ```
    pub fn contribute_batching_hints(
        mut self,
        hints: impl IntoIterator<Item = BatchingHint>,
    ) -> Self {
        self.batching_hints.extend(hints);
        self
    }

    /// Sets the timeout of the tool named `tool_name`: when it passes, the call's signal fires and
    /// the call fails with code 1010.
    ///
    /// ```
    /// use std::time::Duration;
    /// let plugin = pleach_core::define_pleach_plugin("web").tool_timeout("fetch_page", Duration::from_secs(10));
    /// # let _ = plugin;
    /// ```
    pub fn tool_timeout(mut self, tool_name: impl Into<String>, timeout: Duration) -> Self {
        self.tool_timeouts.push((tool_name.into(), timeout));
        self
    }

    /// Declares whether calls of the tool named `tool_name` may run again when their first run's
    /// end is unknown (a durable engine's worker died mid-call); the runtime's own
    /// [`RuntimeBuilder::idempotent`](crate::RuntimeBuilder::idempotent) wins over it.
    ///
    /// ```
    /// let plugin = pleach_core::define_pleach_plugin("kv").idempotent("put_value", true);
    /// # let _ = plugin;
    /// ```
    pub fn idempotent(mut self, tool_name: impl Into<String>, idempotent: bool) -> Self {
        self.idempotent.push((tool_name.into(), idempotent));
        self
    }

    /// Provides a value its tools read with [`ToolContext::get`](crate::ToolContext::get): their
    /// configuration (a root folder, an allowlist). A value of the same type given to
    /// [`RuntimeBuilder::provide`](crate::RuntimeBuilder::provide) wins over the plugin's, so the
    /// host has the last word.
    ///
    /// ```
    /// struct Endpoint(&'static str);
    /// let plugin = pleach_core::define_pleach_plugin("weather").provide(Endpoint("https://example.test"));
    /// # let _ = plugin;
    /// # let _ = Endpoint("").0;
    /// ```
    pub fn provide<T: std::any::Any + Send + Sync>(mut self, value: T) -> Self {
        self.extensions.insert(value);
        self
    }

    /// Makes the session state `T` of its tools persistent, as
    /// [`RuntimeBuilder::persist_state`](crate::RuntimeBuilder::persist_state) does.
    ///
    /// ```
    /// # use std::sync::Mutex;
    /// # #[derive(Default)] struct Cart(Mutex<Vec<String>>);
    /// # impl pleach_core::extensions::PersistentState for Cart {
    /// #     const KEY: &'static str = "doc_plugin::Cart";
    /// #     fn save(&self) -> serde_json::Value { self.0.lock().unwrap().clone().into() }
    /// #     fn restore(&self, v: serde_json::Value) -> Result<(), String> {
    /// #         *self.0.lock().unwrap() = serde_json::from_value(v).map_err(|e| e.to_string())?; Ok(()) }
    /// # }
    /// let plugin = pleach_core::define_pleach_plugin("shop").persist_state::<Cart>();
    /// # let _ = plugin;
    /// ```
    pub fn persist_state<T: crate::extensions::PersistentState>(mut self) -> Self {
        self.persisted
            .push(crate::extensions::PersistedKind::of::<T>());
        self
    }

    /// Contributes a fabrication detector: before a call to a tool it covers runs, it inspects the
    /// arguments, and its findings route the call by the tool's safety tier (`docs/safety.md`).
    ///
    /// ```
    /// use pleach_core::{define_pleach_plugin, safety::ProvenanceDetector};
    /// let plugin = define_pleach_plugin("payments")
    ///     .contribute_detectors([ProvenanceDetector::new().guard("transfer_funds", ["/to_account"])]);
    /// # let _ = plugin;
    /// ```
    pub fn contribute_detectors<D: FabricationDetector>(
        mut self,
        detectors: impl IntoIterator<Item = D>,
    ) -> Self {
        self.detectors.extend(
            detectors
                .into_iter()
                .map(|d| Arc::new(d) as Arc<dyn FabricationDetector>),
        );
        self
    }
}

impl std::fmt::Debug for PleachPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PleachPlugin")
            .field("name", &self.name)
            .field("tools", &self.tools)
            .field("tool_timeouts", &self.tool_timeouts)
            .field("idempotent", &self.idempotent)
            .field("batching_hints", &self.batching_hints)
            .field("extensions", &self.extensions)
            .field(
                "detectors",
                &self.detectors.iter().map(|d| d.name()).collect::<Vec<_>>(),
            )
            .field("persisted", &self.persisted)
            .finish()
    }
}
