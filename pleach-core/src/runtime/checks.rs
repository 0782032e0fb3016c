//! What [`RuntimeBuilder::build`](super::RuntimeBuilder::build) checks and merges, and the
//! [`RuntimeError`] it fails with: configuration naming only registered tools (a near miss gets
//! "did you mean"), per-tool settings from the runtime and its plugins, detectors covering every
//! `critical` tool, and one persisted state kind per key.

use std::collections::HashMap;
use std::sync::Arc;

use crate::extensions::PersistedKind;
use crate::plugin::PleachPlugin;
use crate::registry::{RegistryError, ToolRegistry};
use crate::safety::FabricationDetector;
use crate::session::suggestion::suggestion;

/// Why a runtime could not be built.
///
/// ```rust
/// use pleach_core::{Runtime, RuntimeError, PleachPlugin};
/// use std::time::Duration;
///
/// let typo = PleachPlugin::new("ops").tool_timeout("serch_corpus", Duration::from_secs(1));
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
    ToolRegistry(#[from] RegistryError),
    /// Configuration names a tool that does not exist.
    #[error("{source_name} configures tool `{tool}`, which is not registered{suggestion}")]
    UnknownToolInConfig {
        /// The unknown name.
        tool: String,
        /// Where the configuration came from (`runtime`, `plugin <name>` or `detector <name>`).
        source_name: String,
        /// `; did you mean …?`, or empty.
        suggestion: String,
    },
    /// Two plugins (or one, twice) give one tool different batching hints: which one holds would
    /// depend on the order plugins were added.
    #[error(
        "{first} and {second} give tool `{tool}` different batching hints; keep one (or make them the same)"
    )]
    ConflictingHints {
        /// The tool.
        tool: String,
        /// The plugin whose hint came first (`plugin <name>`).
        first: String,
        /// The plugin whose hint differs.
        second: String,
    },
    /// `critical` tools that no fabrication detector covers: each could bypass its hard halt.
    #[error("{}", crate::safety::uncovered_message(.0))]
    UncoveredCriticalTools(Vec<String>),
}

/// Per-tool settings `(source, tool, value)`, each for a tool the registry has; a later one for
/// the same tool wins.
pub(super) fn per_tool<T>(
    registry: &ToolRegistry,
    settings: impl Iterator<Item = (String, String, T)>,
) -> Result<HashMap<String, T>, RuntimeError> {
    let mut chosen = HashMap::new();
    for (source, tool, value) in settings {
        require_tool(registry, &tool, || source)?;
        chosen.insert(tool, value);
    }
    Ok(chosen)
}

/// The runtime's own per-tool settings, for [`per_tool`].
pub(super) fn own<T>(settings: Vec<(String, T)>) -> impl Iterator<Item = (String, String, T)> {
    settings
        .into_iter()
        .map(|(tool, value)| ("runtime".to_owned(), tool, value))
}

/// The plugins' per-tool settings, in plugin order, for [`per_tool`].
pub(super) fn of_plugins<'a, T: Copy + 'a>(
    plugins: &'a [PleachPlugin],
    settings: fn(&PleachPlugin) -> &Vec<(String, T)>,
) -> impl Iterator<Item = (String, String, T)> + 'a {
    plugins.iter().flat_map(move |plugin| {
        let source = format!("plugin `{}`", plugin.name);
        settings(plugin)
            .iter()
            .map(move |(tool, value)| (source.clone(), tool.clone(), *value))
    })
}

/// Refuses detectors that name a tool the registry does not have (a typo would leave the real one
/// unguarded), and `critical` tools no detector covers (their halt could never fire).
pub(super) fn check_detectors(
    registry: &ToolRegistry,
    detectors: &[Arc<dyn FabricationDetector>],
) -> Result<(), RuntimeError> {
    for detector in detectors {
        for tool in detector.guarded_tools() {
            require_tool(registry, tool, || format!("detector `{}`", detector.name()))?;
        }
    }
    let uncovered = crate::safety::uncovered_critical_tools(
        registry,
        &detectors.iter().map(|d| &**d).collect::<Vec<_>>(),
    );
    if uncovered.is_empty() {
        Ok(())
    } else {
        Err(RuntimeError::UncoveredCriticalTools(uncovered))
    }
}

/// Refuses configuration for a tool the registry does not have (a typo, most likely).
pub(super) fn require_tool(
    registry: &ToolRegistry,
    tool: &str,
    source_name: impl FnOnce() -> String,
) -> Result<(), RuntimeError> {
    if registry.contains(tool) {
        return Ok(());
    }
    let names: Vec<&str> = registry.names().collect();
    Err(RuntimeError::UnknownToolInConfig {
        suggestion: suggestion(tool, &names),
        tool: tool.to_owned(),
        source_name: source_name(),
    })
}

/// One kind per key, the host's and every plugin's: the first naming a key is kept (a type named
/// twice is the same kind).
pub(super) fn persisted_kinds(
    plugins: &[PleachPlugin],
    host: &[PersistedKind],
) -> Vec<PersistedKind> {
    let mut persisted: Vec<PersistedKind> = Vec::new();
    let named = plugins
        .iter()
        .flat_map(|plugin| plugin.settings.persisted.iter())
        .chain(host);
    for kind in named {
        if !persisted.iter().any(|known| known.key() == kind.key()) {
            persisted.push(*kind);
        }
    }
    persisted
}
