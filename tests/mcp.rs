//! `pleach_mcp::McpServer` driven in process by rmcp's own client over `tokio::io::duplex`:
//! progress notifications, `notifications/cancelled`, a client that disconnects mid-call, and the
//! two kinds of failure (an `isError` result, a protocol error). `docs/mcp.md` says what is mapped
//! how; the disconnect case is in `docs/reliability.md`'s matrix.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use pleach_core::safety::{ApprovalRequired, ProvenanceDetector};
use pleach_core::{Runtime, ToolContext, tool, unified_tool};
use pleach_mcp::McpServer;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, ProgressNotificationParam,
    ProgressToken, ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, QuitReason, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceError, ServiceExt};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// How long any step may take before the test fails instead of hanging.
const BOUND: Duration = Duration::from_secs(15);

/// Adds two integers.
#[tool]
async fn mcp_add(a: i64, b: i64) -> i64 {
    a + b
}

/// Reports three steps of progress, then returns how many it reported.
#[tool]
async fn mcp_three_steps(ctx: ToolContext) -> i64 {
    for step in 1..=3 {
        ctx.progress(json!({ "step": step }));
    }
    3
}

static CANCELLED_STARTED: AtomicBool = AtomicBool::new(false);
static CANCELLED_SIGNAL_FIRED: AtomicBool = AtomicBool::new(false);

/// Waits until its call is cancelled.
#[tool]
async fn mcp_waits_for_cancel(ctx: ToolContext) -> i64 {
    CANCELLED_STARTED.store(true, Ordering::SeqCst);
    ctx.signal.cancelled().await;
    CANCELLED_SIGNAL_FIRED.store(true, Ordering::SeqCst);
    0
}

static DISCONNECT_STARTED: AtomicBool = AtomicBool::new(false);
static DISCONNECT_SIGNAL_FIRED: AtomicBool = AtomicBool::new(false);

static FLAKY_READY: AtomicBool = AtomicBool::new(false);

/// Fails (recoverably) until the test says the resource it reads is there.
#[tool]
async fn mcp_flaky(n: i64) -> Result<i64, pleach_core::ToolError> {
    if FLAKY_READY.load(Ordering::SeqCst) {
        Ok(n)
    } else {
        Err(pleach_core::ToolError::failed("not there yet"))
    }
}

/// Waits until its call is cancelled: the client will go away instead of answering.
#[tool]
async fn mcp_waits_for_disconnect(ctx: ToolContext) -> i64 {
    DISCONNECT_STARTED.store(true, Ordering::SeqCst);
    ctx.signal.cancelled().await;
    DISCONNECT_SIGNAL_FIRED.store(true, Ordering::SeqCst);
    0
}

static DELETE_RAN: AtomicBool = AtomicBool::new(false);

/// Deletes an expense: a standard-tier tool, so a finding asks the user first.
#[unified_tool(safety_tier = "standard")]
async fn mcp_delete_expense(id: i64) -> bool {
    DELETE_RAN.store(true, Ordering::SeqCst);
    id > 0
}

/// A client that forwards every progress notification to the test.
struct ProgressRecorder {
    notifications: mpsc::UnboundedSender<ProgressNotificationParam>,
}

impl ClientHandler for ProgressRecorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        // The test may have stopped listening; that is its own failure to report.
        let _ = self.notifications.send(params);
    }
}

type ServerTask = JoinHandle<QuitReason>;

/// Starts a server for every tool of this binary on one end of a duplex stream and connects
/// `handler` as the client on the other; the task ends when the server's service loop does.
async fn connect<H: ClientHandler>(handler: H) -> (RunningService<RoleClient, H>, ServerTask) {
    let (client, task, _server) = connect_to_server(handler).await;
    (client, task)
}

/// [`connect`], also keeping a handle on the server (it shares its session with the one serving).
async fn connect_to_server<H: ClientHandler>(
    handler: H,
) -> (RunningService<RoleClient, H>, ServerTask, McpServer) {
    connect_to_runtime(
        handler,
        Runtime::builder().build().expect("the registry builds"),
    )
    .await
}

/// [`connect_to_server`] for a server of `runtime`.
async fn connect_to_runtime<H: ClientHandler>(
    handler: H,
    runtime: Runtime,
) -> (RunningService<RoleClient, H>, ServerTask, McpServer) {
    let server = McpServer::new(runtime).expect("every tool can be described to MCP");
    let handle = server.clone();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    let server_task = tokio::spawn(async move {
        let running = server
            .serve(server_io)
            .await
            .expect("the server completes the handshake");
        running
            .waiting()
            .await
            .expect("the server loop does not panic")
    });
    let client = bounded(handler.serve(client_io))
        .await
        .expect("the client completes the handshake");
    (client, server_task, handle)
}

async fn bounded<T>(future: impl Future<Output = T>) -> T {
    tokio::time::timeout(BOUND, future)
        .await
        .expect("the step finishes within the bound")
}

/// The protocol error a request ends in, within the bound; a result or another failure fails
/// the test, saying what the request was.
async fn protocol_error<T: std::fmt::Debug>(
    request: impl Future<Output = Result<T, ServiceError>>,
    what: impl std::fmt::Display,
) -> rmcp::model::ErrorData {
    match bounded(request).await {
        Err(ServiceError::McpError(error)) => error,
        other => panic!("{what}: a protocol error, not {other:?}"),
    }
}

/// Waits until `flag` is set, failing after the bound.
async fn until_set(flag: &AtomicBool) {
    bounded(async {
        while !flag.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
}

fn call(name: &'static str, arguments: Value) -> CallToolRequestParams {
    let arguments: Map<String, Value> = match arguments {
        Value::Object(map) => map,
        other => panic!("arguments must be an object, not {other}"),
    };
    CallToolRequestParams::new(name).with_arguments(arguments)
}

fn call_request(params: CallToolRequestParams) -> ClientRequest {
    ClientRequest::CallToolRequest(CallToolRequest::new(params))
}

/// The result as MCP's JSON, so the assertions read like the wire.
fn wire<T: serde::Serialize>(result: &T) -> Value {
    serde_json::to_value(result).expect("a result serializes")
}

#[tokio::test]
async fn each_progress_report_reaches_the_client_as_a_progress_notification() {
    let (sender, mut notifications) = mpsc::unbounded_channel();
    let (client, _server) = connect(ProgressRecorder {
        notifications: sender,
    })
    .await;

    let handle = bounded(client.send_cancellable_request(
        call_request(call("mcp_three_steps", json!({}))),
        PeerRequestOptions::no_options(),
    ))
    .await
    .expect("the request is sent");
    let token: ProgressToken = handle.progress_token.clone();
    let response = bounded(handle.await_response())
        .await
        .expect("the call answers");
    let ServerResult::CallToolResult(result) = response else {
        panic!("a tools/call answers with a CallToolResult, not {response:?}");
    };
    let result = wire(&result);
    assert_ne!(result["isError"], json!(true), "{result}");
    assert_eq!(result["content"][0]["text"], json!("3"), "{result}");

    let mut received = Vec::new();
    while received.len() < 3 {
        received.push(
            bounded(notifications.recv())
                .await
                .expect("the client handler is alive"),
        );
    }
    for (n, notification) in received.iter().enumerate() {
        assert_eq!(notification.progress_token, token);
        let step = u32::try_from(n + 1).expect("three steps");
        assert!(
            (notification.progress - f64::from(step)).abs() < f64::EPSILON,
            "progress counts 1, 2, 3: {notification:?}"
        );
        let message: Value = serde_json::from_str(
            notification
                .message
                .as_deref()
                .expect("the delta is the message"),
        )
        .expect("the message is the delta's JSON");
        assert_eq!(message, json!({ "step": step }));
    }
    // Nothing more than the three reports.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(notifications.try_recv().is_err());
}

#[tokio::test]
async fn a_cancelled_request_fires_the_tools_signal_and_the_server_keeps_serving() {
    let (client, _server) = connect(()).await;

    let handle = bounded(client.send_cancellable_request(
        call_request(call("mcp_waits_for_cancel", json!({}))),
        PeerRequestOptions::no_options(),
    ))
    .await
    .expect("the request is sent");
    until_set(&CANCELLED_STARTED).await;
    bounded(handle.cancel(Some("the test cancels it".to_owned())))
        .await
        .expect("notifications/cancelled is sent");
    until_set(&CANCELLED_SIGNAL_FIRED).await;

    let result = bounded(client.call_tool(call("mcp_add", json!({ "a": 40, "b": 2 }))))
        .await
        .expect("the next call answers");
    let result = wire(&result);
    assert_ne!(result["isError"], json!(true), "{result}");
    assert_eq!(result["content"][0]["text"], json!("42"), "{result}");
}

#[tokio::test]
async fn a_client_that_disconnects_mid_call_ends_the_server_and_cancels_the_call() {
    let (client, server) = connect(()).await;

    let handle = bounded(client.send_cancellable_request(
        call_request(call("mcp_waits_for_disconnect", json!({}))),
        PeerRequestOptions::no_options(),
    ))
    .await
    .expect("the request is sent");
    until_set(&DISCONNECT_STARTED).await;

    // The client goes away without cancelling the request: its end of the stream closes.
    drop(handle);
    bounded(client.cancel())
        .await
        .expect("the client loop does not panic");

    let reason = bounded(server)
        .await
        .expect("the server task does not panic");
    assert!(
        matches!(reason, QuitReason::Closed | QuitReason::Cancelled),
        "{reason:?}"
    );
    until_set(&DISCONNECT_SIGNAL_FIRED).await;
}

#[tokio::test]
async fn bad_arguments_are_an_is_error_result_and_an_unknown_tool_a_protocol_error() {
    let (client, _server) = connect(()).await;

    let result = bounded(client.call_tool(call("mcp_add", json!({ "a": "forty", "b": 2 }))))
        .await
        .expect("a failing tool still answers with a result");
    let result = wire(&result);
    assert_eq!(result["isError"], json!(true), "{result}");
    let text = result["content"][0]["text"]
        .as_str()
        .expect("the failure is text");
    assert!(text.starts_with("error 1001:"), "{text}");

    let error = protocol_error(
        client.call_tool(call("mcp_no_such_tool", json!({}))),
        "an unknown tool",
    )
    .await;
    assert_eq!(error.code.0, -32602, "invalid params: {error:?}");
    assert!(error.message.contains("mcp_no_such_tool"), "{error:?}");
}

/// The text of a call's result, and whether it is an error.
async fn call_text<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    name: &'static str,
    arguments: Value,
) -> (bool, String) {
    let result = wire(
        &bounded(client.call_tool(call(name, arguments)))
            .await
            .expect("a tool call answers with a result"),
    );
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    (result["isError"] == json!(true), text.to_owned())
}

#[tokio::test]
async fn a_repeated_failure_is_refused_once_then_runs_again_and_the_server_keeps_no_conversation() {
    let (client, _task, server) = connect_to_server(()).await;
    for _ in 0..3 {
        let (failed, text) = call_text(&client, "mcp_flaky", json!({ "n": 7 })).await;
        assert!(failed && text.starts_with("error 1008:"), "{text}");
    }
    // The fourth identical try is refused as a loop (docs/error-codes.md, 1015) ...
    let (failed, text) = call_text(&client, "mcp_flaky", json!({ "n": 7 })).await;
    assert!(failed && text.starts_with("error 1015:"), "{text}");
    // ... and MCP has no user turn to end the count: after the refusal the call runs again, so
    // a resource that appeared later is read instead of refused for the rest of the connection.
    FLAKY_READY.store(true, Ordering::SeqCst);
    let (failed, text) = call_text(&client, "mcp_flaky", json!({ "n": 7 })).await;
    assert!(!failed, "{text}");
    assert_eq!(text, "7");

    // The client keeps the conversation; the server's session holds none of these calls.
    assert!(server.session().conversation().is_empty());
}

#[tokio::test]
async fn params_that_do_not_fit_tools_call_are_invalid_params_with_the_reason() {
    let (client, _server) = connect(()).await;
    for params in [
        json!({ "name": "mcp_add", "arguments": [1, 2] }),
        json!({ "arguments": {} }),
        json!({ "name": 42 }),
    ] {
        let request = ClientRequest::CustomRequest(rmcp::model::CustomRequest::new(
            "tools/call",
            Some(params.clone()),
        ));
        let error = protocol_error(client.send_request(request), &params).await;
        assert_eq!(error.code.0, -32602, "{params}: {error:?}");
        assert!(error.message.contains("tools/call"), "{error:?}");
    }
    let unknown = ClientRequest::CustomRequest(rmcp::model::CustomRequest::new("no/such", None));
    let error = protocol_error(client.send_request(unknown), "an unknown method").await;
    assert_eq!(error.code.0, -32601, "method not found: {error:?}");
}

#[tokio::test]
async fn listed_schemas_carry_only_formats_json_schema_defines() {
    let (client, _server) = connect(()).await;
    let listed = wire(
        &bounded(client.list_all_tools())
            .await
            .expect("tools/list answers"),
    );
    let add = listed
        .as_array()
        .and_then(|tools| tools.iter().find(|tool| tool["name"] == "mcp_add"))
        .expect("mcp_add is listed");
    // schemars writes `"format": "int64"` for an i64; clients warn about formats they do not
    // know. Its range, `i64::MIN..=i64::MAX`, only restates the type and no double holds its
    // ends: left out too (`docs/providers.md`, "Numbers"); the tool's own schema keeps it.
    let a = &add["inputSchema"]["properties"]["a"];
    assert_eq!(a.get("format"), None, "{add}");
    assert_eq!(a["type"], "integer");
    assert_eq!((a.get("minimum"), a.get("maximum")), (None, None), "{add}");
    let own = pleach_core::tool_registry()
        .definition("mcp_add")
        .expect("registered");
    assert_eq!(own.input_schema()["properties"]["a"]["maximum"], i64::MAX);
}

#[tokio::test]
async fn a_cursor_the_server_never_gave_is_invalid_params() {
    let (client, _server) = connect(()).await;
    let params = rmcp::model::PaginatedRequestParams::default().with_cursor(Some("bogus".into()));
    let error = protocol_error(
        client.list_tools(Some(params)),
        "tools/list has one page: a cursor",
    )
    .await;
    assert_eq!(error.code.0, -32602, "{error:?}");
    assert!(error.message.contains("bogus"), "{error:?}");
}

/// A flagged standard-tier call over MCP: the stdio client has no way to approve it, so it fails
/// at once with 1012 and a message saying approval is required, instead of waiting for ever
/// (`docs/mcp.md`, "Approvals"). Both policies: every call asks, and a made-up value asks.
#[tokio::test]
async fn a_call_that_needs_approval_fails_at_once_saying_so_and_never_runs() {
    let policies: [(&str, Runtime); 2] = [
        (
            "ApprovalRequired",
            Runtime::builder()
                .detector(ApprovalRequired::tools(["mcp_delete_expense"]))
                .build()
                .expect("the runtime builds"),
        ),
        (
            "ProvenanceDetector",
            Runtime::builder()
                .detector(ProvenanceDetector::new().guard("mcp_delete_expense", ["/id"]))
                .build()
                .expect("the runtime builds"),
        ),
    ];
    for (policy, runtime) in policies {
        let (client, _task, _server) = connect_to_runtime((), runtime).await;
        let started = std::time::Instant::now();
        // Far below the bound: the answer comes at once, not after a wait.
        let result = tokio::time::timeout(
            Duration::from_secs(5),
            client.call_tool(call("mcp_delete_expense", json!({ "id": 7 }))),
        )
        .await
        .unwrap_or_else(|_| panic!("{policy}: the flagged call answers, it does not hang"))
        .expect("a flagged call answers with a result");
        let result = wire(&result);
        assert_eq!(result["isError"], json!(true), "{policy}: {result}");
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.starts_with("error 1012:"), "{policy}: {text}");
        assert!(
            text.contains("needs the user's approval") && text.contains("cannot ask the user"),
            "{policy}: the message says why: {text}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{policy}: {:?}",
            started.elapsed()
        );
        // Unflagged tools of the same server still run.
        let (failed, text) = call_text(&client, "mcp_add", json!({ "a": 1, "b": 2 })).await;
        assert!(!failed && text == "3", "{policy}: {text}");
    }
    assert!(
        !DELETE_RAN.load(Ordering::SeqCst),
        "a call that needed approval never ran"
    );
}

static APPROVED_RUNS: std::sync::Mutex<Vec<i64>> = std::sync::Mutex::new(Vec::new());

/// Archives a record: a standard-tier tool the user approves through elicitation.
#[unified_tool(safety_tier = "standard")]
async fn mcp_archive_record(id: i64) -> i64 {
    APPROVED_RUNS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(id);
    id
}

/// A client that can elicit, speaking `version`: its "user" gives the queued answers in order.
pub(crate) struct Approver {
    pub(crate) version: rmcp::model::ProtocolVersion,
    pub(crate) answers: std::sync::Mutex<Vec<Value>>,
    pub(crate) asked: std::sync::Mutex<Vec<String>>,
}

impl ClientHandler for Approver {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let capabilities = serde_json::from_value(json!({ "elicitation": { "form": {} } }))
            .expect("client capabilities");
        rmcp::model::ClientConfig::new(
            capabilities,
            rmcp::model::Implementation::new("approver", "1"),
        )
        .with_protocol_version(self.version.clone())
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        Ok(scripted_answer(&self.asked, &self.answers, &request))
    }
}

/// A scripted user's answer to `request`: the next of `answers`, its message recorded in `asked`.
pub(crate) fn scripted_answer(
    asked: &std::sync::Mutex<Vec<String>>,
    answers: &std::sync::Mutex<Vec<Value>>,
    request: &rmcp::model::ElicitRequestParams,
) -> rmcp::model::ElicitResult {
    let request = serde_json::to_value(request).expect("serializes");
    asked
        .lock()
        .expect("not poisoned")
        .push(request["message"].as_str().unwrap_or_default().to_owned());
    let answer = answers.lock().expect("not poisoned").remove(0);
    serde_json::from_value(answer).expect("an elicitation result")
}

#[tokio::test]
async fn an_eliciting_client_approves_edits_and_rejects_in_both_protocol_eras() {
    use rmcp::model::ProtocolVersion;
    for version in [ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2026_07_28] {
        APPROVED_RUNS.lock().expect("not poisoned").clear();
        let runtime = Runtime::builder()
            .detector(ApprovalRequired::tools(["mcp_archive_record"]))
            .build()
            .expect("the runtime builds");
        let approver = Approver {
            version: version.clone(),
            answers: std::sync::Mutex::new(vec![
                json!({"action": "accept", "content": {"approve": true}}),
                json!({"action": "accept", "content": {"approve": true, "arguments": "{\"id\": 9}"}}),
                json!({"action": "accept", "content": {"approve": true, "arguments": "{\"id\": \"nine\"}"}}),
                json!({"action": "accept", "content": {"approve": false, "reason": "not that one"}}),
                json!({"action": "decline"}),
            ]),
            asked: std::sync::Mutex::new(Vec::new()),
        };
        let (client, _task, _server) = connect_to_runtime(approver, runtime).await;
        let mut texts = Vec::new();
        for _ in 0..5 {
            let result = bounded(client.call_tool(call("mcp_archive_record", json!({ "id": 1 }))))
                .await
                .expect("the call answers");
            let result = wire(&result);
            texts.push(
                result["content"][0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            );
        }
        assert_eq!(texts[0], "1", "{version:?}: approved as issued: {texts:?}");
        assert_eq!(
            texts[1], "9",
            "{version:?}: approved with edited arguments: {texts:?}"
        );
        assert!(
            texts[2].starts_with("error 1013: "),
            "{version:?}: a bad edit: {texts:?}"
        );
        assert!(
            texts[3].starts_with("error 1013: ") && texts[3].contains("not that one"),
            "{version:?}: rejected with the reason: {texts:?}"
        );
        assert!(
            texts[4].starts_with("error 1013: "),
            "{version:?}: declined: {texts:?}"
        );
        // Only the approved calls ran, each once.
        assert_eq!(
            *APPROVED_RUNS.lock().expect("not poisoned"),
            [1, 9],
            "{version:?}"
        );
        let asked = client.service().asked.lock().expect("not poisoned").clone();
        assert_eq!(asked.len(), 5, "{version:?}: asked once a call: {asked:?}");
        assert!(asked[0].contains("mcp_archive_record"), "{asked:?}");
        client.cancel().await.expect("the client closes");
    }
}

/// Takes a screenshot: an image beside its caption.
#[tool]
async fn mcp_screenshot() -> pleach_core::ToolOutput<String> {
    pleach_core::ToolOutput::new("home page".to_owned()).block(pleach_core::ContentBlock::image(
        &b"\x89PNG\r\n\x1a\n-pixels-"[..],
        "image/png",
    ))
}

#[tokio::test]
async fn an_image_reaches_rmcps_client_as_an_image_block() {
    let (client, _server) = connect(()).await;
    let result = bounded(client.call_tool(call("mcp_screenshot", json!({}))))
        .await
        .expect("the call answers with a result");
    // rmcp's own types read it as an image, not as text.
    let image = result
        .content
        .iter()
        .find_map(|block| block.as_image())
        .expect("an image block");
    assert_eq!(image.mime_type, "image/png");
    assert_eq!(image.data, "iVBORw0KGgotcGl4ZWxzLQ==");
    let result = wire(&result);
    assert_eq!(
        result["content"][0],
        json!({ "type": "text", "text": "home page" })
    );
    assert_eq!(result["isError"], json!(false));
}

#[tokio::test]
async fn a_remote_servers_image_passes_through_byte_identical() {
    use base64::Engine as _;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/mcp-servers/hostile.py");
    let remote = pleach_mcp::remote::McpRemote::stdio("python3", [script, "image"])
        .prefix("far")
        .connect_timeout(Duration::from_secs(20));
    let remote = bounded(remote.connect())
        .await
        .expect("the server connects");
    let runtime = Runtime::builder()
        .plugin(remote.plugin())
        .build()
        .expect("the remote tool is taken");
    let (client, _server, _handle) = connect_to_runtime((), runtime).await;

    let result = bounded(client.call_tool(call("far__shot", json!({}))))
        .await
        .expect("the call answers with a result");
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend((0..100_000u32).map(|i| u8::try_from(i % 251).unwrap_or_default()));
    let sent = base64::engine::general_purpose::STANDARD.encode(&png);
    let image = result
        .content
        .iter()
        .find_map(|block| block.as_image())
        .expect("an image block, not JSON text");
    assert!(image.data == sent, "the image's data changed on the way");
    assert_eq!(image.mime_type, "image/png");
    let wire = wire(&result);
    assert_eq!(
        wire["content"][0],
        json!({ "type": "text", "text": "home page" })
    );
    assert_eq!(
        wire["content"][1]["annotations"],
        json!({ "audience": ["user"], "priority": 0.5 })
    );
}
