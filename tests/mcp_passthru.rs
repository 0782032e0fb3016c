//! What a remote MCP server sends its client during a call reaches the host of the pleach call
//! that made it: logs and progress as the call's `tool.log` and `tool.progress` events,
//! elicitation and sampling as `elicitation.requested` and `sampling.requested` events the host
//! answers (within the approval timeout; a host that cannot answer refuses clearly; cancelling
//! the call withdraws the request). Over stdio (`tests/mcp-servers/hostile.py talk`) and over
//! Streamable HTTP (a pleach server of this binary's tools), where several calls at once each
//! get their own answers.

use std::time::Duration;

use pleach_core::client::{Elicited, Sampled};
use pleach_core::{ErrorCode, Runtime, SessionOptions, ToolCall, ToolEvent};
use pleach_mcp::McpServer;
use pleach_mcp::http::{HttpOptions, HttpServer};
use pleach_mcp::remote::{McpRemote, RemoteServer};
use serde_json::{Value, json};

use crate::mcp_http::bounded;

/// `hostile.py talk` over stdio, its tools prefixed `h`.
async fn talker() -> RemoteServer {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/mcp-servers/hostile.py");
    bounded(
        McpRemote::stdio("python3", [script, "talk"])
            .prefix("h")
            .connect_timeout(Duration::from_secs(20))
            .connect(),
    )
    .await
    .expect("connects")
}

fn runtime_of(server: &RemoteServer, approval_timeout: Duration) -> Runtime {
    Runtime::builder()
        .plugin(server.plugin())
        .approval_timeout(approval_timeout)
        .build()
        .expect("the remote tools join the runtime")
}

/// What one turn of `calls` gave: each call's result text (or error), and the events the host
/// saw besides the terminal ones; `answer` answers each request event (or leaves it).
async fn turn_of(
    runtime: &Runtime,
    calls: Vec<ToolCall>,
    mut answer: impl FnMut(&ToolEvent),
) -> (Vec<Result<String, pleach_core::ToolError>>, Vec<String>) {
    let session = runtime
        .create_session(SessionOptions::all())
        .expect("a session");
    let mut turn = session.run_turn(calls);
    let mut seen = Vec::new();
    while let Some(event) = bounded(turn.events().recv()).await {
        answer(&event);
        if matches!(
            event,
            ToolEvent::Log { .. }
                | ToolEvent::Progress { .. }
                | ToolEvent::ElicitationRequested { .. }
                | ToolEvent::SamplingRequested { .. }
        ) {
            seen.push(event.to_json());
        }
    }
    let results = bounded(turn.finish()).await;
    let texts = results
        .into_iter()
        .map(|result| {
            result.outcome.map(|output| match output.value() {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            })
        })
        .collect();
    (texts, seen)
}

/// Each of `calls` in a session of its own, all at once. Each elicitation is answered 100 ms
/// later (so that the other calls' requests arrive meanwhile): accepted with `{"seats": N}`, N
/// the digits of its call's id, or declined when the id has none.
async fn at_once<const N: usize>(
    runtime: &Runtime,
    calls: [ToolCall; N],
) -> Vec<Result<String, pleach_core::ToolError>> {
    let turns = calls.map(|call| async move {
        let (mut results, _) = turn_of(runtime, vec![call], |event| {
            if let ToolEvent::ElicitationRequested { request } = event {
                let request = request.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    let answer = match request.tool_call_id()[1..].parse::<u32>() {
                        Ok(seats) => Elicited::Accept(json!({ "seats": seats })),
                        Err(_) => Elicited::Decline,
                    };
                    request.answer(answer);
                });
            }
        })
        .await;
        results.remove(0)
    });
    futures_util::future::join_all(turns).await
}

#[tokio::test]
async fn a_remote_servers_logs_and_progress_are_events_of_the_calling_tool() {
    let server = talker().await;
    let runtime = runtime_of(&server, Duration::from_secs(30));
    let (results, seen) = turn_of(
        &runtime,
        vec![ToolCall::new("c", "h__chatter", "{}")],
        |_| {},
    )
    .await;
    assert_eq!(results[0].as_deref().ok(), Some("chatted"));
    assert_eq!(
        seen,
        [
            r#"{"type":"tool.log","toolCallId":"c","level":"info","logger":"hostile","data":{"step":1}}"#,
            r#"{"type":"tool.log","toolCallId":"c","level":"warning","logger":"h","data":"careful"}"#,
            r#"{"type":"tool.progress","toolCallId":"c","progress":1.0,"total":2.0,"message":"half"}"#,
            r#"{"type":"tool.progress","toolCallId":"c","progress":2.0,"total":2.0,"message":"done"}"#,
        ]
    );
    server.close().await;
}

#[tokio::test]
async fn a_remote_servers_elicitation_and_sampling_are_answered_by_the_host() {
    let server = talker().await;
    let runtime = runtime_of(&server, Duration::from_secs(30));
    let calls = vec![ToolCall::new("e", "h__ask", r#"{"tag": "x"}"#)];
    let (results, seen) = turn_of(&runtime, calls, |event| {
        if let ToolEvent::ElicitationRequested { request } = event {
            request.answer(Elicited::Accept(json!({ "name": "Grace" })));
        }
    })
    .await;
    assert_eq!(
        results[0].as_deref().ok(),
        Some(r#"{"action":"accept","content":{"name":"Grace"}}"#)
    );
    assert!(
        seen[0].starts_with(
            r#"{"type":"elicitation.requested","toolCallId":"e","elicitation":{"message":"Name for x?","requestedSchema":{"#
        ),
        "{seen:?}"
    );
    assert!(seen[0].contains(r#""default":"Ada""#), "{seen:?}");

    let calls = vec![ToolCall::new("s", "h__sample", "{}")];
    let (results, seen) = turn_of(&runtime, calls, |event| {
        if let ToolEvent::SamplingRequested { request } = event {
            assert_eq!(
                request.request().system_prompt.as_deref(),
                Some("One word.")
            );
            let answer = Sampled::new("host-model", json!({ "type": "text", "text": "Teal" }));
            request.answer(answer);
        }
    })
    .await;
    let result: Value = serde_json::from_str(results[0].as_deref().expect("answered")).unwrap();
    assert_eq!(
        result,
        json!({ "model": "host-model", "role": "assistant",
                "content": { "type": "text", "text": "Teal" } }),
        "{seen:?}"
    );
    server.close().await;
}

#[tokio::test]
async fn a_host_that_cannot_answer_or_does_not_in_time_refuses_the_server_clearly() {
    let server = talker().await;
    let runtime = runtime_of(&server, Duration::from_millis(300));
    // `Session::call` reads no events: nobody can answer, and the server hears so at once.
    let session = runtime
        .create_session(SessionOptions::all())
        .expect("a session");
    let started = std::time::Instant::now();
    let outcome = bounded(session.call(ToolCall::new("n", "h__ask", r#"{"tag": "n"}"#))).await;
    let text = outcome.outcome.expect("the server answers").value().clone();
    let text = text.as_str().unwrap_or_default();
    assert!(
        text.starts_with("error -32601: the pleach host did not answer:"),
        "{text}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));

    // A host that reads events and keeps the request unanswered: no answer within the approval
    // timeout.
    let calls = vec![ToolCall::new("l", "h__sample", "{}")];
    let mut kept = Vec::new();
    let (results, seen) = turn_of(&runtime, calls, |event| {
        if let ToolEvent::SamplingRequested { request } = event {
            kept.push(request.clone());
        }
    })
    .await;
    let text = results[0].as_deref().expect("the server answers");
    assert!(text.starts_with("error -32603: "), "{text}");
    assert!(text.contains("no answer within"), "{text}");
    assert!(
        seen[0].starts_with(r#"{"type":"sampling.requested""#),
        "{seen:?}"
    );
    server.close().await;
}

#[tokio::test]
async fn cancelling_the_call_withdraws_the_forwarded_request() {
    let server = talker().await;
    let runtime = runtime_of(&server, Duration::from_secs(30));
    let session = runtime
        .create_session(SessionOptions::all())
        .expect("a session");
    let mut turn = session.run_turn(vec![ToolCall::new("c", "h__ask", r#"{"tag": "c"}"#)]);
    let mut pending = None;
    while let Some(event) = bounded(turn.events().recv()).await {
        if let ToolEvent::ElicitationRequested { request } = event {
            pending = Some(request);
            turn.cancel();
        }
    }
    let results = bounded(turn.finish()).await;
    assert_eq!(
        results[0]
            .outcome
            .as_ref()
            .map_err(pleach_core::ToolError::code),
        Err(ErrorCode::Cancelled)
    );
    let pending = pending.expect("the host was asked");
    assert!(
        pending.signal().is_cancelled(),
        "the host's request is withdrawn"
    );
    assert!(
        !pending.answer(Elicited::Decline),
        "an answer after the end goes nowhere"
    );
    server.close().await;
}

#[tokio::test]
async fn over_stdio_a_request_during_several_calls_is_refused_as_ambiguous() {
    let server = talker().await;
    let runtime = runtime_of(&server, Duration::from_secs(30));
    let results = at_once(
        &runtime,
        ["a", "b"].map(|id| ToolCall::new(id, "h__ask", format!(r#"{{"tag": "{id}"}}"#))),
    )
    .await;
    // Whichever request comes while both calls run is refused; the other may come after the
    // first call ended, when it is the only one.
    let refused = results
        .iter()
        .filter(|result| {
            result
                .as_deref()
                .is_ok_and(|text| text.contains("2 calls to it are running"))
        })
        .count();
    assert!(refused >= 1, "{results:?}");
    server.close().await;
}

/// A pleach server of this binary's tools (among them `talk_books`, which elicits) over
/// Streamable HTTP, reached as a remote server prefixed `r` whose client declares elicitation
/// when `elicitation` says.
async fn pleach_over_http(elicitation: bool) -> RemoteServer {
    let remote_runtime = Runtime::builder().build().expect("the registry builds");
    let server = McpServer::new(remote_runtime).expect("every tool can be described to MCP");
    let http = HttpServer::new(server, HttpOptions::new(([127, 0, 0, 1], 0).into()))
        .expect("options hold");
    let address = crate::mcp_http::serve(http.router()).await;
    bounded(
        McpRemote::http(format!("http://{address}/mcp"))
            .prefix("r")
            .elicitation(elicitation)
            .connect(),
    )
    .await
    .expect("connects")
}

#[tokio::test]
async fn over_http_each_of_several_calls_gets_its_own_answer() {
    let server = pleach_over_http(true).await;
    let runtime = runtime_of(&server, Duration::from_secs(30));
    let results = at_once(
        &runtime,
        [1, 2, 3].map(|n| ToolCall::new(format!("c{n}"), "r__talk_books", "{}")),
    )
    .await;
    let texts: Vec<&str> = results
        .iter()
        .map(|result| result.as_deref().expect("each call succeeds"))
        .collect();
    assert_eq!(
        texts,
        [
            "booked 1 (window: false)",
            "booked 2 (window: false)",
            "booked 3 (window: false)"
        ]
    );
    server.close().await;
}

#[tokio::test]
async fn declaring_no_elicitation_makes_the_remote_tool_fail_with_1020() {
    let server = pleach_over_http(false).await;
    let runtime = runtime_of(&server, Duration::from_secs(30));
    let calls = vec![ToolCall::new("c", "r__talk_books", "{}")];
    let (results, seen) = turn_of(&runtime, calls, |_| {}).await;
    let failed = results[0].as_ref().expect_err("the remote tool cannot ask");
    assert!(failed.message().contains("1020"), "{failed:?}");
    assert!(seen.is_empty(), "{seen:?}");
    server.close().await;
}
