//! The request checks in front of rmcp, in order: the request target (one `Host`, and an
//! absolute-form target naming that host), the `Origin`, an announced body over the limit (413
//! before it is read), who is calling (a `WWW-Authenticate` challenge pointing at the
//! protected-resource metadata when no one accepted is), no stream outside a request (a `GET`
//! without `Last-Event-ID`, or any with a store), (feature `redis`, with a store) the session still in the store, the route (a session's, or
//! stateless) and room for a new session (503 when there is none), and a slot in the runtime for
//! the call (503 when there is none); a session's answer then sent as JSON unless the call talks
//! to the client.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use pleach_core::OverloadPolicy;

use super::buffered;
use super::refusal::{as_json_rpc_error, is_json, json_rpc_error, refuse, try_again_shortly};
use super::sessions::{self, Route, Services};
use super::{METADATA_ROOT_PATH, Shared};
use crate::server::ReservedSlot;

/// rmcp's services (with sessions, and stateless) behind [`guard`], as one tower service: what
/// `/mcp` is. A service of its own, not a middleware around a router: axum's `from_fn` clones the
/// service it wraps for every request. One `Arc`: a clone (axum makes one a request) and each
/// request's future write one shared count, not one per part.
#[derive(Clone)]
pub(super) struct Guarded(Arc<Endpoint>);

/// What a [`Guarded`] holds.
#[derive(Clone)]
struct Endpoint {
    shared: Arc<Shared>,
    services: Services,
    /// What CORS gives the answer of a request without `Origin` (none without CORS).
    plain: HeaderMap,
}

/// A request's answer from a [`Guarded`].
pub(super) type Answer = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

impl Guarded {
    pub(super) fn new(shared: Arc<Shared>, services: Services) -> Guarded {
        Guarded(Arc::new(Endpoint {
            shared,
            services,
            plain: HeaderMap::new(),
        }))
    }

    /// The same endpoint, `plain` being what CORS gives the answer of a request without `Origin`
    /// ([`answer`](Guarded::answer) with `plainly`).
    pub(super) fn with_plain_headers(mut self, plain: HeaderMap) -> Guarded {
        Arc::make_mut(&mut self.0).plain = plain;
        self
    }

    /// `request`'s answer: [`guard`], then rmcp; `plainly` (a request without `Origin`, behind
    /// CORS) with the headers CORS gives such a request. Added here, not by a future around this
    /// one: one future a request, and one shared count taken.
    pub(super) fn answer(&self, request: Request, plainly: bool) -> Answer {
        let endpoint = Arc::clone(&self.0);
        Box::pin(async move {
            let mut response = guard(&endpoint.shared, request, &endpoint.services).await;
            if plainly {
                let headers = response.headers_mut();
                for (name, value) in &endpoint.plain {
                    // As the CORS layer does: `Vary` added to the answer's own, the others set.
                    if name == header::VARY {
                        headers.append(name, value.clone());
                    } else {
                        headers.insert(name, value.clone());
                    }
                }
            }
            Ok(response)
        })
    }
}

impl tower::Service<Request> for Guarded {
    type Response = Response;
    type Error = Infallible;
    type Future = Answer;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        self.answer(request, false)
    }
}

/// Origin, then who is calling, then whether there is room: before rmcp sees the request.
async fn guard(shared: &Shared, mut request: Request, services: &Services) -> Response {
    if let Err(reason) = check_target(&request) {
        return json_rpc_error(StatusCode::BAD_REQUEST, -32600, &reason);
    }
    if let Some(origin) = request.headers().get(header::ORIGIN)
        && !shared.origins.allows(origin)
    {
        let shown = String::from_utf8_lossy(origin.as_bytes()).into_owned();
        return refuse(
            StatusCode::FORBIDDEN,
            &format!("the origin `{shown}` is not allowed to call this server"),
        );
    }
    if let Some(length) = announced_length(request.headers())
        && length > shared.max_body_bytes as u64
    {
        // Before the body is read or asked for: `Expect: 100-continue` gets this, not a 100.
        return json_rpc_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            -32600,
            &format!(
                "the request body is {length} bytes, over this server's limit of {} bytes",
                shared.max_body_bytes
            ),
        );
    }
    if let Err(refusal) = shared.auth.check(request.headers()).await {
        let mut response = refuse(refusal.status(), &refusal.message());
        if let Ok(challenge) = HeaderValue::from_str(&refusal.challenge(&metadata_url(shared))) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, challenge);
        }
        return response;
    }
    if request.method() == Method::GET
        && (has_store(shared) || !request.headers().contains_key(&sessions::LAST_EVENT_ID))
    {
        // No stream outside a request: a call's messages all go on its own answer, and a stream
        // held open would keep a draining replica (and a reloading nginx) waiting. A `GET` with
        // `Last-Event-ID` resumes a call's answer (not with a store: the replica that held the
        // stream may be gone).
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
    if let Some(refusal) =
        Box::pin(check_session(shared, request.method(), request.headers())).await
    {
        return refusal;
    }
    // Held until the answer is made: an `initialize` let through counts against the session
    // limit until its session is held.
    let (route, _starting) = match routed(shared, request).await {
        Ok((routed, route, starting)) => {
            request = routed;
            (route, starting)
        }
        Err(refusal) => return refusal,
    };
    if request.method() == Method::POST && may_call(request.headers()) {
        // The call's slot is taken here, so a request let through cannot then find the runtime
        // full: every refusal for capacity is this 503, never a 200 carrying 1014.
        match shared.runtime.try_reserve_call() {
            Some(slot) => {
                request.extensions_mut().insert(ReservedSlot::new(slot));
            }
            None if shared.runtime.overload_policy() == OverloadPolicy::FailFast => {
                return try_again_shortly("the server is at capacity; try again shortly");
            }
            // The call waits for a slot in the runtime.
            None => {}
        }
    }
    let sent_json = is_json(request.headers());
    let response = if route == Route::Session && request.method() == Method::POST {
        Box::pin(buffered::answer(
            request,
            services,
            shared.max_body_bytes,
            &shared.open_calls,
        ))
        .await
    } else if request.method() == Method::GET {
        // A resumed stream of a call that still runs gets the call's own messages too.
        let call = header_text(request.headers(), &sessions::SESSION_ID)
            .zip(header_text(request.headers(), &sessions::LAST_EVENT_ID))
            .and_then(|(session, last)| shared.open_calls.find(session, last));
        let response = services.answer(request, route).await;
        match call {
            Some(call) => buffered::resumed(response, call),
            None => response,
        }
    } else {
        services.answer(request, route).await
    };
    if response.status().is_client_error() && !is_json(response.headers()) {
        return Box::pin(as_json_rpc_error(response, sent_json)).await;
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
    if method != Method::POST {
        return None;
    }
    let session_id = headers
        .get(&sessions::SESSION_ID)?
        .to_str()
        .ok()?
        .to_owned();
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

/// The request's [`Route`] (its body read when it may be an `initialize`); a 413 for a body over
/// the limit, a 503 for a new session past the limit.
async fn routed(
    shared: &Shared,
    mut request: Request,
) -> Result<(Request, Route, Option<Starting<'_>>), Response> {
    // Looked up once: the header's name is hashed for each lookup.
    let session = request.headers().get(&sessions::SESSION_ID);
    let names_session = session.is_some();
    let held = match session {
        Some(id) => {
            has_store(shared)
                || sessions::holds(&shared.sessions, id.to_str().unwrap_or_default()).await
        }
        None => false,
    };
    let route = if !names_session && sessions::needs_body(request.method(), request.headers()) {
        let (parts, body) = request.into_parts();
        let Some(bytes) = super::body::read_whole(body, shared.max_body_bytes).await else {
            return Err(json_rpc_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                -32600,
                &format!(
                    "the request body is over {} bytes, or was cut off",
                    shared.max_body_bytes
                ),
            ));
        };
        let route = sessions::route(&parts.method, None, Some(&bytes), |_| held);
        request = Request::from_parts(parts, axum::body::Body::from(bytes));
        route
    } else {
        sessions::route(request.method(), session, None, |_| held)
    };
    let starting = if route == Route::Session && !names_session {
        // Counted and let through under one lock, so `initialize`s at the same time cannot all
        // find the last free place.
        let _admitting = shared.admitting.lock().await;
        let starting = shared.starting.load(Ordering::SeqCst);
        if sessions::count(&shared.sessions).await + starting >= shared.max_sessions {
            return Err(try_again_shortly(&format!(
                "this server holds its most sessions ({}); try again shortly",
                shared.max_sessions
            )));
        }
        shared.starting.fetch_add(1, Ordering::SeqCst);
        Some(Starting(&shared.starting))
    } else {
        None
    };
    Ok((request, route, starting))
}

/// An `initialize` let through: counted against the session limit until its answer is made (its
/// session is held by then; counted twice a moment, never not at all).
struct Starting<'a>(&'a AtomicUsize);

impl Drop for Starting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Whether sessions are kept in a store, which restores (or refuses) any session a request names.
fn has_store(shared: &Shared) -> bool {
    #[cfg(feature = "redis")]
    return shared.store.is_some();
    #[cfg(not(feature = "redis"))]
    {
        let _ = shared;
        false
    }
}

/// Whether a POST may call a tool: any request but one whose `Mcp-Method` header (MCP
/// 2026-07-28) names another method.
fn may_call(headers: &HeaderMap) -> bool {
    headers
        .get(&sessions::MCP_METHOD)
        .is_none_or(|method| method.as_bytes() == b"tools/call")
}

/// The text of header `name`, when it has one.
fn header_text<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Option<&'a str> {
    headers.get(name)?.to_str().ok()
}

/// The body length a request announces (`Content-Length`), when it announces one.
fn announced_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// One `Host`, and an absolute-form target (`POST http://host/mcp`) naming the host it is sent
/// to (RFC 9112 §3.2: anything else is a 400): the `Host` check behind this one reads the first
/// `Host` header alone.
fn check_target(request: &Request) -> Result<(), String> {
    let mut hosts = request.headers().get_all(header::HOST).iter();
    let host = hosts.next();
    if hosts.next().is_some() {
        return Err("the request has more than one `Host` header".to_owned());
    }
    if let Some(authority) = request.uri().authority() {
        let named = host.and_then(|host| host.to_str().ok()).unwrap_or_default();
        if !named.eq_ignore_ascii_case(authority.as_str()) {
            return Err(format!(
                "the request target names `{authority}` but `Host` says `{named}`"
            ));
        }
    }
    Ok(())
}

/// Where the metadata for this resource is: beside the configured resource, else on this
/// server's own address (never a name the request brought).
fn metadata_url(shared: &Shared) -> String {
    match &shared.resource {
        Some(resource) => {
            let mut url = resource.clone();
            let path = resource.path().trim_end_matches('/');
            url.set_path(&format!("{METADATA_ROOT_PATH}{path}"));
            url.set_query(None);
            url.set_fragment(None);
            url.to_string()
        }
        None => format!("http://{}{}", shared.address(), super::METADATA_PATH),
    }
}
