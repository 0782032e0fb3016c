//! Every default of pleach-mcp that is a number, a size, a duration or a name, in one place:
//! each is what its setting is when a host does not set it, and the setter's doc names it.
//! On/off defaults are said in their setter's doc alone.
//!
//! | constant | the default of |
//! | --- | --- |
//! | [`CONNECT_TIMEOUT`], [`MAX_TOOLS`] | a remote server ([`McpRemote`](crate::remote::McpRemote)) |
//! | `MAX_BODY_BYTES`, `DRAIN_TIMEOUT`, `HEADER_TIMEOUT`, `MAX_CONNECTIONS`, `MAX_SESSIONS`, `SESSION_IDLE_TIMEOUT` (feature `http`) | the HTTP server (`http::HttpOptions`) |
//! | `SESSION_TTL`, `SESSION_KEY_PREFIX` (feature `redis`) | the session store (`http::RedisSessionStore`) |
//!
//! ```
//! assert_eq!(pleach_mcp::defaults::MAX_TOOLS, 1000);
//! ```

use std::time::Duration;

/// How long starting a remote server and the handshake may take: the default of
/// [`McpRemote::connect_timeout`](crate::remote::McpRemote::connect_timeout), 30 seconds.
///
/// ```
/// assert_eq!(pleach_mcp::defaults::CONNECT_TIMEOUT.as_secs(), 30);
/// ```
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How many tools of one remote server are used; the rest are skipped with a warning: the
/// default of [`McpRemote::max_tools`](crate::remote::McpRemote::max_tools), 1000.
///
/// ```
/// assert_eq!(pleach_mcp::defaults::MAX_TOOLS, 1000);
/// ```
pub const MAX_TOOLS: usize = 1000;

/// The largest request body the HTTP server takes: the default of
/// [`HttpOptions::max_body_bytes`](crate::http::HttpOptions::max_body_bytes), 4 MiB (rmcp's
/// default too).
///
/// ```
/// assert_eq!(pleach_mcp::defaults::MAX_BODY_BYTES, 4 * 1024 * 1024);
/// ```
#[cfg(feature = "http")]
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// How long running calls may go on once the HTTP server starts draining: the default of
/// [`HttpOptions::drain_timeout`](crate::http::HttpOptions::drain_timeout), 30 seconds.
///
/// ```
/// assert_eq!(pleach_mcp::defaults::DRAIN_TIMEOUT.as_secs(), 30);
/// ```
#[cfg(feature = "http")]
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a connection may take to send a request's headers (and sit idle between requests):
/// the default of [`HttpOptions::header_timeout`](crate::http::HttpOptions::header_timeout),
/// 30 seconds.
///
/// ```
/// assert_eq!(pleach_mcp::defaults::HEADER_TIMEOUT.as_secs(), 30);
/// ```
#[cfg(feature = "http")]
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(30);

/// How many connections the HTTP server keeps open at once: the default of
/// [`HttpOptions::max_connections`](crate::http::HttpOptions::max_connections), 512 (below the
/// usual descriptor limit of 1024).
///
/// ```
/// assert_eq!(pleach_mcp::defaults::MAX_CONNECTIONS, 512);
/// ```
#[cfg(feature = "http")]
pub const MAX_CONNECTIONS: usize = 512;

/// How many MCP sessions the HTTP server holds in memory at once: the default of
/// [`HttpOptions::max_sessions`](crate::http::HttpOptions::max_sessions), 1024.
///
/// ```
/// assert_eq!(pleach_mcp::defaults::MAX_SESSIONS, 1024);
/// ```
#[cfg(feature = "http")]
pub const MAX_SESSIONS: usize = 1024;

/// How long the HTTP server holds an MCP session that sees no message in memory: the default of
/// [`HttpOptions::session_idle_timeout`](crate::http::HttpOptions::session_idle_timeout),
/// 5 minutes.
///
/// ```
/// assert_eq!(pleach_mcp::defaults::SESSION_IDLE_TIMEOUT.as_secs(), 300);
/// ```
#[cfg(feature = "http")]
pub const SESSION_IDLE_TIMEOUT: Duration = Duration::from_mins(5);

/// How long a session and its state are kept after their last use: the default of
/// [`RedisSessionStore::ttl`](crate::http::RedisSessionStore::ttl), a day.
///
/// ```
/// assert_eq!(pleach_mcp::defaults::SESSION_TTL.as_secs(), 24 * 60 * 60);
/// ```
#[cfg(feature = "redis")]
pub const SESSION_TTL: Duration = Duration::from_hours(24);

/// What every key of the session store starts with: the default of
/// [`RedisSessionStore::prefix`](crate::http::RedisSessionStore::prefix).
///
/// ```
/// assert_eq!(pleach_mcp::defaults::SESSION_KEY_PREFIX, "pleach:mcp:");
/// ```
#[cfg(feature = "redis")]
pub const SESSION_KEY_PREFIX: &str = "pleach:mcp:";
