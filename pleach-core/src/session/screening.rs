//! The safety stage of the pipeline (`docs/safety.md`): the detectors covering a call's tool
//! inspect its arguments against the turn's provenance, and the findings route the call by the
//! tool's tier — a hard halt, an approval interrupt, or a probe.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, PoisonError};

use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::{SessionInner, SessionTool, cancelled_error};
use crate::call::ToolCall;
use crate::error::{ErrorCode, ToolError};
use crate::event::{EventSender, ToolEvent};
use crate::safety::{Action, Decision, DecisionError, Finding, GroundTruth, Interrupt, Provenance};
use crate::tier::SafetyTier;
use crate::tool::ToolDefinition;

/// How many known values a ground-truth panel shows per finding.
const GROUND_TRUTH_VALUES: usize = 3;

/// The interrupts of a session waiting for a decision, by id.
#[derive(Debug, Default)]
pub(super) struct Approvals {
    pending: HashMap<String, Pending>,
    /// Interrupts answered here, by `resolve` or by resuming their seal: each is answered once.
    answered: std::collections::HashSet<String>,
}

/// A new interrupt id, unique across sessions and processes: a random prefix drawn once per
/// process, and a count. A host that keeps the ids it resumed (a sealed interrupt resumes once)
/// can rely on one id meaning one interrupt.
fn next_interrupt_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static PREFIX: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    static COUNT: AtomicU64 = AtomicU64::new(0);
    // `RandomState` is seeded from the OS's randomness: reused here as a source of one number.
    let prefix = PREFIX.get_or_init(|| std::hash::RandomState::new().build_hasher().finish());
    let count = COUNT.fetch_add(1, Ordering::Relaxed) + 1;
    format!("int-{prefix:016x}-{count}")
}

#[derive(Debug)]
struct Pending {
    fingerprint: String,
    definition: ToolDefinition,
    reply: oneshot::Sender<Action>,
}

impl SessionInner {
    pub(super) fn approvals(&self) -> std::sync::MutexGuard<'_, Approvals> {
        self.approvals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn provenance(&self) -> std::sync::MutexGuard<'_, Provenance> {
        self.provenance
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether any detector is registered: without one there is nothing to record or inspect.
    pub(super) fn screens(&self) -> bool {
        !self.runtime.safety.detectors.is_empty()
    }

    /// The safety stage: `Ok` with the call to run (the user's edit of it, after an approval
    /// with edits), or the error that ends it (1012 halt, 1013 rejection, 1011 cancelled).
    /// `approved` is a decision made beforehand (a resumed interrupt): the detectors do not run
    /// again.
    pub(super) async fn screen(
        &self,
        call: &ToolCall,
        tool: &SessionTool,
        sink: &EventSender,
        turn_signal: &CancellationToken,
        approved: Option<Action>,
    ) -> Result<ToolCall, ToolError> {
        if let Some(action) = approved {
            return apply(call, action);
        }
        let findings = match self.inspect(call, tool) {
            Ok(findings) if findings.is_empty() => return Ok(call.clone()),
            Ok(findings) => findings,
            Err(invalid) => return Err(invalid),
        };
        match tool.tool.safety_tier().unwrap_or(SafetyTier::Standard) {
            SafetyTier::Critical => Err(ToolError::new(
                ErrorCode::SafetyHalt,
                format!(
                    "the operator's safety policy halted this call before it ran: {}; use only \
                     values that earlier tool results or the user provided",
                    describe(&findings)
                ),
            )
            .with_recoverable(false)),
            SafetyTier::Advisory => {
                sink.send(ToolEvent::SafetyProbe {
                    tool_call: call.clone(),
                    findings,
                });
                Ok(call.clone())
            }
            tier @ SafetyTier::Standard => {
                self.interrupt(call, tool, tier, findings, sink, turn_signal)
                    .await
            }
        }
    }

    /// Runs every detector covering the call's tool. The arguments are validated first: a
    /// detector only ever sees arguments valid for the tool.
    fn inspect(&self, call: &ToolCall, tool: &SessionTool) -> Result<Vec<Finding>, ToolError> {
        let mut detectors = self.runtime.safety.detectors_for(call.name()).peekable();
        if detectors.peek().is_none() {
            return Ok(Vec::new());
        }
        let arguments = tool
            .tool
            .definition()
            .parse_and_validate(call.arguments())?;
        let provenance = self.provenance();
        let mut findings = Vec::new();
        for detector in detectors {
            let inspected = std::panic::catch_unwind(AssertUnwindSafe(|| {
                detector.inspect(call, &arguments, &provenance)
            }));
            match inspected {
                Ok(found) => findings.extend(found),
                // Fail closed: a detector that cannot answer flags the call.
                Err(payload) => findings.push(Finding::new(
                    "",
                    Value::Null,
                    format!(
                        "the fabrication detector `{}` failed ({}), so this call could not be \
                         checked",
                        detector.name(),
                        super::pipeline::panic_message(payload.as_ref())
                    ),
                )),
            }
        }
        Ok(findings)
    }

    /// Raises an approval interrupt and waits for the host's decision.
    async fn interrupt(
        &self,
        call: &ToolCall,
        tool: &SessionTool,
        tier: SafetyTier,
        findings: Vec<Finding>,
        sink: &EventSender,
        turn_signal: &CancellationToken,
    ) -> Result<ToolCall, ToolError> {
        let takes_approvals = self
            .takes_approvals
            .load(std::sync::atomic::Ordering::Relaxed);
        if !sink.is_connected() || !takes_approvals {
            let detail = if takes_approvals {
                "dispatched without an event stream: nobody can answer the interrupt"
            } else {
                "this session's host cannot ask the user (an MCP client that cannot elicit)"
            };
            return Err(ToolError::new(
                ErrorCode::SafetyHalt,
                format!(
                    "this call needs the user's approval before it runs ({}), and this host \
                     cannot ask the user for it; do not retry it here: tell the user what you \
                     meant to do so they can do it or approve it another way",
                    describe(&findings)
                ),
            )
            .with_recoverable(false)
            .with_detail(detail));
        }
        let ground_truth = {
            let provenance = self.provenance();
            findings
                .iter()
                .map(|finding| GroundTruth {
                    path: finding.path.clone(),
                    nearest: provenance.nearest(&finding.value, GROUND_TRUTH_VALUES),
                })
                .collect()
        };
        let (reply, decided) = oneshot::channel();
        let interrupt = {
            let mut approvals = self.approvals();
            let interrupt = Arc::new(Interrupt::new(
                next_interrupt_id(),
                call.clone(),
                tier,
                findings,
                ground_truth,
            ));
            approvals.pending.insert(
                interrupt.id.clone(),
                Pending {
                    fingerprint: interrupt.fingerprint.clone(),
                    definition: tool.tool.definition().clone(),
                    reply,
                },
            );
            interrupt
        };
        sink.send(ToolEvent::InterruptRequested {
            interrupt: interrupt.clone(),
        });
        let recording = &self.runtime.config.recording;
        super::telemetry::awaiting_approval(recording, call.name(), 1);
        let decided = self
            .await_decision(&interrupt, tier, decided, sink, turn_signal)
            .await;
        super::telemetry::awaiting_approval(recording, call.name(), -1);
        let action = match decided {
            Ok(action) => action,
            Err(error) => {
                // Unanswered: a late decision finds nothing to answer.
                self.approvals().pending.remove(&interrupt.id);
                return Err(error);
            }
        };
        sink.send(ToolEvent::InterruptResolved {
            tool_call_id: Arc::from(call.id()),
            interrupt_id: interrupt.id.clone(),
            action: action.name(),
        });
        apply(call, action)
    }

    /// Waits for the decision on `interrupt` (within the approval timeout, while the turn runs
    /// and someone reads its events), in an `await_approval` span that records it.
    async fn await_decision(
        &self,
        interrupt: &Interrupt,
        tier: SafetyTier,
        decided: oneshot::Receiver<Action>,
        sink: &EventSender,
        turn_signal: &CancellationToken,
    ) -> Result<Action, ToolError> {
        let timeout = self.runtime.config.approval_timeout;
        let waiting = tracing::info_span!(
            target: "pleach::tool",
            "await_approval",
            pleach.interrupt.id = %interrupt.id,
            pleach.safety.tier = tier.as_str(),
            pleach.approval.decision = tracing::field::Empty,
        );
        let decided = async {
            tokio::select! {
                biased;
                () = turn_signal.cancelled() => Err(cancelled_error()),
                action = decided => action.map_err(|_| cancelled_error()),
                // The host dropped the turn's events (or finished the turn without reading them):
                // nobody saw the interrupt, so nobody can answer it.
                () = sink.reader_gone() => Err(ToolError::new(
                    ErrorCode::SafetyHalt,
                    format!(
                        "this call needs the user's approval ({}), and nobody is reading this \
                         turn's events to give it",
                        describe(&interrupt.findings)
                    ),
                )
                .with_recoverable(false)
                .with_detail("the turn's event stream was dropped while the interrupt waited")),
                () = tokio::time::sleep(timeout) => Err(approval_timed_out(interrupt, timeout)),
            }
        }
        .instrument(waiting.clone())
        .await;
        waiting.record(
            "pleach.approval.decision",
            match &decided {
                Ok(action) => action.name(),
                Err(error) if error.code() == ErrorCode::ApprovalTimedOut => "timed_out",
                Err(error) if error.code() == ErrorCode::Cancelled => "cancelled",
                Err(_) => "unanswered",
            },
        );
        decided
    }

    /// Answers a pending interrupt.
    pub(super) fn resolve(&self, decision: Decision) -> Result<(), DecisionError> {
        let mut approvals = self.approvals();
        let Some(pending) = approvals.pending.get(&decision.interrupt_id) else {
            return Err(DecisionError::UnknownInterrupt(decision.interrupt_id));
        };
        self.check_decision(&decision, &pending.fingerprint, Some(&pending.definition))?;
        approvals.answered.insert(decision.interrupt_id.clone());
        if let Some(pending) = approvals.pending.remove(&decision.interrupt_id) {
            // A call cancelled meanwhile has stopped listening; the decision has nothing left to do.
            let _ = pending.reply.send(decision.action);
        }
        Ok(())
    }

    /// Checks a decision against a sealed interrupt being resumed for `tool` (this session's,
    /// if it has one of that name), and marks it resumed.
    pub(super) fn accept_resumed(
        &self,
        interrupt: &Interrupt,
        decision: &Decision,
        tool: Option<&SessionTool>,
    ) -> Result<(), DecisionError> {
        // No accept or edit overrides a critical halt; a rejection runs nothing, so it may close
        // such an interrupt (the call fails with 1013).
        if !matches!(decision.action, Action::Reject { .. })
            && tool.is_some_and(|tool| tool.tool.safety_tier() == Some(SafetyTier::Critical))
        {
            return Err(DecisionError::CriticalTool {
                interrupt_id: interrupt.id.clone(),
                tool: interrupt.tool_call.name().to_owned(),
            });
        }
        if decision.interrupt_id != interrupt.id {
            return Err(DecisionError::UnknownInterrupt(
                decision.interrupt_id.clone(),
            ));
        }
        let definition = tool.map(|tool| tool.tool.definition());
        self.check_decision(decision, &interrupt.fingerprint, definition)?;
        let mut approvals = self.approvals();
        // Still waiting in this session's own turn: answered there (`resolve`), or the call
        // would run once from the seal and once more when that turn is answered.
        if approvals.pending.contains_key(&interrupt.id) {
            return Err(DecisionError::StillPending(interrupt.id.clone()));
        }
        if !approvals.answered.insert(interrupt.id.clone()) {
            return Err(DecisionError::AlreadyResolved(interrupt.id.clone()));
        }
        Ok(())
    }

    /// A decision applies to the fingerprint it was made for, and an edit must be valid
    /// arguments within the runtime's limits.
    fn check_decision(
        &self,
        decision: &Decision,
        fingerprint: &str,
        definition: Option<&ToolDefinition>,
    ) -> Result<(), DecisionError> {
        if decision.fingerprint != fingerprint {
            return Err(DecisionError::FingerprintMismatch {
                interrupt_id: decision.interrupt_id.clone(),
                decided: decision.fingerprint.clone(),
                pending: fingerprint.to_owned(),
            });
        }
        if let Action::Edit { arguments } = &decision.action
            && let Some(over) = super::limits::limits_verdict(arguments, self.runtime.config.limits)
        {
            // Refused here, to the host, rather than failing the call with a 1006 that tells the
            // model to send less data for what the user typed.
            return Err(DecisionError::InvalidEdit(over));
        }
        if let (Action::Edit { arguments }, Some(definition)) = (&decision.action, definition) {
            let verdict = definition.validate_arguments(arguments);
            if !verdict.valid {
                return Err(DecisionError::InvalidEdit(verdict));
            }
        }
        Ok(())
    }
}

/// The call to run after a decision, or the rejection.
fn apply(call: &ToolCall, action: Action) -> Result<ToolCall, ToolError> {
    match action {
        Action::Accept => Ok(call.clone()),
        Action::Edit { arguments } => Ok(call.with_arguments(arguments)),
        Action::Reject { reason } => Err(ToolError::new(
            ErrorCode::RejectedByUser,
            format!("the user rejected this call: {reason}"),
        )),
    }
}

/// `"/path: reason; /other: reason"`.
fn describe(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(|finding| {
            if finding.path.is_empty() {
                finding.reason.clone()
            } else {
                format!("{}: {}", finding.path, finding.reason)
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// 1016: no decision came within the runtime's approval timeout.
fn approval_timed_out(interrupt: &Interrupt, timeout: std::time::Duration) -> ToolError {
    ToolError::new(
        ErrorCode::ApprovalTimedOut,
        format!(
            "this call needs the user's approval before it runs ({}), and no decision came \
             within {}; it did not run",
            describe(&interrupt.findings),
            super::pipeline::human(timeout)
        ),
    )
    .with_detail(format!(
        "interrupt `{}` expired unanswered (RuntimeBuilder::approval_timeout)",
        interrupt.id
    ))
}
