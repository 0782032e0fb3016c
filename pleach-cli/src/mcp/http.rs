//! `pleach mcp --http ADDR`: the registry over MCP Streamable HTTP, with its flags.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use pleach_core::OverloadPolicy;
use pleach_mcp::McpError;
use pleach_mcp::McpServer;
use pleach_mcp::http::{HttpOptions, HttpServer, JwtValidation, RedisSessionStore};

use crate::duration;
use crate::host::HostArgs;
use crate::token_file::read_tokens;
use crate::usage::UsageError;

/// The flags of `pleach mcp` that shape the HTTP server (all need `--http`).
#[derive(Debug, clap::Args)]
pub(crate) struct HttpArgs {
    /// Serves MCP Streamable HTTP at `http://ADDR/mcp` instead of stdio (`127.0.0.1:8080`;
    /// port 0 picks a free port, printed on stderr).
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// A browser origin allowed to call (`https://app.example.com`, `http://localhost:*`;
    /// repeatable). On a loopback ADDR the loopback origins (`http://127.0.0.1`,
    /// `http://localhost`, `http://[::1]`, any port) are allowed without it. Any other
    /// `Origin` gets 403; requests without one pass.
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    allow_origin: Vec<String>,
    /// A `Host` the server answers to (repeatable). Without it: loopback names on a loopback
    /// address, any host elsewhere.
    #[arg(long, value_name = "HOST", requires = "http")]
    allow_host: Vec<String>,
    /// Bearer tokens, one a line (blank lines and lines starting with `#` skipped).
    #[arg(long, value_name = "FILE", requires = "http")]
    token_file: Option<PathBuf>,
    /// Accepts JWT access tokens signed by a key of this JWKS (needs `--issuer` and
    /// `--audience`).
    #[arg(long, value_name = "URL", requires_all = ["http", "issuer", "audience"])]
    jwks_url: Option<String>,
    /// The `iss` a JWT must carry.
    #[arg(long, value_name = "ISS", requires = "jwks_url")]
    issuer: Option<String>,
    /// The `aud` a JWT must carry (this server's resource URL).
    #[arg(long, value_name = "AUD", requires = "jwks_url")]
    audience: Option<String>,
    /// This server's public URL, as the protected-resource metadata states it.
    #[arg(long, value_name = "URL", requires = "http")]
    resource: Option<String>,
    /// An authorization server clients get tokens from (repeatable; in the metadata).
    #[arg(long, value_name = "URL", requires = "http")]
    authorization_server: Vec<String>,
    /// The largest request body taken, in bytes (default 4 MiB); larger ones get 413.
    #[arg(long, value_name = "N", requires = "http")]
    max_body_bytes: Option<usize>,
    /// How long running calls may finish after SIGTERM or SIGINT (default 30s); then they are
    /// cancelled.
    #[arg(long, value_name = "DURATION", requires = "http", value_parser = duration::any)]
    drain: Option<Duration>,
    /// After SIGTERM or SIGINT, keep serving this long with `/healthz` answering 503 before
    /// taking no more connections (default 0s): for load balancers that poll.
    #[arg(long, value_name = "DURATION", requires = "http", value_parser = duration::any)]
    drain_notice: Option<Duration>,
    /// How long a connection may take to send a request's headers, and sit idle between
    /// requests (default 30s); then it is closed.
    #[arg(long, value_name = "DURATION", requires = "http", value_parser = duration::positive)]
    header_timeout: Option<Duration>,
    /// At most this many connections open at once (default 512); past it new ones wait to be
    /// accepted.
    #[arg(long, value_name = "N", requires = "http", value_parser = clap::value_parser!(u64).range(1..))]
    max_connections: Option<u64>,
    /// At most this many calls at once; past it a request gets 503 with `Retry-After`.
    #[arg(long, value_name = "N", requires = "http", value_parser = clap::value_parser!(u64).range(1..))]
    max_in_flight: Option<u64>,
    /// Listen off loopback with no token or JWT check (anyone who can reach it calls every tool).
    #[arg(long, requires = "http")]
    insecure_no_auth: bool,
    /// At most this many MCP sessions at once (default 1024): a client that starts with
    /// `initialize` gets one, held in memory; past it `initialize` gets 503 with `Retry-After`.
    /// Clients that never initialize are answered statelessly.
    #[arg(long, value_name = "N", requires = "http", value_parser = clap::value_parser!(u64).range(1..))]
    max_sessions: Option<u64>,
    /// How long an MCP session that sees no message is held (default 5m); then it ends and its
    /// client starts a new one.
    #[arg(long, value_name = "DURATION", requires = "http", value_parser = duration::positive)]
    session_idle: Option<Duration>,
    /// Keeps MCP sessions' state (the scratchpad's notes) in Redis (`redis://HOST:PORT/DB`), so
    /// a session survives its replica and works behind round robin. Without it sessions are
    /// held in this process's memory.
    #[arg(long, value_name = "URL", requires = "http")]
    session_store: Option<String>,
    /// How long the session store keeps a session after its last use, in whole seconds (default
    /// 1d).
    #[arg(long, value_name = "DURATION", requires = "session_store", value_parser = duration::whole_seconds)]
    session_ttl: Option<Duration>,
}

impl HttpArgs {
    /// Whether `--http` was given.
    pub(crate) fn is_http(&self) -> bool {
        self.http.is_some()
    }
}

/// Serves until SIGTERM or SIGINT, then drains: exit 0. A listener off loopback without any auth
/// is a usage error (exit 2).
pub(crate) async fn run(
    args: &HttpArgs,
    host: &HostArgs,
    listing: &super::listing::ListingArgs,
) -> Result<ExitCode, UsageError> {
    let Some(address) = args.http else {
        return Err(UsageError("`--http ADDR` is missing".to_owned()));
    };
    let mut builder = host.runtime_builder().await?;
    if let Some(max) = args.max_in_flight {
        builder = builder
            .max_in_flight(usize::try_from(max).unwrap_or(usize::MAX))
            .overload_policy(OverloadPolicy::FailFast);
    }
    let runtime = builder
        .build()
        .map_err(|error| UsageError(format!("cannot build the runtime: {error}")))?;
    let server = McpServer::new(runtime).map_err(|error| UsageError(error.to_string()))?;
    let server = listing.apply(server)?;
    let mut options = options(args, address)?;
    if let Some(url) = &args.session_store {
        let mut store = RedisSessionStore::connect(url)
            .await
            .map_err(|error| UsageError(error.to_string()))?;
        if let Some(ttl) = args.session_ttl {
            store = store.ttl(ttl);
        }
        options = options.session_store(store);
    }
    let http = HttpServer::new(server, options).map_err(|error| UsageError(error.to_string()))?;
    // Before binding, so a refused address is not first announced as listening.
    http.check_address(address)
        .map_err(|error| UsageError(error.to_string()))?;
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|error| UsageError(format!("cannot listen on {address}: {error}")))?;
    let bound = listener
        .local_addr()
        .map_err(|error| UsageError(format!("cannot listen on {address}: {error}")))?;
    eprintln!("pleach mcp: listening on http://{bound}/mcp");
    let outcome = http
        .serve(listener, pleach_mcp::http::shutdown_signal())
        .await;
    match outcome {
        Ok(()) => {
            eprintln!("pleach mcp: drained, stopping");
            Ok(ExitCode::SUCCESS)
        }
        Err(error @ McpError::NoAuth(_)) => Err(UsageError(error.to_string())),
        Err(error) => {
            eprintln!("error: {error} (serving http://{bound}/mcp)");
            Ok(ExitCode::FAILURE)
        }
    }
}

fn options(args: &HttpArgs, address: SocketAddr) -> Result<HttpOptions, UsageError> {
    let mut options = HttpOptions::new(address);
    for origin in &args.allow_origin {
        options = options.allow_origin(origin);
    }
    for host in &args.allow_host {
        options = options.allow_host(host);
    }
    if let Some(max) = args.max_sessions {
        options = options.max_sessions(usize::try_from(max).unwrap_or(usize::MAX));
    }
    if let Some(idle) = args.session_idle {
        options = options.session_idle_timeout(idle);
    }
    if let Some(file) = &args.token_file {
        for token in read_tokens(file)? {
            options = options.bearer_token(token);
        }
    }
    if let (Some(jwks), Some(issuer), Some(audience)) =
        (&args.jwks_url, &args.issuer, &args.audience)
    {
        options = options.jwt(JwtValidation::new(jwks, issuer, audience));
    }
    if args.resource.is_some() || !args.authorization_server.is_empty() {
        let resource = args
            .resource
            .clone()
            .or_else(|| args.audience.clone())
            .ok_or("`--authorization-server` needs `--resource URL` (this server's public URL)")?;
        options = options.protected_resource(resource, args.authorization_server.clone());
    }
    if let Some(bytes) = args.max_body_bytes {
        options = options.max_body_bytes(bytes);
    }
    if let Some(drain) = args.drain {
        options = options.drain_timeout(drain);
    }
    if let Some(notice) = args.drain_notice {
        options = options.drain_notice(notice);
    }
    if let Some(timeout) = args.header_timeout {
        options = options.header_timeout(timeout);
    }
    if let Some(connections) = args.max_connections {
        options = options.max_connections(usize::try_from(connections).unwrap_or(usize::MAX));
    }
    if args.insecure_no_auth {
        options = options.insecure_no_auth();
    }
    Ok(options)
}
