//! Safety tiers, detectors, provenance and approval interrupts, as `docs/safety.md` specifies
//! them: every tier with and without a finding, accept / edit / reject, an invalid edit, a
//! decision for another call, sealed interrupts resumed in a fresh runtime, a tampered seal, and
//! the critical-coverage invariant.

use std::sync::{Arc, Mutex, PoisonError};

use pleach_core::safety::{
    Action, ApprovalRequired, DecisionError, FabricationDetector, Finding, Interrupt, Provenance,
    ProvenanceDetector, SealError, assert_critical_coverage, uncovered_critical_tools,
};
use pleach_core::{
    BatchingHint, BatchingStrategy, ErrorCode, Message, Runtime, RuntimeBuilder, RuntimeError,
    SafetyTier, Session, SessionOptions, ToolCall, ToolEvent, ToolResult, Turn, tool,
    tool_registry, unified_tool,
};
use serde_json::{Value, json};

/// The accounts `sf_close_account` closed. Other tests of this binary close accounts at the same
/// time, so a test asks about its own account, not how many closes there were.
static CLOSED: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn closed(account_id: &str) -> bool {
    CLOSED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .any(|closed| closed == account_id)
}

/// Lists the accounts the user may use.
#[tool]
async fn sf_list_accounts() -> Value {
    json!([{ "id": "ACC-0042", "owner": "Ada" }, { "id": "ACC-7000", "owner": "Alan" }])
}

/// Closes an account: cannot be undone.
#[unified_tool(safety_tier = "critical")]
async fn sf_close_account(account_id: String) -> String {
    CLOSED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(account_id.clone());
    format!("closed {account_id}")
}

/// Sends money to an account.
#[unified_tool(safety_tier = "standard")]
async fn sf_pay(to_account: String, amount: u32) -> String {
    format!("sent {amount} to {to_account}")
}

/// Looks up an account's statement.
#[unified_tool(safety_tier = "advisory")]
async fn sf_statement(account_id: String) -> String {
    format!("statement of {account_id}")
}

/// Flags an account (no tier: guarded, so standard).
#[tool]
async fn sf_flag(account_id: String) -> String {
    format!("flagged {account_id}")
}

/// Echoes an account id (no detector guards it).
#[unified_tool(safety_tier = "standard")]
async fn sf_echo(account_id: String) -> String {
    account_id
}

const KEY: &[u8] = b"test interrupt key";

fn detector() -> ProvenanceDetector {
    ProvenanceDetector::new()
        .guard("sf_close_account", ["/account_id"])
        .guard("sf_pay", ["/to_account"])
        .guard("sf_statement", ["/account_id"])
        .guard("sf_flag", ["/account_id"])
}

fn runtime() -> Runtime {
    builder().build().expect("runtime")
}

fn builder() -> RuntimeBuilder {
    // Payments and echoes may run side by side (inferred, both would be serial): a call waiting
    // for approval then holds back no other.
    let hints = pleach_core::PleachPlugin::new("hints").batching_hints([
        BatchingHint::new("sf_pay", BatchingStrategy::Parallel),
        BatchingHint::new("sf_echo", BatchingStrategy::Parallel),
    ]);
    Runtime::builder()
        .detector(detector())
        .interrupt_key(KEY)
        .plugin(hints)
}

fn session(runtime: &Runtime) -> Session {
    runtime
        .create_session(SessionOptions::all())
        .expect("session")
}

/// A session whose turn has already listed the accounts: `ACC-0042` and `ACC-7000` are known.
async fn session_with_accounts(runtime: &Runtime) -> Session {
    let session = session(runtime);
    session.push_user_message("pay Ada");
    let results = session
        .run_turn(vec![ToolCall::new("c0", "sf_list_accounts", "{}")])
        .finish()
        .await;
    assert!(results[0].outcome.is_ok());
    session
}

/// Runs one call; answers any interrupt with `answer` and returns the events and the result.
async fn run_one(
    session: &Session,
    call: ToolCall,
    answer: impl Fn(&Interrupt) -> Option<pleach_core::safety::Decision>,
) -> (Vec<ToolEvent>, ToolResult) {
    let mut turn = session.run_turn(vec![call]);
    let mut events = Vec::new();
    while let Some(event) = turn.events().recv().await {
        if let ToolEvent::InterruptRequested { interrupt } = &event {
            if let Some(decision) = answer(interrupt) {
                session.resolve(decision).expect("decision accepted");
            } else {
                turn.cancel();
            }
        }
        events.push(event);
    }
    let mut results = turn.finish().await;
    (events, results.remove(0))
}

fn types(events: &[ToolEvent]) -> Vec<&'static str> {
    events.iter().map(ToolEvent::event_type).collect()
}

fn code(result: &ToolResult) -> Option<ErrorCode> {
    result
        .outcome
        .as_ref()
        .err()
        .map(pleach_core::ToolError::code)
}

fn no_answer(_: &Interrupt) -> Option<pleach_core::safety::Decision> {
    panic!("no interrupt expected")
}

#[tokio::test]
async fn critical_with_a_finding_halts_before_the_tool_runs() {
    let runtime = runtime();
    let session = session_with_accounts(&runtime).await;
    let (events, result) = run_one(
        &session,
        ToolCall::new("c1", "sf_close_account", r#"{"account_id":"ACC-9999"}"#),
        no_answer,
    )
    .await;
    assert_eq!(types(&events), ["tool.started", "tool.failed"]);
    let error = result.outcome.expect_err("halted");
    assert_eq!(error.code(), ErrorCode::SafetyHalt);
    assert!(
        !error.is_recoverable(),
        "a halt is not for the model to retry"
    );
    assert!(
        error.message().contains("/account_id"),
        "{}",
        error.message()
    );
    assert!(!closed("ACC-9999"), "the tool never ran");
    let wire: Value = serde_json::from_str(&events[1].to_json()).unwrap();
    assert_eq!(wire["error"]["code"], 1012);
    assert_eq!(wire["error"]["_recoverable"], false);
}

#[tokio::test]
async fn critical_without_a_finding_runs() {
    let runtime = runtime();
    let session = session_with_accounts(&runtime).await;
    let (events, result) = run_one(
        &session,
        ToolCall::new("c1", "sf_close_account", r#"{"account_id":"ACC-0042"}"#),
        no_answer,
    )
    .await;
    assert_eq!(types(&events), ["tool.started", "tool.completed"]);
    assert_eq!(result.outcome, Ok(json!("closed ACC-0042").into()));
}

#[tokio::test]
async fn provenance_is_per_user_turn() {
    let runtime = runtime();
    let session = session_with_accounts(&runtime).await;
    session.push_user_message("now close it");
    let (_, result) = run_one(
        &session,
        ToolCall::new("c1", "sf_close_account", r#"{"account_id":"ACC-0042"}"#),
        no_answer,
    )
    .await;
    assert_eq!(
        code(&result),
        Some(ErrorCode::SafetyHalt),
        "a new turn starts empty"
    );
}

#[tokio::test]
async fn user_messages_count_when_configured() {
    let runtime = builder()
        .provenance_includes_user_messages(true)
        .build()
        .unwrap();
    let session = session(&runtime);
    session.push_user_message("close account acc-5555 please");
    let (_, result) = run_one(
        &session,
        ToolCall::new("c1", "sf_close_account", r#"{"account_id":"ACC-5555"}"#),
        no_answer,
    )
    .await;
    assert_eq!(
        result.outcome,
        Ok(json!("closed ACC-5555").into()),
        "normalized match"
    );
}

#[tokio::test]
async fn standard_with_a_finding_waits_and_accept_runs_it_as_is() {
    let runtime = runtime();
    let session = session_with_accounts(&runtime).await;
    let (events, result) = run_one(
        &session,
        ToolCall::new("c1", "sf_pay", r#"{"to_account":"ACC-0043","amount":5}"#),
        |interrupt| {
            assert_eq!(interrupt.tier, SafetyTier::Standard);
            assert_eq!(interrupt.findings[0].path, "/to_account");
            assert_eq!(interrupt.findings[0].value, json!("ACC-0043"));
            // The ground-truth panel puts the nearest known account first.
            assert_eq!(
                interrupt.ground_truth[0].nearest[0].value,
                json!("ACC-0042")
            );
            Some(interrupt.accept())
        },
    )
    .await;
    assert_eq!(
        types(&events),
        [
            "tool.started",
            "interrupt.requested",
            "interrupt.resolved",
            "tool.completed"
        ]
    );
    assert_eq!(result.outcome, Ok(json!("sent 5 to ACC-0043").into()));
    let wire: Value = serde_json::from_str(&events[1].to_json()).unwrap();
    assert_eq!(wire["toolCallId"], "c1");
    assert_eq!(wire["interrupt"]["findings"][0]["path"], "/to_account");
}

#[tokio::test]
async fn standard_without_a_finding_runs_without_asking() {
    let runtime = runtime();
    let session = session_with_accounts(&runtime).await;
    let (events, result) = run_one(
        &session,
        ToolCall::new("c1", "sf_pay", r#"{"to_account":"ACC-7000","amount":5}"#),
        no_answer,
    )
    .await;
    assert_eq!(types(&events), ["tool.started", "tool.completed"]);
    assert!(result.outcome.is_ok());
}

#[tokio::test]
async fn an_edit_runs_the_new_arguments_and_the_history_says_so() {
    let runtime = runtime();
    let session = session_with_accounts(&runtime).await;
    let (events, result) = run_one(
        &session,
        ToolCall::new("c1", "sf_pay", r#"{"to_account":"ACC-0043","amount":5}"#),
        |interrupt| Some(interrupt.edit(r#"{"to_account":"ACC-0042","amount":5}"#)),
    )
    .await;
    assert_eq!(result.outcome, Ok(json!("sent 5 to ACC-0042").into()));
    assert_eq!(
        result.tool_call.arguments(),
        r#"{"to_account":"ACC-0042","amount":5}"#
    );
    let wire: Value = serde_json::from_str(&events.last().unwrap().to_json()).unwrap();
    assert_eq!(wire["toolCall"]["args"]["to_account"], "ACC-0042");
    let conversation = session.conversation();
    // The model's own call stays as it said it; the result records the edit.
    let Message::Assistant { tool_calls, .. } = &conversation[conversation.len() - 2] else {
        panic!("assistant message expected");
    };
    assert!(tool_calls[0].arguments().contains("ACC-0043"));
    let Message::Tool {
        content,
        edited_arguments,
        is_error,
        ..
    } = conversation.last().unwrap()
    else {
        panic!("tool message expected");
    };
    assert!(!is_error);
    assert!(edited_arguments.as_deref().unwrap().contains("ACC-0042"));
    assert!(
        content.contains("The user edited the arguments"),
        "{content}"
    );
}

#[tokio::test]
async fn an_invalid_edit_is_refused_and_the_interrupt_stays_pending() {
    let runtime = runtime();
    let session = session_with_accounts(&runtime).await;
    let mut turn = session.run_turn(vec![ToolCall::new(
        "c1",
        "sf_pay",
        r#"{"to_account":"ACC-0043","amount":5}"#,
    )]);
    let mut outcome = None;
    while let Some(event) = turn.events().recv().await {
        if let ToolEvent::InterruptRequested { interrupt } = &event {
            let refused = session
                .resolve(interrupt.edit(r#"{"to_account":"ACC-0042","amount":-1}"#))
                .expect_err("amount must be a u32");
            let DecisionError::InvalidEdit(verdict) = &refused else {
                panic!("{refused:?}");
            };
            assert_eq!(verdict.errors[0].path, "/amount");
            let not_json = session
                .resolve(interrupt.edit("{nope"))
                .expect_err("not JSON");
            assert!(matches!(not_json, DecisionError::InvalidEdit(_)));
            // An edit past the runtime's limits is refused to the host, not run into a 1006.
            let deep = format!(
                r#"{{"to_account":"ACC-0042","amount":5,"x":{}{}}}"#,
                "[".repeat(100),
                "]".repeat(100)
            );
            let too_deep = session
                .resolve(interrupt.edit(&deep))
                .expect_err("over the depth limit");
            let DecisionError::InvalidEdit(verdict) = &too_deep else {
                panic!("{too_deep:?}");
            };
            assert_eq!(verdict.errors[0].keyword, "limits", "{verdict:?}");
            // Still pending: a valid answer goes through.
            session.resolve(interrupt.reject("wrong payee")).unwrap();
            outcome = Some(());
        }
    }
    assert!(outcome.is_some());
    let results = turn.finish().await;
    let error = results[0].outcome.as_ref().expect_err("rejected");
    assert_eq!(error.code(), ErrorCode::RejectedByUser);
}

#[tokio::test]
async fn a_rejection_reaches_the_model_with_the_reason_never_as_success() {
    let runtime = runtime();
    let session = session_with_accounts(&runtime).await;
    let (events, result) = run_one(
        &session,
        ToolCall::new("c1", "sf_pay", r#"{"to_account":"ACC-0043","amount":5}"#),
        |interrupt| Some(interrupt.reject("that is not Ada's account")),
    )
    .await;
    assert_eq!(types(&events).last(), Some(&"tool.failed"));
    let error = result.outcome.expect_err("rejected");
    assert_eq!(error.code(), ErrorCode::RejectedByUser);
    assert!(error.message().contains("that is not Ada's account"));
    let Message::Tool {
        content, is_error, ..
    } = session.conversation().pop().unwrap()
    else {
        panic!("tool message expected");
    };
    assert!(is_error);
    assert!(content.starts_with("error 1013:"), "{content}");
}

#[tokio::test]
async fn a_decision_for_another_call_is_refused() {
    let runtime = runtime();
    let session = session_with_accounts(&runtime).await;
    let mut turn = session.run_turn(vec![
        ToolCall::new("c1", "sf_pay", r#"{"to_account":"ACC-0043","amount":5}"#),
        ToolCall::new("c2", "sf_pay", r#"{"to_account":"ACC-0044","amount":500}"#),
    ]);
    let mut interrupts: Vec<Arc<Interrupt>> = Vec::new();
    while let Some(event) = turn.events().recv().await {
        if let ToolEvent::InterruptRequested { interrupt } = &event {
            interrupts.push(interrupt.clone());
            if interrupts.len() == 2 {
                let (small, large) = (&interrupts[0], &interrupts[1]);
                // The approval of one call cannot be replayed onto the other.
                let mut replayed = small.accept();
                replayed.interrupt_id.clone_from(&large.id);
                let refused = session.resolve(replayed).expect_err("another fingerprint");
                assert!(
                    matches!(refused, DecisionError::FingerprintMismatch { .. }),
                    "{refused:?}"
                );
                session.resolve(small.accept()).unwrap();
                session.resolve(large.reject("too much")).unwrap();
                assert!(matches!(
                    session.resolve(large.accept()),
                    Err(DecisionError::UnknownInterrupt(_))
                ));
            }
        }
    }
    let results = turn.finish().await;
    assert!(results[0].outcome.is_ok());
    assert_eq!(code(&results[1]), Some(ErrorCode::RejectedByUser));
}

#[tokio::test]
async fn other_calls_go_on_while_one_waits() {
    let runtime = runtime();
    let session = session_with_accounts(&runtime).await;
    let mut turn = session.run_turn(vec![
        ToolCall::new("c1", "sf_pay", r#"{"to_account":"ACC-0043","amount":5}"#),
        ToolCall::new("c2", "sf_echo", r#"{"account_id":"anything"}"#),
    ]);
    let mut seen = Vec::new();
    while let Some(event) = turn.events().recv().await {
        seen.push((event.event_type(), event.tool_call_id().to_owned()));
        if let ToolEvent::InterruptRequested { interrupt } = &event {
            // Answer only once the other call has completed.
            while !seen.contains(&("tool.completed", "c2".to_owned())) {
                let next = turn.events().recv().await.expect("the echo completes");
                seen.push((next.event_type(), next.tool_call_id().to_owned()));
            }
            session.resolve(interrupt.accept()).unwrap();
        }
    }
    let results = turn.finish().await;
    assert!(results.iter().all(|r| r.outcome.is_ok()));
}

#[tokio::test]
async fn advisory_with_a_finding_probes_and_runs() {
    let runtime = runtime();
    let session = session_with_accounts(&runtime).await;
    let (events, result) = run_one(
        &session,
        ToolCall::new("c1", "sf_statement", r#"{"account_id":"ACC-1234"}"#),
        no_answer,
    )
    .await;
    assert_eq!(
        types(&events),
        ["tool.started", "safety.probe", "tool.completed"]
    );
    let ToolEvent::SafetyProbe { findings, .. } = &events[1] else {
        panic!("probe expected");
    };
    assert_eq!(findings[0].path, "/account_id");
    assert!(result.outcome.is_ok());
}

#[tokio::test]
async fn advisory_without_a_finding_is_silent() {
    let runtime = runtime();
    let session = session_with_accounts(&runtime).await;
    let (events, _) = run_one(
        &session,
        ToolCall::new("c1", "sf_statement", r#"{"account_id":"ACC-0042"}"#),
        no_answer,
    )
    .await;
    assert_eq!(types(&events), ["tool.started", "tool.completed"]);
}

#[tokio::test]
async fn a_guarded_tool_without_a_tier_is_standard_and_an_unguarded_one_is_never_inspected() {
    let runtime = runtime();
    let session = session_with_accounts(&runtime).await;
    let (events, _) = run_one(
        &session,
        ToolCall::new("c1", "sf_flag", r#"{"account_id":"ACC-1"}"#),
        |interrupt| {
            assert_eq!(interrupt.tier, SafetyTier::Standard);
            Some(interrupt.accept())
        },
    )
    .await;
    assert!(types(&events).contains(&"interrupt.requested"));
    let (events, result) = run_one(
        &session,
        ToolCall::new("c2", "sf_echo", r#"{"account_id":"made-up"}"#),
        no_answer,
    )
    .await;
    assert_eq!(types(&events), ["tool.started", "tool.completed"]);
    assert_eq!(result.outcome, Ok(json!("made-up").into()));
}

#[tokio::test]
async fn without_an_event_stream_nobody_can_approve_so_the_call_halts() {
    let runtime = runtime();
    let session = session_with_accounts(&runtime).await;
    let result = session
        .call(ToolCall::new(
            "c1",
            "sf_pay",
            r#"{"to_account":"ACC-0043","amount":5}"#,
        ))
        .await;
    assert_eq!(code(&result), Some(ErrorCode::SafetyHalt));
    let error = result.outcome.expect_err("halted");
    assert!(!error.is_recoverable());
    assert!(
        error.message().contains("needs the user's approval")
            && error.message().contains("/to_account"),
        "the message says approval is required, and for what: {}",
        error.message()
    );
}

#[tokio::test]
async fn approval_required_asks_before_every_call() {
    // `sf_echo` is standard and no value-based detector guards it: on its own it never asks.
    let runtime = builder()
        .detector(ApprovalRequired::tools(["sf_echo"]))
        .build()
        .expect("runtime");
    let session = session_with_accounts(&runtime).await;
    // A known value, an unknown one: both ask, and each decision holds.
    for (id, account, accept) in [("c1", "ACC-0042", true), ("c2", "made-up", false)] {
        let arguments = json!({ "account_id": account }).to_string();
        let (events, result) = run_one(&session, ToolCall::new(id, "sf_echo", arguments), |i| {
            assert_eq!(i.findings.len(), 1);
            assert!(
                i.findings[0].reason.contains("`sf_echo`"),
                "{:?}",
                i.findings
            );
            Some(if accept {
                i.accept()
            } else {
                i.reject("not now")
            })
        })
        .await;
        assert_eq!(
            types(&events),
            [
                "tool.started",
                "interrupt.requested",
                "interrupt.resolved",
                if accept {
                    "tool.completed"
                } else {
                    "tool.failed"
                }
            ]
        );
        if accept {
            assert_eq!(result.outcome, Ok(json!(account).into()));
        } else {
            assert_eq!(code(&result), Some(ErrorCode::RejectedByUser));
        }
    }
    // Advisory: a probe, and the call runs.
    let runtime = builder()
        .detector(ApprovalRequired::tools(["sf_statement"]))
        .build()
        .expect("runtime");
    let session = session_with_accounts(&runtime).await;
    let (events, result) = run_one(
        &session,
        ToolCall::new("c3", "sf_statement", r#"{"account_id":"ACC-0042"}"#),
        no_answer,
    )
    .await;
    assert_eq!(
        types(&events),
        ["tool.started", "safety.probe", "tool.completed"]
    );
    assert!(result.outcome.is_ok());
}

#[test]
fn a_detector_naming_an_unknown_tool_fails_build() {
    let err = builder()
        .detector(ApprovalRequired::tools(["sf_ech"]))
        .build()
        .expect_err("a typo must not leave sf_echo unguarded");
    assert!(
        matches!(&err, RuntimeError::UnknownToolInConfig { tool, .. } if tool == "sf_ech"),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("detector `approval-required`") && text.contains("sf_echo"),
        "names the detector and the likely tool: {text}"
    );
    let err = builder()
        .detector(ProvenanceDetector::new().guard("sf_pya", ["/to_account"]))
        .build()
        .expect_err("the provenance detector's names are checked too");
    assert!(err.to_string().contains("detector `provenance`"), "{err}");
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_approval_fails_with_1016_at_its_deadline() {
    let runtime = builder()
        .approval_timeout(std::time::Duration::from_secs(45))
        .build()
        .expect("runtime");
    let session = session_with_accounts(&runtime).await;
    let started = tokio::time::Instant::now();
    let (mut turn, interrupt) = flagged_payment(&session).await;
    let mut rest = Vec::new();
    while let Some(event) = turn.events().recv().await {
        rest.push(event);
    }
    assert_eq!(types(&rest), ["tool.failed"]);
    assert!(started.elapsed() >= std::time::Duration::from_secs(45));
    let result = turn.finish().await.remove(0);
    let error = result.outcome.expect_err("expired");
    assert_eq!(error.code(), ErrorCode::ApprovalTimedOut);
    assert!(!error.is_recoverable());
    assert!(
        error.message().contains("within 45 s"),
        "{}",
        error.message()
    );
    // The interrupt is gone: a late decision is refused, and nothing runs.
    assert!(matches!(
        session.resolve(interrupt.accept()),
        Err(DecisionError::UnknownInterrupt(_))
    ));
}

#[tokio::test]
async fn cancelling_a_turn_ends_a_waiting_interrupt() {
    let runtime = runtime();
    let session = session_with_accounts(&runtime).await;
    let (_, result) = run_one(
        &session,
        ToolCall::new("c1", "sf_pay", r#"{"to_account":"ACC-0043","amount":5}"#),
        |_| None,
    )
    .await;
    assert_eq!(code(&result), Some(ErrorCode::Cancelled));
}

/// Waits for the first interrupt of a turn, seals it, and drops the turn (the process "ends").
/// Starts a payment to an account no result named, and reads its events up to the interrupt.
async fn flagged_payment(session: &Session) -> (Turn, std::sync::Arc<Interrupt>) {
    let mut turn = session.run_turn(vec![ToolCall::new(
        "c9",
        "sf_pay",
        r#"{"to_account":"ACC-0043","amount":7}"#,
    )]);
    loop {
        let event = turn.events().recv().await.expect("an interrupt");
        if let ToolEvent::InterruptRequested { interrupt } = event {
            return (turn, interrupt);
        }
    }
}

async fn sealed_interrupt(runtime: &Runtime) -> (String, Interrupt) {
    let session = session_with_accounts(runtime).await;
    let (_turn, interrupt) = flagged_payment(&session).await;
    let sealed = session.seal(&interrupt).expect("a key is configured");
    (sealed, (*interrupt).clone())
}

#[tokio::test]
async fn a_sealed_interrupt_resumes_in_a_fresh_runtime() {
    let (sealed, interrupt) = sealed_interrupt(&runtime()).await;

    // Another process: a new runtime with the same key, a new session.
    let fresh = runtime();
    let session = session(&fresh);
    let mut turn = session
        .resume(
            &sealed,
            interrupt.edit(r#"{"to_account":"ACC-0042","amount":7}"#),
        )
        .expect("resumes");
    let mut kinds = Vec::new();
    while let Some(event) = turn.events().recv().await {
        kinds.push(event.event_type());
    }
    assert_eq!(
        kinds,
        ["tool.started", "interrupt.resolved", "tool.completed"]
    );
    let results = turn.finish().await;
    assert_eq!(results[0].outcome, Ok(json!("sent 7 to ACC-0042").into()));
    assert!(matches!(
        session.conversation().last(),
        Some(Message::Tool {
            edited_arguments: Some(_),
            ..
        })
    ));
    // Once only.
    assert!(matches!(
        session.resume(&sealed, interrupt.accept()),
        Err(DecisionError::AlreadyResolved(_))
    ));
}

#[tokio::test]
async fn a_resumed_rejection_fails_the_call() {
    let (sealed, interrupt) = sealed_interrupt(&runtime()).await;
    let session = session(&runtime());
    let results = session
        .resume(&sealed, interrupt.reject("no"))
        .unwrap()
        .finish()
        .await;
    assert_eq!(code(&results[0]), Some(ErrorCode::RejectedByUser));
}

#[tokio::test]
async fn a_tampered_or_foreign_seal_is_refused() {
    let (sealed, interrupt) = sealed_interrupt(&runtime()).await;
    let session = session(&runtime());

    // The arguments changed inside the sealed text.
    let mut outer: Value = serde_json::from_str(&sealed).unwrap();
    let body = outer["interrupt"]
        .as_str()
        .unwrap()
        .replace("\\\"amount\\\":7", "\\\"amount\\\":70000");
    assert!(body.contains("70000"), "{body}");
    outer["interrupt"] = Value::String(body);
    let refused = session
        .resume(&outer.to_string(), interrupt.accept())
        .expect_err("tampered");
    assert_eq!(refused, DecisionError::Seal(SealError::Tampered));

    // Sealed under another key.
    let foreign = interrupt.seal_with(b"someone else's key");
    assert_eq!(
        session.resume(&foreign, interrupt.accept()).unwrap_err(),
        DecisionError::Seal(SealError::Tampered)
    );

    // A decision for another call, on a genuine seal.
    let other = Interrupt::new(
        interrupt.id.clone(),
        ToolCall::new("c9", "sf_pay", r#"{"to_account":"ACC-0043","amount":8}"#),
        SafetyTier::Standard,
        Vec::new(),
        Vec::new(),
    );
    assert!(matches!(
        session.resume(&sealed, other.accept()),
        Err(DecisionError::FingerprintMismatch { .. })
    ));

    // No key, no resume.
    let keyless = Runtime::builder().detector(detector()).build().unwrap();
    assert_eq!(
        self::session(&keyless)
            .resume(&sealed, interrupt.accept())
            .unwrap_err(),
        DecisionError::Seal(SealError::NoKey)
    );
}

#[test]
fn an_uncovered_critical_tool_fails_build() {
    let err = Runtime::builder()
        .build()
        .expect_err("sf_close_account is uncovered");
    assert_eq!(
        err,
        RuntimeError::UncoveredCriticalTools(vec!["sf_close_account".to_owned()])
    );
    assert!(err.to_string().contains("`sf_close_account`"));
    // A detector for other tools does not help.
    let partial = ProvenanceDetector::new().guard("sf_pay", ["/to_account"]);
    assert!(Runtime::builder().detector(partial).build().is_err());
    // A plugin's detector does.
    let plugin = pleach_core::PleachPlugin::new("guards").detector(detector());
    assert!(Runtime::builder().plugin(plugin).build().is_ok());
}

#[test]
fn the_coverage_assertion_names_what_is_missing() {
    let registry = tool_registry();
    assert_eq!(
        uncovered_critical_tools(registry, &[]),
        ["sf_close_account"]
    );
    assert_critical_coverage(registry, &[&detector()]);
    let missing = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        assert_critical_coverage(registry, &[]);
    }))
    .expect_err("uncovered");
    let message = missing
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(message.contains("`sf_close_account`"), "{message}");
}

/// A detector that panics on every call.
struct Broken;

impl FabricationDetector for Broken {
    fn name(&self) -> &'static str {
        "broken"
    }
    fn covers(&self, tool_name: &str) -> bool {
        tool_name == "sf_close_account"
    }
    fn inspect(&self, _: &ToolCall, _: &Value, _: &Provenance) -> Vec<Finding> {
        panic!("detector bug")
    }
}

#[tokio::test]
async fn a_panicking_detector_fails_closed() {
    let runtime = Runtime::builder().detector(Broken).build().unwrap();
    let session = session_with_accounts(&runtime).await;
    let (_, result) = run_one(
        &session,
        ToolCall::new("c1", "sf_close_account", r#"{"account_id":"ACC-0042"}"#),
        no_answer,
    )
    .await;
    let error = result.outcome.expect_err("halted");
    assert_eq!(error.code(), ErrorCode::SafetyHalt);
    assert!(error.message().contains("`broken`"), "{}", error.message());
    // The session goes on.
    let (_, ok) = run_one(
        &session,
        ToolCall::new("c2", "sf_echo", r#"{"account_id":"x"}"#),
        no_answer,
    )
    .await;
    assert!(ok.outcome.is_ok());
}

#[tokio::test]
async fn invalid_arguments_to_a_guarded_tool_fail_validation_first() {
    let runtime = runtime();
    let session = session_with_accounts(&runtime).await;
    let (events, result) = run_one(
        &session,
        ToolCall::new("c1", "sf_pay", r#"{"to_account":"ACC-0043"}"#),
        no_answer,
    )
    .await;
    assert_eq!(types(&events), ["tool.started", "tool.failed"]);
    assert_eq!(code(&result), Some(ErrorCode::InputInvalid));
}

#[test]
fn tiers_map_to_mcp_annotations() {
    assert_eq!(
        SafetyTier::Critical.mcp_annotations()["destructiveHint"],
        true
    );
    assert_eq!(
        SafetyTier::Standard.mcp_annotations()["destructiveHint"],
        true
    );
    assert_eq!(
        SafetyTier::Advisory.mcp_annotations()["destructiveHint"],
        false
    );
    for tier in SafetyTier::ALL {
        assert_eq!(tier.mcp_annotations()["readOnlyHint"], false);
    }
    let _ = Action::Accept;
}

#[tokio::test]
async fn an_interrupt_is_answered_once_whether_resolved_or_resumed() {
    let runtime = runtime();
    let session = session_with_accounts(&runtime).await;
    let (mut turn, interrupt) = flagged_payment(&session).await;
    let sealed = session.seal(&interrupt).expect("a key is configured");
    // Still waiting in this session's turn: resuming the seal here would run the call twice.
    assert!(matches!(
        session.resume(&sealed, interrupt.accept()),
        Err(DecisionError::StillPending(_))
    ));
    session.resolve(interrupt.accept()).expect("answered here");
    // Answered: the seal no longer runs it in this session.
    assert!(matches!(
        session.resume(&sealed, interrupt.accept()),
        Err(DecisionError::AlreadyResolved(_))
    ));
    while turn.events().recv().await.is_some() {}
    let results = turn.finish().await;
    assert_eq!(results[0].outcome, Ok(json!("sent 7 to ACC-0043").into()));
    let payments = session
        .conversation()
        .iter()
        .filter(|m| matches!(m, Message::Tool { tool_call, .. } if tool_call.name() == "sf_pay"))
        .count();
    assert_eq!(payments, 1, "one payment, one result");
}

#[tokio::test]
async fn interrupt_ids_differ_across_sessions() {
    let runtime = runtime();
    let (_, first) = sealed_interrupt(&runtime).await;
    let (_, second) = sealed_interrupt(&runtime).await;
    assert_ne!(first.id, second.id);
}

#[tokio::test]
async fn finishing_a_turn_without_reading_its_events_halts_a_call_waiting_for_approval() {
    let runtime = runtime();
    let session = session_with_accounts(&runtime).await;
    let turn = session.run_turn(vec![ToolCall::new(
        "c9",
        "sf_pay",
        r#"{"to_account":"ACC-0043","amount":7}"#,
    )]);
    // Nobody reads the events, so nobody sees the interrupt: the call cannot be approved.
    let results = tokio::time::timeout(std::time::Duration::from_secs(10), turn.finish())
        .await
        .expect("finish does not wait for an answer nobody can give");
    assert_eq!(code(&results[0]), Some(ErrorCode::SafetyHalt));
}

/// A critical tool's halt is not the user's to override (`docs/safety.md`): an interrupt for it,
/// however it came to be sealed (before the tool became critical, or built by the host), does not
/// resume, and the tool does not run.
#[tokio::test]
async fn a_sealed_interrupt_for_a_critical_tool_does_not_resume() {
    let session = session(&runtime());
    let call = ToolCall::new("c5", "sf_close_account", r#"{"account_id":"ACC-9"}"#);
    let interrupt = Interrupt::new("int-critical", call, SafetyTier::Standard, vec![], vec![]);
    let sealed = session.seal(&interrupt).expect("a key is configured");
    let refused = session
        .resume(&sealed, interrupt.accept())
        .expect_err("a critical tool's halt cannot be overridden");
    assert_eq!(
        refused,
        DecisionError::CriticalTool {
            interrupt_id: "int-critical".to_owned(),
            tool: "sf_close_account".to_owned(),
        }
    );
    assert!(refused.to_string().contains("critical"), "{refused}");
    // No turn started: nothing ran, nothing was written back.
    assert!(session.conversation().is_empty());
    // A rejection runs nothing: it closes the interrupt.
    let results = session
        .resume(&sealed, interrupt.reject("no"))
        .expect("a rejection is taken")
        .finish()
        .await;
    assert_eq!(code(&results[0]), Some(ErrorCode::RejectedByUser));
    assert!(!closed("ACC-9"));
}

/// `interrupt.requested` carries its call in the events' `{ id, name, args }` form
/// (`docs/events.md`), like every `tool.*` event.
#[tokio::test]
async fn an_interrupt_event_carries_its_call_in_the_events_wire_form() {
    let session = session_with_accounts(&runtime()).await;
    let (_turn, interrupt) = flagged_payment(&session).await;
    let event = ToolEvent::InterruptRequested { interrupt };
    let wire: Value = serde_json::from_str(&event.to_json()).unwrap();
    assert_eq!(
        wire["interrupt"]["toolCall"],
        json!({ "id": "c9", "name": "sf_pay", "args": { "to_account": "ACC-0043", "amount": 7 } })
    );
    assert_eq!(wire["toolCallId"], "c9");
    assert_eq!(wire["interrupt"]["tier"], "standard");
    assert!(wire["interrupt"]["fingerprint"].is_string());
}
