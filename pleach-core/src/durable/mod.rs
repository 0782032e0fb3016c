//! Durable conversations: the agent loop run by a durable-execution engine (Temporal, through
//! the `pleach-temporal` crate), so a conversation outlives the process that started it.
//! `docs/durable.md` is the contract.
//!
//! The loop ([`run`]) is deterministic: it only decides what happens next from what the engine
//! recorded. Everything that touches the world goes through the [`Engine`], the seam a durable
//! engine implements:
//!
//! - [`Engine::model_step`]: one model request (an activity; the engine records its result, so a
//!   replay never asks the model again);
//! - [`Engine::tool_call`]: one call through the ordinary pipeline — validation, tiers, limits,
//!   events — on a worker (an activity, retried after a worker's death only when the tool is
//!   idempotent, else it fails with 1018);
//! - [`Engine::decision`]: wait for the user's decision on an approval interrupt (engine state:
//!   no worker is held while it waits);
//! - [`Engine::emit`]: record an event of the conversation;
//! - [`Engine::join_all`]: await futures together, the engine's own deterministic way.
//!
//! The work an activity does is engine-neutral too: [`Worker`] runs a model step and a call on a
//! [`Runtime`](crate::Runtime), and an engine's activities call it.
//!
//! | file | owns |
//! | --- | --- |
//! | `mod.rs` | the [`Engine`] seam |
//! | `wire.rs` | what crosses it: [`ModelStep`], [`PlannedCall`], [`CallRequest`], [`CallOutcome`], [`Approval`] |
//! | `conversation.rs` | the deterministic loop: [`run`], [`DurableOptions`], [`DurableOutcome`] |
//! | `worker.rs` | the activities' work: [`Worker`] |

mod conversation;
mod wire;
mod worker;

pub use conversation::{DurableOptions, DurableOutcome, DurableStop, run};
pub use wire::{Approval, CallOutcome, CallRequest, ModelStep, PlannedCall, StepFailure};
pub use worker::Worker;

/// The current span's W3C trace context (`traceparent`, and `tracestate` when there is one), for
/// [`DurableOptions::trace_context`]: a durable conversation started inside a traced request
/// continues that trace on every worker. Empty without the `otel` feature or an OpenTelemetry
/// layer.
///
/// ```
/// // No OpenTelemetry layer is installed here: there is nothing to carry.
/// assert!(pleach_core::durable::current_trace_context().is_empty());
/// ```
pub fn current_trace_context() -> std::collections::BTreeMap<String, String> {
    #[cfg(feature = "otel")]
    {
        crate::trace_context::current_headers()
            .into_iter()
            .collect()
    }
    #[cfg(not(feature = "otel"))]
    {
        std::collections::BTreeMap::new()
    }
}

use std::future::Future;
use std::time::Duration;

use serde_json::Value;

use crate::conversation::Message;
use crate::safety::{Decision, Interrupt};

/// What a durable engine provides the loop ([`run`]): the few operations that touch the world or
/// wait. Methods take `&self` (the loop runs several calls at once); an engine keeps its state
/// behind a `RefCell` or a lock.
///
/// A second engine is an adapter implementing this trait and calling [`Worker`] from its
/// activities. A minimal in-memory engine, enough to run the loop in a test:
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use std::cell::RefCell;
/// use std::time::Duration;
/// use pleach_core::agent::{ReplayClient, WireFormat};
/// use pleach_core::durable::{self, CallOutcome, CallRequest, DurableOptions, Engine, ModelStep, StepFailure, Worker};
/// use pleach_core::safety::{Decision, Interrupt};
/// use pleach_core::{Message, Runtime};
///
/// struct InMemory { worker: Worker, model: ReplayClient, events: RefCell<Vec<serde_json::Value>> }
///
/// impl Engine for InMemory {
///     async fn model_step(&self, conversation: Vec<Message>) -> Result<ModelStep, StepFailure> {
///         self.worker.model_step(&self.model, conversation, &Default::default()).await
///     }
///     async fn tool_call(&self, request: CallRequest) -> CallOutcome {
///         self.worker.tool_call(request).await
///     }
///     async fn decision(&self, _: &Interrupt, _: Option<Duration>) -> Option<Decision> {
///         None // nobody answers: the call fails with 1016
///     }
///     fn emit(&self, event: serde_json::Value) {
///         self.events.borrow_mut().push(event);
///     }
///     async fn join_all<F: Future>(&self, futures: Vec<F>) -> Vec<F::Output> {
///         futures_util::future::join_all(futures).await
///     }
/// }
///
/// let client = ReplayClient::new(WireFormat::OpenAiChat, [concat!(
///     r#"data: {"choices":[{"index":0,"delta":{"content":"Paris."},"finish_reason":"stop"}]}"#, "\n\n",
/// )]);
/// let runtime = Runtime::builder().registry(pleach_core::ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
/// let engine = InMemory { worker: Worker::new(runtime), model: client, events: RefCell::default() };
/// let conversation = vec![Message::User { content: "The capital of France?".into() }];
/// let outcome = durable::run(&engine, conversation, &DurableOptions::default()).await;
/// assert_eq!(outcome.final_text.as_deref(), Some("Paris."));
/// # }
/// ```
pub trait Engine {
    /// Asks the model once with the conversation so far and reads its whole response (an
    /// activity). An `Err` ends the conversation with [`DurableStop::Error`]; the engine retries
    /// a [transient](StepFailure::transient) failure itself first.
    fn model_step(
        &self,
        conversation: Vec<Message>,
    ) -> impl Future<Output = Result<ModelStep, StepFailure>>;

    /// Runs one call through the pipeline on a worker (an activity). The engine answers for a
    /// worker that died mid-call: a call of an idempotent tool ([`CallRequest::idempotent`]) runs
    /// again, any other ends with [`CallOutcome::unknown`] (1018).
    fn tool_call(&self, request: CallRequest) -> impl Future<Output = CallOutcome>;

    /// Waits for the user's decision on `interrupt`, for as long as it takes or until `expiry`
    /// (then `None`: the call fails with 1016). The loop checks the decision and asks again if it
    /// is for another interrupt or call.
    fn decision(
        &self,
        interrupt: &Interrupt,
        expiry: Option<Duration>,
    ) -> impl Future<Output = Option<Decision>>;

    /// Records one event of the conversation, as its wire JSON (`docs/events.md`).
    fn emit(&self, event: Value);

    /// Awaits `futures` together; their outputs in their order. Joins nest: a future joined here
    /// may itself join more (a call starts the calls its end released), so each call starts the
    /// moment its lanes let it.
    fn join_all<F: Future>(&self, futures: Vec<F>) -> impl Future<Output = Vec<F::Output>>;

    /// A decision the loop refused (for another interrupt or call, or an edit the tool's schema
    /// refuses): the interrupt stays pending. Engines show `reason` to whoever decides; by
    /// default it is dropped.
    fn refused(&self, decision: &Decision, reason: &str) {
        let _ = (decision, reason);
    }
}
