//! MCP over Streamable HTTP (feature `http`): the same [`McpServer`] as on stdio, served by
//! rmcp's Streamable HTTP transport behind pleach's own checks.
//!
//! - **Both MCP eras, statelessly**: clients of 2026-07-28 (`server/discover`, the version in
//!   every request) and initialize-based clients (2025-11-25 and before) are each answered request
//!   by request, so any replica can answer any request. Each request runs in a session of its
//!   own: session state (a scratchpad's notes) does not outlive the request.
//! - **Or sessions in Redis** (feature `redis`, [`HttpOptions::session_store`]): an
//!   initialize-based client gets an `Mcp-Session-Id`, any replica answers its requests, and each
//!   call runs with the session's persisted state (a scratchpad's notes) restored from Redis.
//! - **Responses**: JSON for a plain call; SSE when the call sends progress before its result
//!   (rmcp's `json_response`, on by default: [`HttpOptions::json_response`]).
//! - **Origin**: a request whose `Origin` is not allowed ([`HttpOptions::allow_origin`]) gets
//!   403; requests without `Origin` (non-browser clients) pass. `Host` is checked against
//!   loopback names when the server listens on loopback (DNS rebinding), else against
//!   [`HttpOptions::allow_host`] when any are given.
//! - **Who may call**: bearer tokens ([`HttpOptions::bearer_token`], compared in constant time)
//!   and JWT access tokens from an authorization server ([`HttpOptions::jwt`]). A request without
//!   an accepted token gets 401 with `WWW-Authenticate: Bearer resource_metadata="…"`, and the
//!   OAuth protected-resource metadata (RFC 9728) is served at
//!   `/.well-known/oauth-protected-resource/mcp`. [`HttpServer::serve`] refuses a listener that is
//!   not on loopback when no way in is configured, unless told
//!   [`insecure_no_auth`](HttpOptions::insecure_no_auth).
//! - **Operations**: `GET /healthz` answers 200 while serving and 503 while draining. Draining
//!   (SIGTERM or SIGINT for [`serve_http`]) answers 503 on `/healthz` for
//!   [`HttpOptions::drain_notice`] while still serving, then stops taking connections, lets
//!   running calls finish within [`HttpOptions::drain_timeout`], cancels the rest through their
//!   signal (their result, 1011, is still sent) and returns. A POST while the runtime is at
//!   [`max_in_flight`](pleach_core::RuntimeBuilder::max_in_flight) under
//!   [`OverloadPolicy::FailFast`](pleach_core::OverloadPolicy::FailFast) gets 503 with `Retry-After`.
//! - **Limits**: a body over [`HttpOptions::max_body_bytes`] gets 413; malformed JSON-RPC, a
//!   wrong `Accept` or `Content-Type` get the MCP transport's errors from rmcp.
//!
//! The rmcp options set: `legacy_session_mode = false` (stateless; with a session store `true`,
//! with rmcp's `session_store` hook and no SSE priming events), `json_response` from the
//! options, `max_request_body_bytes`, `allowed_hosts` as above, and a cancellation token the
//! drain fires last. rmcp's own Origin check is left off: pleach's runs first, on every route.
//!
//! ```rust,no_run,standalone_crate
//! # #[tokio::main] async fn main() -> Result<(), pleach_mcp::McpError> {
//! use pleach_mcp::http::{serve_http, HttpOptions};
//! use pleach_core::{tool, Runtime};
//!
//! /// Adds two integers.
//! #[tool]
//! async fn add(a: i64, b: i64) -> i64 { a + b }
//!
//! let runtime = Runtime::builder().build().expect("the registry builds");
//! let options = HttpOptions::new("127.0.0.1:8080".parse().unwrap())
//!     .bearer_token(std::env::var("MCP_TOKEN").expect("a token"));
//! serve_http(runtime, options).await // until SIGTERM or SIGINT, then drains
//! # }
//! ```

mod auth;
#[cfg(feature = "redis")]
mod buffered;
mod jwt;
mod origin;
#[cfg(feature = "redis")]
mod store;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

pub use jwt::JwtValidation;
#[cfg(feature = "redis")]
pub use store::{DEFAULT_SESSION_TTL, RedisSessionStore};

use self::auth::Authenticator;
use self::origin::AllowedOrigins;
use super::{McpError, McpServer};
use pleach_core::runtime::Runtime;

/// The largest request body taken by default: 4 MiB (rmcp's default too).
///
/// ```
/// assert_eq!(pleach_mcp::http::DEFAULT_MAX_BODY_BYTES, 4 * 1024 * 1024);
/// ```
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// How long running calls may go on once draining starts, by default.
///
/// ```
/// assert_eq!(pleach_mcp::http::DEFAULT_DRAIN_TIMEOUT.as_secs(), 30);
/// ```
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// The path the protected-resource metadata is served at (RFC 9728 §3.1, for a resource at
/// `/mcp`: the form MCP clients try first).
const METADATA_PATH: &str = "/.well-known/oauth-protected-resource/mcp";
/// The root form of the same document, which clients try next.
const METADATA_ROOT_PATH: &str = "/.well-known/oauth-protected-resource";

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
    listen: SocketAddr,
    allowed_origins: Vec<String>,
    allowed_hosts: Vec<String>,
    tokens: Vec<String>,
    jwt: Option<JwtValidation>,
    resource: Option<String>,
    authorization_servers: Vec<String>,
    max_body_bytes: usize,
    drain_timeout: Duration,
    drain_notice: Duration,
    json_response: bool,
    insecure_no_auth: bool,
    #[cfg(feature = "redis")]
    session_store: Option<RedisSessionStore>,
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
            .field("json_response", &self.json_response)
            .field("insecure_no_auth", &self.insecure_no_auth)
            .finish_non_exhaustive()
    }
}

impl HttpOptions {
    /// Serving on `listen` ([`serve_http`] binds it), with no browser origin allowed, no way in
    /// configured, the default limits and JSON responses.
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
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
            drain_notice: Duration::ZERO,
            json_response: true,
            insecure_no_auth: false,
            #[cfg(feature = "redis")]
            session_store: None,
        }
    }

    /// Allows browser pages of `origin` (`https://app.example.com`, `http://localhost:3000`,
    /// `http://localhost:*` for any port, or `null`). Repeatable.
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
    /// where clients get tokens (`authorization_servers`). Without it, the metadata names
    /// `http://<Host>/mcp` and no authorization server.
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

    /// The largest request body taken; a larger one gets 413.
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

    /// How long running calls may go on once draining starts; then they are cancelled.
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

    /// Keeps MCP sessions and their persisted state in `store` (feature `redis`), so a
    /// session survives its replica and works behind round robin. Without it the server is
    /// stateless: each request runs in a session of its own.
    ///
    /// With a store, a client that starts with `initialize` (MCP before 2026-07-28) gets an
    /// `Mcp-Session-Id`; each of its calls runs with the state the runtime persists
    /// ([`RuntimeBuilder::persist_state`](pleach_core::RuntimeBuilder::persist_state)) restored from
    /// the store, and what the call changed is written back before the result is sent. Such a
    /// client is not asked to approve calls (its answer could reach another replica): a call
    /// that needs approval fails with 1012 for it, as over stateless HTTP. There is no SSE stream
    /// on `GET` (405): this server sends nothing outside a request. Clients of MCP 2026-07-28 have
    /// no sessions and stay stateless.
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

    /// Where [`serve_http`] listens.
    ///
    /// ```
    /// let options = pleach_mcp::http::HttpOptions::new("127.0.0.1:8080".parse().unwrap());
    /// assert_eq!(options.listen().port(), 8080);
    /// ```
    pub fn listen(&self) -> SocketAddr {
        self.listen
    }
}

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
    /// Whether MCP sessions are kept (a session store): `GET` then gets 405, not a stream.
    sessions: bool,
    /// The largest request body taken (a session's request is read whole: `buffered`).
    #[cfg(feature = "redis")]
    max_body_bytes: usize,
    /// The session store: a request of a session it no longer has gets 404.
    #[cfg(feature = "redis")]
    store: Option<RedisSessionStore>,
}

/// An MCP server ready to serve over HTTP: [`router`](HttpServer::router) for the whole site,
/// [`service`](HttpServer::service) to mount the endpoint in an app of one's own, or
/// [`serve`](HttpServer::serve) on a listener.
///
/// ```rust,standalone_crate
/// use pleach_mcp::{http::{HttpOptions, HttpServer}, McpServer};
/// use pleach_core::{tool, Runtime};
///
/// /// Adds two integers.
/// #[tool]
/// async fn add(a: i64, b: i64) -> i64 { a + b }
///
/// let server = McpServer::new(Runtime::builder().build().unwrap()).unwrap();
/// let http = HttpServer::new(server, HttpOptions::new("127.0.0.1:0".parse().unwrap())).unwrap();
/// // Mounted in an app of one's own, beside its other routes:
/// let app: axum::Router = axum::Router::new()
///     .route("/", axum::routing::get(|| async { "hello" }))
///     .nest_service("/mcp", http.service());
/// # let _ = app;
/// ```
#[derive(Clone)]
pub struct HttpServer {
    server: McpServer,
    shared: Arc<Shared>,
    allowed_hosts: Vec<String>,
    max_body_bytes: usize,
    drain_timeout: Duration,
    drain_notice: Duration,
    json_response: bool,
    insecure_no_auth: bool,
    #[cfg(feature = "redis")]
    session_store: Option<RedisSessionStore>,
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("server", &self.server)
            .field("auth", &self.shared.auth.is_enabled())
            .field("draining", &self.is_draining())
            .finish_non_exhaustive()
    }
}

impl HttpServer {
    /// Checks `options` and prepares `server` to be served with them.
    ///
    /// # Errors
    ///
    /// [`McpError::Options`]: an allowed origin that is not an origin, a resource or JWKS URL
    /// that is not a URL, a token that is empty.
    ///
    /// ```
    /// use pleach_mcp::{http::{HttpOptions, HttpServer}, McpServer};
    /// use pleach_core::{Runtime, ToolRegistryBuilder};
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let server = McpServer::new(runtime).unwrap();
    /// let error = HttpServer::new(server, HttpOptions::new("127.0.0.1:0".parse().unwrap())
    ///     .allow_origin("app.example.com")).unwrap_err();
    /// assert!(error.to_string().contains("scheme://host"));
    /// ```
    pub fn new(server: McpServer, options: HttpOptions) -> Result<HttpServer, McpError> {
        let mut origins = AllowedOrigins::default();
        for origin in &options.allowed_origins {
            origins.add(origin).map_err(McpError::Options)?;
        }
        if options.tokens.iter().any(|token| token.trim().is_empty()) {
            return Err(McpError::Options("a bearer token is empty".to_owned()));
        }
        let resource = options
            .resource
            .as_deref()
            .map(|resource| {
                reqwest::Url::parse(resource).map_err(|error| {
                    McpError::Options(format!("the resource `{resource}` is not a URL: {error}"))
                })
            })
            .transpose()?;
        let jwt = options
            .jwt
            .map(jwt::JwtVerifier::new)
            .transpose()
            .map_err(McpError::Options)?;
        let cancel_calls = CancellationToken::new();
        // Every request's server, made from this one, is cancelled by the drain's end.
        let server = server.cancelled_by(cancel_calls.clone());
        #[cfg(feature = "redis")]
        let server = match &options.session_store {
            Some(store) => server.with_state_store(store.clone()),
            None => server,
        };
        #[cfg(feature = "redis")]
        let sessions = options.session_store.is_some();
        #[cfg(not(feature = "redis"))]
        let sessions = false;
        Ok(HttpServer {
            shared: Arc::new(Shared {
                runtime: server.runtime().clone(),
                auth: Authenticator::new(&options.tokens, jwt),
                origins,
                resource,
                authorization_servers: options.authorization_servers,
                draining: CancellationToken::new(),
                cancel_calls: cancel_calls.clone(),
                stop: CancellationToken::new(),
                sessions,
                #[cfg(feature = "redis")]
                max_body_bytes: options.max_body_bytes,
                #[cfg(feature = "redis")]
                store: options.session_store.clone(),
            }),
            server,
            allowed_hosts: options.allowed_hosts,
            max_body_bytes: options.max_body_bytes,
            drain_timeout: options.drain_timeout,
            drain_notice: options.drain_notice,
            json_response: options.json_response,
            insecure_no_auth: options.insecure_no_auth,
            #[cfg(feature = "redis")]
            session_store: options.session_store,
        })
    }

    /// The MCP endpoint as a tower service (an axum [`Router`] with one fallback route), for
    /// `Router::nest_service("/mcp", …)` in an app of one's own. Origin, auth and overload are
    /// checked here. `Host` is held to loopback names unless the options allow hosts.
    ///
    /// ```rust,standalone_crate
    /// use pleach_mcp::{http::{HttpOptions, HttpServer}, McpServer};
    /// use pleach_core::{Runtime, ToolRegistryBuilder};
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let http = HttpServer::new(McpServer::new(runtime).unwrap(),
    ///     HttpOptions::new("127.0.0.1:0".parse().unwrap())).unwrap();
    /// let app: axum::Router = axum::Router::new().nest_service("/mcp", http.service());
    /// # let _ = app;
    /// ```
    pub fn service(&self) -> Router {
        self.endpoint(None)
    }

    /// The whole site: the endpoint at `/mcp`, `GET /healthz`, and the protected-resource
    /// metadata at `/.well-known/oauth-protected-resource/mcp` (and at the root form).
    ///
    /// ```rust,standalone_crate
    /// use pleach_mcp::{http::{HttpOptions, HttpServer}, McpServer};
    /// use pleach_core::{Runtime, ToolRegistryBuilder};
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let http = HttpServer::new(McpServer::new(runtime).unwrap(),
    ///     HttpOptions::new("127.0.0.1:0".parse().unwrap())).unwrap();
    /// let site: axum::Router = http.router();
    /// # let _ = site;
    /// ```
    pub fn router(&self) -> Router {
        self.site(None)
    }

    fn site(&self, listening: Option<SocketAddr>) -> Router {
        Router::new()
            .route("/healthz", get(healthz))
            .route(METADATA_PATH, get(metadata))
            .route(METADATA_ROOT_PATH, get(metadata))
            .with_state(Arc::clone(&self.shared))
            .nest_service("/mcp", self.endpoint(listening))
    }

    fn endpoint(&self, listening: Option<SocketAddr>) -> Router {
        let mut config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(self.json_response)
            .with_max_request_body_bytes(self.max_body_bytes)
            .with_cancellation_token(self.shared.stop.child_token());
        if !self.allowed_hosts.is_empty() {
            config = config.with_allowed_hosts(self.allowed_hosts.iter().cloned());
        } else if listening.is_some_and(|address| !address.ip().is_loopback()) {
            // Not on loopback: the names it is reached by are the deployment's, and a way in is
            // required (see `serve`), so `Host` guards nothing DNS rebinding could reach.
            config = config.disable_allowed_hosts();
        }
        let server = self.server.clone();
        let factory = move || server.with_new_session().map_err(std::io::Error::other);
        #[cfg(feature = "redis")]
        if let Some(store) = &self.session_store {
            // No priming events: they invite clients to resume a stream with `GET`, which this
            // server does not offer (a replica that died took the stream with it).
            config = config.with_legacy_session_mode(true).with_sse_retry(None);
            config.session_store = Some(Arc::new(store.clone()));
            let mut manager = rmcp::transport::streamable_http_server::session::local::LocalSessionManager::default();
            manager.session_config.sse_retry = None;
            return self.guarded(StreamableHttpService::new(
                factory,
                Arc::new(manager),
                config,
            ));
        }
        self.guarded(StreamableHttpService::new(
            factory,
            Arc::new(NeverSessionManager::default()),
            config,
        ))
    }

    /// `rmcp` behind [`guard`].
    fn guarded<M>(&self, rmcp: StreamableHttpService<McpServer, M>) -> Router
    where
        M: rmcp::transport::streamable_http_server::SessionManager,
    {
        Router::new()
            .fallback_service(rmcp)
            .layer(axum::middleware::from_fn_with_state(
                Arc::clone(&self.shared),
                guard,
            ))
    }

    /// Starts draining: `/healthz` answers 503 from now on, and [`serve`](HttpServer::serve)
    /// stops taking connections, lets running calls finish within the drain time, then cancels
    /// the rest.
    ///
    /// ```
    /// use pleach_mcp::{http::{HttpOptions, HttpServer}, McpServer};
    /// use pleach_core::{Runtime, ToolRegistryBuilder};
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let http = HttpServer::new(McpServer::new(runtime).unwrap(),
    ///     HttpOptions::new("127.0.0.1:0".parse().unwrap())).unwrap();
    /// http.start_draining();
    /// assert!(http.is_draining());
    /// ```
    pub fn start_draining(&self) {
        self.shared.draining.cancel();
    }

    /// Whether draining has started.
    ///
    /// ```
    /// use pleach_mcp::{http::{HttpOptions, HttpServer}, McpServer};
    /// use pleach_core::{Runtime, ToolRegistryBuilder};
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let http = HttpServer::new(McpServer::new(runtime).unwrap(),
    ///     HttpOptions::new("127.0.0.1:0".parse().unwrap())).unwrap();
    /// assert!(!http.is_draining());
    /// ```
    pub fn is_draining(&self) -> bool {
        self.shared.draining.is_cancelled()
    }

    /// Whether this server may listen on `address`: not off loopback with no way in configured
    /// (nor [`insecure_no_auth`](HttpOptions::insecure_no_auth)). [`serve`](HttpServer::serve)
    /// checks it; a host that binds its own listener can check before it says it is listening.
    ///
    /// # Errors
    ///
    /// [`McpError::NoAuth`], naming the address.
    ///
    /// ```
    /// use pleach_mcp::{http::{HttpOptions, HttpServer}, McpServer};
    /// use pleach_core::{Runtime, ToolRegistryBuilder};
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let http = HttpServer::new(McpServer::new(runtime).unwrap(),
    ///     HttpOptions::new("0.0.0.0:8080".parse().unwrap())).unwrap();
    /// assert!(http.check_address("127.0.0.1:8080".parse().unwrap()).is_ok());
    /// assert!(http.check_address("0.0.0.0:8080".parse().unwrap()).is_err());
    /// ```
    pub fn check_address(&self, address: SocketAddr) -> Result<(), McpError> {
        if address.ip().is_loopback() || self.shared.auth.is_enabled() || self.insecure_no_auth {
            Ok(())
        } else {
            Err(McpError::NoAuth(address))
        }
    }

    /// Serves [`router`](HttpServer::router) on `listener` until `shutdown` completes (or
    /// [`start_draining`](HttpServer::start_draining) is called), then drains and returns.
    ///
    /// # Errors
    ///
    /// [`McpError::NoAuth`]: the listener is not on loopback and no way in is configured (nor
    /// [`insecure_no_auth`](HttpOptions::insecure_no_auth)); [`McpError::Connection`]: the
    /// listener failed.
    ///
    /// ```rust,no_run
    /// # #[tokio::main] async fn main() -> Result<(), pleach_mcp::McpError> {
    /// use pleach_mcp::{http::{shutdown_signal, HttpOptions, HttpServer}, McpServer};
    /// use pleach_core::{Runtime, ToolRegistryBuilder};
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let http = HttpServer::new(McpServer::new(runtime)?,
    ///     HttpOptions::new("127.0.0.1:0".parse().unwrap()))?;
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// println!("listening on http://{}/mcp", listener.local_addr().unwrap());
    /// http.serve(listener, shutdown_signal()).await
    /// # }
    /// ```
    pub async fn serve(
        &self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), McpError> {
        let address = listener
            .local_addr()
            .map_err(|error| McpError::Connection(error.to_string()))?;
        self.check_address(address)?;
        let draining = self.shared.draining.clone();
        let closing = CancellationToken::new();
        let server = axum::serve(listener, self.site(Some(address)))
            .with_graceful_shutdown(closing.clone().cancelled_owned())
            .into_future();
        tokio::pin!(server);
        let (notice, drain_timeout) = (self.drain_notice, self.drain_timeout);
        let drained = async {
            tokio::select! {
                () = shutdown => draining.cancel(),
                () = draining.cancelled() => {}
            }
            tracing::info!("draining: /healthz answers 503");
            tokio::time::sleep(notice).await;
            // No new connections; running requests go on, on connections kept open for them.
            closing.cancel();
            tokio::time::sleep(drain_timeout).await;
        };
        tokio::select! {
            outcome = &mut server => {
                return outcome.map_err(|error| McpError::Connection(error.to_string()));
            }
            () = drained => {}
        }
        // The drain time is up: cancel what still runs; its result (1011) is still sent.
        tracing::warn!("calls still running when the drain time was up: cancelling them");
        self.shared.cancel_calls.cancel();
        let grace = self.server.runtime().cancel_grace() + Duration::from_secs(1);
        if tokio::time::timeout(grace, &mut server).await.is_err() {
            tracing::warn!("connections still open after the calls were cancelled: closing them");
            self.shared.stop.cancel();
            let _ = tokio::time::timeout(Duration::from_secs(1), &mut server).await;
        }
        Ok(())
    }
}

/// Serves every tool of `runtime` over MCP Streamable HTTP at `http://<listen>/mcp` until SIGTERM
/// or SIGINT, then drains (see [`HttpServer::serve`]).
///
/// # Errors
///
/// See [`HttpServer::new`] and [`HttpServer::serve`]; [`McpError::Bind`]: the address cannot be
/// bound.
///
/// ```rust,no_run
/// # #[tokio::main] async fn main() -> Result<(), pleach_mcp::McpError> {
/// use pleach_mcp::http::{serve_http, HttpOptions};
/// use pleach_core::{Runtime, ToolRegistryBuilder};
/// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
/// serve_http(runtime, HttpOptions::new("127.0.0.1:8080".parse().unwrap())).await
/// # }
/// ```
pub async fn serve_http(runtime: Runtime, options: HttpOptions) -> Result<(), McpError> {
    let listen = options.listen;
    let http = HttpServer::new(McpServer::new(runtime)?, options)?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|source| McpError::Bind {
            address: listen,
            source,
        })?;
    http.serve(listener, shutdown_signal()).await
}

/// Completes on SIGTERM or SIGINT (Ctrl-C): what [`serve_http`] drains on.
///
/// ```rust,no_run
/// # #[tokio::main] async fn main() {
/// pleach_mcp::http::shutdown_signal().await;
/// println!("draining");
/// # }
/// ```
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = terminate.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(error) => {
                tracing::warn!("SIGTERM cannot be caught ({error}); draining on SIGINT only");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Origin, then who is calling, then whether there is room: before rmcp sees the request.
async fn guard(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    if let Some(origin) = request.headers().get(header::ORIGIN)
        && !shared.origins.allows(origin)
    {
        let shown = String::from_utf8_lossy(origin.as_bytes()).into_owned();
        return refuse(
            StatusCode::FORBIDDEN,
            &format!("the origin `{shown}` is not allowed to call this server"),
        );
    }
    if let Err(refusal) = shared.auth.check(request.headers()).await {
        let mut response = refuse(refusal.status(), &refusal.message());
        if let Ok(challenge) =
            HeaderValue::from_str(&refusal.challenge(&metadata_url(&shared, request.headers())))
        {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, challenge);
        }
        return response;
    }
    if shared.sessions && request.method() == axum::http::Method::GET {
        // No stream outside a request: this server sends nothing there, and a stream held open
        // would keep a draining replica (and a reloading nginx) waiting.
        let mut response = json_rpc_error(
            StatusCode::METHOD_NOT_ALLOWED,
            -32000,
            "this server offers no SSE stream outside a request",
        );
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST, DELETE"));
        return response;
    }
    #[cfg(feature = "redis")]
    if let Some(refusal) = check_session(&shared, request.method(), request.headers()).await {
        return refusal;
    }
    if request.method() == axum::http::Method::POST && shared.runtime.refuses_new_calls() {
        return try_again_shortly("the server is at capacity; try again shortly");
    }
    let sent_json = is_json(request.headers());
    #[cfg(feature = "redis")]
    let response = if shared.sessions && request.method() == axum::http::Method::POST {
        buffered::answer(request, next, shared.max_body_bytes).await
    } else {
        next.run(request).await
    };
    #[cfg(not(feature = "redis"))]
    let response = next.run(request).await;
    if response.status().is_client_error() && !is_json(response.headers()) {
        return as_json_rpc_error(response, sent_json).await;
    }
    response
}

/// With a session store, a POST in a session the store no longer has (ended by a `DELETE` on
/// any replica, or expired) gets 404, which tells the client to start a new one, even when this
/// replica still holds the session in memory; each one found has its time to live renewed.
#[cfg(feature = "redis")]
async fn check_session(
    shared: &Shared,
    method: &axum::http::Method,
    headers: &HeaderMap,
) -> Option<Response> {
    let store = shared.store.as_ref()?;
    if method != axum::http::Method::POST {
        return None;
    }
    let session_id = headers.get("mcp-session-id")?.to_str().ok()?.to_owned();
    match store.touch(&session_id).await {
        Ok(true) => None,
        Ok(false) => Some(json_rpc_error(
            StatusCode::NOT_FOUND,
            -32001,
            "session not found: it ended or expired; start a new one with `initialize`",
        )),
        Err(error) => {
            tracing::error!("{error}");
            Some(try_again_shortly(
                "the session store is unavailable; try again shortly",
            ))
        }
    }
}

/// rmcp answers a request it cannot take in plain text: the same status with a JSON-RPC error
/// (no id) as its body, which MCP clients read. A JSON body that does not parse is a parse
/// error (400, -32700) as JSON-RPC says, not rmcp's 415.
async fn as_json_rpc_error(response: Response, sent_json: bool) -> Response {
    let status = response.status();
    let text = axum::body::to_bytes(response.into_body(), 64 * 1024)
        .await
        .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_owned())
        .unwrap_or_default();
    let reason = status.canonical_reason().unwrap_or("refused");
    let message = if text.is_empty() { reason } else { &text };
    if status == StatusCode::UNSUPPORTED_MEDIA_TYPE && sent_json {
        return json_rpc_error(
            StatusCode::BAD_REQUEST,
            -32700,
            &format!("parse error: {message}"),
        );
    }
    json_rpc_error(status, -32600, message)
}

fn is_json(headers: &HeaderMap) -> bool {
    has_content_type(headers, "application/json")
}

/// Whether the `Content-Type` in `headers` is `kind` (with or without parameters).
fn has_content_type(headers: &HeaderMap, kind: &str) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim_start().starts_with(kind))
}

/// 503 with `Retry-After: 1`: a refusal a client should retry in a moment.
fn try_again_shortly(message: &str) -> Response {
    let mut response = refuse(StatusCode::SERVICE_UNAVAILABLE, message);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// A refusal as MCP clients read one: a JSON-RPC error with no id.
fn refuse(status: StatusCode, message: &str) -> Response {
    json_rpc_error(status, -32000, message)
}

fn json_rpc_error(status: StatusCode, code: i64, message: &str) -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": code, "message": message },
    });
    (status, axum::Json(body)).into_response()
}

async fn healthz(State(shared): State<Arc<Shared>>) -> Response {
    if shared.draining.is_cancelled() {
        (StatusCode::SERVICE_UNAVAILABLE, "draining\n").into_response()
    } else {
        (StatusCode::OK, "ok\n").into_response()
    }
}

/// The protected-resource metadata (RFC 9728 §2).
async fn metadata(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let resource = shared.resource.as_ref().map_or_else(
        || format!("http://{}/mcp", host(&headers)),
        ToString::to_string,
    );
    axum::Json(serde_json::json!({
        "resource": resource,
        "authorization_servers": shared.authorization_servers,
        "bearer_methods_supported": ["header"],
        "resource_name": "pleach MCP server",
    }))
    .into_response()
}

/// Where the metadata for this resource is: beside the configured resource, else on the host
/// the request was sent to.
fn metadata_url(shared: &Shared, headers: &HeaderMap) -> String {
    match &shared.resource {
        Some(resource) => {
            let mut url = resource.clone();
            let path = resource.path().trim_end_matches('/');
            url.set_path(&format!("{METADATA_ROOT_PATH}{path}"));
            url.set_query(None);
            url.set_fragment(None);
            url.to_string()
        }
        None => format!("http://{}{METADATA_PATH}", host(headers)),
    }
}

/// The request's `Host`, if it is a plain authority (else `localhost`).
fn host(headers: &HeaderMap) -> String {
    headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .filter(|host| {
            !host.is_empty()
                && host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || ".-:[]".contains(c))
        })
        .unwrap_or("localhost")
        .to_owned()
}
