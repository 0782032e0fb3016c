//! The request checks in front of rmcp, in order: the `Origin`, who is calling (a
//! `WWW-Authenticate` challenge pointing at the protected-resource metadata when no one
//! accepted is), no stream outside a request, (feature `redis`) the session still in the store,
//! and room in the runtime; a session's answer then sent as JSON.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;

#[cfg(feature = "redis")]
use super::buffered;
use super::refusal::{as_json_rpc_error, is_json, json_rpc_error, refuse, try_again_shortly};
use super::{METADATA_PATH, METADATA_ROOT_PATH, Shared};

/// Origin, then who is calling, then whether there is room: before rmcp sees the request.
pub(super) async fn guard(
    State(shared): State<Arc<Shared>>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(origin) = request.headers().get(header::ORIGIN)
        && !shared.origins.allows(origin)
    {
        let shown = String::from_utf8_lossy(origin.as_bytes()).into_owned();
        return refuse(
            StatusCode::FORBIDDEN,
            &format!("the origin `{shown}` is not allowed to call this server"),
        );
    }
    if let Err(refusal) = shared.auth.check(request.headers()).await {
        let mut response = refuse(refusal.status(), &refusal.message());
        if let Ok(challenge) =
            HeaderValue::from_str(&refusal.challenge(&metadata_url(&shared, request.headers())))
        {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, challenge);
        }
        return response;
    }
    if shared.sessions && request.method() == axum::http::Method::GET {
        // No stream outside a request: this server sends nothing there, and a stream held open
        // would keep a draining replica (and a reloading nginx) waiting.
        let mut response = json_rpc_error(
            StatusCode::METHOD_NOT_ALLOWED,
            -32000,
            "this server offers no SSE stream outside a request",
        );
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST, DELETE"));
        return response;
    }
    #[cfg(feature = "redis")]
    if let Some(refusal) = check_session(&shared, request.method(), request.headers()).await {
        return refusal;
    }
    if request.method() == axum::http::Method::POST && shared.runtime.refuses_new_calls() {
        return try_again_shortly("the server is at capacity; try again shortly");
    }
    let sent_json = is_json(request.headers());
    #[cfg(feature = "redis")]
    let response = if shared.sessions && request.method() == axum::http::Method::POST {
        buffered::answer(request, next, shared.max_body_bytes).await
    } else {
        next.run(request).await
    };
    #[cfg(not(feature = "redis"))]
    let response = next.run(request).await;
    if response.status().is_client_error() && !is_json(response.headers()) {
        return as_json_rpc_error(response, sent_json).await;
    }
    response
}

/// With a session store, a POST in a session the store no longer has (ended by a `DELETE` on
/// any replica, or expired) gets 404, which tells the client to start a new one, even when this
/// replica still holds the session in memory; each one found has its time to live renewed.
#[cfg(feature = "redis")]
async fn check_session(
    shared: &Shared,
    method: &axum::http::Method,
    headers: &HeaderMap,
) -> Option<Response> {
    let store = shared.store.as_ref()?;
    if method != axum::http::Method::POST {
        return None;
    }
    let session_id = headers.get("mcp-session-id")?.to_str().ok()?.to_owned();
    match store.touch(&session_id).await {
        Ok(true) => None,
        Ok(false) => Some(json_rpc_error(
            StatusCode::NOT_FOUND,
            -32001,
            "session not found: it ended or expired; start a new one with `initialize`",
        )),
        Err(error) => {
            tracing::error!("{error}");
            Some(try_again_shortly(
                "the session store is unavailable; try again shortly",
            ))
        }
    }
}

/// Where the metadata for this resource is: beside the configured resource, else on the host
/// the request was sent to.
fn metadata_url(shared: &Shared, headers: &HeaderMap) -> String {
    match &shared.resource {
        Some(resource) => {
            let mut url = resource.clone();
            let path = resource.path().trim_end_matches('/');
            url.set_path(&format!("{METADATA_ROOT_PATH}{path}"));
            url.set_query(None);
            url.set_fragment(None);
            url.to_string()
        }
        None => format!("http://{}{METADATA_PATH}", host(headers)),
    }
}

/// The request's `Host`, if it is a plain authority (else `localhost`).
pub(super) fn host(headers: &HeaderMap) -> String {
    headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .filter(|host| {
            !host.is_empty()
                && host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || ".-:[]".contains(c))
        })
        .unwrap_or("localhost")
        .to_owned()
}
