//! pleach's integration tests, one module per area (`tests/<area>.rs`), compiled as one test
//! binary: one link of pleach-core, pleach-tools and rmcp instead of one per area. Run one area
//! with `cargo test -p pleach-tests --test main <area>::`.
//!
//! Every `#[tool]` of every module lands in the one compile-time registry, so a module asks the
//! registry about its own tools by name, and tool names are unique across modules. The areas that
//! cannot share a binary with these are other test targets (`Cargo.toml` says why).

mod agent;
mod batching;
mod client_questions;
mod client_talk;
mod docs;
mod durable;
mod faults;
mod guarantees;
mod input_types;
mod local_models;
mod mcp;
mod mcp_edge;
mod mcp_features;
mod mcp_http;
mod mcp_passthru;
mod mcp_remote;
mod mcp_sessions;
mod module_graph;
mod multimodal;
mod providers;
mod public_api;
mod round_trip;
mod runtime;
mod stream;
mod tool_search;
mod tools;
mod validation;
