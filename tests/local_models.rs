//! The agent loop against local model servers (`docs/agent.md`, "Local models"): the streams
//! llama.cpp's `llama-server` sent a real model's answers in (`fixtures/provider-streams/
//! llama-server/`) replayed over loopback HTTP, what goes in each request (plain schemas, the
//! run's settings, only the tools offered), and the endings a local server brings about: a
//! stream with no answer in it, an answer cut by the token limit, a step that never ends.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use pleach_core::agent::{
    AgentOptions, AnthropicClient, ModelError, OpenAiChatClient, ReplayClient, StopReason,
    ToolChoice, WireFormat,
};
use pleach_core::{ErrorCode, Message, Runtime, Session, SessionOptions, ToolContext, ToolEvent};
use pleach_test_support::http::{LoopbackServer, Reply};
use serde_json::json;

use crate::agent::{completed, run, sse};

/// Looks a record up; cancelled, it says so (a run's timeout cancels it).
#[pleach_core::tool]
async fn slow_lookup(ctx: ToolContext, key: String) -> String {
    tokio::select! {
        () = ctx.signal.cancelled() => format!("{key}: cancelled"),
        () = tokio::time::sleep(Duration::from_secs(30)) => format!("{key}: found"),
    }
}

/// A session with the catalog's `math` and `datetime` (the tools the recordings call) and
/// `slow_lookup`, the user's message pushed.
fn session() -> Session {
    let session = Runtime::builder()
        .build()
        .unwrap()
        .create_session(SessionOptions::enabled(["math", "datetime", "slow_lookup"]))
        .unwrap();
    session.push_user_message("what is 1234*5678?");
    session
}

fn recorded(file: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/provider-streams/llama-server")
        .join(file);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn openai_text(text: &str, finish_reason: &str) -> Vec<u8> {
    let chunk =
        json!({"choices":[{"index":0,"delta":{"content":text},"finish_reason":finish_reason}]});
    format!("data: {chunk}\n\ndata: [DONE]\n\n").into_bytes()
}

fn anthropic_text(text: &str, stop_reason: &str) -> Vec<u8> {
    sse(&[
        json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[]}}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":text}}),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"message_delta","delta":{"stop_reason":stop_reason}}),
        json!({"type":"message_stop"}),
    ])
}

fn failed(events: &[ToolEvent]) -> Vec<(String, pleach_core::ToolError)> {
    events
        .iter()
        .filter_map(|event| match event {
            ToolEvent::Failed { tool_call, error } => {
                Some((tool_call.id().to_owned(), error.clone()))
            }
            _ => None,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The recorded llama-server streams.

/// `body` as llama-server sends a stream: chunked, keep-alive offered (`keep-alive: timeout=5,
/// max=100`, no `connection: close`), and the connection closed when a second request comes on it.
fn chunked_then_closed(body: &[u8]) -> Reply {
    let mut bytes = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
        transfer-encoding: chunked\r\nkeep-alive: timeout=5, max=100\r\n\r\n"
        .to_vec();
    for piece in body.chunks(64) {
        bytes.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        bytes.extend_from_slice(piece);
        bytes.extend_from_slice(b"\r\n");
    }
    bytes.extend_from_slice(b"0\r\n\r\n");
    Reply::ClosedOnReuse(bytes)
}

#[tokio::test]
async fn a_server_that_closes_its_connection_after_each_stream_gets_every_step() {
    // The second step's request went on the connection the first stream came on, and the server
    // closed it: the run stopped with "connection closed before message completed".
    let server = LoopbackServer::replying(vec![
        chunked_then_closed(&recorded("llama-server-stream-two-calls.sse")),
        chunked_then_closed(&openai_text("1234*5678 = 7006652", "stop")),
    ])
    .await;
    let client = OpenAiChatClient::new(server.url("/v1"), "m", None).unwrap();
    let session = session();
    let options = AgentOptions::default().tools(["math"]);
    let (events, outcome) = run(&session, Arc::new(client), options).await;

    assert_eq!(
        outcome.stop_reason,
        StopReason::Finished,
        "{:?}",
        outcome.steps
    );
    assert_eq!(outcome.final_text.as_deref(), Some("1234*5678 = 7006652"));
    assert_eq!(completed(&events).len(), 2);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn llama_servers_two_calls_run_and_their_results_go_back_with_plain_schemas() {
    let server = LoopbackServer::replying(vec![
        Reply::sse(recorded("llama-server-stream-two-calls.sse")),
        Reply::sse(openai_text("1234*5678 = 7006652", "stop")),
    ])
    .await;
    let client = OpenAiChatClient::new(server.url("/v1"), "m", None).unwrap();
    let session = session();
    let options = AgentOptions::default().tools(["math"]).max_tokens(200);
    let (events, outcome) = run(&session, Arc::new(client), options).await;

    assert_eq!(outcome.stop_reason, StopReason::Finished);
    assert_eq!(outcome.final_text.as_deref(), Some("1234*5678 = 7006652"));
    assert_eq!(
        outcome.steps[0].finish_reason.as_deref(),
        Some("tool_calls")
    );
    assert!(
        outcome.steps[0]
            .text
            .as_deref()
            .is_some_and(|text| text.starts_with("The user specified a function")),
        "{:?}",
        outcome.steps[0].text
    );
    let mut done = completed(&events);
    done.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        done,
        [
            (
                "BcdLNeVsVsDbU9wWkhJY8aBMIa12jFjm".to_owned(),
                json!({ "result": 7_006_652.0 })
            ),
            (
                "ZfNwKMi2dJZ8H0Twa9wfZgykizWMGnLy".to_owned(),
                json!({ "result": 7_006_652.0 })
            ),
        ]
    );

    // What llama-server was sent: plain schemas (the tool's own `required`, no `strict: true`),
    // only the tools offered, `max_tokens` by that name.
    let requests = server.requests();
    let first = requests[0].json();
    let tools = first["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1, "{tools:?}");
    assert_eq!(tools[0]["function"]["name"], "math");
    assert_eq!(tools[0]["function"]["strict"], false);
    let math = pleach_core::tool_registry().definition("math").unwrap();
    assert_eq!(&tools[0]["function"]["parameters"], math.input_schema());
    assert_eq!(first["max_tokens"], 200);
    assert_eq!(first.get("max_completion_tokens"), None);
    // The results went back under the recorded ids.
    let second = requests[1].json();
    let results: Vec<&str> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        results,
        [
            "ZfNwKMi2dJZ8H0Twa9wfZgykizWMGnLy",
            "BcdLNeVsVsDbU9wWkhJY8aBMIa12jFjm"
        ]
    );
}

#[tokio::test]
async fn llama_servers_calls_of_a_tool_never_offered_fail_1003_and_the_loop_goes_on() {
    let client = ReplayClient::new(
        WireFormat::OpenAiChat,
        [
            recorded("llama-server-stream-renamed-unknown-tool.sse"),
            openai_text("Sorry, I will use `math`.", "stop"),
        ],
    );
    let session = session();
    let (events, outcome) = run(&session, Arc::new(client), AgentOptions::default()).await;
    assert_eq!(outcome.stop_reason, StopReason::Finished);
    let failures = failed(&events);
    assert_eq!(failures.len(), 2, "{failures:?}");
    for (_, error) in &failures {
        assert_eq!(error.code(), ErrorCode::UnknownTool, "{error:?}");
    }
    assert!(completed(&events).is_empty());
}

#[tokio::test]
async fn llama_servers_call_cut_by_length_fails_1007_and_never_runs() {
    let client = ReplayClient::new(
        WireFormat::OpenAiChat,
        [
            recorded("llama-server-stream-cut-mid-call.sse"),
            openai_text("It is 2026.", "stop"),
        ],
    );
    let session = session();
    let (events, outcome) = run(&session, Arc::new(client), AgentOptions::default()).await;
    assert_eq!(outcome.stop_reason, StopReason::Finished);
    assert_eq!(outcome.steps[0].finish_reason.as_deref(), Some("length"));
    let failures = failed(&events);
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].0, "E8kkSA3ReowwVvjqFBXc5kVlr18oyTl4");
    assert_eq!(failures[0].1.code(), ErrorCode::ArgumentsIncomplete);
    assert!(
        failures[0].1.message().contains("finish_reason: length"),
        "{}",
        failures[0].1.message()
    );
}

#[tokio::test]
async fn llama_servers_error_event_stops_the_run_with_its_message() {
    let client = ReplayClient::new(
        WireFormat::OpenAiChat,
        [recorded("llama-server-stream-error-event.sse")],
    );
    let session = session();
    let (events, outcome) = run(&session, Arc::new(client), AgentOptions::default()).await;
    assert!(events.is_empty());
    let StopReason::Error(ModelError::Provider(message)) = &outcome.stop_reason else {
        panic!("{:?}", outcome.stop_reason)
    };
    assert!(message.contains("peg-native format"), "{message}");
    assert_eq!(outcome.final_text, None);
}

// ---------------------------------------------------------------------------------------------
// No silent empty answers; cut answers say so.

#[tokio::test]
async fn an_event_stream_with_no_answer_and_no_end_is_an_error_not_an_empty_answer() {
    // llama-cpp-python's server, failing after its headers: a 200 event stream with no events;
    // or keep-alive comments and nothing else; or a usage chunk alone.
    let bodies: [&[u8]; 3] = [
        b"",
        b": ping\n\n: ping\n\n",
        b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":0}}\n\n",
    ];
    for body in bodies {
        let server = LoopbackServer::replying(vec![Reply::sse(body.to_vec())]).await;
        let client = OpenAiChatClient::new(server.url("/v1"), "m", None).unwrap();
        let (_, outcome) = run(&session(), Arc::new(client), AgentOptions::default()).await;
        assert_eq!(
            outcome.stop_reason,
            StopReason::Error(ModelError::EmptyStream),
            "{:?}",
            String::from_utf8_lossy(body)
        );
        assert_eq!(outcome.final_text, None);
    }
    let server = LoopbackServer::replying(vec![Reply::sse(Vec::new())]).await;
    let client = AnthropicClient::new(server.url(""), "m", "k").unwrap();
    let (_, outcome) = run(&session(), Arc::new(client), AgentOptions::default()).await;
    assert_eq!(
        outcome.stop_reason,
        StopReason::Error(ModelError::EmptyStream)
    );

    // The end-of-stream signal alone is an empty answer the server meant.
    let client = ReplayClient::new(WireFormat::OpenAiChat, ["data: [DONE]\n\n"]);
    let (_, outcome) = run(&session(), Arc::new(client), AgentOptions::default()).await;
    assert_eq!(outcome.stop_reason, StopReason::Finished);
}

#[tokio::test]
async fn an_answer_cut_by_the_token_limit_stops_with_max_tokens_and_keeps_its_text() {
    for (format, body) in [
        (
            WireFormat::OpenAiChat,
            openai_text("The answer is 70", "length"),
        ),
        (
            WireFormat::AnthropicMessages,
            anthropic_text("The answer is 70", "max_tokens"),
        ),
    ] {
        let session = session();
        let client = ReplayClient::new(format, [body]);
        let (_, outcome) = run(&session, Arc::new(client), AgentOptions::default()).await;
        assert_eq!(outcome.stop_reason, StopReason::MaxTokens, "{format:?}");
        assert!(!outcome.stop_reason.is_finished());
        assert_eq!(outcome.final_text.as_deref(), Some("The answer is 70"));
        assert!(outcome.steps[0].hit_token_limit());
        assert!(matches!(
            session.conversation().last(),
            Some(Message::Assistant { content: Some(text), .. }) if text == "The answer is 70"
        ));
    }
}

// ---------------------------------------------------------------------------------------------
// The knobs.

#[tokio::test]
async fn the_runs_settings_reach_the_request_and_unknown_tools_are_not_offered() {
    let server = LoopbackServer::replying(vec![Reply::sse(openai_text("Hi.", "stop"))]).await;
    let client = OpenAiChatClient::new(server.url("/v1"), "m", None).unwrap();
    let options = AgentOptions::default()
        .system("You answer with tools.")
        .temperature(0.0)
        .exclude_tools(["slow_lookup"])
        .tool_choice(ToolChoice::Required)
        .strict(true);
    let (_, outcome) = run(&session(), Arc::new(client), options).await;
    assert_eq!(outcome.stop_reason, StopReason::Finished);
    let sent = server.requests()[0].json();
    assert_eq!(
        sent["messages"][0],
        json!({"role": "system", "content": "You answer with tools."})
    );
    assert_eq!(sent["temperature"], 0.0);
    assert_eq!(sent["tool_choice"], "required");
    let names: Vec<&str> = sent["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["datetime", "math"]);
    assert!(
        sent["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|tool| tool["function"]["strict"] == true),
        "forced strict by the run: {sent}"
    );
}

#[tokio::test]
async fn a_forced_tool_choice_holds_for_the_first_step_only() {
    let call = json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"math","arguments":"{\"expression\":\"6*7\"}"}}]},"finish_reason":"tool_calls"}]});
    let server = LoopbackServer::replying(vec![
        Reply::sse(format!("data: {call}\n\ndata: [DONE]\n\n")),
        Reply::sse(openai_text("42", "stop")),
    ])
    .await;
    let client = OpenAiChatClient::new(server.url("/v1"), "m", None).unwrap();
    let options = AgentOptions::default().tool_choice(ToolChoice::Tool("math".into()));
    let (_, outcome) = run(&session(), Arc::new(client), options).await;
    assert_eq!(outcome.stop_reason, StopReason::Finished);
    let requests = server.requests();
    assert_eq!(
        requests[0].json()["tool_choice"],
        json!({"type": "function", "function": {"name": "math"}})
    );
    assert_eq!(requests[1].json().get("tool_choice"), None);
}

#[tokio::test]
async fn a_step_past_its_timeout_is_cut_off_and_its_open_call_fails_1007() {
    // A server that starts a call, then generates for ever.
    let chunk = json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"math","arguments":"{\"expression\":"}}]}}]});
    let head =
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 100000\r\n\r\n";
    let server = LoopbackServer::replying(vec![Reply::Hold(
        format!("{head}data: {chunk}\n\n").into_bytes(),
    )])
    .await;
    let client = OpenAiChatClient::new(server.url("/v1"), "m", None).unwrap();
    let options = AgentOptions::default().step_timeout(Duration::from_millis(300));
    let started = std::time::Instant::now();
    let (events, outcome) = run(&session(), Arc::new(client), options).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    let StopReason::Error(ModelError::Timeout(why)) = &outcome.stop_reason else {
        panic!("{:?}", outcome.stop_reason)
    };
    assert!(why.contains("step_timeout"), "{why}");
    let failures = failed(&events);
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].1.code(), ErrorCode::ArgumentsIncomplete);
}

#[tokio::test]
async fn a_run_past_its_timeout_cancels_its_running_calls_and_says_so() {
    let call = json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"slow_lookup","arguments":"{\"key\":\"k\"}"}}]},"finish_reason":"tool_calls"}]});
    let client = ReplayClient::new(
        WireFormat::OpenAiChat,
        [
            format!("data: {call}\n\ndata: [DONE]\n\n").into_bytes(),
            openai_text("never asked", "stop"),
        ],
    );
    let session = session();
    let options = AgentOptions::default().timeout(Duration::from_millis(300));
    let started = std::time::Instant::now();
    let (events, outcome) = run(&session, Arc::new(client), options).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(
        outcome.stop_reason,
        StopReason::TimedOut(Duration::from_millis(300))
    );
    assert_eq!(outcome.steps.len(), 1, "no step after the deadline");
    let terminal: Vec<&ToolEvent> = events.iter().filter(|e| e.is_terminal()).collect();
    assert_eq!(terminal.len(), 1, "{events:?}");
    // One result message for the call, whatever became of it.
    let results = session
        .conversation()
        .iter()
        .filter(|m| matches!(m, Message::Tool { .. }))
        .count();
    assert_eq!(results, 1);
}

#[tokio::test]
async fn a_server_error_after_whole_arguments_says_the_server_failed_not_that_they_were_cut() {
    let call = json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"math","arguments":"{\"expression\":\"1+1\"}"}}]}}]});
    let error = json!({"error":{"code":500,"message":"The model produced output that does not match the expected peg-native format","type":"server_error"}});
    let client = ReplayClient::new(
        WireFormat::OpenAiChat,
        [format!("data: {call}\n\ndata: {error}\n\n")],
    );
    let (events, _) = run(&session(), Arc::new(client), AgentOptions::default()).await;
    let failures = failed(&events);
    assert_eq!(failures.len(), 1);
    let message = failures[0].1.message();
    assert_eq!(failures[0].1.code(), ErrorCode::ArgumentsIncomplete);
    assert!(message.contains("peg-native format"), "{message}");
    assert!(message.contains("did not run"), "{message}");
    assert!(!message.contains("were complete"), "{message}");
}
