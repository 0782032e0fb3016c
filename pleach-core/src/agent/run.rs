//! The loop itself: [`Session::run_agent`] starts it as a task, [`AgentRun`] is its handle (events,
//! cancellation, outcome), and each step asks the model, reads its response and runs its calls
//! as one turn of the session, under the `invoke_agent` and `chat` spans.

use std::collections::BTreeSet;
use std::sync::Arc;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::client::{ModelClient, ModelError, ModelRequest, ToolChoice};
use super::options::{AgentOptions, AgentOutcome, StepReport, StopReason};
use super::reading::{Deadline, Step, read_response, until};
use crate::call::ToolCall;
use crate::error::{ErrorCode, ToolError};
use crate::event::{EventSender, EventStream, ToolEvent};
use crate::search::ToolSearch;
use crate::session::{Session, SessionHandle, ToolResult};
use crate::tool::UnifiedToolDefinition;

/// A running agent loop: its events, its cancellation, and its outcome.
///
/// See the [module docs](crate::agent) for a whole run.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use std::sync::Arc;
/// use pleach_core::agent::{AgentOptions, ReplayClient, WireFormat};
/// use pleach_core::{Runtime, SessionOptions, ToolRegistryBuilder};
///
/// let client = ReplayClient::new(WireFormat::OpenAiChat, [concat!(
///     r#"data: {"choices":[{"index":0,"delta":{"content":"Hello!"},"finish_reason":"stop"}]}"#, "\n\n",
///     "data: [DONE]\n\n",
/// )]);
/// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
/// let session = runtime.create_session(SessionOptions::default()).unwrap();
/// session.push_user_message("hi");
/// let run = session.run_agent(Arc::new(client), AgentOptions::default());
/// assert_eq!(run.finish().await.final_text.as_deref(), Some("Hello!"));
/// # }
/// ```
#[derive(Debug)]
pub struct AgentRun {
    events: EventStream,
    signal: CancellationToken,
    driver: tokio::task::JoinHandle<AgentOutcome>,
}

impl AgentRun {
    /// The run's events, every step's, in order: `tool.started` when a call is first seen,
    /// `tool.delta` per arguments fragment as it arrives, then the calls' safety and terminal
    /// events as they run. The stream ends when the run does.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use std::sync::Arc;
    /// use pleach_core::agent::{AgentOptions, ReplayClient, WireFormat};
    /// use pleach_core::{Runtime, SessionOptions, ToolRegistryBuilder};
    ///
    /// // The model calls a tool the session does not have: the call still gets its events.
    /// let client = ReplayClient::new(WireFormat::OpenAiChat, [
    ///     concat!(
    ///         r#"data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"nope","arguments":"{}"}}]}}]}"#, "\n\n",
    ///         r#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#, "\n\n",
    ///     ),
    ///     concat!(
    ///         r#"data: {"choices":[{"index":0,"delta":{"content":"Sorry."},"finish_reason":"stop"}]}"#, "\n\n",
    ///     ),
    /// ]);
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let session = runtime.create_session(SessionOptions::default()).unwrap();
    /// session.push_user_message("hi");
    /// let mut run = session.run_agent(Arc::new(client), AgentOptions::default());
    /// let mut types = Vec::new();
    /// while let Some(event) = run.events().recv().await {
    ///     types.push(event.event_type());
    /// }
    /// assert_eq!(types.first(), Some(&"tool.started"));
    /// assert_eq!(types.last(), Some(&"tool.failed"));
    /// # }
    /// ```
    pub fn events(&mut self) -> &mut EventStream {
        &mut self.events
    }

    /// Cancels the run: the model's response stops being read (the connection is dropped),
    /// calls already seen fail with 1011 without running, and running calls are cancelled.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use std::sync::Arc;
    /// use pleach_core::agent::{AgentOptions, ReplayClient, StopReason, WireFormat};
    /// use pleach_core::{Runtime, SessionOptions, ToolRegistryBuilder};
    ///
    /// let client = ReplayClient::new(WireFormat::OpenAiChat, ["data: [DONE]\n\n"]);
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let session = runtime.create_session(SessionOptions::default()).unwrap();
    /// let run = session.run_agent(Arc::new(client), AgentOptions::default());
    /// run.cancel();
    /// assert_eq!(run.finish().await.stop_reason, StopReason::Cancelled);
    /// # }
    /// ```
    pub fn cancel(&self) {
        self.signal.cancel();
    }

    /// The run's cancellation token.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use std::sync::Arc;
    /// use pleach_core::agent::{AgentOptions, ReplayClient, StopReason, WireFormat};
    /// use pleach_core::{Runtime, SessionOptions, ToolRegistryBuilder};
    ///
    /// let client = ReplayClient::new(WireFormat::OpenAiChat, ["data: [DONE]\n\n"]);
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let session = runtime.create_session(SessionOptions::default()).unwrap();
    /// let run = session.run_agent(Arc::new(client), AgentOptions::default());
    /// let token = run.cancellation_token(); // for a "stop" button elsewhere
    /// token.cancel();
    /// assert_eq!(run.finish().await.stop_reason, StopReason::Cancelled);
    /// # }
    /// ```
    pub fn cancellation_token(&self) -> CancellationToken {
        self.signal.clone()
    }

    /// Waits for the run to end. Read the events first (or drop them): finishing consumes the
    /// run.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use std::sync::Arc;
    /// use pleach_core::agent::{AgentOptions, ReplayClient, StopReason, WireFormat};
    /// use pleach_core::{Runtime, SessionOptions, ToolRegistryBuilder};
    ///
    /// let client = ReplayClient::new(WireFormat::OpenAiChat, [concat!(
    ///     r#"data: {"choices":[{"index":0,"delta":{"content":"Done."},"finish_reason":"stop"}]}"#, "\n\n",
    /// )]);
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let session = runtime.create_session(SessionOptions::default()).unwrap();
    /// session.push_user_message("hi");
    /// let outcome = session.run_agent(Arc::new(client), AgentOptions::default()).finish().await;
    /// assert_eq!(outcome.stop_reason, StopReason::Finished);
    /// assert_eq!(outcome.steps.len(), 1);
    /// # }
    /// ```
    pub async fn finish(self) -> AgentOutcome {
        match self.driver.await {
            Ok(outcome) => outcome,
            Err(error) => {
                tracing::error!(%error, "an agent run's task died");
                AgentOutcome {
                    stop_reason: if error.is_cancelled() {
                        StopReason::Cancelled
                    } else {
                        StopReason::Error(ModelError::Connection(format!(
                            "the agent loop failed: {error}"
                        )))
                    },
                    ..AgentOutcome::default()
                }
            }
        }
    }
}

impl Session {
    /// Runs the agent loop on this session's conversation: asks `client`, runs the calls its
    /// response makes, writes everything back, and asks again, until the model answers without
    /// calling a tool or `options.max_steps` requests were made. Push the user's message first.
    /// Returns at once; read the [`AgentRun`]'s events, then `finish` it.
    ///
    /// Every call seen ends in exactly one `tool.completed` or `tool.failed` and exactly one
    /// result message, whatever became of the stream; a streamed call runs only when its
    /// provider said it was complete. Pending approval interrupts are answered with
    /// [`Session::resolve`] as in any turn. See the [module docs](crate::agent).
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime (the loop runs as a Tokio task).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use std::sync::Arc;
    /// use pleach_core::agent::{AgentOptions, ReplayClient, WireFormat};
    /// use pleach_core::{Message, Runtime, SessionOptions, ToolRegistryBuilder};
    ///
    /// let client = ReplayClient::new(WireFormat::OpenAiChat, [concat!(
    ///     r#"data: {"choices":[{"index":0,"delta":{"content":"Paris."},"finish_reason":"stop"}]}"#, "\n\n",
    /// )]);
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let session = runtime.create_session(SessionOptions::default()).unwrap();
    /// session.push_user_message("The capital of France?");
    /// let outcome = session.run_agent(Arc::new(client), AgentOptions::default().max_steps(4)).finish().await;
    /// assert_eq!(outcome.final_text.as_deref(), Some("Paris."));
    /// assert!(matches!(&session.conversation()[1], Message::Assistant { content: Some(text), .. } if text == "Paris."));
    /// # }
    /// ```
    pub fn run_agent(&self, client: Arc<dyn ModelClient>, options: AgentOptions) -> AgentRun {
        let handle = self.handle();
        let signal = handle.signal().child_token();
        let (sink, events) = crate::event::channel();
        let span = tracing::info_span!(
            target: "pleach::agent",
            "invoke_agent",
            otel.name = "invoke_agent",
            otel.kind = "internal",
            gen_ai.operation.name = "invoke_agent",
            gen_ai.provider.name = client.provider_name(),
            gen_ai.request.model = client.model(),
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            pleach.agent.steps = tracing::field::Empty,
            pleach.agent.stop_reason = tracing::field::Empty,
        );
        let driver =
            tokio::spawn(drive(handle, client, options, sink, signal.clone()).instrument(span));
        AgentRun {
            events,
            signal,
            driver,
        }
    }
}

#[allow(clippy::too_many_lines)] // the loop, one step after another, read top to bottom
async fn drive(
    session: SessionHandle,
    client: Arc<dyn ModelClient>,
    options: AgentOptions,
    sink: EventSender,
    signal: CancellationToken,
) -> AgentOutcome {
    let offered: Vec<_> = session
        .tools()
        .into_iter()
        .filter(|tool| options.offers(tool.name()))
        .collect();
    let deferral = options.tool_search.as_ref();
    // Deferred the provider's way: every deferred tool goes marked deferred on every step, and
    // the provider loads what a search found.
    let native = deferral.filter(|search| search.is_native() && client.native_deferral());
    let deferred = native.map_or_else(Vec::new, |search| deferred_of(&offered, search));
    // The deferred tools a search of this run found: callable from the step after.
    let mut loaded: BTreeSet<String> = BTreeSet::new();
    let mut tools = step_tools(&offered, deferral, &loaded);
    // A timeout too long to reach (`Duration::MAX`) is none.
    let run_deadline = options
        .timeout
        .and_then(|timeout| Instant::now().checked_add(timeout));
    let mut outcome = AgentOutcome::default();
    let stop = loop {
        if outcome.steps.len() >= options.max_steps {
            break StopReason::MaxSteps;
        }
        if let (Some(timeout), Some(at)) = (options.timeout, run_deadline)
            && Instant::now() >= at
        {
            break StopReason::TimedOut(timeout);
        }
        let deadline = step_deadline(&options, run_deadline);
        let conversation = session.conversation();
        let chat = chat_span(client.as_ref());
        let mut request = step_request(&conversation, &tools, &options, outcome.steps.is_empty());
        if let Some(search) = native {
            request.deferred = &deferred;
            request.search_tool = Some(search.tool_name());
        }
        let sent = tokio::select! {
            biased;
            () = signal.cancelled() => break StopReason::Cancelled,
            () = until(deadline.as_ref()) => Err(timed_out(deadline.as_ref())),
            sent = client.send(request).instrument(chat.clone()) => sent,
        };
        let response = match sent {
            Ok(response) => response,
            Err(error) => {
                chat.record("error.type", "model_error");
                chat.record("otel.status_code", "ERROR");
                chat.record("otel.status_description", tracing::field::display(&error));
                break stopped(error, &options, run_deadline);
            }
        };
        let (step, broke) = read_response(
            response,
            &session,
            &options,
            native.map(ToolSearch::tool_name),
            deadline.as_ref(),
            &sink,
            &signal,
        )
        .instrument(chat.clone())
        .await;
        record_usage(&chat, &step.report);
        drop(chat);
        let Step {
            text,
            calls,
            mut failed,
            mut report,
        } = step;
        if let Some(search) = deferral {
            refuse_unloaded(search, &loaded, &calls, &mut failed);
        }
        if calls.is_empty() {
            let answered = broke.is_none() && !signal.is_cancelled();
            if let Some(text) = text.as_ref().filter(|_| answered) {
                session.push_assistant_text(text.clone());
            }
            let cut_off = report.hit_token_limit();
            outcome.steps.push(report);
            if signal.is_cancelled() {
                break StopReason::Cancelled;
            }
            if let Some(error) = broke {
                break stopped(error, &options, run_deadline);
            }
            outcome.final_text = text;
            break if cut_off {
                StopReason::MaxTokens
            } else {
                StopReason::Finished
            };
        }
        let calls_signal = signal.child_token();
        let timer = run_deadline.map(|at| cancel_at(at, calls_signal.clone()));
        report.results = run_calls(&session, text, calls, failed, &sink, &calls_signal).await;
        if let Some(search) = deferral
            && load_found(search, &report.results, &offered, &mut loaded, &sink)
            && native.is_none()
        {
            tools = step_tools(&offered, deferral, &loaded);
        }
        if let Some(timer) = timer {
            timer.abort();
        }
        outcome.steps.push(report);
        if signal.is_cancelled() {
            break StopReason::Cancelled;
        }
        if let Some(error) = broke {
            break stopped(error, &options, run_deadline);
        }
        if let (true, Some(timeout)) = (calls_signal.is_cancelled(), options.timeout) {
            break StopReason::TimedOut(timeout);
        }
    };
    record_run(&outcome, &stop);
    outcome.stop_reason = stop;
    outcome
}

/// The offered tools `search` defers: what native deferral sends marked deferred.
pub(crate) fn deferred_of(
    offered: &[UnifiedToolDefinition],
    search: &ToolSearch,
) -> Vec<UnifiedToolDefinition> {
    offered
        .iter()
        .filter(|tool| search.is_deferred(tool.name()))
        .cloned()
        .collect()
}

/// The tools a step sends: the offered ones, less the deferred ones no search loaded yet.
pub(crate) fn step_tools(
    offered: &[UnifiedToolDefinition],
    deferral: Option<&ToolSearch>,
    loaded: &BTreeSet<String>,
) -> Vec<UnifiedToolDefinition> {
    offered
        .iter()
        .filter(|tool| {
            deferral.is_none_or(|search| {
                !search.is_deferred(tool.name()) || loaded.contains(tool.name())
            })
        })
        .cloned()
        .collect()
}

/// Fails, without running them, the calls of deferred tools no search of this run loaded (1021).
pub(crate) fn refuse_unloaded(
    search: &ToolSearch,
    loaded: &BTreeSet<String>,
    calls: &[ToolCall],
    failed: &mut Vec<Option<ToolError>>,
) {
    for (index, call) in calls.iter().enumerate() {
        let name = call.name();
        if !search.is_deferred(name) || loaded.contains(name) {
            continue;
        }
        if failed.len() < calls.len() {
            failed.resize(calls.len(), None);
        }
        if failed[index].is_none() {
            failed[index] = Some(ToolError::new(
                ErrorCode::ToolNotLoaded,
                format!(
                    "tool `{name}` is not loaded yet: call `{}` with what you need done first; \
                     the tools it finds can be called from your next step on",
                    search.tool_name()
                ),
            ));
        }
    }
}

/// Loads the offered deferred tools the step's successful search calls found, with a
/// `tools.loaded` event per search that found new ones. Returns whether any was new.
fn load_found(
    search: &ToolSearch,
    results: &[ToolResult],
    offered: &[UnifiedToolDefinition],
    loaded: &mut BTreeSet<String>,
    sink: &EventSender,
) -> bool {
    let mut any = false;
    for result in results {
        let (true, Ok(output)) = (
            result.tool_call.name() == search.tool_name(),
            &result.outcome,
        ) else {
            continue;
        };
        let new: Vec<String> = search
            .found_in(output.value())
            .into_iter()
            .filter(|name| {
                offered
                    .binary_search_by(|tool| tool.name().cmp(name))
                    .is_ok()
            })
            .filter(|name| loaded.insert(name.clone()))
            .collect();
        if new.is_empty() {
            continue;
        }
        any = true;
        tracing::info!(
            target: "pleach::search",
            tool_call_id = result.tool_call.id(),
            tools = ?new,
            "tools.loaded"
        );
        sink.send(ToolEvent::ToolsLoaded {
            tool_call_id: Arc::from(result.tool_call.id()),
            tools: new,
        });
    }
    any
}

/// The run's token usage, steps and stop reason on its `invoke_agent` span.
fn record_run(outcome: &AgentOutcome, stop: &StopReason) {
    let span = tracing::Span::current();
    if !span.is_disabled() {
        let sum = |tokens: fn(&StepReport) -> Option<u64>| {
            outcome.steps.iter().filter_map(tokens).reduce(|a, b| a + b)
        };
        if let Some(tokens) = sum(|step| step.input_tokens) {
            span.record("gen_ai.usage.input_tokens", tokens);
        }
        if let Some(tokens) = sum(|step| step.output_tokens) {
            span.record("gen_ai.usage.output_tokens", tokens);
        }
        span.record("pleach.agent.steps", outcome.steps.len());
        span.record("pleach.agent.stop_reason", tracing::field::debug(stop));
    }
}

/// A step's request: the conversation, the tools offered and the run's settings. A forced call
/// holds for the first step only: forced on every step, the model could never answer (the step
/// limit would end every run).
fn step_request<'a>(
    conversation: &'a [crate::conversation::Message],
    tools: &'a [crate::tool::UnifiedToolDefinition],
    options: &'a AgentOptions,
    first: bool,
) -> ModelRequest<'a> {
    let mut request = ModelRequest::new(conversation, tools).options(options);
    let forced = matches!(
        request.tool_choice,
        Some(ToolChoice::Required | ToolChoice::Tool(_))
    );
    if forced && !first {
        request.tool_choice = None;
    }
    request
}

/// Cancels `signal` at `at` (the run's deadline, while a step's calls run), unless aborted first.
fn cancel_at(at: Instant, signal: CancellationToken) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        tokio::time::sleep_until(at).await;
        signal.cancel();
    })
}

/// When this step must be over: its own timeout, or the run's deadline if that comes first.
fn step_deadline(options: &AgentOptions, run_deadline: Option<Instant>) -> Option<Deadline> {
    let step = options.step_timeout.and_then(|timeout| {
        let why = format!(
            "the model step took longer than its timeout of {} (`AgentOptions::step_timeout`); \
             its response was cut off there",
            crate::session::pipeline::human(timeout)
        );
        let at = Instant::now().checked_add(timeout)?;
        Some(Deadline { at, why })
    });
    let run = run_deadline.zip(options.timeout).map(|(at, timeout)| Deadline {
        at,
        why: format!(
            "the run took longer than its timeout of {} (`AgentOptions::timeout`); the model's response was cut off there",
            crate::session::pipeline::human(timeout)
        ),
    });
    match (step, run) {
        (Some(step), Some(run)) => Some(if run.at < step.at { run } else { step }),
        (step, run) => step.or(run),
    }
}

/// The error of a step past its deadline.
fn timed_out(deadline: Option<&Deadline>) -> ModelError {
    ModelError::Timeout(deadline.map_or_else(String::new, |deadline| deadline.why.clone()))
}

/// Why the run stopped on `error`: the run's timeout when its deadline has passed, else the
/// error.
fn stopped(error: ModelError, options: &AgentOptions, run_deadline: Option<Instant>) -> StopReason {
    match (options.timeout, run_deadline) {
        (Some(timeout), Some(at)) if Instant::now() >= at => StopReason::TimedOut(timeout),
        _ => StopReason::Error(error),
    }
}

/// The span of one model request: `chat {model}`, after the conventions for generative AI.
fn chat_span(client: &dyn ModelClient) -> tracing::Span {
    tracing::info_span!(
        target: "pleach::agent",
        "chat",
        otel.name = %format_args!("chat {}", client.model().unwrap_or("model")),
        otel.kind = "client",
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = client.provider_name(),
        gen_ai.request.model = client.model(),
        gen_ai.response.finish_reasons = tracing::field::Empty,
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.usage.output_tokens = tracing::field::Empty,
        error.type = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
        otel.status_description = tracing::field::Empty,
    )
}

/// A step's token usage and finish reason on its `chat` span.
fn record_usage(span: &tracing::Span, report: &StepReport) {
    if span.is_disabled() {
        return;
    }
    if let Some(tokens) = report.input_tokens {
        span.record("gen_ai.usage.input_tokens", tokens);
    }
    if let Some(tokens) = report.output_tokens {
        span.record("gen_ai.usage.output_tokens", tokens);
    }
    if let Some(reason) = &report.finish_reason {
        span.record("gen_ai.response.finish_reasons", reason.as_str());
    }
}

/// Runs a step's calls as one turn of the session, forwarding its events.
async fn run_calls(
    session: &SessionHandle,
    text: Option<String>,
    calls: Vec<ToolCall>,
    failed: Vec<Option<ToolError>>,
    sink: &EventSender,
    signal: &CancellationToken,
) -> Vec<ToolResult> {
    let (step_sink, mut step_events) = crate::event::channel();
    let turn = session.run_streamed_step(text, calls, failed, step_sink, signal.child_token());
    tokio::pin!(turn);
    let results = loop {
        tokio::select! {
            results = &mut turn => break results,
            Some(event) = step_events.recv() => sink.send(event),
        }
    };
    for event in step_events.drain() {
        sink.send(event);
    }
    results
}
