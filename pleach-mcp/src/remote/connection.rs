//! The connection to one MCP server: opened over stdio (a child process) or Streamable HTTP,
//! reopened with backoff after it fails, and the client side of the protocol (the server's
//! progress, logs, elicitation and sampling passed to the call they belong to, see `requests`;
//! `tools/list_changed` passed on).

#![allow(deprecated)] // rmcp marks logging and sampling deprecated (SEP-2577); MCP still has them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{
    ClientConfig, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ErrorData, Implementation, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::transport::IntoTransport;
use rmcp::{ClientHandler, Peer, RoleClient, ServiceExt};
use tokio::sync::watch;

use super::Target;
use super::requests::{self, Answers, CallEntry, InOrder, RunningCalls};
use super::target::Network;
use pleach_core::ToolContext;
use pleach_core::error::{ErrorCode, ToolError};

/// The first wait before reconnecting after a failure; it doubles with each failure in a row.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// The longest wait between reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// One server's connection, shared by its tools.
pub(super) struct Connection {
    target: Target,
    /// The target's network attributes, for the spans of its requests.
    network: Network,
    /// How messages name the server.
    label: String,
    connect_timeout: Duration,
    shared: Arc<HandlerState>,
    state: tokio::sync::Mutex<State>,
}

#[derive(Default)]
struct State {
    service: Option<RunningService<RoleClient, Handler>>,
    /// Failed attempts in a row.
    failures: u32,
    /// No attempt before this.
    retry_at: Option<Instant>,
    /// Why the last attempt failed.
    last_error: String,
}

/// What the client side shares with the connection.
struct HandlerState {
    /// How messages name the server.
    label: String,
    /// The server's requests the client side declares it answers.
    answers: Answers,
    /// The calls running, where the server's messages during a call go.
    calls: Arc<RunningCalls>,
    /// Bumped when the server says its tools changed and when the connection is opened again:
    /// either way the tool list is listed again.
    relist: watch::Sender<u64>,
}

/// The client side of the protocol: pleach declares elicitation (form) and sampling as
/// [`Answers`] says (no roots), passes the server's messages during a call to that call
/// (`requests`), and passes on `tools/list_changed`.
///
/// It offers protocol 2025-11-25: the newest in which a server sends its requests during a call
/// (from 2026-07-28 on, a server asks through input-required results instead).
#[derive(Clone)]
struct Handler(Arc<HandlerState>);

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            self.0.answers.capabilities(),
            Implementation::new("pleach", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        requests::elicit(&self.0.calls, &self.0.label, params, &context).await
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        requests::sample(&self.0.calls, &self.0.label, params, &context).await
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.0.relist.send_modify(|n| *n += 1);
    }
}

impl Connection {
    pub(super) fn new(
        target: Target,
        label: String,
        connect_timeout: Duration,
        answers: Answers,
    ) -> Connection {
        Connection {
            network: target.network(),
            target,
            connect_timeout,
            shared: Arc::new(HandlerState {
                label: label.clone(),
                answers,
                calls: Arc::default(),
                relist: watch::channel(0).0,
            }),
            label,
            state: tokio::sync::Mutex::new(State::default()),
        }
    }

    /// How messages name the server.
    pub(super) fn label(&self) -> &str {
        &self.label
    }

    /// Where requests to the server travel (for spans).
    pub(super) fn network(&self) -> &Network {
        &self.network
    }

    /// Changes when the tools should be listed again.
    pub(super) fn relist(&self) -> watch::Receiver<u64> {
        self.shared.relist.subscribe()
    }

    /// Registers a call about to be sent: the server's messages during it go to `ctx` until the
    /// entry is dropped.
    pub(super) fn enter(&self, ctx: ToolContext) -> CallEntry {
        self.shared.calls.enter(ctx)
    }

    /// The open connection's peer, opening it (again) when it is not open. After a failure the
    /// next attempt waits its backoff; a call meanwhile fails at once with 1017.
    pub(super) async fn peer(&self) -> Result<Peer<RoleClient>, ToolError> {
        let mut state = self.state.lock().await;
        if let Some(service) = &state.service {
            if !service.is_closed() && !service.peer().is_transport_closed() {
                return Ok(service.peer().clone());
            }
            tracing::warn!("the MCP server `{}` closed its connection", self.label);
            state.service = None;
        }
        if let Some(at) = state.retry_at
            && let Some(wait) = at.checked_duration_since(Instant::now())
        {
            return Err(unavailable(format!(
                "the MCP server `{}` is unavailable ({}); the next connection attempt is in {} ms",
                self.label,
                state.last_error,
                wait.as_millis()
            )));
        }
        let reopening = state.failures > 0 || state.last_error == CLOSED;
        match self.open().await {
            Ok(service) => {
                let peer = service.peer().clone();
                *state = State {
                    service: Some(service),
                    ..State::default()
                };
                if reopening {
                    tracing::info!("reconnected to the MCP server `{}`", self.label);
                    self.shared.relist.send_modify(|n| *n += 1);
                }
                Ok(peer)
            }
            Err(reason) => {
                state.failures += 1;
                let backoff = FIRST_BACKOFF
                    .saturating_mul(1 << state.failures.min(8).saturating_sub(1))
                    .min(MAX_BACKOFF);
                state.retry_at = Some(Instant::now() + backoff);
                state.last_error.clone_from(&reason);
                tracing::warn!(
                    "cannot connect to the MCP server `{}`: {reason}; next attempt in {} ms",
                    self.label,
                    backoff.as_millis()
                );
                Err(unavailable(format!(
                    "the MCP server `{}` is unavailable: {reason}",
                    self.label
                )))
            }
        }
    }

    /// Marks the connection as failed (the transport broke during a call): the next call opens
    /// it again.
    pub(super) async fn failed(&self) {
        let mut state = self.state.lock().await;
        if let Some(service) = state.service.take() {
            // Ends the child process of a stdio server, the session of an HTTP one.
            drop(service);
            CLOSED.clone_into(&mut state.last_error);
        }
    }

    /// Closes the connection (a stdio server's process ends).
    pub(super) async fn close(&self) {
        let service = self.state.lock().await.service.take();
        if let Some(service) = service {
            let _ = service.cancel().await;
        }
    }

    /// `transport`, its progress and log messages passed to their calls as they are read.
    fn in_order<T>(&self, transport: T) -> InOrder<T> {
        InOrder::new(
            transport,
            Arc::clone(&self.shared.calls),
            self.label.clone(),
        )
    }

    /// Opens a new connection and runs the handshake, within the connect timeout.
    async fn open(&self) -> Result<RunningService<RoleClient, Handler>, String> {
        let handler = Handler(Arc::clone(&self.shared));
        // Each handshake boxed: a transport's state (a sign-in's above all) would double the
        // size of every open's future.
        let opening = async {
            let served = match &self.target {
                Target::Stdio(command) => {
                    let transport = command.spawn()?;
                    let transport = IntoTransport::<RoleClient, _, _>::into_transport(transport);
                    Box::pin(handler.serve(self.in_order(transport))).await
                }
                #[cfg(feature = "http")]
                Target::Http(http) => {
                    if let Some(transport) = http.authorized_transport()? {
                        Box::pin(handler.serve(self.in_order(transport))).await
                    } else {
                        let transport = http.transport()?;
                        Box::pin(handler.serve(self.in_order(transport))).await
                    }
                }
            };
            served.map_err(|error| error.to_string())
        };
        match tokio::time::timeout(self.connect_timeout, opening).await {
            Ok(opened) => opened,
            Err(_) => Err(format!(
                "no answer to the MCP handshake within {} ms",
                self.connect_timeout.as_millis()
            )),
        }
    }
}

/// Why a connection is gone when it closed under a call.
const CLOSED: &str = "its connection closed";

/// 1017 with `message`.
pub(super) fn unavailable(message: String) -> ToolError {
    ToolError::new(ErrorCode::RemoteUnavailable, message)
}
