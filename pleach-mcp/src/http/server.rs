//! [`HttpServer`]: an MCP server made ready to serve (its options checked), its site (the
//! endpoint behind the guard, `/healthz`, the protected-resource metadata), serving on a listener
//! and draining; [`serve_http`] and the [`shutdown_signal`] it drains on.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

#[cfg(feature = "redis")]
use super::RedisSessionStore;
use super::auth::Authenticator;
use super::connections::{self, ConnectionLimits};
use super::cors::{self, BrowserCors};
use super::guard::Guarded;
use super::jwt;
use super::options::HttpOptions;
use super::origin::AllowedOrigins;
use super::sessions::Services;
use super::{METADATA_PATH, METADATA_ROOT_PATH, Shared};
use crate::{McpError, McpServer};
use pleach_core::runtime::Runtime;

/// An MCP server ready to serve over HTTP: [`router`](HttpServer::router) for the whole site,
/// [`service`](HttpServer::service) to mount the endpoint in an app of one's own, or
/// [`serve`](HttpServer::serve) on a listener.
///
/// ```rust
/// use pleach_mcp::{http::{HttpOptions, HttpServer}, McpServer};
/// use pleach_core::{tool, Runtime};
///
/// /// Subtracts one integer from another.
/// #[tool]
/// async fn subtract(a: i64, b: i64) -> i64 { a - b }
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
    connection_limits: ConnectionLimits,
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
        if options.listen.ip().is_loopback() {
            origins.allow_loopback();
        }
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
        // The sessions' streams are kept in memory, so a dropped one resumes (with a store no
        // stream is resumed: the replica that held it may be gone).
        #[cfg(feature = "redis")]
        let resumable = options.session_store.is_none();
        #[cfg(not(feature = "redis"))]
        let resumable = true;
        let mut sessions = if resumable {
            LocalSessionManager::default()
                .with_event_store(Arc::new(super::events::SharedEvents::default()))
        } else {
            LocalSessionManager::default()
        };
        sessions.session_config.keep_alive = Some(options.session_idle_timeout);
        if !resumable {
            sessions.session_config.sse_retry = None;
        }
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
                sessions: Arc::new(sessions),
                open_calls: crate::client::OpenCalls::default(),
                max_sessions: options.max_sessions,
                starting: std::sync::atomic::AtomicUsize::new(0),
                admitting: tokio::sync::Mutex::new(()),
                max_body_bytes: options.max_body_bytes,
                listen: options.listen,
                bound: std::sync::OnceLock::new(),
                #[cfg(feature = "redis")]
                store: options.session_store.clone(),
            }),
            server,
            allowed_hosts: options.allowed_hosts,
            max_body_bytes: options.max_body_bytes,
            drain_timeout: options.drain_timeout,
            drain_notice: options.drain_notice,
            connection_limits: ConnectionLimits {
                max_connections: options.max_connections,
                header_timeout: options.header_timeout,
            },
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
    /// ```rust
    /// use pleach_mcp::{http::{HttpOptions, HttpServer}, McpServer};
    /// use pleach_core::{Runtime, ToolRegistryBuilder};
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let http = HttpServer::new(McpServer::new(runtime).unwrap(),
    ///     HttpOptions::new("127.0.0.1:0".parse().unwrap())).unwrap();
    /// let app: axum::Router = axum::Router::new().nest_service("/mcp", http.service());
    /// # let _ = app;
    /// ```
    pub fn service(&self) -> Router {
        let endpoint = self.endpoint(None);
        match self.cors() {
            Some(cors) => Router::new().fallback_service(BrowserCors::new(cors, endpoint)),
            None => Router::new().fallback_service(endpoint),
        }
    }

    /// The whole site: the endpoint at `/mcp`, `GET /healthz`, and the protected-resource
    /// metadata at `/.well-known/oauth-protected-resource/mcp` (and at the root form).
    ///
    /// ```rust
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
        let routes = Router::new()
            .route("/healthz", get(healthz))
            .route(METADATA_PATH, get(metadata))
            .route(METADATA_ROOT_PATH, get(metadata))
            .with_state(Arc::clone(&self.shared));
        let endpoint = self.endpoint(listening);
        // The endpoint is mounted after the layer, which wraps the routes there are so far: it
        // has CORS of its own, which spares requests without `Origin` the layer's work.
        match self.cors() {
            Some(cors) => routes
                .layer(cors.clone())
                .nest_service("/mcp", BrowserCors::new(cors, endpoint)),
            None => routes.nest_service("/mcp", endpoint),
        }
    }

    /// The CORS for browser pages of the allowed origins; none when none are allowed.
    /// Preflights (`OPTIONS`) are answered before the guard, so they need no token; the guard
    /// still refuses every other origin's requests with 403.
    fn cors(&self) -> Option<tower_http::cors::CorsLayer> {
        (!self.shared.origins.is_empty()).then(|| cors::layer(Arc::clone(&self.shared)))
    }

    fn endpoint(&self, listening: Option<SocketAddr>) -> Guarded {
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
        let stateless_server = self.server.clone();
        let stateless = StreamableHttpService::new(
            move || {
                stateless_server
                    .with_new_session()
                    .map(McpServer::without_channel_back)
                    .map_err(std::io::Error::other)
            },
            Arc::new(NeverSessionManager::default()),
            config.clone(),
        );
        #[cfg_attr(not(feature = "redis"), allow(unused_mut))]
        let mut config = config.with_legacy_session_mode(true);
        #[cfg(feature = "redis")]
        if let Some(store) = &self.session_store {
            // No priming events: they invite clients to resume a stream with `GET`, which this
            // server does not offer with a store (a replica that died took the stream with it).
            config = config.with_sse_retry(None);
            config.session_store = Some(Arc::new(store.clone()));
        }
        let sessions =
            StreamableHttpService::new(factory, Arc::clone(&self.shared.sessions), config);
        Guarded::new(
            Arc::clone(&self.shared),
            Services {
                sessions,
                stateless,
            },
        )
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
        let _ = self.shared.bound.set(address);
        if self.shared.resource.is_none() && !address.ip().is_loopback() {
            tracing::warn!(
                "no resource URL configured: the protected-resource metadata names \
                 http://{address}/mcp, which clients reaching this server by another name refuse"
            );
        }
        let draining = self.shared.draining.clone();
        let closing = CancellationToken::new();
        let server = connections::serve(
            listener,
            self.site(Some(address)),
            self.connection_limits,
            closing.clone(),
        );
        tokio::pin!(server);
        let (notice, drain_timeout) = (self.drain_notice, self.drain_timeout);
        let drained = async {
            tokio::select! {
                () = shutdown => draining.cancel(),
                () = draining.cancelled() => {}
            }
            tracing::info!("draining: /healthz answers 503");
            tokio::time::sleep(notice).await;
            // No new connections; idle ones close; running requests go on, on connections kept
            // open for them.
            closing.cancel();
            tokio::time::sleep(drain_timeout).await;
        };
        tokio::select! {
            () = &mut server => return Ok(()),
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

async fn healthz(State(shared): State<Arc<Shared>>) -> Response {
    if shared.draining.is_cancelled() {
        (StatusCode::SERVICE_UNAVAILABLE, "draining\n").into_response()
    } else {
        (StatusCode::OK, "ok\n").into_response()
    }
}

/// The protected-resource metadata (RFC 9728 §2): the configured resource, else this server's
/// own address (never the request's `Host`).
async fn metadata(State(shared): State<Arc<Shared>>) -> Response {
    let resource = shared.resource.as_ref().map_or_else(
        || format!("http://{}/mcp", shared.address()),
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
