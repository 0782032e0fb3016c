//! A session's answer sent as JSON when the call does not talk to the client, as SSE when it does.
//!
//! rmcp answers every request of an MCP session with an SSE stream, whose headers go out before
//! the call ends; the call's own messages (its log messages and progress: [`CallStream`]) join
//! that stream here. This reads it up to its first message: when that is the result, it is
//! sent as one JSON body (a client that takes JSON); when the call first sends something else
//! (progress, a log message, a request of the server's such as an elicitation), the stream is
//! sent on from there, so the client sees each message as it comes and can answer a request.
//!
//! With a session store this also helps behind a load balancer: if the replica dies during a call
//! that sent nothing yet, nothing was sent, so the load balancer answers 502 at once and the
//! client's call ends with that error (a stream cut short would leave the official SDKs waiting
//! for their own request timeout, a minute or more).

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use futures_util::StreamExt;
use serde_json::Value;
use sse_stream::{KeepAlive, SseBody, SseStream, Timer};

use super::refusal::{has_content_type, json_rpc_error};
use super::sessions::{Route, SESSION_ID, Services};
use crate::client::{CallStream, OpenCalls};

/// How often a stream sent on carries a comment while it has nothing else to send, so proxies do
/// not close it while the client's user answers (rmcp's own interval).
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Runs `request`; when it is one JSON-RPC request, its call's own messages
/// ([`CallStream`]) go on rmcp's SSE stream of its answer, and for a client that takes JSON
/// that stream is read to its first message: the result alone is sent as JSON, anything else as
/// the stream from there on.
pub(super) async fn answer(
    request: Request,
    services: &Services,
    max_body_bytes: usize,
    open: &OpenCalls,
) -> Response {
    let (mut parts, body) = request.into_parts();
    let session = parts
        .headers
        .get(&SESSION_ID)
        .and_then(|id| id.to_str().ok())
        .map(str::to_owned);
    let Some(bytes) = super::body::read_whole(body, max_body_bytes).await else {
        return json_rpc_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            -32600,
            &format!("the request body is over {max_body_bytes} bytes, or was cut off"),
        );
    };
    let single = is_request(&bytes);
    let peek = single && takes_json(&parts.headers);
    let call = single.then(CallStream::default);
    if let Some(call) = &call {
        parts.extensions.insert(call.clone());
    }
    let response = services
        .answer(
            Request::from_parts(parts, Body::from(bytes)),
            Route::Session,
        )
        .await;
    let Some(call) = call else { return response };
    if response.status() != StatusCode::OK
        || !has_content_type(response.headers(), "text/event-stream")
    {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let mut events = call.clone().merged(events_of(body));
    // Events before the first message (a priming event with its id and retry) go out first
    // when the stream is sent on.
    let mut before = Vec::new();
    while let Some(event) = events.next().await {
        // rmcp's first event id names its stream, which a client resumes with `Last-Event-ID`.
        if let (Some(session), Some(id)) = (&session, &event.id)
            && before.is_empty()
        {
            open.insert(session, id, &call);
        }
        // A priming event carries an id and an empty `data`, not a message.
        let Some(data) = event.data.as_deref().filter(|data| !data.trim().is_empty()) else {
            before.push(event);
            continue;
        };
        if peek && is_response(data) {
            parts.headers.remove(header::CONTENT_LENGTH);
            parts.headers.remove(header::CACHE_CONTROL);
            parts.headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            return Response::from_parts(parts, Body::from(event.data.unwrap_or_default()));
        }
        before.push(event);
        let sent = futures_util::stream::iter(before).chain(events);
        return Response::from_parts(parts, sse_body(sent));
    }
    json_rpc_error(
        StatusCode::BAD_GATEWAY,
        -32603,
        "the server stopped before the call ended; its outcome is unknown",
    )
}

/// rmcp's resumed stream of a call (a `GET` with `Last-Event-ID`) with the call's own messages
/// among its events, while the call runs.
pub(super) fn resumed(response: Response, call: CallStream) -> Response {
    if response.status() != StatusCode::OK
        || !has_content_type(response.headers(), "text/event-stream")
    {
        return response;
    }
    let (parts, body) = response.into_parts();
    Response::from_parts(parts, sse_body(call.merged(events_of(body))))
}

/// The SSE events of rmcp's `body`, until it ends or breaks off.
fn events_of(body: Body) -> impl futures_util::Stream<Item = sse_stream::Sse> + Send + 'static {
    SseStream::new(body)
        .take_while(|event| std::future::ready(event.is_ok()))
        .filter_map(|event| std::future::ready(event.ok()))
}

/// `events` as an SSE body with keep-alive comments.
fn sse_body(events: impl futures_util::Stream<Item = sse_stream::Sse> + Send + 'static) -> Body {
    let events = events.map(Ok::<_, std::convert::Infallible>);
    Body::new(SseBody::new(events).with_keep_alive::<Sleep>(KeepAlive::new().interval(KEEP_ALIVE)))
}

/// The keep-alive timer of a stream sent on: tokio's sleep.
struct Sleep(Pin<Box<tokio::time::Sleep>>);

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.0.as_mut().poll(cx)
    }
}

impl Timer for Sleep {
    fn reset(mut self: Pin<&mut Self>, instant: Instant) {
        self.0.as_mut().reset(instant.into());
    }

    fn from_duration(duration: Duration) -> Sleep {
        Sleep(Box::pin(tokio::time::sleep(duration)))
    }
}

/// Whether the client's `Accept` takes `application/json`.
fn takes_json(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|kind| {
            let kind = kind.split(';').next().unwrap_or_default().trim();
            kind.eq_ignore_ascii_case("application/json") || kind == "*/*"
        })
}

/// Whether `body` is one JSON-RPC request (not a notification, a response or a batch).
fn is_request(body: &[u8]) -> bool {
    let Ok(Value::Object(message)) = serde_json::from_slice::<Value>(body) else {
        return false;
    };
    message.contains_key("method") && message.get("id").is_some_and(|id| !id.is_null())
}

/// Whether an SSE event's data is a JSON-RPC response or error (not a notification or a request
/// of the server's).
fn is_response(data: &str) -> bool {
    serde_json::from_str::<Value>(data).is_ok_and(|message| {
        message.get("id").is_some()
            && message.get("method").is_none()
            && (message.get("result").is_some() || message.get("error").is_some())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_single_request_is_read_to_its_first_message() {
        let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#;
        assert!(is_request(call));
        let with_progress = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"t"}}}"#;
        assert!(is_request(with_progress));
        assert!(!is_request(
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
        ));
        assert!(!is_request(
            br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#
        ));
        assert!(!is_request(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
        assert!(!is_request(b"not json"));
    }

    #[test]
    fn accept_headers_that_take_json() {
        let mut headers = HeaderMap::new();
        assert!(!takes_json(&headers));
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        assert!(takes_json(&headers));
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        assert!(!takes_json(&headers));
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("Application/JSON;q=0.9"),
        );
        assert!(takes_json(&headers));
    }

    #[test]
    fn responses_are_told_from_other_messages() {
        assert!(is_response(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
        assert!(is_response(
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}"#
        ));
        assert!(!is_response(
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#
        ));
        assert!(!is_response(
            r#"{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{}}"#
        ));
        assert!(!is_response(""));
    }
}
