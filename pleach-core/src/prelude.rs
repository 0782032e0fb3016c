//! What a program that defines and runs tools names most: `use pleach_core::prelude::*;`.
//!
//! The attributes (`#[tool]`, `#[unified_tool]`, `#[input]`, `#[output]`, `link_tools!`), a tool's
//! context, calls, errors and their codes, the registry and validation, and the runtime with its
//! sessions, turns, events and results. Everything else is at its module's path.
//!
//! ```
//! use pleach_core::prelude::*;
//!
//! /// Adds two integers.
//! #[tool]
//! async fn sum_pair(a: i64, b: i64) -> Result<i64, ToolError> {
//!     Ok(a + b)
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let verdict = validate_tool_call(&ToolCall::new("c0", "sum_pair", r#"{"a":1}"#));
//! assert_eq!(verdict.errors[0].keyword, "required");
//!
//! let runtime = Runtime::builder().build().unwrap();
//! let session = runtime.create_session(SessionOptions::enabled(["sum_pair"])).unwrap();
//! let mut turn = session.run_turn(vec![ToolCall::new("c1", "sum_pair", r#"{"a":2,"b":3}"#)]);
//! while let Some(event) = turn.events().recv().await {
//!     assert!(matches!(event, ToolEvent::Started { .. } | ToolEvent::Completed { .. }));
//! }
//! let results: Vec<ToolResult> = turn.finish().await;
//! assert_eq!(results[0].outcome.as_ref().unwrap(), &serde_json::json!(5));
//! # });
//! ```

pub use crate::{
    ErrorCode, Message, Runtime, RuntimeBuilder, SafetyTier, Session, SessionOptions, ToolCall,
    ToolContext, ToolDefinition, ToolError, ToolEvent, ToolResult, Turn, ValidationResult, input,
    link_tools, output, tool, tool_registry, unified_tool, validate_tool_call,
};
