//! What crosses the [`Engine`](super::Engine) seam: plain data, JSON both ways, so an engine can
//! record it in its history and hand it to a worker in another process.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::batch::Lane;
use crate::call::ToolCall;
use crate::conversation::Message;
use crate::error::{ErrorCode, ToolError};
use crate::safety::{Decision, Interrupt};
use crate::session::ToolResult;

/// One model step, read whole: the text, the calls with how each is scheduled, and the events
/// sent while the response was read (`tool.started` as each call was first seen, `tool.delta`
/// for its argument fragments).
///
/// ```
/// let step: pleach_core::durable::ModelStep = serde_json::from_str(r#"{ "text": "Paris." }"#).unwrap();
/// assert!(step.calls.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ModelStep {
    /// The model's text, if any.
    #[serde(default)]
    pub text: Option<String>,
    /// The calls, in the model's order.
    #[serde(default)]
    pub calls: Vec<PlannedCall>,
    /// The events sent while the response was read, as wire JSON.
    #[serde(default)]
    pub events: Vec<Value>,
    /// Why the response broke off, if it did: its calls still end, then the conversation stops.
    #[serde(default)]
    pub broke: Option<String>,
    /// The step's input tokens, when the provider reported them.
    #[serde(default)]
    pub input_tokens: Option<u64>,
    /// The step's output tokens, when the provider reported them.
    #[serde(default)]
    pub output_tokens: Option<u64>,
}

/// A call of a [`ModelStep`] and how it is run.
///
/// ```
/// use pleach_core::{Lane, ToolCall, durable::PlannedCall};
/// let planned = PlannedCall::new(ToolCall::new("c1", "math", "{}"), Lane::Serial, false);
/// assert!(planned.failed.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PlannedCall {
    /// The call as the model made it.
    pub call: ToolCall,
    /// Its lane in the step's batch (serial, parallel with a limit, chunked).
    pub lane: Lane,
    /// Whether its tool may run again after a worker's death ([`Runtime::is_idempotent`](crate::Runtime::is_idempotent)).
    pub idempotent: bool,
    /// The error of a call that must not run (its streamed arguments broke): it ends with it.
    #[serde(default)]
    pub failed: Option<ToolError>,
}

impl PlannedCall {
    /// A call to run in `lane`.
    ///
    /// ```
    /// use pleach_core::{Lane, ToolCall, durable::PlannedCall};
    /// let planned = PlannedCall::new(ToolCall::new("c1", "read_file", "{}"), Lane::Parallel { limit: None }, true);
    /// assert!(planned.idempotent);
    /// ```
    pub fn new(call: ToolCall, lane: Lane, idempotent: bool) -> Self {
        PlannedCall {
            call,
            lane,
            idempotent,
            failed: None,
        }
    }
}

/// A model step that failed: why, and whether asking again may help (a dropped connection, a
/// rate limit, a server error) — the engine retries those before it gives up.
///
/// ```
/// let failure = pleach_core::durable::StepFailure { message: "HTTP 503".into(), transient: true };
/// assert!(failure.transient);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct StepFailure {
    /// What went wrong.
    pub message: String,
    /// Whether a retry may succeed.
    pub transient: bool,
}

/// One call for a worker to run: the call, the turn of the conversation that made it (what the
/// safety stage knows comes from it), and the user's decision when the call waited for one.
///
/// ```
/// use pleach_core::{ToolCall, durable::CallRequest};
/// let request = CallRequest::new(ToolCall::new("c1", "math", r#"{"expression":"1+1"}"#), Vec::new());
/// assert!(request.approval.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CallRequest {
    /// The call as the model made it.
    pub call: ToolCall,
    /// The turn that made the call: the conversation from the user's last message up to the
    /// step that made it (what the safety stage knows is rebuilt from it).
    pub conversation: Vec<Message>,
    /// The user's decision on the call's interrupt, with the interrupt it answers.
    #[serde(default)]
    pub approval: Option<Approval>,
    /// Whether the call may run again should its worker die ([`PlannedCall::idempotent`]).
    #[serde(default)]
    pub idempotent: bool,
    /// The conversation's W3C trace context: the call's spans join that trace.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub trace_context: BTreeMap<String, String>,
    /// How many times this same call (its tool and canonical arguments) failed recoverably in
    /// the turn's earlier steps: the worker counts them toward the repeated-failure limit, so a
    /// model repeating a failing call gets 1015 as in process.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failures: u32,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // the signature serde's `skip_serializing_if` calls
fn is_zero(count: &u32) -> bool {
    *count == 0
}

impl CallRequest {
    /// A call to run for the first time.
    ///
    /// ```
    /// use pleach_core::{ToolCall, durable::CallRequest};
    /// let request = CallRequest::new(ToolCall::new("c1", "math", "{}"), Vec::new());
    /// assert_eq!(request.call.id(), "c1");
    /// ```
    pub fn new(call: ToolCall, conversation: Vec<Message>) -> Self {
        CallRequest {
            call,
            conversation,
            approval: None,
            idempotent: false,
            trace_context: BTreeMap::new(),
            failures: 0,
        }
    }
}

/// A user's decision and the interrupt it answers.
///
/// ```
/// use pleach_core::{SafetyTier, ToolCall, durable::Approval, safety::Interrupt};
/// let interrupt = Interrupt::new("int-1", ToolCall::new("c1", "pay", "{}"), SafetyTier::Standard, vec![], vec![]);
/// let approval = Approval { decision: interrupt.accept(), interrupt };
/// assert_eq!(approval.decision.interrupt_id, "int-1");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Approval {
    /// The interrupt as it was raised.
    pub interrupt: Interrupt,
    /// The user's decision on it.
    pub decision: Decision,
}

/// What came of a [`CallRequest`].
///
/// ```
/// use pleach_core::{ToolCall, durable::CallOutcome};
/// let outcome = CallOutcome::unknown(ToolCall::new("c1", "charge_card", "{}"), "the worker died");
/// let CallOutcome::Finished { result, .. } = outcome else { unreachable!() };
/// assert_eq!(result.outcome.unwrap_err().code().as_u16(), 1018);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
#[non_exhaustive]
pub enum CallOutcome {
    /// The call ended: its result, and the events it sent after `tool.started` (the step's
    /// events announced it), its terminal event last.
    Finished {
        /// The result.
        result: ToolResult,
        /// Its events, as wire JSON.
        events: Vec<Value>,
    },
    /// The call needs the user's approval: it did not run. Ask, then send the request again with
    /// the [`Approval`].
    Interrupted {
        /// What to ask.
        interrupt: Interrupt,
        /// Its events (the `interrupt.requested`, any `safety.probe`), as wire JSON.
        events: Vec<Value>,
    },
    /// The decision sent was refused (an edit the tool's schema refuses, a decision for another
    /// call, a `critical` tool): the interrupt stays pending.
    Refused {
        /// Why, for whoever decided.
        reason: String,
    },
}

impl CallOutcome {
    /// The call ended with `error`, never having run (or not known to have run): its result and
    /// its `tool.failed` event.
    ///
    /// ```
    /// use pleach_core::{ErrorCode, ToolCall, ToolError, durable::CallOutcome};
    /// let call = ToolCall::new("c1", "math", "{}");
    /// let outcome = CallOutcome::failed(call, ToolError::new(ErrorCode::Cancelled, "stopped"));
    /// assert!(matches!(outcome, CallOutcome::Finished { ref events, .. } if events[0]["type"] == "tool.failed"));
    /// ```
    pub fn failed(call: ToolCall, error: ToolError) -> Self {
        let (result, events) = failure(call, error);
        CallOutcome::Finished { result, events }
    }

    /// The call's worker died while it ran and its tool is not idempotent (or an idempotent one's
    /// kept dying until its attempts ran out): it is not run again, and it ends with 1018
    /// ([`ErrorCode::OutcomeUnknown`]), recoverable, so the model decides.
    ///
    /// ```
    /// use pleach_core::{ToolCall, durable::CallOutcome};
    /// let outcome = CallOutcome::unknown(ToolCall::new("c1", "send_email", "{}"), "worker lost");
    /// assert!(matches!(outcome, CallOutcome::Finished { ref result, .. } if result.outcome.as_ref().unwrap_err().is_recoverable()));
    /// ```
    pub fn unknown(call: ToolCall, detail: impl Into<String>) -> Self {
        let error = ToolError::new(
            ErrorCode::OutcomeUnknown,
            format!(
                "the worker running this call of `{}` stopped before it ended, so whether it took \
                 effect is unknown, and it was not run again: check its effect before you call \
                 it again",
                call.name()
            ),
        )
        .with_detail(detail);
        CallOutcome::failed(call, error)
    }
}

/// A call that ends with `error`: its result and its `tool.failed` event.
pub(super) fn failure(call: ToolCall, error: ToolError) -> (ToolResult, Vec<Value>) {
    let outcome = Err(error);
    let event = crate::session::terminal_event(&call, &outcome);
    let result = ToolResult {
        tool_call: call,
        outcome,
    };
    (result, vec![wire(&event)])
}

/// An event's wire JSON as a value.
pub(super) fn wire(event: &crate::event::ToolEvent) -> Value {
    // The wire form is the event's own `Serialize` (what `to_json` writes), built as a value
    // directly rather than written out and parsed back.
    serde_json::to_value(event).unwrap_or(Value::Null)
}
