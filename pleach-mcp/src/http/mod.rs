//! MCP over Streamable HTTP (feature `http`): the same [`McpServer`](crate::McpServer) as on
//! stdio, served by rmcp's Streamable HTTP transport behind pleach's own checks.
//!
//! - **Sessions in memory**: a client that starts with `initialize` (2025-11-25 and before) gets
//!   an `Mcp-Session-Id` and a session held in memory (rmcp's `LocalSessionManager`, at most
//!   [`HttpOptions::max_sessions`], each ending after [`HttpOptions::session_idle_timeout`]):
//!   its calls can ask it things (approvals by elicitation), its state (a scratchpad's notes)
//!   lasts across calls.
//! - **Stateless otherwise**: clients of 2026-07-28 (`server/discover`, the version in every
//!   request), clients that never initialize, and requests naming a session this process does
//!   not hold (another replica's) are answered request by request, each in a session of its own.
//! - **Or sessions in Redis** (feature `redis`, [`HttpOptions::session_store`]): any replica
//!   answers a session's requests, and each call runs with the session's persisted state (a
//!   scratchpad's notes) restored from Redis.
//! - **Responses**: JSON for a call that sends nothing before its result; SSE when it does
//!   (progress, a log message, a request to the client) (rmcp's `json_response`, on by default:
//!   [`HttpOptions::json_response`]; a session's answers alike). Everything a session's call
//!   sends goes on its own answer, in order, before its result; a dropped answer is resumed
//!   with `GET` and `Last-Event-ID` (the streams' events are kept in memory, also a while after
//!   the result). There is no stream outside a request (`GET` without `Last-Event-ID`: 405).
//! - **Origin**: a request whose `Origin` is not allowed ([`HttpOptions::allow_origin`]; on a
//!   loopback address the loopback origins, any port, also are) gets 403; requests without `Origin` (non-browser clients) pass. Pages of an allowed origin get
//!   CORS: their preflights are answered without a token, with the MCP headers allowed, and the
//!   responses carry `Access-Control-Allow-Origin`. `Host` is checked against loopback names
//!   when the server listens on loopback (DNS rebinding), else against
//!   [`HttpOptions::allow_host`] when any are given; two `Host` headers, or an absolute-form
//!   target naming another host, get 400.
//! - **Who may call**: bearer tokens ([`HttpOptions::bearer_token`], compared in constant time)
//!   and JWT access tokens from an authorization server ([`HttpOptions::jwt`]). A request without
//!   an accepted token gets 401 with `WWW-Authenticate: Bearer resource_metadata="…"`, and the
//!   OAuth protected-resource metadata (RFC 9728) is served at
//!   `/.well-known/oauth-protected-resource/mcp`; both name the configured resource
//!   ([`HttpOptions::protected_resource`]), else the server's own address, never the `Host` a
//!   request brought. [`HttpServer::serve`] refuses a listener that is
//!   not on loopback when no way in is configured, unless told
//!   [`insecure_no_auth`](HttpOptions::insecure_no_auth).
//! - **Operations**: `GET /healthz` answers 200 while serving and 503 while draining. Draining
//!   (SIGTERM or SIGINT for [`serve_http`]) answers 503 on `/healthz` for
//!   [`HttpOptions::drain_notice`] while still serving, then stops taking connections, lets
//!   running calls finish within [`HttpOptions::drain_timeout`], cancels the rest through their
//!   signal (their result, 1011, is still sent) and returns; connections with no request
//!   running are closed as the drain starts. A POST while the runtime is at
//!   [`max_in_flight`](pleach_core::RuntimeBuilder::max_in_flight) under
//!   [`OverloadPolicy::FailFast`](pleach_core::OverloadPolicy::FailFast) gets 503 with
//!   `Retry-After`: its call's slot is taken before it is read, so a request let through is never
//!   refused later.
//! - **Connections** ([`HttpServer::serve`]): HTTP/1.1 only, in every build (no h2c); a request's
//!   headers within [`HttpOptions::header_timeout`], else the connection is closed; at most
//!   [`HttpOptions::max_connections`] open, new ones waiting in the backlog past it.
//! - **Limits**: a body over [`HttpOptions::max_body_bytes`] gets 413 (at once when its
//!   `Content-Length` says so, before it is sent); malformed JSON-RPC, a
//!   wrong `Accept` or `Content-Type` get the MCP transport's errors from rmcp.
//!
//! The rmcp options set: two services, one with `legacy_session_mode = true` for sessions (with a
//! session store, rmcp's `session_store` hook and no SSE priming events) and one with `false` for
//! the rest, `json_response` from the
//! options, `max_request_body_bytes`, `allowed_hosts` as above, and a cancellation token the
//! drain fires last. rmcp's own Origin check is left off: pleach's runs first, on every route.
//!
//! This file holds what every request of one server shares; the options are `options.rs`, the
//! server, its site and its drain `server.rs`, CORS for browsers `cors.rs`, its connections
//! `connections.rs`, the checks in front of rmcp `guard.rs`, which requests belong to a session
//! `sessions.rs`, a session's answer as JSON or SSE `buffered.rs` (with a call's own messages,
//! `client/call_stream.rs`), the sessions' streams kept for resumption `events.rs`, and refusals as JSON-RPC
//! errors `refusal.rs`.
//!
//! ```rust,no_run
//! # #[tokio::main] async fn main() -> Result<(), pleach_mcp::McpError> {
//! use pleach_mcp::http::{serve_http, HttpOptions};
//! use pleach_core::{tool, Runtime};
//!
//! /// Doubles an integer.
//! #[tool]
//! async fn double(n: i64) -> i64 { n * 2 }
//!
//! let runtime = Runtime::builder().build().expect("the registry builds");
//! let options = HttpOptions::new("127.0.0.1:8080".parse().unwrap())
//!     .bearer_token(std::env::var("MCP_TOKEN").expect("a token"));
//! serve_http(runtime, options).await // until SIGTERM or SIGINT, then drains
//! # }
//! ```

mod auth;
mod body;
mod buffered;
mod connections;
mod cors;
mod events;
mod guard;
mod jwt;
mod options;
mod origin;
mod refusal;
mod server;
mod sessions;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use tokio_util::sync::CancellationToken;

#[cfg(feature = "redis")]
pub use crate::store::RedisSessionStore;
pub use jwt::JwtValidation;
pub use options::HttpOptions;
pub use server::{HttpServer, serve_http, shutdown_signal};

use self::auth::Authenticator;
use self::origin::AllowedOrigins;
use pleach_core::runtime::Runtime;

/// The path the protected-resource metadata is served at (RFC 9728 §3.1, for a resource at
/// `/mcp`: the form MCP clients try first).
const METADATA_PATH: &str = "/.well-known/oauth-protected-resource/mcp";
/// The root form of the same document, which clients try next.
const METADATA_ROOT_PATH: &str = "/.well-known/oauth-protected-resource";

/// What every request of one server shares.
struct Shared {
    runtime: Runtime,
    auth: Authenticator,
    origins: AllowedOrigins,
    resource: Option<reqwest::Url>,
    authorization_servers: Vec<String>,
    /// Fired when draining starts: `/healthz` answers 503, the listener closes.
    draining: CancellationToken,
    /// Fired when the drain time is up: running calls are cancelled through their signal.
    cancel_calls: CancellationToken,
    /// Fired last: rmcp ends what is still open.
    stop: CancellationToken,
    /// The MCP sessions held in memory (rmcp's manager, shared with the service that answers
    /// their requests): counted against `max_sessions`.
    sessions: std::sync::Arc<LocalSessionManager>,
    /// The sessions' calls answered with a stream, for a resumed stream to find.
    open_calls: crate::client::OpenCalls,
    /// At most this many sessions: an `initialize` past it gets 503.
    max_sessions: usize,
    /// The `initialize`s let through whose answer is not made yet, counted with the sessions.
    starting: std::sync::atomic::AtomicUsize,
    /// Held while an `initialize` is counted and let through.
    admitting: tokio::sync::Mutex<()>,
    /// The largest request body taken (a larger announced one gets 413 at once; a session's
    /// request is read whole: `buffered`).
    max_body_bytes: usize,
    /// Where the server listens, as configured ([`HttpOptions::new`]).
    listen: std::net::SocketAddr,
    /// Where [`HttpServer::serve`] listens, once it does (port 0 resolved).
    bound: std::sync::OnceLock<std::net::SocketAddr>,
    /// The session store: a request of a session it no longer has gets 404.
    #[cfg(feature = "redis")]
    store: Option<RedisSessionStore>,
}

impl Shared {
    /// This server's own address: the bound one once serving, else the configured one. What
    /// the metadata names without a configured resource, never a `Host` a request brought.
    fn address(&self) -> std::net::SocketAddr {
        self.bound.get().copied().unwrap_or(self.listen)
    }
}
