//! The tool registry: the compile-time slice every `#[tool]` lands in, [`tool_registry()`] built
//! from it once, explicit registration with [`ToolRegistryBuilder`], the [`ToolRegistry`] trait
//! both implement, the spec's [`set_orchestrator_registry`] shim, and [`validate_tool_call`].
//!
//! | file | owns |
//! | --- | --- |
//! | `mod.rs` | the [`ToolRegistry`] trait and [`Registry`], a checked set of tools |
//! | `builder.rs` | [`ToolRegistryBuilder`], [`RegistryError`], [`RegistryProblem`] |
//! | `compiled.rs` | the linkme slice, [`tool_registry()`], the active registry |
//! | `validate.rs` | [`validate_tool_call`]: a call checked against the active registry |
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

mod builder;
mod compiled;
mod validate;

pub use builder::{RegistryError, RegistryProblem, ToolRegistryBuilder};
#[doc(hidden)]
pub use compiled::{TOOLS, ToolEntry, checked_active_registry};
pub use compiled::{
    active_registry, assert_tools_linked, clear_orchestrator_registry, set_orchestrator_registry,
    tool_registry, try_tool_registry,
};
#[doc(hidden)]
pub use validate::validate_in;
pub use validate::validate_tool_call;

use crate::tool::{ToolDefinition, UnifiedToolDefinition};

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
