//! The reliability matrix of `docs/reliability.md`, for the runtime: hostile JSON and tools that
//! misbehave. Each case runs in a turn beside a well-behaved call, and checks three things: the
//! bad call ends with its expected code, it ends exactly once (one terminal event, one result
//! message), and the call beside it completes — nothing else is lost.

use std::time::Duration;

use pleach_core::{
    ErrorCode, Limits, Message, Runtime, SessionOptions, ToolCall, ToolContext, ToolEvent, tool,
};
use serde_json::{Value, json};

/// Counts up.
#[tool]
async fn ft_count(n: i64) -> i64 {
    n + 1
}

/// Echoes a string.
#[tool]
async fn ft_echo(s: String) -> String {
    s
}

/// Panics.
#[tool]
async fn ft_panics() -> u32 {
    panic!("a bug in the tool")
}

/// Never finishes, but watches its signal.
#[tool]
async fn ft_hangs(ctx: ToolContext) -> u32 {
    ctx.signal.cancelled().await;
    std::future::pending::<u32>().await
}

/// Never finishes and ignores its signal.
#[tool]
async fn ft_deaf(_ctx: ToolContext) -> u32 {
    std::future::pending::<u32>().await
}

/// Returns 100 MB of text.
#[tool]
async fn ft_huge() -> String {
    "x".repeat(100 * 1024 * 1024)
}

/// Returns NaN, which JSON cannot carry.
#[tool]
async fn ft_nan() -> f64 {
    f64::NAN
}

fn runtime() -> Runtime {
    Runtime::builder()
        .tool_timeout("ft_hangs", Duration::from_millis(50))
        .cancel_grace(Duration::from_millis(50))
        .build()
        .expect("runtime")
}

/// Runs `bad` beside a good call; checks exactly-once for both and returns the bad call's outcome.
async fn beside_a_good_call(
    bad: ToolCall,
    cancel_after: Option<Duration>,
) -> Result<Value, ErrorCode> {
    let runtime = runtime();
    let session = runtime
        .create_session(SessionOptions::all())
        .expect("session");
    let good = ToolCall::new("good", "ft_count", r#"{"n":1}"#);
    let mut turn = session.run_turn(vec![bad.clone(), good]);
    if let Some(delay) = cancel_after {
        let token = turn.cancellation_token();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            token.cancel();
        });
    }
    let mut terminal = std::collections::HashMap::<String, usize>::new();
    while let Some(event) = turn.events().recv().await {
        // Every event line reads back, whatever the arguments were: one unreadable line can stop
        // a reader of the whole stream.
        let line = event.to_json();
        assert!(
            serde_json::from_str::<Value>(&line).is_ok(),
            "an event line a JSON reader refuses: {line:.200}"
        );
        if event.is_terminal() {
            *terminal.entry(event.tool_call_id().to_owned()).or_default() += 1;
        }
    }
    let results = turn.finish().await;
    assert_eq!(results.len(), 2);
    assert_eq!(
        terminal.get(bad.id()),
        Some(&1),
        "one terminal event for the bad call"
    );
    assert_eq!(
        terminal.get("good"),
        Some(&1),
        "one terminal event for the good call"
    );
    let conversation = session.conversation();
    let answers: Vec<&str> = conversation
        .iter()
        .filter_map(|m| match m {
            Message::Tool { tool_call, .. } => Some(tool_call.id()),
            _ => None,
        })
        .collect();
    assert_eq!(
        answers,
        [bad.id(), "good"],
        "one result message each, in call order"
    );
    if cancel_after.is_none() {
        assert_eq!(
            results[1].outcome,
            Ok(json!(2).into()),
            "the call beside it completes"
        );
    }
    results[0]
        .outcome
        .clone()
        .map(|out| out.value().clone())
        .map_err(|e| e.code())
}

fn call(name: &str, arguments: impl AsRef<str>) -> ToolCall {
    ToolCall::new("bad", name, arguments)
}

// JSON edge cases.

#[tokio::test]
async fn duplicate_keys_are_refused_with_1005() {
    let outcome = beside_a_good_call(call("ft_count", r#"{"n":1,"n":2}"#), None).await;
    assert_eq!(outcome, Err(ErrorCode::ArgumentsNotJson));
}

#[tokio::test]
async fn a_thirty_digit_integer_is_refused_with_1001() {
    let outcome = beside_a_good_call(
        call("ft_count", r#"{"n":123456789012345678901234567890}"#),
        None,
    )
    .await;
    assert_eq!(outcome, Err(ErrorCode::InputInvalid));
}

#[tokio::test]
async fn one_point_zero_is_an_integer_as_json_schema_says() {
    let outcome = beside_a_good_call(call("ft_count", r#"{"n":1.0}"#), None).await;
    assert_eq!(outcome, Ok(json!(2)));
    let fraction = beside_a_good_call(call("ft_count", r#"{"n":1.5}"#), None).await;
    assert_eq!(fraction, Err(ErrorCode::InputInvalid));
}

#[tokio::test]
async fn a_lone_surrogate_is_refused_with_1005() {
    let outcome = beside_a_good_call(call("ft_echo", r#"{"s":"\ud800"}"#), None).await;
    assert_eq!(outcome, Err(ErrorCode::ArgumentsNotJson));
    let paired = beside_a_good_call(call("ft_echo", r#"{"s":"\ud83d\ude00"}"#), None).await;
    assert_eq!(paired, Ok(json!("😀")));
}

#[tokio::test]
async fn a_number_past_f64_is_refused_with_1005() {
    for number in ["1e400", "-1e400", &"9".repeat(400)] {
        let outcome =
            beside_a_good_call(call("ft_count", format!(r#"{{"n":{number}}}"#)), None).await;
        assert_eq!(outcome, Err(ErrorCode::ArgumentsNotJson), "{number}");
    }
}

#[tokio::test]
async fn nesting_past_the_limit_is_refused_with_1006() {
    let deep = format!("{{\"s\":{}\"x\"{}}}", "[".repeat(100), "]".repeat(100));
    let outcome = beside_a_good_call(call("ft_echo", deep), None).await;
    assert_eq!(outcome, Err(ErrorCode::ArgumentsTooLarge));
}

#[tokio::test]
async fn a_byte_order_mark_is_refused_with_1005() {
    let outcome = beside_a_good_call(call("ft_echo", "\u{feff}{\"s\":\"x\"}"), None).await;
    assert_eq!(outcome, Err(ErrorCode::ArgumentsNotJson));
}

#[tokio::test]
async fn a_hundred_megabytes_of_arguments_are_refused_with_1006_before_parsing() {
    let huge = format!("{{\"s\":\"{}\"}}", "x".repeat(100 * 1024 * 1024));
    let outcome = beside_a_good_call(call("ft_echo", huge), None).await;
    // Parsed, it would have run and returned 100 MB (1002): 1006 means the length refused it.
    assert_eq!(outcome, Err(ErrorCode::ArgumentsTooLarge));
}

// Tools that misbehave.

#[tokio::test]
async fn a_panicking_tool_fails_with_1009() {
    assert_eq!(
        beside_a_good_call(call("ft_panics", "{}"), None).await,
        Err(ErrorCode::ToolPanicked)
    );
}

#[tokio::test]
async fn a_hanging_tool_times_out_with_1010() {
    assert_eq!(
        beside_a_good_call(call("ft_hangs", "{}"), None).await,
        Err(ErrorCode::TimedOut)
    );
}

#[tokio::test]
async fn a_tool_that_ignores_its_signal_is_dropped_after_the_grace_period_with_1011() {
    // The tool never returns: the turn ends only because the runtime drops it after the grace.
    let outcome = beside_a_good_call(call("ft_deaf", "{}"), Some(Duration::from_millis(20))).await;
    assert_eq!(outcome, Err(ErrorCode::Cancelled));
}

#[tokio::test]
async fn a_hundred_megabyte_result_fails_with_1002() {
    assert_eq!(
        beside_a_good_call(call("ft_huge", "{}"), None).await,
        Err(ErrorCode::OutputInvalid)
    );
}

#[tokio::test]
async fn a_result_under_a_smaller_limit_passes_and_over_it_fails() {
    let runtime = Runtime::builder()
        .limits(Limits::default().max_result_bytes(16))
        .build()
        .unwrap();
    let session = runtime.create_session(SessionOptions::all()).unwrap();
    let short = session
        .call(ToolCall::new("a", "ft_echo", r#"{"s":"0123456789"}"#))
        .await;
    assert_eq!(short.outcome, Ok(json!("0123456789").into()));
    let long = session
        .call(ToolCall::new(
            "b",
            "ft_echo",
            r#"{"s":"0123456789abcdefgh"}"#,
        ))
        .await;
    let error = long.outcome.expect_err("over 16 bytes");
    assert_eq!(error.code(), ErrorCode::OutputInvalid);
    assert!(error.message().contains("16 bytes"), "{}", error.message());
}

#[tokio::test]
async fn a_nan_result_fails_with_1002() {
    assert_eq!(
        beside_a_good_call(call("ft_nan", "{}"), None).await,
        Err(ErrorCode::OutputInvalid)
    );
}

#[tokio::test]
async fn events_of_a_failed_call_carry_its_arguments_as_they_came() {
    let runtime = runtime();
    let session = runtime.create_session(SessionOptions::all()).unwrap();
    let mut turn = session.run_turn(vec![call("ft_count", r#"{"n":"#)]);
    let mut last = None;
    while let Some(event) = turn.events().recv().await {
        last = Some(event);
    }
    let Some(ToolEvent::Failed { tool_call, error }) = last else {
        panic!("a failure expected");
    };
    assert_eq!(error.code(), ErrorCode::ArgumentsNotJson);
    assert_eq!(tool_call.arguments(), r#"{"n":"#);
}
