//! A `tools/call` through the runtime: the session it runs in (this server's, or one restored
//! from the session store), approvals asked of the client, progress reported, and the slot an
//! HTTP request reserved for it.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitResult,
    InputRequiredResult, ProgressNotificationParam, ProgressToken, ResultType,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::McpServer;
use super::questions::{Question, Questions};
use crate::approval::Asking;
use pleach_core::call::ToolCall;
use pleach_core::event::ToolEvent;
use pleach_core::runtime::Runtime;
use pleach_core::safety::{Action, Decision, DecisionError, Interrupt};
use pleach_core::session::{Session, SessionError, SessionOptions};

/// A `tools/call` checked and ready to run: what [`McpServer::drive`] needs of it.
struct Prepared {
    /// The call as the model issued it, and the answers and decision its retry carried.
    questions: Questions,
    /// The call as issued: a failure counts against it.
    issued: ToolCall,
    /// How an approval is asked of this client.
    asking: Asking,
    /// Whether the request was stateless HTTP (no channel back to the client).
    stateless: bool,
}

impl McpServer {
    /// Runs one `tools/call`: in a session of its own with the MCP session's persisted state
    /// when there is a session store and the request belongs to an MCP session, else in this
    /// server's session.
    ///
    /// One future holds the request, the prepared call and the call's pipeline once each: an
    /// `async fn` that awaits another taking its arguments by value keeps both copies, so the
    /// steps below take references.
    pub(super) fn run_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> tracing::instrument::Instrumented<
        impl Future<Output = Result<CallToolResponse, ErrorData>> + Send + '_,
    > {
        let span = crate::span::request("tools/call", Some(&request.name), &context);
        let marked = span.clone();
        async move {
            let answered = self.answer(&request, &context).await;
            if let Err(error) = &answered {
                crate::span::failed(&marked, error.code.0);
            }
            answered
        }
        .instrument(span)
    }

    /// The call's answer: from a session restored from the store when the request belongs to an
    /// MCP session kept there, else from this server's session.
    async fn answer(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        #[cfg(feature = "redis")]
        if let Some(store) = &self.store
            && let Some(session_id) = crate::span::session_id(context)
        {
            // Boxed: a store's round trips would size every call's future.
            return Box::pin(self.run_call_persisted(store, &session_id, request, context)).await;
        }
        self.run_here(request, context).await
    }

    /// Restores the persisted state of MCP session `session_id` into a fresh session, runs the
    /// call there, and writes back the state it changed. Calls of one MCP session may run at the
    /// same time on different replicas: each writes only what it changed, so calls that change
    /// different state do not undo each other (of two that change the same, the later write
    /// stays).
    #[cfg(feature = "redis")]
    async fn run_call_persisted(
        &self,
        store: &crate::store::RedisSessionStore,
        session_id: &str,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let unavailable = |error: &dyn std::fmt::Display| {
            ErrorData::internal_error(format!("{error}; the call did not run"), None)
        };
        let server = self
            .with_new_session()
            .map_err(|error| unavailable(&error))?;
        let loaded = store
            .load_state(session_id)
            .await
            .map_err(|error| unavailable(&error))?;
        if let Err(error) = server.session().restore_state(&loaded) {
            // Saved by an incompatible version: that state starts afresh rather than the
            // session being unusable.
            tracing::warn!("MCP session {session_id}: {error}; it starts afresh");
        }
        let response = server.run_here(request, context).await;
        let changed: serde_json::Map<String, Value> = server
            .session()
            .save_state()
            .into_iter()
            .filter(|(key, value)| loaded.get(key) != Some(value))
            .collect();
        if let Err(error) = store.save_state(session_id, &changed).await {
            // The call ran; its result still goes back. What it changed in the session's state
            // is lost, and the operator is told.
            tracing::error!("MCP session {session_id}: {error}");
        }
        response
    }

    /// [`prepare`](McpServer::prepare)s the call, then [`drive`](McpServer::drive)s it, in this
    /// server's session.
    async fn run_here(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Not matched around the `await`: the matched result would be kept beside it.
        let mut prepared = self.prepare(request, context)?;
        self.drive(&mut prepared, context).await
    }

    /// Checks one `tools/call`, or its retry with the user's answer to an approval (MCP
    /// 2026-07-28), and readies it for [`drive`](McpServer::drive): the tool known, the call
    /// made, the client's capabilities set on the session.
    fn prepare(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<Prepared, ErrorData> {
        let name = request.name.as_ref();
        if !self.shared.tools.iter().any(|tool| tool.name == name) {
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{name}`: `tools/list` names the tools this server has"),
                None,
            ));
        }
        // The arguments' text, written from the request's own map (not a copy of it).
        let arguments = match &request.arguments {
            Some(arguments) => serde_json::to_string(arguments)
                .map_err(|error| ErrorData::invalid_params(error.to_string(), None))?,
            None => "{}".to_owned(),
        };
        let id = format!(
            "mcp_{}",
            self.shared.calls.fetch_add(1, Ordering::Relaxed) + 1
        );
        let call = ToolCall::new(id, name, arguments);
        // A client that can elicit asks its user about a call that needs approval; for one that
        // cannot, such a call fails at once (1012) instead of waiting.
        let asking = crate::approval::asking(context);
        // With a session store, the client's answer to an `elicitation/create` could reach
        // another replica than the one waiting for it: such clients are not asked.
        #[cfg(feature = "redis")]
        let asking = match asking {
            Asking::Request(_) if self.store.is_some() => Asking::Cannot,
            asking => asking,
        };
        self.session()
            .set_takes_approvals(!matches!(asking, Asking::Cannot));
        // A tool's own requests go to the client during the call when it declared the
        // capability and has a channel back (before 2026-07-28); a 2026-07-28 client that
        // declared it is asked through input-required results (`questions`). For any other,
        // they fail at once with 1020.
        let stateless = !crate::approval::can_request(context);
        let requests = self.channel_back && !stateless;
        #[cfg(feature = "redis")]
        let requests = requests && self.store.is_none();
        let declared = context.client_capabilities();
        let elicits = match asking {
            Asking::Request(_) => requests,
            Asking::InputRequired => true,
            Asking::Cannot => false,
        };
        let samples = (requests || stateless)
            && declared.is_some_and(|capabilities| capabilities.sampling.is_some());
        self.session().set_client_capabilities(elicits, samples);
        let invalid = |message: String| ErrorData::invalid_params(message, None);
        let questions = match request.request_state.as_deref() {
            // The retry of a call whose tool asked a question (2026-07-28): the answers so far.
            Some(sealed) if Questions::sealed_here(sealed) => Questions::open(
                sealed,
                &self.shared.interrupt_key,
                &call,
                request.input_responses.as_ref(),
            )
            .map_err(invalid)?,
            // The retry of a call the user was asked about (2026-07-28): their answer decides.
            Some(sealed) => {
                let (ran, approved) =
                    self.resume(&call, sealed, request.input_responses.as_ref())?;
                Questions::new(&call, ran, approved)
            }
            None => Questions::new(&call, call.clone(), None),
        };
        Ok(Prepared {
            questions,
            issued: call,
            asking,
            stateless,
        })
    }

    /// The call a sealed interrupt was raised for and the user's decision on it, checked: the
    /// seal, the retried call against the sealed one, and the decision against the session.
    fn resume(
        &self,
        call: &ToolCall,
        sealed: &str,
        answers: Option<&rmcp::model::InputResponses>,
    ) -> Result<(ToolCall, Option<Action>), ErrorData> {
        let invalid = |message: String| ErrorData::invalid_params(message, None);
        let interrupt =
            Interrupt::open_with(sealed, &self.shared.interrupt_key).map_err(|error| {
                invalid(format!(
                    "the `requestState` is not an approval this server sealed ({error}); behind a \
                 load balancer, every replica needs the same interrupt key"
                ))
            })?;
        if pleach_core::safety::fingerprint(call) != interrupt.fingerprint {
            return Err(invalid(format!(
                "the `requestState` is an approval for another call (`{}` with other arguments): \
                 retry the call the approval was asked for",
                interrupt.tool_call.name()
            )));
        }
        let answer = answers
            .and_then(|answers| answers.get(crate::approval::INPUT_KEY))
            .ok_or_else(|| {
                invalid(format!(
                    "the retry carries no `inputResponses.{}`: the user's answer to the approval",
                    crate::approval::INPUT_KEY
                ))
            })?;
        let answer: ElicitResult = serde_json::from_value(answer.clone()).map_err(|error| {
            invalid(format!(
                "`inputResponses.{}` is not an elicitation result: {error}",
                crate::approval::INPUT_KEY
            ))
        })?;
        let mut decision = crate::approval::decide(&interrupt, &answer);
        if let Err(error) = self.session().accept_decision(&interrupt, &decision) {
            decision = refused(&interrupt, &error);
            self.session()
                .accept_decision(&interrupt, &decision)
                .map_err(|error| invalid(error.to_string()))?;
        }
        Ok((interrupt.tool_call, Some(decision.action)))
    }

    /// Runs the `prepared` call to its end in this request's task (with the user's decision, when
    /// its retry carried one): its deltas sent as progress when the client asked for it, an
    /// approval asked as its `asking` says, cancelled through its signal when the client cancels
    /// the request or the server stops.
    async fn drive(
        &self,
        prepared: &mut Prepared,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Prepared {
            questions,
            issued,
            asking,
            stateless,
        } = prepared;
        let stateless = *stateless;
        let progress_token = context.meta.get_progress_token();
        // The session's own deadline (1016) ends the wait first; the request's is a backstop.
        let ask_timeout = self.shared.runtime.approval_timeout() + Duration::from_secs(1);
        let (sender, mut events) = pleach_core::event::channel();
        // A child of the server's shutdown, so a drain's end cancels the call without the call
        // waiting on the token every request shares (registering with it takes its lock).
        let signal = self.shutdown.child_token();
        let ((call, approved), slot) = (questions.run(), reserved_slot(context));
        let dispatching = self
            .session()
            .dispatch_reserved(call, &sender, &signal, approved, slot);
        tokio::pin!(dispatching);
        let mut input_required = None;
        let mut progress = 0_u32;
        let peer = &context.peer;
        let notifier = crate::client::Notifier::new(context);
        let mut waiting: Option<Pin<Box<dyn Future<Output = Asked> + Send>>> = None;
        // What goes to the client during the call is sent through a boxed future: most calls send
        // nothing, and that future, held in place, would size every call's future (3.5 kB
        // against 2.4 kB).
        let result = loop {
            tokio::select! {
                result = &mut dispatching => break result,
                Some(event) = events.recv() => match event {
                    event if for_client(&event) => {
                        Box::pin(self.tell_client(event, progress_token.as_ref(), &mut progress, &notifier)).await;
                    }
                    event @ (ToolEvent::ElicitationRequested { .. } | ToolEvent::SamplingRequested { .. }) if stateless => {
                        self.put(questions, event, &mut input_required, &signal);
                    }
                    ToolEvent::ElicitationRequested { request } => {
                        tokio::spawn(crate::client::elicit(peer.clone(), context.id.clone(), request));
                    }
                    ToolEvent::SamplingRequested { request } => {
                        tokio::spawn(crate::client::sample(peer.clone(), context.id.clone(), request));
                    }
                    ToolEvent::InterruptRequested { interrupt } => match asking {
                        Asking::Request(peer) => {
                            let peer = peer.clone();
                            waiting = Some(Box::pin(async move {
                                let decision =
                                    crate::approval::ask(peer, Arc::clone(&interrupt), ask_timeout).await;
                                (interrupt, decision)
                            }));
                        }
                        // The call ends here; the client asks its user and retries it with the
                        // answer and the sealed interrupt.
                        Asking::InputRequired => {
                            let sealed = interrupt.seal_with(&self.shared.interrupt_key);
                            input_required = Some(crate::approval::input_required(&interrupt, sealed));
                            signal.cancel();
                        }
                        Asking::Cannot => {}
                    },
                    _ => {}
                },
                asked = async { waiting.as_mut().expect("polled only while waiting").await }, if waiting.is_some() => {
                    waiting = None;
                    self.decide(asked);
                }
                () = context.ct.cancelled(), if !signal.is_cancelled() => signal.cancel(),
            }
        };
        // Progress sent before the result and not read yet goes out before it.
        for event in events.drain().into_iter().filter(for_client) {
            Box::pin(self.tell_client(event, progress_token.as_ref(), &mut progress, &notifier))
                .await;
        }
        if let Some(input_required) = input_required {
            return input_required
                .map(CallToolResponse::InputRequired)
                .map_err(|error| ErrorData::internal_error(error, None));
        }
        let outcome = result.outcome;
        // MCP has no user turns to reset the repeated-failure count: once a call has been refused
        // for repeating (1015), its count starts over, so a later try (the file now exists, the
        // service is back) runs instead of being refused for the rest of the connection.
        if outcome
            .as_ref()
            .is_err_and(|error| error.code() == pleach_core::ErrorCode::RepeatedFailure)
        {
            self.session().forget_failures_of(issued);
        }
        Ok(CallToolResponse::Complete(call_tool_result(outcome)?))
    }
}

/// A call's outcome as rmcp's result, the same as
/// [`call_tool_result`](pleach_core::providers::mcp_tools::call_tool_result)'s JSON.
///
/// Built directly, not through that JSON: a value, an error, text and media blocks without
/// annotations (nearly every result), so an image's base64 is made once and moved into the
/// result, never copied into a JSON value and out again. Other blocks go through the JSON of
/// [`content_block`](pleach_core::providers::mcp_tools::content_block), which knows every kind.
/// The result carries `resultType: "complete"` as rmcp's own constructors set it (MCP
/// 2026-07-28 requires it; rmcp strips it for a peer that negotiated an older version, so those
/// keep the shape they know).
fn call_tool_result(
    outcome: Result<pleach_core::ToolOutput, pleach_core::ToolError>,
) -> Result<CallToolResult, ErrorData> {
    let mut result = match outcome {
        Ok(output) => {
            let mut content = Vec::with_capacity(output.content.len() + 1);
            let structured = match output.structured {
                Some(Value::String(text)) => {
                    content.push(ContentBlock::text(text));
                    None
                }
                Some(value) => {
                    content.push(ContentBlock::text(value.to_string()));
                    Some(value).filter(Value::is_object)
                }
                None => None,
            };
            for block in output.content {
                content.push(content_block(block)?);
            }
            let mut result = CallToolResult::success(content);
            result.structured_content = structured;
            result
        }
        Err(error) => CallToolResult::error(vec![ContentBlock::text(error.model_text())]),
    };
    result.result_type = Some(ResultType::COMPLETE);
    Ok(result)
}

/// One block as rmcp's: text and media without annotations directly (the bytes base64-encoded
/// once, into the string the result keeps), any other through
/// [`content_block`](pleach_core::providers::mcp_tools::content_block)'s JSON.
fn content_block(block: pleach_core::ContentBlock) -> Result<ContentBlock, ErrorData> {
    use pleach_core::content::Block;
    let pleach_core::ContentBlock {
        block, annotations, ..
    } = block;
    Ok(match (block, annotations) {
        (Block::Text(text), None) => ContentBlock::text(text),
        (Block::Image(media), None) => ContentBlock::image(media.base64(), media.mime_type),
        (Block::Audio(media), None) => ContentBlock::audio(media.base64(), media.mime_type),
        (block, annotations) => {
            let mut other = pleach_core::ContentBlock::from(block);
            other.annotations = annotations;
            serde_json::from_value(pleach_core::providers::mcp_tools::content_block(&other))
                .map_err(|error| ErrorData::internal_error(error.to_string(), None))?
        }
    })
}

/// A slot of the runtime an HTTP request took before it was read (`http`'s guard, which answers
/// 503 when there is none), for the call the request carries: held in the request's extensions
/// until the call takes it, given back when the request ends without a call.
#[cfg(feature = "http")]
#[derive(Clone, Debug)]
pub(crate) struct ReservedSlot(Arc<std::sync::Mutex<Option<pleach_core::runtime::CallSlot>>>);

#[cfg(feature = "http")]
impl ReservedSlot {
    pub(crate) fn new(slot: pleach_core::runtime::CallSlot) -> ReservedSlot {
        ReservedSlot(Arc::new(std::sync::Mutex::new(Some(slot))))
    }

    fn take(&self) -> Option<pleach_core::runtime::CallSlot> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }
}

/// The slot the HTTP request of `context` took for its call, if it took one.
#[cfg(feature = "http")]
fn reserved_slot(context: &RequestContext<RoleServer>) -> Option<pleach_core::runtime::CallSlot> {
    context
        .extensions
        .get::<axum::http::request::Parts>()?
        .extensions
        .get::<ReservedSlot>()?
        .take()
}

#[cfg(not(feature = "http"))]
fn reserved_slot(_context: &RequestContext<RoleServer>) -> Option<pleach_core::runtime::CallSlot> {
    None
}

/// A session for MCP calls. The client keeps the conversation: the session writes none (a long
/// connection would otherwise keep every call's arguments and result). Whether it takes
/// approvals is set per call, from the client (see `run_call`).
pub(super) fn open_session(runtime: &Runtime) -> Result<Session, SessionError> {
    Ok(runtime
        .create_session(SessionOptions::all())?
        .without_conversation())
}

/// Whether `event` goes to the client during its call ([`McpServer::tell_client`]).
fn for_client(event: &ToolEvent) -> bool {
    matches!(
        event,
        ToolEvent::Delta { .. } | ToolEvent::Log { .. } | ToolEvent::Progress { .. }
    )
}

/// An interrupt and the user's answer to it.
type Asked = (Arc<Interrupt>, Decision);

/// The rejection that stands for a decision the session refused (edited arguments that do not
/// validate, say): the call still ends in a result, saying why.
fn refused(interrupt: &Interrupt, error: &DecisionError) -> Decision {
    interrupt.reject(format!(
        "the user's decision could not be applied ({error}); the call did not run"
    ))
}

impl McpServer {
    /// Tells the client of `event`, one [`for_client`]: a delta as progress (counted in
    /// `count`) under the request's progress `token`, a log message, a progress report.
    async fn tell_client(
        &self,
        event: ToolEvent,
        token: Option<&ProgressToken>,
        count: &mut u32,
        notifier: &crate::client::Notifier<'_>,
    ) {
        match event {
            ToolEvent::Delta { delta, .. } => {
                self.report_progress(token, count, delta, notifier).await;
            }
            ToolEvent::Log { message, .. } => {
                crate::client::send_log(notifier, &self.client.logs, message).await;
            }
            ToolEvent::Progress {
                progress: report, ..
            } => {
                if let Some(token) = token {
                    crate::client::send_progress(notifier, token, report).await;
                }
            }
            _ => {}
        }
    }

    /// Sends one progress report, when the request asked for progress.
    async fn report_progress(
        &self,
        token: Option<&ProgressToken>,
        count: &mut u32,
        delta: Value,
        notifier: &crate::client::Notifier<'_>,
    ) {
        let Some(token) = token else { return };
        *count += 1;
        let message = match delta {
            Value::String(text) => text,
            other => other.to_string(),
        };
        let notification =
            ProgressNotificationParam::new(token.clone(), f64::from(*count)).with_message(message);
        notifier
            .notify(rmcp::model::ServerNotification::ProgressNotification(
                rmcp::model::ProgressNotification::new(notification),
            ))
            .await;
    }

    /// Puts a tool's question (the request an `event` carries) to a 2026-07-28 client, which
    /// takes no requests during a call: answered from what the call's retry carried, or the call
    /// ends (`signal`) with the input-required result that asks it.
    fn put(
        &self,
        questions: &mut Questions,
        event: ToolEvent,
        input_required: &mut Option<Result<InputRequiredResult, String>>,
        signal: &CancellationToken,
    ) {
        let question = match event {
            ToolEvent::ElicitationRequested { request } => Question::Elicit(request),
            ToolEvent::SamplingRequested { request } => Question::Sample(request),
            _ => return,
        };
        if input_required.is_some() {
            question.refuse("the call ends to put an earlier question to its client first");
            return;
        }
        if let Some(asked) = questions.put(&question, &self.shared.interrupt_key) {
            *input_required = Some(asked);
            signal.cancel();
        }
    }

    /// Applies the user's decision; one the session refuses becomes a rejection
    /// ([`refused`]), so the call still ends.
    fn decide(&self, (interrupt, decision): Asked) {
        if let Err(error) = self.session().resolve(decision)
            && let Err(error) = self.session().resolve(refused(&interrupt, &error))
        {
            tracing::warn!("an approval interrupt could not be closed: {error}");
        }
    }
}

#[cfg(test)]
mod tests {
    use pleach_core::content::{Annotations, Block, EmbeddedResource, Media, ResourceLink, Role};
    use pleach_core::{ContentBlock, ToolError, ToolOutput};
    use serde_json::{Value, json};

    /// The result built directly is the one the JSON of `mcp_tools::call_tool_result` gives.
    #[test]
    fn a_result_built_directly_is_the_listed_one() {
        let outcomes: Vec<Result<ToolOutput, ToolError>> = vec![
            Ok(ToolOutput::new(json!(3))),
            Ok(ToolOutput::new(json!("plain text"))),
            Ok(ToolOutput::new(json!({ "sum": 3, "parts": [1, 2] }))),
            Ok(ToolOutput::new(json!([1, 2]))),
            Ok(ToolOutput::new(Value::Null)),
            Ok(ToolOutput::from_blocks([])),
            Ok(ToolOutput::new(json!({ "n": 1 })).block(ContentBlock::text("and a note"))),
            Ok(ToolOutput::from_blocks([
                ContentBlock::image(&b"\x89PNG\r\n\x1a\n0123"[..], "image/png"),
                ContentBlock::audio(&b"RIFF....WAVE"[..], "audio/wav"),
                ContentBlock::text("said"),
                ContentBlock::image(&b"GIF89a"[..], "image/gif")
                    .with_annotations(Annotations::default().audience(Role::User).priority(0.5)),
                ContentBlock::text("for the user")
                    .with_annotations(Annotations::default().priority(1.0)),
                Block::File(Media::new(&b"%PDF-1.7"[..], "application/pdf").name("report.pdf"))
                    .into(),
                ResourceLink::new("file:///a.txt", "a.txt").into(),
                EmbeddedResource::text("memo://1", "a memo").into(),
            ])),
            Ok(ToolOutput::new(json!("caption"))
                .block(ContentBlock::image(&b"\xff\xd8\xff"[..], "image/jpeg"))),
            Err(ToolError::failed("no such user")),
        ];
        for outcome in outcomes {
            let listed = pleach_core::providers::mcp_tools::call_tool_result(&outcome);
            let built = super::call_tool_result(outcome).expect("a result");
            let mut expected: rmcp::model::CallToolResult =
                serde_json::from_value(listed.clone()).expect("rmcp reads the listed result");
            expected.result_type = Some(rmcp::model::ResultType::COMPLETE);
            assert_eq!(built, expected, "for {listed}");
        }
    }
}
