//! The runtime guarantees 1–3 of `docs/events.md`, as a property over random turns: any mix of
//! good, invalid, unknown, slow, stubborn, panicking and cancelled calls.
//!
//! 1. every call gets exactly one terminal event (`tool.completed` or `tool.failed`) and exactly
//!    one result message in the conversation;
//! 2. results are written back in the model's call order, whatever order they finish in;
//! 3. nothing follows a call's terminal event (and `tool.started` comes first).

use std::collections::HashMap;
use std::time::Duration;

use pleach_core::{
    BatchingHint, BatchingStrategy, ErrorCode, Message, PleachPlugin, Runtime, SessionOptions,
    ToolCall, ToolContext, ToolEvent, tool,
};
use proptest::prelude::*;

/// Adds two integers.
#[tool]
async fn g_add(a: i64, b: i64) -> i64 {
    a + b
}

/// Sleeps, stopping early when its signal fires, and reports progress on the way.
#[tool]
async fn g_slow(ms: u64, ctx: ToolContext) -> u64 {
    ctx.progress("sleeping");
    tokio::select! {
        () = tokio::time::sleep(Duration::from_millis(ms)) => ms,
        () = ctx.signal.cancelled() => 0,
    }
}

/// Sleeps, ignoring its signal.
#[tool]
async fn g_stubborn(ms: u64) -> u64 {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    ms
}

/// Panics after an optional pause.
#[tool]
async fn g_panic(ms: u64) -> u64 {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    panic!("boom after {ms} ms")
}

#[derive(Debug, Clone)]
enum Kind {
    Good(i64, i64),
    Invalid,
    NotJson,
    Unknown,
    Slow(u64),
    Stubborn(u64),
    Panics(u64),
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        (any::<i32>(), any::<i32>()).prop_map(|(a, b)| Kind::Good(a.into(), b.into())),
        Just(Kind::Invalid),
        Just(Kind::NotJson),
        Just(Kind::Unknown),
        (0u64..200).prop_map(Kind::Slow),
        (0u64..5000).prop_map(Kind::Stubborn),
        (0u64..50).prop_map(Kind::Panics),
    ]
}

fn tool_call(index: usize, kind: &Kind) -> ToolCall {
    let id = format!("call_{index}");
    match kind {
        Kind::Good(a, b) => ToolCall::new(id, "g_add", format!(r#"{{"a":{a},"b":{b}}}"#)),
        Kind::Invalid => ToolCall::new(id, "g_add", r#"{"a":"one"}"#),
        Kind::NotJson => ToolCall::new(id, "g_add", r#"{"a":1,"#),
        Kind::Unknown => ToolCall::new(id, "g_missing", "{}"),
        Kind::Slow(ms) => ToolCall::new(id, "g_slow", format!(r#"{{"ms":{ms}}}"#)),
        Kind::Stubborn(ms) => ToolCall::new(id, "g_stubborn", format!(r#"{{"ms":{ms}}}"#)),
        Kind::Panics(ms) => ToolCall::new(id, "g_panic", format!(r#"{{"ms":{ms}}}"#)),
    }
}

/// What a call must end in when the turn is not cancelled.
fn expected(kind: &Kind) -> Result<i64, ErrorCode> {
    match kind {
        Kind::Good(a, b) => Ok(a + b),
        Kind::Invalid => Err(ErrorCode::InputInvalid),
        Kind::NotJson => Err(ErrorCode::ArgumentsNotJson),
        Kind::Unknown => Err(ErrorCode::UnknownTool),
        Kind::Slow(ms) | Kind::Stubborn(ms) => Ok(i64::try_from(*ms).unwrap_or(i64::MAX)),
        Kind::Panics(_) => Err(ErrorCode::ToolPanicked),
    }
}

/// Every strategy is in play: slow calls in parallel (at most 2 at once), stubborn ones chunked
/// by their `ms`, panicking and adding ones serial (inferred).
fn runtime(concurrency: usize) -> Runtime {
    let hints = PleachPlugin::new("mix").batching_hints([
        BatchingHint::new("g_slow", BatchingStrategy::Parallel).max_concurrency(2),
        BatchingHint::new("g_stubborn", BatchingStrategy::Chunked { key: "ms".into() }),
    ]);
    Runtime::builder()
        .plugin(hints)
        .max_concurrency(concurrency)
        .cancel_grace(Duration::from_millis(100))
        .default_timeout(Duration::from_secs(3))
        .build()
        .expect("runtime")
}

fn check_turn(kinds: &[Kind], cancel_after_ms: Option<u64>, concurrency: usize) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("runtime");
    rt.block_on(async {
        let runtime = runtime(concurrency);
        let session = runtime
            .create_session(SessionOptions::all())
            .expect("session");
        let calls: Vec<ToolCall> = kinds
            .iter()
            .enumerate()
            .map(|(i, k)| tool_call(i, k))
            .collect();
        let mut turn = session.run_turn(calls.clone());
        if let Some(ms) = cancel_after_ms {
            let token = turn.cancellation_token();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                token.cancel();
            });
        }
        let mut events: Vec<ToolEvent> = Vec::new();
        while let Some(event) = turn.events().recv().await {
            events.push(event);
        }
        let results = turn.finish().await;

        // Guarantee 3 (and 1 for events): per call, started first, one terminal, nothing after.
        let mut seen: HashMap<&str, Vec<&'static str>> = HashMap::new();
        for event in &events {
            seen.entry(event.tool_call_id())
                .or_default()
                .push(event.event_type());
        }
        for call in &calls {
            let kinds_seen = seen.get(call.id()).cloned().unwrap_or_default();
            assert_eq!(
                kinds_seen.first(),
                Some(&"tool.started"),
                "{}: {kinds_seen:?}",
                call.id()
            );
            let terminals = kinds_seen
                .iter()
                .filter(|k| matches!(**k, "tool.completed" | "tool.failed"))
                .count();
            assert_eq!(terminals, 1, "{}: {kinds_seen:?}", call.id());
            assert!(
                matches!(kinds_seen.last(), Some(&("tool.completed" | "tool.failed"))),
                "{}: nothing after the terminal event: {kinds_seen:?}",
                call.id()
            );
        }

        // Guarantee 2: results in call order; the terminal event agrees with the result.
        assert_eq!(results.len(), calls.len());
        for ((result, call), kind) in results.iter().zip(&calls).zip(kinds) {
            assert_eq!(result.tool_call, *call);
            let terminal = events
                .iter()
                .find(|e| e.is_terminal() && e.tool_call_id() == call.id())
                .expect("a terminal event");
            match (&result.outcome, terminal) {
                (Ok(value), ToolEvent::Completed { result, .. }) => assert_eq!(value, result),
                (Err(error), ToolEvent::Failed { error: sent, .. }) => assert_eq!(error, sent),
                (outcome, event) => panic!("{outcome:?} disagrees with {event:?}"),
            }
            let outcome = match &result.outcome {
                Ok(value) => Ok(value.value().as_i64().expect("an integer")),
                Err(error) => Err(error.code()),
            };
            if cancel_after_ms.is_none() {
                match (kind, expected(kind)) {
                    // Exactly the 3 s timeout: the tool's sleep and the deadline fall due at the
                    // same (paused) instant, and either may be polled first; both endings are
                    // correct.
                    (Kind::Stubborn(3000), want) => assert!(
                        outcome == want || outcome == Err(ErrorCode::TimedOut),
                        "{}: {outcome:?}",
                        call.id()
                    ),
                    // Over the 3 s timeout.
                    (Kind::Stubborn(ms), _) if *ms > 3000 => {
                        assert_eq!(outcome, Err(ErrorCode::TimedOut), "{}", call.id());
                    }
                    (_, want) => assert_eq!(outcome, want, "{}", call.id()),
                }
            } else {
                assert!(
                    outcome == expected(kind)
                        || outcome == Err(ErrorCode::Cancelled)
                        || outcome == Err(ErrorCode::TimedOut),
                    "{}: {outcome:?}",
                    call.id()
                );
            }
        }

        // Guarantee 1 (conversation): the calls, then exactly one result message per call, in order.
        let conversation = session.conversation();
        assert_eq!(conversation.len(), 1 + calls.len());
        for (message, result) in conversation[1..].iter().zip(&results) {
            assert_eq!(
                *message,
                Message::tool_result(&result.tool_call, &result.outcome)
            );
        }
    });
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn every_call_ends_once_in_order_with_nothing_after(
        kinds in prop::collection::vec(kind(), 0..24),
        cancel_after_ms in prop::option::of(0u64..400),
        concurrency in 1usize..8,
    ) {
        check_turn(&kinds, cancel_after_ms, concurrency);
    }
}

#[test]
fn a_large_mixed_turn() {
    let kinds: Vec<Kind> = (0..500u64)
        .map(|i| match i % 7 {
            0 => Kind::Good(i.try_into().unwrap_or(0), 1),
            1 => Kind::Invalid,
            2 => Kind::NotJson,
            3 => Kind::Unknown,
            4 => Kind::Slow(i % 100),
            5 => Kind::Stubborn(i % 50),
            _ => Kind::Panics(i % 10),
        })
        .collect();
    check_turn(&kinds, None, 16);
    check_turn(&kinds, Some(30), 16);
}
