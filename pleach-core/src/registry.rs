//! The tool registry: the compile-time slice every `#[tool]` lands in, [`tool_registry()`] built
//! from it once, explicit registration with [`ToolRegistryBuilder`], the [`ToolRegistry`] trait
//! both implement, and the spec's [`set_orchestrator_registry`] shim.
//!
//! ```
//! use pleach_core::{define_tool, ToolError, ToolRegistryBuilder};
//!
//! let ping = define_tool("ping", "Answers pong.")
//!     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
//!     .unwrap();
//! let registry = ToolRegistryBuilder::new().register(ping).build().unwrap();
//! assert!(registry.has("ping"));
//! // Every `#[tool]` linked into the binary, with no list to maintain:
//! let _everything = pleach_core::tool_registry();
//! ```

use std::fmt;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use crate::tool::{DefinitionError, DefinitionSite, ToolDefinition, UnifiedToolDefinition};

/// What the runtime looks tools up in: the Rust form of the spec's orchestrator registry
/// (`getToolDefinitions`, `get`, `has`, `size`).
///
/// [`Registry`] implements it (the compile-time one from [`tool_registry()`] and the ones from
/// [`ToolRegistryBuilder`]); a host mid-migration can implement it over its own storage and install
/// it with [`set_orchestrator_registry`].
///
/// ```
/// use pleach_core::{ToolRegistry, UnifiedToolDefinition};
///
/// /// The spec's shim: a list of tools, searched by name.
/// struct ListRegistry(Vec<UnifiedToolDefinition>);
///
/// impl ToolRegistry for ListRegistry {
///     fn get_tool_definitions(&self) -> Vec<&UnifiedToolDefinition> {
///         self.0.iter().collect()
///     }
///     fn get(&self, name: &str) -> Option<&UnifiedToolDefinition> {
///         self.0.iter().find(|t| t.name() == name)
///     }
///     fn size(&self) -> usize {
///         self.0.len()
///     }
/// }
///
/// let empty = ListRegistry(Vec::new());
/// assert!(!empty.has("search_corpus"));
/// assert_eq!(empty.size(), 0);
/// ```
pub trait ToolRegistry: Send + Sync {
    /// Every tool, sorted by name for the registries pleach builds.
    ///
    /// ```
    /// use pleach_core::ToolRegistry;
    /// let registry: &dyn ToolRegistry = pleach_core::tool_registry();
    /// let names: Vec<&str> = registry.get_tool_definitions().iter().map(|t| t.name()).collect();
    /// assert!(names.windows(2).all(|pair| pair[0] < pair[1])); // sorted, one per name
    /// ```
    fn get_tool_definitions(&self) -> Vec<&UnifiedToolDefinition>;

    /// The tool named `name`.
    ///
    /// ```
    /// use pleach_core::ToolRegistry;
    /// let registry: &dyn ToolRegistry = pleach_core::tool_registry();
    /// assert!(registry.get("no_such_tool").is_none());
    /// ```
    fn get(&self, name: &str) -> Option<&UnifiedToolDefinition>;

    /// Whether a tool named `name` exists.
    ///
    /// ```
    /// use pleach_core::ToolRegistry;
    /// let registry: &dyn ToolRegistry = pleach_core::tool_registry();
    /// assert!(!registry.has("no_such_tool"));
    /// ```
    fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// How many tools there are.
    ///
    /// ```
    /// use pleach_core::{ToolRegistry, ToolRegistryBuilder};
    /// let registry: &dyn ToolRegistry = &ToolRegistryBuilder::new().build().unwrap();
    /// assert_eq!(registry.size(), 0);
    /// ```
    fn size(&self) -> usize;
}

/// A checked set of tools with unique names, sorted by name.
///
/// ```
/// use pleach_core::{define_tool, ToolError, ToolRegistryBuilder};
///
/// let ping = define_tool("ping", "Answers pong.")
///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
///     .unwrap();
/// let registry = ToolRegistryBuilder::new().register(ping).build().unwrap();
/// assert!(registry.has("ping"));
/// assert_eq!(registry.names().collect::<Vec<_>>(), ["ping"]);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Registry {
    tools: Vec<UnifiedToolDefinition>,
}

impl Registry {
    /// The tool named `name` (also [`ToolRegistry::get`]; inherent so no import is needed).
    ///
    /// ```
    /// assert!(pleach_core::tool_registry().get("no_such_tool").is_none());
    /// ```
    pub fn get(&self, name: &str) -> Option<&UnifiedToolDefinition> {
        self.tools
            .binary_search_by(|tool| tool.name().cmp(name))
            .ok()
            .map(|index| &self.tools[index])
    }

    /// Whether a tool named `name` exists.
    ///
    /// ```
    /// assert!(!pleach_core::tool_registry().has("no_such_tool"));
    /// ```
    pub fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// How many tools there are.
    ///
    /// ```
    /// assert_eq!(pleach_core::ToolRegistryBuilder::new().build().unwrap().size(), 0);
    /// ```
    pub fn size(&self) -> usize {
        self.tools.len()
    }

    /// The tools' names, sorted.
    ///
    /// ```
    /// use pleach_core::{define_tool, ToolError, ToolRegistryBuilder};
    /// let tool = |name: &str| define_tool(name, "A tool.")
    ///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!(null)) })
    ///     .unwrap();
    /// let registry = ToolRegistryBuilder::new().register(tool("b")).register(tool("a")).build().unwrap();
    /// assert_eq!(registry.names().collect::<Vec<_>>(), ["a", "b"]);
    /// ```
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(UnifiedToolDefinition::name)
    }

    /// The tools, sorted by name.
    ///
    /// ```
    /// for tool in pleach_core::tool_registry().tools() {
    ///     println!("{} ({}): {}", tool.name(), tool.category(), tool.definition().description());
    /// }
    /// ```
    pub fn tools(&self) -> &[UnifiedToolDefinition] {
        &self.tools
    }

    /// The basic definition of the tool named `name`.
    ///
    /// ```
    /// use pleach_core::{define_tool, ToolError, ToolRegistryBuilder};
    /// let ping = define_tool("ping", "Answers pong.")
    ///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
    ///     .unwrap();
    /// let registry = ToolRegistryBuilder::new().register(ping).build().unwrap();
    /// assert_eq!(registry.definition("ping").map(|d| d.description()), Some("Answers pong."));
    /// ```
    pub fn definition(&self, name: &str) -> Option<&ToolDefinition> {
        self.get(name).map(UnifiedToolDefinition::definition)
    }

    /// Sorts `tools` and keeps one per name; every other tool of a taken name is a problem naming
    /// both sites. Sorting by (name, site) makes the kept one the same on every run.
    fn from_tools(
        mut tools: Vec<UnifiedToolDefinition>,
        problems: &mut Vec<RegistryProblem>,
    ) -> Self {
        tools.sort_by(|a, b| {
            a.name()
                .cmp(b.name())
                .then_with(|| a.definition().site().cmp(b.definition().site()))
        });
        let mut kept: Vec<UnifiedToolDefinition> = Vec::with_capacity(tools.len());
        for tool in tools {
            match kept.last() {
                Some(previous) if previous.name() == tool.name() => {
                    problems.push(RegistryProblem::DuplicateName {
                        name: tool.name().to_owned(),
                        first: previous.definition().site().clone(),
                        second: tool.definition().site().clone(),
                    });
                }
                _ => kept.push(tool),
            }
        }
        Registry { tools: kept }
    }
}

impl ToolRegistry for Registry {
    fn get_tool_definitions(&self) -> Vec<&UnifiedToolDefinition> {
        self.tools.iter().collect()
    }

    fn get(&self, name: &str) -> Option<&UnifiedToolDefinition> {
        Registry::get(self, name)
    }

    fn has(&self, name: &str) -> bool {
        Registry::has(self, name)
    }

    fn size(&self) -> usize {
        Registry::size(self)
    }
}

/// Builds a [`Registry`] by hand: for plugins, configuration, and tests. Names must be unique;
/// a second tool with a taken name is an error naming both definition sites, never an overwrite.
///
/// ```
/// use pleach_core::{define_tool, ToolError, ToolRegistryBuilder};
///
/// let make = || define_tool("ping", "Answers pong.")
///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
///     .unwrap();
/// let err = ToolRegistryBuilder::new().register(make()).register(make()).build().unwrap_err();
/// assert!(err.to_string().starts_with("tool name `ping` is defined twice"), "{err}");
/// ```
#[derive(Debug, Default)]
#[must_use = "a registry builder does nothing until `build` is called"]
pub struct ToolRegistryBuilder {
    tools: Vec<UnifiedToolDefinition>,
}

impl ToolRegistryBuilder {
    /// An empty builder.
    ///
    /// ```
    /// let registry = pleach_core::ToolRegistryBuilder::new().build().unwrap();
    /// assert_eq!(registry.size(), 0);
    /// ```
    pub fn new() -> Self {
        ToolRegistryBuilder::default()
    }

    /// Adds a tool (a [`ToolDefinition`] or a [`UnifiedToolDefinition`]).
    ///
    /// ```
    /// use pleach_core::{create_unified_tool, define_tool, ToolError, ToolRegistryBuilder};
    /// let tool = |name: &str| define_tool(name, "A tool.")
    ///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!(null)) })
    ///     .unwrap();
    /// let registry = ToolRegistryBuilder::new()
    ///     .register(tool("basic"))
    ///     .register(create_unified_tool(tool("unified")).with_category("demo"))
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(registry.size(), 2);
    /// ```
    pub fn register(mut self, tool: impl Into<UnifiedToolDefinition>) -> Self {
        self.tools.push(tool.into());
        self
    }

    /// Adds every tool of `tools`.
    ///
    /// ```
    /// use pleach_core::ToolRegistryBuilder;
    /// let registry = ToolRegistryBuilder::new()
    ///     .register_all(pleach_core::tool_registry().tools().iter().cloned())
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(registry.size(), pleach_core::tool_registry().size());
    /// ```
    pub fn register_all<T: Into<UnifiedToolDefinition>>(
        mut self,
        tools: impl IntoIterator<Item = T>,
    ) -> Self {
        self.tools.extend(tools.into_iter().map(Into::into));
        self
    }

    /// Checks the names and builds the registry.
    ///
    /// ```
    /// use pleach_core::{define_tool, ToolError, ToolRegistryBuilder};
    /// let ping = || define_tool("ping", "Answers pong.")
    ///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
    ///     .unwrap();
    /// assert!(ToolRegistryBuilder::new().register(ping()).build().is_ok());
    /// assert!(ToolRegistryBuilder::new().register(ping()).register(ping()).build().is_err());
    /// ```
    pub fn build(self) -> Result<Registry, RegistryError> {
        let mut problems = Vec::new();
        let registry = Registry::from_tools(self.tools, &mut problems);
        RegistryError::check(problems).map(|()| registry)
    }
}

/// Why a registry could not be built. Lists every problem, not just the first.
///
/// ```
/// use pleach_core::{DefinitionSite, RegistryError, RegistryProblem};
/// let err = RegistryError::from(vec![RegistryProblem::DuplicateName {
///     name: "search".into(),
///     first: DefinitionSite::new("a/src/lib.rs", 3, 1),
///     second: DefinitionSite::new("b/src/lib.rs", 9, 1),
/// }]);
/// assert_eq!(
///     err.to_string(),
///     "tool name `search` is defined twice: at a/src/lib.rs:3:1 and at b/src/lib.rs:9:1; rename one of them"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct RegistryError {
    problems: Vec<RegistryProblem>,
}

impl RegistryError {
    fn check(problems: Vec<RegistryProblem>) -> Result<(), RegistryError> {
        if problems.is_empty() {
            Ok(())
        } else {
            Err(RegistryError { problems })
        }
    }

    /// Every problem found.
    ///
    /// ```
    /// use pleach_core::{define_tool, RegistryProblem, ToolError, ToolRegistryBuilder};
    /// let ping = || define_tool("ping", "Answers pong.")
    ///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
    ///     .unwrap();
    /// let err = ToolRegistryBuilder::new().register(ping()).register(ping()).build().unwrap_err();
    /// assert!(matches!(&err.problems()[0], RegistryProblem::DuplicateName { name, .. } if name == "ping"));
    /// ```
    pub fn problems(&self) -> &[RegistryProblem] {
        &self.problems
    }
}

impl From<Vec<RegistryProblem>> for RegistryError {
    fn from(problems: Vec<RegistryProblem>) -> Self {
        RegistryError { problems }
    }
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, problem) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

/// One problem of a registry.
///
/// ```
/// use pleach_core::{DefinitionSite, RegistryProblem};
/// let problem = RegistryProblem::DuplicateName {
///     name: "search".into(),
///     first: DefinitionSite::new("a.rs", 1, 1),
///     second: DefinitionSite::new("b.rs", 2, 1),
/// };
/// assert!(problem.to_string().contains("rename one of them"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryProblem {
    /// Two tools share a name.
    #[error("tool name `{name}` is defined twice: at {first} and at {second}; rename one of them")]
    DuplicateName {
        /// The shared name.
        name: String,
        /// The definition kept in [`tool_registry()`] (the first by file and line).
        first: DefinitionSite,
        /// The other definition.
        second: DefinitionSite,
    },
    /// A `#[tool]` whose definition could not be built.
    #[error(transparent)]
    Definition(#[from] DefinitionError),
}

/// One `#[tool]` / `#[unified_tool]` in the compile-time slice. Built by the macros; not API.
#[doc(hidden)]
#[derive(Debug)]
pub struct ToolEntry {
    /// The tool's name.
    pub name: &'static str,
    /// Builds the definition (schemas generated, validators compiled).
    pub build: fn() -> Result<UnifiedToolDefinition, DefinitionError>,
}

#[allow(unsafe_code)] // linkme places the slice in a link section; no unsafe code of ours.
mod slice {
    use super::ToolEntry;

    /// Every tool the macros registered, in no particular order.
    #[linkme::distributed_slice]
    pub static TOOLS: [ToolEntry];
}

#[doc(hidden)]
pub use slice::TOOLS;

struct Compiled {
    registry: Arc<Registry>,
    error: Option<RegistryError>,
}

fn compiled() -> &'static Compiled {
    static COMPILED: OnceLock<Compiled> = OnceLock::new();
    COMPILED.get_or_init(|| {
        let mut problems = Vec::new();
        let mut tools = Vec::with_capacity(TOOLS.len());
        for entry in TOOLS {
            match (entry.build)() {
                Ok(tool) => tools.push(tool),
                Err(error) => problems.push(RegistryProblem::Definition(error)),
            }
        }
        let registry = Registry::from_tools(tools, &mut problems);
        let error = RegistryError::check(problems).err();
        if let Some(error) = &error {
            tracing::error!(%error, "the compile-time tool registry has problems");
        }
        Compiled {
            registry: Arc::new(registry),
            error,
        }
    })
}

/// The registry of every `#[tool]` and `#[unified_tool]` linked into this binary, built on first
/// use: sorted by name, schemas generated and validators compiled once.
///
/// If two tools share a name, the one first by file and line is kept and the problem is reported
/// by [`try_tool_registry`] (and by the runtime's construction, which refuses to start): use that
/// where a silent choice is not acceptable.
///
/// ```
/// use pleach_core::tool;
///
/// /// Adds two integers.
/// #[tool]
/// async fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
///
/// assert!(pleach_core::tool_registry().has("add"));
/// ```
pub fn tool_registry() -> &'static Registry {
    &compiled().registry
}

/// [`tool_registry()`], or every problem it has (duplicate names with both sites, tools whose
/// definition failed).
///
/// ```rust,standalone_crate
/// let registry = pleach_core::try_tool_registry().expect("tool names are unique");
/// # let _ = registry;
/// ```
pub fn try_tool_registry() -> Result<&'static Registry, &'static RegistryError> {
    let compiled = compiled();
    match &compiled.error {
        None => Ok(&compiled.registry),
        Some(error) => Err(error),
    }
}

static ACTIVE: RwLock<Option<Arc<dyn ToolRegistry>>> = RwLock::new(None);

/// Installs `registry` as the active registry, in place of [`tool_registry()`]: the spec's
/// `setOrchestratorRegistry` shim for hosts mid-migration. [`validate_tool_call`](crate::validate_tool_call)
/// and the runtime's default look tools up in the active registry.
///
/// ```
/// use pleach_core::{active_registry, define_tool, set_orchestrator_registry, ToolError, ToolRegistryBuilder};
///
/// let ping = define_tool("ping", "Answers pong.")
///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
///     .unwrap();
/// set_orchestrator_registry(ToolRegistryBuilder::new().register(ping).build().unwrap());
/// assert!(active_registry().has("ping"));
/// pleach_core::clear_orchestrator_registry();
/// ```
pub fn set_orchestrator_registry(registry: impl ToolRegistry + 'static) {
    *ACTIVE.write().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(registry));
}

/// Removes the registry installed by [`set_orchestrator_registry`]; [`tool_registry()`] is active
/// again.
///
/// ```
/// pleach_core::clear_orchestrator_registry();
/// assert_eq!(pleach_core::active_registry().size(), pleach_core::tool_registry().size());
/// ```
pub fn clear_orchestrator_registry() {
    *ACTIVE.write().unwrap_or_else(PoisonError::into_inner) = None;
}

/// The active registry: the one installed by [`set_orchestrator_registry`], else
/// [`tool_registry()`].
///
/// ```
/// let names: Vec<String> = pleach_core::active_registry()
///     .get_tool_definitions()
///     .iter()
///     .map(|t| t.name().to_owned())
///     .collect();
/// # let _ = names;
/// ```
pub fn active_registry() -> Arc<dyn ToolRegistry> {
    installed_registry().unwrap_or_else(|| compiled().registry.clone())
}

/// The registry installed by [`set_orchestrator_registry`], if any.
fn installed_registry() -> Option<Arc<dyn ToolRegistry>> {
    ACTIVE
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

/// The active registry for a runtime: the installed one, else the compile-time one provided it
/// has no problems (a runtime never starts on a silently chosen duplicate).
pub(crate) fn checked_active_registry() -> Result<Arc<dyn ToolRegistry>, RegistryError> {
    if let Some(registry) = installed_registry() {
        return Ok(registry);
    }
    let compiled = compiled();
    match &compiled.error {
        Some(error) => Err(error.clone()),
        None => Ok(compiled.registry.clone()),
    }
}

/// Fails (panics, for use in tests) unless every name in `names` is in [`tool_registry()`].
///
/// A crate of tools that nothing references can be dropped by the linker, and its tools vanish
/// from the registry without a word. One test with this assertion makes that a CI failure; the fix
/// is to reference the crate (for the catalog, call `pleach_tools::link()` once).
///
/// ```
/// use pleach_core::tool;
///
/// /// Answers pong.
/// #[tool]
/// async fn ping() -> &'static str {
///     "pong"
/// }
///
/// pleach_core::registry::assert_tools_linked(&["ping"]);
/// ```
///
/// # Panics
///
/// When a name is missing, with the list of missing names and the fix.
#[track_caller]
pub fn assert_tools_linked(names: &[&str]) {
    let registry = tool_registry();
    let missing: Vec<&str> = names
        .iter()
        .copied()
        .filter(|name| !registry.has(name))
        .collect();
    assert!(
        missing.is_empty(),
        "tools missing from the registry: {missing:?} ({} registered: {:?}); \
         a crate of tools that nothing references is not linked: reference it \
         (for the catalog, call `pleach_tools::link()`)",
        registry.size(),
        registry.names().collect::<Vec<_>>(),
    );
}
