//! [`Engine`] on Temporal: model steps and calls as activities, decisions as workflow state,
//! events in the workflow, the SDK's join.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use futures::FutureExt as _;
use pleach_core::Message;
use pleach_core::agent::ModelEndpoint;
use pleach_core::durable::{CallOutcome, CallRequest, Engine, ModelStep, StepFailure};
use pleach_core::safety::{Decision, Interrupt};
use serde_json::Value;
use temporalio_common::RetryPolicy;
use temporalio_sdk::{
    ActivityExecutionError, ActivityOptions, MemoValue, TimerOptions, WorkflowContext,
};

use super::ConversationWorkflow;
use crate::activities::{PleachActivities, StepInput};
use crate::{MEMO_WAITING, Waiting, expiry_summary};

/// How long one model step may take, all attempts together.
const STEP_TIMEOUT: Duration = Duration::from_mins(15);
/// How long one call may take on its worker (the runtime's own timeout ends it sooner).
const CALL_TIMEOUT: Duration = Duration::from_hours(1);
/// Attempts at a model step (transient failures: a dropped connection, a rate limit, a 5xx, a
/// worker that died) and at a call of an idempotent tool.
const ATTEMPTS: u32 = 5;

/// Why an activity failed, in the words of its root cause (`the model API could not be reached:
/// …`), not Temporal's wrapping of it (`Activity task failed`).
fn cause(error: &ActivityExecutionError) -> String {
    let Some(mut failure) = error.failure() else {
        return error.to_string();
    };
    while let Some(inner) = failure.cause.as_deref() {
        failure = inner;
    }
    if failure.message.is_empty() {
        error.to_string()
    } else {
        failure.message.clone()
    }
}

pub(crate) struct TemporalEngine {
    ctx: WorkflowContext<ConversationWorkflow>,
    model: ModelEndpoint,
    heartbeat: Duration,
    trace_context: BTreeMap<String, String>,
}

impl TemporalEngine {
    pub(crate) fn new(
        ctx: WorkflowContext<ConversationWorkflow>,
        model: ModelEndpoint,
        heartbeat: Duration,
        trace_context: BTreeMap<String, String>,
    ) -> Self {
        TemporalEngine {
            ctx,
            model,
            heartbeat,
            trace_context,
        }
    }

    fn options(&self, timeout: Duration, attempts: u32) -> ActivityOptions {
        ActivityOptions::with_start_to_close_timeout(timeout)
            .heartbeat_timeout(self.heartbeat)
            .retry_policy(
                RetryPolicy::builder()
                    .initial_interval(Duration::from_millis(500))
                    .maximum_interval(Duration::from_secs(30))
                    .maximum_attempts(attempts)
                    .build(),
            )
            .build()
    }

    /// The memo a client reads with no worker running: what waits, what was refused.
    fn publish(&self) {
        let waiting = self.ctx.state(|state| Waiting {
            pending: state.pending.clone(),
            refused: state.refused.clone(),
        });
        // A memo that cannot be written leaves the old one; the workflow's state is the truth.
        let _ = self
            .ctx
            .upsert_memo([(MEMO_WAITING, Some(MemoValue::new(waiting)))]);
    }
}

impl Engine for TemporalEngine {
    async fn model_step(&self, conversation: Vec<Message>) -> Result<ModelStep, StepFailure> {
        let input = StepInput {
            model: self.model.clone(),
            conversation,
            trace_context: self.trace_context.clone(),
        };
        let options = self.options(STEP_TIMEOUT, ATTEMPTS);
        self.ctx
            .execute_activity(PleachActivities::model_step, input, options)
            .await
            .map_err(|error| StepFailure {
                message: cause(&error),
                transient: false,
            })
    }

    async fn tool_call(&self, request: CallRequest) -> CallOutcome {
        // A call that ran and whose worker died is run again only for an idempotent tool.
        let attempts = if request.idempotent { ATTEMPTS } else { 1 };
        let call = request.call.clone();
        let options = self.options(CALL_TIMEOUT, attempts);
        match self
            .ctx
            .execute_activity(PleachActivities::tool_call, request, options)
            .await
        {
            Ok(outcome) => outcome,
            Err(error) => CallOutcome::unknown(call, cause(&error)),
        }
    }

    async fn decision(&self, interrupt: &Interrupt, expiry: Option<Duration>) -> Option<Decision> {
        self.ctx.state_mut(|state| {
            if !state.pending.iter().any(|known| known.id == interrupt.id) {
                state.pending.push(interrupt.clone());
            }
        });
        self.publish();
        let id = interrupt.id.clone();
        let arrived = self
            .ctx
            .wait_condition(|state: &ConversationWorkflow| {
                state
                    .decisions
                    .iter()
                    .any(|decision| decision.interrupt_id == id)
            })
            .fuse();
        let decided = match expiry {
            None => arrived.await.is_ok(),
            Some(expiry) => {
                // The timer's summary names the interrupt: a client reads from the history
                // whether this interrupt's expiry fired (`DurableClient::status`).
                let timer = self
                    .ctx
                    .timer(
                        TimerOptions::builder(expiry)
                            .summary(expiry_summary(&interrupt.id))
                            .build(),
                    )
                    .fuse();
                futures::pin_mut!(arrived, timer);
                // The timer first: a worker that sees the expiry and a decision in one workflow
                // task (none ran when the timer fired) cannot tell their order, as the SDK hands
                // it signals before timers; the expiry has fired by then, so it wins, on every
                // replay alike.
                temporalio_sdk::workflows::select! {
                    _ = timer => false,
                    waited = arrived => waited.is_ok(),
                }
            }
        };
        let decision = self.ctx.state_mut(|state| {
            state.pending.retain(|known| known.id != interrupt.id);
            let at = state
                .decisions
                .iter()
                .position(|decision| decision.interrupt_id == interrupt.id)?;
            let decision = state.decisions.remove(at);
            if !decided {
                state.refused = Some(format!(
                    "the decision on call `{}` came after its approval expired",
                    interrupt.tool_call.id()
                ));
            }
            decision
        });
        self.publish();
        decision.filter(|_| decided)
    }

    fn emit(&self, event: Value) {
        self.ctx.state_mut(|state| state.events.push(event));
    }

    async fn join_all<F: Future>(&self, futures: Vec<F>) -> Vec<F::Output> {
        temporalio_sdk::workflows::join_all(futures).await
    }

    fn refused(&self, _decision: &Decision, reason: &str) {
        self.ctx
            .state_mut(|state| state.refused = Some(reason.to_owned()));
        self.publish();
    }
}
