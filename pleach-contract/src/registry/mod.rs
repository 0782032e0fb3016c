//! The tool registry: the compile-time slice every `#[tool]` lands in, [`tool_registry()`] built
//! from it once, explicit registration with [`ToolRegistryBuilder`], the [`ToolSource`] trait
//! both implement, the process's active registry, and [`validate_tool_call`].
//!
//! | file | owns |
//! | --- | --- |
//! | `mod.rs` | the [`ToolSource`] trait and [`ToolRegistry`], a checked set of tools |
//! | `builder.rs` | [`ToolRegistryBuilder`], [`RegistryError`], [`RegistryProblem`] |
//! | `compiled.rs` | [`tool_registry()`] built from the slice, the active registry |
//! | `entry.rs` | the linkme slice, a `#[tool]`'s entry in it and the one build of its definition |
//! | `validate.rs` | [`validate_tool_call`]: a call checked against the active registry |
//!
//! Which to use when:
//!
//! | to | use |
//! | --- | --- |
//! | read the `#[tool]`s linked into the binary (a test, a listing) | [`tool_registry()`]; [`try_tool_registry`] returns a duplicate name as an error instead of panicking |
//! | give one runtime its tools | `RuntimeBuilder::registry` (a [`ToolRegistryBuilder`]'s registry or any [`ToolSource`]) or a plugin's `tools`; without either a runtime takes the active registry |
//! | swap the tools of the whole process (the TypeScript spec's `setOrchestratorRegistry`) | [`set_active_registry`], undone by [`clear_active_registry`]; read with [`active_registry()`] or [`try_active_registry`] |
//! | make CI fail when a crate's tools are not linked | [`assert_tools_linked`] in a test |
//!
//! ```
//! use pleach_core::{ToolError, ToolRegistryBuilder, ToolDefinition};
//!
//! let ping = ToolDefinition::builder("ping", "Answers pong.")
//!     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
//!     .unwrap();
//! let registry = ToolRegistryBuilder::new().register(ping).build().unwrap();
//! assert!(registry.contains("ping"));
//! // Every `#[tool]` linked into the binary, with no list to maintain:
//! let _everything = pleach_core::tool_registry();
//! ```

mod builder;
mod compiled;
mod entry;
mod validate;

pub use builder::{RegistryError, RegistryProblem, ToolRegistryBuilder};
pub use compiled::{
    active_registry, assert_tools_linked, clear_active_registry, set_active_registry,
    tool_registry, try_active_registry, try_tool_registry,
};
#[doc(hidden)]
pub use entry::{Code, TOOLS, ToolEntry, UnifiedFields};
#[doc(hidden)]
pub use validate::validate_in;
pub use validate::validate_tool_call;

use crate::tool::{ToolDefinition, UnifiedToolDefinition};

/// Where the runtime looks tools up: the Rust form of the TypeScript spec's orchestrator registry
/// (`getToolDefinitions`, `get`, `has`, `size` are [`tools`](ToolSource::tools), `get`,
/// [`contains`](ToolSource::contains) and [`len`](ToolSource::len) here).
///
/// [`ToolRegistry`] implements it (the compile-time one from [`tool_registry()`] and the ones from
/// [`ToolRegistryBuilder`]); a host can implement it over its own storage and give it to a runtime
/// (`RuntimeBuilder::registry`) or install it for the whole process with [`set_active_registry`].
///
/// ```
/// use pleach_core::{ToolSource, UnifiedToolDefinition};
///
/// /// The TypeScript spec's shim: a list of tools, searched by name.
/// struct ListRegistry(Vec<UnifiedToolDefinition>);
///
/// impl ToolSource for ListRegistry {
///     fn tools(&self) -> Vec<&UnifiedToolDefinition> {
///         self.0.iter().collect()
///     }
///     fn get(&self, name: &str) -> Option<&UnifiedToolDefinition> {
///         self.0.iter().find(|t| t.name() == name)
///     }
///     fn len(&self) -> usize {
///         self.0.len()
///     }
/// }
///
/// let empty = ListRegistry(Vec::new());
/// assert!(!empty.contains("search_corpus"));
/// assert_eq!(empty.len(), 0);
/// assert!(empty.is_empty());
/// ```
#[doc(alias = "OrchestratorRegistry")]
pub trait ToolSource: Send + Sync {
    /// Every tool, sorted by name for the registries pleach builds.
    ///
    /// ```
    /// use pleach_core::ToolSource;
    /// let registry: &dyn ToolSource = pleach_core::tool_registry();
    /// let names: Vec<&str> = registry.tools().iter().map(|t| t.name()).collect();
    /// assert!(names.windows(2).all(|pair| pair[0] < pair[1])); // sorted, one per name
    /// ```
    #[doc(alias = "getToolDefinitions")]
    #[doc(alias = "get_tool_definitions")]
    fn tools(&self) -> Vec<&UnifiedToolDefinition>;

    /// The tool named `name`.
    ///
    /// ```
    /// use pleach_core::ToolSource;
    /// let registry: &dyn ToolSource = pleach_core::tool_registry();
    /// assert!(registry.get("no_such_tool").is_none());
    /// ```
    fn get(&self, name: &str) -> Option<&UnifiedToolDefinition>;

    /// Whether a tool named `name` exists.
    ///
    /// ```
    /// use pleach_core::ToolSource;
    /// let registry: &dyn ToolSource = pleach_core::tool_registry();
    /// assert!(!registry.contains("no_such_tool"));
    /// ```
    #[doc(alias = "has")]
    fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// How many tools there are.
    ///
    /// ```
    /// use pleach_core::{ToolSource, ToolRegistryBuilder};
    /// let registry: &dyn ToolSource = &ToolRegistryBuilder::new().build().unwrap();
    /// assert_eq!(registry.len(), 0);
    /// ```
    #[doc(alias = "size")]
    fn len(&self) -> usize;

    /// Whether there are no tools.
    ///
    /// ```
    /// use pleach_core::{ToolSource, ToolRegistryBuilder};
    /// let registry: &dyn ToolSource = &ToolRegistryBuilder::new().build().unwrap();
    /// assert!(registry.is_empty());
    /// ```
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A checked set of tools with unique names, sorted by name.
///
/// ```
/// use pleach_core::{ToolError, ToolRegistryBuilder, ToolDefinition};
///
/// let ping = ToolDefinition::builder("ping", "Answers pong.")
///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
///     .unwrap();
/// let registry = ToolRegistryBuilder::new().register(ping).build().unwrap();
/// assert!(registry.contains("ping"));
/// assert_eq!(registry.names().collect::<Vec<_>>(), ["ping"]);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<UnifiedToolDefinition>,
}

impl ToolRegistry {
    /// The tool named `name` (also [`ToolSource::get`]; inherent so no import is needed).
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
    /// assert!(!pleach_core::tool_registry().contains("no_such_tool"));
    /// ```
    #[doc(alias = "has")]
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// How many tools there are.
    ///
    /// ```
    /// assert_eq!(pleach_core::ToolRegistryBuilder::new().build().unwrap().len(), 0);
    /// ```
    #[doc(alias = "size")]
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether there are no tools.
    ///
    /// ```
    /// assert!(pleach_core::ToolRegistryBuilder::new().build().unwrap().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The tools' names, sorted.
    ///
    /// ```
    /// use pleach_core::{ToolError, ToolRegistryBuilder, ToolDefinition};
    /// let tool = |name: &str| ToolDefinition::builder(name, "A tool.")
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
    #[doc(alias = "getToolDefinitions")]
    #[doc(alias = "get_tool_definitions")]
    pub fn tools(&self) -> &[UnifiedToolDefinition] {
        &self.tools
    }

    /// The tools, sorted by name, one by one (also `for tool in &registry`).
    ///
    /// ```
    /// let registry = pleach_core::tool_registry();
    /// assert_eq!(registry.iter().count(), registry.len());
    /// for tool in registry {
    ///     assert!(registry.contains(tool.name()));
    /// }
    /// ```
    pub fn iter(&self) -> std::slice::Iter<'_, UnifiedToolDefinition> {
        self.tools.iter()
    }

    /// The basic definition of the tool named `name`.
    ///
    /// ```
    /// use pleach_core::{ToolError, ToolRegistryBuilder, ToolDefinition};
    /// let ping = ToolDefinition::builder("ping", "Answers pong.")
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
    pub(super) fn from_tools(
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
        ToolRegistry { tools: kept }
    }
}

impl ToolSource for ToolRegistry {
    fn tools(&self) -> Vec<&UnifiedToolDefinition> {
        self.tools.iter().collect()
    }

    fn get(&self, name: &str) -> Option<&UnifiedToolDefinition> {
        ToolRegistry::get(self, name)
    }

    fn contains(&self, name: &str) -> bool {
        ToolRegistry::contains(self, name)
    }

    fn len(&self) -> usize {
        ToolRegistry::len(self)
    }
}

impl<'a> IntoIterator for &'a ToolRegistry {
    type Item = &'a UnifiedToolDefinition;
    type IntoIter = std::slice::Iter<'a, UnifiedToolDefinition>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}
