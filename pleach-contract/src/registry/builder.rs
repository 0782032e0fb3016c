//! [`ToolRegistryBuilder`]: a registry built by hand, and why one could not be built.

use std::fmt;

use super::ToolRegistry;
use crate::tool::{DefinitionError, DefinitionSite, UnifiedToolDefinition};

/// Builds a [`ToolRegistry`] by hand: for plugins, configuration, and tests. Names must be unique;
/// a second tool with a taken name is an error naming both definition sites, never an overwrite.
///
/// ```
/// use pleach_core::{ToolError, ToolRegistryBuilder, ToolDefinition};
///
/// let make = || ToolDefinition::builder("ping", "Answers pong.")
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
    /// assert_eq!(registry.len(), 0);
    /// ```
    pub fn new() -> Self {
        ToolRegistryBuilder::default()
    }

    /// Adds a tool (a [`ToolDefinition`](crate::ToolDefinition) or a [`UnifiedToolDefinition`]).
    ///
    /// ```
    /// use pleach_core::{ToolError, ToolRegistryBuilder, UnifiedToolDefinition, ToolDefinition};
    /// let tool = |name: &str| ToolDefinition::builder(name, "A tool.")
    ///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!(null)) })
    ///     .unwrap();
    /// let registry = ToolRegistryBuilder::new()
    ///     .register(tool("basic"))
    ///     .register(UnifiedToolDefinition::from(tool("unified")).with_category("demo"))
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(registry.len(), 2);
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
    /// assert_eq!(registry.len(), pleach_core::tool_registry().len());
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
    /// use pleach_core::{ToolError, ToolRegistryBuilder, ToolDefinition};
    /// let ping = || ToolDefinition::builder("ping", "Answers pong.")
    ///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
    ///     .unwrap();
    /// assert!(ToolRegistryBuilder::new().register(ping()).build().is_ok());
    /// assert!(ToolRegistryBuilder::new().register(ping()).register(ping()).build().is_err());
    /// ```
    pub fn build(self) -> Result<ToolRegistry, RegistryError> {
        let mut problems = Vec::new();
        let registry = ToolRegistry::from_tools(self.tools, &mut problems);
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
    pub(super) fn check(problems: Vec<RegistryProblem>) -> Result<(), RegistryError> {
        if problems.is_empty() {
            Ok(())
        } else {
            Err(RegistryError { problems })
        }
    }

    /// Every problem found.
    ///
    /// ```
    /// use pleach_core::{RegistryProblem, ToolError, ToolRegistryBuilder, ToolDefinition};
    /// let ping = || ToolDefinition::builder("ping", "Answers pong.")
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
        /// The first of the two definitions by file and line.
        first: DefinitionSite,
        /// The other definition.
        second: DefinitionSite,
    },
    /// A `#[tool]` whose definition could not be built.
    #[error(transparent)]
    Definition(#[from] DefinitionError),
}
