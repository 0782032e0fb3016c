//! What a client reads from a conversation's history, with no worker running: the decisions
//! sent that no worker has applied yet, the approvals whose expiry has fired, why the last
//! activity that failed for good failed.
//!
//! The memo says what the workflow knew when a worker last ran it; the history says what
//! happened since. A decision is applied once a workflow task completed after it (Temporal
//! writes a signal that arrives during a workflow task after that task's completion); an
//! approval expired once the timer the workflow started for it (its summary naming the
//! interrupt, [`expiry_summary`](crate::expiry_summary)) fired.

use std::collections::HashMap;

use pleach_core::safety::Decision;
use temporalio_common::protos::temporal::api::common::v1::Payload;
use temporalio_common::protos::temporal::api::failure::v1::Failure;
use temporalio_common::protos::temporal::api::history::v1::HistoryEvent;
use temporalio_common::protos::temporal::api::history::v1::history_event::Attributes;

use crate::workflow::DECIDE_SIGNAL;

/// What the history says beyond the memo.
#[derive(Debug, Default)]
pub(crate) struct Since {
    /// Decisions sent that no workflow task has seen yet, oldest first.
    pub(crate) unapplied: Vec<Decision>,
    /// The interrupts whose expiry timer fired, in the order they fired.
    pub(crate) expired: Vec<String>,
    /// Why the last model step or call that failed for good failed: its root cause.
    pub(crate) last_failure: Option<String>,
}

impl Since {
    /// Reads `events`, a conversation's history from its start.
    pub(crate) fn read(events: &[HistoryEvent]) -> Self {
        let mut since = Since::default();
        // The decisions sent since the last completed workflow task.
        let mut sent: Vec<Decision> = Vec::new();
        // Timers by the id of the event that started them: the interrupt each expires.
        let mut timers: HashMap<i64, String> = HashMap::new();
        for event in events {
            match &event.attributes {
                Some(Attributes::WorkflowTaskCompletedEventAttributes(_)) => sent.clear(),
                Some(Attributes::WorkflowExecutionSignaledEventAttributes(signal))
                    if signal.signal_name == DECIDE_SIGNAL =>
                {
                    let decision = signal
                        .input
                        .as_ref()
                        .and_then(|input| input.payloads.first())
                        .and_then(|payload| serde_json::from_slice(&payload.data).ok());
                    sent.extend(decision);
                }
                Some(Attributes::TimerStartedEventAttributes(_)) => {
                    let summary = event
                        .user_metadata
                        .as_ref()
                        .and_then(|metadata| metadata.summary.as_ref())
                        .and_then(text);
                    if let Some(id) = summary
                        .as_deref()
                        .and_then(|summary| summary.strip_prefix("pleach.expiry "))
                    {
                        timers.insert(event.event_id, id.to_owned());
                    }
                }
                Some(Attributes::TimerFiredEventAttributes(fired)) => {
                    since.expired.extend(timers.remove(&fired.started_event_id));
                }
                Some(Attributes::ActivityTaskFailedEventAttributes(failed)) => {
                    since.last_failure = failed.failure.as_ref().map(root_cause);
                }
                Some(Attributes::ActivityTaskTimedOutEventAttributes(timed_out)) => {
                    since.last_failure = timed_out.failure.as_ref().map(root_cause);
                }
                _ => {}
            }
        }
        since.unapplied = sent;
        since
    }
}

/// A failure in the words of its root cause, not of Temporal's wrapping of it.
fn root_cause(mut failure: &Failure) -> String {
    while let Some(inner) = failure.cause.as_deref() {
        failure = inner;
    }
    failure.message.clone()
}

/// A payload's text: a JSON string, or the bytes as UTF-8.
fn text(payload: &Payload) -> Option<String> {
    serde_json::from_slice::<String>(&payload.data)
        .ok()
        .or_else(|| String::from_utf8(payload.data.clone()).ok())
}

#[cfg(test)]
mod tests {
    use pleach_core::safety::Action;
    use temporalio_common::protos::temporal::api::common::v1::Payloads;
    use temporalio_common::protos::temporal::api::history::v1::{
        TimerFiredEventAttributes, TimerStartedEventAttributes,
        WorkflowExecutionSignaledEventAttributes, WorkflowTaskCompletedEventAttributes,
    };
    use temporalio_common::protos::temporal::api::sdk::v1::UserMetadata;

    use super::*;
    use crate::expiry_summary;

    fn event(event_id: i64, attributes: Attributes) -> HistoryEvent {
        HistoryEvent {
            event_id,
            attributes: Some(attributes),
            ..HistoryEvent::default()
        }
    }

    fn payload(value: &impl serde::Serialize) -> Payload {
        Payload {
            data: serde_json::to_vec(value).unwrap(),
            ..Payload::default()
        }
    }

    fn decided(event_id: i64, interrupt: &str, action: Action) -> HistoryEvent {
        let decision = Decision {
            interrupt_id: interrupt.into(),
            fingerprint: "f".into(),
            action,
        };
        event(
            event_id,
            Attributes::WorkflowExecutionSignaledEventAttributes(
                WorkflowExecutionSignaledEventAttributes {
                    signal_name: DECIDE_SIGNAL.into(),
                    input: Some(Payloads {
                        payloads: vec![payload(&decision)],
                    }),
                    ..Default::default()
                },
            ),
        )
    }

    fn task_completed(event_id: i64) -> HistoryEvent {
        event(
            event_id,
            Attributes::WorkflowTaskCompletedEventAttributes(
                WorkflowTaskCompletedEventAttributes::default(),
            ),
        )
    }

    #[test]
    fn a_decision_is_unapplied_until_a_workflow_task_completes_after_it() {
        let seen = [decided(5, "i1", Action::Accept), task_completed(8)];
        assert!(Since::read(&seen).unapplied.is_empty());
        let unseen = [
            task_completed(4),
            decided(5, "i1", Action::Accept),
            decided(
                6,
                "i1",
                Action::Reject {
                    reason: "no".into(),
                },
            ),
        ];
        let since = Since::read(&unseen);
        assert_eq!(since.unapplied.len(), 2);
        assert_eq!(since.unapplied[0].action, Action::Accept);
    }

    #[test]
    fn an_expiry_fired_is_found_by_its_timers_summary() {
        let mut started = event(
            5,
            Attributes::TimerStartedEventAttributes(TimerStartedEventAttributes::default()),
        );
        started.user_metadata = Some(UserMetadata {
            summary: Some(payload(&expiry_summary("i1"))),
            details: None,
        });
        let fired = event(
            9,
            Attributes::TimerFiredEventAttributes(TimerFiredEventAttributes {
                started_event_id: 5,
                ..Default::default()
            }),
        );
        assert!(
            Since::read(std::slice::from_ref(&started))
                .expired
                .is_empty()
        );
        assert_eq!(Since::read(&[started, fired]).expired, ["i1"]);
    }
}
