//! The tool contract: [`ToolDefinition`] (the basic shape), [`UnifiedToolDefinition`] (the
//! registry-level shape), [`ToolContext`] (what a tool receives besides its input),
//! [`ToolDefinition::builder`] and [`UnifiedToolDefinition::from`].
//!
//! | file | owns |
//! | --- | --- |
//! | `context.rs` | [`ToolContext`] and the [`ProgressSink`] a runtime hands it |
//! | `definition.rs` | [`ToolDefinition`]: checks, compiled schemas, running one call |
//! | `builder.rs` | [`ToolDefinition::builder`] and [`ToolBuilder`]: definitions made at run time |
//! | `unified.rs` | [`UnifiedToolDefinition`]: id, display name, category, schema key, tier |
//!
//! ```
//! use pleach_core::{SafetyTier, ToolError, UnifiedToolDefinition, ToolDefinition};
//! use serde_json::json;
//!
//! let lookup = ToolDefinition::builder("lookup_order", "Finds an order by id.")
//!     .input_schema(json!({
//!         "type": "object",
//!         "properties": { "id": { "type": "string" } },
//!         "required": ["id"],
//!     }))
//!     .execute_json(|args, _ctx| async move { Ok::<_, ToolError>(json!({ "id": args["id"], "status": "shipped" })) })
//!     .unwrap();
//! assert!(lookup.validate_arguments(r#"{"id":"A-17"}"#).valid);
//! let unified = UnifiedToolDefinition::from(lookup).with_safety_tier(SafetyTier::Standard);
//! assert_eq!(unified.display_name(), "Lookup Order");
//! ```

mod builder;
mod context;
mod definition;
mod unified;

pub use builder::ToolBuilder;
pub use context::{ProgressSink, ToolContext};
pub use definition::{DefinitionError, DefinitionSite, ToolDefinition, is_valid_tool_name};
pub(crate) use definition::{DefinitionParts, Invoke};
pub use unified::UnifiedToolDefinition;

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use crate::content::ToolOutput;
use crate::error::{ErrorCode, ToolError};

/// The future a tool's code returns: its result (JSON, content blocks or both), or the tool's
/// error.
///
/// ```
/// use pleach_core::{ToolError, ToolFuture, ToolOutput};
///
/// let future: ToolFuture = Box::pin(async { Ok::<_, ToolError>(ToolOutput::new(serde_json::json!(1))) });
/// # drop(future);
/// ```
pub type ToolFuture = Pin<Box<dyn Future<Output = Result<ToolOutput, ToolError>> + Send + 'static>>;

/// A tool's code once started: already finished, or a future to drive.
///
/// A `#[tool]` fn whose body cannot suspend (no `.await`, no macro that could hide one) is run to
/// completion where it is started, on the caller's stack: no boxed future, no task. Every other
/// tool hands back its future.
#[doc(hidden)]
pub enum Started {
    /// The code ran to the end while starting.
    Ready(Result<ToolOutput, ToolError>),
    /// The code's future, not polled yet.
    Running(ToolFuture),
}

/// The error of a call whose tool was expected to finish where it started and did not: a bug in
/// pleach (the macro's scan trusted a body that suspends), reported instead of a hang.
#[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
pub fn not_finished_in_place() -> ToolError {
    ToolError::new(
        ErrorCode::ToolPanicked,
        "the tool waited where pleach expected it to finish at once; this is a bug in pleach",
    )
    .with_detail("a tool classified as never suspending returned Pending on its first poll")
}

impl Started {
    /// The outcome, awaiting the future if there is one.
    #[inline]
    #[doc(hidden)] // the runtime's seam
    pub async fn finish(self) -> Result<ToolOutput, ToolError> {
        match self {
            Started::Ready(outcome) => outcome,
            Started::Running(future) => future.await,
        }
    }
}

impl fmt::Debug for Started {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Started::Ready(outcome) => f.debug_tuple("Ready").field(outcome).finish(),
            Started::Running(_) => f.write_str("Running(..)"),
        }
    }
}
