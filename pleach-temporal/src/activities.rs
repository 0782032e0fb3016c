//! The activities a worker runs for a conversation: a model step and a call, each through
//! [`pleach_core::durable::Worker`], heartbeating while it runs so a dead worker is noticed.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use pleach_core::Message;
use pleach_core::agent::ModelEndpoint;
use pleach_core::durable::{CallOutcome, CallRequest, ModelStep, Worker};
use serde::{Deserialize, Serialize};
use temporalio_macros::activities;
use temporalio_sdk::ApplicationFailure;
use temporalio_sdk::activities::{ActivityContext, ActivityError};

/// The input of a model step.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StepInput {
    pub(crate) model: ModelEndpoint,
    pub(crate) conversation: Vec<Message>,
    /// The conversation's W3C trace context.
    #[serde(default)]
    pub(crate) trace_context: BTreeMap<String, String>,
}

/// A worker's activities: its runtime's calls and the model steps of the conversations it runs.
pub(crate) struct PleachActivities {
    pub(crate) worker: Worker,
}

#[activities]
impl PleachActivities {
    /// One model request, read whole. A transient failure is retried by the workflow's policy; any
    /// other is not.
    #[activity(name = "pleach.model_step")]
    pub(crate) async fn model_step(
        self: std::sync::Arc<Self>,
        ctx: ActivityContext,
        input: StepInput,
    ) -> Result<ModelStep, ActivityError> {
        let client = input.model.client().map_err(|message| {
            ActivityError::application(ApplicationFailure::non_retryable(message))
        })?;
        let step = heartbeating(
            &ctx,
            self.worker
                .model_step(client.as_ref(), input.conversation, &input.trace_context),
        )
        .await;
        step.map_err(|failure| {
            // The worker's operator reads why, as the conversation's user does.
            tracing::warn!(
                target: "pleach_temporal::activities",
                "a model step of `{}` failed (attempt {}{}): {}",
                ctx.info().workflow_id.as_deref().unwrap_or("?"),
                ctx.info().attempt,
                if failure.transient {
                    ", retried unless it was the last"
                } else {
                    ", not retried"
                },
                failure.message
            );
            let failure = if failure.transient {
                ApplicationFailure::new(failure.message)
            } else {
                ApplicationFailure::non_retryable(failure.message)
            };
            ActivityError::application(failure)
        })
    }

    /// One call through the pipeline.
    #[activity(name = "pleach.tool_call")]
    pub(crate) async fn tool_call(
        self: std::sync::Arc<Self>,
        ctx: ActivityContext,
        request: CallRequest,
    ) -> Result<CallOutcome, ActivityError> {
        Ok(heartbeating(&ctx, self.worker.tool_call(request)).await)
    }
}

/// Runs `work`, heartbeating every third of the activity's heartbeat timeout.
async fn heartbeating<T>(ctx: &ActivityContext, work: impl Future<Output = T>) -> T {
    let every = ctx
        .info()
        .heartbeat_timeout
        .map_or(Duration::from_secs(10), |timeout| timeout / 3)
        .max(Duration::from_millis(100));
    tokio::pin!(work);
    loop {
        tokio::select! {
            done = &mut work => return done,
            () = tokio::time::sleep(every) => {
                // A heartbeat that cannot be sent is the server's to notice; the work goes on.
                let _ = ctx.record_heartbeat(()).await;
            }
        }
    }
}
