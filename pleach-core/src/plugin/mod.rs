//! Plugins: the standard way to wire tools and their configuration into a runtime
//! ([`PleachPlugin::new`]). A plugin takes what the [`RuntimeBuilder`](crate::RuntimeBuilder)
//! takes for its tools (timeouts, idempotency, provided values, persisted state, detectors:
//! `settings.rs`, written once for both) and adds its own tools and batching hints.
//!
//! | file | owns |
//! | --- | --- |
//! | `mod.rs` | [`PleachPlugin`]: its name, tools and batching hints |
//! | `settings.rs` | the settings a plugin and the runtime builder both take, and their setters |
//!
//! ```
//! use std::time::Duration;
//! use pleach_core::{PleachPlugin, Runtime, ToolDefinition, ToolError, ToolRegistryBuilder};
//!
//! let fetch = ToolDefinition::builder("fetch_page", "Fetches a page.")
//!     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("<html>")) })
//!     .unwrap();
//! let plugin = PleachPlugin::new("web")
//!     .tools([fetch])
//!     .tool_timeout("fetch_page", Duration::from_secs(10));
//! let runtime = Runtime::builder()
//!     .registry(ToolRegistryBuilder::new().build().unwrap())
//!     .plugin(plugin)
//!     .build()
//!     .unwrap();
//! assert!(runtime.registry().contains("fetch_page"));
//! ```

pub(crate) mod settings;

use crate::batch::BatchingHint;
use crate::tool::UnifiedToolDefinition;
use settings::{SharedSettings, shared_setters};

/// A bundle of tools and configuration a host (or a library) contributes to a
/// [`Runtime`](crate::Runtime): the Rust form of the TypeScript spec's `definePleachPlugin`.
///
/// - [`tools`](PleachPlugin::tools): tools to register (besides the runtime's registry); a name
///   clash with another tool is an error at
///   [`RuntimeBuilder::build`](crate::RuntimeBuilder::build) naming both definition sites.
/// - [`batching_hints`](PleachPlugin::batching_hints): overrides of the inferred batching
///   strategies.
/// - [`tool_timeout`](PleachPlugin::tool_timeout), [`idempotent`](PleachPlugin::idempotent),
///   [`provide`](PleachPlugin::provide), [`persist_state`](PleachPlugin::persist_state),
///   [`detector`](PleachPlugin::detector): the settings the runtime builder takes too, each doc
///   saying whose value wins when both set one.
///
/// ```rust
/// use std::time::Duration;
/// use pleach_core::{PleachPlugin, Runtime, ToolDefinition, ToolError};
///
/// let lookup = ToolDefinition::builder("lookup_order", "Finds an order by id.")
///     .execute_json(|input, _| async move { Ok::<_, ToolError>(input) })
///     .unwrap();
/// let plugin = PleachPlugin::new("orders")
///     .tools([lookup])
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
    pub(crate) batching_hints: Vec<BatchingHint>,
    pub(crate) settings: SharedSettings,
}

impl PleachPlugin {
    /// Starts a plugin named `name` (the name appears in configuration errors): the TypeScript
    /// spec's `definePleachPlugin`.
    ///
    /// ```
    /// let plugin = pleach_core::PleachPlugin::new("empty");
    /// assert_eq!(plugin.name(), "empty");
    /// ```
    #[doc(alias = "definePleachPlugin")]
    #[doc(alias = "define_pleach_plugin")]
    pub fn new(name: impl Into<String>) -> PleachPlugin {
        PleachPlugin {
            name: name.into(),
            tools: Vec::new(),
            batching_hints: Vec::new(),
            settings: SharedSettings::default(),
        }
    }

    /// The plugin's name.
    ///
    /// ```
    /// assert_eq!(pleach_core::PleachPlugin::new("web").name(), "web");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Contributes tools (basic or registry-level definitions): the TypeScript spec's
    /// `contributeTools`. Call it again for more.
    ///
    /// ```
    /// use pleach_core::{PleachPlugin, ToolDefinition, ToolError};
    /// let ping = ToolDefinition::builder("ping", "Answers pong.")
    ///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
    ///     .unwrap();
    /// let plugin = PleachPlugin::new("net").tools([ping]);
    /// # let _ = plugin;
    /// ```
    #[doc(alias = "contributeTools")]
    #[doc(alias = "contribute_tools")]
    pub fn tools<T: Into<UnifiedToolDefinition>>(
        mut self,
        tools: impl IntoIterator<Item = T>,
    ) -> Self {
        self.tools.extend(tools.into_iter().map(Into::into));
        self
    }

    /// Overrides inferred batching strategies, keyed by tool name: the TypeScript spec's
    /// `contributeBatchingHints`. Call it again for more. A hint for a tool the runtime does not
    /// have is an error at build, and so are two plugins' different hints for one tool.
    ///
    /// ```
    /// use pleach_core::{PleachPlugin, BatchingHint, BatchingStrategy};
    /// let plugin = PleachPlugin::new("docs").batching_hints([
    ///     BatchingHint::new("fetch_document", BatchingStrategy::Parallel).max_concurrency(5),
    /// ]);
    /// # let _ = plugin;
    /// ```
    #[doc(alias = "contributeBatchingHints")]
    #[doc(alias = "contribute_batching_hints")]
    pub fn batching_hints(mut self, hints: impl IntoIterator<Item = BatchingHint>) -> Self {
        self.batching_hints.extend(hints);
        self
    }

    shared_setters!();
}

impl std::fmt::Debug for PleachPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PleachPlugin")
            .field("name", &self.name)
            .field("tools", &self.tools)
            .field("batching_hints", &self.batching_hints)
            .field("settings", &self.settings)
            .finish()
    }
}
