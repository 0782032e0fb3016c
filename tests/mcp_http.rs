//! `pleach_mcp::http` in process: rmcp's own Streamable HTTP client against
//! [`HttpServer`] on a loopback port, and the endpoint mounted in an app of the user's own.
//! Progress notifications need SSE; a client that goes away cancels its call. The guards (Origin,
//! tokens, JWT, limits, drain) are tested through the binary in `pleach-cli/tests/cli/http.rs`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use pleach_core::{Runtime, ToolContext, tool};
use pleach_mcp::McpServer;
use pleach_mcp::http::{HttpOptions, HttpServer};
use rmcp::model::{CallToolRequestParams, ProgressNotificationParam};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

/// How long any step may take before the test fails instead of hanging.
const BOUND: Duration = Duration::from_secs(15);

pub(crate) async fn bounded<T>(future: impl Future<Output = T>) -> T {
    tokio::time::timeout(BOUND, future)
        .await
        .expect("the step finishes within the bound")
}

/// Reports two steps of progress, then answers.
#[tool]
async fn http_two_steps(ctx: ToolContext) -> i64 {
    ctx.progress(json!({ "step": 1 }));
    tokio::task::yield_now().await;
    ctx.progress(json!({ "step": 2 }));
    2
}

static ABANDONED_STARTED: AtomicBool = AtomicBool::new(false);
static ABANDONED_SIGNAL_FIRED: AtomicBool = AtomicBool::new(false);

/// Waits until its call is cancelled: its client will hang up instead.
#[tool]
async fn http_waits_for_hang_up(ctx: ToolContext) -> i64 {
    ABANDONED_STARTED.store(true, Ordering::SeqCst);
    ctx.signal.cancelled().await;
    ABANDONED_SIGNAL_FIRED.store(true, Ordering::SeqCst);
    0
}

/// A client that forwards every progress notification to the test.
struct ProgressRecorder(mpsc::UnboundedSender<ProgressNotificationParam>);

impl ClientHandler for ProgressRecorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.0.send(params);
    }
}

fn http_server() -> HttpServer {
    let runtime = Runtime::builder().build().expect("the registry builds");
    let server = McpServer::new(runtime).expect("every tool can be described to MCP");
    HttpServer::new(server, HttpOptions::new(([127, 0, 0, 1], 0).into())).expect("options hold")
}

/// Serves `app` on a free loopback port until the test ends; its address.
pub(crate) async fn serve(app: axum::Router) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let address = listener.local_addr().expect("bound");
    tokio::spawn(async move { axum::serve(listener, app).await });
    address
}

/// rmcp's client on `url`, over a reqwest client with pleach's TLS set-up.
pub(crate) async fn connect<H: ClientHandler>(
    url: String,
    handler: H,
) -> RunningService<RoleClient, H> {
    connect_with(url, handler, rmcp::service::ClientLifecycleMode::Initialize).await
}

/// [`connect`], the client starting as `lifecycle` says (`server/discover` for MCP 2026-07-28).
pub(crate) async fn connect_with<H: ClientHandler>(
    url: String,
    handler: H,
    lifecycle: rmcp::service::ClientLifecycleMode,
) -> RunningService<RoleClient, H> {
    use rmcp::service::ClientServiceExt;
    let client = reqwest::Client::builder()
        .no_proxy()
        .tls_backend_preconfigured(pleach_contract::tls::client_config().expect("TLS set up"))
        .build()
        .expect("a client");
    let transport = StreamableHttpClientTransport::with_client(
        client,
        StreamableHttpClientTransportConfig::with_uri(url),
    );
    bounded(handler.serve_with_lifecycle(transport, lifecycle))
        .await
        .expect("the handshake succeeds")
}

fn call(name: &'static str) -> CallToolRequestParams {
    CallToolRequestParams::new(name).with_arguments(serde_json::Map::new())
}

#[tokio::test]
async fn progress_reaches_an_http_client_over_sse_before_the_result() {
    let http = http_server();
    let address = serve(http.router()).await;
    let (sender, mut notifications) = mpsc::unbounded_channel();
    let client = connect(format!("http://{address}/mcp"), ProgressRecorder(sender)).await;

    let listed = bounded(client.list_all_tools()).await.expect("tools/list");
    assert!(listed.iter().any(|tool| tool.name == "http_two_steps"));

    let handle = bounded(client.send_cancellable_request(
        rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(call(
            "http_two_steps",
        ))),
        rmcp::service::PeerRequestOptions::no_options(),
    ))
    .await
    .expect("sent");
    let response = bounded(handle.await_response()).await.expect("answered");
    let result = serde_json::to_value(&response).expect("serializes");
    assert_eq!(result["content"][0]["text"], json!("2"), "{result}");
    let mut steps = Vec::new();
    while steps.len() < 2 {
        let notification = bounded(notifications.recv()).await.expect("recorded");
        let message: Value =
            serde_json::from_str(notification.message.as_deref().expect("a message"))
                .expect("the delta's JSON");
        steps.push(message["step"].clone());
    }
    assert_eq!(steps, [json!(1), json!(2)]);
    client.cancel().await.expect("the client closes");
}

#[tokio::test]
async fn the_endpoint_mounts_in_an_app_of_ones_own() {
    let http = http_server();
    let app = axum::Router::new()
        .route("/", axum::routing::get(|| async { "the app's own page" }))
        .nest_service("/tools/mcp", http.service());
    let address = serve(app).await;
    let client = connect(format!("http://{address}/tools/mcp"), ()).await;
    let result = bounded(client.call_tool(call("http_two_steps")))
        .await
        .expect("tools/call");
    let result = serde_json::to_value(&result).expect("serializes");
    assert_eq!(result["content"][0]["text"], json!("2"), "{result}");
    client.cancel().await.expect("the client closes");
}

#[tokio::test]
async fn a_client_that_hangs_up_mid_call_cancels_it() {
    let http = http_server();
    let address = serve(http.router()).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "http_waits_for_hang_up", "arguments": {}}})
    .to_string();
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("connects");
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-11-25\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    );
    stream
        .write_all(request.as_bytes())
        .await
        .expect("the request is sent");
    bounded(async {
        while !ABANDONED_STARTED.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    drop(stream);
    bounded(async {
        while !ABANDONED_SIGNAL_FIRED.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;

    // The server goes on serving.
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("connects");
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
        .await
        .expect("sent");
    let mut answer = String::new();
    bounded(stream.read_to_string(&mut answer))
        .await
        .expect("read");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

static HTTP_ARCHIVED: std::sync::Mutex<Vec<i64>> = std::sync::Mutex::new(Vec::new());

/// Archives a record: a standard-tier tool its user approves through elicitation.
#[pleach_core::unified_tool(safety_tier = "standard")]
async fn http_archive_record(id: i64) -> i64 {
    HTTP_ARCHIVED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(id);
    id
}

#[tokio::test]
async fn an_initialize_first_client_is_asked_for_approval_over_http_in_its_session() {
    let runtime = Runtime::builder()
        .detector(pleach_core::safety::ApprovalRequired::tools([
            "http_archive_record",
        ]))
        .build()
        .expect("the runtime builds");
    let http = HttpServer::new(
        McpServer::new(runtime).expect("every tool can be described to MCP"),
        HttpOptions::new(([127, 0, 0, 1], 0).into()),
    )
    .expect("options hold");
    let address = serve(http.router()).await;
    // The stdio tests' eliciting client, initialize-first (MCP 2025-11-25).
    let eliciting = crate::mcp::Approver {
        version: rmcp::model::ProtocolVersion::V_2025_11_25,
        answers: std::sync::Mutex::new(vec![
            json!({"action": "accept", "content": {"approve": true}}),
            json!({"action": "decline"}),
        ]),
        asked: std::sync::Mutex::new(Vec::new()),
    };
    let client = connect(format!("http://{address}/mcp"), eliciting).await;
    let arguments = json!({ "id": 7 }).as_object().cloned().expect("an object");
    let approved = bounded(client.call_tool(
        CallToolRequestParams::new("http_archive_record").with_arguments(arguments.clone()),
    ))
    .await
    .expect("tools/call");
    let approved = serde_json::to_value(&approved).expect("serializes");
    assert_eq!(approved["content"][0]["text"], json!("7"), "{approved}");
    let declined = bounded(
        client
            .call_tool(CallToolRequestParams::new("http_archive_record").with_arguments(arguments)),
    )
    .await
    .expect("tools/call");
    let declined = serde_json::to_value(&declined).expect("serializes");
    let text = declined["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("error 1013: "), "{declined}");
    assert_eq!(*HTTP_ARCHIVED.lock().expect("not poisoned"), [7]);
    let asked = client.service().asked.lock().expect("not poisoned").clone();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(asked[0].contains("http_archive_record"), "{asked:?}");
    client.cancel().await.expect("the client closes");
}

/// Sends a raw HTTP/1.1 `request` on a new connection to `address`; the connection.
pub(crate) async fn send_raw(
    address: std::net::SocketAddr,
    request: &str,
) -> tokio::net::TcpStream {
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("connects");
    stream
        .write_all(request.as_bytes())
        .await
        .expect("the request is sent");
    stream
}

/// A raw POST of `body` (with `extra` header lines, each ending in `\r\n`); the whole answer.
pub(crate) async fn raw_post(address: std::net::SocketAddr, body: &Value, extra: &str) -> String {
    let body = body.to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-11-25\r\n\
         connection: close\r\n{extra}content-length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = send_raw(address, &request).await;
    let mut answer = String::new();
    bounded(stream.read_to_string(&mut answer))
        .await
        .expect("read");
    answer
}

/// The `Mcp-Session-Id` of a raw answer to an `initialize`.
pub(crate) fn session_of(answer: &str) -> String {
    answer
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
        .expect("a session id")
}

pub(crate) fn initialize(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
}

/// A server of at most two MCP sessions.
fn two_sessions_at_most() -> HttpServer {
    let runtime = Runtime::builder().build().expect("the registry builds");
    HttpServer::new(
        McpServer::new(runtime).expect("every tool can be described to MCP"),
        HttpOptions::new(([127, 0, 0, 1], 0).into()).max_sessions(2),
    )
    .expect("options hold")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initializes_at_the_same_time_do_not_overshoot_the_session_limit() {
    let address = serve(two_sessions_at_most().router()).await;
    let answers = futures_util::future::join_all(
        (1..=64)
            .map(|id| tokio::spawn(async move { raw_post(address, &initialize(id), "").await })),
    )
    .await;
    let admitted = answers
        .iter()
        .map(|answer| answer.as_ref().expect("the task ran"))
        .filter(|answer| answer.starts_with("HTTP/1.1 200"))
        .count();
    assert!((1..=2).contains(&admitted), "{admitted} sessions started");
    for answer in answers.iter().flatten() {
        assert!(
            answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.1 503"),
            "{answer}"
        );
    }
}

#[tokio::test]
async fn sessions_past_the_limit_get_503_and_stateless_clients_are_still_answered() {
    let address = serve(two_sessions_at_most().router()).await;
    let mut sessions = Vec::new();
    for id in 1..=2 {
        let answer = raw_post(address, &initialize(id), "").await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        // Answered with JSON: nothing but the result to send.
        assert!(
            answer
                .to_ascii_lowercase()
                .contains("content-type: application/json"),
            "{answer}"
        );
        sessions.push(session_of(&answer));
    }
    let flood = raw_post(address, &initialize(3), "").await;
    assert!(flood.starts_with("HTTP/1.1 503"), "{flood}");
    assert!(
        flood.to_ascii_lowercase().contains("retry-after"),
        "{flood}"
    );

    // A session's call is answered in it, with JSON when it sends nothing before its result.
    let call = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "http_two_steps", "arguments": {}}});
    let notified = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let session = format!("mcp-session-id: {}\r\n", sessions[0]);
    let accepted = raw_post(address, &notified, &session).await;
    assert!(accepted.starts_with("HTTP/1.1 202"), "{accepted}");
    let answer = raw_post(address, &call, &session).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains(r#""text":"2""#), "{answer}");

    // A client that never initializes is answered statelessly, whatever the sessions.
    let answer = raw_post(address, &call, "").await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains(r#""text":"2""#), "{answer}");

    // An ended session frees its place.
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("connects");
    let delete = format!(
        "DELETE /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\nmcp-session-id: {}\r\n\
         mcp-protocol-version: 2025-11-25\r\nconnection: close\r\n\r\n",
        sessions[1]
    );
    stream.write_all(delete.as_bytes()).await.expect("sent");
    let mut answer = String::new();
    bounded(stream.read_to_string(&mut answer))
        .await
        .expect("read");
    assert!(answer.starts_with("HTTP/1.1 2"), "{answer}");
    let again = raw_post(address, &initialize(5), "").await;
    assert!(again.starts_with("HTTP/1.1 200"), "{again}");
}
