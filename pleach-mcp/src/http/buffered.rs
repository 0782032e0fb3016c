//! A request of an MCP session answered with JSON, not with rmcp's SSE stream, when the client
//! asked for no progress and takes JSON.
//!
//! With sessions (a session store), rmcp answers every request with an SSE stream, and the
//! stream's headers go out before the call ends. If the replica dies during the call, the client
//! sees a stream cut short: the official SDKs then wait for their own request timeout (a minute
//! or more), and a priming event would send them to resume the stream on a replica that never
//! had it. Answered in one JSON body instead, a call whose replica dies has sent nothing yet, so
//! the load balancer answers 502 at once and the client's call ends with that error. A request
//! with a `progressToken` keeps its stream: its progress is sent as it comes.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use futures_util::StreamExt;
use serde_json::Value;
use sse_stream::SseStream;

use super::refusal::{has_content_type, json_rpc_error};

/// Runs `request`; when it is a JSON-RPC request without a `progressToken` from a client that
/// takes JSON, the SSE stream rmcp answers with is read to its result, which is sent as JSON.
pub(super) async fn answer(request: Request, next: Next, max_body_bytes: usize) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, max_body_bytes).await else {
        return json_rpc_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            -32600,
            &format!("the request body is over {max_body_bytes} bytes, or was cut off"),
        );
    };
    let buffer = takes_json(&parts.headers) && asks_no_progress(&bytes);
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    if !buffer
        || response.status() != StatusCode::OK
        || !has_content_type(response.headers(), "text/event-stream")
    {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let mut events = SseStream::new(body);
    while let Some(event) = events.next().await {
        let Ok(event) = event else { break };
        let Some(data) = event.data else { continue };
        if is_response(&data) {
            parts.headers.remove(header::CONTENT_LENGTH);
            parts.headers.remove(header::CACHE_CONTROL);
            parts.headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            return Response::from_parts(parts, Body::from(data));
        }
    }
    json_rpc_error(
        StatusCode::BAD_GATEWAY,
        -32603,
        "the server stopped before the call ended; its outcome is unknown",
    )
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

/// Whether `body` is one JSON-RPC request (not a notification, a response or a batch) that
/// asks for no progress.
fn asks_no_progress(body: &[u8]) -> bool {
    let Ok(Value::Object(message)) = serde_json::from_slice::<Value>(body) else {
        return false;
    };
    message.contains_key("method")
        && message.get("id").is_some_and(|id| !id.is_null())
        && message
            .get("params")
            .and_then(|params| params.get("_meta"))
            .and_then(|meta| meta.get("progressToken"))
            .is_none()
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
    fn only_a_single_request_without_progress_is_buffered() {
        let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#;
        assert!(asks_no_progress(call));
        let with_progress = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"t"}}}"#;
        assert!(!asks_no_progress(with_progress));
        assert!(!asks_no_progress(
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
        ));
        assert!(!asks_no_progress(
            br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#
        ));
        assert!(!asks_no_progress(b"not json"));
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
