//! JSON Schema: generation from Rust types (schemars), validators compiled once (jsonschema, no
//! remote `$ref`s), and violations as field-path errors ([`ValidationResult`]).
//!
//! This file holds the verdict ([`ValidationResult`], [`ValidationError`]); schemas generated from
//! Rust types and a typed tool's values are `typed.rs`, compiled validators and their messages
//! `compiled.rs`, arguments text parsed `arguments.rs`, and optional `null`s read as absent
//! `absent_nulls.rs`.
//!
//! ```
//! use pleach_core::{ToolError, ToolDefinition};
//! use serde_json::json;
//!
//! let tool = ToolDefinition::builder("search", "Searches.")
//!     .input_schema(json!({
//!         "type": "object",
//!         "properties": { "limit": { "type": "integer", "maximum": 50 } },
//!     }))
//!     .execute_json(|v, _| async move { Ok::<_, ToolError>(v) })
//!     .unwrap();
//! let verdict = tool.validate_arguments(r#"{"limit":80}"#);
//! assert_eq!((verdict.errors[0].path.as_str(), verdict.errors[0].keyword.as_str()), ("/limit", "maximum"));
//! ```

use serde::{Deserialize, Serialize};

use crate::error::{ErrorCode, ToolError};

mod absent_nulls;
mod arguments;
mod compiled;
mod typed;

#[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
pub use absent_nulls::{accepts_null, remove_absent_nulls, resolve_local};
#[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
pub use arguments::{
    duplicate_key, nesting_depth, not_json, parse_arguments, push_pointer_segment,
};
pub(crate) use compiled::CompiledSchema;
pub(crate) use typed::{
    deserialize_input, generator, input_schema_for, output_schema_for, output_to_value,
};
#[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
pub use typed::{integral_floats_as_integers, whole_float_as_integer};

/// The verdict on one call's arguments: the Rust form of the TypeScript spec's `useToolValidation`
/// result.
///
/// ```
/// use pleach_core::{ValidationError, ValidationResult};
///
/// let verdict = ValidationResult::invalid(vec![ValidationError {
///     path: "/limit".into(),
///     keyword: "maximum".into(),
///     message: "80 is greater than the maximum of 50".into(),
/// }]);
/// assert!(!verdict.valid);
/// assert_eq!(
///     serde_json::to_string(&verdict).unwrap(),
///     r#"{"valid":false,"errors":[{"path":"/limit","keyword":"maximum","message":"80 is greater than the maximum of 50"}]}"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidationResult {
    /// `true` when the arguments may be dispatched.
    pub valid: bool,
    /// Every violation found (empty when valid).
    pub errors: Vec<ValidationError>,
}

impl ValidationResult {
    /// A passing verdict.
    ///
    /// ```
    /// assert!(pleach_core::ValidationResult::ok().valid);
    /// ```
    pub fn ok() -> Self {
        ValidationResult {
            valid: true,
            errors: Vec::new(),
        }
    }

    /// A failing verdict (valid only if `errors` is empty).
    ///
    /// ```
    /// use pleach_core::ValidationResult;
    /// assert!(ValidationResult::invalid(Vec::new()).valid); // no errors: valid after all
    /// ```
    pub fn invalid(errors: Vec<ValidationError>) -> Self {
        ValidationResult {
            valid: errors.is_empty(),
            errors,
        }
    }
}

/// One violation: where (a JSON pointer into the arguments, `""` for the whole object), which rule
/// (a JSON Schema keyword, or one of `json`, `duplicateKey`, `unknownTool` for what comes before the
/// schema) and a message a model can act on.
///
/// ```
/// let e = pleach_core::ValidationError {
///     path: "/query".into(),
///     keyword: "type".into(),
///     message: "5 is not of type \"string\"".into(),
/// };
/// assert_eq!(e.to_string(), "at `/query`: 5 is not of type \"string\" (type)");
/// let whole = pleach_core::ValidationError { path: String::new(), ..e };
/// assert_eq!(whole.to_string(), "at the top level: 5 is not of type \"string\" (type)");
///
/// // An error like any other: `?` turns it into a `Box<dyn Error>`.
/// let _boxed: Box<dyn std::error::Error + Send + Sync> = whole.into();
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{}: {message} ({keyword})", located(.path))]
pub struct ValidationError {
    /// JSON pointer to the offending value.
    pub path: String,
    /// The rule that failed.
    pub keyword: String,
    /// What is wrong, for a model or a person.
    pub message: String,
}

/// Where a violation is, for its message: `` at `/query` ``, or `at the top level`.
fn located(path: &str) -> String {
    if path.is_empty() {
        "at the top level".to_owned()
    } else {
        format!("at `{path}`")
    }
}

impl ValidationError {
    /// The tool error for a call refused with this violation: 1005 for text that is not JSON or
    /// has a duplicate key, 1003 for an unknown tool, 1001 for a schema violation.
    #[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
    pub fn into_tool_error(self) -> ToolError {
        let code = match self.keyword.as_str() {
            KEYWORD_JSON | KEYWORD_DUPLICATE_KEY => ErrorCode::ArgumentsNotJson,
            KEYWORD_UNKNOWN_TOOL => ErrorCode::UnknownTool,
            _ => ErrorCode::InputInvalid,
        };
        ToolError::new(code, self.message).with_location(self.path, self.keyword)
    }
}

const KEYWORD_JSON: &str = "json";
const KEYWORD_DUPLICATE_KEY: &str = "duplicateKey";
pub(crate) const KEYWORD_UNKNOWN_TOOL: &str = "unknownTool";
