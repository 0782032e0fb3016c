//! # pleach-contract
//!
//! The part of [pleach](https://docs.rs/pleach-core) a tool author compiles: the tool contract
//! ([`ToolDefinition`], [`ToolContext`], [`ToolCall`], [`ToolError`]), the compile-time registry,
//! JSON Schema generation and validation, and what the `#[tool]` macros' generated code uses. It
//! holds no runtime: sessions, batching, safety routing, events, providers, the agent loop and MCP
//! live in `pleach-core`, which re-exports everything here at the same paths.
//!
//! **Name `pleach-core`, not this crate.** `pleach_core` re-exports this crate's items, so a
//! definition made here is the same type there. A crate that only defines tools and wants its
//! build to stop at the contract (as the catalog, `pleach-tools`, does) renames this crate to
//! `pleach_core` in its `Cargo.toml`, so the code the macros generate (`::pleach_core::…`) resolves:
//!
//! ```toml
//! [dependencies]
//! pleach-core = { package = "pleach-contract", version = "0.2" }
//! ```
//!
//! The types of tools' inputs take [`#[input]`](macro@input), which derives `Deserialize` and
//! `JsonSchema` through this crate's re-exports (`pleach_core::serde`, `pleach_core::schemars`),
//! so a crate naming this one or `pleach-core` alone needs neither `serde` nor `schemars`; the
//! types they return take [`#[output]`](macro@output) (`Serialize` and `JsonSchema`).
//!
//! `ARCHITECTURE.md` at the repository root maps the crates, their modules and the seams between
//! them.
//!
//! ```
//! use pleach_core::{ToolCall, ToolContext, ToolError, tool, tool_registry, validate_tool_call};
//!
//! /// Adds two integers.
//! #[tool]
//! async fn add(a: i64, b: i64) -> Result<i64, ToolError> {
//!     Ok(a + b)
//! }
//!
//! assert!(tool_registry().contains("add"));
//! assert!(validate_tool_call(&ToolCall::new("c1", "add", r#"{"a":1,"b":2}"#)).valid);
//! # let _ = ToolContext::new("c1");
//! ```

// Examples are held to the code's standard: a warning in one fails the doc tests.
#![doc(test(attr(deny(warnings))))]
// Doc tests share one binary and so one tool registry: see pleach-core's `lib.rs`.

pub mod call;
pub mod client;
pub mod content;
pub mod error;
pub mod extensions;
pub mod registry;
pub mod schema;
pub mod tier;
pub mod tool;

#[cfg(feature = "tls")]
#[doc(hidden)]
pub mod tls;

#[doc(hidden)]
pub mod __private;

pub use call::ToolCall;
pub use content::{ContentBlock, ToolOutput};
pub use error::{ErrorCode, ToolError};
pub use registry::{
    RegistryError, RegistryProblem, ToolRegistry, ToolRegistryBuilder, ToolSource, active_registry,
    clear_active_registry, set_active_registry, tool_registry, try_active_registry,
    try_tool_registry, validate_tool_call,
};
pub use schema::{ValidationError, ValidationResult};
pub use tier::SafetyTier;
pub use tool::{
    DefinitionError, DefinitionSite, ProgressSink, ToolBuilder, ToolContext, ToolDefinition,
    ToolFuture, UnifiedToolDefinition,
};

pub use pleach_macros::{input, output, tool, unified_tool};

pub use schemars;
pub use serde;
pub use serde_json;
pub use tokio_util::sync::CancellationToken;
