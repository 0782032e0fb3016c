//! The durable agent loop: deterministic, everything it learns from the [`Engine`].

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use serde_json::Value;

use super::wire::failure;
use super::{Approval, CallOutcome, CallRequest, Engine, ModelStep, PlannedCall};
use crate::batch::{BatchingConfig, Lane, Schedule};
use crate::conversation::Message;
use crate::defaults;
use crate::error::{ErrorCode, ToolError};
use crate::safety::{Decision, Interrupt};
use crate::session::ToolResult;

/// How a durable conversation runs. Read the settings as fields; set them with the setter of the
/// same name.
///
/// ```
/// let options: pleach_core::durable::DurableOptions = serde_json::from_str(r#"{ "maxSteps": 4 }"#).unwrap();
/// assert_eq!(options.max_steps, 4);
/// assert_eq!(options.approval_expiry, None); // an approval waits as long as it takes
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct DurableOptions {
    /// How many model requests at most, as an agent run's
    /// ([`AgentOptions`](crate::agent::AgentOptions); default [`defaults::MAX_STEPS`], 16).
    pub max_steps: usize,
    /// How many calls of a step run at once, as a turn's ([`BatchingConfig`]; default
    /// [`defaults::MAX_CONCURRENCY`], 16).
    pub max_concurrency: usize,
    /// How long an approval interrupt waits before its call fails with 1016; `None`: for ever.
    #[serde(with = "secs")]
    pub approval_expiry: Option<Duration>,
    /// The W3C trace context (`traceparent`, `tracestate`) of whoever started the conversation:
    /// every model step and call the workers run is its child ([`current_trace_context`](super::current_trace_context)).
    pub trace_context: BTreeMap<String, String>,
}

impl Default for DurableOptions {
    fn default() -> Self {
        DurableOptions {
            max_steps: defaults::MAX_STEPS,
            max_concurrency: defaults::MAX_CONCURRENCY,
            approval_expiry: None,
            trace_context: BTreeMap::new(),
        }
    }
}

impl DurableOptions {
    /// Sets how long an approval interrupt waits before its call fails with 1016 (default: for
    /// ever).
    ///
    /// ```
    /// use std::time::Duration;
    /// let options = pleach_core::durable::DurableOptions::default().approval_expiry(Duration::from_secs(3600));
    /// assert_eq!(options.approval_expiry, Some(Duration::from_secs(3600)));
    /// ```
    #[must_use]
    pub fn approval_expiry(mut self, expiry: Duration) -> Self {
        self.approval_expiry = Some(expiry);
        self
    }

    /// Sets how many model requests the conversation makes at most (default
    /// [`defaults::MAX_STEPS`], 16).
    ///
    /// ```
    /// assert_eq!(pleach_core::durable::DurableOptions::default().max_steps(3).max_steps, 3);
    /// ```
    #[must_use]
    pub fn max_steps(mut self, steps: usize) -> Self {
        self.max_steps = steps;
        self
    }

    /// Sets how many calls of a step run at once (`0` is taken as `1`; default
    /// [`defaults::MAX_CONCURRENCY`], 16).
    ///
    /// ```
    /// let options = pleach_core::durable::DurableOptions::default().max_concurrency(4);
    /// assert_eq!(options.max_concurrency, 4);
    /// ```
    #[must_use]
    #[doc(alias = "maxConcurrency")]
    pub fn max_concurrency(mut self, calls: usize) -> Self {
        self.max_concurrency = calls;
        self
    }
}

/// `Option<Duration>` as whole seconds (fractions kept), `null` for none.
mod secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    #[allow(clippy::ref_option)] // the signature serde's `with` calls
    pub(super) fn serialize<S: Serializer>(
        value: &Option<Duration>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(duration) => serializer.serialize_f64(duration.as_secs_f64()),
            None => serializer.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Duration>, D::Error> {
        Option::<f64>::deserialize(deserializer)?
            .map(|secs| Duration::try_from_secs_f64(secs).map_err(serde::de::Error::custom))
            .transpose()
    }
}

/// How a durable conversation ended.
///
/// ```
/// use pleach_core::durable::DurableStop;
/// assert!(DurableStop::Finished.is_finished());
/// assert!(!DurableStop::Error("HTTP 401".into()).is_finished());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "message", rename_all = "camelCase")]
#[non_exhaustive]
pub enum DurableStop {
    /// The model answered without calling a tool.
    Finished,
    /// [`DurableOptions::max_steps`] requests were made.
    MaxSteps,
    /// A model step failed, or its response broke off.
    Error(String),
}

impl DurableStop {
    /// Whether the model gave its answer.
    ///
    /// ```
    /// assert!(!pleach_core::durable::DurableStop::MaxSteps.is_finished());
    /// ```
    pub fn is_finished(&self) -> bool {
        matches!(self, DurableStop::Finished)
    }
}

/// What a durable conversation came to: the model's answer, the whole conversation, every call's
/// result in order, how it stopped.
///
/// ```
/// let outcome: pleach_core::durable::DurableOutcome = serde_json::from_str(
///     r#"{ "finalText": "4.", "conversation": [], "results": [], "steps": 1, "stop": { "type": "finished" } }"#,
/// ).unwrap();
/// assert!(outcome.stop.is_finished());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct DurableOutcome {
    /// The model's last text when it finished.
    pub final_text: Option<String>,
    /// The conversation, the input's messages first.
    pub conversation: Vec<Message>,
    /// Every call's result, in the order the calls were made.
    pub results: Vec<ToolResult>,
    /// How many model requests were made.
    pub steps: usize,
    /// Why it stopped.
    pub stop: DurableStop,
}

/// Runs the agent loop on `conversation` (push the user's message first) through `engine`: asks
/// the model, runs the calls of its response under their lanes (serial, parallel with a limit,
/// chunked: each call one [`Engine::tool_call`]), writes the results back in call order, and asks
/// again, until the model answers without calling a tool or `options.max_steps` requests were
/// made. Every call ends in exactly one result and one terminal event.
///
/// The loop is deterministic: run again over the same recorded answers it makes the same
/// requests in the same order, which is what a replaying engine needs. See the [`Engine`] example.
pub async fn run<E: Engine>(
    engine: &E,
    conversation: Vec<Message>,
    options: &DurableOptions,
) -> DurableOutcome {
    let mut outcome = DurableOutcome {
        final_text: None,
        conversation,
        results: Vec::new(),
        steps: 0,
        stop: DurableStop::MaxSteps,
    };
    // Recoverable failures of the turn's earlier steps, by call fingerprint: each call carries
    // its own count to its worker (1015 after too many, as in process).
    let mut failures: HashMap<String, u32> = HashMap::new();
    outcome.stop = loop {
        if outcome.steps >= options.max_steps {
            break DurableStop::MaxSteps;
        }
        let step = engine.model_step(outcome.conversation.clone()).await;
        outcome.steps += 1;
        let ModelStep {
            text,
            calls,
            events,
            broke,
            ..
        } = match step {
            Ok(step) => step,
            Err(failure) => break DurableStop::Error(failure.message),
        };
        for event in events {
            engine.emit(event);
        }
        if calls.is_empty() {
            if let Some(error) = broke {
                break DurableStop::Error(error);
            }
            if let Some(text) = &text {
                outcome.conversation.push(Message::Assistant {
                    content: Some(text.clone()),
                    tool_calls: Vec::new(),
                });
            }
            outcome.final_text = text;
            break DurableStop::Finished;
        }
        // A call sees the turn that made it: the conversation from the user's last message up to
        // its step (what the safety stage knows comes from there alone; the rest stays out of
        // every call's input).
        let turn_start = outcome
            .conversation
            .iter()
            .rposition(|message| matches!(message, Message::User { .. }))
            .unwrap_or(0);
        let before = outcome.conversation[turn_start..].to_vec();
        outcome.conversation.push(Message::Assistant {
            content: text,
            tool_calls: calls.iter().map(|planned| planned.call.clone()).collect(),
        });
        let results = run_calls(engine, &calls, &before, &failures, options).await;
        count_failures(&mut failures, &calls, &results);
        for (result, planned) in results.iter().zip(&calls) {
            let message = if result.tool_call == planned.call {
                Message::tool_result(&result.tool_call, &result.outcome)
            } else {
                Message::edited_tool_result(&result.tool_call, &result.outcome)
            };
            outcome.conversation.push(message);
        }
        outcome.results.extend(results);
        if let Some(error) = broke {
            break DurableStop::Error(error);
        }
    };
    outcome
}

/// Counts a step's recoverable failures, keyed by the call as the model made it, as a session
/// does when a step ends. A call that never reached a worker (its streamed arguments broke) does
/// not count; one whose worker died (1018) does: a call that keeps killing its workers is
/// stopped like one that keeps failing.
fn count_failures(
    failures: &mut HashMap<String, u32>,
    calls: &[PlannedCall],
    results: &[ToolResult],
) {
    for (planned, result) in calls.iter().zip(results) {
        let failed = result
            .outcome
            .as_ref()
            .is_err_and(ToolError::is_recoverable);
        if failed && planned.failed.is_none() {
            *failures
                .entry(crate::safety::fingerprint(&planned.call))
                .or_default() += 1;
        }
    }
}

/// Runs a step's calls under their lanes: every call starts the moment its lanes let it (a call
/// that ends starts what it released, alongside the calls still running, all through the
/// engine's join). Results in call order.
async fn run_calls<E: Engine>(
    engine: &E,
    calls: &[PlannedCall],
    conversation: &[Message],
    failures: &HashMap<String, u32>,
    options: &DurableOptions,
) -> Vec<ToolResult> {
    let lanes: Vec<Lane> = calls
        .iter()
        .map(|planned| match planned.failed {
            // A call that will not run orders nothing.
            Some(_) => Lane::Parallel { limit: None },
            None => planned.lane.clone(),
        })
        .collect();
    let step = Step {
        engine,
        calls,
        conversation,
        failures,
        options,
        schedule: RefCell::new(Schedule::new(
            &lanes,
            BatchingConfig::new(options.max_concurrency),
        )),
        results: RefCell::new(vec![None; calls.len()]),
    };
    step.start(step.startable()).await;
    step.results
        .into_inner()
        .into_iter()
        .zip(calls)
        .map(|(result, planned)| {
            // Every call is started by the schedule; this is a backstop, never a silent gap.
            result.unwrap_or_else(|| ToolResult {
                tool_call: planned.call.clone(),
                outcome: Err(ToolError::new(
                    ErrorCode::Cancelled,
                    "the call was not started; it did not run",
                )),
            })
        })
        .collect()
}

/// One step's calls while they run: the schedule deciding what may start, the results so far.
/// Single-threaded like the loop: the engine's join polls every call on one task.
struct Step<'a, E> {
    engine: &'a E,
    calls: &'a [PlannedCall],
    conversation: &'a [Message],
    failures: &'a HashMap<String, u32>,
    options: &'a DurableOptions,
    schedule: RefCell<Schedule>,
    results: RefCell<Vec<Option<ToolResult>>>,
}

impl<'a, E: Engine> Step<'a, E> {
    /// Every call the schedule lets start now.
    fn startable(&self) -> Vec<usize> {
        let mut schedule = self.schedule.borrow_mut();
        std::iter::from_fn(|| schedule.next()).collect()
    }

    /// Runs `indices` side by side, each followed by what it releases. Boxed: the calls a call
    /// releases are started from within it.
    fn start(&'a self, indices: Vec<usize>) -> Pin<Box<dyn Future<Output = ()> + 'a>> {
        let running = indices.into_iter().map(|index| self.run(index)).collect();
        let joined = self.engine.join_all(running);
        Box::pin(async move {
            joined.await;
        })
    }

    /// Runs one call, records its result, then starts the calls its end released.
    async fn run(&'a self, index: usize) {
        let planned = &self.calls[index];
        let failed_before = if self.failures.is_empty() {
            0
        } else {
            let key = crate::safety::fingerprint(&planned.call);
            self.failures.get(&key).copied().unwrap_or(0)
        };
        let result = run_call(
            self.engine,
            planned,
            self.conversation,
            failed_before,
            self.options,
        )
        .await;
        self.results.borrow_mut()[index] = Some(result);
        self.schedule.borrow_mut().finish(index);
        let released = self.startable();
        if !released.is_empty() {
            self.start(released).await;
        }
    }
}

/// One call to its end: run, and while it waits for the user, wait for a decision it accepts,
/// then run it again with it.
async fn run_call<E: Engine>(
    engine: &E,
    planned: &PlannedCall,
    conversation: &[Message],
    failures: u32,
    options: &DurableOptions,
) -> ToolResult {
    if let Some(error) = &planned.failed {
        return finished(engine, failure(planned.call.clone(), error.clone()));
    }
    let mut approval: Option<Approval> = None;
    loop {
        let request = CallRequest {
            call: planned.call.clone(),
            conversation: conversation.to_vec(),
            approval: approval.clone(),
            idempotent: planned.idempotent,
            trace_context: options.trace_context.clone(),
            failures,
        };
        let interrupt = match engine.tool_call(request).await {
            CallOutcome::Finished { result, events } => return finished(engine, (result, events)),
            CallOutcome::Interrupted { interrupt, events } => {
                for event in events {
                    engine.emit(event);
                }
                interrupt
            }
            CallOutcome::Refused { reason } => {
                let Some(Approval {
                    interrupt,
                    decision,
                }) = approval.take()
                else {
                    // Only a request with a decision can be refused.
                    let error = ToolError::new(ErrorCode::SafetyHalt, reason);
                    return finished(engine, failure(planned.call.clone(), error));
                };
                engine.refused(&decision, &reason);
                interrupt
            }
        };
        let Some(decision) = decide(engine, &interrupt, options.approval_expiry).await else {
            let expired = ToolError::new(
                ErrorCode::ApprovalTimedOut,
                "this call needed the user's approval and none came in time; it did not run",
            );
            return finished(engine, failure(planned.call.clone(), expired));
        };
        approval = Some(Approval {
            interrupt,
            decision,
        });
    }
}

/// Waits for a decision bound to `interrupt` and its call; others are refused and waited past.
async fn decide<E: Engine>(
    engine: &E,
    interrupt: &Interrupt,
    expiry: Option<Duration>,
) -> Option<Decision> {
    loop {
        let decision = engine.decision(interrupt, expiry).await?;
        if decision.interrupt_id != interrupt.id {
            engine.refused(&decision, "the decision is for another interrupt");
        } else if decision.fingerprint != interrupt.fingerprint {
            engine.refused(
                &decision,
                "the decision was made for another call (its fingerprint differs): look at the \
                 call again and decide on it",
            );
        } else {
            return Some(decision);
        }
    }
}

/// A finished call's events emitted, its result returned.
fn finished<E: Engine>(engine: &E, (result, events): (ToolResult, Vec<Value>)) -> ToolResult {
    for event in events {
        engine.emit(event);
    }
    result
}
