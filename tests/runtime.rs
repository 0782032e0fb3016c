//! The runtime: construction, sessions, the one-call pipeline, events, error codes, cancellation,
//! timeouts, limits, the livelock guard and conversation write-back.
//!
//! Contracts: `docs/events.md` (payloads and ordering) and `docs/error-codes.md` (one test per code
//! the runtime raises: 1001–1006 and 1008–1011, 1015; 1007 comes with streamed arguments, 1012 and
//! 1013 with safety tiers, 1014 with backpressure).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use pleach_core::{
    BatchingHint, BatchingStrategy, ErrorCode, Limits, Message, PleachPlugin, Runtime,
    RuntimeError, SessionOptions, ToolCall, ToolContext, ToolDefinition, ToolError, ToolEvent,
    ToolRegistryBuilder, ToolResult, event, tool,
};
use serde_json::json;

/// Adds two integers.
#[tool]
async fn rt_add(a: i64, b: i64) -> i64 {
    a + b
}

/// Panics, always.
#[tool]
async fn rt_panics() -> u8 {
    panic!("the tool's own bug")
}

/// Fails recoverably with the given reason.
#[tool]
async fn rt_fails(reason: String) -> Result<u8, ToolError> {
    Err(ToolError::failed(reason))
}

/// The ids of the `rt_cooperative` calls that saw their signal (tests run in parallel: each
/// looks for its own call).
static SIGNAL_SEEN: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

fn signal_seen(tool_call_id: &str) -> bool {
    SIGNAL_SEEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .any(|id| id == tool_call_id)
}

/// Waits for its signal, notes it, and returns.
#[tool]
async fn rt_cooperative(ctx: ToolContext) -> &'static str {
    ctx.signal.cancelled().await;
    SIGNAL_SEEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(ctx.tool_call_id.clone());
    "stopped"
}

static TIMEOUT_SIGNAL_SEEN: AtomicBool = AtomicBool::new(false);

/// Waits for its signal, notes it, and returns (its own flag: tests run in parallel).
#[tool]
async fn rt_cooperative_timeout(ctx: ToolContext) -> &'static str {
    ctx.signal.cancelled().await;
    TIMEOUT_SIGNAL_SEEN.store(true, Ordering::SeqCst);
    "stopped"
}

static IGNORED_DROPPED: AtomicUsize = AtomicUsize::new(0);

struct DropCounter;

impl Drop for DropCounter {
    fn drop(&mut self) {
        IGNORED_DROPPED.fetch_add(1, Ordering::SeqCst);
    }
}

/// Sleeps an hour, ignoring its signal.
#[tool]
async fn rt_stubborn() -> &'static str {
    let _guard = DropCounter;
    tokio::time::sleep(Duration::from_hours(1)).await;
    "woke up"
}

/// Reports progress three times.
#[tool]
async fn rt_progress(ctx: ToolContext) -> u32 {
    for percent in [25, 50, 75] {
        assert!(ctx.progress(json!({ "percent": percent })));
    }
    100
}

static LATE_DELIVERED: AtomicBool = AtomicBool::new(true);

/// Leaves a task behind that reports progress after the call ended.
#[tool]
async fn rt_leaky(ctx: ToolContext) -> &'static str {
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        LATE_DELIVERED.store(ctx.progress("too late"), Ordering::SeqCst);
    });
    "done"
}

static GATE: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// Waits until `rt_gate_open` runs.
#[tool]
async fn rt_gate_wait() -> &'static str {
    GATE.notified().await;
    "waited"
}

/// Lets `rt_gate_wait` finish.
#[tool]
async fn rt_gate_open() -> &'static str {
    GATE.notify_one();
    "opened"
}

fn runtime() -> Runtime {
    let liar = ToolDefinition::builder("rt_liar", "Promises a string, returns a number.")
        .output_schema(json!({ "type": "string" }))
        .execute_json(|_, _| async { Ok::<_, ToolError>(json!(5)) })
        .expect("valid definition");
    Runtime::builder()
        .plugin(parallel_tools().tools([liar]))
        .build()
        .expect("valid runtime")
}

/// These tests are about the pipeline, not ordering: their tools run side by side (by inference
/// most would be serial, the safe default; `tests/batching.rs` covers that).
fn parallel_tools() -> pleach_core::PleachPlugin {
    let names = [
        "rt_add",
        "rt_panics",
        "rt_fails",
        "rt_cooperative",
        "rt_stubborn",
        "rt_progress",
        "rt_leaky",
        "rt_gate_wait",
        "rt_gate_open",
        "rt_hoarder",
        "rt_chatty",
    ];
    PleachPlugin::new("test")
        .batching_hints(names.map(|name| BatchingHint::new(name, BatchingStrategy::Parallel)))
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall::new(id, name, arguments)
}

async fn one(name: &str, arguments: &str) -> ToolResult {
    let session = runtime()
        .create_session(SessionOptions::all())
        .expect("session");
    session.call(call("c1", name, arguments)).await
}

fn code(result: &ToolResult) -> ErrorCode {
    match &result.outcome {
        Ok(value) => panic!("expected an error, got {value:?}"),
        Err(error) => error.code(),
    }
}

#[test]
fn a_duplicate_name_fails_runtime_construction_naming_both_sites() {
    let clash = ToolDefinition::builder("rt_add", "Another add.")
        .execute_json(|v, _| async move { Ok::<_, ToolError>(v) })
        .expect("valid definition");
    let err = Runtime::builder()
        .plugin(PleachPlugin::new("clashing").tools([clash]))
        .build()
        .expect_err("rt_add is taken");
    let RuntimeError::ToolRegistry(registry) = &err else {
        panic!("unexpected {err}");
    };
    let text = registry.to_string();
    assert!(
        text.contains("tool name `rt_add` is defined twice"),
        "{text}"
    );
    assert_eq!(text.matches("runtime.rs:").count(), 2, "both sites: {text}");
}

#[test]
fn configuration_for_an_unknown_tool_is_refused_with_a_suggestion() {
    let err = Runtime::builder()
        .tool_timeout("rt_ad", Duration::from_secs(1))
        .build()
        .expect_err("typo");
    assert_eq!(
        err.to_string(),
        "runtime configures tool `rt_ad`, which is not registered; did you mean `rt_add`?"
    );
}

#[test]
fn sessions_enable_tools_by_name_and_refuse_unknown_names() {
    let runtime = runtime();
    let session = runtime
        .create_session(SessionOptions::enabled(["rt_add", "rt_fails"]))
        .expect("known names");
    assert_eq!(
        session.tool_names().collect::<Vec<_>>(),
        ["rt_add", "rt_fails"]
    );
    let err = runtime
        .create_session(SessionOptions::enabled([
            "rt_add",
            "rt_addd",
            "nothing_like_it",
        ]))
        .expect_err("unknown names");
    assert_eq!(
        err.to_string(),
        "unknown tools: `rt_addd`; did you mean `rt_add`?, `nothing_like_it`"
    );
}

#[tokio::test]
async fn a_good_call_completes() {
    let result = one("rt_add", r#"{"a":40,"b":2}"#).await;
    assert_eq!(result.outcome, Ok(json!(42).into()));
}

#[tokio::test]
async fn code_1001_input_invalid_with_pointer_and_keyword() {
    let result = one("rt_add", r#"{"a":"forty","b":2}"#).await;
    let error = result.outcome.expect_err("a is not an integer");
    assert_eq!(error.code(), ErrorCode::InputInvalid);
    assert_eq!((error.path(), error.keyword()), (Some("/a"), Some("type")));
    assert!(
        error.message().contains("\"forty\""),
        "what came: {}",
        error.message()
    );
    assert!(
        error.message().contains("integer"),
        "what was expected: {}",
        error.message()
    );
}

#[tokio::test]
async fn code_1002_output_invalid() {
    assert_eq!(code(&one("rt_liar", "{}").await), ErrorCode::OutputInvalid);
}

#[tokio::test]
async fn code_1003_unknown_tool_suggests_a_close_name() {
    let result = one("rt_ad", "{}").await;
    let error = result.outcome.expect_err("unknown");
    assert_eq!(error.code(), ErrorCode::UnknownTool);
    assert_eq!(
        error.message(),
        "no tool named `rt_ad`; did you mean `rt_add`?"
    );
}

#[tokio::test]
async fn code_1003_for_a_huge_name_compares_it_with_no_tool() {
    // A model can send a name of any length: the "did you mean" search must not cost its
    // length times each tool name's.
    let name = format!("rt_{}", "x".repeat(1_000_000));
    let started = std::time::Instant::now();
    let result = one(&name, "{}").await;
    let error = result.outcome.expect_err("unknown");
    assert_eq!(error.code(), ErrorCode::UnknownTool);
    assert!(!error.message().contains("did you mean"));
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn code_1004_tool_not_enabled() {
    let session = runtime()
        .create_session(SessionOptions::enabled(["rt_fails"]))
        .expect("session");
    let result = session.call(call("c1", "rt_add", r#"{"a":1,"b":2}"#)).await;
    assert_eq!(code(&result), ErrorCode::ToolNotEnabled);
}

#[tokio::test]
async fn code_1005_arguments_not_json_or_duplicate_key() {
    assert_eq!(
        code(&one("rt_add", r#"{"a":1,"b":"#).await),
        ErrorCode::ArgumentsNotJson
    );
    assert_eq!(
        code(&one("rt_add", r#"{"a":1,"a":5,"b":2}"#).await),
        ErrorCode::ArgumentsNotJson
    );
}

#[tokio::test]
async fn code_1006_arguments_over_the_size_or_depth_limit() {
    let runtime = Runtime::builder()
        .limits(
            Limits::default()
                .max_argument_bytes(64)
                .max_argument_depth(3),
        )
        .build()
        .expect("runtime");
    let session = runtime
        .create_session(SessionOptions::all())
        .expect("session");
    let big = format!(r#"{{"a":1,"b":2,"pad":"{}"}}"#, "x".repeat(100));
    let result = session.call(call("c1", "rt_add", &big)).await;
    assert_eq!(code(&result), ErrorCode::ArgumentsTooLarge);
    assert!(
        result
            .outcome
            .unwrap_err()
            .message()
            .contains("over the limit of 64")
    );
    let deep = r#"{"a":[[[1]]],"b":2}"#;
    let result = session.call(call("c2", "rt_add", deep)).await;
    assert_eq!(code(&result), ErrorCode::ArgumentsTooLarge);
    // The default depth limit refuses hostile nesting before parsing.
    let hostile = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert_eq!(
        code(&one("rt_add", &hostile).await),
        ErrorCode::ArgumentsTooLarge
    );
}

#[tokio::test]
async fn code_1008_tool_failed() {
    let result = one("rt_fails", r#"{"reason":"the corpus is offline"}"#).await;
    let error = result.outcome.expect_err("fails");
    assert_eq!(
        (error.code(), error.message()),
        (ErrorCode::ToolFailed, "the corpus is offline")
    );
}

#[tokio::test]
async fn code_1009_tool_panicked_keeps_the_message_out_of_the_models_text() {
    let error = one("rt_panics", "{}").await.outcome.expect_err("panics");
    assert_eq!(error.code(), ErrorCode::ToolPanicked);
    assert!(!error.is_recoverable());
    assert!(!error.message().contains("own bug"), "{}", error.message());
    assert_eq!(error.detail(), Some("the tool's own bug"));
}

#[tokio::test(start_paused = true)]
async fn code_1010_timeout_fires_the_signal_then_fails() {
    TIMEOUT_SIGNAL_SEEN.store(false, Ordering::SeqCst);
    let runtime = Runtime::builder()
        .tool_timeout("rt_cooperative_timeout", Duration::from_secs(5))
        .build()
        .expect("runtime");
    let session = runtime
        .create_session(SessionOptions::all())
        .expect("session");
    let result = session
        .call(call("c1", "rt_cooperative_timeout", "{}"))
        .await;
    assert_eq!(code(&result), ErrorCode::TimedOut);
    assert!(result.outcome.unwrap_err().message().contains("within 5 s"));
    assert!(
        TIMEOUT_SIGNAL_SEEN.load(Ordering::SeqCst),
        "the tool saw its signal"
    );
}

#[tokio::test(start_paused = true)]
async fn code_1011_cancelling_a_turn_fires_signals_and_drops_stubborn_tools_after_grace() {
    let dropped_before = IGNORED_DROPPED.load(Ordering::SeqCst);
    let runtime = Runtime::builder()
        .plugin(parallel_tools())
        .cancel_grace(Duration::from_millis(500))
        .build()
        .expect("runtime");
    let session = runtime
        .create_session(SessionOptions::all())
        .expect("session");
    let turn = session.run_turn(vec![
        call("c1011_coop", "rt_cooperative", "{}"),
        call("c2", "rt_stubborn", "{}"),
        call("c3", "rt_add", r#"{"a":1,"b":1}"#),
    ]);
    // Let the calls start, then cancel.
    tokio::time::sleep(Duration::from_millis(10)).await;
    let started = tokio::time::Instant::now();
    turn.cancel();
    let results = turn.finish().await;
    assert!(
        started.elapsed() <= Duration::from_millis(600),
        "dropped after the grace period"
    );
    assert_eq!(code(&results[0]), ErrorCode::Cancelled);
    assert_eq!(code(&results[1]), ErrorCode::Cancelled);
    assert_eq!(
        results[2].outcome,
        Ok(json!(2).into()),
        "a call that finished before stays finished"
    );
    assert!(
        signal_seen("c1011_coop"),
        "the cooperative tool saw its signal"
    );
    assert_eq!(
        IGNORED_DROPPED.load(Ordering::SeqCst),
        dropped_before + 1,
        "the stubborn tool was dropped"
    );
}

#[tokio::test]
async fn code_1015_a_repeated_failing_call_stops_being_recoverable() {
    let runtime = Runtime::builder()
        .max_repeated_failures(2)
        .build()
        .expect("runtime");
    let session = runtime
        .create_session(SessionOptions::all())
        .expect("session");
    let failing = r#"{"reason":"nope"}"#;
    for id in ["c1", "c2"] {
        let result = session.call(call(id, "rt_fails", failing)).await;
        assert_eq!(code(&result), ErrorCode::ToolFailed);
    }
    // Key order and spacing do not make it a different call.
    let result = session
        .call(call("c3", "rt_fails", r#"{ "reason" : "nope" }"#))
        .await;
    let error = result.outcome.expect_err("stuck");
    assert_eq!(error.code(), ErrorCode::RepeatedFailure);
    assert!(!error.is_recoverable());
    assert!(
        error.message().contains("already failed 2 times"),
        "{}",
        error.message()
    );
    // Other arguments are another call.
    let other = session
        .call(call("c4", "rt_fails", r#"{"reason":"else"}"#))
        .await;
    assert_eq!(code(&other), ErrorCode::ToolFailed);
    // A new user turn starts afresh.
    session.push_user_message("try again");
    let again = session.call(call("c5", "rt_fails", failing)).await;
    assert_eq!(code(&again), ErrorCode::ToolFailed);
}

#[tokio::test]
async fn code_1015_also_stops_a_model_repeating_an_unknown_tool_and_a_limit_of_0_refuses_only_what_failed()
 {
    let session = Runtime::builder()
        .max_repeated_failures(0)
        .build()
        .expect("runtime")
        .create_session(SessionOptions::all())
        .expect("session");
    // An unknown tool fails recoverably (1003); repeated, it is a loop like any other.
    let first = session.call(call("c1", "rt_no_such_tool", "{}")).await;
    assert_eq!(code(&first), ErrorCode::UnknownTool);
    let again = session.call(call("c2", "rt_no_such_tool", "{}")).await;
    assert_eq!(code(&again), ErrorCode::RepeatedFailure);
    // With a limit of 0, a call that never failed still runs: only identical calls are refused.
    let other = session
        .call(call("c3", "rt_fails", r#"{"reason":"first time"}"#))
        .await;
    assert_eq!(code(&other), ErrorCode::ToolFailed);
}

/// Arguments over the limits fail recoverably (1006) before anything parses them; a model that
/// keeps sending them is in a loop like any other, and is stopped the same way, in a turn's
/// calls as in calls dispatched one by one.
#[tokio::test]
async fn code_1015_also_stops_a_model_repeating_arguments_over_the_limits() {
    let session = Runtime::builder()
        .limits(
            Limits::default()
                .max_argument_bytes(64)
                .max_argument_depth(3),
        )
        .max_repeated_failures(2)
        .build()
        .expect("runtime")
        .create_session(SessionOptions::all())
        .expect("session");
    let big = format!(r#"{{"a":1,"b":2,"pad":"{}"}}"#, "x".repeat(100));
    let deep = r#"{"a":[[[1]]],"b":2}"#;
    for arguments in [big.as_str(), deep] {
        let codes = [
            code(&session.call(call("c1", "rt_add", arguments)).await),
            code(
                &session
                    .run_turn(vec![call("c2", "rt_add", arguments)])
                    .finish()
                    .await[0],
            ),
            code(&session.call(call("c3", "rt_add", arguments)).await),
        ];
        assert_eq!(
            codes,
            [
                ErrorCode::ArgumentsTooLarge,
                ErrorCode::ArgumentsTooLarge,
                ErrorCode::RepeatedFailure
            ],
            "{arguments}"
        );
    }
    // The same tool with arguments within the limits is another call.
    let fine = session.call(call("c4", "rt_add", r#"{"a":1,"b":2}"#)).await;
    assert_eq!(fine.outcome, Ok(json!(3).into()));
}

#[tokio::test]
async fn results_come_back_in_call_order_whatever_order_calls_finish() {
    let session = runtime()
        .create_session(SessionOptions::all())
        .expect("session");
    let mut turn = session.run_turn(vec![
        call("first", "rt_gate_wait", "{}"),
        call("second", "rt_gate_open", "{}"),
    ]);
    let mut terminal_order = Vec::new();
    while let Some(event) = turn.events().recv().await {
        if event.is_terminal() {
            terminal_order.push(event.tool_call_id().to_owned());
        }
    }
    assert_eq!(
        terminal_order,
        ["second", "first"],
        "events follow real completion"
    );
    let results = turn.finish().await;
    let ids: Vec<&str> = results.iter().map(|r| r.tool_call.id()).collect();
    assert_eq!(ids, ["first", "second"], "results follow the model's order");
    assert_eq!(result_ids(&session), ["first", "second"]);
}

/// The ids of the calls whose results the session's conversation holds, in its order.
fn result_ids(session: &pleach_core::Session) -> Vec<String> {
    session
        .conversation()
        .into_iter()
        .filter_map(|m| match m {
            Message::Tool { tool_call, .. } => Some(tool_call.id().to_owned()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_panicking_call_fails_alone() {
    let session = runtime()
        .create_session(SessionOptions::all())
        .expect("session");
    let results = session
        .run_turn(vec![
            call("c1", "rt_add", r#"{"a":1,"b":2}"#),
            call("c2", "rt_panics", "{}"),
            call("c3", "rt_add", r#"{"a":3,"b":4}"#),
        ])
        .finish()
        .await;
    assert_eq!(results[0].outcome, Ok(json!(3).into()));
    assert_eq!(code(&results[1]), ErrorCode::ToolPanicked);
    assert_eq!(results[2].outcome, Ok(json!(7).into()));
    // The session goes on.
    let again = session.call(call("c4", "rt_add", r#"{"a":1,"b":1}"#)).await;
    assert_eq!(again.outcome, Ok(json!(2).into()));
}

#[tokio::test]
async fn the_conversation_records_calls_and_results_as_the_model_reads_them() {
    let session = runtime()
        .create_session(SessionOptions::all())
        .expect("session");
    session.push_user_message("add 1 and 2, then break something");
    session
        .run_turn(
            pleach_core::AssistantStep::from(vec![
                call("c1", "rt_add", r#"{"a":1,"b":2}"#),
                call("c2", "rt_nope", "{}"),
            ])
            .with_text("On it."),
        )
        .finish()
        .await;
    let conversation = session.conversation();
    assert_eq!(conversation.len(), 4);
    assert!(
        matches!(&conversation[1], Message::Assistant { content: Some(t), tool_calls } if t == "On it." && tool_calls.len() == 2)
    );
    assert_eq!(
        conversation[2],
        Message::Tool {
            tool_call: call("c1", "rt_add", r#"{"a":1,"b":2}"#),
            content: "3".into(),
            attachments: Vec::new(),
            is_error: false,
            edited_arguments: None
        }
    );
    let Message::Tool {
        content, is_error, ..
    } = &conversation[3]
    else {
        panic!("a tool result");
    };
    assert!(is_error);
    assert!(
        content.starts_with("error 1003: no tool named `rt_nope`"),
        "{content}"
    );
}

// Paused time: the late report (20 ms) must come before the check (60 ms) whatever the load, or
// a stalled thread fires both timers at once and the check runs before the report was tried.
#[tokio::test(start_paused = true)]
async fn progress_deltas_stream_between_start_and_end_and_never_after() {
    LATE_DELIVERED.store(true, Ordering::SeqCst);
    let session = runtime()
        .create_session(SessionOptions::all())
        .expect("session");
    let mut turn = session.run_turn(vec![
        call("p", "rt_progress", "{}"),
        call("l", "rt_leaky", "{}"),
    ]);
    let mut events = Vec::new();
    while let Some(event) = turn.events().recv().await {
        events.push(event);
    }
    turn.finish().await;
    let progress: Vec<String> = events
        .iter()
        .filter(|e| e.tool_call_id() == "p")
        .map(|e| match e {
            ToolEvent::Delta { delta, .. } => format!("delta {}", delta["percent"]),
            other => other.event_type().to_owned(),
        })
        .collect();
    assert_eq!(
        progress,
        [
            "tool.started",
            "delta 25",
            "delta 50",
            "delta 75",
            "tool.completed"
        ]
    );
    tokio::time::sleep(Duration::from_millis(60)).await;
    assert!(
        !LATE_DELIVERED.load(Ordering::SeqCst),
        "progress after the terminal event is refused"
    );
}

#[tokio::test]
async fn dispatch_streams_one_calls_events_to_a_host_channel() {
    let session = runtime()
        .create_session(SessionOptions::all())
        .expect("session");
    let (sender, mut stream) = event::channel();
    session
        .dispatch(call("c1", "rt_add", r#"{"a":1,"b":2}"#), &sender)
        .await;
    session
        .dispatch(call("c2", "rt_add", "not json"), &sender)
        .await;
    let lines: Vec<String> = stream.drain().iter().map(ToolEvent::to_ndjson).collect();
    assert_eq!(
        lines[0],
        "{\"type\":\"tool.started\",\"toolCall\":{\"id\":\"c1\",\"name\":\"rt_add\",\"args\":{\"a\":1,\"b\":2}}}\n"
    );
    assert_eq!(
        lines[1],
        "{\"type\":\"tool.completed\",\"toolCall\":{\"id\":\"c1\",\"name\":\"rt_add\",\"args\":{\"a\":1,\"b\":2}},\"result\":3}\n"
    );
    // Arguments that are not JSON travel as the string that came.
    assert!(lines[2].contains("\"args\":\"not json\""), "{}", lines[2]);
    assert!(
        lines[3].starts_with("{\"type\":\"tool.failed\""),
        "{}",
        lines[3]
    );
    assert!(lines[3].contains("\"code\":1005"), "{}", lines[3]);
}

/// Reports progress from a thread of its own as fast as it can, and never finishes.
#[tool]
async fn rt_chatty(ctx: ToolContext) -> u8 {
    let reporter = ctx.clone();
    std::thread::spawn(move || {
        for n in 0..200_000_u32 {
            reporter.progress(n);
        }
    });
    std::future::pending().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dispatch_the_host_drops_mid_call_still_ends_once_with_1011() {
    let session = runtime()
        .create_session(SessionOptions::all())
        .expect("session");
    let (sender, mut stream) = event::channel();
    let stopped = tokio::time::timeout(
        Duration::from_millis(20),
        session.dispatch(call("c1", "rt_chatty", "{}"), &sender),
    )
    .await;
    assert!(stopped.is_err(), "the tool never finishes");
    // Give the reporting thread time to try again after the call ended.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let events = stream.drain();
    assert_eq!(
        events.first().map(ToolEvent::event_type),
        Some("tool.started")
    );
    let terminal: Vec<&ToolEvent> = events.iter().filter(|e| e.is_terminal()).collect();
    assert_eq!(terminal.len(), 1, "one terminal event");
    let Some(ToolEvent::Failed { error, .. }) = events.last() else {
        panic!("nothing follows the terminal event: {:?}", events.last());
    };
    assert_eq!(error.code(), ErrorCode::Cancelled);
    // A call that ends on its own sends its own terminal event, not a second one.
    session
        .dispatch(call("c2", "rt_add", r#"{"a":1,"b":2}"#), &sender)
        .await;
    session
        .dispatch(call("c3", "rt_progress", "{}"), &sender)
        .await;
    let types: Vec<&str> = stream.drain().iter().map(ToolEvent::event_type).collect();
    assert_eq!(
        types,
        [
            "tool.started",
            "tool.completed",
            "tool.started",
            "tool.delta",
            "tool.delta",
            "tool.delta",
            "tool.completed"
        ]
    );
}

#[tokio::test]
async fn dropping_the_session_cancels_its_turns() {
    let session = runtime()
        .create_session(SessionOptions::all())
        .expect("session");
    let turn = session.run_turn(vec![call("c1", "rt_cooperative", "{}")]);
    tokio::task::yield_now().await;
    drop(session);
    let results = tokio::time::timeout(Duration::from_secs(10), turn.finish())
        .await
        .expect("the turn ends when its session is dropped");
    assert_eq!(code(&results[0]), ErrorCode::Cancelled);
}

/// A dropped `Turn` is not a cancelled one: its calls still run to their end and their results
/// are still written back (the `Turn` docs say so; `cancel` stops a turn).
#[tokio::test]
async fn dropping_a_turn_lets_it_run_to_its_end_and_write_its_results() {
    let session = runtime()
        .create_session(SessionOptions::all())
        .expect("session");
    let turn = session.run_turn(vec![
        call("d1", "rt_add", r#"{"a":1,"b":2}"#),
        call("d2", "rt_fails", r#"{"reason":"no"}"#),
    ]);
    drop(turn);
    let written = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let ids = result_ids(&session);
            if ids.len() == 2 {
                return ids;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the dropped turn still writes its results");
    assert_eq!(written, ["d1", "d2"]);
}

static HOARD: std::sync::Mutex<Vec<ToolContext>> = std::sync::Mutex::new(Vec::new());

/// Keeps its context forever (and with it a way to send events).
#[tool]
async fn rt_hoarder(ctx: ToolContext) -> &'static str {
    HOARD
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(ctx);
    "kept"
}

#[tokio::test]
async fn a_turns_stream_ends_even_if_a_tool_keeps_its_context() {
    let session = runtime()
        .create_session(SessionOptions::all())
        .expect("session");
    let mut turn = session.run_turn(vec![call("c1", "rt_hoarder", "{}")]);
    let mut count = 0;
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        while turn.events().recv().await.is_some() {
            count += 1;
        }
    })
    .await;
    assert!(ended.is_ok(), "the stream ends when the turn does");
    assert_eq!(count, 2, "started and completed");
    assert_eq!(turn.finish().await[0].outcome, Ok(json!("kept").into()));
}

/// Where `rt_labelled` says it runs: runtime configuration read through the context.
struct Label(&'static str);

/// How many calls `rt_labelled` served in this session: session state.
#[derive(Default)]
struct Served(AtomicUsize);

/// Reports its configured label and how many calls this session made.
#[tool]
async fn rt_labelled(ctx: ToolContext) -> Result<String, ToolError> {
    let label = ctx.get::<Label>().map_or("none", |l| l.0);
    let served = ctx
        .session_state::<Served>()
        .ok_or_else(|| ToolError::failed("no session"))?;
    let n = served.0.fetch_add(1, Ordering::SeqCst) + 1;
    Ok(format!("{label} {n}"))
}

#[tokio::test]
async fn tools_read_the_hosts_configuration_and_keep_state_per_session() {
    let plugin = PleachPlugin::new("labels").provide(Label("plugin"));
    let from_plugin = Runtime::builder()
        .plugin(plugin.clone())
        .build()
        .expect("runtime");
    let host_wins = Runtime::builder()
        .plugin(plugin)
        .provide(Label("host"))
        .build()
        .expect("runtime");
    let bare = Runtime::builder().build().expect("runtime");

    let one = from_plugin
        .create_session(SessionOptions::enabled(["rt_labelled"]))
        .expect("session");
    let two = from_plugin
        .create_session(SessionOptions::enabled(["rt_labelled"]))
        .expect("session");
    let labelled = |id| call(id, "rt_labelled", "{}");
    assert_eq!(
        one.call(labelled("a")).await.outcome,
        Ok(json!("plugin 1").into())
    );
    assert_eq!(
        one.call(labelled("b")).await.outcome,
        Ok(json!("plugin 2").into())
    );
    assert_eq!(
        two.call(labelled("c")).await.outcome,
        Ok(json!("plugin 1").into()),
        "state is per session"
    );
    assert_eq!(one.state::<Served>().0.load(Ordering::SeqCst), 2);

    let host = host_wins
        .create_session(SessionOptions::enabled(["rt_labelled"]))
        .expect("session");
    assert_eq!(
        host.call(labelled("d")).await.outcome,
        Ok(json!("host 1").into())
    );
    let none = bare
        .create_session(SessionOptions::enabled(["rt_labelled"]))
        .expect("session");
    assert_eq!(
        none.call(labelled("e")).await.outcome,
        Ok(json!("none 1").into())
    );
}

/// Set by a plugin and by the builder, a tool's timeout is the plugin's and its idempotency the
/// builder's (`PleachPlugin::tool_timeout`, `RuntimeBuilder::idempotent`: one doc, both types).
#[tokio::test(start_paused = true)]
async fn a_plugins_timeout_and_the_builders_idempotency_win() {
    let sleeper = ToolDefinition::builder("rt_sleeps", "Sleeps for a minute.")
        .execute_json(|_, _| async {
            tokio::time::sleep(Duration::from_mins(1)).await;
            Ok::<_, ToolError>(json!("woke"))
        })
        .expect("definition");
    let plugin = PleachPlugin::new("sleepy")
        .tools([sleeper])
        .tool_timeout("rt_sleeps", Duration::from_secs(1))
        .idempotent("rt_sleeps", true);
    let runtime = Runtime::builder()
        .registry(ToolRegistryBuilder::new().build().expect("empty registry"))
        .plugin(plugin)
        .tool_timeout("rt_sleeps", Duration::from_secs(30))
        .idempotent("rt_sleeps", false)
        .build()
        .expect("runtime");
    assert_eq!(runtime.is_idempotent("rt_sleeps"), Some(false));

    let session = runtime
        .create_session(SessionOptions::all())
        .expect("session");
    let started = tokio::time::Instant::now();
    let result = session.call(call("t1", "rt_sleeps", "{}")).await;
    assert_eq!(
        result.outcome.expect_err("timed out").code(),
        ErrorCode::TimedOut
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the plugin's 1 s holds, not the builder's 30 s: {:?}",
        started.elapsed()
    );
}

/// Panics after waiting once, so its future is boxed and polled by the pipeline.
#[tool]
async fn rt_panics_later() -> u8 {
    tokio::task::yield_now().await;
    panic!("the tool's own bug, after an await")
}

/// Code 1009 both ways a tool runs: in place when it cannot suspend, as a future when it can.
#[tokio::test]
async fn code_1009_for_a_tool_that_panics_after_an_await() {
    let result = one("rt_panics_later", "{}").await;
    assert_eq!(code(&result), ErrorCode::ToolPanicked);
    let result = one("rt_panics", "{}").await;
    assert_eq!(code(&result), ErrorCode::ToolPanicked);
}

static IN_PLACE_RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Records a change (serial by inference: not a read verb), finishing where it starts.
#[tool]
async fn rt_record_change(n: u32) -> u32 {
    IN_PLACE_RUNS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    n
}

/// Calls that run where they start (no `.await` in the tool) still honour a cancelled turn:
/// none of them runs, and each ends once with 1011.
#[tokio::test(flavor = "current_thread")]
async fn code_1011_a_turn_cancelled_before_it_runs_starts_no_in_place_call() {
    let session = runtime()
        .create_session(SessionOptions::enabled(["rt_record_change"]))
        .expect("session");
    let calls: Vec<ToolCall> = (0..100)
        .map(|n| {
            call(
                &format!("r{n}"),
                "rt_record_change",
                &format!(r#"{{"n":{n}}}"#),
            )
        })
        .collect();
    // On a current-thread runtime the turn's driver has not run yet when `cancel` returns.
    let turn = session.run_turn(calls);
    turn.cancel();
    let results = turn.finish().await;
    assert_eq!(results.len(), 100);
    for result in &results {
        assert_eq!(code(result), ErrorCode::Cancelled);
    }
    assert_eq!(IN_PLACE_RUNS.load(std::sync::atomic::Ordering::SeqCst), 0);
}

/// Returns its input at once (parallel by inference: a read verb; no `.await`).
#[tool]
async fn rt_read_echo(n: u32) -> u32 {
    n
}

/// A turn of calls that finish where they start, cancelled while it runs (the reader cancels
/// it when the driver yields to it): every call still ends exactly once, completed or 1011,
/// and none is reported as failing inside pleach.
#[tokio::test(flavor = "current_thread")]
async fn code_1011_a_turn_of_in_place_calls_cancelled_midway_ends_every_call_once() {
    let session = runtime()
        .create_session(SessionOptions::enabled(["rt_read_echo"]))
        .expect("session");
    let calls: Vec<ToolCall> = (0..2_000)
        .map(|n| call(&format!("e{n}"), "rt_read_echo", &format!(r#"{{"n":{n}}}"#)))
        .collect();
    let mut turn = session.run_turn(calls);
    let mut completed = 0;
    let mut terminal = std::collections::HashMap::new();
    while let Some(event) = turn.events().recv().await {
        if event.is_terminal() {
            *terminal.entry(event.tool_call_id().to_owned()).or_insert(0) += 1;
        }
        if event.event_type() == "tool.completed" {
            completed += 1;
            if completed == 10 {
                turn.cancel();
            }
        }
    }
    let results = turn.finish().await;
    assert_eq!(results.len(), 2_000);
    assert_eq!(terminal.len(), 2_000);
    assert!(terminal.values().all(|&count| count == 1));
    let cancelled = results
        .iter()
        .filter(|r| matches!(&r.outcome, Err(e) if e.code() == ErrorCode::Cancelled))
        .count();
    let done = results.iter().filter(|r| r.outcome.is_ok()).count();
    assert_eq!(cancelled + done, 2_000, "only completed or cancelled calls");
    assert!(
        cancelled > 0,
        "the cancellation stopped the turn before its end"
    );
}

/// A tool whose name starts with a read verb reads: a hint that orders its calls (here serial)
/// does not make it unsafe to run again (`Runtime::is_idempotent`, docs/durable.md).
#[test]
fn a_read_hinted_serial_is_still_idempotent_and_a_write_hinted_parallel_too() {
    let tool = |name: &str| {
        ToolDefinition::builder(name, "A tool.")
            .execute_json(|_, _| async { Ok::<_, ToolError>(json!(1)) })
            .expect("definition")
    };
    let plugin = PleachPlugin::new("hinted")
        .tools([
            tool("get_report"),
            tool("send_report"),
            tool("store_report"),
        ])
        .batching_hints([
            BatchingHint::new("get_report", BatchingStrategy::Serial),
            BatchingHint::new("send_report", BatchingStrategy::Parallel),
        ]);
    let runtime = Runtime::builder()
        .registry(ToolRegistryBuilder::new().build().expect("empty registry"))
        .plugin(plugin)
        .build()
        .expect("runtime");
    assert_eq!(runtime.is_idempotent("get_report"), Some(true));
    assert_eq!(runtime.is_idempotent("send_report"), Some(true));
    assert_eq!(runtime.is_idempotent("store_report"), Some(false));
}
