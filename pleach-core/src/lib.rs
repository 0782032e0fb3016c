//! # pleach-core
//!
//! Schema-typed LLM tools for Rust. A plain `async fn` plus `#[tool]` becomes a tool a model can
//! call: its arguments become a JSON Schema, it is registered at compile time, and every call is
//! validated against the schema before the fn runs.
//!
//! ## Quick start
//!
//! ```
//! use pleach_core::prelude::*;
//!
//! /// Free-text search over the host corpus.
//! #[tool]
//! async fn search_corpus(
//!     #[arg(description = "What to look for", min = 1)] query: String,
//!     #[arg(default = 10, min = 1, max = 50)] limit: u32,
//! ) -> Result<Vec<String>, ToolError> {
//!     Ok((0..limit.min(3)).map(|i| format!("{query} #{i}")).collect())
//! }
//!
//! // Registered at compile time: no list to keep up to date.
//! let registry = tool_registry();
//! assert!(registry.contains("search_corpus"));
//! let schema = registry.definition("search_corpus").unwrap().input_schema();
//! assert_eq!(schema["properties"]["limit"]["maximum"], 50);
//! assert_eq!(schema["required"], serde_json::json!(["query"]));
//!
//! // Validate a call without running it: field-path errors a model can act on.
//! let verdict = validate_tool_call(&ToolCall::new("call_1", "search_corpus", r#"{"query":"rust","limit":80}"#));
//! assert!(!verdict.valid);
//! assert_eq!(verdict.errors[0].path, "/limit");
//! assert_eq!(verdict.errors[0].keyword, "maximum");
//!
//! // Run it (the runtime does this for a model's calls, with events and cancellation).
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let out = search_corpus::definition()
//!     .call(r#"{"query":"rust"}"#, ToolContext::new("call_2"))
//!     .await
//!     .unwrap();
//! assert_eq!(out.value()[0], "rust #0");
//! # });
//! // And the fn is still an ordinary fn.
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! assert_eq!(search_corpus("x".into(), 1).await.unwrap(), ["x #0"]);
//! # });
//! ```
//!
//! ## What is where
//!
//! | item | what it is |
//! | --- | --- |
//! | [`prelude`] | what a program that defines and runs tools names most: `use pleach_core::prelude::*;` |
//! | [`tool`](macro@tool) (attribute) | the basic tool shape (`defineTool`): `name`, `description` |
//! | [`input`](macro@input) (attribute) | a struct or an enum made a tool's input type: `Deserialize` and `JsonSchema` derived through pleach's re-exports |
//! | [`output`](macro@output) (attribute) | a struct or an enum made a type a tool returns: `Serialize` and `JsonSchema` derived through pleach's re-exports |
//! | [`unified_tool`](macro@unified_tool) | the registry-level shape (`createUnifiedTool`): adds `id`, `display_name`, `category`, `schema_key`, `safety_tier` |
//! | [`ToolDefinition`], [`ToolDefinition::builder`] | the basic shape at run time, from typed code or a raw JSON Schema |
//! | [`UnifiedToolDefinition`], [`UnifiedToolDefinition::from`] | the registry-level shape at run time |
//! | [`ToolContext`] | `tool_call_id`, the cancellation `signal`, progress, the host's configuration and the session's state |
//! | [`extensions`] | [`RuntimeBuilder::provide`] configuration and per-session state tools read through their context |
//! | [`tool_registry()`], [`ToolRegistry`], [`ToolRegistryBuilder`], [`ToolSource`], [`set_active_registry`] | the registry, and the trait a host implements over its own storage ([`registry`] says which to use when) |
//! | [`Runtime`], [`Session`], [`Turn`], [`PleachPlugin`] | the runtime: sessions, turns of calls, plugins |
//! | [`defaults`] | every default of this crate that is a number, a size or a duration (timeouts, concurrency, limits, agent steps) |
//! | [`BatchingStrategy`], [`infer_batching_strategy`], [`Runtime::batching_strategy`], [`ToolBatchExecutor`], [`Semaphore`] | batching: serial / parallel / chunked (`docs/batching.md`) |
//! | [`ToolEvent`], [`EventStream`] | `tool.started` / `tool.delta` / `tool.completed` / `tool.failed` (`docs/events.md`) |
//! | [`assemble`]: [`StreamAssembler`], [`IncrementalJson`] | streamed tool calls: argument fragments parsed as they come (linear cost), a call final only on its provider's end signal (`docs/events.md`) |
//! | [`Message`] | the conversation a session writes results back into |
//! | [`validate_tool_call`], [`ValidationResult`] | checking a call without running it |
//! | [`ToolError`], [`ErrorCode`] | errors with stable 1xxx codes (`docs/error-codes.md`) |
//! | [`SafetyTier`], [`safety`] | `critical` / `standard` / `advisory`, fabrication detectors, provenance, approval interrupts (`docs/safety.md`) |
//! | [`search`] | tool search over a catalog ([`search::ToolIndex`]: ranked words and regex; [`search::ToolRanker`] for a host's own ranker) and deferred tools in the agent loop ([`search::ToolSearch`], `docs/tool-search.md`) |
//! | [`agent`] | the agent loop: a [`ModelClient`](agent::ModelClient) streams the model's response, calls are assembled, run and written back, and the model asked again ([`Session::run_agent`]); HTTP clients for OpenAI-compatible Chat Completions, OpenAI Responses, Anthropic Messages and Gemini (feature `http`); a [`ReplayClient`](agent::ReplayClient) for scripted runs (`docs/agent.md`) |
//! | [`providers`] | tool definitions per provider (OpenAI Chat / Responses, Anthropic, Gemini, MCP), schema profiles, whole and streamed tool calls parsed, results written back (`docs/providers.md`) |
//!
//! The contract a tool author compiles (tools, calls, context, errors, registry, schemas, what the
//! macros generate) is the crate `pleach-contract`, re-exported here at the same paths; this crate
//! adds the runtime and its edges. MCP (a server for a runtime's tools on stdio and Streamable
//! HTTP, and other MCP servers' tools in a runtime) is the crate `pleach-mcp`, so that its
//! transports (rmcp, axum, JWT, Redis) stay out of this crate's dependencies. A crate that only
//! defines tools can depend on the contract alone and still write `pleach_core::…` (see
//! `pleach-contract`'s docs and `ARCHITECTURE.md`).
//!
//! ## Input types
//!
//! A tool can take its whole input as one type (`#[input] expense: Expense`). Put
//! [`#[input]`](macro@input) on that type and on the types nested in it: it derives `Deserialize`
//! and `JsonSchema` through `pleach_core::serde` and `pleach_core::schemars` (the versions pleach
//! uses, re-exported) with the crate attributes those derives need, so your `Cargo.toml` names
//! `pleach-core` and nothing else. Write it above the type's `#[derive(…)]`s, if it has any.
//!
//! ```
//! use pleach_core::*;
//!
//! #[input]
//! #[serde(rename_all = "snake_case")]
//! enum Category {
//!     /// Meals and snacks.
//!     Food,
//!     /// Trains, planes and taxis.
//!     Travel,
//! }
//!
//! #[input]
//! struct Expense {
//!     /// What it cost, in cents.
//!     cents: u64,
//!     category: Category,
//! }
//!
//! /// Files an expense.
//! #[tool]
//! async fn file_expense(#[input] expense: Expense) -> String {
//!     let kind = match expense.category {
//!         Category::Food => "food",
//!         Category::Travel => "travel",
//!     };
//!     format!("{} cents of {kind}", expense.cents)
//! }
//!
//! let verdict = file_expense::definition().validate_arguments(r#"{"cents":900,"category":"snacks"}"#);
//! assert_eq!(verdict.errors[0].path, "/category");
//! // The model is told every value it may send.
//! assert!(verdict.errors[0].message.contains(r#""food""#), "{}", verdict.errors[0].message);
//! ```
//!
//! A type a tool returns takes [`#[output]`](macro@output): `Serialize` and `JsonSchema` (for the
//! tool's output schema) through the same re-exports; a type both taken and returned takes both
//! attributes.

// Examples are held to the code's standard: a warning in one fails the doc tests.
#![doc(test(attr(deny(warnings))))]
// Edition 2024 builds a crate's doc tests as one binary, so the `#[tool]`s they define share one
// compile-time registry: each needs a name no other doc test of the crate uses. A doc test that
// defines a `critical` tool (a runtime built from that registry would refuse it, uncovered) or
// asserts on the whole registry is `standalone_crate`, a binary of its own; only those, since each
// costs a build and a link of its own.

// `#[tool]` expands to `::pleach_core::…` paths; this makes them resolve inside this crate too.
#[allow(unused_extern_crates)] // used by macro expansions in doctests and unit tests
extern crate self as pleach_core;

// The contract (`pleach-contract`), at the paths users name: a tool defined against it is the
// same type here (ARCHITECTURE.md, "Crates").
#[doc(hidden)]
pub use pleach_contract::__private;
pub use pleach_contract::{call, client, content, error, extensions, registry, schema, tier, tool};

pub mod agent;
pub mod assemble;
pub mod batch;
pub mod conversation;
pub mod defaults;
pub mod durable;
pub mod event;
#[cfg(feature = "http")]
#[doc(hidden)] // Not API: the HTTP client set-up the model clients and pleach-mcp share.
pub mod http_client;
pub mod plugin;
pub mod prelude;
pub mod providers;
pub mod runtime;
pub mod safety;
pub mod search;
pub mod session;
#[cfg(feature = "otel")]
#[doc(hidden)] // Not API: W3C trace context, for the model clients and pleach-mcp.
pub mod trace_context;

pub use assemble::{
    IncrementalJson, IncrementalJsonError, StreamAssembler, StreamError, StreamedCall,
};
pub use batch::{
    BatchingConfig, BatchingHint, BatchingStrategy, Lane, Semaphore, ToolBatchExecutor,
    infer_batching_strategy,
};
pub use conversation::Message;
pub use event::{EventSender, EventStream, ToolEvent};
pub use pleach_contract::{
    ContentBlock, DefinitionError, DefinitionSite, ErrorCode, ProgressSink, RegistryError,
    RegistryProblem, SafetyTier, ToolBuilder, ToolCall, ToolContext, ToolDefinition, ToolError,
    ToolFuture, ToolOutput, ToolRegistry, ToolRegistryBuilder, ToolSource, UnifiedToolDefinition,
    ValidationError, ValidationResult, active_registry, clear_active_registry, set_active_registry,
    tool_registry, try_active_registry, try_tool_registry, validate_tool_call,
};
pub use plugin::PleachPlugin;
pub use runtime::{Limits, OverloadPolicy, Runtime, RuntimeBuilder, RuntimeError};
pub use session::{
    AssistantStep, Session, SessionError, SessionOptions, ToolResult, ToolsOptions, Turn,
};

pub use pleach_contract::{input, link_tools, output, unified_tool};

pub use pleach_contract::{CancellationToken, schemars, serde, serde_json};
