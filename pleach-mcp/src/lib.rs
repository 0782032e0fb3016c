//! # pleach-mcp
//!
//! pleach's tools over the Model Context Protocol, on the official Rust SDK
//! ([rmcp](https://docs.rs/rmcp)): a server for a [`Runtime`]'s tools, so any binary can serve its
//! own `#[tool]`s (this crate's root, on stdio; [`http`] over Streamable HTTP), and other MCP
//! servers' tools in a pleach runtime ([`remote`]). pleach-core holds the runtime and knows
//! nothing of MCP's transports; this crate is what a host adds to speak MCP.
//!
//! | feature | what it adds |
//! | --- | --- |
//! | (none) | the server on stdio ([`serve_stdio`], [`McpServer`]), remote servers started as child processes ([`remote::McpRemote::stdio`]) |
//! | `http` | [`http`]: the server over Streamable HTTP with Origin checks, bearer or JWT tokens, health and drain; remote servers over HTTP |
//! | `redis` | `http::RedisSessionStore`: MCP sessions and their state in Redis, shared by replicas (`docs/deploy.md`) |
//! | `otel` | W3C trace context into remote calls and out of incoming requests (`docs/observability.md`) |
//!
//! What is mapped how (`docs/mcp.md` has the full table):
//!
//! - `tools/list`: every tool of the runtime, as [`providers::mcp_tools::definition`] describes it
//!   (`name`, `title`, `description`, `inputSchema`, and `outputSchema` when the output is an
//!   object), with `annotations` from its safety tier ([`SafetyTier::mcp_annotations`]).
//! - `tools/call`: the call runs through a [`Session`] of the runtime, so validation, timeouts,
//!   batching and safety apply as for a model's call. The result is
//!   [`providers::mcp_tools::call_tool_result`]: `structuredContent` for an object result (valid against
//!   `outputSchema`, which the runtime checks), and for a failure an `isError` result whose text is
//!   `error <code>: <message>`. A name the server does not list is a protocol error (invalid
//!   params), as MCP asks.
//! - `resources/*`, `prompts/*` and `completion/complete`: the rmcp handler given to
//!   [`McpServer::features`], which also says which of those capabilities `initialize` declares;
//!   without one, none (method not found).
//! - `notifications/cancelled` cancels the call's turn: the tool's
//!   [`ToolContext::signal`](pleach_core::ToolContext::signal) fires.
//! - A request with a `progressToken` gets a `notifications/progress` for each `tool.delta` (the
//!   delta's JSON as the message).
//! - A call that needs the user's approval (a `standard` tool a detector flags) is put to the
//!   user through MCP elicitation when the client can elicit (approve, approve with edited
//!   arguments, reject: the interrupt's decisions): an `elicitation/create` request before MCP
//!   2026-07-28, an input-required result carrying the sealed interrupt from 2026-07-28 on. A
//!   client that cannot gets an `isError` result at once, `error 1012: this call needs the
//!   user's approval …`, and the tool never runs.
//!
//! Transports: [`serve_stdio`]/[`serve`] (stdin and stdout), and `http` (Streamable HTTP,
//! feature `http`).
//!
//! The defaults of every setting that is a number, a duration or a name (a remote server's
//! connect timeout and tool cap, the HTTP server's body cap and drain time, the session store's
//! time to live) are in [`defaults`].
//!
//! One server holds one session for its connection: session state (a scratchpad's notes) lasts
//! across calls. The client keeps the conversation, so the session writes none. The
//! repeated-failure guard (1015) counts across the connection; a refusal starts its count over.
//! `tools/call` params that do not fit are invalid params (-32602), with the reason.
//!
//! ```rust,no_run
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), pleach_mcp::McpError> {
//! use pleach_core::{tool, Runtime};
//!
//! /// Adds two integers.
//! #[tool]
//! async fn add(a: i64, b: i64) -> i64 { a + b }
//!
//! let runtime = Runtime::builder().build().expect("the registry builds");
//! pleach_mcp::serve_stdio(runtime).await
//! # }
//! ```
//!
//! [`Runtime`]: pleach_core::Runtime
//! [`Session`]: pleach_core::Session
//! [`providers::mcp_tools::definition`]: pleach_core::providers::mcp_tools::definition
//! [`providers::mcp_tools::call_tool_result`]: pleach_core::providers::mcp_tools::call_tool_result
//! [`SafetyTier::mcp_annotations`]: pleach_core::SafetyTier::mcp_annotations

// Examples are held to the code's standard: a warning in one fails the doc tests.
#![doc(test(attr(deny(warnings))))]
// Doc tests share one binary and so one tool registry: see pleach-core's `lib.rs`.

mod approval;
mod client;
pub mod defaults;
mod features;
#[cfg(feature = "http")]
pub mod http;
pub mod remote;
mod server;
mod span;
mod stdio;
// Below both the server (which keeps a session's state there) and `http` (which serves it).
#[cfg(feature = "redis")]
mod store;

/// The official Rust SDK this crate speaks MCP with, for the types of
/// [`McpServer::tools`] and the rmcp handler [`McpServer::features`] takes, at the version this
/// crate uses.
pub use rmcp;
pub use server::McpServer;
pub use stdio::{serve, serve_stdio};

use pleach_core::providers::ProfileProblem;
use pleach_core::session::SessionError;

/// Why the MCP server could not start or stopped with an error.
///
/// ```
/// use pleach_mcp::McpError;
/// let err = McpError::Initialize("the client sent no initialize request".into());
/// assert_eq!(err.to_string(), "the MCP handshake failed: the client sent no initialize request");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The runtime's tools could not be put in a session.
    #[error("cannot open a session for the MCP server: {0}")]
    Session(#[from] SessionError),
    /// A tool's schema cannot be described to MCP: each tool and what is wrong.
    #[error("tools MCP cannot describe: {}", describe_problems(.0))]
    Schema(Vec<(String, ProfileProblem)>),
    /// The client's `initialize` failed.
    #[error("the MCP handshake failed: {0}")]
    Initialize(String),
    /// The connection ended with an error.
    #[error("the MCP connection failed: {0}")]
    Connection(String),
    /// An HTTP option is not usable: what and why.
    #[error("invalid MCP HTTP option: {0}")]
    Options(String),
    /// The HTTP address could not be bound.
    #[error("cannot listen on {address}: {source}")]
    Bind {
        /// The address asked for.
        address: std::net::SocketAddr,
        /// Why it could not be bound.
        source: std::io::Error,
    },
    /// An HTTP listener off loopback with no way in configured: refused, since anyone who can
    /// reach it could call every tool.
    #[error(
        "refusing to serve MCP on {0} without authentication: anyone who can reach it could call \
         every tool; configure bearer tokens or JWT validation, listen on loopback, or say \
         `insecure_no_auth` (`--insecure-no-auth`)"
    )]
    NoAuth(std::net::SocketAddr),
    /// The session store cannot be used: a URL it does not take, or a Redis it cannot reach.
    #[error("session store: {0}")]
    SessionStore(String),
}

fn describe_problems(problems: &[(String, ProfileProblem)]) -> String {
    problems
        .iter()
        .map(|(tool, problem)| format!("`{tool}` at `{}`: {}", problem.path, problem.message))
        .collect::<Vec<_>>()
        .join("; ")
}
