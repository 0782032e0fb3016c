//! Turns: what the model said in one step ([`AssistantStep`]), [`Session::run_turn`] starting a
//! turn of its calls, the driver that runs them by their lanes and writes their results back in
//! call order, and the running [`Turn`] (events, cancellation, results).

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::{Session, SessionInner, ToolResult, cancelled_error, pipeline};
use crate::batch::{Lane, Step};
use crate::call::ToolCall;
use crate::conversation::Message;
use crate::error::{ErrorCode, ToolError};
use crate::event::{EventSender, EventStream, ToolEvent};

/// What the model said in one step: optional text and the calls to run.
///
/// ```
/// use pleach_core::{AssistantStep, ToolCall};
/// let step = AssistantStep::from(vec![ToolCall::new("c1", "add", "{}")]).with_text("Let me add.");
/// assert_eq!(step.text.as_deref(), Some("Let me add."));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AssistantStep {
    /// The model's text, if any.
    pub text: Option<String>,
    /// The calls, in the model's order.
    pub calls: Vec<ToolCall>,
}

impl AssistantStep {
    /// Adds the model's text.
    ///
    /// ```
    /// use pleach_core::{AssistantStep, ToolCall};
    ///
    /// let step = AssistantStep::from(vec![ToolCall::new("c1", "math", r#"{"expression":"2+2"}"#)])
    ///     .with_text("Let me compute that.");
    /// assert_eq!(step.text.as_deref(), Some("Let me compute that."));
    /// ```
    #[must_use]
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }
}

impl From<Vec<ToolCall>> for AssistantStep {
    fn from(calls: Vec<ToolCall>) -> Self {
        AssistantStep { text: None, calls }
    }
}

impl Session {
    /// Runs one model step's calls: appends the assistant message with the calls, emits
    /// `tool.started` for each (in order), runs them (up to the runtime's concurrency), emits each
    /// one's terminal event as it finishes, and appends one result message per call in the
    /// model's order. Returns at once; read the [`Turn`]'s events, then `finish` it.
    ///
    /// Every call ends in exactly one `tool.completed` or `tool.failed` and exactly one result
    /// message: unknown tools, bad JSON, panics, timeouts and cancellation included.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime (the turn runs as a Tokio task).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use pleach_core::{Runtime, SessionOptions, ToolCall, ToolError, ToolRegistryBuilder, ToolDefinition};
    ///
    /// let echo = ToolDefinition::builder("echo", "Returns its arguments.")
    ///     .execute_json(|args, _| async move { Ok::<_, ToolError>(args) })
    ///     .unwrap();
    /// let runtime = Runtime::builder()
    ///     .registry(ToolRegistryBuilder::new().register(echo).build().unwrap())
    ///     .build()
    ///     .unwrap();
    /// let session = runtime.create_session(SessionOptions::all()).unwrap();
    /// let mut turn = session.run_turn(vec![
    ///     ToolCall::new("c1", "echo", r#"{"n":1}"#),
    ///     ToolCall::new("c2", "echo", "not json"), // 1005, its own call only
    /// ]);
    /// let mut types = Vec::new();
    /// while let Some(event) = turn.events().recv().await {
    ///     types.push(event.event_type());
    /// }
    /// assert_eq!(types.iter().filter(|t| **t == "tool.started").count(), 2);
    /// let results = turn.finish().await;
    /// assert_eq!(results[0].outcome, Ok(serde_json::json!({ "n": 1 }).into()));
    /// assert_eq!(results[1].outcome.as_ref().unwrap_err().code().as_u16(), 1005);
    /// # }
    /// ```
    pub fn run_turn(&self, step: impl Into<AssistantStep>) -> Turn {
        let step = step.into();
        let calls: Vec<ToolCall> = step.calls;
        if self.inner.keeps_conversation {
            self.inner.log().conversation.push(Message::Assistant {
                content: step.text,
                tool_calls: calls.clone(),
            });
        }
        self.start_turn(calls, None, None)
    }

    /// Starts a turn of `calls`: their `tool.started` events (then `announce`, if any), and the
    /// driver task that runs them and writes their results back. `approved` is a decision made
    /// beforehand for one call, by index.
    pub(super) fn start_turn(
        &self,
        calls: Vec<ToolCall>,
        approved: Option<(usize, crate::safety::Action)>,
        announce: Option<ToolEvent>,
    ) -> Turn {
        let (sink, events) = crate::event::channel();
        let signal = self.inner.signal.token().child_token();
        sink.send_all(calls.iter().map(|call| ToolEvent::Started {
            tool_call: call.clone(),
        }));
        if let Some(event) = announce {
            sink.send(event);
        }
        // The driver and the turn share the calls: the turn keeps them to answer for every call
        // should the driver die.
        let calls = Arc::new(calls);
        let driver = drive_turn(
            self.inner.clone(),
            calls.clone(),
            sink,
            signal.clone(),
            approved,
            Vec::new(),
        );
        Turn {
            events,
            signal,
            calls,
            // In the caller's span (an agent's `invoke_agent`), so the calls' spans are its
            // children; nothing when no span is current.
            driver: tokio::spawn(tracing::Instrument::in_current_span(driver)),
        }
    }
}

/// What a turn's run of calls run in place (one after another, in its task) keeps between them:
/// one runtime-wide slot for them all, and their terminal events, sent under one lock. Both go
/// when the turn pauses (before it yields to other tasks or waits for other calls), so another
/// session finds the slot free and a reader finds the events in the order the calls ended.
#[derive(Default)]
struct Burst<'a> {
    slot: Option<crate::batch::Slot<'a>>,
    events: Vec<ToolEvent>,
}

impl Burst<'_> {
    fn pause(&mut self, sink: &EventSender) {
        self.slot = None;
        if !self.events.is_empty() {
            sink.send_all(self.events.drain(..));
        }
    }
}

/// Runs a turn's calls and writes their results back in call order. `approved` is a decision
/// made beforehand for one call (a resumed interrupt), by index. `failed` holds, by index, the
/// calls that failed before the turn (a streamed call its stream broke): they do not run, and get
/// their terminal event and result message like any other (missing entries: none failed).
pub(super) async fn drive_turn(
    session: Arc<SessionInner>,
    calls: Arc<Vec<ToolCall>>,
    sink: EventSender,
    signal: CancellationToken,
    mut approved: Option<(usize, crate::safety::Action)>,
    failed: Vec<Option<ToolError>>,
) -> Vec<ToolResult> {
    // `failed` is usually empty (only a streamed step has calls that failed in assembly): look
    // calls up in it rather than grow it to one entry per call.
    let has_failed = |index: usize| failed.get(index).is_some_and(Option::is_some);
    let lanes: Vec<Lane> = calls
        .iter()
        .enumerate()
        .map(|(index, call)| match session.tool(call.name()) {
            // A call that will not run orders nothing; it only passes its gate.
            _ if has_failed(index) => Lane::Parallel { limit: None },
            Some(tool) => Lane::for_call(
                call.name(),
                &tool.strategy,
                tool.max_concurrency,
                call.arguments(),
            ),
            // It fails at lookup, at once; nothing to order.
            None => Lane::Parallel { limit: None },
        })
        .collect();
    // One sender and one token shared by the turn's calls: cloning an `Arc` is an atomic
    // increment, cloning a sender or a token takes a lock (and so does dropping it).
    let shared_sink = Arc::new(sink.clone());
    let shared_signal = Arc::new(signal.clone());
    // Usually empty (only a streamed step has calls that failed in assembly).
    let any_failed = failed.iter().any(Option::is_some);
    let failed = std::sync::Mutex::new(failed);
    let failure_of = |index: usize| {
        if !any_failed {
            return None;
        }
        let mut failed = failed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        failed.get_mut(index).and_then(Option::take)
    };
    let multi_thread = crate::batch::on_multi_thread_runtime();
    let outcomes = crate::batch::run_scheduled(
        &lanes,
        session.runtime.config.batching,
        Some(&signal),
        &mut Burst::default(),
        |burst: &mut Burst<'_>, index| {
            let failure = failure_of(index);
            let decision = approved
                .take_if(|(approved_index, _)| *approved_index == index)
                .map(|(_, action)| action);
            let call = calls[index].clone();
            if let Some(error) = failure {
                return Step::Done(pipeline::Dispatched::never_ran(call, error, &sink));
            }
            // A call that can finish where it starts does, unless other workers could run it
            // beside the rest (a multi-thread runtime: it is spawned like any call there).
            let call = if decision.is_none() && !multi_thread {
                // The turn's token is looked at before each run of starts and every 32 calls
                // (`run_scheduled`): nothing else can cancel the turn while this task runs.
                let Burst { slot, events } = burst;
                match session.dispatch_now(
                    call,
                    &sink,
                    None,
                    Some(slot),
                    pipeline::Terminal::Held(events),
                ) {
                    Ok(dispatched) => return Step::Done(dispatched),
                    Err(call) => call,
                }
            } else {
                call
            };
            let (session, sink, signal) =
                (session.clone(), shared_sink.clone(), shared_signal.clone());
            Step::Later(async move { session.dispatch(call, &sink, &signal, decision, None).await })
        },
        // The turn was cancelled before these started: they end now, with their own failure if
        // they had one.
        |index| {
            let error = failure_of(index).unwrap_or_else(cancelled_error);
            Some(pipeline::Dispatched::never_ran(
                calls[index].clone(),
                error,
                &sink,
            ))
        },
        |burst| burst.pause(&sink),
    )
    .await;
    let mut failures = Vec::new();
    // Collected into the outcomes' own buffer (the outcomes lead the chain): a step's results
    // take no second allocation.
    let results: Vec<(ToolResult, bool)> = outcomes
        .into_iter()
        .zip(calls.iter())
        .map(|(dispatched, issued)| {
            let (result, edited, failed) = settle(&session, issued, dispatched, &sink);
            failures.extend(failed);
            (result, edited)
        })
        .collect();
    session.record_failures(failures);
    if session.keeps_conversation {
        let mut state = session.log();
        state.conversation.reserve(results.len());
        for (result, edited) in &results {
            let message = if *edited {
                Message::edited_tool_result(&result.tool_call, &result.outcome)
            } else {
                Message::tool_result(&result.tool_call, &result.outcome)
            };
            state.conversation.push(message);
        }
    }
    // Every terminal event is sent and the conversation written: the turn's stream is over.
    sink.close();
    results.into_iter().map(|(result, _)| result).collect()
}

/// A call's result, whether the user edited it, and for a recoverable failure the key it is counted
/// under ([`SessionInner::failure_key`]).
/// A call left without an outcome is one whose pipeline panicked (a bug in pleach, not in the
/// tool: tool panics are caught as 1009 inside the pipeline): it still ends, once.
fn settle(
    session: &SessionInner,
    issued: &ToolCall,
    dispatched: Option<pipeline::Dispatched>,
    sink: &EventSender,
) -> (ToolResult, bool, Option<String>) {
    let dispatched = dispatched.unwrap_or_else(|| {
        let failure = ToolError::new(ErrorCode::ToolPanicked, "the call failed inside pleach")
            .with_detail("the call's pipeline panicked");
        pipeline::Dispatched::never_ran(issued.clone(), failure, sink)
    });
    let edited = !issued.same(&dispatched.call);
    let result = ToolResult {
        tool_call: dispatched.call,
        outcome: dispatched.outcome,
    };
    // Counted against the call as the model issued it, whatever a user's edit made it.
    let failed = dispatched.counts.then(|| session.failure_key(issued));
    (result, edited, failed)
}

/// A running turn: its events, its cancellation, and its results.
///
/// The turn runs as a task of its own from [`Session::run_turn`] on. Dropping the `Turn` does not
/// stop it: its calls still end and their results are still written to the conversation (its
/// events then go nowhere). To stop it, [`cancel`](Turn::cancel) it first; dropping the
/// [`Session`] cancels every turn still running.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use pleach_core::{Runtime, SessionOptions, ToolCall, ToolRegistryBuilder};
///
/// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
/// let session = runtime.create_session(SessionOptions::default()).unwrap();
/// let mut turn = session.run_turn(vec![ToolCall::new("c1", "missing", "{}")]);
/// while turn.events().recv().await.is_some() {}
/// let results = turn.finish().await;
/// assert_eq!(results[0].outcome.as_ref().unwrap_err().code().as_u16(), 1003);
/// # }
/// ```
#[derive(Debug)]
pub struct Turn {
    events: EventStream,
    signal: CancellationToken,
    calls: Arc<Vec<ToolCall>>,
    driver: tokio::task::JoinHandle<Vec<ToolResult>>,
}

impl Turn {
    /// The turn's events, in the order they happened. The stream ends once every call's terminal
    /// event has been read.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use pleach_core::{Runtime, SessionOptions, ToolCall, ToolRegistryBuilder};
    ///
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let session = runtime.create_session(SessionOptions::default()).unwrap();
    /// let mut turn = session.run_turn(vec![ToolCall::new("c1", "missing", "{}")]);
    /// let mut types = Vec::new();
    /// while let Some(event) = turn.events().recv().await {
    ///     types.push(event.event_type());
    /// }
    /// assert_eq!(types, ["tool.started", "tool.failed"]);
    /// # }
    /// ```
    pub fn events(&mut self) -> &mut EventStream {
        &mut self.events
    }

    /// Cancels the turn: every running call's [`ToolContext::signal`](crate::ToolContext::signal) fires; a call that has not
    /// finished after the grace period is dropped. Cancelled calls fail with code 1011.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use pleach_core::{Runtime, SessionOptions, ToolCall, ToolError, ToolRegistryBuilder, ToolDefinition};
    ///
    /// // A tool that waits until its call is cancelled.
    /// let wait = ToolDefinition::builder("wait", "Waits for its signal.")
    ///     .execute_json(|_, ctx| async move {
    ///         ctx.signal.cancelled().await;
    ///         Err::<serde_json::Value, _>(ToolError::failed("stopped"))
    ///     })
    ///     .unwrap();
    /// let runtime = Runtime::builder()
    ///     .registry(ToolRegistryBuilder::new().register(wait).build().unwrap())
    ///     .build()
    ///     .unwrap();
    /// let session = runtime.create_session(SessionOptions::all()).unwrap();
    /// let turn = session.run_turn(vec![ToolCall::new("c1", "wait", "{}")]);
    /// turn.cancel();
    /// let results = turn.finish().await;
    /// assert_eq!(results[0].outcome.as_ref().unwrap_err().code().as_u16(), 1011);
    /// # }
    /// ```
    pub fn cancel(&self) {
        self.signal.cancel();
    }

    /// The turn's cancellation token (cancel it from elsewhere, or tie it to a parent).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use pleach_core::{Runtime, SessionOptions, ToolRegistryBuilder};
    ///
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let session = runtime.create_session(SessionOptions::default()).unwrap();
    /// let turn = session.run_turn(Vec::new());
    /// let token = turn.cancellation_token(); // hand it to whatever should be able to stop the turn
    /// token.cancel();
    /// assert!(turn.finish().await.is_empty());
    /// # }
    /// ```
    pub fn cancellation_token(&self) -> CancellationToken {
        self.signal.clone()
    }

    /// Waits for every call and returns the results in the model's call order (they are already
    /// written into the conversation). Read the events first: finishing consumes the turn.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use pleach_core::{Message, Runtime, SessionOptions, ToolCall, ToolRegistryBuilder};
    ///
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let session = runtime.create_session(SessionOptions::default()).unwrap();
    /// let turn = session.run_turn(vec![ToolCall::new("c1", "a", "{}"), ToolCall::new("c2", "b", "{}")]);
    /// let results = turn.finish().await; // the events were not read: finishing drops them
    /// let ids: Vec<&str> = results.iter().map(|r| r.tool_call.id()).collect();
    /// assert_eq!(ids, ["c1", "c2"]);
    /// assert!(matches!(&session.conversation()[2], Message::Tool { is_error: true, .. }));
    /// # }
    /// ```
    pub async fn finish(self) -> Vec<ToolResult> {
        let Turn {
            events,
            driver,
            calls,
            ..
        } = self;
        // Finishing consumes the events: nobody can read them from here on, which a call waiting
        // for the user's approval must hear of, or it would wait for ever.
        drop(events);
        match driver.await {
            Ok(results) => results,
            // The driver runs no user code; should it die anyway (or the runtime shut down), every
            // call still gets its one result rather than vanishing.
            Err(error) => {
                tracing::error!(%error, "a turn's driver task died");
                let failure = if error.is_cancelled() {
                    cancelled_error()
                } else {
                    ToolError::new(
                        ErrorCode::ToolPanicked,
                        "the runtime failed while running this call",
                    )
                    .with_detail(error.to_string())
                };
                calls
                    .iter()
                    .map(|tool_call| ToolResult {
                        tool_call: tool_call.clone(),
                        outcome: Err(failure.clone()),
                    })
                    .collect()
            }
        }
    }
}
