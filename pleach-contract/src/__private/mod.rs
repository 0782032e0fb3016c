//! Support for the code `#[tool]` and `#[unified_tool]` generate. **Not API**: anything here may
//! change in any release. Generated code reaches it through absolute `::pleach_core::__private`
//! paths, so a user's `Cargo.toml` lists `pleach-core` alone.
//!
//! | file | what generated code uses it for |
//! | --- | --- |
//! | `params.rs` | the input schema: parameters as properties, or one `#[input]` type |
//! | `integer.rs` | integer parameters that accept `2.0` as JSON Schema does |
//! | `bounds.rs` | `#[arg(min/max)]` checked on the typed value |
//! | `run.rs` | reading the arguments, taking the context, starting the fn |
//! | `output.rs` | the return value as JSON, and the output schema |
//! | `errors.rs` | the fn's error type as a [`ToolError`](crate::ToolError) |

#![allow(missing_docs, unreachable_pub)]

mod bounds;
mod errors;
mod integer;
mod output;
mod params;
mod run;

pub use bounds::*;
pub use errors::*;
pub use integer::*;
pub use output::*;
pub use params::*;
pub use run::*;

pub use linkme;
pub use schemars;
pub use serde;
pub use serde_json;

pub use crate::registry::{Code, TOOLS, ToolEntry, UnifiedFields};
pub use crate::tool::{Started, ToolFuture};
