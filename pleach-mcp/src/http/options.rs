//! [`HttpOptions`] and its builder methods: where the server listens, which origins and hosts
//! may reach it, who may call (bearer tokens, JWTs, the protected-resource metadata), its limits,
//! how it drains, and (feature `redis`) where its sessions are kept. The defaults are in
//! [`defaults`](crate::defaults).

use std::net::SocketAddr;
use std::time::Duration;

use super::JwtValidation;
#[cfg(feature = "redis")]
use super::RedisSessionStore;
use crate::defaults;

/// How an MCP server is served over HTTP: where, to whom, and within which limits.
///
/// ```
/// use std::time::Duration;
/// use pleach_mcp::http::{HttpOptions, JwtValidation};
///
/// let options = HttpOptions::new("0.0.0.0:8080".parse().unwrap())
///     .allow_origin("https://app.example.com")
///     .allow_host("tools.example.com")
///     .jwt(JwtValidation::new(
///         "https://auth.example.com/.well-known/jwks.json",
///         "https://auth.example.com/",
///         "https://tools.example.com/mcp",
///     ))
///     .protected_resource("https://tools.example.com/mcp", ["https://auth.example.com/"])
///     .max_body_bytes(1024 * 1024)
///     .drain_timeout(Duration::from_secs(10));
/// assert!(options.has_auth());
/// ```
#[derive(Clone)]
pub struct HttpOptions {
    pub(super) listen: SocketAddr,
    pub(super) allowed_origins: Vec<String>,
    pub(super) allowed_hosts: Vec<String>,
    pub(super) tokens: Vec<String>,
    pub(super) jwt: Option<JwtValidation>,
    pub(super) resource: Option<String>,
    pub(super) authorization_servers: Vec<String>,
    pub(super) max_body_bytes: usize,
    pub(super) drain_timeout: Duration,
    pub(super) drain_notice: Duration,
    pub(super) header_timeout: Duration,
    pub(super) max_connections: usize,
    pub(super) json_response: bool,
    pub(super) insecure_no_auth: bool,
    pub(super) max_sessions: usize,
    pub(super) session_idle_timeout: Duration,
    #[cfg(feature = "redis")]
    pub(super) session_store: Option<RedisSessionStore>,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("listen", &self.listen)
            .field("allowed_origins", &self.allowed_origins)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("tokens", &format_args!("[{} hidden]", self.tokens.len()))
            .field("jwt", &self.jwt)
            .field("resource", &self.resource)
            .field("authorization_servers", &self.authorization_servers)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("drain_timeout", &self.drain_timeout)
            .field("drain_notice", &self.drain_notice)
            .field("header_timeout", &self.header_timeout)
            .field("max_connections", &self.max_connections)
            .field("json_response", &self.json_response)
            .field("insecure_no_auth", &self.insecure_no_auth)
            .field("max_sessions", &self.max_sessions)
            .field("session_idle_timeout", &self.session_idle_timeout)
            .finish_non_exhaustive()
    }
}

impl HttpOptions {
    /// Serving on `listen` ([`serve_http`](super::serve_http) binds it), with no browser origin
    /// allowed but loopback ones on a loopback `listen`, no way in configured, the default limits and JSON responses.
    ///
    /// ```
    /// let options = pleach_mcp::http::HttpOptions::new("127.0.0.1:0".parse().unwrap());
    /// assert!(!options.has_auth());
    /// ```
    pub fn new(listen: SocketAddr) -> HttpOptions {
        HttpOptions {
            listen,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            tokens: Vec::new(),
            jwt: None,
            resource: None,
            authorization_servers: Vec::new(),
            max_body_bytes: defaults::MAX_BODY_BYTES,
            drain_timeout: defaults::DRAIN_TIMEOUT,
            drain_notice: Duration::ZERO,
            header_timeout: defaults::HEADER_TIMEOUT,
            max_connections: defaults::MAX_CONNECTIONS,
            json_response: true,
            insecure_no_auth: false,
            max_sessions: defaults::MAX_SESSIONS,
            session_idle_timeout: defaults::SESSION_IDLE_TIMEOUT,
            #[cfg(feature = "redis")]
            session_store: None,
        }
    }

    /// Allows browser pages of `origin` (`https://app.example.com`, `http://localhost:3000`,
    /// `http://localhost:*` for any port, or `null`). Repeatable. Their CORS preflights
    /// (`OPTIONS`) are answered without a token, and the responses to their requests carry
    /// `Access-Control-Allow-Origin`; any other `Origin` gets 403 and no CORS header. A server
    /// whose `listen` address is loopback allows the loopback origins (`http://127.0.0.1`,
    /// `http://localhost`, `http://[::1]`, any port) without this.
    ///
    /// ```
    /// let options = pleach_mcp::http::HttpOptions::new("127.0.0.1:0".parse().unwrap())
    ///     .allow_origin("http://localhost:*");
    /// # let _ = options;
    /// ```
    #[must_use]
    pub fn allow_origin(mut self, origin: impl Into<String>) -> HttpOptions {
        self.allowed_origins.push(origin.into());
        self
    }

    /// Answers requests whose `Host` is `host` (a name, or `name:port`). Repeatable. Without
    /// any, a server on loopback answers loopback names only (DNS rebinding), and one on
    /// another address any `Host`.
    ///
    /// ```
    /// let options = pleach_mcp::http::HttpOptions::new("0.0.0.0:8080".parse().unwrap())
    ///     .allow_host("tools.example.com");
    /// # let _ = options;
    /// ```
    #[must_use]
    pub fn allow_host(mut self, host: impl Into<String>) -> HttpOptions {
        self.allowed_hosts.push(host.into());
        self
    }

    /// Accepts `Authorization: Bearer <token>`. Repeatable (one per client, say, so one can be
    /// revoked alone).
    ///
    /// ```
    /// let options = pleach_mcp::http::HttpOptions::new("127.0.0.1:0".parse().unwrap())
    ///     .bearer_token("a-long-random-secret");
    /// assert!(options.has_auth());
    /// ```
    #[must_use]
    pub fn bearer_token(mut self, token: impl Into<String>) -> HttpOptions {
        self.tokens.push(token.into());
        self
    }

    /// Accepts JWT access tokens as `jwt` describes (besides any bearer token).
    ///
    /// ```
    /// use pleach_mcp::http::{HttpOptions, JwtValidation};
    /// let options = HttpOptions::new("127.0.0.1:0".parse().unwrap())
    ///     .jwt(JwtValidation::new("http://127.0.0.1:9000/jwks", "issuer", "audience"));
    /// assert!(options.has_auth());
    /// ```
    #[must_use]
    pub fn jwt(mut self, jwt: JwtValidation) -> HttpOptions {
        self.jwt = Some(jwt);
        self
    }

    /// What the protected-resource metadata says: this server's public URL (`resource`) and
    /// where clients get tokens (`authorization_servers`). Without it, the metadata (and the
    /// 401's challenge) name the address the server listens on, `http://<address>/mcp`, never the
    /// request's `Host`, and no authorization server: off loopback, set it, since clients check
    /// that the metadata names the URL they called (RFC 9728 §3.3).
    ///
    /// ```
    /// let options = pleach_mcp::http::HttpOptions::new("127.0.0.1:0".parse().unwrap())
    ///     .protected_resource("https://tools.example.com/mcp", ["https://auth.example.com/"]);
    /// # let _ = options;
    /// ```
    #[must_use]
    pub fn protected_resource(
        mut self,
        resource: impl Into<String>,
        authorization_servers: impl IntoIterator<Item = impl Into<String>>,
    ) -> HttpOptions {
        self.resource = Some(resource.into());
        self.authorization_servers = authorization_servers.into_iter().map(Into::into).collect();
        self
    }

    /// The largest request body taken (default [`defaults::MAX_BODY_BYTES`], 4 MiB); a larger one
    /// gets 413.
    ///
    /// ```
    /// let options = pleach_mcp::http::HttpOptions::new("127.0.0.1:0".parse().unwrap())
    ///     .max_body_bytes(64 * 1024);
    /// # let _ = options;
    /// ```
    #[must_use]
    pub fn max_body_bytes(mut self, bytes: usize) -> HttpOptions {
        self.max_body_bytes = bytes;
        self
    }

    /// How long running calls may go on once draining starts (default
    /// [`defaults::DRAIN_TIMEOUT`], 30 s); then they are cancelled.
    ///
    /// ```
    /// let options = pleach_mcp::http::HttpOptions::new("127.0.0.1:0".parse().unwrap())
    ///     .drain_timeout(std::time::Duration::from_secs(5));
    /// # let _ = options;
    /// ```
    #[must_use]
    pub fn drain_timeout(mut self, timeout: Duration) -> HttpOptions {
        self.drain_timeout = timeout;
        self
    }

    /// How long a draining server keeps serving, with `/healthz` answering 503, before it stops
    /// taking connections: the time a load balancer that polls health checks needs to take it out
    /// of rotation (zero by default: a balancer that only sees refused connections, such as
    /// nginx's passive checks, moves on at once).
    ///
    /// ```
    /// let options = pleach_mcp::http::HttpOptions::new("127.0.0.1:0".parse().unwrap())
    ///     .drain_notice(std::time::Duration::from_secs(5));
    /// # let _ = options;
    /// ```
    #[must_use]
    pub fn drain_notice(mut self, notice: Duration) -> HttpOptions {
        self.drain_notice = notice;
        self
    }

    /// How long a connection may take to send a request's headers (default
    /// [`defaults::HEADER_TIMEOUT`], 30 s), counted from when the server waits for them: from
    /// the connection's start, and on a kept-alive connection from the end of the previous
    /// response, so it is also how long a connection may sit idle. Then the connection is closed.
    ///
    /// ```
    /// let options = pleach_mcp::http::HttpOptions::new("127.0.0.1:0".parse().unwrap())
    ///     .header_timeout(std::time::Duration::from_secs(10));
    /// # let _ = options;
    /// ```
    #[must_use]
    pub fn header_timeout(mut self, timeout: Duration) -> HttpOptions {
        self.header_timeout = timeout;
        self
    }

    /// How many connections may be open at once (default [`defaults::MAX_CONNECTIONS`], 512; at
    /// least 1). At the cap no connection is accepted until one closes: new ones wait in the
    /// listener's backlog, so the server spends no descriptor on them, and are served as slow ones
    /// are cut by the [header timeout](HttpOptions::header_timeout). Keep it below the process's
    /// descriptor limit (`ulimit -n`).
    ///
    /// ```
    /// let options = pleach_mcp::http::HttpOptions::new("127.0.0.1:0".parse().unwrap())
    ///     .max_connections(256);
    /// # let _ = options;
    /// ```
    #[must_use]
    pub fn max_connections(mut self, connections: usize) -> HttpOptions {
        self.max_connections = connections.max(1);
        self
    }

    /// Whether a call that sends nothing before its result is answered with JSON (`true`, the
    /// default) or always with an SSE stream. A call that reports progress is streamed either
    /// way.
    ///
    /// ```
    /// let options = pleach_mcp::http::HttpOptions::new("127.0.0.1:0".parse().unwrap())
    ///     .json_response(false);
    /// # let _ = options;
    /// ```
    #[must_use]
    pub fn json_response(mut self, json: bool) -> HttpOptions {
        self.json_response = json;
        self
    }

    /// Serves a listener that is not on loopback with no way in configured: anyone who can
    /// reach the port can call every tool. For a network that is itself the boundary.
    ///
    /// ```
    /// let options = pleach_mcp::http::HttpOptions::new("0.0.0.0:8080".parse().unwrap())
    ///     .insecure_no_auth();
    /// # let _ = options;
    /// ```
    #[must_use]
    pub fn insecure_no_auth(mut self) -> HttpOptions {
        self.insecure_no_auth = true;
        self
    }

    /// At most `max` MCP sessions held at once (default
    /// [`MAX_SESSIONS`](crate::defaults::MAX_SESSIONS)): an `initialize` past it gets 503 with
    /// `Retry-After`, so a flood of sessions cannot exhaust memory. Each session holds a bounded
    /// buffer of the messages it sent.
    ///
    /// ```
    /// let options = pleach_mcp::http::HttpOptions::new("127.0.0.1:0".parse().unwrap())
    ///     .max_sessions(100);
    /// # let _ = options;
    /// ```
    #[must_use]
    pub fn max_sessions(mut self, max: usize) -> HttpOptions {
        self.max_sessions = max;
        self
    }

    /// How long an MCP session that sees no message (from its client or its calls) is held
    /// (default [`SESSION_IDLE_TIMEOUT`](crate::defaults::SESSION_IDLE_TIMEOUT)); then it ends
    /// and its client gets 404, which tells it to start a new one. A call that runs longer
    /// without a word ends with its session.
    ///
    /// ```
    /// use std::time::Duration;
    /// let options = pleach_mcp::http::HttpOptions::new("127.0.0.1:0".parse().unwrap())
    ///     .session_idle_timeout(Duration::from_secs(600));
    /// # let _ = options;
    /// ```
    #[must_use]
    pub fn session_idle_timeout(mut self, timeout: Duration) -> HttpOptions {
        self.session_idle_timeout = timeout.max(Duration::from_secs(1));
        self
    }

    /// Keeps MCP sessions and their persisted state in `store` (feature `redis`), so a
    /// session survives its replica and works behind round robin. Without it sessions are held
    /// in this process's memory.
    ///
    /// With a store, a client that starts with `initialize` (MCP before 2026-07-28) gets an
    /// `Mcp-Session-Id`; each of its calls runs with the state the runtime persists
    /// ([`RuntimeBuilder::persist_state`](pleach_core::RuntimeBuilder::persist_state)) restored from
    /// the store, and what the call changed is written back before the result is sent. Such a
    /// client is not asked to approve calls (its answer could reach another replica): a call
    /// that needs approval fails with 1012 for it, as over stateless HTTP. There is no SSE stream
    /// on `GET` (405), to resume either: the replica that held a call's stream may be gone.
    /// Clients that never
    /// initialize (MCP 2026-07-28 ones among them) have no sessions and stay stateless.
    ///
    /// ```rust,no_run
    /// # #[tokio::main] async fn main() -> Result<(), pleach_mcp::McpError> {
    /// use pleach_mcp::http::{HttpOptions, RedisSessionStore};
    /// let store = RedisSessionStore::connect("redis://127.0.0.1:6379/").await?;
    /// let options = HttpOptions::new("127.0.0.1:8080".parse().unwrap()).session_store(store);
    /// # let _ = options;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "redis")]
    #[must_use]
    pub fn session_store(mut self, store: RedisSessionStore) -> HttpOptions {
        self.session_store = Some(store);
        self
    }

    /// Whether a bearer token or a JWT check is configured.
    ///
    /// ```
    /// let options = pleach_mcp::http::HttpOptions::new("127.0.0.1:0".parse().unwrap());
    /// assert!(!options.has_auth());
    /// ```
    pub fn has_auth(&self) -> bool {
        !self.tokens.is_empty() || self.jwt.is_some()
    }

    /// Where [`serve_http`](super::serve_http) listens.
    ///
    /// ```
    /// let options = pleach_mcp::http::HttpOptions::new("127.0.0.1:8080".parse().unwrap());
    /// assert_eq!(options.listen().port(), 8080);
    /// ```
    pub fn listen(&self) -> SocketAddr {
        self.listen
    }
}
