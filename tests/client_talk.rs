//! Tools that talk to their client through `ToolContext`: logs, progress with the tool's own
//! numbers, elicitation with a typed answer, and sampling. In process (the session's events, which
//! the host answers), over MCP on a duplex stream (what stdio carries) with rmcp's client, and
//! over Streamable HTTP; and a client that did not declare a capability gets 1020 at once.
#![allow(deprecated)] // rmcp marks logging and sampling deprecated (SEP-2577); MCP still has them.

use std::sync::Mutex;
use std::time::Duration;

use pleach_core::client::{Elicited, LogLevel, Progress, Sampled, SamplingRequest};
use pleach_core::event::ToolEvent;
use pleach_core::{Runtime, SessionOptions, ToolCall, ToolContext, ToolError, tool};
use pleach_mcp::McpServer;
use pleach_mcp::http::{HttpOptions, HttpServer};
use rmcp::model::{
    CallToolRequestParams, CancelledNotificationParam, ClientConfig, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequestParams, ElicitResult, LoggingMessageNotificationParam,
    ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::mcp_http::{bounded, send_raw};

/// Logs at three levels, one under a logger name.
#[tool]
async fn talk_logs(ctx: ToolContext) -> u32 {
    ctx.log(LogLevel::Debug, "debug detail");
    ctx.log(LogLevel::Info, json!({ "rows": 3 }));
    ctx.with_logger("copier")
        .log(LogLevel::Warning, "two rows skipped");
    3
}

/// Reports its progress in its own numbers: 1, 2 and 3 of 3.
#[tool]
async fn talk_progress(ctx: ToolContext) -> u32 {
    for done in 1..=3 {
        ctx.report_progress(
            Progress::new(f64::from(done))
                .total(3.0)
                .message(format!("file {done}")),
        );
    }
    3
}

/// Let go by the resumption test once its client has resumed the call's stream.
static TALK_RELEASE: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// Logs, waits to be let go, logs again.
#[tool]
async fn talk_waits(ctx: ToolContext) -> u32 {
    ctx.log(LogLevel::Info, "before the drop");
    TALK_RELEASE.notified().await;
    ctx.log(LogLevel::Info, "after the resumption");
    2
}

/// A booking the user fills in.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Booking {
    /// How many seats.
    #[schemars(range(min = 1, max = 8))]
    seats: u32,
    /// Window seats, if there are any.
    window: Option<bool>,
}

/// Asks the user for a booking.
#[tool]
async fn talk_books(ctx: ToolContext) -> Result<String, ToolError> {
    Ok(match ctx.elicit::<Booking>("How many seats?").await? {
        Elicited::Accept(booking) => format!(
            "booked {} (window: {})",
            booking.seats,
            booking.window.unwrap_or(false)
        ),
        Elicited::Decline => "declined".to_owned(),
        Elicited::Cancel => "cancelled".to_owned(),
    })
}

/// Asks the client's model to name a colour.
#[tool]
async fn talk_samples(ctx: ToolContext) -> Result<String, ToolError> {
    let request = SamplingRequest::new("Name a colour.")
        .system_prompt("One word.")
        .max_tokens(5);
    let answer = ctx.sample(request).await?;
    Ok(format!(
        "{} said {}",
        answer.model,
        answer.text().unwrap_or("nothing")
    ))
}

fn runtime() -> Runtime {
    Runtime::builder().build().expect("the registry builds")
}

// In process: the session's events, answered by the host.

#[tokio::test]
async fn in_process_logs_and_progress_are_events_of_the_call() {
    let session = runtime()
        .create_session(SessionOptions::all())
        .expect("session");
    let mut turn = session.run_turn(vec![
        ToolCall::new("l", "talk_logs", "{}"),
        ToolCall::new("p", "talk_progress", "{}"),
    ]);
    let mut lines = Vec::new();
    while let Some(event) = turn.events().recv().await {
        if matches!(event, ToolEvent::Log { .. } | ToolEvent::Progress { .. }) {
            lines.push(event.to_json());
        }
    }
    turn.finish().await;
    assert_eq!(
        lines,
        [
            r#"{"type":"tool.log","toolCallId":"l","level":"debug","data":"debug detail"}"#,
            r#"{"type":"tool.log","toolCallId":"l","level":"info","data":{"rows":3}}"#,
            r#"{"type":"tool.log","toolCallId":"l","level":"warning","logger":"copier","data":"two rows skipped"}"#,
            r#"{"type":"tool.progress","toolCallId":"p","progress":1.0,"total":3.0,"message":"file 1"}"#,
            r#"{"type":"tool.progress","toolCallId":"p","progress":2.0,"total":3.0,"message":"file 2"}"#,
            r#"{"type":"tool.progress","toolCallId":"p","progress":3.0,"total":3.0,"message":"file 3"}"#,
        ]
    );
}

#[tokio::test]
async fn in_process_hosts_answer_elicitation_and_sampling_events() {
    let session = runtime()
        .create_session(SessionOptions::all())
        .expect("session");
    let mut turn = session.run_turn(vec![
        ToolCall::new("e", "talk_books", "{}"),
        ToolCall::new("s", "talk_samples", "{}"),
    ]);
    let mut asked = Vec::new();
    while let Some(event) = turn.events().recv().await {
        match &event {
            ToolEvent::ElicitationRequested { request } => {
                asked.push(event.to_json());
                assert_eq!(request.request().schema["required"], json!(["seats"]));
                assert!(request.answer(Elicited::Accept(json!({ "seats": 2 }))));
            }
            ToolEvent::SamplingRequested { request } => {
                asked.push(event.to_json());
                assert_eq!(request.request().max_tokens, 5);
                let answer = Sampled::new("host-model", json!({ "type": "text", "text": "Blue" }));
                assert!(request.answer(answer));
            }
            _ => {}
        }
    }
    let results = turn.finish().await;
    let texts: Vec<String> = results
        .iter()
        .map(|result| {
            result
                .outcome
                .as_ref()
                .expect("the call succeeds")
                .structured
                .clone()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(
        texts,
        [r#""booked 2 (window: false)""#, r#""host-model said Blue""#]
    );
    assert!(
        asked[0].starts_with(r#"{"type":"elicitation.requested","toolCallId":"e","elicitation":{"message":"How many seats?","requestedSchema":"#),
        "{asked:?}"
    );
    assert!(
        asked[1].starts_with(r#"{"type":"sampling.requested","toolCallId":"s","sampling":{"messages":[{"role":"user","text":"Name a colour."}]"#),
        "{asked:?}"
    );
}

#[tokio::test]
async fn an_answer_that_does_not_fit_the_form_fails_the_call_and_a_late_one_times_out() {
    let runtime = Runtime::builder()
        .approval_timeout(Duration::from_millis(100))
        .build()
        .expect("the runtime builds");
    let session = runtime
        .create_session(SessionOptions::all())
        .expect("session");
    let mut turn = session.run_turn(vec![ToolCall::new("e", "talk_books", "{}")]);
    while let Some(event) = turn.events().recv().await {
        if let ToolEvent::ElicitationRequested { request } = event {
            request.answer(Elicited::Accept(json!({ "seats": 80 })));
        }
    }
    let error = turn.finish().await[0].outcome.clone().expect_err("refused");
    assert!(error.message().contains("/seats"), "{}", error.message());

    let mut turn = session.run_turn(vec![ToolCall::new("e2", "talk_books", "{}")]);
    let mut unanswered = Vec::new();
    while let Some(event) = turn.events().recv().await {
        if let ToolEvent::ElicitationRequested { request } = event {
            unanswered.push(request); // held, never answered
        }
    }
    let error = turn.finish().await[0]
        .outcome
        .clone()
        .expect_err("timed out");
    assert_eq!(error.code().as_u16(), 1022, "{error:?}");
    assert!(
        unanswered[0].signal().is_cancelled(),
        "the tool stopped waiting"
    );
}

#[tokio::test]
async fn a_host_that_answers_no_requests_gets_1020_at_once() {
    let session = runtime()
        .create_session(SessionOptions::all())
        .expect("session");
    // A host that reads the events but said it answers neither.
    session.set_client_capabilities(false, false);
    let mut turn = session.run_turn(vec![
        ToolCall::new("e", "talk_books", "{}"),
        ToolCall::new("s", "talk_samples", "{}"),
    ]);
    while let Some(event) = bounded(turn.events().recv()).await {
        assert!(
            !matches!(
                event,
                ToolEvent::ElicitationRequested { .. } | ToolEvent::SamplingRequested { .. }
            ),
            "no request reaches it: {event:?}"
        );
    }
    for result in turn.finish().await {
        let error = result.outcome.expect_err("refused");
        assert_eq!(error.code().as_u16(), 1020, "{error:?}");
    }
    // A call dispatched with no event stream: nobody could answer.
    session.set_client_capabilities(true, true);
    let result = bounded(session.call(ToolCall::new("c", "talk_books", "{}"))).await;
    assert_eq!(result.outcome.expect_err("refused").code().as_u16(), 1020);
}

// Over MCP.

/// An MCP client that can elicit and sample (as `capabilities` says): its user books two window
/// seats, its model answers "Teal"; it records the logs, progress and cancellations it gets.
struct Talker {
    capabilities: Value,
    logs: mpsc::UnboundedSender<LoggingMessageNotificationParam>,
    progress: mpsc::UnboundedSender<ProgressNotificationParam>,
    cancelled: mpsc::UnboundedSender<CancelledNotificationParam>,
    /// Whether the user never answers (the elicitation is withdrawn instead).
    silent: bool,
    asked: Mutex<Vec<Value>>,
}

/// A talker and the receivers of what it records.
struct Recorded {
    logs: mpsc::UnboundedReceiver<LoggingMessageNotificationParam>,
    progress: mpsc::UnboundedReceiver<ProgressNotificationParam>,
    cancelled: mpsc::UnboundedReceiver<CancelledNotificationParam>,
}

fn talker(capabilities: Value, silent: bool) -> (Talker, Recorded) {
    let (logs, logs_rx) = mpsc::unbounded_channel();
    let (progress, progress_rx) = mpsc::unbounded_channel();
    let (cancelled, cancelled_rx) = mpsc::unbounded_channel();
    (
        Talker {
            capabilities,
            logs,
            progress,
            cancelled,
            silent,
            asked: Mutex::new(Vec::new()),
        },
        Recorded {
            logs: logs_rx,
            progress: progress_rx,
            cancelled: cancelled_rx,
        },
    )
}

impl ClientHandler for Talker {
    fn get_info(&self) -> ClientConfig {
        let capabilities =
            serde_json::from_value(self.capabilities.clone()).expect("client capabilities");
        ClientConfig::new(
            capabilities,
            rmcp::model::Implementation::new("talker", "1"),
        )
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        self.asked
            .lock()
            .expect("not poisoned")
            .push(serde_json::to_value(&request).expect("serializes"));
        if self.silent {
            std::future::pending::<()>().await;
        }
        Ok(serde_json::from_value(
            json!({ "action": "accept", "content": { "seats": 2, "window": true } }),
        )
        .expect("an elicitation result"))
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, rmcp::ErrorData> {
        self.asked
            .lock()
            .expect("not poisoned")
            .push(serde_json::to_value(&params).expect("serializes"));
        Ok(teal())
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.logs.send(params);
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.send(params);
    }

    async fn on_cancelled(
        &self,
        params: CancelledNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.cancelled.send(params);
    }
}

const EVERYTHING: fn() -> Value = || json!({ "elicitation": { "form": {} }, "sampling": {} });

/// A server of this binary's tools on one end of a duplex stream (what stdio carries), `handler`
/// the client on the other.
async fn over_duplex<H: ClientHandler>(handler: H) -> RunningService<RoleClient, H> {
    let server = McpServer::new(runtime()).expect("every tool can be described to MCP");
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    bounded(handler.serve(client_io))
        .await
        .expect("the handshake succeeds")
}

/// The same over Streamable HTTP on a free loopback port (an MCP session: the client starts with
/// `initialize`).
async fn over_http<H: ClientHandler>(handler: H) -> RunningService<RoleClient, H> {
    let server = McpServer::new(runtime()).expect("every tool can be described to MCP");
    let http = HttpServer::new(server, HttpOptions::new(([127, 0, 0, 1], 0).into()))
        .expect("options hold");
    let address = crate::mcp_http::serve(http.router()).await;
    crate::mcp_http::connect(format!("http://{address}/mcp"), handler).await
}

fn call(name: &'static str) -> CallToolRequestParams {
    CallToolRequestParams::new(name).with_arguments(serde_json::Map::new())
}

/// The text of a call's result.
async fn text_of<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    name: &'static str,
) -> String {
    let result = bounded(client.call_tool(call(name)))
        .await
        .expect("the call answers");
    let result = serde_json::to_value(&result).expect("serializes");
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The whole exchange, on whichever transport `client` runs over.
async fn talks(client: RunningService<RoleClient, Talker>, mut recorded: Recorded) {
    assert!(
        client
            .peer_info()
            .and_then(|info| info.capabilities.logging.clone())
            .is_some(),
        "the server declares logging"
    );
    logs_are_filtered_by_level(&client, &mut recorded).await;
    progress_elicitation_and_sampling(client, recorded).await;
}

/// Every level until the client sets one; then that level and the more severe ones.
async fn logs_are_filtered_by_level(
    client: &RunningService<RoleClient, Talker>,
    recorded: &mut Recorded,
) {
    assert_eq!(text_of(client, "talk_logs").await, "3");
    let mut levels = Vec::new();
    for _ in 0..3 {
        levels.push(bounded(recorded.logs.recv()).await.expect("a log"));
    }
    assert_eq!(levels[2].logger.as_deref(), Some("copier"));
    assert_eq!(levels[1].data, json!({ "rows": 3 }));
    bounded(client.set_level(rmcp::model::SetLevelRequestParams::new(
        rmcp::model::LoggingLevel::Warning,
    )))
    .await
    .expect("logging/setLevel answers");
    assert_eq!(text_of(client, "talk_logs").await, "3");
    let warning = bounded(recorded.logs.recv()).await.expect("the warning");
    assert_eq!(warning.data, json!("two rows skipped"));
    assert!(
        recorded.logs.try_recv().is_err(),
        "debug and info are filtered out"
    );
}

/// Progress with the tool's own numbers, a typed elicitation and a sampling request.
async fn progress_elicitation_and_sampling(
    client: RunningService<RoleClient, Talker>,
    mut recorded: Recorded,
) {
    // Progress with the tool's own numbers, under the request's token.
    let handle = bounded(client.send_cancellable_request(
        rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(call(
            "talk_progress",
        ))),
        rmcp::service::PeerRequestOptions::no_options(),
    ))
    .await
    .expect("sent");
    let token = handle.progress_token.clone();
    bounded(handle.await_response()).await.expect("answered");
    let mut seen = Vec::new();
    for _ in 0..3 {
        let report = bounded(recorded.progress.recv()).await.expect("progress");
        assert_eq!(report.progress_token, token);
        seen.push((report.progress, report.total, report.message));
    }
    assert_eq!(seen[2], (3.0, Some(3.0), Some("file 3".to_owned())));

    assert_eq!(
        text_of(&client, "talk_books").await,
        "booked 2 (window: true)"
    );
    assert_eq!(
        text_of(&client, "talk_samples").await,
        "client-model said Teal"
    );
    let asked = client.service().asked.lock().expect("not poisoned").clone();
    assert_eq!(
        asked[0]["requestedSchema"]["properties"]["seats"]["maximum"], 8,
        "{asked:?}"
    );
    assert_eq!(asked[1]["systemPrompt"], "One word.", "{asked:?}");
    client.cancel().await.expect("the client closes");
}

#[tokio::test]
async fn a_tool_logs_reports_progress_elicits_and_samples_over_a_stream() {
    let (handler, recorded) = talker(EVERYTHING(), false);
    talks(over_duplex(handler).await, recorded).await;
}

#[tokio::test]
async fn a_tool_logs_reports_progress_elicits_and_samples_over_http() {
    let (handler, recorded) = talker(EVERYTHING(), false);
    talks(over_http(handler).await, recorded).await;
}

/// The JSON-RPC messages of a raw answer's SSE events, in order.
fn sse_messages(answer: &str) -> Vec<Value> {
    answer
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter(|data| !data.trim().is_empty())
        .map(|data| serde_json::from_str(data.trim()).expect("each event is JSON"))
        .collect()
}

/// This file's tools over HTTP on a free loopback port, and an MCP session started there with
/// raw requests: the server's address and the session's header line.
async fn raw_session() -> (std::net::SocketAddr, String) {
    use crate::mcp_http::{initialize, raw_post, session_of};
    let server = McpServer::new(runtime()).expect("every tool can be described to MCP");
    let http = HttpServer::new(server, HttpOptions::new(([127, 0, 0, 1], 0).into()))
        .expect("options hold");
    let address = crate::mcp_http::serve(http.router()).await;
    let session = session_of(&raw_post(address, &initialize(1), "").await);
    let header = format!("mcp-session-id: {session}\r\n");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    raw_post(address, &initialized, &header).await;
    (address, header)
}

#[tokio::test]
async fn over_http_a_calls_logs_come_on_its_own_answer_before_its_result() {
    let (address, session) = raw_session().await;
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "talk_logs", "arguments": {}}});
    let answer = crate::mcp_http::raw_post(address, &call, &session).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let messages = sse_messages(&answer);
    let methods: Vec<&str> = messages
        .iter()
        .map(|message| message["method"].as_str().unwrap_or("(result)"))
        .collect();
    assert_eq!(
        methods,
        [
            "notifications/message",
            "notifications/message",
            "notifications/message",
            "(result)"
        ],
        "{answer}"
    );
    assert_eq!(messages[1]["params"]["data"], json!({ "rows": 3 }));
    assert_eq!(messages[3]["id"], 2);
}

/// Reads `stream` until what it read contains `wanted`; all it read.
async fn read_until(stream: &mut tokio::net::TcpStream, wanted: &str) -> String {
    use tokio::io::AsyncReadExt;
    let mut read = Vec::new();
    bounded(async {
        while !String::from_utf8_lossy(&read).contains(wanted) {
            let mut chunk = [0_u8; 4096];
            let n = stream.read(&mut chunk).await.expect("reads");
            assert!(
                n > 0,
                "the stream ended: {}",
                String::from_utf8_lossy(&read)
            );
            read.extend_from_slice(&chunk[..n]);
        }
    })
    .await;
    String::from_utf8_lossy(&read).into_owned()
}

#[tokio::test]
async fn over_http_a_dropped_answer_resumes_with_last_event_id_logs_and_all_and_after_its_end() {
    let (address, header) = raw_session().await;
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "talk_waits", "arguments": {}}})
    .to_string();
    let mut first = send_raw(
        address,
        &format!(
            "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
             accept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-11-25\r\n\
             {header}content-length: {}\r\n\r\n{call}",
            call.len()
        ),
    )
    .await;
    let before = read_until(&mut first, "before the drop").await;
    let token = before
        .lines()
        .find_map(|line| line.strip_prefix("id:"))
        .map(str::trim)
        .expect("the stream's events have ids")
        .to_owned();
    drop(first);

    let get = format!(
        "GET /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\n\
         mcp-protocol-version: 2025-11-25\r\n{header}last-event-id: {token}\r\n\r\n"
    );
    let mut resumed = send_raw(address, &get).await;
    let headers = read_until(&mut resumed, "\r\n\r\n").await;
    assert!(headers.starts_with("HTTP/1.1 200"), "{headers}");
    TALK_RELEASE.notify_one();
    let rest = read_until(&mut resumed, r#""text":"2""#).await;
    let all = format!("{headers}{rest}");
    let after = all
        .find("after the resumption")
        .expect("the later log, resumed");
    let result = all.find(r#""text":"2""#).expect("the result");
    assert!(after < result, "the log before the result: {all}");
    drop(resumed);

    // Once the call has ended, its stream is still there to resume: the result again.
    let mut again = send_raw(address, &get).await;
    read_until(&mut again, r#""text":"2""#).await;
}

#[tokio::test]
async fn a_client_that_declared_neither_gets_1020_for_each() {
    for http in [false, true] {
        let (handler, _recorded) = talker(json!({}), false);
        let client = if http {
            over_http(handler).await
        } else {
            over_duplex(handler).await
        };
        for name in ["talk_books", "talk_samples"] {
            let text = text_of(&client, name).await;
            assert!(
                text.starts_with("error 1020: "),
                "{name} (http: {http}): {text}"
            );
        }
        client.cancel().await.expect("the client closes");
    }
}

#[tokio::test]
async fn cancelling_the_call_withdraws_its_pending_elicitation() {
    let (handler, mut recorded) = talker(EVERYTHING(), true);
    let client = over_duplex(handler).await;
    let handle = bounded(client.send_cancellable_request(
        rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(call(
            "talk_books",
        ))),
        rmcp::service::PeerRequestOptions::no_options(),
    ))
    .await
    .expect("sent");
    bounded(async {
        while client
            .service()
            .asked
            .lock()
            .expect("not poisoned")
            .is_empty()
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    handle.cancel(None).await.expect("cancelled");
    let withdrawn = bounded(recorded.cancelled.recv())
        .await
        .expect("a cancellation");
    assert!(withdrawn.request_id.is_some(), "{withdrawn:?}");
    client.cancel().await.expect("the client closes");
}

/// A client's model answering "Teal".
pub(crate) fn teal() -> CreateMessageResult {
    serde_json::from_value(json!({
        "model": "client-model",
        "role": "assistant",
        "content": { "type": "text", "text": "Teal" },
        "stopReason": "endTurn",
    }))
    .expect("a sampling result")
}
