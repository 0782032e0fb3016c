//! A session's answer sent as JSON when the call does not talk to the client, as SSE when it does.
//!
//! rmcp answers every request of an MCP session with an SSE stream, whose headers go out before
//! the call ends. This reads that stream up to its first message: when that is the result, it is
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
use axum::middleware::Next;
use axum::response::Response;
use futures_util::StreamExt;
use serde_json::Value;
use sse_stream::{KeepAlive, SseBody, SseStream, Timer};

use super::refusal::{has_content_type, json_rpc_error};

/// How often a stream sent on carries a comment while it has nothing else to send, so proxies do
/// not close it while the client's user answers (rmcp's own interval).
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Runs `request`; when it is one JSON-RPC request from a client that takes JSON, the SSE stream
/// rmcp answers with is read to its first message: the result alone is sent as JSON, anything
/// else as the stream from there on.
pub(super) async fn answer(request: Request, next: Next, max_body_bytes: usize) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, max_body_bytes).await else {
        return json_rpc_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            -32600,
            &format!("the request body is over {max_body_bytes} bytes, or was cut off"),
        );
    };
    let peek = takes_json(&parts.headers) && is_request(&bytes);
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    if !peek
        || response.status() != StatusCode::OK
        || !has_content_type(response.headers(), "text/event-stream")
    {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let mut events = SseStream::new(body);
    // Events before the first message (a priming event with its id and retry) go out first
    // when the stream is sent on.
    let mut before = Vec::new();
    while let Some(event) = events.next().await {
        let Ok(event) = event else { break };
        // A priming event carries an id and an empty `data`, not a message.
        let Some(data) = event.data.as_deref().filter(|data| !data.trim().is_empty()) else {
            before.push(event);
            continue;
        };
        if is_response(data) {
            parts.headers.remove(header::CONTENT_LENGTH);
            parts.headers.remove(header::CACHE_CONTROL);
            parts.headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            return Response::from_parts(parts, Body::from(event.data.unwrap_or_default()));
        }
        before.push(event);
        let sent = futures_util::stream::iter(before.into_iter().map(Ok)).chain(events);
        let body =
            SseBody::new(sent).with_keep_alive::<Sleep>(KeepAlive::new().interval(KEEP_ALIVE));
        return Response::from_parts(parts, Body::new(body));
    }
    json_rpc_error(
        StatusCode::BAD_GATEWAY,
        -32603,
        "the server stopped before the call ended; its outcome is unknown",
    )
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
