//! `McpServer::features`: an rmcp handler's resources and prompts served beside the runtime's
//! tools, over stdio's transport (a duplex stream) and over HTTP behind the guard; a server
//! without one declares and answers none.

use std::future::Future;
use std::time::Duration;

use pleach_core::{Runtime, tool};
use pleach_mcp::McpServer;
use pleach_mcp::http::{HttpOptions, HttpServer};
use rmcp::model::{
    CallToolRequestParams, ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ErrorData, RoleClient, RoleServer, ServerHandler, ServiceError, ServiceExt};

const BOUND: Duration = Duration::from_secs(15);

async fn bounded<T>(future: impl Future<Output = T>) -> T {
    tokio::time::timeout(BOUND, future)
        .await
        .expect("the step finishes within the bound")
}

/// Multiplies two integers.
#[tool]
async fn features_multiply(a: i64, b: i64) -> i64 {
    a * b
}

/// One text resource, `note://today`.
struct Notes;

impl ServerHandler for Notes {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_resources().build())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let note = Resource::new("note://today", "today");
        Ok(ListResourcesResult::with_all_items(vec![note]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri != "note://today" {
            return Err(ErrorData::resource_not_found(request.uri, None));
        }
        let text = ResourceContents::text("buy milk", "note://today");
        Ok(ReadResourceResult::new(vec![text]).into())
    }
}

fn server(features: bool) -> McpServer {
    let runtime = Runtime::builder().build().expect("the registry builds");
    let server = McpServer::new(runtime).expect("every tool can be described to MCP");
    if features {
        server.features(Notes)
    } else {
        server
    }
}

/// `server` on one end of a duplex stream (as on stdio), rmcp's client on the other.
async fn over_duplex(server: McpServer) -> RunningService<RoleClient, ()> {
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    bounded(().serve(client_io))
        .await
        .expect("the client completes the handshake")
}

/// Lists and reads the resource, and calls a tool: what a server with `Notes` answers.
async fn resources_beside_tools(client: &RunningService<RoleClient, ()>) {
    let capabilities = &client.peer_info().expect("initialized").capabilities;
    assert!(capabilities.resources.is_some() && capabilities.tools.is_some());
    assert!(capabilities.prompts.is_none(), "{capabilities:?}");
    let listed = bounded(client.list_resources(None)).await.expect("listed");
    assert_eq!(listed.resources[0].uri, "note://today");
    let read = bounded(client.read_resource(ReadResourceRequestParams::new("note://today")))
        .await
        .expect("read");
    assert!(
        matches!(&read.contents[0], ResourceContents::TextResourceContents { text, .. } if text == "buy milk"),
        "{read:?}"
    );
    let arguments = serde_json::json!({"a": 6, "b": 7});
    let product = bounded(
        client.call_tool(
            CallToolRequestParams::new("features_multiply")
                .with_arguments(arguments.as_object().expect("an object").clone()),
        ),
    )
    .await
    .expect("the tool still answers");
    assert_eq!(
        serde_json::to_value(&product).expect("serializes")["content"][0]["text"],
        "42"
    );
}

#[tokio::test]
async fn a_handlers_resources_are_served_beside_the_tools_on_a_stream() {
    let client = over_duplex(server(true)).await;
    resources_beside_tools(&client).await;
}

#[tokio::test]
async fn a_server_without_features_declares_and_answers_no_resources() {
    let client = over_duplex(server(false)).await;
    let capabilities = &client.peer_info().expect("initialized").capabilities;
    assert!(capabilities.resources.is_none() && capabilities.prompts.is_none());
    assert!(capabilities.completions.is_none(), "{capabilities:?}");
    match bounded(client.list_resources(None)).await {
        Err(ServiceError::McpError(error)) => assert_eq!(error.code.0, -32601, "{error:?}"),
        other => panic!("method not found, not {other:?}"),
    }
}

#[tokio::test]
async fn over_http_the_features_are_behind_the_guard() {
    let options = HttpOptions::new(([127, 0, 0, 1], 0).into()).bearer_token("s3cret");
    let http = HttpServer::new(server(true), options).expect("options hold");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let url = format!("http://{}/mcp", listener.local_addr().expect("bound"));
    tokio::spawn(async move { axum::serve(listener, http.router()).await });
    let client = reqwest::Client::builder()
        .no_proxy()
        .tls_backend_preconfigured(pleach_contract::tls::client_config().expect("TLS set up"))
        .build()
        .expect("a client");

    // No token: refused before rmcp sees the request.
    let refused = bounded(
        client
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(r#"{"jsonrpc":"2.0","id":1,"method":"resources/list"}"#)
            .send(),
    )
    .await
    .expect("answered");
    assert_eq!(refused.status(), 401);

    let transport = StreamableHttpClientTransport::with_client(
        client,
        StreamableHttpClientTransportConfig::with_uri(url).auth_header("s3cret"),
    );
    let client = bounded(().serve(transport))
        .await
        .expect("the handshake succeeds");
    resources_beside_tools(&client).await;
}
