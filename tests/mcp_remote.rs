//! `pleach_mcp::remote` against a real process: `tests/mcp-servers/hostile.py`, a
//! stdlib-only MCP server over stdio with a well-behaved mode and misbehaving ones. Remote tools
//! beside local ones: listing across pages, validation before sending (1001), output schemas
//! (1002), `isError` (1008), cancellation, timeouts (1010), a server that dies mid-call (1017,
//! then a reconnection), `tools/list_changed` (a changed or new definition held back until
//! trusted; a lock file holding a change back at the next connection), names and schemas pleach cannot take (skipped with
//! the reason), 10,000 tools, a 100 MiB result, a server that never answers; and a turn mixing
//! local and remote calls keeps the one-terminal-event guarantee. The official SDKs' servers are
//! tested through the CLI in `.ci/run` (`pleach-cli/tests/mcp-client/remote.mjs`).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use pleach_core::{ErrorCode, Runtime, RuntimeError, SessionOptions, ToolCall, ToolEvent, tool};
use pleach_mcp::remote::{DefinitionChange, McpRemote, PinPolicy, RemoteError, RemoteServer};
use proptest::prelude::*;
use serde_json::{Value, json};

/// How long any step may take before the test fails instead of hanging.
const BOUND: Duration = Duration::from_mins(1);

fn hostile(mode: &str) -> McpRemote {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/mcp-servers/hostile.py");
    McpRemote::stdio("python3", [script, mode]).connect_timeout(Duration::from_secs(20))
}

async fn connect(remote: McpRemote) -> RemoteServer {
    tokio::time::timeout(BOUND, remote.connect())
        .await
        .expect("connects within the bound")
        .expect("connects")
}

/// Adds two integers, locally.
#[tool]
async fn remote_mix_local_add(a: i64, b: i64) -> i64 {
    a + b
}

async fn outcome(
    runtime: &Runtime,
    name: &str,
    arguments: Value,
) -> Result<Value, pleach_core::ToolError> {
    let session = runtime
        .create_session(SessionOptions::all())
        .expect("a session");
    let call = ToolCall::from_value("c1", name, &arguments);
    tokio::time::timeout(BOUND, session.call(call))
        .await
        .expect("the call ends within the bound")
        .outcome
        .map(|out| out.value().clone())
}

#[tokio::test]
async fn a_servers_tools_are_listed_across_pages_and_called_like_local_ones() {
    let server = connect(hostile("normal").prefix("h")).await;
    assert_eq!(
        server.tool_names(),
        ["h__ping", "h__sum", "h__bad_output", "h__oops", "h__slow"]
    );
    assert!(server.skipped().is_empty(), "{:?}", server.skipped());
    let runtime = Runtime::builder()
        .plugin(server.plugin())
        .build()
        .expect("local and remote tools together");
    assert!(runtime.registry().contains("remote_mix_local_add"));

    assert_eq!(
        outcome(&runtime, "h__ping", json!({})).await.unwrap(),
        json!("pong")
    );
    assert_eq!(
        outcome(&runtime, "h__sum", json!({"a": 2, "b": 3}))
            .await
            .unwrap(),
        json!({"sum": 5})
    );

    // Refused before it is sent: the server's own message would be `invalid arguments: …` as
    // an isError result (1008); pleach's is 1001 with the pointer.
    let bad = outcome(&runtime, "h__sum", json!({"a": "two", "b": 3}))
        .await
        .unwrap_err();
    assert_eq!(bad.code(), ErrorCode::InputInvalid, "{bad:?}");
    assert_eq!(bad.path(), Some("/a"));

    let bad_output = outcome(&runtime, "h__bad_output", json!({}))
        .await
        .unwrap_err();
    assert_eq!(
        bad_output.code(),
        ErrorCode::OutputInvalid,
        "{bad_output:?}"
    );

    let oops = outcome(&runtime, "h__oops", json!({})).await.unwrap_err();
    assert_eq!(
        (oops.code(), oops.message()),
        (ErrorCode::ToolFailed, "it broke")
    );
}

#[tokio::test]
async fn a_cancelled_call_tells_the_server_and_a_slow_one_times_out() {
    let server = connect(hostile("normal")).await;
    let runtime = Runtime::builder()
        .plugin(server.plugin())
        .default_timeout(Duration::from_millis(500))
        .cancel_grace(Duration::from_millis(200))
        .build()
        .unwrap();
    let session = runtime.create_session(SessionOptions::all()).unwrap();

    let turn = session.run_turn(vec![ToolCall::new("c1", "slow", r#"{"ms": 30000}"#)]);
    let token = turn.cancellation_token();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        token.cancel();
    });
    let started = Instant::now();
    let results = tokio::time::timeout(BOUND, turn.finish()).await.unwrap();
    let error = results[0].outcome.as_ref().unwrap_err();
    assert_eq!(error.code(), ErrorCode::Cancelled, "{error:?}");
    assert!(started.elapsed() < Duration::from_secs(5));

    let started = Instant::now();
    let timed_out = outcome(&runtime, "slow", json!({"ms": 30000}))
        .await
        .unwrap_err();
    assert_eq!(timed_out.code(), ErrorCode::TimedOut, "{timed_out:?}");
    assert!(started.elapsed() < Duration::from_secs(5));

    // The server goes on serving.
    assert_eq!(
        outcome(&runtime, "ping", json!({})).await.unwrap(),
        json!("pong")
    );
}

#[tokio::test]
async fn tools_pleach_cannot_take_are_skipped_with_the_reason() {
    let server = connect(hostile("bad-schema")).await;
    assert_eq!(server.tool_names(), ["good", "dup"]);
    let skipped: HashMap<String, String> = server
        .skipped()
        .into_iter()
        .map(|skipped| (skipped.name, skipped.reason))
        .collect();
    assert!(skipped["not_object"].contains("object"), "{skipped:?}");
    assert!(skipped["bad name"].contains("invalid"), "{skipped:?}");
    assert!(
        skipped["null_schema"].contains("no `inputSchema`"),
        "{skipped:?}"
    );
    assert!(skipped[&"x".repeat(300)].contains("invalid"), "{skipped:?}");
    assert!(skipped["dup"].contains("twice"), "{skipped:?}");
    let runtime = Runtime::builder().plugin(server.plugin()).build().unwrap();
    assert_eq!(
        outcome(&runtime, "good", json!({})).await.unwrap(),
        json!("good")
    );
}

#[tokio::test]
async fn a_remote_name_that_clashes_names_both_sources() {
    let server = connect(hostile("normal")).await;
    // A second server with the same tools: every name clashes.
    let again = connect(hostile("normal").name("second")).await;
    let error = Runtime::builder()
        .plugin(server.plugin())
        .plugin(again.plugin())
        .build()
        .unwrap_err();
    let RuntimeError::ToolRegistry(error) = error else {
        panic!("a registry error: {error:?}")
    };
    let text = error.to_string();
    assert!(text.contains("tool name `ping` is defined twice"), "{text}");
    assert!(
        text.contains("the MCP server `python3` (its tool `ping`)"),
        "{text}"
    );
    assert!(
        text.contains("the MCP server `second` (its tool `ping`)"),
        "{text}"
    );
}

#[tokio::test]
async fn ten_thousand_tools_are_cut_to_the_maximum_with_a_warning() {
    let started = Instant::now();
    let server = connect(hostile("many-tools")).await;
    assert_eq!(server.tool_names().len(), 1000);
    let skipped = server.skipped();
    assert_eq!(skipped.len(), 9000);
    assert!(skipped[0].reason.contains("max_tools"), "{}", skipped[0]);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );

    let all = connect(hostile("many-tools").max_tools(20_000)).await;
    assert_eq!(all.tool_names().len(), 10_000);
    let runtime = Runtime::builder().plugin(all.plugin()).build().unwrap();
    assert_eq!(
        outcome(&runtime, "t9999", json!({})).await.unwrap(),
        json!("t9999")
    );
}

/// rmcp's stdio transport drops a message over 16 MiB (and logs it): the call ends at its
/// timeout, and the connection goes on.
#[tokio::test]
async fn a_hundred_megabyte_result_ends_at_the_timeout_and_the_runtime_keeps_serving() {
    let server = connect(hostile("huge-result")).await;
    let runtime = Runtime::builder()
        .plugin(server.plugin())
        .default_timeout(Duration::from_secs(3))
        .cancel_grace(Duration::from_millis(200))
        .build()
        .unwrap();
    let started = Instant::now();
    let error = outcome(&runtime, "huge", json!({})).await.unwrap_err();
    assert!(
        matches!(
            error.code(),
            ErrorCode::TimedOut | ErrorCode::OutputInvalid | ErrorCode::RemoteUnavailable
        ),
        "{error:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        outcome(&runtime, "remote_mix_local_add", json!({"a": 1, "b": 1}))
            .await
            .unwrap(),
        json!(2)
    );
}

#[tokio::test]
async fn servers_that_never_answer_end_at_their_timeouts() {
    let started = Instant::now();
    let error = hostile("silent")
        .connect_timeout(Duration::from_secs(1))
        .connect()
        .await
        .unwrap_err();
    assert!(matches!(error, RemoteError::Connect { .. }), "{error:?}");
    assert!(error.to_string().contains("within 1000 ms"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(10));

    let server = connect(hostile("never-answers")).await;
    let runtime = Runtime::builder()
        .plugin(server.plugin())
        .default_timeout(Duration::from_millis(300))
        .cancel_grace(Duration::from_millis(100))
        .build()
        .unwrap();
    let started = Instant::now();
    let error = outcome(&runtime, "hang", json!({})).await.unwrap_err();
    assert_eq!(error.code(), ErrorCode::TimedOut, "{error:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_server_that_dies_mid_call_fails_it_with_1017_and_is_started_again() {
    let server = connect(hostile("dies-mid-call")).await;
    let runtime = Runtime::builder().plugin(server.plugin()).build().unwrap();
    let error = outcome(&runtime, "die", json!({})).await.unwrap_err();
    assert_eq!(error.code(), ErrorCode::RemoteUnavailable, "{error:?}");
    assert!(error.is_recoverable());
    // The next call starts the server again.
    assert_eq!(
        outcome(&runtime, "ok", json!({})).await.unwrap(),
        json!("ok")
    );
}

/// Waits until `server` holds back `count` definitions.
async fn held_back(server: &RemoteServer, count: usize) -> Vec<DefinitionChange> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let held = server.held_back();
        if held.len() == count {
            return held;
        }
        assert!(Instant::now() < deadline, "held back: {held:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_changed_tool_list_is_listed_again_holding_changes_back_until_trusted() {
    let server = connect(hostile("list-changed")).await;
    assert_eq!(server.tool_names(), ["ping", "grow"]);
    let runtime = Runtime::builder().plugin(server.plugin()).build().unwrap();
    assert_eq!(
        outcome(&runtime, "grow", json!({})).await.unwrap(),
        json!("grew")
    );
    // `ping`'s description changed and `grown` is new: neither is offered.
    let held = held_back(&server, 2).await;
    assert_eq!(server.tool_names(), ["grow"]);
    assert_eq!(held[0].tool, "ping");
    assert!(held[0].pinned.is_some());
    let diff = held[0].diff();
    assert!(diff.contains("    - Answers pong.\n"), "{diff}");
    assert!(
        diff.contains("    + Answers pong. Also reads ~/.ssh for the model.\n"),
        "{diff}"
    );
    assert_eq!(held[1].tool, "grown");
    assert!(held[1].pinned.is_none());
    // A runtime built before keeps `ping`, whose calls are refused, unsent.
    let refused = outcome(&runtime, "ping", json!({})).await.unwrap_err();
    assert_eq!(refused.code(), ErrorCode::SafetyHalt);
    assert!(refused.message().contains("held back"), "{refused:?}");

    assert_eq!(
        server.trust(["ping", "grown", "grow"]).await.unwrap(),
        ["ping", "grown"]
    );
    assert!(server.held_back().is_empty());
    assert_eq!(server.tool_names(), ["ping", "grow", "grown"]);
    assert_eq!(
        outcome(&runtime, "ping", json!({})).await.unwrap(),
        json!("pong")
    );
    let later = Runtime::builder().plugin(server.plugin()).build().unwrap();
    assert_eq!(
        outcome(&later, "grown", json!({})).await.unwrap(),
        json!("grown")
    );
}

#[tokio::test]
async fn a_runtime_keeps_its_remote_tools_current_after_the_server_handle_is_dropped() {
    let server = connect(hostile("list-changed")).await;
    let runtime = Runtime::builder().plugin(server.plugin()).build().unwrap();
    drop(server);
    assert_eq!(
        outcome(&runtime, "grow", json!({})).await.unwrap(),
        json!("grew")
    );
    // list_changed is still heard: `ping`'s changed definition is held back.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match outcome(&runtime, "ping", json!({})).await {
            Err(error) if error.code() == ErrorCode::SafetyHalt => break,
            other => assert!(Instant::now() < deadline, "still offered: {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_lock_file_holds_a_change_back_at_the_next_connection() {
    let dir = std::env::temp_dir().join(format!("pleach-pins-{}", std::process::id()));
    let lock = dir.join("hostile.json");
    let _ = std::fs::remove_file(&lock);
    // Accepted: the lock now pins `ping`'s changed description and `grown`.
    let first = connect(
        hostile("list-changed")
            .pin_file(&lock)
            .pin_policy(PinPolicy::Accept),
    )
    .await;
    let runtime = Runtime::builder().plugin(first.plugin()).build().unwrap();
    outcome(&runtime, "grow", json!({})).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while first.tool_names().len() < 3 {
        assert!(Instant::now() < deadline, "{:?}", first.tool_names());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(first.held_back().is_empty());
    first.close().await;

    // A new process lists the first description again: it differs from the lock.
    let second = connect(hostile("list-changed").pin_file(&lock)).await;
    assert_eq!(second.tool_names(), ["grow"]);
    let held = second.held_back();
    assert_eq!(held.len(), 1);
    assert!(
        held[0].diff().contains("    + Answers pong.\n"),
        "{}",
        held[0]
    );
    let pinned: Vec<String> = second
        .pinned()
        .unwrap()
        .into_iter()
        .map(|p| p.tool)
        .collect();
    assert_eq!(pinned, ["grow", "grown", "ping"]);
    second.close().await;

    // Pinning off: whatever is listed is offered.
    let unpinned = connect(
        hostile("list-changed")
            .pin_file(&lock)
            .pin_definitions(false),
    )
    .await;
    assert_eq!(unpinned.tool_names(), ["ping", "grow"]);
    unpinned.close().await;
    std::fs::remove_dir_all(dir).unwrap();
}

/// One call of the mixed turn.
#[derive(Debug, Clone)]
enum Kind {
    Local(i64),
    Sum(i64),
    BadArguments,
    Oops,
    Slow(u64),
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        (0i64..100).prop_map(Kind::Local),
        (0i64..100).prop_map(Kind::Sum),
        Just(Kind::BadArguments),
        Just(Kind::Oops),
        (0u64..300).prop_map(Kind::Slow),
    ]
}

fn mixed_call(index: usize, kind: &Kind) -> ToolCall {
    let id = format!("c{index}");
    match kind {
        Kind::Local(n) => {
            ToolCall::from_value(id, "remote_mix_local_add", &json!({"a": n, "b": 1}))
        }
        Kind::Sum(n) => ToolCall::from_value(id, "m__sum", &json!({"a": n, "b": 1})),
        Kind::BadArguments => ToolCall::from_value(id, "m__sum", &json!({"a": "x"})),
        Kind::Oops => ToolCall::from_value(id, "m__oops", &json!({})),
        Kind::Slow(ms) => ToolCall::from_value(id, "m__slow", &json!({"ms": ms})),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// A turn of local and remote calls, sometimes cancelled: every call gets exactly one
    /// terminal event, `tool.started` first and nothing after it, and results in call order.
    #[test]
    fn a_turn_mixing_local_and_remote_calls_ends_each_call_once(
        kinds in prop::collection::vec(kind(), 1..12),
        cancel_after_ms in prop::option::of(0u64..200),
    ) {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        rt.block_on(async {
            let server = connect(hostile("normal").prefix("m")).await;
            let runtime = Runtime::builder()
                .plugin(server.plugin())
                .cancel_grace(Duration::from_millis(200))
                .build()
                .unwrap();
            let session = runtime.create_session(SessionOptions::all()).unwrap();
            let calls: Vec<ToolCall> = kinds.iter().enumerate().map(|(i, k)| mixed_call(i, k)).collect();
            let mut turn = session.run_turn(calls.clone());
            if let Some(ms) = cancel_after_ms {
                let token = turn.cancellation_token();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    token.cancel();
                });
            }
            let mut events: Vec<ToolEvent> = Vec::new();
            while let Some(event) = tokio::time::timeout(BOUND, turn.events().recv()).await.expect("events end") {
                events.push(event);
            }
            let results = tokio::time::timeout(BOUND, turn.finish()).await.expect("the turn ends");
            assert_eq!(results.len(), calls.len());
            for ((result, call), kind) in results.iter().zip(&calls).zip(&kinds) {
                assert_eq!(result.tool_call, *call);
                let seen: Vec<&str> = events
                    .iter()
                    .filter(|e| e.tool_call_id() == call.id())
                    .map(ToolEvent::event_type)
                    .collect();
                assert_eq!(seen.first(), Some(&"tool.started"), "{}: {seen:?}", call.id());
                let terminals = seen.iter().filter(|k| matches!(**k, "tool.completed" | "tool.failed")).count();
                assert_eq!(terminals, 1, "{}: {seen:?}", call.id());
                assert!(matches!(seen.last(), Some(&("tool.completed" | "tool.failed"))), "{seen:?}");
                let code = result.outcome.as_ref().err().map(pleach_core::ToolError::code);
                if cancel_after_ms.is_none() {
                    let want = match kind {
                        Kind::Local(_) | Kind::Sum(_) | Kind::Slow(_) => None,
                        Kind::BadArguments => Some(ErrorCode::InputInvalid),
                        Kind::Oops => Some(ErrorCode::ToolFailed),
                    };
                    assert_eq!(code, want, "{}: {:?}", call.id(), result.outcome);
                }
            }
        });
    }
}
