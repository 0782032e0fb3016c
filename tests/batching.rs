//! Batching (`docs/batching.md`): serial calls run alone in call order, parallel calls never exceed
//! their caps, chunked calls never overlap within a key and do across keys, hints override
//! inference, and big steps finish with results in call order. Deterministic: Tokio's paused clock
//! (time only moves when every task waits), no real sleeps.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use pleach_core::{
    BatchingConfig, BatchingHint, BatchingStrategy, Lane, PleachPlugin, Runtime, Session,
    SessionOptions, ToolBatchExecutor, ToolCall, tool,
};

/// What ran when: `(call id, "start" | "end", virtual ms)`.
static LOG: Mutex<Vec<(String, &'static str, u64)>> = Mutex::new(Vec::new());
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
static MAX_IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
static START: Mutex<Option<tokio::time::Instant>> = Mutex::new(None);

fn now_ms() -> u64 {
    let start = START
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    start.map_or(0, |s| {
        u64::try_from(s.elapsed().as_millis()).unwrap_or(u64::MAX)
    })
}

async fn work(id: String, ms: u64) {
    let now = IN_FLIGHT.fetch_add(1, Ordering::SeqCst) + 1;
    MAX_IN_FLIGHT.fetch_max(now, Ordering::SeqCst);
    LOG.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push((id.clone(), "start", now_ms()));
    tokio::time::sleep(Duration::from_millis(ms)).await;
    LOG.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push((id, "end", now_ms()));
    IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
}

/// Reads a record (parallel by inference: a read verb).
#[tool]
async fn read_record(label: String, ms: u64) -> String {
    work(label.clone(), ms).await;
    label
}

/// Writes a record (serial by inference).
#[tool]
async fn commit_ledger(label: String, ms: u64) -> String {
    work(label.clone(), ms).await;
    label
}

/// Updates a file (chunked on `path` by inference).
#[tool]
async fn update_file(label: String, path: String, ms: u64) -> String {
    work(label, ms).await;
    path
}

/// Publishes a post (serial by inference; a hint makes it parallel in one test).
#[tool]
async fn publish_post(label: String, ms: u64) -> String {
    work(label.clone(), ms).await;
    label
}

fn reset() {
    LOG.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clear();
    IN_FLIGHT.store(0, Ordering::SeqCst);
    MAX_IN_FLIGHT.store(0, Ordering::SeqCst);
    *START
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(tokio::time::Instant::now());
}

fn call(id: &str, name: &str, extra: &str) -> ToolCall {
    ToolCall::new(id, name, format!(r#"{{"label":"{id}",{extra}}}"#))
}

fn span(id: &str) -> (u64, u64) {
    let log = LOG
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let at = |what| {
        log.iter()
            .find(|(i, w, _)| i == id && *w == what)
            .map_or_else(|| panic!("{id} has no {what}"), |(_, _, t)| *t)
    };
    (at("start"), at("end"))
}

// The tests share the counters above, so they run one at a time.
static SERIAL_TESTS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn run(runtime: &Runtime, calls: Vec<ToolCall>) -> Vec<String> {
    let session = runtime
        .create_session(SessionOptions::all())
        .expect("session");
    session
        .run_turn(calls)
        .finish()
        .await
        .into_iter()
        .map(|r| {
            r.outcome
                .expect("ok")
                .value()
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

#[test]
fn inference_follows_the_documented_rules() {
    let runtime = Runtime::builder().build().expect("runtime");
    assert_eq!(
        runtime.batching_strategy("read_record"),
        Some(BatchingStrategy::Parallel)
    );
    assert_eq!(
        runtime.batching_strategy("commit_ledger"),
        Some(BatchingStrategy::Serial)
    );
    assert_eq!(
        runtime.batching_strategy("update_file"),
        Some(BatchingStrategy::Chunked { key: "path".into() })
    );
}

#[tokio::test(start_paused = true)]
async fn a_serial_call_runs_alone_in_call_order() {
    let _one_at_a_time = SERIAL_TESTS.lock().await;
    reset();
    let runtime = Runtime::builder().build().expect("runtime");
    let ids = run(
        &runtime,
        vec![
            call("r1", "read_record", r#""ms":30"#),
            call("r2", "read_record", r#""ms":10"#),
            call("w", "commit_ledger", r#""ms":5"#),
            call("r3", "read_record", r#""ms":1"#),
        ],
    )
    .await;
    assert_eq!(ids, ["r1", "r2", "w", "r3"], "results in call order");
    let (r1, r2, w, r3) = (span("r1"), span("r2"), span("w"), span("r3"));
    assert_eq!((r1.0, r2.0), (0, 0), "the reads before the write overlap");
    assert!(
        w.0 >= r1.1.max(r2.1),
        "the write starts after every earlier call: {w:?} {r1:?} {r2:?}"
    );
    assert!(
        r3.0 >= w.1,
        "a later call waits for the write: {r3:?} {w:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_parallel_caps_are_never_exceeded() {
    let _one_at_a_time = SERIAL_TESTS.lock().await;
    for (global, per_tool, expected) in [(8, None, 8), (8, Some(3), 3), (2, Some(5), 2)] {
        reset();
        let mut plugin = PleachPlugin::new("caps");
        if let Some(cap) = per_tool {
            plugin = plugin.batching_hints([BatchingHint::new(
                "read_record",
                BatchingStrategy::Parallel,
            )
            .max_concurrency(cap)]);
        }
        let runtime = Runtime::builder()
            .plugin(plugin)
            .max_concurrency(global)
            .build()
            .expect("runtime");
        let calls = (0..50)
            .map(|i| call(&format!("r{i}"), "read_record", r#""ms":10"#))
            .collect();
        let ids = run(&runtime, calls).await;
        assert_eq!(ids.len(), 50);
        assert_eq!(
            MAX_IN_FLIGHT.load(Ordering::SeqCst),
            expected,
            "global {global}, per tool {per_tool:?}: the cap is reached and never exceeded"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn chunked_calls_never_overlap_within_a_key_and_do_across_keys() {
    let _one_at_a_time = SERIAL_TESTS.lock().await;
    reset();
    let runtime = Runtime::builder().build().expect("runtime");
    let paths = ["a", "b", "a", "c", "b", "a"];
    let calls = paths
        .iter()
        .enumerate()
        .map(|(i, path)| {
            call(
                &format!("u{i}"),
                "update_file",
                &format!(r#""path":"{path}","ms":10"#),
            )
        })
        .collect();
    run(&runtime, calls).await;
    for key in ["a", "b"] {
        let mut spans: Vec<(u64, u64)> = paths
            .iter()
            .enumerate()
            .filter(|(_, p)| **p == key)
            .map(|(i, _)| span(&format!("u{i}")))
            .collect();
        let in_call_order = spans.clone();
        spans.sort_unstable();
        assert_eq!(spans, in_call_order, "key {key} runs in call order");
        for pair in spans.windows(2) {
            assert!(
                pair[1].0 >= pair[0].1,
                "key {key} never overlaps itself: {spans:?}"
            );
        }
    }
    assert_eq!(
        (span("u0").0, span("u1").0, span("u3").0),
        (0, 0, 0),
        "different keys overlap"
    );
}

#[tokio::test(start_paused = true)]
async fn a_hint_overrides_inference() {
    let _one_at_a_time = SERIAL_TESTS.lock().await;
    let calls = || {
        (0..4)
            .map(|i| call(&format!("p{i}"), "publish_post", r#""ms":10"#))
            .collect::<Vec<_>>()
    };
    reset();
    run(&Runtime::builder().build().expect("runtime"), calls()).await;
    assert_eq!(
        MAX_IN_FLIGHT.load(Ordering::SeqCst),
        1,
        "serial by inference"
    );
    reset();
    let hinted = Runtime::builder()
        .plugin(
            PleachPlugin::new("posts").batching_hints([BatchingHint::new(
                "publish_post",
                BatchingStrategy::Parallel,
            )]),
        )
        .build()
        .expect("runtime");
    assert_eq!(
        hinted.batching_strategy("publish_post"),
        Some(BatchingStrategy::Parallel)
    );
    run(&hinted, calls()).await;
    assert_eq!(MAX_IN_FLIGHT.load(Ordering::SeqCst), 4, "parallel by hint");
}

#[tokio::test(start_paused = true)]
async fn a_mixed_step() {
    let _one_at_a_time = SERIAL_TESTS.lock().await;
    reset();
    let runtime = Runtime::builder().build().expect("runtime");
    let ids = run(
        &runtime,
        vec![
            call("u0", "update_file", r#""path":"x","ms":20"#),
            call("r0", "read_record", r#""ms":5"#),
            call("u1", "update_file", r#""path":"x","ms":5"#),
            call("w", "commit_ledger", r#""ms":5"#),
            call("u2", "update_file", r#""path":"y","ms":5"#),
            call("r1", "read_record", r#""ms":5"#),
        ],
    )
    .await;
    assert_eq!(ids, ["x", "r0", "x", "w", "y", "r1"]);
    assert!(span("u1").0 >= span("u0").1, "same path in order");
    assert_eq!(span("r0").0, 0, "a read beside the first write of x");
    let w = span("w");
    assert!(
        w.0 >= span("u1").1 && w.0 >= span("r0").1,
        "the serial call waits for all before it"
    );
    assert!(
        span("u2").0 >= w.1 && span("r1").0 >= w.1,
        "and everything after waits for it"
    );
}

#[tokio::test(start_paused = true)]
async fn a_step_of_ten_thousand_calls() {
    let _one_at_a_time = SERIAL_TESTS.lock().await;
    reset();
    let runtime = Runtime::builder()
        .max_concurrency(64)
        .build()
        .expect("runtime");
    let calls: Vec<ToolCall> = (0..10_000)
        .map(|i| match i % 10 {
            0 => call(&format!("c{i}"), "commit_ledger", r#""ms":1"#),
            1..=3 => call(
                &format!("c{i}"),
                "update_file",
                &format!(r#""path":"p{}","ms":1"#, i % 7),
            ),
            _ => call(&format!("c{i}"), "read_record", r#""ms":1"#),
        })
        .collect();
    let session = runtime
        .create_session(SessionOptions::all())
        .expect("session");
    let results = session.run_turn(calls.clone()).finish().await;
    assert_eq!(results.len(), 10_000);
    for (result, call) in results.iter().zip(&calls) {
        assert_eq!(result.tool_call.id(), call.id());
        assert!(
            result.outcome.is_ok(),
            "{}: {:?}",
            call.id(),
            result.outcome
        );
    }
    assert!(MAX_IN_FLIGHT.load(Ordering::SeqCst) <= 64);
}

#[tokio::test(start_paused = true)]
async fn the_executor_orders_any_work() {
    let executor = ToolBatchExecutor::new(BatchingConfig::new(3));
    let order = std::sync::Arc::new(Mutex::new(Vec::new()));
    let lanes = vec![
        Lane::Parallel { limit: None },
        Lane::Chunked { group: "g".into() },
        Lane::Chunked { group: "g".into() },
        Lane::Serial,
        Lane::Parallel { limit: None },
    ];
    let out = executor
        .run(lanes, |index| {
            let order = order.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(10 - 2 * index as u64)).await;
                order
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(index);
                index
            }
        })
        .await;
    assert_eq!(out, [Some(0), Some(1), Some(2), Some(3), Some(4)]);
    let order = order
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let position = |i| order.iter().position(|&x| x == i).expect("ran");
    assert!(position(1) < position(2), "a group runs in order");
    assert!(
        position(3) > position(0).max(position(2)),
        "serial after all before"
    );
    assert!(position(4) > position(3), "and before all after");
}

/// Runs 200 items (a serial one every 50, a per-group cap of 2 on every third, a global cap of 4,
/// item 7 panicking) and checks every rule from a log of starts and ends.
async fn executor_rules_hold() {
    use std::sync::Arc;
    let in_flight = Arc::new(AtomicUsize::new(0));
    let max_in_flight = Arc::new(AtomicUsize::new(0));
    let capped = Arc::new(AtomicUsize::new(0));
    let max_capped = Arc::new(AtomicUsize::new(0));
    let log = Arc::new(Mutex::new(Vec::new()));
    let lanes: Vec<Lane> = (0..200)
        .map(|index| match index {
            _ if index % 50 == 49 => Lane::Serial,
            _ if index % 3 == 0 => Lane::Parallel {
                limit: Some(("capped".into(), 2)),
            },
            _ => Lane::Parallel { limit: None },
        })
        .collect();
    let executor = ToolBatchExecutor::new(BatchingConfig::new(4));
    let out = executor
        .run(lanes, |index| {
            let (in_flight, max_in_flight, capped, max_capped, log) = (
                in_flight.clone(),
                max_in_flight.clone(),
                capped.clone(),
                max_capped.clone(),
                log.clone(),
            );
            async move {
                let push = |event| {
                    log.lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push((index, event));
                };
                push("start");
                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                max_in_flight.fetch_max(now, Ordering::SeqCst);
                let in_group = index % 3 == 0 && index % 50 != 49;
                if in_group {
                    let now = capped.fetch_add(1, Ordering::SeqCst) + 1;
                    max_capped.fetch_max(now, Ordering::SeqCst);
                }
                tokio::task::yield_now().await;
                if in_group {
                    capped.fetch_sub(1, Ordering::SeqCst);
                }
                in_flight.fetch_sub(1, Ordering::SeqCst);
                push("end");
                assert_ne!(index, 7, "item 7 fails");
                index * 2
            }
        })
        .await;
    for (index, output) in out.iter().enumerate() {
        let expected = (index != 7).then_some(index * 2);
        assert_eq!(*output, expected, "item {index}");
    }
    assert!(max_in_flight.load(Ordering::SeqCst) <= 4, "global cap");
    assert!(max_capped.load(Ordering::SeqCst) <= 2, "group cap");
    let log = log
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let at = |index: usize, event: &str| {
        log.iter()
            .position(|entry| *entry == (index, event))
            .expect("logged")
    };
    for serial in (49..200).step_by(50) {
        let start = at(serial, "start");
        assert!(
            (0..serial).all(|before| at(before, "end") < start),
            "serial {serial} after all before"
        );
        let end = at(serial, "end");
        assert!(
            (serial + 1..200).all(|after| at(after, "start") > end),
            "and before all after"
        );
    }
}

#[tokio::test(flavor = "current_thread")]
async fn the_executor_keeps_its_rules_when_polling_items_in_its_own_task() {
    executor_rules_hold().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_executor_keeps_its_rules_when_spawning_items_on_a_multi_thread_runtime() {
    executor_rules_hold().await;
}

/// A turn on a multi-thread runtime (each started call spawned as a task) keeps its guarantees:
/// one terminal event per call, results in call order, an unknown tool failing alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_on_a_multi_thread_runtime() {
    let _one_at_a_time = SERIAL_TESTS.lock().await;
    let runtime = Runtime::builder().build().expect("runtime");
    let session = runtime
        .create_session(SessionOptions::enabled(["read_record", "commit_ledger"]))
        .expect("session");
    let calls: Vec<ToolCall> = (0..40)
        .map(|index| {
            let name = if index == 20 {
                "commit_ledger"
            } else {
                "read_record"
            };
            ToolCall::new(
                format!("m{index}"),
                name,
                format!(r#"{{"label":"m{index}","ms":0}}"#),
            )
        })
        .chain([ToolCall::new("m40", "no_such_tool", "{}")])
        .collect();
    let mut turn = session.run_turn(calls);
    let mut terminal = std::collections::HashMap::new();
    while let Some(event) = turn.events().recv().await {
        if event.is_terminal() {
            *terminal.entry(event.tool_call_id().to_owned()).or_insert(0) += 1;
        }
    }
    let results = turn.finish().await;
    assert_eq!(terminal.len(), 41);
    assert!(terminal.values().all(|&count| count == 1));
    let ids: Vec<&str> = results.iter().map(|r| r.tool_call.id()).collect();
    let expected: Vec<String> = (0..41).map(|index| format!("m{index}")).collect();
    assert_eq!(ids, expected);
    assert!(results[..40].iter().all(|r| r.outcome.is_ok()));
    assert!(results[40].outcome.is_err());
}

static BP_GATE: tokio::sync::Notify = tokio::sync::Notify::const_new();
static BP_ENTERED: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// Holds its slot until the test opens the gate.
#[tool]
async fn read_blocker() -> &'static str {
    BP_ENTERED.notify_one();
    BP_GATE.notified().await;
    "released"
}

/// Returns its input at once: no `.await` and no context, so it runs where it starts, holding a
/// runtime slot while it does.
#[tool]
async fn read_echo(n: u32) -> u32 {
    n
}

/// Two sessions of one runtime that runs one call at a time, overloaded by `policy`.
fn backpressure_sessions(policy: pleach_core::OverloadPolicy) -> (Session, Session) {
    let runtime = Runtime::builder()
        .max_in_flight(1)
        .overload_policy(policy)
        .build()
        .expect("runtime");
    let session = || {
        runtime
            .create_session(SessionOptions::all())
            .expect("session")
    };
    (session(), session())
}

#[tokio::test(start_paused = true)]
async fn backpressure_fails_fast_with_1014_when_configured() {
    let _one_at_a_time = SERIAL_TESTS.lock().await;
    let (first, second) = backpressure_sessions(pleach_core::OverloadPolicy::FailFast);
    let turn = first.run_turn(vec![ToolCall::new("c1", "read_blocker", "{}")]);
    BP_ENTERED.notified().await;
    let refused = second.call(call("c2", "read_record", r#""ms":1"#)).await;
    let error = refused.outcome.expect_err("the runtime is full");
    assert_eq!(error.code(), pleach_core::ErrorCode::Overloaded);
    // A call that would run in place is refused the same way: it needs a free slot too.
    let in_place = second
        .call(ToolCall::new("c2b", "read_echo", r#"{"n":7}"#))
        .await;
    assert_eq!(
        in_place.outcome.expect_err("the runtime is full").code(),
        pleach_core::ErrorCode::Overloaded
    );
    assert!(error.is_recoverable());
    assert!(
        error.message().contains("at capacity (1 calls running)"),
        "{}",
        error.message()
    );
    BP_GATE.notify_one();
    assert!(turn.finish().await[0].outcome.is_ok());
    // With the slot free again, the same call runs.
    assert!(
        second
            .call(call("c3", "read_record", r#""ms":1"#))
            .await
            .outcome
            .is_ok()
    );
}

#[tokio::test(start_paused = true)]
async fn backpressure_waits_across_sessions_by_default() {
    let _one_at_a_time = SERIAL_TESTS.lock().await;
    let (first, second) = backpressure_sessions(pleach_core::OverloadPolicy::Wait);
    let turn = first.run_turn(vec![ToolCall::new("c1", "read_blocker", "{}")]);
    BP_ENTERED.notified().await;
    let mut waiting = Box::pin(second.call(call("c2", "read_record", r#""ms":1"#)));
    assert!(
        tokio::time::timeout(Duration::from_secs(5), &mut waiting)
            .await
            .is_err(),
        "the second session's call waits while the only slot is taken"
    );
    let mut in_place = Box::pin(second.call(ToolCall::new("c2b", "read_echo", r#"{"n":7}"#)));
    assert!(
        tokio::time::timeout(Duration::from_secs(5), &mut in_place)
            .await
            .is_err(),
        "a call that would run in place waits for a free slot too"
    );
    BP_GATE.notify_one();
    assert!(waiting.await.outcome.is_ok(), "and runs once it is free");
    assert_eq!(in_place.await.outcome, Ok(serde_json::json!(7).into()));
    assert!(turn.finish().await[0].outcome.is_ok());
}

/// `OverloadPolicy::Wait` bounds the wait by the call's timeout: a call that never gets a slot
/// fails with 1010 (recoverable, the tool never ran) rather than hang its turn for ever; one that
/// gets its slot in time runs with its whole timeout.
#[tokio::test(start_paused = true)]
async fn backpressure_waits_no_longer_than_the_calls_timeout() {
    let _one_at_a_time = SERIAL_TESTS.lock().await;
    let runtime = Runtime::builder()
        .max_in_flight(1)
        .tool_timeout("read_record", Duration::from_secs(2))
        .build()
        .expect("runtime");
    let (first, second) = (
        runtime
            .create_session(SessionOptions::all())
            .expect("session"),
        runtime
            .create_session(SessionOptions::all())
            .expect("session"),
    );
    let turn = first.run_turn(vec![ToolCall::new("c1", "read_blocker", "{}")]);
    BP_ENTERED.notified().await;
    let started = tokio::time::Instant::now();
    let mut waiting = second.run_turn(vec![call("c2", "read_record", r#""ms":1"#)]);
    let mut events = Vec::new();
    while let Some(event) = waiting.events().recv().await {
        events.push(event.event_type());
    }
    let results = waiting.finish().await;
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(2),
        "waited its timeout"
    );
    assert_eq!(events, ["tool.started", "tool.failed"]);
    let error = results[0].outcome.as_ref().expect_err("no slot came");
    assert_eq!(error.code(), pleach_core::ErrorCode::TimedOut);
    assert!(error.is_recoverable());
    assert!(
        error.message().contains("did not start within 2 s"),
        "{}",
        error.message()
    );
    // Freed after a second of waiting, the slot goes to a call that then runs its 1.5 s.
    let later = tokio::spawn(async move {
        let result = second.call(call("c3", "read_record", r#""ms":1500"#)).await;
        (result, second)
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    BP_GATE.notify_one();
    assert!(turn.finish().await[0].outcome.is_ok());
    let (result, _second) = later.await.expect("joined");
    assert_eq!(result.outcome, Ok(serde_json::json!("c3").into()));
}

/// A turn's calls that run in place run one after another in its task, under one runtime slot
/// for the run; the slot is let go whenever the turn yields to other tasks, so another session's
/// call, scheduled in between, finds it free even with room for one call and no waiting.
#[tokio::test(flavor = "current_thread")]
async fn a_long_turn_of_in_place_calls_lets_other_sessions_in_when_it_yields() {
    let _one_at_a_time = SERIAL_TESTS.lock().await;
    let (first, second) = backpressure_sessions(pleach_core::OverloadPolicy::FailFast);
    let calls: Vec<ToolCall> = (0..2_000)
        .map(|n| ToolCall::new(format!("c{n}"), "read_echo", format!(r#"{{"n":{n}}}"#)))
        .collect();
    let mut turn = first.run_turn(calls);
    let other = tokio::spawn(async move {
        let mut outcomes = Vec::new();
        // Each iteration runs when the turn's task yields (or before it starts).
        for n in 0..10_u32 {
            let call = ToolCall::new(format!("o{n}"), "read_echo", format!(r#"{{"n":{n}}}"#));
            outcomes.push(second.call(call).await.outcome);
            tokio::task::yield_now().await;
        }
        outcomes
    });
    let mut ended = 0;
    while let Some(event) = turn.events().recv().await {
        ended += usize::from(event.is_terminal());
    }
    let results = turn.finish().await;
    assert_eq!(ended, 2_000);
    assert!(results.iter().all(|r| r.outcome.is_ok()));
    for (n, outcome) in (0..10_u32).zip(other.await.unwrap()) {
        assert_eq!(
            outcome,
            Ok(serde_json::json!(n).into()),
            "the other session's call {n}"
        );
    }
}

static SPIN_ENTERED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
static SPIN_RELEASE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Reads nothing, and holds its thread until the test lets it go: a call that runs in place.
#[tool]
async fn read_spin() -> u8 {
    SPIN_ENTERED.store(true, Ordering::SeqCst);
    while !SPIN_RELEASE.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(1));
    }
    1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_running_in_place_holds_its_runtime_slot_against_other_threads() {
    let _one_at_a_time = SERIAL_TESTS.lock().await;
    let (first, second) = backpressure_sessions(pleach_core::OverloadPolicy::FailFast);
    // One worker thread runs a call in place, holding the only slot...
    let spinning =
        tokio::spawn(async move { first.call(ToolCall::new("c1", "read_spin", "{}")).await });
    while !SPIN_ENTERED.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    // ... so a call from another thread finds the runtime full, whichever way it would run.
    let refused = [
        second.call(call("c2", "read_record", r#""ms":1"#)).await,
        second
            .call(ToolCall::new("c3", "read_echo", r#"{"n":7}"#))
            .await,
    ];
    // Let the spinning call go before judging, so a failure here does not hang the test.
    SPIN_RELEASE.store(true, Ordering::SeqCst);
    for refused in refused {
        assert_eq!(
            refused.outcome.expect_err("the runtime is full").code(),
            pleach_core::ErrorCode::Overloaded
        );
    }
    assert_eq!(
        spinning.await.unwrap().outcome,
        Ok(serde_json::json!(1).into())
    );
    assert!(
        second
            .call(ToolCall::new("c4", "read_echo", r#"{"n":7}"#))
            .await
            .outcome
            .is_ok()
    );
}

#[test]
fn two_plugins_that_hint_one_tool_differently_are_refused_at_build() {
    let hint = |strategy| BatchingHint::new("publish_post", strategy);
    let error = Runtime::builder()
        .plugin(PleachPlugin::new("a").batching_hints([hint(BatchingStrategy::Parallel)]))
        .plugin(PleachPlugin::new("b").batching_hints([hint(BatchingStrategy::Serial)]))
        .build()
        .expect_err("which hint holds would depend on the plugins' order");
    assert_eq!(
        error,
        pleach_core::RuntimeError::ConflictingHints {
            tool: "publish_post".into(),
            first: "plugin `a`".into(),
            second: "plugin `b`".into(),
        }
    );
    // The same hint twice is no conflict.
    assert!(
        Runtime::builder()
            .plugin(PleachPlugin::new("a").batching_hints([hint(BatchingStrategy::Parallel)]))
            .plugin(PleachPlugin::new("b").batching_hints([hint(BatchingStrategy::Parallel)]))
            .build()
            .is_ok()
    );
}
