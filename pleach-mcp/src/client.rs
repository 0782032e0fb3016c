//! A running tool's messages and requests to its MCP client: log messages as
//! `notifications/message` (filtered by the client's `logging/setLevel`), progress as
//! `notifications/progress` with the tool's own numbers (both on the call's own answer over
//! Streamable HTTP: [`Notifier`]), and elicitation and sampling as
//! `elicitation/create` and `sampling/createMessage` requests, withdrawn
//! (`notifications/cancelled`) when the tool stops waiting. (An MCP 2026-07-28 client gets those
//! two in input-required results instead: `server/questions.rs`.)
#![allow(deprecated)] // rmcp marks logging and sampling deprecated (SEP-2577); MCP still has them.

#[cfg(feature = "http")]
mod call_stream;

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use rmcp::RoleServer;
use rmcp::model::{
    ClientResult, CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction,
    LoggingMessageNotification, LoggingMessageNotificationParam, ProgressNotification,
    ProgressNotificationParam, ProgressToken, ServerNotification, ServerRequest,
};
use rmcp::model::{GetExtensions, RequestId};
use rmcp::service::{OriginatingRequestId, Peer, PeerRequestOptions, RequestContext};
use serde_json::{Value, json};

use pleach_core::client::{
    Elicitation, Elicited, LogLevel, LogMessage, Progress, Sampled, SamplingRequest,
};
use pleach_core::event::ClientRequest;

#[cfg(feature = "http")]
pub(crate) use call_stream::{CallStream, OpenCalls};

/// The least severe level a connection's client wants logs of (`logging/setLevel`); every level
/// until it says.
#[derive(Debug, Default)]
pub(crate) struct LogFilter(AtomicU8);

impl LogFilter {
    /// Lets `level` and everything more severe through.
    pub(crate) fn set(&self, level: LogLevel) {
        self.0.store(level as u8, Ordering::Relaxed);
    }

    /// Whether a message at `level` goes to the client.
    fn passes(&self, level: LogLevel) -> bool {
        level as u8 >= self.0.load(Ordering::Relaxed)
    }
}

/// The pleach level of an MCP level (both are syslog's eight, spelled the same).
pub(crate) fn level_of(level: rmcp::model::LoggingLevel) -> LogLevel {
    serde_json::to_value(level)
        .and_then(serde_json::from_value)
        .unwrap_or(LogLevel::Debug)
}

/// Where a call's notifications go: on the call's own answer when it has one (Streamable HTTP in
/// a session, where rmcp would send them on the session's stream outside a request), else
/// through rmcp.
pub(crate) struct Notifier<'a> {
    peer: &'a Peer<RoleServer>,
    #[cfg(feature = "http")]
    stream: Option<CallStream>,
}

impl<'a> Notifier<'a> {
    /// The notifier of the call `context` runs.
    pub(crate) fn new(context: &'a RequestContext<RoleServer>) -> Notifier<'a> {
        Notifier {
            peer: &context.peer,
            #[cfg(feature = "http")]
            stream: context
                .extensions
                .get::<axum::http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<CallStream>())
                .cloned(),
        }
    }

    /// Sends `notification` to the client.
    pub(crate) async fn notify(&self, notification: ServerNotification) {
        #[cfg(feature = "http")]
        if let Some(stream) = &self.stream {
            let message = rmcp::model::ServerJsonRpcMessage::notification(notification);
            match serde_json::to_string(&message) {
                Ok(message) => stream.send(message),
                Err(error) => tracing::warn!("a notification could not be written: {error}"),
            }
            return;
        }
        // A client gone away is noticed by the service loop, not here.
        let _ = self.peer.send_notification(notification).await;
    }
}

/// Sends `message` to the client when its level passes `filter`.
pub(crate) async fn send_log(notifier: &Notifier<'_>, filter: &LogFilter, message: LogMessage) {
    if !filter.passes(message.level) {
        return;
    }
    let Ok(params) = serde_json::from_value::<LoggingMessageNotificationParam>(json!({
        "level": message.level,
        "logger": message.logger,
        "data": message.data,
    })) else {
        return;
    };
    notifier
        .notify(ServerNotification::LoggingMessageNotification(
            LoggingMessageNotification::new(params),
        ))
        .await;
}

/// Sends the tool's own `progress` under the request's `token`.
pub(crate) async fn send_progress(
    notifier: &Notifier<'_>,
    token: &ProgressToken,
    progress: Progress,
) {
    let mut params = ProgressNotificationParam::new(token.clone(), progress.progress);
    params.total = progress.total;
    params.message = progress.message;
    notifier
        .notify(ServerNotification::ProgressNotification(
            ProgressNotification::new(params),
        ))
        .await;
}

/// Sends `request` to the client and waits for the answer, or withdraws the request
/// (`notifications/cancelled`) when `withdrawn` fires first: the tool stopped waiting. The
/// request is marked as sent for `call` (the `tools/call` that runs the tool), so Streamable
/// HTTP sends it on that call's stream.
async fn ask(
    peer: &Peer<RoleServer>,
    call: &RequestId,
    mut request: ServerRequest,
    withdrawn: &tokio_util::sync::CancellationToken,
) -> Result<ClientResult, String> {
    request
        .extensions_mut()
        .insert(OriginatingRequestId(call.clone()));
    let mut handle = peer
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .map_err(|error| error.to_string())?;
    tokio::select! {
        answer = &mut handle.rx => match answer {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(error)) => Err(error.to_string()),
            Err(_) => Err("the connection closed".to_owned()),
        },
        () = withdrawn.cancelled() => {
            let _ = handle.cancel(Some("the tool stopped waiting for the answer".to_owned())).await;
            Err("withdrawn".to_owned())
        }
    }
}

/// The `elicitation/create` params that put `question` to the user.
pub(crate) fn elicit_params(question: &Elicitation) -> Result<ElicitRequestParams, String> {
    serde_json::from_value::<ElicitRequestParams>(json!({
        "mode": "form",
        "message": question.message,
        "requestedSchema": question.schema,
    }))
    .map_err(|error| format!("the question's form is not one MCP elicitation takes: {error}"))
}

/// The tool's form of the user's answer (its content not yet checked against the form).
pub(crate) fn elicited(answer: ElicitResult) -> Elicited<Value> {
    match answer.action {
        ElicitationAction::Accept => Elicited::Accept(
            answer
                .content
                .unwrap_or_else(|| Value::Object(serde_json::Map::new())),
        ),
        ElicitationAction::Decline => Elicited::Decline,
        _ => Elicited::Cancel,
    }
}

/// Puts a tool's question to the client's user and gives the tool the answer.
pub(crate) async fn elicit(
    peer: Peer<RoleServer>,
    call: RequestId,
    request: Arc<ClientRequest<Elicitation, Elicited<Value>>>,
) {
    let params = match elicit_params(request.request()) {
        Ok(params) => params,
        Err(error) => {
            request.refuse(error);
            return;
        }
    };
    let sent = ServerRequest::ElicitRequest(ElicitRequest::new(params));
    match ask(&peer, &call, sent, request.signal()).await {
        Ok(ClientResult::ElicitResult(answer)) => {
            request.answer(elicited(answer));
        }
        Ok(_) => {
            request.refuse("the client answered `elicitation/create` with another result");
        }
        Err(error) => {
            request.refuse(error);
        }
    }
}

/// The `sampling/createMessage` params that ask the client's model for `asked`.
pub(crate) fn sampling_params(
    asked: &SamplingRequest,
) -> Result<CreateMessageRequestParams, String> {
    let messages: Vec<Value> = asked
        .messages
        .iter()
        .map(|message| {
            json!({ "role": message.role, "content": { "type": "text", "text": message.text } })
        })
        .collect();
    let mut params = json!({ "messages": messages, "maxTokens": asked.max_tokens });
    if let Some(prompt) = &asked.system_prompt {
        params["systemPrompt"] = json!(prompt);
    }
    if let Some(temperature) = asked.temperature {
        params["temperature"] = json!(temperature);
    }
    if !asked.stop_sequences.is_empty() {
        params["stopSequences"] = json!(asked.stop_sequences);
    }
    serde_json::from_value::<CreateMessageRequestParams>(params)
        .map_err(|error| format!("the request is not one MCP sampling takes: {error}"))
}

/// Asks the client's model for a tool's completion and gives the tool the answer.
pub(crate) async fn sample(
    peer: Peer<RoleServer>,
    call: RequestId,
    request: Arc<ClientRequest<SamplingRequest, Sampled>>,
) {
    let params = match sampling_params(request.request()) {
        Ok(params) => params,
        Err(error) => {
            request.refuse(error);
            return;
        }
    };
    let sent = ServerRequest::CreateMessageRequest(CreateMessageRequest::new(params));
    match ask(&peer, &call, sent, request.signal()).await {
        Ok(ClientResult::CreateMessageResult(result)) => {
            request.answer(sampled(&result));
        }
        Ok(_) => {
            request.refuse("the client answered `sampling/createMessage` with another result");
        }
        Err(error) => {
            request.refuse(error);
        }
    }
}

/// The pleach form of the client's model's answer.
pub(crate) fn sampled(result: &CreateMessageResult) -> Sampled {
    let message = serde_json::to_value(&result.message).unwrap_or(Value::Null);
    let mut answer = Sampled::new(result.model.clone(), message["content"].clone());
    if let Ok(role) = serde_json::from_value(message["role"].clone()) {
        answer.role = role;
    }
    answer.stop_reason.clone_from(&result.stop_reason);
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_level_lets_itself_and_every_more_severe_one_through() {
        let filter = LogFilter::default();
        assert!(filter.passes(LogLevel::Debug));
        filter.set(level_of(rmcp::model::LoggingLevel::Warning));
        assert!(!filter.passes(LogLevel::Info));
        assert!(filter.passes(LogLevel::Warning));
        assert!(filter.passes(LogLevel::Emergency));
    }
}
