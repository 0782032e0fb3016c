//! The compile-time registry: [`tool_registry()`] built from the slice every `#[tool]` lands in
//! once, and the active registry a host can swap in ([`set_active_registry`]).

use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use super::entry::TOOLS;
use super::{RegistryError, RegistryProblem, ToolRegistry, ToolSource};

struct Compiled {
    registry: Arc<ToolRegistry>,
    error: Option<RegistryError>,
}

fn compiled() -> &'static Compiled {
    static COMPILED: OnceLock<Compiled> = OnceLock::new();
    COMPILED.get_or_init(|| {
        let mut problems = Vec::new();
        let mut tools = Vec::with_capacity(TOOLS.len());
        for entry in TOOLS {
            match entry.try_unified() {
                Ok(tool) => tools.push(tool),
                Err(error) => problems.push(RegistryProblem::Definition(error)),
            }
        }
        let registry = ToolRegistry::from_tools(tools, &mut problems);
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
/// use: sorted by name, schemas generated and validators compiled once. The TypeScript spec's
/// `toolRegistry`, filled by the macros rather than by `register` calls.
///
/// # Panics
///
/// If two tools share a name, or a tool's definition cannot be built: the message names each
/// problem, a duplicate with both definition sites (as axum panics on overlapping routes rather
/// than pick one). [`try_tool_registry`] returns the same problems as an error, and
/// [`Runtime::build`](https://docs.rs/pleach-core/latest/pleach_core/session/struct.RuntimeBuilder.html#method.build)
/// refuses to start on them.
///
/// ```
/// use pleach_core::tool;
///
/// /// Multiplies two integers.
/// #[tool]
/// async fn multiply(a: i64, b: i64) -> i64 {
///     a * b
/// }
///
/// assert!(pleach_core::tool_registry().contains("multiply"));
/// ```
#[doc(alias = "toolRegistry")]
#[track_caller]
pub fn tool_registry() -> &'static ToolRegistry {
    let compiled = compiled();
    if let Some(error) = &compiled.error {
        refuse(error);
    }
    &compiled.registry
}

/// The panic of the infallible accessors over a registry with problems.
#[track_caller]
#[cold]
fn refuse(error: &RegistryError) -> ! {
    panic!(
        "the compile-time tool registry cannot be used: {error} \
         (try_tool_registry() returns this as an error)"
    )
}

/// [`tool_registry()`], or every problem it has (duplicate names with both sites, tools whose
/// definition failed).
///
/// ```rust
/// let registry = pleach_core::try_tool_registry().expect("tool names are unique");
/// # let _ = registry;
/// ```
pub fn try_tool_registry() -> Result<&'static ToolRegistry, &'static RegistryError> {
    let compiled = compiled();
    match &compiled.error {
        None => Ok(&compiled.registry),
        Some(error) => Err(error),
    }
}

static ACTIVE: RwLock<Option<Arc<dyn ToolSource>>> = RwLock::new(None);

/// Installs `registry` as the process's active registry, in place of [`tool_registry()`]: the
/// TypeScript spec's `setOrchestratorRegistry`, for hosts whose tools live in storage of their
/// own (a [`ToolSource`]). The free [`validate_tool_call`](crate::validate_tool_call) and a
/// runtime built without [`RuntimeBuilder::registry`] look tools up in the active registry. A
/// host that builds its runtimes itself says which tools each has with `RuntimeBuilder::registry`
/// or a plugin's `tools` instead: nothing global to install or clear.
///
/// [`RuntimeBuilder::registry`]: https://docs.rs/pleach-core/latest/pleach_core/struct.RuntimeBuilder.html#method.registry
///
/// ```
/// use pleach_core::{active_registry, set_active_registry, ToolError, ToolRegistryBuilder, ToolDefinition};
///
/// let ping = ToolDefinition::builder("ping", "Answers pong.")
///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
///     .unwrap();
/// set_active_registry(ToolRegistryBuilder::new().register(ping).build().unwrap());
/// assert!(active_registry().contains("ping"));
/// pleach_core::clear_active_registry();
/// ```
#[doc(alias = "setOrchestratorRegistry")]
#[doc(alias = "set_orchestrator_registry")]
pub fn set_active_registry(registry: impl ToolSource + 'static) {
    *ACTIVE.write().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(registry));
}

/// Removes the registry installed by [`set_active_registry`]; [`tool_registry()`] is active
/// again.
///
/// ```
/// pleach_core::clear_active_registry();
/// assert_eq!(pleach_core::active_registry().len(), pleach_core::tool_registry().len());
/// ```
pub fn clear_active_registry() {
    *ACTIVE.write().unwrap_or_else(PoisonError::into_inner) = None;
}

/// The active registry: the one installed by [`set_active_registry`], else
/// [`tool_registry()`]. [`try_active_registry`] returns the compile-time registry's problems as an
/// error instead of panicking.
///
/// # Panics
///
/// As [`tool_registry()`], when no registry is installed and the compile-time one has problems
/// (a duplicate name, a definition that cannot be built).
///
/// ```
/// let names: Vec<String> = pleach_core::active_registry()
///     .tools()
///     .iter()
///     .map(|t| t.name().to_owned())
///     .collect();
/// # let _ = names;
/// ```
#[track_caller]
pub fn active_registry() -> Arc<dyn ToolSource> {
    if let Some(registry) = installed_registry() {
        return registry;
    }
    let compiled = compiled();
    if let Some(error) = &compiled.error {
        refuse(error);
    }
    compiled.registry.clone()
}

/// The registry installed by [`set_active_registry`], if any.
fn installed_registry() -> Option<Arc<dyn ToolSource>> {
    ACTIVE
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

/// [`active_registry()`], or the compile-time registry's problems (duplicate names with both
/// sites, tools whose definition failed) when no registry is installed: what a runtime built
/// without a registry of its own starts from, so that it never starts on a silently chosen
/// duplicate.
///
/// # Errors
///
/// The compile-time registry's problems, as [`try_tool_registry`] returns them.
///
/// ```
/// let registry = pleach_core::try_active_registry().expect("tool names are unique");
/// # let _ = registry;
/// ```
pub fn try_active_registry() -> Result<Arc<dyn ToolSource>, RegistryError> {
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
        .filter(|name| !registry.contains(name))
        .collect();
    assert!(
        missing.is_empty(),
        "tools missing from the registry: {missing:?} ({} registered: {:?}); \
         a crate of tools that nothing references is not linked: give it a \
         `pub fn link() {{ pleach_core::link_tools!(…) }}` and call it from the binary \
         (for the catalog, `pleach_tools::link()`)",
        registry.len(),
        registry.names().collect::<Vec<_>>(),
    );
}

/// Keeps the named `#[tool]`s in the binary, so [`tool_registry()`] lists them.
///
/// Tools register through link-time sections, and a linker leaves out the parts of a library crate
/// that nothing refers to: the tools of a crate of yours can vanish from a binary's registry
/// without a word. In that crate, name its tools once in a `link` fn, and call it from each binary
/// (`main`, a test) that serves them, as `pleach_tools::link()` does for the catalog:
///
/// ```
/// // In your tools crate (here in one file):
/// mod expenses {
///     use pleach_core::tool;
///
///     /// Lists the expenses.
///     #[tool]
///     pub async fn list_expenses() -> Vec<String> { Vec::new() }
///
///     /// Adds an expense.
///     #[tool]
///     pub async fn add_expense(description: String) -> String { description }
///
///     /// Keeps this crate's tools in the binary that calls it.
///     pub fn link() {
///         pleach_core::link_tools!(list_expenses, add_expense);
///     }
/// }
///
/// // In the binary:
/// expenses::link();
/// assert!(pleach_core::tool_registry().contains("add_expense"));
/// ```
///
/// Each argument is the path of a `#[tool]` or `#[unified_tool]` fn; calling the `link` fn again
/// does nothing. [`assert_tools_linked`] is the test that they are there.
#[macro_export]
macro_rules! link_tools {
    ($($($tool:ident)::+),+ $(,)?) => {
        ::core::hint::black_box(($($($tool)::+::__pleach_entry(),)+))
    };
}
