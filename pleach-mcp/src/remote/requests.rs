//! What a remote server sends the client during a call, passed to the calling tool's context:
//! progress and log messages as the context's own, elicitation and sampling requests answered
//! by the context's host (in process, `elicitation.requested` and `sampling.requested` events;
//! behind `pleach mcp`, the gateway's own client).
//!
//! A message reaches the call it belongs to by these rules, first match wins:
//!
//! 1. progress, by its progress token (the call's own, always exact);
//! 2. a request that came on a call's own response stream (Streamable HTTP: the `tools/call`
//!    POST's SSE stream, which rmcp marks as its origin), that call;
//! 3. otherwise (stdio, the standalone GET stream, and every log message, which rmcp does not
//!    mark), the one call running on the connection when there is exactly one.
//!
//! A request no call can be found for is refused with an error saying why; a log message with
//! none goes to pleach's own log (target `pleach::mcp::remote`).
//!
//! Progress and log messages are passed on as the transport reads them ([`InOrder`]), not in
//! rmcp's notification handler: rmcp runs each notification's handler in a task of its own but
//! delivers a response at once, so a handler could run after the call it reports on has ended.
#![allow(deprecated)] // rmcp marks logging and sampling deprecated (SEP-2577); MCP still has them.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationAction, ElicitationCapability, ErrorCode as McpCode, ErrorData,
    FormElicitationCapability, LoggingMessageNotificationParam, ProgressNotificationParam,
    ProgressToken, RequestId, SamplingCapability,
};
use rmcp::model::{JsonRpcMessage, ServerNotification};
use rmcp::service::{InboundStreamOrigin, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use pleach_core::ToolContext;
use pleach_core::client::{
    Elicitation, Elicited, LogLevel, Progress, Role, Sampled, SamplingMessage, SamplingRequest,
};
use pleach_core::error::{ErrorCode, ToolError};

/// How long a request that names a call not yet registered waits for it: the server may answer
/// a `tools/call` before its sender has recorded the request's id.
const REGISTRATION_WAIT: Duration = Duration::from_secs(2);

/// Which of the server's requests the client side declares it answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Answers {
    /// `elicitation/create` (form mode).
    pub(crate) elicitation: bool,
    /// `sampling/createMessage`.
    pub(crate) sampling: bool,
}

impl Default for Answers {
    fn default() -> Self {
        Answers {
            elicitation: true,
            sampling: true,
        }
    }
}

impl Answers {
    /// The client capabilities to declare in `initialize`.
    pub(crate) fn capabilities(self) -> ClientCapabilities {
        let mut capabilities = ClientCapabilities::default();
        if self.elicitation {
            let mut elicitation = ElicitationCapability::new();
            elicitation.form = Some(FormElicitationCapability::new());
            capabilities.elicitation = Some(elicitation);
        }
        if self.sampling {
            capabilities.sampling = Some(SamplingCapability::default());
        }
        capabilities
    }
}

/// One call running on the connection.
struct Running {
    /// Its request's id, once sent.
    id: Option<RequestId>,
    /// Its progress token, once sent.
    token: Option<ProgressToken>,
    ctx: ToolContext,
    /// Tells [`Running`]s apart before they have an id.
    key: u64,
}

/// The calls running on one connection.
#[derive(Default)]
pub(crate) struct RunningCalls {
    calls: Mutex<Vec<Running>>,
    next_key: std::sync::atomic::AtomicU64,
    /// Woken when a call learns its request's id.
    sent: Notify,
}

/// A call's place in [`RunningCalls`] while it runs; removed when dropped.
pub(crate) struct CallEntry {
    calls: Arc<RunningCalls>,
    key: u64,
}

impl CallEntry {
    /// Records the call's request id and progress token once the request is sent.
    pub(crate) fn sent(&self, id: RequestId, token: ProgressToken) {
        {
            let mut calls = self.calls.lock();
            if let Some(running) = calls.iter_mut().find(|running| running.key == self.key) {
                running.id = Some(id);
                running.token = Some(token);
            }
        }
        self.calls.sent.notify_waiters();
    }
}

impl Drop for CallEntry {
    fn drop(&mut self) {
        self.calls.lock().retain(|running| running.key != self.key);
    }
}

impl RunningCalls {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Running>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a call about to be sent, with the context its server's messages go to.
    pub(crate) fn enter(self: &Arc<Self>, ctx: ToolContext) -> CallEntry {
        let key = self
            .next_key
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.lock().push(Running {
            id: None,
            token: None,
            ctx,
            key,
        });
        CallEntry {
            calls: Arc::clone(self),
            key,
        }
    }

    /// The context of the call `token` belongs to.
    fn by_token(&self, token: &ProgressToken) -> Option<ToolContext> {
        self.lock()
            .iter()
            .find(|running| running.token.as_ref() == Some(token))
            .map(|running| running.ctx.clone())
    }

    /// The context of the only running call, if exactly one runs.
    fn only(&self) -> Result<ToolContext, usize> {
        match self.lock().as_slice() {
            [only] => Ok(only.ctx.clone()),
            calls => Err(calls.len()),
        }
    }

    /// The context a request with `extensions` belongs to (rules 2 and 3 of the module docs).
    async fn for_request(
        &self,
        extensions: &rmcp::model::Extensions,
        label: &str,
    ) -> Result<ToolContext, ErrorData> {
        if let Some(InboundStreamOrigin::OutboundRequest(id)) =
            extensions.get::<InboundStreamOrigin>()
        {
            let deadline = tokio::time::Instant::now() + REGISTRATION_WAIT;
            loop {
                let sent = self.sent.notified();
                let unsent = {
                    let calls = self.lock();
                    if let Some(running) = calls.iter().find(|r| r.id.as_ref() == Some(id)) {
                        return Ok(running.ctx.clone());
                    }
                    calls.iter().any(|running| running.id.is_none())
                };
                if !unsent || tokio::time::timeout_at(deadline, sent).await.is_err() {
                    return Err(ErrorData::invalid_params(
                        format!(
                            "pleach has no running call with the request id {id} to the MCP \
                             server `{label}`: the request came on that call's stream after it \
                             ended"
                        ),
                        None,
                    ));
                }
            }
        }
        self.only().map_err(|running| {
            let why = if running == 0 {
                "no call to it is running".to_owned()
            } else {
                format!(
                    "{running} calls to it are running and the request does not say which it \
                     belongs to (over stdio, or on the standalone stream)"
                )
            };
            ErrorData::invalid_params(
                format!(
                    "pleach cannot pass this request from the MCP server `{label}` on to a \
                     user: {why}"
                ),
                None,
            )
        })
    }
}

/// A transport whose progress and log messages go to their calls as they are read, so each
/// reaches its call before the response read after it ends the call.
pub(crate) struct InOrder<T> {
    inner: T,
    calls: Arc<RunningCalls>,
    label: String,
}

impl<T> InOrder<T> {
    /// `inner`, its messages passed to `calls`, the server named `label`.
    pub(crate) fn new(inner: T, calls: Arc<RunningCalls>, label: String) -> Self {
        InOrder {
            inner,
            calls,
            label,
        }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for InOrder<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await?;
        if let JsonRpcMessage::Notification(notification) = &message {
            match &notification.notification {
                ServerNotification::ProgressNotification(sent) => {
                    progress(&self.calls, sent.params.clone());
                }
                ServerNotification::LoggingMessageNotification(sent) => {
                    log(&self.calls, &self.label, sent.params.clone());
                }
                _ => {}
            }
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// Passes the server's progress to the call whose token it carries.
pub(crate) fn progress(calls: &RunningCalls, params: ProgressNotificationParam) {
    let Some(ctx) = calls.by_token(&params.progress_token) else {
        return;
    };
    let mut progress = Progress::new(params.progress);
    progress.total = params.total;
    progress.message = params.message;
    ctx.report_progress(progress);
}

/// Passes the server's log message to the one running call, or to pleach's log.
pub(crate) fn log(calls: &RunningCalls, label: &str, params: LoggingMessageNotificationParam) {
    let level = crate::client::level_of(params.level);
    let logger = params.logger.unwrap_or_else(|| label.to_owned());
    if let Ok(ctx) = calls.only() {
        ctx.with_logger(logger).log(level, params.data);
        return;
    }
    let data = &params.data;
    match level {
        LogLevel::Debug => {
            tracing::debug!(target: "pleach::mcp::remote", server = label, logger, %data);
        }
        LogLevel::Info | LogLevel::Notice => {
            tracing::info!(target: "pleach::mcp::remote", server = label, logger, %data);
        }
        LogLevel::Warning => {
            tracing::warn!(target: "pleach::mcp::remote", server = label, logger, %data);
        }
        LogLevel::Error | LogLevel::Critical | LogLevel::Alert | LogLevel::Emergency => {
            tracing::error!(target: "pleach::mcp::remote", server = label, logger, level = level.as_str(), %data);
        }
    }
}

/// Puts the server's question to the calling tool's host and gives the server the answer.
pub(crate) async fn elicit(
    calls: &RunningCalls,
    label: &str,
    params: ElicitRequestParams,
    incoming: &rmcp::service::RequestContext<rmcp::RoleClient>,
) -> Result<ElicitResult, ErrorData> {
    let ElicitRequestParams::FormElicitationParams {
        message,
        requested_schema: schema,
        ..
    } = params
    else {
        return Err(ErrorData::invalid_params(
            "pleach's client takes form elicitation only; it declared no `url` mode",
            None,
        ));
    };
    let ctx = calls.for_request(&incoming.extensions, label).await?;
    let schema = serde_json::to_value(schema)
        .map_err(|error| ErrorData::invalid_params(error.to_string(), None))?;
    let question = Elicitation::with_schema(message, schema)
        .map_err(|error| ErrorData::invalid_params(error.message().to_owned(), None))?;
    let answer = answered(ctx.elicit_form(question), &incoming.ct).await?;
    Ok(match answer {
        Elicited::Accept(content) => {
            ElicitResult::new(ElicitationAction::Accept).with_content(content)
        }
        Elicited::Decline => ElicitResult::new(ElicitationAction::Decline),
        Elicited::Cancel => ElicitResult::new(ElicitationAction::Cancel),
    })
}

/// Asks the calling tool's host for the server's completion and gives the server the answer.
pub(crate) async fn sample(
    calls: &RunningCalls,
    label: &str,
    params: CreateMessageRequestParams,
    incoming: &rmcp::service::RequestContext<rmcp::RoleClient>,
) -> Result<CreateMessageResult, ErrorData> {
    let request = sampling_request(&params).map_err(|reason| {
        ErrorData::invalid_params(
            format!("pleach cannot pass this sampling request on: {reason}"),
            None,
        )
    })?;
    let ctx = calls.for_request(&incoming.extensions, label).await?;
    let answer = answered(ctx.sample(request), &incoming.ct).await?;
    message_result(&answer)
}

/// The tool context's answer, or the server's withdrawal of its request; the context's refusal
/// as an error the server can read.
async fn answered<T>(
    asking: impl Future<Output = Result<T, ToolError>>,
    withdrawn: &CancellationToken,
) -> Result<T, ErrorData> {
    tokio::select! {
        answer = asking => answer.map_err(|error| refusal(&error)),
        () = withdrawn.cancelled() => Err(ErrorData::internal_error(
            "the server withdrew the request",
            None,
        )),
    }
}

/// What the server is told when the host did not answer: "method not found" for a host that
/// cannot answer this kind of request at all (1020), an internal error otherwise (no answer in
/// time, 1022; the call cancelled, 1011); the message is pleach's, its code in `data.code`.
fn refusal(error: &ToolError) -> ErrorData {
    let code = match error.code() {
        ErrorCode::CapabilityMissing => McpCode::METHOD_NOT_FOUND,
        _ => McpCode::INTERNAL_ERROR,
    };
    ErrorData::new(
        code,
        format!("the pleach host did not answer: {}", error.message()),
        Some(json!({ "code": error.code().as_u16() })),
    )
}

/// The pleach form of a sampling request: its text messages and settings. Non-text content
/// (images, audio, tool use) is refused; model preferences, `includeContext`, metadata and tools
/// are not passed on.
fn sampling_request(params: &CreateMessageRequestParams) -> Result<SamplingRequest, String> {
    let wire = serde_json::to_value(params).map_err(|error| error.to_string())?;
    let mut messages = Vec::new();
    for message in wire["messages"].as_array().into_iter().flatten() {
        let role: Role = serde_json::from_value(message["role"].clone())
            .map_err(|_| "a message has a role other than `user` or `assistant`".to_owned())?;
        let blocks = match &message["content"] {
            Value::Array(blocks) => blocks.clone(),
            block => vec![block.clone()],
        };
        let mut texts = Vec::new();
        for block in &blocks {
            match (block["type"].as_str(), block["text"].as_str()) {
                (Some("text"), Some(text)) => texts.push(text),
                (kind, _) => {
                    return Err(format!(
                        "a message holds `{}` content; pleach passes on text only",
                        kind.unwrap_or("unknown")
                    ));
                }
            }
        }
        messages.push(SamplingMessage::new(role, texts.join("\n")));
    }
    let mut request = SamplingRequest::new("").max_tokens(params.max_tokens);
    request.messages = messages;
    request.system_prompt.clone_from(&params.system_prompt);
    request.temperature = params.temperature.map(f64::from);
    request.stop_sequences = params.stop_sequences.clone().unwrap_or_default();
    Ok(request)
}

/// The MCP result of the host's answer.
fn message_result(answer: &Sampled) -> Result<CreateMessageResult, ErrorData> {
    let mut result = json!({
        "model": answer.model,
        "role": answer.role,
        "content": answer.content,
    });
    if let Some(reason) = &answer.stop_reason {
        result["stopReason"] = json!(reason);
    }
    serde_json::from_value(result).map_err(|error| {
        ErrorData::internal_error(
            format!("the pleach host's answer is not an MCP sampling result: {error}"),
            None,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_is_answered_is_declared() {
        let both = serde_json::to_value(Answers::default().capabilities()).unwrap();
        assert_eq!(
            both,
            json!({ "elicitation": { "form": {} }, "sampling": {} })
        );
        let none = Answers {
            elicitation: false,
            sampling: false,
        };
        assert_eq!(
            serde_json::to_value(none.capabilities()).unwrap(),
            json!({})
        );
    }

    #[test]
    fn sampling_requests_keep_their_text_and_settings_and_refuse_other_content() {
        let params: CreateMessageRequestParams = serde_json::from_value(json!({
            "messages": [{ "role": "user", "content": { "type": "text", "text": "hi" } }],
            "systemPrompt": "be brief",
            "maxTokens": 20,
            "temperature": 0.5,
            "stopSequences": ["."],
        }))
        .unwrap();
        let request = sampling_request(&params).unwrap();
        assert_eq!(
            request.messages,
            vec![SamplingMessage::new(Role::User, "hi")]
        );
        assert_eq!(request.system_prompt.as_deref(), Some("be brief"));
        assert_eq!((request.max_tokens, request.temperature), (20, Some(0.5)));
        assert_eq!(request.stop_sequences, ["."]);

        let image: CreateMessageRequestParams = serde_json::from_value(json!({
            "messages": [{ "role": "user", "content":
                { "type": "image", "data": "AA==", "mimeType": "image/png" } }],
            "maxTokens": 20,
        }))
        .unwrap();
        let refused = sampling_request(&image).unwrap_err();
        assert!(refused.contains("`image`"), "{refused}");
    }

    #[test]
    fn a_host_that_cannot_answer_is_refused_clearly() {
        let missing = refusal(&ToolError::new(ErrorCode::CapabilityMissing, "no host"));
        assert_eq!(missing.code, McpCode::METHOD_NOT_FOUND);
        assert!(missing.message.contains("no host"), "{}", missing.message);
        assert_eq!(missing.data, Some(json!({ "code": 1020 })));
        let late = refusal(&ToolError::new(ErrorCode::NoAnswer, "no answer"));
        assert_eq!(late.code, McpCode::INTERNAL_ERROR);
    }

    #[test]
    fn answers_become_sampling_results() {
        let answer = Sampled::new("m1", json!({ "type": "text", "text": "ok" }));
        let result = message_result(&answer).unwrap();
        assert_eq!(
            serde_json::to_value(result).unwrap(),
            json!({ "model": "m1", "role": "assistant",
                    "content": { "type": "text", "text": "ok" } })
        );
    }

    #[tokio::test]
    async fn a_request_finds_its_call_by_its_stream_or_as_the_only_one() {
        let calls = Arc::new(RunningCalls::default());
        let none = rmcp::model::Extensions::new();
        assert!(calls.for_request(&none, "s").await.is_err());

        let first = calls.enter(ToolContext::new("a"));
        assert_eq!(
            calls.for_request(&none, "s").await.unwrap().tool_call_id,
            "a"
        );
        let second = calls.enter(ToolContext::new("b"));
        let ambiguous = calls.for_request(&none, "s").await.unwrap_err();
        assert!(
            ambiguous.message.contains("2 calls"),
            "{}",
            ambiguous.message
        );

        first.sent(RequestId::Number(1), ProgressToken(RequestId::Number(11)));
        second.sent(RequestId::Number(2), ProgressToken(RequestId::Number(12)));
        let mut on_second = rmcp::model::Extensions::new();
        on_second.insert(InboundStreamOrigin::OutboundRequest(RequestId::Number(2)));
        assert_eq!(
            calls
                .for_request(&on_second, "s")
                .await
                .unwrap()
                .tool_call_id,
            "b"
        );
        let token = ProgressToken(RequestId::Number(11));
        assert_eq!(calls.by_token(&token).unwrap().tool_call_id, "a");

        drop(second);
        let ended = calls.for_request(&on_second, "s").await.unwrap_err();
        assert!(ended.message.contains("ended"), "{}", ended.message);
    }
}
