//! `pleach_core::mcp::McpServer` driven in process by rmcp's own client over `tokio::io::duplex`:
//! progress notifications, `notifications/cancelled`, a client that disconnects mid-call, and the
//! two kinds of failure (an `isError` result, a protocol error). `docs/mcp.md` says what is mapped
//! how; the disconnect case is in `docs/reliability.md`'s matrix.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use pleach_core::mcp::McpServer;
use pleach_core::{Runtime, ToolContext, tool};
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

/// Waits until its call is cancelled: the client will go away instead of answering.
#[tool]
async fn mcp_waits_for_disconnect(ctx: ToolContext) -> i64 {
    DISCONNECT_STARTED.store(true, Ordering::SeqCst);
    ctx.signal.cancelled().await;
    DISCONNECT_SIGNAL_FIRED.store(true, Ordering::SeqCst);
    0
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
    let runtime = Runtime::builder().build().expect("the registry builds");
    let server = McpServer::new(runtime).expect("every tool can be described to MCP");
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
    (client, server_task)
}

async fn bounded<T>(future: impl Future<Output = T>) -> T {
    tokio::time::timeout(BOUND, future)
        .await
        .expect("the step finishes within the bound")
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

    let error = bounded(client.call_tool(call("mcp_no_such_tool", json!({}))))
        .await
        .expect_err("an unknown tool is not a result");
    let ServiceError::McpError(error) = error else {
        panic!("an unknown tool is a protocol error, not {error:?}");
    };
    assert_eq!(error.code.0, -32602, "invalid params: {error:?}");
    assert!(error.message.contains("mcp_no_such_tool"), "{error:?}");
}
