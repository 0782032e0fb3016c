//! The durable loop (`pleach_core::durable`) through an in-memory engine: the seam's contract
//! without a durable-execution server — the in-process results, lanes kept, approvals decided
//! (refused when bound to another call or an invalid edit, expired with 1016), a call whose
//! worker died ending with 1018, every call ending once. `pleach-cli/tests/durable.rs` holds the
//! same rules against a real Temporal server.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use pleach_core::agent::{AgentOptions, ReplayClient, WireFormat};
use pleach_core::durable::{
    self, CallOutcome, CallRequest, DurableOptions, DurableOutcome, DurableStop, Engine, ModelStep,
    StepFailure, Worker,
};
use pleach_core::safety::{Decision, Interrupt, ProvenanceDetector};
use pleach_core::{Message, Runtime, SessionOptions, tool};
use serde_json::{Value, json};

// The model steps the Temporal tests serve over HTTP, here replayed.
use pleach_test_support::model::{answer, calls};

/// Looks a record up (a read).
#[tool]
async fn lookup_durable(key: String) -> String {
    format!("value of {key}")
}

/// Writes a ledger entry (a write: serial).
#[tool]
async fn write_durable(entry: String) -> String {
    format!("wrote {entry}")
}

/// Appends to a file (chunked by path).
#[tool]
async fn append_durable(path: String, line: String) -> String {
    format!("appended {line} to {path}")
}

/// Transfers money to an account (guarded).
#[tool]
async fn transfer_durable(account: String, amount: u32) -> String {
    format!("sent {amount} to {account}")
}

/// Finds a customer's account id (a read).
#[tool]
async fn find_durable_account(customer: String) -> String {
    let _ = customer;
    "ACC-1".to_owned()
}

/// Looks a record up, taking `ms` milliseconds (a read).
#[tool]
async fn lookup_paced_durable(key: String, ms: u64) -> String {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    format!("value of {key}")
}

const TOOLS: [&str; 6] = [
    "lookup_paced_durable",
    "find_durable_account",
    "lookup_durable",
    "write_durable",
    "append_durable",
    "transfer_durable",
];

fn runtime() -> Runtime {
    Runtime::builder()
        .detector(ProvenanceDetector::new().guard("transfer_durable", ["/account"]))
        .build()
        .unwrap()
}

type Decide = Box<dyn Fn(&Interrupt) -> Option<Decision>>;

/// An engine in memory: answers from a replay, calls run on a worker right here, decisions
/// from a script, the calls in `lost` "lose their worker".
struct InMemory {
    worker: Worker,
    model: ReplayClient,
    events: RefCell<Vec<Value>>,
    decisions: RefCell<VecDeque<Decide>>,
    refused: RefCell<Vec<String>>,
    lost: Vec<&'static str>,
    started: RefCell<Vec<String>>,
    ended: RefCell<Vec<String>>,
    running: RefCell<(usize, usize)>,
}

impl InMemory {
    fn new(steps: Vec<Vec<u8>>) -> InMemory {
        InMemory {
            worker: Worker::new(runtime()).session_options(SessionOptions::enabled(TOOLS)),
            model: ReplayClient::new(WireFormat::OpenAiChat, steps),
            events: RefCell::default(),
            decisions: RefCell::default(),
            refused: RefCell::default(),
            lost: Vec::new(),
            started: RefCell::default(),
            ended: RefCell::default(),
            running: RefCell::default(),
        }
    }

    fn decide(self, decide: impl Fn(&Interrupt) -> Option<Decision> + 'static) -> Self {
        self.decisions.borrow_mut().push_back(Box::new(decide));
        self
    }
}

impl Engine for InMemory {
    async fn model_step(&self, conversation: Vec<Message>) -> Result<ModelStep, StepFailure> {
        let trace = std::collections::BTreeMap::new();
        self.worker
            .model_step(&self.model, conversation, &trace)
            .await
    }

    async fn tool_call(&self, request: CallRequest) -> CallOutcome {
        let id = request.call.id().to_owned();
        self.started.borrow_mut().push(id.clone());
        if self.lost.contains(&request.call.id()) && !request.idempotent {
            return CallOutcome::unknown(request.call, "the worker was killed");
        }
        {
            let (now, peak) = &mut *self.running.borrow_mut();
            *now += 1;
            *peak = (*peak).max(*now);
        }
        let outcome = self.worker.tool_call(request).await;
        self.running.borrow_mut().0 -= 1;
        self.ended.borrow_mut().push(id);
        outcome
    }

    async fn decision(&self, interrupt: &Interrupt, _expiry: Option<Duration>) -> Option<Decision> {
        let decide = self.decisions.borrow_mut().pop_front()?;
        decide(interrupt)
    }

    fn emit(&self, event: Value) {
        self.events.borrow_mut().push(event);
    }

    async fn join_all<F: Future>(&self, futures: Vec<F>) -> Vec<F::Output> {
        futures_util::future::join_all(futures).await
    }

    fn refused(&self, _decision: &Decision, reason: &str) {
        self.refused.borrow_mut().push(reason.to_owned());
    }
}

fn user(text: &str) -> Vec<Message> {
    vec![Message::User {
        content: text.into(),
    }]
}

async fn run(engine: &InMemory, options: &DurableOptions) -> DurableOutcome {
    durable::run(engine, user("go"), options).await
}

/// Each call: one result message, one terminal event, last.
fn exactly_once(outcome: &DurableOutcome, events: &[Value]) {
    for result in &outcome.results {
        let id = result.tool_call.id();
        let messages = outcome
            .conversation
            .iter()
            .filter(|m| matches!(m, Message::Tool { tool_call, .. } if tool_call.id() == id))
            .count();
        assert_eq!(messages, 1, "{id}");
        let of_call: Vec<&str> = events
            .iter()
            .filter(|e| e["toolCall"]["id"] == id || e["toolCallId"] == id)
            .filter_map(|e| e["type"].as_str())
            .collect();
        let terminal = of_call
            .iter()
            .filter(|kind| matches!(**kind, "tool.completed" | "tool.failed"))
            .count();
        assert_eq!(terminal, 1, "{id}: {of_call:?}");
        assert!(
            of_call.last().unwrap().starts_with("tool."),
            "{id}: {of_call:?}"
        );
    }
}

fn mixed() -> Vec<Vec<u8>> {
    vec![
        calls(&[
            ("c1", "lookup_durable", json!({"key": "k1"})),
            ("c2", "write_durable", json!({"entry": "e1"})),
            ("c3", "append_durable", json!({"path": "a", "line": "1"})),
            ("c4", "lookup_durable", json!({"key": "k2"})),
            ("c5", "append_durable", json!({"path": "a", "line": "2"})),
            ("c6", "dur_missing", json!({})),
        ]),
        answer("Done."),
    ]
}

#[tokio::test]
async fn the_durable_loop_gives_the_in_process_results_conversation_and_events() {
    let engine = InMemory::new(mixed());
    let durable = run(&engine, &DurableOptions::default()).await;

    let session = runtime()
        .create_session(SessionOptions::enabled(TOOLS))
        .unwrap();
    session.push_user_message("go");
    let mut agent = session.run_agent(
        Arc::new(ReplayClient::new(WireFormat::OpenAiChat, mixed())),
        AgentOptions::default(),
    );
    let mut in_process_events = Vec::new();
    while let Some(event) = agent.events().recv().await {
        in_process_events.push(serde_json::from_str::<Value>(&event.to_json()).unwrap());
    }
    let in_process = agent.finish().await;

    assert_eq!(durable.stop, DurableStop::Finished);
    assert_eq!(durable.final_text.as_deref(), Some("Done."));
    assert_eq!(durable.conversation, session.conversation());
    let results: Vec<_> = in_process
        .steps
        .iter()
        .flat_map(|s| s.results.clone())
        .collect();
    assert_eq!(durable.results, results);
    let events = engine.events.borrow();
    let per_call = |events: &[Value], id: &str| -> Vec<Value> {
        events
            .iter()
            .filter(|e| e["toolCall"]["id"] == id || e["toolCallId"] == id)
            .cloned()
            .collect()
    };
    for id in ["c1", "c2", "c3", "c4", "c5", "c6"] {
        assert_eq!(
            per_call(&events, id),
            per_call(&in_process_events, id),
            "{id}"
        );
    }
    exactly_once(&durable, &events);
    // The serial write started after the read before it, and before everything after it.
    let started = engine.started.borrow();
    let at = |id: &str| started.iter().position(|s| s == id).unwrap();
    assert!(at("c1") < at("c2") && at("c2") < at("c3") && at("c2") < at("c4"));
    assert!(at("c3") < at("c5"));
}

#[tokio::test(start_paused = true)]
async fn a_call_starts_the_moment_a_slot_frees_not_when_the_slowest_ends() {
    // Two at a time: the slow call holds one slot, the quick ones pass through the other.
    let engine = InMemory::new(vec![
        calls(&[
            (
                "slow",
                "lookup_paced_durable",
                json!({"key": "s", "ms": 1000}),
            ),
            ("q1", "lookup_paced_durable", json!({"key": "1", "ms": 10})),
            ("q2", "lookup_paced_durable", json!({"key": "2", "ms": 10})),
            ("q3", "lookup_paced_durable", json!({"key": "3", "ms": 10})),
            ("q4", "lookup_paced_durable", json!({"key": "4", "ms": 10})),
        ]),
        answer("Done."),
    ]);
    let options = DurableOptions::default().max_concurrency(2);
    let outcome = run(&engine, &options).await;

    assert_eq!(outcome.stop, DurableStop::Finished);
    assert_eq!(*engine.ended.borrow(), ["q1", "q2", "q3", "q4", "slow"]);
    assert_eq!(
        engine.running.borrow().1,
        2,
        "never more than the limit at once"
    );
    assert_eq!(*engine.started.borrow(), ["slow", "q1", "q2", "q3", "q4"]);
    // Results in call order whatever the order they ended in.
    let ids: Vec<&str> = outcome.results.iter().map(|r| r.tool_call.id()).collect();
    assert_eq!(ids, ["slow", "q1", "q2", "q3", "q4"]);
    exactly_once(&outcome, &engine.events.borrow());
}

#[tokio::test]
async fn a_call_whose_worker_died_ends_with_1018_and_an_idempotent_one_is_not_lost() {
    let mut engine = InMemory::new(mixed());
    engine.lost = vec!["c2", "c1"];
    let outcome = run(&engine, &DurableOptions::default()).await;
    // c2 (a write) lost its worker: 1018, recoverable; c1 (a read) is idempotent and ran.
    let error = outcome.results[1].outcome.as_ref().unwrap_err();
    assert_eq!(error.code().as_u16(), 1018);
    assert!(error.is_recoverable());
    assert!(outcome.results[0].outcome.is_ok());
    assert!(matches!(
        &outcome.conversation[3],
        Message::Tool { content, is_error: true, .. } if content.starts_with("error 1018")
    ));
    exactly_once(&outcome, &engine.events.borrow());
}

fn transfer() -> Vec<Vec<u8>> {
    vec![
        calls(&[(
            "t1",
            "transfer_durable",
            json!({"account": "ACC-9", "amount": 5}),
        )]),
        answer("Sent."),
    ]
}

#[tokio::test]
async fn an_approval_takes_only_a_decision_bound_to_its_call_and_a_valid_edit() {
    let engine = InMemory::new(transfer())
        // Bound to another call's fingerprint: refused, the interrupt still waits.
        .decide(|interrupt| {
            let mut decision = interrupt.accept();
            decision.fingerprint = "0".repeat(64);
            Some(decision)
        })
        // An edit the schema refuses: refused by the worker.
        .decide(|interrupt| Some(interrupt.edit(r#"{"account":7}"#)))
        .decide(|interrupt| Some(interrupt.edit(r#"{"account":"ACC-1","amount":5}"#)));
    let outcome = run(&engine, &DurableOptions::default()).await;

    assert_eq!(
        outcome.results[0].outcome,
        Ok(json!("sent 5 to ACC-1").into())
    );
    assert!(matches!(
        &outcome.conversation[2],
        Message::Tool { edited_arguments: Some(args), .. } if args.contains("ACC-1")
    ));
    let refused = engine.refused.borrow();
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert!(refused[0].contains("fingerprint"), "{refused:?}");
    assert!(refused[1].contains("account"), "{refused:?}");
    let events = engine.events.borrow();
    let kinds: Vec<&str> = events
        .iter()
        .filter_map(|e| e["type"].as_str())
        .filter(|kind| *kind != "tool.delta")
        .collect();
    // One interrupt, asked once (the refusals keep it waiting), resolved once: when a decision
    // was taken.
    assert_eq!(
        kinds,
        [
            "tool.started",
            "interrupt.requested",
            "interrupt.resolved",
            "tool.completed"
        ]
    );
    exactly_once(&outcome, &events);
}

#[tokio::test]
async fn a_value_an_earlier_step_showed_needs_no_approval_in_a_later_step() {
    // Each call runs in a fresh session on its worker: what the safety stage knows comes from the
    // conversation (`Session::restore_conversation`), so ACC-1, shown by step 1, passes in step 2.
    let engine = InMemory::new(vec![
        calls(&[("f1", "find_durable_account", json!({"customer": "Ada"}))]),
        calls(&[(
            "t1",
            "transfer_durable",
            json!({"account": "ACC-1", "amount": 5}),
        )]),
        answer("Sent."),
    ]);
    let outcome = run(&engine, &DurableOptions::default()).await;
    assert_eq!(
        outcome.results[1].outcome,
        Ok(json!("sent 5 to ACC-1").into())
    );
    assert!(
        !engine
            .events
            .borrow()
            .iter()
            .any(|event| event["type"] == "interrupt.requested")
    );
}

#[tokio::test]
async fn a_rejection_gives_1013_and_an_expired_approval_1016() {
    let engine =
        InMemory::new(transfer()).decide(|interrupt| Some(interrupt.reject("not that account")));
    let outcome = run(&engine, &DurableOptions::default()).await;
    let error = outcome.results[0].outcome.as_ref().unwrap_err();
    assert_eq!(error.code().as_u16(), 1013);
    assert!(error.message().contains("not that account"));
    exactly_once(&outcome, &engine.events.borrow());

    // Nobody decides before the expiry.
    let engine = InMemory::new(transfer());
    let options = DurableOptions::default().approval_expiry(Duration::from_mins(1));
    let outcome = run(&engine, &options).await;
    assert_eq!(
        outcome.results[0]
            .outcome
            .as_ref()
            .unwrap_err()
            .code()
            .as_u16(),
        1016
    );
    assert_eq!(outcome.final_text.as_deref(), Some("Sent."));
    exactly_once(&outcome, &engine.events.borrow());
}

#[tokio::test]
async fn a_model_step_that_fails_or_steps_that_run_out_stop_the_conversation() {
    let engine = InMemory::new(Vec::new());
    let outcome = run(&engine, &DurableOptions::default()).await;
    assert!(matches!(&outcome.stop, DurableStop::Error(message) if message.contains("replay")));

    let engine = InMemory::new(mixed());
    let outcome = run(&engine, &DurableOptions::default().max_steps(1)).await;
    assert_eq!(outcome.stop, DurableStop::MaxSteps);
    assert_eq!(outcome.results.len(), 6);
}

/// `name` called with `arguments` once per step (as the model spells them, ids `<prefix>1`,
/// `<prefix>2`, …), then an answer.
fn repeating(prefix: &str, name: &str, arguments: &[Value]) -> Vec<Vec<u8>> {
    let mut steps: Vec<Vec<u8>> = arguments
        .iter()
        .enumerate()
        .map(|(n, arguments)| calls(&[(&format!("{prefix}{}", n + 1), name, arguments.clone())]))
        .collect();
    steps.push(answer("Giving up."));
    steps
}

fn codes(outcome: &DurableOutcome) -> Vec<Option<u16>> {
    outcome
        .results
        .iter()
        .map(|result| result.outcome.as_ref().err().map(|e| e.code().as_u16()))
        .collect()
}

#[tokio::test]
async fn a_call_failing_again_step_after_step_gets_1015_as_in_process() {
    // The same arguments, however the model spells them (`1`, `1.0`, keys in another order).
    let spellings = [
        json!({"q": 1, "r": "x"}),
        json!({"r": "x", "q": 1.0}),
        json!({"q": 1, "r": "x"}),
        json!({"q": 1, "r": "x"}),
    ];
    let engine = InMemory::new(repeating("m", "dur_missing", &spellings));
    let durable = run(&engine, &DurableOptions::default()).await;

    let session = runtime()
        .create_session(SessionOptions::enabled(TOOLS))
        .unwrap();
    session.push_user_message("go");
    let agent = session.run_agent(
        Arc::new(ReplayClient::new(
            WireFormat::OpenAiChat,
            repeating("m", "dur_missing", &spellings),
        )),
        AgentOptions::default(),
    );
    let in_process = agent.finish().await;
    let in_process: Vec<_> = in_process
        .steps
        .iter()
        .flat_map(|s| s.results.clone())
        .collect();

    assert_eq!(
        codes(&durable),
        [Some(1003), Some(1003), Some(1003), Some(1015)]
    );
    assert_eq!(durable.results, in_process);
    assert_eq!(durable.final_text.as_deref(), Some("Giving up."));
    exactly_once(&durable, &engine.events.borrow());

    // A call whose worker keeps dying counts too: the fourth try is refused, not run.
    let entry = json!({"entry": "e"});
    let mut engine = InMemory::new(repeating(
        "w",
        "write_durable",
        &[entry.clone(), entry.clone(), entry.clone(), entry],
    ));
    engine.lost = vec!["w1", "w2", "w3"];
    let outcome = run(&engine, &DurableOptions::default()).await;
    assert_eq!(
        codes(&outcome),
        [Some(1018), Some(1018), Some(1018), Some(1015)]
    );
    // Other arguments are another call.
    let engine = InMemory::new(repeating(
        "o",
        "dur_missing",
        &[
            json!({"q": 1}),
            json!({"q": 2}),
            json!({"q": 3}),
            json!({"q": 4}),
        ],
    ));
    let outcome = run(&engine, &DurableOptions::default()).await;
    assert_eq!(codes(&outcome), [Some(1003); 4]);
}

#[test]
fn what_crosses_the_seam_round_trips_as_json() {
    let planned = pleach_core::durable::PlannedCall::new(
        pleach_core::ToolCall::new("c1", "lookup_durable", r#"{"key":"k"}"#),
        pleach_core::Lane::Chunked { group: "g".into() },
        true,
    );
    let text = serde_json::to_string(&planned).unwrap();
    assert_eq!(
        serde_json::from_str::<pleach_core::durable::PlannedCall>(&text).unwrap(),
        planned
    );
    let outcome = CallOutcome::unknown(
        pleach_core::ToolCall::new("c1", "write_durable", "{}"),
        "lost",
    );
    let text = serde_json::to_string(&outcome).unwrap();
    let back: CallOutcome = serde_json::from_str(&text).unwrap();
    let CallOutcome::Finished { result, .. } = back else {
        panic!("{text}")
    };
    assert_eq!(result.outcome.unwrap_err().code().as_u16(), 1018);
}

#[test]
fn idempotency_is_declared_per_tool_the_runtime_over_a_plugin() {
    use pleach_core::PleachPlugin;
    let runtime = Runtime::builder().build().unwrap();
    assert_eq!(runtime.is_idempotent("lookup_durable"), Some(true)); // a read
    assert_eq!(runtime.is_idempotent("write_durable"), Some(false)); // a write
    let plugin = || PleachPlugin::new("ledger").idempotent("write_durable", true);
    let declared = Runtime::builder().plugin(plugin()).build().unwrap();
    assert_eq!(declared.is_idempotent("write_durable"), Some(true));
    let overridden = Runtime::builder()
        .plugin(plugin())
        .idempotent("write_durable", false)
        .build()
        .unwrap();
    assert_eq!(overridden.is_idempotent("write_durable"), Some(false));
    let unknown = Runtime::builder().idempotent("write_durabel", true).build();
    assert!(unknown.unwrap_err().to_string().contains("write_durabel"));
}
