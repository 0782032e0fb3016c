//! The MCP handler: `tools/list` and `tools/call` over a runtime's session.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CustomRequest, CustomResult, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
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

use super::McpError;
use super::features::{Features, ToolsOnly};
use pleach_core::providers::ProfileProblem;
use pleach_core::runtime::Runtime;
use pleach_core::session::{Session, SessionError};

mod call;
mod questions;
mod tool_search;

#[cfg(feature = "http")]
pub(crate) use call::ReservedSlot;
use call::open_session;

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
    /// The client's session and the logs it wants: one allocation for each request's server.
    client: Arc<Client>,
    /// Fired when the host stops serving: running calls are cancelled through their signal.
    /// Shared as an `Arc`: a request's server then takes one count, not the token's lock.
    shutdown: Arc<CancellationToken>,
    /// Whether a request to the client can reach it during a call (not over stateless HTTP,
    /// which answers each POST alone).
    channel_back: bool,
    /// Where MCP sessions keep their persisted state (HTTP with a session store).
    #[cfg(feature = "redis")]
    store: Option<crate::store::RedisSessionStore>,
}

/// What one client has of its own: the session its calls run in, and the tools' logs it wants.
struct Client {
    session: Session,
    /// The least severe level of the tools' logs the client wants (`logging/setLevel`).
    logs: super::client::LogFilter,
}

impl Client {
    fn new(session: Session) -> Client {
        Client {
            session,
            logs: super::client::LogFilter::default(),
        }
    }
}

/// What every session of one server shares.
struct Shared {
    runtime: Runtime,
    tools: Vec<Tool>,
    /// What the server declares in `initialize` for itself (its name and version, tools and
    /// logging), made once: rmcp asks for it on every request.
    info: ServerConfig,
    /// Numbers call ids: MCP calls carry none of their own.
    calls: AtomicU64,
    /// Seals an interrupt a 2026-07-28 client carries between its call and the call's retry:
    /// the runtime's interrupt key, else one drawn for this process.
    interrupt_key: Vec<u8>,
    /// What `tools/list` gives instead of every tool, with a search ([`McpServer::tool_search`]).
    listing: Option<tool_search::Listing>,
    /// Resources, prompts and completion ([`McpServer::features`]): a handler of the user's,
    /// whose declaration is asked for each time; none for tools only.
    features: Option<Box<dyn Features>>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("tools", &self.shared.tools.len())
            .field("implementation", &self.shared.info.server_info.name)
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
                info: own_info(Implementation::new("pleach", env!("CARGO_PKG_VERSION"))),
                calls: AtomicU64::new(0),
                interrupt_key,
                listing: None,
                features: None,
            }),
            client: Arc::new(Client::new(session)),
            shutdown: Arc::new(CancellationToken::new()),
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
            client: Arc::new(Client::new(open_session(&self.shared.runtime)?)),
            shutdown: Arc::clone(&self.shutdown),
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
        self.shutdown = Arc::new(shutdown);
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
            shared.info.server_info = Implementation::new(name, version);
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
            shared.features = Some(Box::new(handler));
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
        &self.client.session
    }
}

impl McpServer {
    /// The handler of what the server serves besides tools: the user's, else none of it.
    fn feature_handler(&self) -> &dyn Features {
        self.shared.features.as_deref().unwrap_or(&ToolsOnly)
    }
}

/// What a server introduced as `implementation` declares for itself: tools and logging.
#[allow(deprecated)] // rmcp marks logging deprecated (SEP-2577); MCP still has it.
fn own_info(implementation: Implementation) -> ServerConfig {
    let mut config = ServerConfig::new(
        ServerCapabilities::builder()
            .enable_tools()
            .enable_logging()
            .build(),
    );
    config.server_info = implementation;
    config
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let mut config = self.shared.info.clone();
        if let Some(features) = &self.shared.features {
            let features = features.info();
            config.capabilities =
                super::features::capabilities(config.capabilities, &features.capabilities);
            config.instructions = features.instructions;
        }
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
        self.client.logs.set(super::client::level_of(request.level));
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
        let request = match self.listing_call(&request)? {
            Some(tool_search::Routed::Answer(answer)) => return Ok(answer),
            Some(tool_search::Routed::Call(call)) => call,
            None => request,
        };
        // Boxed: rmcp's per-request task then holds a pointer, not the call's request and state.
        Box::pin(self.run_call(request, context)).await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.feature_handler().complete(request, context).await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.feature_handler().get_prompt(request, context).await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.feature_handler().list_prompts(request, context).await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.feature_handler()
            .list_resources(request, context)
            .await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.feature_handler()
            .list_resource_templates(request, context)
            .await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.feature_handler().read_resource(request, context).await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.feature_handler().subscribe(request, context).await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.feature_handler().unsubscribe(request, context).await
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.feature_handler()
            .accepted_subscription_filter(requested)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        self.feature_handler().listen(context).await
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
