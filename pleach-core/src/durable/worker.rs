//! The work of a durable engine's activities, engine-neutral: a model step and a call, each on a
//! fresh session of the worker's runtime holding the conversation (or the turn) it belongs to.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use tracing::Instrument as _;

use tokio_util::sync::CancellationToken;

use super::wire::wire;
use super::{Approval, CallOutcome, CallRequest, ModelStep, PlannedCall, StepFailure};
use crate::agent::{AgentOptions, ModelClient, ModelError, ModelRequest};
use crate::conversation::Message;
use crate::error::{ErrorCode, ToolError};
use crate::event::ToolEvent;
use crate::runtime::Runtime;
use crate::search::ToolSearch;
use crate::session::{Session, SessionOptions};
use crate::tool::UnifiedToolDefinition;

/// What a worker process runs for a durable engine: model steps through the conversation's model
/// client, calls through its runtime's pipeline. Cheap to clone.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use pleach_core::durable::{CallOutcome, CallRequest, Worker};
/// use pleach_core::{Runtime, ToolCall, ToolRegistryBuilder};
///
/// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
/// let worker = Worker::new(runtime);
/// let outcome = worker.tool_call(CallRequest::new(ToolCall::new("c1", "missing", "{}"), Vec::new())).await;
/// let CallOutcome::Finished { result, events } = outcome else { unreachable!() };
/// assert_eq!(result.outcome.unwrap_err().code().as_u16(), 1003);
/// assert_eq!(events[0]["type"], "tool.failed");
/// # }
/// ```
#[derive(Clone)]
pub struct Worker {
    runtime: Runtime,
    session: SessionOptions,
    agent: AgentOptions,
    max_history_content_bytes: usize,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("runtime", &self.runtime)
            .field("session", &self.session)
            .field("agent", &self.agent)
            .field("max_history_content_bytes", &self.max_history_content_bytes)
            .finish_non_exhaustive()
    }
}

impl Worker {
    /// A worker running `runtime`'s tools (every one enabled).
    ///
    /// ```
    /// let runtime = pleach_core::Runtime::builder().registry(pleach_core::ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let worker = pleach_core::durable::Worker::new(runtime);
    /// assert_eq!(worker.runtime().registry().len(), 0);
    /// ```
    pub fn new(runtime: Runtime) -> Self {
        Worker {
            runtime,
            session: SessionOptions::all(),
            agent: AgentOptions::default(),
            max_history_content_bytes: crate::defaults::MAX_HISTORY_CONTENT_BYTES,
        }
    }

    /// Sets the most bytes of content blocks (images, audio, files) one call's result may hold
    /// (default [`defaults::MAX_HISTORY_CONTENT_BYTES`](crate::defaults::MAX_HISTORY_CONTENT_BYTES),
    /// 1 MiB). The result crosses into the engine's history: a larger one would be refused there
    /// (Temporal: 2 MiB a payload) and fail the workflow, so the call fails with 1019 instead,
    /// its error saying how big the blocks were and to return a resource link to the data.
    ///
    /// ```
    /// use pleach_core::{durable::Worker, Runtime, ToolRegistryBuilder};
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let worker = Worker::new(runtime).max_history_content_bytes(256 * 1024);
    /// assert!(format!("{worker:?}").contains("max_history_content_bytes: 262144"));
    /// ```
    #[must_use]
    pub fn max_history_content_bytes(mut self, bytes: usize) -> Self {
        self.max_history_content_bytes = bytes;
        self
    }

    /// Sets the sessions' options: which tools the conversations enable (default: all of the
    /// runtime's).
    ///
    /// ```
    /// use pleach_core::{durable::Worker, Runtime, SessionOptions, ToolRegistryBuilder};
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let worker = Worker::new(runtime).session_options(SessionOptions::enabled(["math"]));
    /// assert!(format!("{worker:?}").contains(r#"enabled: ["math"]"#));
    /// ```
    #[must_use]
    pub fn session_options(mut self, options: SessionOptions) -> Self {
        self.session = options;
        self
    }

    /// Sets the agent options each model step reads (default [`AgentOptions::default`]): their
    /// request settings, the tools offered, the response size cap and the deferred tools
    /// ([`AgentOptions::tool_search`]: each step sends the deferred tools the conversation's
    /// searches found, or all of them marked deferred when the search is native and the client
    /// defers natively; a deferred tool called before a search found it fails with 1021). The
    /// durable loop counts steps with its own [`DurableOptions`](super::DurableOptions).
    ///
    /// ```
    /// use pleach_core::agent::AgentOptions;
    /// use pleach_core::{durable::Worker, Runtime, ToolRegistryBuilder};
    /// let runtime = Runtime::builder().registry(ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let worker = Worker::new(runtime).agent_options(AgentOptions::default().max_response_bytes(1 << 20));
    /// assert!(format!("{worker:?}").contains("max_response_bytes: 1048576"));
    /// ```
    #[must_use]
    pub fn agent_options(mut self, options: AgentOptions) -> Self {
        self.agent = options;
        self
    }

    /// The runtime the calls run on.
    ///
    /// ```
    /// let runtime = pleach_core::Runtime::builder().registry(pleach_core::ToolRegistryBuilder::new().build().unwrap()).build().unwrap();
    /// let worker = pleach_core::durable::Worker::new(runtime);
    /// assert!(worker.runtime().registry().is_empty());
    /// ```
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// A session holding `conversation`.
    fn session(&self, conversation: Vec<Message>) -> Result<Session, String> {
        let session = self
            .runtime
            .create_session(self.session.clone())
            .map_err(|error| error.to_string())?;
        session.restore_conversation(conversation);
        Ok(session)
    }

    /// One model step: asks `client` with `conversation` and the session's tools, reads the
    /// whole response (calls assembled as in the in-process loop), and plans each call: its lane
    /// and whether its tool is idempotent.
    ///
    /// # Errors
    ///
    /// The request failed ([`StepFailure::transient`] for a dropped connection, a timeout, a rate
    /// limit or a server error), or the worker's session options name tools its runtime lacks.
    pub async fn model_step(
        &self,
        client: &dyn ModelClient,
        conversation: Vec<Message>,
        trace_context: &BTreeMap<String, String>,
    ) -> Result<ModelStep, StepFailure> {
        let span = activity_span("model_step", trace_context);
        self.model_step_in(client, conversation)
            .instrument(span)
            .await
    }

    async fn model_step_in(
        &self,
        client: &dyn ModelClient,
        conversation: Vec<Message>,
    ) -> Result<ModelStep, StepFailure> {
        let session = self
            .session(conversation.clone())
            .map_err(|message| StepFailure {
                message,
                transient: false,
            })?;
        let handle = session.handle();
        let offered = self.offered(&session);
        // Deferred tools as in `Session::run_agent`, the loaded ones read from the conversation
        // (a step keeps no state): natively, every deferred tool goes marked deferred on every
        // step; pleach's way, a step sends the deferred tools a search in the conversation found.
        let deferral = self.agent.tool_search.as_ref();
        let native = deferral.filter(|search| search.is_native() && client.native_deferral());
        let loaded = deferral.map_or_else(BTreeSet::new, |search| {
            loaded_in(search, &conversation, &offered)
        });
        let deferred = native.map_or_else(Vec::new, |search| {
            crate::agent::deferred_of(&offered, search)
        });
        let no_loads = BTreeSet::new();
        let sent_loaded = if native.is_some() { &no_loads } else { &loaded };
        let tools = crate::agent::step_tools(&offered, deferral, sent_loaded);
        let mut request = ModelRequest::new(&conversation, &tools).options(&self.agent);
        if let Some(search) = native {
            request.deferred = &deferred;
            request.search_tool = Some(search.tool_name());
        }
        let response = client.send(request).await.map_err(|error| StepFailure {
            transient: transient(&error),
            message: error.to_string(),
        })?;
        let (sink, mut stream) = crate::event::channel();
        let (mut step, broke) = crate::agent::read_response(
            response,
            &handle,
            &self.agent,
            native.map(ToolSearch::tool_name),
            None,
            &sink,
            &CancellationToken::new(),
        )
        .await;
        drop(sink);
        if let Some(search) = deferral {
            crate::agent::refuse_unloaded(search, &loaded, &step.calls, &mut step.failed);
        }
        let events = stream.drain().iter().map(wire).collect();
        let mut failed = step.failed.into_iter();
        let calls = step
            .calls
            .into_iter()
            .map(|call| (call, failed.next().flatten()))
            .map(|(call, failed)| {
                let lane = self.runtime.lane_of(&call);
                // A tool the runtime does not know fails at lookup: running that again is harmless.
                let idempotent = self.runtime.is_idempotent(call.name()).unwrap_or(true);
                PlannedCall {
                    failed,
                    ..PlannedCall::new(call, lane, idempotent)
                }
            })
            .collect();
        Ok(ModelStep {
            text: step.text,
            calls,
            events,
            broke: broke.map(|error| error.to_string()),
            input_tokens: step.report.input_tokens,
            output_tokens: step.report.output_tokens,
        })
    }

    /// Runs one call through the pipeline (validation, the safety stage, limits, timeout, events)
    /// in a session holding its conversation. A call that needs the user's approval does not
    /// wait: it comes back [`Interrupted`](CallOutcome::Interrupted), to be sent again with the
    /// decision, which is checked as [`Session::resume`] checks one (bound to the call's
    /// fingerprint, an edit validated, no decision for a `critical` tool).
    pub async fn tool_call(&self, request: CallRequest) -> CallOutcome {
        let span = activity_span("tool_call", &request.trace_context);
        self.tool_call_in(request).instrument(span).await
    }

    async fn tool_call_in(&self, request: CallRequest) -> CallOutcome {
        let CallRequest {
            call,
            conversation,
            approval,
            failures,
            ..
        } = request;
        let session = match self.session(conversation) {
            Ok(session) => session,
            Err(message) => {
                let error = ToolError::new(ErrorCode::ToolNotEnabled, message);
                return CallOutcome::failed(call, error);
            }
        };
        session.count_failures(&call, failures);
        // The decision taken: announced once the worker accepted it, as `Session::resolve` does.
        let mut resolved = None;
        let approved = match &approval {
            Some(Approval {
                interrupt,
                decision,
            }) => {
                if interrupt.tool_call.id() != call.id() {
                    return CallOutcome::Refused {
                        reason: "the approval is for another call".to_owned(),
                    };
                }
                if let Err(error) = session.accept_decision(interrupt, decision) {
                    return CallOutcome::Refused {
                        reason: error.to_string(),
                    };
                }
                resolved = Some(ToolEvent::InterruptResolved {
                    tool_call_id: Arc::from(call.id()),
                    interrupt_id: interrupt.id.clone(),
                    action: decision.action.name(),
                });
                Some(decision.action.clone())
            }
            None => None,
        };
        // A search call: the deferred tools the conversation had loaded before it.
        let loaded_before = self
            .search_named(call.name())
            .map(|search| loaded_in(search, &session.conversation(), &self.offered(&session)));
        let (sender, mut stream) = crate::event::channel();
        let signal = CancellationToken::new();
        let dispatching = session.dispatch_with(call, &sender, &signal, approved);
        tokio::pin!(dispatching);
        let mut collected = Collected::default();
        collected.events.extend(resolved.as_ref().map(wire));
        let mut result = loop {
            tokio::select! {
                result = &mut dispatching => break result,
                Some(event) = stream.recv() => collected.push(event, &signal),
            }
        };
        for event in stream.drain() {
            collected.push(event, &signal);
        }
        if let Some(error) = over_history_limit(&result.outcome, self.max_history_content_bytes) {
            // The history gets the refusal, its terminal event included: never the blobs.
            result.outcome = Err(error);
            let failed = crate::session::terminal_event(&result.tool_call, &result.outcome);
            collected
                .events
                .retain(|event| event["type"] != "tool.completed");
            collected.events.push(wire(&failed));
        }
        if let Some(loaded) =
            loaded_before.and_then(|before| self.newly_loaded(&session, &result, &before))
        {
            collected.events.push(wire(&loaded));
        }
        match collected.interrupt {
            Some(interrupt) => CallOutcome::Interrupted {
                interrupt,
                events: collected.events,
            },
            None => CallOutcome::Finished {
                result,
                events: collected.events,
            },
        }
    }
}

impl Worker {
    /// The tool search of the worker's agent options, when its tool is `name`.
    fn search_named(&self, name: &str) -> Option<&ToolSearch> {
        self.agent
            .tool_search
            .as_ref()
            .filter(|search| search.tool_name() == name)
    }

    /// The session's tools the agent options offer the model.
    fn offered(&self, session: &Session) -> Vec<UnifiedToolDefinition> {
        session
            .handle()
            .tools()
            .into_iter()
            .filter(|tool| self.agent.offers(tool.name()))
            .collect()
    }

    /// The `tools.loaded` event of a successful search call whose result names offered deferred
    /// tools not among `before` (those loaded before it), as `Session::run_agent` announces them.
    fn newly_loaded(
        &self,
        session: &Session,
        result: &crate::session::ToolResult,
        before: &BTreeSet<String>,
    ) -> Option<ToolEvent> {
        let search = self.search_named(result.tool_call.name())?;
        let output = result.outcome.as_ref().ok()?;
        let offered = self.offered(session);
        let tools: Vec<String> = search
            .found_in(output.value())
            .into_iter()
            .filter(|name| !before.contains(name) && offered.iter().any(|tool| tool.name() == name))
            .collect();
        (!tools.is_empty()).then(|| ToolEvent::ToolsLoaded {
            tool_call_id: Arc::from(result.tool_call.id()),
            tools,
        })
    }
}

/// The offered deferred tools the search calls in `conversation` found (their successful
/// results): what `Session::run_agent` would have loaded by this step.
fn loaded_in(
    search: &ToolSearch,
    conversation: &[Message],
    offered: &[UnifiedToolDefinition],
) -> BTreeSet<String> {
    conversation
        .iter()
        .filter_map(|message| match message {
            Message::Tool {
                tool_call,
                content,
                is_error: false,
                ..
            } if tool_call.name() == search.tool_name() => {
                serde_json::from_str::<serde_json::Value>(content).ok()
            }
            _ => None,
        })
        .flat_map(|result| search.found_in(&result))
        .filter(|name| offered.iter().any(|tool| tool.name() == name))
        .collect()
}

/// The refusal of a result whose content blocks hold more than `limit` bytes (1019).
fn over_history_limit(
    outcome: &Result<crate::content::ToolOutput, ToolError>,
    limit: usize,
) -> Option<ToolError> {
    let output = outcome.as_ref().ok()?;
    let bytes: usize = output
        .content
        .iter()
        .map(crate::content::ContentBlock::len)
        .sum();
    (bytes > limit).then(|| {
        let blocks: Vec<String> = output
            .content
            .iter()
            .map(crate::content::ContentBlock::summary)
            .collect();
        ToolError::new(
            ErrorCode::ContentRefused,
            format!(
                "the tool's content ({}) is {}, over this durable conversation's limit of {} for \
                 one result; ask for less (a smaller image, a page of the document)",
                blocks.join(", "),
                crate::content::human_size(bytes),
                crate::content::human_size(limit),
            ),
        )
        .with_detail(
            "a durable conversation keeps every result in its engine's history; \
             Worker::max_history_content_bytes sets the limit",
        )
    })
}

/// A call's events as a worker keeps them: `tool.started` left out (the step announced the call),
/// and once an interrupt is raised, the call stopped and nothing after it kept.
#[derive(Default)]
struct Collected {
    events: Vec<serde_json::Value>,
    interrupt: Option<crate::safety::Interrupt>,
}

impl Collected {
    fn push(&mut self, event: ToolEvent, signal: &CancellationToken) {
        if self.interrupt.is_some() || matches!(event, ToolEvent::Started { .. }) {
            return;
        }
        self.events.push(wire(&event));
        if let ToolEvent::InterruptRequested { interrupt } = event {
            self.interrupt = Some(interrupt.as_ref().clone());
            // The call does not wait here: the engine keeps the interrupt, and the call runs
            // again with the decision.
            signal.cancel();
        }
    }
}

/// The span a worker's model step or call runs in: a child of the conversation's trace context
/// when it carries one (feature `otel`), so the call's `execute_tool` span joins the trace of
/// whoever started the conversation.
fn activity_span(kind: &'static str, trace_context: &BTreeMap<String, String>) -> tracing::Span {
    let span = tracing::info_span!(
        target: "pleach::durable",
        "durable_activity",
        otel.name = %format_args!("pleach.durable.{kind}"),
        otel.kind = "internal",
    );
    #[cfg(feature = "otel")]
    {
        let headers: std::collections::HashMap<String, String> = trace_context
            .iter()
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        crate::trace_context::adopt(&span, &headers);
    }
    #[cfg(not(feature = "otel"))]
    let _ = trace_context;
    span
}

/// Whether asking again may help.
fn transient(error: &ModelError) -> bool {
    match error {
        ModelError::Connection(_) | ModelError::Timeout(_) | ModelError::RateLimited { .. } => true,
        ModelError::Status { status, .. } => *status >= 500 || *status == 408,
        _ => false,
    }
}
