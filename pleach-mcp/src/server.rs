//! The MCP handler: `tools/list` and `tools/call` over a runtime's session.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CustomRequest, CustomResult,
    ElicitResult, Implementation, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ProgressToken, ResultType, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ReadResourceRequestParams,
    ReadResourceResponse, SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::McpError;
use super::approval::Asking;
use super::features::{Features, ToolsOnly};
use pleach_core::call::ToolCall;
use pleach_core::event::ToolEvent;
use pleach_core::providers::ProfileProblem;
use pleach_core::runtime::Runtime;
use pleach_core::safety::{Action, Decision, DecisionError, Interrupt};
use pleach_core::session::{Session, SessionError, SessionOptions};

mod tool_search;

/// An MCP server for a runtime's tools: an rmcp [`ServerHandler`] with `tools/list` and
/// `tools/call`. Hand it to any rmcp transport, or use [`serve_stdio`](super::serve_stdio).
///
/// ```rust
/// use pleach_core::{tool, Runtime};
/// use pleach_mcp::McpServer;
///
/// /// Multiplies two integers.
/// #[tool]
/// async fn multiply(a: i64, b: i64) -> i64 { a * b }
///
/// let server = McpServer::new(Runtime::builder().build().unwrap()).unwrap();
/// let multiply = server.tools().iter().find(|t| t.name == "multiply").unwrap();
/// assert_eq!(multiply.input_schema["required"], serde_json::json!(["a", "b"]));
/// ```
#[derive(Clone)]
pub struct McpServer {
    shared: Arc<Shared>,
    session: Arc<Session>,
    /// Fired when the host stops serving: running calls are cancelled through their signal.
    shutdown: CancellationToken,
    /// The least severe level of the tools' logs this connection's client wants
    /// (`logging/setLevel`).
    logs: super::client::LogFilter,
    /// Whether a request to the client can reach it during a call (not over stateless HTTP,
    /// which answers each POST alone).
    channel_back: bool,
    /// Where MCP sessions keep their persisted state (HTTP with a session store).
    #[cfg(feature = "redis")]
    store: Option<crate::store::RedisSessionStore>,
}

/// What every session of one server shares.
struct Shared {
    runtime: Runtime,
    tools: Vec<Tool>,
    implementation: Implementation,
    /// Numbers call ids: MCP calls carry none of their own.
    calls: AtomicU64,
    /// Seals an interrupt a 2026-07-28 client carries between its call and the call's retry:
    /// the runtime's interrupt key, else one drawn for this process.
    interrupt_key: Vec<u8>,
    /// What `tools/list` gives instead of every tool, with a search ([`McpServer::tool_search`]).
    listing: Option<tool_search::Listing>,
    /// Resources, prompts and completion ([`McpServer::features`]).
    features: Box<dyn Features>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("tools", &self.shared.tools.len())
            .field("implementation", &self.shared.implementation.name)
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// A server for every tool of `runtime`, introducing itself as `pleach` with this crate's
    /// version (see [`implementation`](McpServer::implementation)).
    ///
    /// # Errors
    ///
    /// A tool's input schema cannot be described to MCP ([`McpError::Schema`]), or the session
    /// cannot be created.
    ///
    /// ```
    /// use pleach_mcp::McpServer;
    /// use pleach_core::{Runtime, ToolError, ToolRegistryBuilder, ToolDefinition};
    ///
    /// let ping = ToolDefinition::builder("ping", "Answers pong.")
    ///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
    ///     .unwrap();
    /// let runtime = Runtime::builder()
    ///     .registry(ToolRegistryBuilder::new().register(ping).build().unwrap())
    ///     .build()
    ///     .unwrap();
    /// let server = McpServer::new(runtime).unwrap();
    /// assert_eq!(server.tools()[0].name, "ping");
    /// ```
    pub fn new(runtime: Runtime) -> Result<McpServer, McpError> {
        let mut tools = Vec::new();
        let mut problems = Vec::new();
        for tool in runtime.registry().tools() {
            match pleach_core::providers::mcp_tools::definition(tool) {
                Ok(mut listed) => {
                    if let Some(tier) = tool.safety_tier() {
                        listed["annotations"] = tier.mcp_annotations();
                    }
                    match serde_json::from_value::<Tool>(listed) {
                        Ok(listed) => tools.push(listed),
                        Err(error) => problems.push((
                            tool.name().to_owned(),
                            ProfileProblem {
                                path: String::new(),
                                keyword: "mcp".to_owned(),
                                message: error.to_string(),
                            },
                        )),
                    }
                }
                Err(found) => problems.extend(
                    found
                        .into_iter()
                        .map(|problem| (tool.name().to_owned(), problem)),
                ),
            }
        }
        if !problems.is_empty() {
            return Err(McpError::Schema(problems));
        }
        if tools.is_empty() {
            pleach_core::runtime::warn_no_tools("the MCP server");
        }
        let session = open_session(&runtime)?;
        let interrupt_key = if let Some(key) = runtime.interrupt_key() {
            key.to_vec()
        } else {
            let mut key = vec![0_u8; 32];
            getrandom::fill(&mut key).map_err(|error| {
                McpError::Connection(format!("no randomness for an interrupt key: {error}"))
            })?;
            key
        };
        Ok(McpServer {
            shared: Arc::new(Shared {
                runtime,
                tools,
                implementation: Implementation::new("pleach", env!("CARGO_PKG_VERSION")),
                calls: AtomicU64::new(0),
                interrupt_key,
                listing: None,
                features: Box::new(ToolsOnly),
            }),
            session: Arc::new(session),
            shutdown: CancellationToken::new(),
            logs: super::client::LogFilter::default(),
            channel_back: true,
            #[cfg(feature = "redis")]
            store: None,
        })
    }

    /// The same server with a session of its own: what an HTTP request (stateless) or an HTTP
    /// MCP session gets, so no state leaks from one client to another.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn with_new_session(&self) -> Result<McpServer, SessionError> {
        Ok(McpServer {
            shared: Arc::clone(&self.shared),
            session: Arc::new(open_session(&self.shared.runtime)?),
            shutdown: self.shutdown.clone(),
            logs: super::client::LogFilter::default(),
            channel_back: self.channel_back,
            #[cfg(feature = "redis")]
            store: self.store.clone(),
        })
    }

    /// The same server, each call of an MCP session run with the session's persisted state
    /// from `store` and what it changed written back.
    #[cfg(feature = "redis")]
    pub(crate) fn with_state_store(mut self, store: crate::store::RedisSessionStore) -> McpServer {
        self.store = Some(store);
        self
    }

    /// The same server with no channel back to its client during a call (stateless HTTP): a
    /// tool's elicitation and sampling fail at once with 1020.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn without_channel_back(mut self) -> McpServer {
        self.channel_back = false;
        self
    }

    /// The same server, its running calls cancelled when `shutdown` fires (a drain's end).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn cancelled_by(mut self, shutdown: CancellationToken) -> McpServer {
        self.shutdown = shutdown;
        self
    }

    /// Introduces the server under another name and version in `initialize`.
    ///
    /// ```rust
    /// let runtime = pleach_core::Runtime::builder().build().unwrap();
    /// let server = pleach_mcp::McpServer::new(runtime).unwrap().implementation("acme-tools", "2.1.0");
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn implementation(mut self, name: &str, version: &str) -> McpServer {
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            shared.implementation = Implementation::new(name, version);
        } else {
            // Cloned servers share what they list; a renamed copy cannot change it under them.
            tracing::warn!("McpServer::implementation on a shared server: name left unchanged");
        }
        self
    }

    /// Serves `handler`'s resources, prompts and completion beside the runtime's tools: the
    /// server's `resources/*`, `prompts/*` and `completion/complete` (and `subscriptions/listen`)
    /// are `handler`'s, and `initialize` declares the `resources`, `prompts` and `completions`
    /// capabilities its [`get_info`](rmcp::ServerHandler::get_info) declares, and only those. The
    /// tools stay the runtime's (`handler`'s own tools are not served), and over HTTP every
    /// request still passes the server's guard (tokens, Origin, limits, drain) first.
    ///
    /// One handler answers every client and MCP session: what it keeps per client it keys by
    /// the request's context (its peer, its session's `Mcp-Session-Id`).
    ///
    /// ```
    /// use pleach_mcp::McpServer;
    /// use pleach_mcp::rmcp::model::{
    ///     ListPromptsResult, PaginatedRequestParams, Prompt, ServerCapabilities, ServerConfig,
    /// };
    /// use pleach_mcp::rmcp::service::RequestContext;
    /// use pleach_mcp::rmcp::{ErrorData, RoleServer, ServerHandler};
    /// use pleach_core::{Runtime, ToolRegistryBuilder};
    ///
    /// struct Prompts;
    ///
    /// impl ServerHandler for Prompts {
    ///     fn get_info(&self) -> ServerConfig {
    ///         ServerConfig::new(ServerCapabilities::builder().enable_prompts().build())
    ///     }
    ///
    ///     async fn list_prompts(
    ///         &self,
    ///         _request: Option<PaginatedRequestParams>,
    ///         _context: RequestContext<RoleServer>,
    ///     ) -> Result<ListPromptsResult, ErrorData> {
    ///         let review = Prompt::new("review", Some("Reviews a diff"), None);
    ///         Ok(ListPromptsResult::with_all_items(vec![review]))
    ///     }
    /// }
    ///
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let server = McpServer::new(runtime).unwrap().features(Prompts);
    /// let capabilities = server.get_info().capabilities;
    /// assert!(capabilities.prompts.is_some() && capabilities.tools.is_some());
    /// assert!(capabilities.resources.is_none());
    /// ```
    #[must_use]
    pub fn features(mut self, handler: impl rmcp::ServerHandler) -> McpServer {
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            shared.features = Box::new(handler);
        } else {
            // Cloned servers share what they serve; a copy cannot change it under them.
            tracing::warn!("McpServer::features on a shared server: its features left unchanged");
        }
        self
    }

    /// The tools as `tools/list` lists them.
    ///
    /// ```
    /// use pleach_mcp::McpServer;
    /// use pleach_core::{Runtime, ToolError, ToolRegistryBuilder, ToolDefinition};
    ///
    /// let ping = ToolDefinition::builder("ping", "Answers pong.")
    ///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
    ///     .unwrap();
    /// let runtime = Runtime::builder()
    ///     .registry(ToolRegistryBuilder::new().register(ping).build().unwrap())
    ///     .build()
    ///     .unwrap();
    /// let server = McpServer::new(runtime).unwrap();
    /// assert_eq!(server.tools()[0].input_schema.get("type"), Some(&serde_json::json!("object")));
    /// ```
    pub fn tools(&self) -> &[Tool] {
        self.shared
            .listing
            .as_ref()
            .map_or(&self.shared.tools, |listing| &listing.tools)
    }

    /// The runtime whose tools are served.
    ///
    /// ```
    /// use pleach_mcp::McpServer;
    /// use pleach_core::{Runtime, ToolRegistryBuilder};
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let server = McpServer::new(runtime).unwrap();
    /// assert_eq!(server.runtime().registry().len(), 0);
    /// ```
    pub fn runtime(&self) -> &Runtime {
        &self.shared.runtime
    }

    /// The session calls run in (its state; it keeps no conversation: the client does).
    ///
    /// ```
    /// use pleach_mcp::McpServer;
    /// use pleach_core::{Runtime, ToolRegistryBuilder};
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let server = McpServer::new(runtime).unwrap();
    /// assert!(server.session().conversation().is_empty()); // the client keeps the conversation
    /// ```
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Runs one `tools/call`: in a session of its own with the MCP session's persisted state
    /// when there is a session store and the request belongs to an MCP session, else in this
    /// server's session.
    async fn run_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let span = super::span::request("tools/call", Some(&request.name), &context);
        let answered = self
            .run_call_spanned(request, context)
            .instrument(span.clone())
            .await;
        if let Err(error) = &answered {
            super::span::failed(&span, error.code.0);
        }
        answered
    }

    /// [`run_call`](McpServer::run_call) inside its span.
    async fn run_call_spanned(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        #[cfg(feature = "redis")]
        if let Some(store) = &self.store
            && let Some(session_id) = super::span::session_id(&context)
        {
            return self
                .run_call_persisted(store, &session_id, request, context)
                .await;
        }
        self.run_call_here(request, context).await
    }

    /// Restores the persisted state of MCP session `session_id` into a fresh session, runs the
    /// call there, and writes back the state it changed. Calls of one MCP session may run at the
    /// same time on different replicas: each writes only what it changed, so calls that change
    /// different state do not undo each other (of two that change the same, the later write
    /// stays).
    #[cfg(feature = "redis")]
    async fn run_call_persisted(
        &self,
        store: &crate::store::RedisSessionStore,
        session_id: &str,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let unavailable = |error: &dyn std::fmt::Display| {
            ErrorData::internal_error(format!("{error}; the call did not run"), None)
        };
        let server = self
            .with_new_session()
            .map_err(|error| unavailable(&error))?;
        let loaded = store
            .load_state(session_id)
            .await
            .map_err(|error| unavailable(&error))?;
        if let Err(error) = server.session.restore_state(&loaded) {
            // Saved by an incompatible version: that state starts afresh rather than the
            // session being unusable.
            tracing::warn!("MCP session {session_id}: {error}; it starts afresh");
        }
        let response = server.run_call_here(request, context).await;
        let changed: serde_json::Map<String, Value> = server
            .session
            .save_state()
            .into_iter()
            .filter(|(key, value)| loaded.get(key) != Some(value))
            .collect();
        if let Err(error) = store.save_state(session_id, &changed).await {
            // The call ran; its result still goes back. What it changed in the session's state
            // is lost, and the operator is told.
            tracing::error!("MCP session {session_id}: {error}");
        }
        response
    }

    /// Runs one `tools/call`, or its retry with the user's answer to an approval (MCP
    /// 2026-07-28), through [`drive`](McpServer::drive).
    async fn run_call_here(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.as_ref();
        if !self.shared.tools.iter().any(|tool| tool.name == name) {
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{name}`: `tools/list` names the tools this server has"),
                None,
            ));
        }
        let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
        let id = format!(
            "mcp_{}",
            self.shared.calls.fetch_add(1, Ordering::Relaxed) + 1
        );
        let call = ToolCall::from_value(id, name, &arguments);
        // A client that can elicit asks its user about a call that needs approval; for one that
        // cannot, such a call fails at once (1012) instead of waiting.
        let asking = super::approval::asking(&context);
        // With a session store, the client's answer to an `elicitation/create` could reach
        // another replica than the one waiting for it: such clients are not asked.
        #[cfg(feature = "redis")]
        let asking = match asking {
            Asking::Request(_) if self.store.is_some() => Asking::Cannot,
            asking => asking,
        };
        self.session
            .set_takes_approvals(!matches!(asking, Asking::Cannot));
        // A tool's own requests go to the client during the call: only a client that declared
        // the capability and has a channel back (before 2026-07-28) gets them; for any other,
        // they fail at once with 1020.
        let requests = self.channel_back && super::approval::can_request(&context);
        #[cfg(feature = "redis")]
        let requests = requests && self.store.is_none();
        let declared = context.client_capabilities();
        let elicits = requests && matches!(asking, Asking::Request(_));
        let samples =
            requests && declared.is_some_and(|capabilities| capabilities.sampling.is_some());
        self.session.set_client_capabilities(elicits, samples);
        let (ran, approved) = match request.request_state.as_deref() {
            // The retry of a call the user was asked about (2026-07-28): their answer decides.
            Some(sealed) => self.resume(&call, sealed, request.input_responses.as_ref())?,
            None => (call.clone(), None),
        };
        self.drive(ran, approved, &call, asking, &context).await
    }

    /// The call a sealed interrupt was raised for and the user's decision on it, checked: the
    /// seal, the retried call against the sealed one, and the decision against the session.
    fn resume(
        &self,
        call: &ToolCall,
        sealed: &str,
        answers: Option<&rmcp::model::InputResponses>,
    ) -> Result<(ToolCall, Option<Action>), ErrorData> {
        let invalid = |message: String| ErrorData::invalid_params(message, None);
        let interrupt =
            Interrupt::open_with(sealed, &self.shared.interrupt_key).map_err(|error| {
                invalid(format!(
                    "the `requestState` is not an approval this server sealed ({error}); behind a \
                 load balancer, every replica needs the same interrupt key"
                ))
            })?;
        if pleach_core::safety::fingerprint(call) != interrupt.fingerprint {
            return Err(invalid(format!(
                "the `requestState` is an approval for another call (`{}` with other arguments): \
                 retry the call the approval was asked for",
                interrupt.tool_call.name()
            )));
        }
        let answer = answers
            .and_then(|answers| answers.get(super::approval::INPUT_KEY))
            .ok_or_else(|| {
                invalid(format!(
                    "the retry carries no `inputResponses.{}`: the user's answer to the approval",
                    super::approval::INPUT_KEY
                ))
            })?;
        let answer: ElicitResult = serde_json::from_value(answer.clone()).map_err(|error| {
            invalid(format!(
                "`inputResponses.{}` is not an elicitation result: {error}",
                super::approval::INPUT_KEY
            ))
        })?;
        let mut decision = super::approval::decide(&interrupt, &answer);
        if let Err(error) = self.session.accept_decision(&interrupt, &decision) {
            decision = refused(&interrupt, &error);
            self.session
                .accept_decision(&interrupt, &decision)
                .map_err(|error| invalid(error.to_string()))?;
        }
        Ok((interrupt.tool_call, Some(decision.action)))
    }

    /// Runs `call` to its end in this request's task (with the user's decision, when
    /// `approved`): its deltas sent as progress when the client asked for it, an approval asked as
    /// `asking` says, cancelled through its signal when the client cancels the request or the
    /// server stops.
    async fn drive(
        &self,
        call: ToolCall,
        approved: Option<Action>,
        issued: &ToolCall,
        asking: Asking,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let progress_token = context.meta.get_progress_token();
        // The session's own deadline (1016) ends the wait first; the request's is a backstop.
        let ask_timeout = self.shared.runtime.approval_timeout() + Duration::from_secs(1);
        let (sender, mut events) = pleach_core::event::channel();
        let signal = CancellationToken::new();
        let slot = reserved_slot(context);
        let dispatching = self
            .session
            .dispatch_reserved(call, &sender, &signal, approved, slot);
        tokio::pin!(dispatching);
        let mut input_required = None;
        let mut progress = 0_u32;
        let peer = &context.peer;
        let mut waiting: Option<Pin<Box<dyn Future<Output = Asked> + Send>>> = None;
        let result = loop {
            tokio::select! {
                result = &mut dispatching => break result,
                Some(event) = events.recv() => match event {
                    ToolEvent::Delta { delta, .. } => {
                        self.report_progress(progress_token.as_ref(), &mut progress, delta, context).await;
                    }
                    ToolEvent::Log { message, .. } => super::client::send_log(peer, &self.logs, message).await,
                    ToolEvent::Progress { progress: report, .. } => {
                        if let Some(token) = &progress_token {
                            super::client::send_progress(peer, token, report).await;
                        }
                    }
                    ToolEvent::ElicitationRequested { request } => {
                        tokio::spawn(super::client::elicit(peer.clone(), context.id.clone(), request));
                    }
                    ToolEvent::SamplingRequested { request } => {
                        tokio::spawn(super::client::sample(peer.clone(), context.id.clone(), request));
                    }
                    ToolEvent::InterruptRequested { interrupt } => match &asking {
                        Asking::Request(peer) => {
                            let peer = peer.clone();
                            waiting = Some(Box::pin(async move {
                                let decision =
                                    super::approval::ask(peer, Arc::clone(&interrupt), ask_timeout).await;
                                (interrupt, decision)
                            }));
                        }
                        // The call ends here; the client asks its user and retries it with the
                        // answer and the sealed interrupt.
                        Asking::InputRequired => {
                            let sealed = interrupt.seal_with(&self.shared.interrupt_key);
                            input_required = Some(super::approval::input_required(&interrupt, sealed));
                            signal.cancel();
                        }
                        Asking::Cannot => {}
                    },
                    _ => {}
                },
                asked = async { waiting.as_mut().expect("polled only while waiting").await }, if waiting.is_some() => {
                    waiting = None;
                    self.decide(asked);
                }
                () = context.ct.cancelled(), if !signal.is_cancelled() => signal.cancel(),
                () = self.shutdown.cancelled(), if !signal.is_cancelled() => signal.cancel(),
            }
        };
        // Progress sent before the result and not read yet goes out before it.
        for event in events.drain() {
            match event {
                ToolEvent::Delta { delta, .. } => {
                    self.report_progress(progress_token.as_ref(), &mut progress, delta, context)
                        .await;
                }
                ToolEvent::Log { message, .. } => {
                    super::client::send_log(peer, &self.logs, message).await;
                }
                ToolEvent::Progress {
                    progress: report, ..
                } => {
                    if let Some(token) = &progress_token {
                        super::client::send_progress(peer, token, report).await;
                    }
                }
                _ => {}
            }
        }
        if let Some(input_required) = input_required {
            return input_required
                .map(CallToolResponse::InputRequired)
                .map_err(|error| ErrorData::internal_error(error, None));
        }
        let outcome = result.outcome;
        // MCP has no user turns to reset the repeated-failure count: once a call has been refused
        // for repeating (1015), its count starts over, so a later try (the file now exists, the
        // service is back) runs instead of being refused for the rest of the connection.
        if outcome
            .as_ref()
            .is_err_and(|error| error.code() == pleach_core::ErrorCode::RepeatedFailure)
        {
            self.session.forget_failures_of(issued);
        }
        let listed = pleach_core::providers::mcp_tools::call_tool_result(&outcome);
        let mut result: CallToolResult = serde_json::from_value(listed)
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
        // MCP 2026-07-28 requires `resultType` on every result, and the JSON above has none: set
        // it as rmcp's own constructors do. rmcp strips a `"complete"` one for a peer that
        // negotiated an older version, so those keep the shape they know.
        result.result_type = Some(ResultType::COMPLETE);
        Ok(CallToolResponse::Complete(result))
    }
}

/// A slot of the runtime an HTTP request took before it was read (`http`'s guard, which answers
/// 503 when there is none), for the call the request carries: held in the request's extensions
/// until the call takes it, given back when the request ends without a call.
#[cfg(feature = "http")]
#[derive(Clone, Debug)]
pub(crate) struct ReservedSlot(Arc<std::sync::Mutex<Option<pleach_core::runtime::CallSlot>>>);

#[cfg(feature = "http")]
impl ReservedSlot {
    pub(crate) fn new(slot: pleach_core::runtime::CallSlot) -> ReservedSlot {
        ReservedSlot(Arc::new(std::sync::Mutex::new(Some(slot))))
    }

    fn take(&self) -> Option<pleach_core::runtime::CallSlot> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }
}

/// The slot the HTTP request of `context` took for its call, if it took one.
#[cfg(feature = "http")]
fn reserved_slot(context: &RequestContext<RoleServer>) -> Option<pleach_core::runtime::CallSlot> {
    context
        .extensions
        .get::<axum::http::request::Parts>()?
        .extensions
        .get::<ReservedSlot>()?
        .take()
}

#[cfg(not(feature = "http"))]
fn reserved_slot(_context: &RequestContext<RoleServer>) -> Option<pleach_core::runtime::CallSlot> {
    None
}

/// A session for MCP calls. The client keeps the conversation: the session writes none (a long
/// connection would otherwise keep every call's arguments and result). Whether it takes
/// approvals is set per call, from the client (see `run_call`).
fn open_session(runtime: &Runtime) -> Result<Session, SessionError> {
    Ok(runtime
        .create_session(SessionOptions::all())?
        .without_conversation())
}

/// An interrupt and the user's answer to it.
type Asked = (Arc<Interrupt>, Decision);

/// The rejection that stands for a decision the session refused (edited arguments that do not
/// validate, say): the call still ends in a result, saying why.
fn refused(interrupt: &Interrupt, error: &DecisionError) -> Decision {
    interrupt.reject(format!(
        "the user's decision could not be applied ({error}); the call did not run"
    ))
}

impl McpServer {
    /// Sends one progress report, when the request asked for progress.
    async fn report_progress(
        &self,
        token: Option<&ProgressToken>,
        count: &mut u32,
        delta: Value,
        context: &RequestContext<RoleServer>,
    ) {
        let Some(token) = token else { return };
        *count += 1;
        let message = match delta {
            Value::String(text) => text,
            other => other.to_string(),
        };
        let notification =
            ProgressNotificationParam::new(token.clone(), f64::from(*count)).with_message(message);
        // A client gone away is noticed by the service loop, not here.
        let _ = context.peer.notify_progress(notification).await;
    }

    /// Applies the user's decision; one the session refuses becomes a rejection
    /// ([`refused`]), so the call still ends.
    fn decide(&self, (interrupt, decision): Asked) {
        if let Err(error) = self.session.resolve(decision)
            && let Err(error) = self.session.resolve(refused(&interrupt, &error))
        {
            tracing::warn!("an approval interrupt could not be closed: {error}");
        }
    }
}

impl ServerHandler for McpServer {
    #[allow(deprecated)] // rmcp marks logging deprecated (SEP-2577); MCP still has it.
    fn get_info(&self) -> ServerConfig {
        let features = self.shared.features.info();
        let mut config = ServerConfig::new(super::features::capabilities(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_logging()
                .build(),
            &features.capabilities,
        ));
        config.server_info = self.shared.implementation.clone();
        config.instructions = features.instructions;
        config
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let span = super::span::request("tools/list", None, &context);
        let _entered = span.enter();
        // One page, with no `nextCursor`: any cursor is one this server never gave, which MCP's
        // pagination answers with invalid params, not with the first page again.
        if let Some(cursor) = request.and_then(|request| request.cursor) {
            let code = rmcp::model::ErrorCode::INVALID_PARAMS.0;
            super::span::failed(&span, code);
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown cursor `{cursor}`: `tools/list` lists every tool on one page, \
                     with no `nextCursor`"
                ),
                None,
            ));
        }
        Ok(ListToolsResult::with_all_items(self.tools().to_vec()))
    }

    /// `logging/setLevel`: the tools' logs this connection's client gets from now on are those
    /// at `level` and above.
    #[allow(deprecated)] // rmcp marks logging deprecated (SEP-2577); MCP still has it.
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.logs.set(super::client::level_of(request.level));
        Ok(())
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.shared
            .tools
            .iter()
            .find(|tool| tool.name == name)
            .cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        match self.listing_call(&request)? {
            Some(tool_search::Routed::Answer(answer)) => Ok(answer),
            Some(tool_search::Routed::Call(call)) => self.run_call(call, context).await,
            None => self.run_call(request, context).await,
        }
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.shared.features.complete(request, context).await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.shared.features.get_prompt(request, context).await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.shared.features.list_prompts(request, context).await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.shared.features.list_resources(request, context).await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.shared
            .features
            .list_resource_templates(request, context)
            .await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.shared.features.read_resource(request, context).await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.shared.features.subscribe(request, context).await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.shared.features.unsubscribe(request, context).await
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.shared.features.accepted_subscription_filter(requested)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        self.shared.features.listen(context).await
    }

    /// rmcp hands over a request whose params do not fit its method (a `tools/call` with
    /// `arguments` that are not an object, or no `name`) as a custom request: that is invalid
    /// params (-32602) with the reason, not an unknown method.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let CustomRequest { method, params, .. } = request;
        if method == "tools/call" {
            let reason =
                serde_json::from_value::<CallToolRequestParams>(params.unwrap_or(Value::Null))
                    .err()
                    .map_or_else(String::new, |error| format!(": {error}"));
            return Err(ErrorData::invalid_params(
                format!(
                    "the `tools/call` params do not fit {{\"name\": string, \"arguments\": \
                     object}}{reason}"
                ),
                None,
            ));
        }
        if STANDARD_METHODS.contains(&method.as_str()) {
            return Err(ErrorData::invalid_params(
                format!("the params of `{method}` are not what MCP defines for it"),
                None,
            ));
        }
        // What rmcp itself answers for a method it does not know.
        Err(ErrorData::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            method,
            None,
        ))
    }
}

/// The client-to-server requests MCP defines: for these, a custom request means params that do
/// not fit.
const STANDARD_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
];
