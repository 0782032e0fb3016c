//! The agent loop (`docs/agent.md`): the HTTP clients against a loopback server that replays
//! recorded streams (`fixtures/provider-streams/`), and the bad input of the issue — each a clear
//! error on the calls concerned, the others unharmed. No network: loopback only.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use pleach_core::agent::{
    AgentOptions, AgentOutcome, AnthropicClient, GeminiClient, ModelClient, ModelError,
    OpenAiChatClient, OpenAiResponsesClient, ReplayClient, StopReason, WireFormat,
};
use pleach_core::{ErrorCode, Limits, Message, Runtime, Session, SessionOptions, ToolEvent, tool};
use pleach_test_support::http::{LoopbackServer, Reply};
use serde_json::{Value, json};
use tokio::net::TcpListener;

// ---------------------------------------------------------------------------------------------
// The tools the recorded streams call.

/// Current weather for a city (the OpenAI fixture's first tool).
#[tool(name = "GetWeatherArgs")]
async fn get_weather_args(city: String, country: String, units: String) -> String {
    format!("12 degrees {units} in {city}, {country}")
}

/// A stock's price (the OpenAI fixture's second tool).
#[tool]
async fn get_stock_price(ticker: String, exchange: String) -> String {
    format!("{ticker} on {exchange}: 227.52")
}

/// Current weather at a location (the Anthropic fixture's tool).
#[tool]
async fn get_weather(location: String) -> String {
    format!("sunny in {location}")
}

static MAKE_FILE_RAN: AtomicUsize = AtomicUsize::new(0);

/// Current weather at a location (the Responses and Gemini fixtures' tool).
#[tool]
async fn weather(location: String) -> String {
    format!("foggy in {location}")
}

/// Writes a file (the truncated Anthropic fixture's tool: it must never run).
#[tool]
async fn make_file(filename: String, lines_of_text: Vec<String>) -> usize {
    MAKE_FILE_RAN.fetch_add(1, Ordering::SeqCst);
    filename.len() + lines_of_text.len()
}

fn session(limits: Option<Limits>) -> Session {
    let mut builder = Runtime::builder();
    if let Some(limits) = limits {
        builder = builder.limits(limits);
    }
    let session = builder
        .build()
        .unwrap()
        .create_session(SessionOptions::enabled([
            "GetWeatherArgs",
            "get_stock_price",
            "get_weather",
            "make_file",
        ]))
        .unwrap();
    session.push_user_message("weather and stocks, please");
    session
}

fn fixture(folder: &str, file: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/provider-streams")
        .join(folder)
        .join(file);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

const OPENAI_TWO_CALLS: &str =
    "openai-python-f82268f2fefd5cfbc7eeb59c297688be2f6ca0849a6e4f17851b517310841d9b.sse";
const ANTHROPIC_TOOL_USE: &str = "anthropic-sdk-python-tool_use_response.sse";
const ANTHROPIC_TRUNCATED: &str = "anthropic-sdk-python-incomplete_partial_json_response.sse";

/// A recorded stream of JSON events, one a line (`.chunks.txt`), framed as server-sent events.
fn chunks_as_sse(folder: &str, file: &str) -> Vec<u8> {
    let text = String::from_utf8(fixture(folder, file)).unwrap();
    let mut framed = String::new();
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        let _ = write!(framed, "data: {line}\n\n");
    }
    framed.into_bytes()
}

const RESPONSES_TOOL_CALL: &str = "vercel-azure-tool-call.1.chunks.txt";
const GEMINI_TOOL_CALL: &str = "vercel-google-tool-call.chunks.txt";

/// A Responses answer: text, then the response completed.
pub(super) fn responses_answer(text: &str) -> Vec<u8> {
    sse(&[
        json!({"type":"response.created","response":{"id":"resp_2","status":"in_progress","output":[]}}),
        json!({"type":"response.output_text.delta","item_id":"msg_2","output_index":0,"content_index":0,"delta":text}),
        json!({"type":"response.completed","response":{"id":"resp_2","status":"completed","usage":{"input_tokens":9,"output_tokens":4}}}),
    ])
}

/// A Gemini answer: one chunk of text that finishes the candidate.
pub(super) fn gemini_answer(text: &str) -> Vec<u8> {
    let chunk = json!({"candidates":[{"content":{"role":"model","parts":[{"text":text}]},"finishReason":"STOP","index":0}],"responseId":"r2"});
    format!("data: {chunk}\r\n\r\n").into_bytes()
}

fn weather_session() -> Session {
    let session = Runtime::builder()
        .build()
        .unwrap()
        .create_session(SessionOptions::enabled(["weather"]))
        .unwrap();
    session.push_user_message("weather in San Francisco?");
    session
}

/// A final answer, hand-written (the recorded streams are for tool calls).
pub(super) fn openai_answer(text: &str) -> Vec<u8> {
    let chunk = json!({"choices":[{"index":0,"delta":{"content":text},"finish_reason":"stop"}]});
    format!("data: {chunk}\n\ndata: [DONE]\n\n").into_bytes()
}

pub(super) fn anthropic_answer(text: &str) -> Vec<u8> {
    let events = [
        json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[]}}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":text}}),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"message_delta","delta":{"stop_reason":"end_turn"}}),
        json!({"type":"message_stop"}),
    ];
    sse(&events)
}

pub(crate) fn sse(events: &[Value]) -> Vec<u8> {
    let mut out = String::new();
    for event in events {
        let name = event["type"].as_str().unwrap_or("x");
        let _ = write!(out, "event: {name}\ndata: {event}\n\n");
    }
    out.into_bytes()
}

/// An OpenAI chunk with one tool-call fragment.
fn openai_call(index: u32, id: Option<&str>, name: Option<&str>, arguments: &str) -> String {
    let mut call = json!({"index": index, "function": {"arguments": arguments}});
    if let Some(id) = id {
        call["id"] = json!(id);
        call["type"] = json!("function");
    }
    if let Some(name) = name {
        call["function"]["name"] = json!(name);
    }
    let chunk = json!({"choices":[{"index":0,"delta":{"tool_calls":[call]}}]});
    format!("data: {chunk}\n\n")
}

const OPENAI_END: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n";

// ---------------------------------------------------------------------------------------------
// Running and checking.

pub(crate) async fn run(
    session: &Session,
    client: Arc<dyn ModelClient>,
    options: AgentOptions,
) -> (Vec<ToolEvent>, AgentOutcome) {
    let mut run = session.run_agent(client, options);
    let mut events = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(event) = run.events().recv().await {
            events.push(event);
        }
    })
    .await;
    assert!(read.is_ok(), "the run's events did not end: {events:?}");
    (events, run.finish().await)
}

/// Runs an OpenAI stream (then a final answer) through a [`ReplayClient`].
async fn replay_openai(
    body: String,
    limits: Option<Limits>,
) -> (Session, Vec<ToolEvent>, AgentOutcome) {
    let client = ReplayClient::new(
        WireFormat::OpenAiChat,
        [body.into_bytes(), openai_answer("ok")],
    );
    let session = session(limits);
    let (events, outcome) = run(&session, Arc::new(client), AgentOptions::default()).await;
    (session, events, outcome)
}

/// Every call seen got exactly one terminal event, nothing after it, and exactly one result
/// message; the conversation's results answer the assistant messages' calls.
fn assert_exactly_once(events: &[ToolEvent], conversation: &[Message]) {
    let mut started = Vec::new();
    let mut ended = Vec::new();
    for event in events {
        let id = event.tool_call_id().to_owned();
        assert!(
            !ended.contains(&id),
            "an event after the terminal one: {event}"
        );
        match event {
            ToolEvent::Started { .. } => started.push(id),
            ToolEvent::Completed { .. } | ToolEvent::Failed { .. } => ended.push(id),
            _ => assert!(
                started.contains(&id),
                "an event before tool.started: {event}"
            ),
        }
    }
    let mut sorted_started = started.clone();
    sorted_started.sort();
    let mut sorted_ended = ended.clone();
    sorted_ended.sort();
    assert_eq!(sorted_started, sorted_ended, "every call started ends once");
    let issued: Vec<&str> = conversation
        .iter()
        .flat_map(|m| match m {
            Message::Assistant { tool_calls, .. } => {
                tool_calls.iter().map(pleach_core::ToolCall::id).collect()
            }
            _ => Vec::new(),
        })
        .collect();
    let answered: Vec<&str> = conversation
        .iter()
        .filter_map(|m| match m {
            Message::Tool { tool_call, .. } => Some(tool_call.id()),
            _ => None,
        })
        .collect();
    assert_eq!(
        issued, answered,
        "one result message per call, in call order"
    );
    let mut sorted_issued: Vec<String> = issued.iter().map(|s| (*s).to_owned()).collect();
    sorted_issued.sort();
    assert_eq!(sorted_issued, sorted_started);
}

fn failure<'a>(events: &'a [ToolEvent], id: &str) -> &'a pleach_core::ToolError {
    events
        .iter()
        .find_map(|e| match e {
            ToolEvent::Failed { tool_call, error } if tool_call.id() == id => Some(error),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no tool.failed for {id}: {events:?}"))
}

pub(crate) fn completed(events: &[ToolEvent]) -> Vec<(String, Value)> {
    events
        .iter()
        .filter_map(|e| match e {
            ToolEvent::Completed {
                tool_call, result, ..
            } => Some((tool_call.id().to_owned(), result.clone())),
            _ => None,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// (a) OpenAI Chat: two parallel calls from a recorded stream, then the answer.

#[tokio::test]
#[allow(clippy::too_many_lines)] // one scenario, checked end to end: events, conversation, requests
async fn openai_chat_runs_two_streamed_calls_writes_results_back_and_finishes() {
    let server = LoopbackServer::replying(vec![
        Reply::sse(fixture("openai-chat", OPENAI_TWO_CALLS)),
        Reply::sse(openai_answer("Edinburgh is mild; AAPL is at 227.52.")),
    ])
    .await;
    let key = "sk-test-0123456789";
    let client = OpenAiChatClient::new(server.url("/v1"), "gpt-4o", Some(key.into())).unwrap();
    let session = session(None);
    let (events, outcome) = run(&session, Arc::new(client), AgentOptions::default()).await;

    assert_eq!(outcome.stop_reason, StopReason::Finished);
    assert_eq!(outcome.steps.len(), 2);
    assert_eq!(
        outcome.final_text.as_deref(),
        Some("Edinburgh is mild; AAPL is at 227.52.")
    );
    assert_eq!(
        outcome.steps[0].finish_reason.as_deref(),
        Some("tool_calls")
    );

    // Started at first sight, with no arguments yet; deltas in between; then the results.
    let (weather, stock) = (
        "call_JMW1whyEaYG438VE1OIflxA2",
        "call_DNYTawLBoN8fj3KN6qU9N1Ou",
    );
    let ToolEvent::Started { tool_call } = &events[0] else {
        panic!("{events:?}")
    };
    assert_eq!((tool_call.id(), tool_call.arguments()), (weather, ""));
    let deltas: String = events
        .iter()
        .filter_map(|e| match e {
            ToolEvent::Delta {
                tool_call_id,
                delta,
            } if &**tool_call_id == weather => delta.as_str().map(str::to_owned),
            _ => None,
        })
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&deltas).unwrap(),
        json!({"city":"Edinburgh","country":"GB","units":"c"})
    );
    let first_terminal = events.iter().position(ToolEvent::is_terminal).unwrap();
    let last_delta = events
        .iter()
        .rposition(|e| matches!(e, ToolEvent::Delta { .. }))
        .unwrap();
    assert!(
        last_delta < first_terminal,
        "no call ran before the response ended"
    );
    let mut done = completed(&events);
    done.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        done,
        [
            (stock.to_owned(), json!("AAPL on NASDAQ: 227.52")),
            (weather.to_owned(), json!("12 degrees c in Edinburgh, GB")),
        ]
    );

    // The conversation: user, the assistant's two calls, two results in call order, the answer.
    let conversation = session.conversation();
    assert_exactly_once(&events, &conversation);
    assert_eq!(conversation.len(), 5);
    assert!(
        matches!(&conversation[4], Message::Assistant { content: Some(t), tool_calls } if t.starts_with("Edinburgh") && tool_calls.is_empty())
    );

    // The requests: the endpoint, the key as a bearer token, streaming, the tools; the second
    // carries the results in OpenAI's format.
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        (requests[0].method.as_str(), requests[0].target.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {key}").as_str())
    );
    let first = requests[0].json();
    assert_eq!(first["stream"], true);
    assert_eq!(first["model"], "gpt-4o");
    let tool_names: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tool_names,
        [
            "GetWeatherArgs",
            "get_stock_price",
            "get_weather",
            "make_file"
        ]
    );
    let second = requests[1].json();
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 4);
    assert_eq!(messages[1]["tool_calls"][0]["id"], weather);
    assert_eq!(
        messages[1]["tool_calls"][1]["function"]["name"],
        "get_stock_price"
    );
    assert_eq!(
        messages[2],
        json!({"role":"tool","tool_call_id":weather,"content":"\"12 degrees c in Edinburgh, GB\""})
    );
    assert_eq!(messages[3]["tool_call_id"], stock);
}

// ---------------------------------------------------------------------------------------------
// (b) Anthropic: a recorded tool_use stream, then the answer.

#[tokio::test]
async fn anthropic_runs_a_streamed_tool_use_and_sends_results_as_tool_result_blocks() {
    let server = LoopbackServer::replying(vec![
        Reply::sse(fixture("anthropic", ANTHROPIC_TOOL_USE)),
        Reply::sse(anthropic_answer("It is sunny in Paris.")),
    ])
    .await;
    let key = "sk-ant-test-secret";
    let client = AnthropicClient::new(server.url(""), "claude-sonnet-4", key).unwrap();
    let session = session(None);
    let (events, outcome) = run(&session, Arc::new(client), AgentOptions::default()).await;

    assert_eq!(outcome.stop_reason, StopReason::Finished);
    assert_eq!(outcome.final_text.as_deref(), Some("It is sunny in Paris."));
    assert_eq!(
        outcome.steps[0].text.as_deref(),
        Some("I'll check the current weather in Paris for you.")
    );
    let id = "toolu_01NRLabsLyVHZPKxbKvkfSMn";
    assert_eq!(
        completed(&events),
        [(id.to_owned(), json!("sunny in Paris"))]
    );
    assert_exactly_once(&events, &session.conversation());

    let requests = server.requests();
    assert_eq!(requests[0].target, "/v1/messages");
    assert_eq!(requests[0].header("x-api-key"), Some(key));
    assert_eq!(requests[0].header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(requests[0].header("authorization"), None);
    let first = requests[0].json();
    assert_eq!(first["stream"], true);
    assert!(first["max_tokens"].as_u64().is_some());
    assert_eq!(first["tools"][2]["name"], "get_weather");
    let second = requests[1].json();
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages[1]["content"][0]["type"], "text");
    assert_eq!(
        messages[1]["content"][1]["input"],
        json!({"location":"Paris"})
    );
    assert_eq!(
        messages[2]["content"][0],
        json!({"type":"tool_result","tool_use_id":id,"content":"\"sunny in Paris\"","is_error":false})
    );
}

// ---------------------------------------------------------------------------------------------
// (b') OpenAI Responses and Gemini: a recorded call stream, then the answer.

#[tokio::test]
async fn openai_responses_runs_a_recorded_call_and_sends_its_output_as_an_input_item() {
    let server = LoopbackServer::replying(vec![
        Reply::sse(chunks_as_sse("openai-responses", RESPONSES_TOOL_CALL)),
        Reply::sse(responses_answer("It is foggy.")),
    ])
    .await;
    let key = "sk-test-secret";
    let client =
        OpenAiResponsesClient::new(server.url("/v1"), "gpt-5.1", Some(key.to_owned())).unwrap();
    let session = weather_session();
    let options = AgentOptions::default().system("Be brief.").max_tokens(300);
    let (events, outcome) = run(&session, Arc::new(client), options).await;

    assert_eq!(outcome.stop_reason, StopReason::Finished);
    assert_eq!(outcome.final_text.as_deref(), Some("It is foggy."));
    let id = "call_H5DxLSFnsGhiROnUiDHmgyc8";
    assert_eq!(
        completed(&events),
        [(id.to_owned(), json!("foggy in San Francisco"))]
    );
    assert_exactly_once(&events, &session.conversation());

    let requests = server.requests();
    assert_eq!(requests[0].target, "/v1/responses");
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {key}").as_str())
    );
    let first = requests[0].json();
    assert_eq!(first["stream"], true);
    assert_eq!(first["instructions"], "Be brief.");
    assert_eq!(first["max_output_tokens"], 300);
    assert_eq!(first["tools"][0]["name"], "weather");
    assert_eq!(
        first["input"],
        json!([{ "role": "user", "content": "weather in San Francisco?" }])
    );
    let second = requests[1].json();
    assert_eq!(
        second["input"],
        json!([
            { "role": "user", "content": "weather in San Francisco?" },
            { "type": "function_call", "call_id": id, "name": "weather", "arguments": r#"{"location":"San Francisco"}"# },
            { "type": "function_call_output", "call_id": id, "output": "\"foggy in San Francisco\"" }
        ])
    );
}

#[tokio::test]
async fn gemini_runs_a_recorded_call_and_sends_its_result_as_a_function_response() {
    let server = LoopbackServer::replying(vec![
        Reply::sse(chunks_as_sse("gemini", GEMINI_TOOL_CALL)),
        Reply::sse(gemini_answer("It is foggy.")),
    ])
    .await;
    let key = "AIza-test-secret";
    let client = GeminiClient::new(server.url("/v1beta"), "gemini-3-pro-preview", key).unwrap();
    let session = weather_session();
    let options = AgentOptions::default().system("Be brief.").max_tokens(300);
    let (events, outcome) = run(&session, Arc::new(client), options).await;

    assert_eq!(outcome.stop_reason, StopReason::Finished);
    assert_eq!(outcome.final_text.as_deref(), Some("It is foggy."));
    // Gemini sent no call id: the call has its synthetic one.
    let id = "gemini_b36LacjwM668nsEP2tbsgQQ_0";
    assert_eq!(
        completed(&events),
        [(id.to_owned(), json!("foggy in San Francisco"))]
    );
    assert_exactly_once(&events, &session.conversation());

    let requests = server.requests();
    assert_eq!(
        requests[0].target,
        "/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse"
    );
    assert_eq!(requests[0].header("x-goog-api-key"), Some(key));
    assert_eq!(requests[0].header("authorization"), None);
    let first = requests[0].json();
    assert_eq!(
        first["systemInstruction"],
        json!({ "parts": [{ "text": "Be brief." }] })
    );
    assert_eq!(first["generationConfig"]["maxOutputTokens"], 300);
    assert_eq!(
        first["tools"][0]["functionDeclarations"][0]["name"],
        "weather"
    );
    let second = requests[1].json();
    let contents = second["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 3);
    // The call goes back with the signature Gemini 3 sent with it, then its result.
    let call = &contents[1]["parts"][0];
    assert_eq!(
        call["functionCall"],
        json!({ "id": id, "name": "weather", "args": { "location": "San Francisco" } })
    );
    assert!(
        call["thoughtSignature"]
            .as_str()
            .is_some_and(|s| s.starts_with("EqUCCqICAb4")),
        "{call}"
    );
    assert_eq!(
        contents[2],
        json!({ "role": "user", "parts": [{ "functionResponse": {
            "id": id, "name": "weather", "response": { "output": "foggy in San Francisco" }
        } }] })
    );
}

// ---------------------------------------------------------------------------------------------
// (c) A response cut by its token limit: the call fails 1007 and never runs.

#[tokio::test]
async fn a_call_cut_off_by_max_tokens_fails_1007_never_runs_and_has_one_result() {
    let server = LoopbackServer::replying(vec![
        Reply::sse(fixture("anthropic", ANTHROPIC_TRUNCATED)),
        Reply::sse(anthropic_answer(
            "The file was too long; I will write it in parts.",
        )),
    ])
    .await;
    let client = AnthropicClient::new(server.url(""), "claude-sonnet-4", "k").unwrap();
    let session = session(None);
    let before = MAKE_FILE_RAN.load(Ordering::SeqCst);
    let (events, outcome) = run(&session, Arc::new(client), AgentOptions::default()).await;

    let id = "toolu_01EKqbqmZrGRXy18eN7m9kvY";
    assert_eq!(failure(&events, id).code(), ErrorCode::ArgumentsIncomplete);
    assert_eq!(
        MAKE_FILE_RAN.load(Ordering::SeqCst),
        before,
        "a cut-off call must not run"
    );
    assert_eq!(
        outcome.steps[0].finish_reason.as_deref(),
        Some("max_tokens")
    );
    assert_eq!(outcome.stop_reason, StopReason::Finished);
    let conversation = session.conversation();
    assert_exactly_once(&events, &conversation);
    let results: Vec<_> = conversation
        .iter()
        .filter(|m| matches!(m, Message::Tool { .. }))
        .collect();
    assert_eq!(results.len(), 1);
    assert!(
        matches!(results[0], Message::Tool { is_error: true, content, .. } if content.starts_with("error 1007"))
    );
    // The model is told: its next request carries the failure.
    let second = server.requests()[1].json();
    assert_eq!(second["messages"][2]["content"][0]["is_error"], true);
}

// ---------------------------------------------------------------------------------------------
// (d) The connection drops mid-call: that call 1007, the call already complete runs.

#[tokio::test]
async fn a_connection_dropped_mid_call_fails_that_call_and_the_complete_one_runs() {
    let mut body = sse(&[
        json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[]}}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_a","name":"get_weather","input":{}}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"location\": \"Oslo\"}"}}),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_b","name":"get_weather","input":{}}}),
        json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"location\": \"Ber"}}),
    ]);
    let cut = body.len();
    body.extend(sse(&[
        json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"gen\"}"}}),
        json!({"type":"content_block_stop","index":1}),
        json!({"type":"message_stop"}),
    ]));
    let server = LoopbackServer::replying(vec![Reply::Sse {
        body,
        chunk: 11,
        cut: Some(cut),
    }])
    .await;
    let client = AnthropicClient::new(server.url(""), "claude-sonnet-4", "k").unwrap();
    let session = session(None);
    let (events, outcome) = run(&session, Arc::new(client), AgentOptions::default()).await;

    assert_eq!(
        completed(&events),
        [("toolu_a".to_owned(), json!("sunny in Oslo"))]
    );
    assert_eq!(
        failure(&events, "toolu_b").code(),
        ErrorCode::ArgumentsIncomplete
    );
    assert!(
        matches!(
            &outcome.stop_reason,
            StopReason::Error(ModelError::Connection(_))
        ),
        "{:?}",
        outcome.stop_reason
    );
    assert_eq!(outcome.steps[0].results.len(), 2);
    assert_exactly_once(&events, &session.conversation());
}

#[tokio::test]
async fn a_block_index_used_again_after_its_call_ended_is_a_second_call_that_runs() {
    // The stream parsers allow a key again once its call ended (docs/providers.md): the second
    // call must run and get its result, not be refused as the first one's continuation.
    let body = sse(&[
        json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[]}}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_a","name":"get_weather","input":{}}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"location\": \"Oslo\"}"}}),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_b","name":"get_weather","input":{}}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"location\": \"Bergen\"}"}}),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"message_delta","delta":{"stop_reason":"tool_use"}}),
        json!({"type":"message_stop"}),
    ]);
    let client = ReplayClient::new(
        WireFormat::AnthropicMessages,
        [body, anthropic_answer("ok")],
    );
    let session = session(None);
    let (events, outcome) = run(&session, Arc::new(client), AgentOptions::default()).await;
    assert_eq!(
        completed(&events),
        [
            ("toolu_a".to_owned(), json!("sunny in Oslo")),
            ("toolu_b".to_owned(), json!("sunny in Bergen")),
        ]
    );
    assert!(
        outcome.steps[0].refused.is_empty(),
        "{:?}",
        outcome.steps[0].refused
    );
    assert_exactly_once(&events, &session.conversation());
}

// ---------------------------------------------------------------------------------------------
// (e) Malformed SSE lines and unknown event types: skipped and counted; the call still runs.

#[tokio::test]
async fn malformed_lines_and_unknown_events_are_counted_and_the_calls_still_run() {
    let mut body = b"data: {this is not json\n\n: a comment\n\nevent: brand_new\ndata: {\"type\":\"brand_new_event\"}\n\n".to_vec();
    body.extend(sse(&[
        json!({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"location\": \"Rome\"}"}}),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"message_stop"}),
    ]));
    let server = LoopbackServer::replying(vec![
        Reply::sse(body),
        Reply::sse(anthropic_answer("Sunny.")),
    ])
    .await;
    let client = AnthropicClient::new(server.url(""), "claude-sonnet-4", "k").unwrap();
    let session = session(None);
    let (events, outcome) = run(&session, Arc::new(client), AgentOptions::default()).await;

    assert_eq!(
        completed(&events),
        [("toolu_1".to_owned(), json!("sunny in Rome"))]
    );
    assert_eq!(outcome.steps[0].skipped_events, 1);
    assert_eq!(outcome.steps[0].stream_errors.len(), 1);
    assert_eq!(outcome.stop_reason, StopReason::Finished);
}

#[tokio::test]
async fn a_malformed_line_while_a_call_streams_fails_that_call_only() {
    let body = [
        openai_call(0, Some("call_1"), Some("get_weather"), "{\"location\":"),
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"argu\n\n".to_owned(),
        openai_call(1, Some("call_2"), Some("get_weather"), "{\"location\":\"Lima\"}"),
        OPENAI_END.to_owned(),
    ]
    .concat();
    let (session, events, _) = replay_openai(body, None).await;
    assert_eq!(
        failure(&events, "call_1").code(),
        ErrorCode::ArgumentsNotJson
    );
    assert_eq!(
        completed(&events),
        [("call_2".to_owned(), json!("sunny in Lima"))]
    );
    assert_exactly_once(&events, &session.conversation());
}

// ---------------------------------------------------------------------------------------------
// (f) A call id seen twice: the second is refused; the first runs and keeps its id.

#[tokio::test]
async fn a_call_id_seen_twice_refuses_the_second_and_the_first_runs() {
    let body = [
        openai_call(
            0,
            Some("call_1"),
            Some("get_weather"),
            "{\"location\":\"Kyiv\"}",
        ),
        openai_call(
            1,
            Some("call_1"),
            Some("get_weather"),
            "{\"location\":\"Riga\"}",
        ),
        openai_call(
            2,
            Some("call_3"),
            Some("get_weather"),
            "{\"location\":\"Oslo\"}",
        ),
        OPENAI_END.to_owned(),
    ]
    .concat();
    let (session, events, outcome) = replay_openai(body, None).await;
    assert_eq!(
        completed(&events),
        [
            ("call_1".to_owned(), json!("sunny in Kyiv")),
            ("call_3".to_owned(), json!("sunny in Oslo")),
        ]
    );
    assert_eq!(outcome.steps[0].refused.len(), 1, "{:?}", outcome.steps[0]);
    assert!(outcome.steps[0].refused[0].contains("call_1"));
    assert_exactly_once(&events, &session.conversation());
}

#[tokio::test]
async fn deltas_for_an_unknown_index_are_refused_and_harm_no_call() {
    let body = [
        openai_call(
            0,
            Some("call_1"),
            Some("get_weather"),
            "{\"location\":\"Kyiv\"}",
        ),
        openai_call(5, None, None, "{\"x\":1}"),
        OPENAI_END.to_owned(),
    ]
    .concat();
    let (session, events, outcome) = replay_openai(body, None).await;
    assert_eq!(
        completed(&events),
        [("call_1".to_owned(), json!("sunny in Kyiv"))]
    );
    assert_eq!(outcome.steps[0].refused.len(), 1);
    assert_exactly_once(&events, &session.conversation());
}

// ---------------------------------------------------------------------------------------------
// (g) Arguments past the size limit: 1006 for that call, as they stream.

#[tokio::test]
async fn arguments_past_the_size_limit_fail_1006_and_the_other_call_runs() {
    let long = format!("{{\"location\":\"{}\"}}", "x".repeat(200));
    let body = [
        openai_call(0, Some("call_big"), Some("get_weather"), &long[..100]),
        openai_call(0, None, None, &long[100..]),
        openai_call(
            1,
            Some("call_small"),
            Some("get_weather"),
            "{\"location\":\"Bern\"}",
        ),
        OPENAI_END.to_owned(),
    ]
    .concat();
    let (session, events, _) = replay_openai(
        body,
        Some(
            Limits::default()
                .max_argument_bytes(64)
                .max_argument_depth(8),
        ),
    )
    .await;
    assert_eq!(
        failure(&events, "call_big").code(),
        ErrorCode::ArgumentsTooLarge
    );
    assert_eq!(
        completed(&events),
        [("call_small".to_owned(), json!("sunny in Bern"))]
    );
    assert_exactly_once(&events, &session.conversation());
}

// ---------------------------------------------------------------------------------------------
// (h) UTF-8: a character split between chunks is whole; invalid bytes fail the open call only.

#[tokio::test]
async fn utf8_split_across_http_chunks_is_whole_and_invalid_utf8_fails_the_open_call() {
    let good = [
        openai_call(
            0,
            Some("call_1"),
            Some("get_weather"),
            "{\"location\":\"Zürich – Genève\"}",
        ),
        OPENAI_END.to_owned(),
    ]
    .concat();
    let mut bad =
        openai_call(0, Some("call_1"), Some("get_weather"), "{\"location\":").into_bytes();
    bad.extend_from_slice(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\"\xff\xfe\"}}]}}]}\n\n");
    bad.extend(
        openai_call(
            1,
            Some("call_2"),
            Some("get_weather"),
            "{\"location\":\"Bonn\"}",
        )
        .into_bytes(),
    );
    bad.extend_from_slice(OPENAI_END.as_bytes());
    // One byte a chunk: every multi-byte character arrives split.
    let server = LoopbackServer::replying(vec![
        Reply::Sse {
            body: good.into_bytes(),
            chunk: 1,
            cut: None,
        },
        Reply::Sse {
            body: bad,
            chunk: 3,
            cut: None,
        },
        Reply::sse(openai_answer("done")),
    ])
    .await;
    let client = OpenAiChatClient::new(server.url(""), "m", None).unwrap();
    let session = session(None);
    let (events, outcome) = run(&session, Arc::new(client), AgentOptions::default()).await;
    let done = completed(&events);
    assert_eq!(
        done[0],
        ("call_1".to_owned(), json!("sunny in Zürich – Genève"))
    );
    assert_eq!(done[1], ("call_2".to_owned(), json!("sunny in Bonn")));
    // The second response reused the id `call_1` in a new step: a new call, failed by the bad bytes.
    let failed: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            ToolEvent::Failed { tool_call, error } => {
                Some((tool_call.id().to_owned(), error.code()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(failed, [("call_1".to_owned(), ErrorCode::ArgumentsNotJson)]);
    assert_eq!(outcome.steps[1].stream_errors.len(), 1);
    assert_eq!(outcome.stop_reason, StopReason::Finished);
}

// ---------------------------------------------------------------------------------------------
// (i) The step limit.

#[tokio::test]
async fn the_step_limit_stops_a_model_that_keeps_calling_tools() {
    let body = [
        openai_call(
            0,
            Some("call_1"),
            Some("get_weather"),
            "{\"location\":\"Kyiv\"}",
        ),
        OPENAI_END.to_owned(),
    ]
    .concat();
    let client = Arc::new(ReplayClient::new(
        WireFormat::OpenAiChat,
        [body.clone(), body.clone(), body],
    ));
    let session = session(None);
    let (events, outcome) = run(
        &session,
        client.clone(),
        AgentOptions::default().max_steps(2),
    )
    .await;
    assert_eq!(outcome.stop_reason, StopReason::MaxSteps);
    assert_eq!(outcome.steps.len(), 2);
    assert_eq!(outcome.final_text, None);
    assert_eq!(client.requests().len(), 2);
    assert_eq!(completed(&events).len(), 2);
}

#[tokio::test]
async fn an_exhausted_replay_is_an_error_outcome() {
    let client = ReplayClient::new(WireFormat::OpenAiChat, Vec::<Vec<u8>>::new());
    let session = session(None);
    let (_, outcome) = run(&session, Arc::new(client), AgentOptions::default()).await;
    assert_eq!(
        outcome.stop_reason,
        StopReason::Error(ModelError::ReplayExhausted { steps: 0, asked: 1 })
    );
}

// ---------------------------------------------------------------------------------------------
// (j) HTTP errors, (k) the key: sent in its header, never in errors or debug output.

#[tokio::test]
async fn http_401_and_500_end_the_run_with_the_providers_error_and_no_key() {
    let key = "sk-must-not-leak";
    for (status, body) in [
        (401, r#"{"error":{"message":"Incorrect API key provided"}}"#),
        (500, r#"{"error":{"message":"The server had an error"}}"#),
    ] {
        let server = LoopbackServer::replying(vec![Reply::json(status, body)]).await;
        let client = OpenAiChatClient::new(server.url(""), "m", Some(key.into())).unwrap();
        assert!(!format!("{client:?}").contains(key));
        let session = session(None);
        let (events, outcome) = run(&session, Arc::new(client), AgentOptions::default()).await;
        assert!(events.is_empty());
        let StopReason::Error(error) = &outcome.stop_reason else {
            panic!("{outcome:?}")
        };
        assert_eq!(
            error,
            &ModelError::Status {
                status,
                body: body.to_owned()
            }
        );
        assert!(!format!("{outcome:?}").contains(key));
        assert_eq!(
            session.conversation().len(),
            1,
            "nothing written for a failed request"
        );
    }
    let server = LoopbackServer::replying(vec![Reply::json(401, "{\"error\":\"bad key\"}")]).await;
    let client = AnthropicClient::new(server.url(""), "m", key).unwrap();
    assert!(!format!("{client:?}").contains(key));
    let (_, outcome) = run(&session(None), Arc::new(client), AgentOptions::default()).await;
    assert!(matches!(
        &outcome.stop_reason,
        StopReason::Error(ModelError::Status { status: 401, .. })
    ));
    assert!(!format!("{outcome:?}").contains(key));
    assert_eq!(server.requests()[0].header("x-api-key"), Some(key));
}

#[tokio::test]
async fn a_server_that_is_not_there_is_a_connection_error() {
    // Bind, then close: the port refuses connections.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let client = OpenAiChatClient::new(base, "m", Some("sk-x".into())).unwrap();
    let (_, outcome) = run(&session(None), Arc::new(client), AgentOptions::default()).await;
    assert!(
        matches!(
            &outcome.stop_reason,
            StopReason::Error(ModelError::Connection(_))
        ),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn a_response_past_the_size_cap_is_cut_and_its_open_calls_fail() {
    let body = [
        openai_call(
            0,
            Some("call_1"),
            Some("get_weather"),
            "{\"location\":\"Kyiv\"}",
        ),
        openai_call(
            1,
            Some("call_2"),
            Some("get_weather"),
            &format!("{{\"location\":\"{}\"}}", "y".repeat(300)),
        ),
        OPENAI_END.to_owned(),
    ]
    .concat();
    let client = ReplayClient::new(WireFormat::OpenAiChat, [body]).chunk_size(50);
    let session = session(None);
    let options = AgentOptions::default().max_response_bytes(300);
    let (events, outcome) = run(&session, Arc::new(client), options).await;
    assert_eq!(
        outcome.stop_reason,
        StopReason::Error(ModelError::TooLarge { limit: 300 })
    );
    // The first call never got its end signal (`finish_reason` comes last): it fails and does
    // not run. The second's event was cut before it was whole: it was never seen.
    assert_eq!(
        failure(&events, "call_1").code(),
        ErrorCode::ArgumentsIncomplete
    );
    assert!(events.iter().all(|e| e.tool_call_id() == "call_1"));
    assert_exactly_once(&events, &session.conversation());
}

#[tokio::test]
async fn cancelling_a_run_fails_the_calls_seen_and_stops_reading() {
    // A server that sends one call's start, then nothing.
    let body = openai_call(
        0,
        Some("call_1"),
        Some("get_weather"),
        "{\"location\":\"Kyiv\"}",
    );
    let head =
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 100000\r\n\r\n";
    let server =
        LoopbackServer::replying(vec![Reply::Hold(format!("{head}{body}").into_bytes())]).await;
    let client = OpenAiChatClient::new(server.url(""), "m", None).unwrap();
    let session = session(None);
    let mut run = session.run_agent(Arc::new(client), AgentOptions::default());
    let first = run.events().recv().await;
    assert!(matches!(first, Some(ToolEvent::Started { .. })));
    run.cancel();
    let mut rest = Vec::new();
    while let Some(event) = run.events().recv().await {
        rest.push(event);
    }
    let outcome = tokio::time::timeout(Duration::from_secs(5), run.finish())
        .await
        .unwrap();
    assert_eq!(outcome.stop_reason, StopReason::Cancelled);
    assert_eq!(failure(&rest, "call_1").code(), ErrorCode::Cancelled);
    assert_eq!(session.conversation().len(), 3);
    drop(server);
}

#[tokio::test]
async fn an_error_the_provider_reports_mid_response_stops_the_run_and_its_text_is_no_answer() {
    // Anthropic: text, then an `error` event inside the 200 response (as its streaming docs say
    // can happen). OpenAI-style servers: a chunk carrying `error`.
    let anthropic = sse(&[
        json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[]}}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"The bridge is safe to"}}),
        json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}),
    ]);
    let openai = b"data: {\"error\":{\"message\":\"The server had an error\",\"type\":\"server_error\"}}\n\n".to_vec();
    for (format, body, said) in [
        (WireFormat::AnthropicMessages, anthropic, "Overloaded"),
        (WireFormat::OpenAiChat, openai, "The server had an error"),
    ] {
        let session = session(None);
        let client = ReplayClient::new(format, [body]);
        let (_, outcome) = run(&session, Arc::new(client), AgentOptions::default()).await;
        let StopReason::Error(ModelError::Provider(message)) = &outcome.stop_reason else {
            panic!("{format:?}: {:?}", outcome.stop_reason);
        };
        assert!(message.contains(said), "{message}");
        assert_eq!(outcome.final_text, None);
        // The cut-off text is not kept as the model's answer.
        assert!(
            !session
                .conversation()
                .iter()
                .any(|m| matches!(m, Message::Assistant { .. })),
            "{:?}",
            session.conversation()
        );
    }
}

#[tokio::test]
async fn a_success_that_is_not_an_event_stream_is_an_error_not_an_empty_answer() {
    // A server that ignores `stream: true` and answers with the whole completion as JSON.
    let whole = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#;
    let server = LoopbackServer::replying(vec![Reply::json(200, whole)]).await;
    let client = OpenAiChatClient::new(server.url(""), "m", None).unwrap();
    let session = session(None);
    let (events, outcome) = run(&session, Arc::new(client), AgentOptions::default()).await;
    assert!(events.is_empty());
    let StopReason::Error(ModelError::NotAStream { content_type, body }) = &outcome.stop_reason
    else {
        panic!("{:?}", outcome.stop_reason)
    };
    assert_eq!(content_type, "application/json");
    assert!(body.contains("call_1"), "{body}");
    assert_eq!(outcome.final_text, None);
}

#[tokio::test]
async fn a_429_keeps_the_retry_after_the_api_asked_for() {
    let body = r#"{"error":{"message":"Rate limit reached"}}"#;
    let server = LoopbackServer::replying(vec![Reply::with(
        429,
        &[("content-type", "application/json"), ("retry-after", "7")],
        body,
    )])
    .await;
    let client = OpenAiChatClient::new(server.url(""), "m", None).unwrap();
    let (_, outcome) = run(&session(None), Arc::new(client), AgentOptions::default()).await;
    let StopReason::Error(error) = &outcome.stop_reason else {
        panic!("{outcome:?}")
    };
    assert_eq!(
        error,
        &ModelError::RateLimited {
            retry_after: Some(Duration::from_secs(7)),
            body: body.to_owned()
        }
    );
    assert!(error.to_string().contains("retry after 7 s"), "{error}");
}
