//! MCP sessions over Streamable HTTP: which requests belong to one, and how many there may be.
//!
//! A client that starts with `initialize` (MCP before 2026-07-28) gets a session, held in this
//! process's memory by rmcp's `LocalSessionManager` (and, with a session store, its state in
//! Redis): its requests then reach it on the session's own channel, so the server can ask the
//! client things during a call (an approval, an elicitation). Every other request, from a client that never initializes,
//! is answered statelessly, each in a session of its own.

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use serde::Deserialize;

use crate::McpServer;
use rmcp::transport::streamable_http_server::StreamableHttpService;

/// The header naming the session a request belongs to. Each request's headers are looked up by
/// name a few times: a `HeaderName` is hashed as it is, a `&str` parsed and checked first.
pub(super) const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");

/// The header naming a request's JSON-RPC method (MCP 2026-07-28).
pub(super) const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");

/// The header naming the last event of a stream a client resumes.
pub(super) const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// Which of the two services answers a request, chosen by the guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Route {
    /// A session's request, or the `initialize` that starts one.
    Session,
    /// A request of a client that never initialized.
    Stateless,
}

/// The route of a request naming `session` (its `Mcp-Session-Id`), whose body (a POST's, when
/// it names no session) is `body`: a session's when it names one `held` says this process holds
/// (or, with a session store, any session: the store restores or refuses it), or starts one with
/// `initialize`.
///
/// A request naming a session this process does not hold — another replica's, one from before a
/// restart, one that expired — is answered statelessly, as for a client that never initialized:
/// replicas without a store behind round robin still answer every request.
pub(super) fn route(
    method: &Method,
    session: Option<&HeaderValue>,
    body: Option<&[u8]>,
    held: impl FnOnce(&str) -> bool,
) -> Route {
    if let Some(id) = session {
        return match id.to_str() {
            Ok(id) if held(id) => Route::Session,
            _ => Route::Stateless,
        };
    }
    if method == Method::POST && body.is_some_and(starts_session) {
        Route::Session
    } else {
        Route::Stateless
    }
}

/// Whether a request naming no session must be read to be routed: a POST that may be an
/// `initialize` (an `Mcp-Method` header, MCP 2026-07-28, names its method without it).
pub(super) fn needs_body(method: &Method, headers: &HeaderMap) -> bool {
    method == Method::POST
        && headers
            .get(&MCP_METHOD)
            .is_none_or(|name| name.as_bytes() == b"initialize")
}

/// Whether `body` is an `initialize` request: what starts a session.
fn starts_session(body: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct Method<'a> {
        #[serde(borrow)]
        method: Option<&'a str>,
    }
    // A body without the word is no `initialize`, and most are not: only those with it are parsed.
    static INITIALIZE: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"initialize"));
    INITIALIZE.find(body).is_some()
        && serde_json::from_slice::<Method<'_>>(body)
            .is_ok_and(|message| message.method == Some("initialize"))
}

/// The two services behind the guard: rmcp with sessions held in memory, and rmcp stateless.
#[derive(Clone)]
pub(super) struct Services {
    pub(super) sessions: StreamableHttpService<McpServer, LocalSessionManager>,
    pub(super) stateless: StreamableHttpService<McpServer, NeverSessionManager>,
}

impl Services {
    /// Answers `request` with the service `route` names.
    ///
    /// By reference: a service is cloned (its configuration with it) only by rmcp's own `Service`
    /// impl, which this does not go through.
    pub(super) async fn answer(&self, request: Request, route: Route) -> Response {
        match route {
            // Boxed, so a stateless answer does not carry a session's larger future.
            Route::Session => Box::pin(self.sessions.handle(request))
                .await
                .into_response(),
            Route::Stateless => self.stateless.handle(request).await.into_response(),
        }
    }
}

/// How many sessions `manager` holds now (those still initializing included).
pub(super) async fn count(manager: &LocalSessionManager) -> usize {
    manager.sessions.read().await.len()
}

/// Whether `manager` holds session `id`.
pub(super) async fn holds(manager: &LocalSessionManager, id: &str) -> bool {
    manager.sessions.read().await.contains_key(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_initialize_or_a_session_id_routes_to_the_sessions() {
        let none = None;
        let held = |id: &str| id == "held";
        let initialize = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
        let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#;
        assert_eq!(
            route(&Method::POST, none, Some(initialize), held),
            Route::Session
        );
        assert_eq!(
            route(&Method::POST, none, Some(call), held),
            Route::Stateless
        );
        assert_eq!(
            route(&Method::POST, none, Some(b"not json"), held),
            Route::Stateless
        );
        assert_eq!(
            route(
                &Method::POST,
                none,
                Some(br#"[{"method":"initialize"}]"#),
                held
            ),
            Route::Stateless
        );
        assert_eq!(route(&Method::GET, none, None, held), Route::Stateless);
        let held_id = HeaderValue::from_static("held");
        let session = Some(&held_id);
        assert_eq!(
            route(&Method::POST, session, Some(call), held),
            Route::Session
        );
        assert_eq!(route(&Method::DELETE, session, None, held), Route::Session);
        assert_eq!(route(&Method::GET, session, None, held), Route::Session);
        // Another replica's session, or one that ended: answered statelessly.
        let elsewhere = HeaderValue::from_static("elsewhere");
        let session = Some(&elsewhere);
        assert_eq!(
            route(&Method::POST, session, Some(call), held),
            Route::Stateless
        );
        // An id that is not text names no session this process can hold.
        let binary = HeaderValue::from_bytes(b"\xff").unwrap();
        assert_eq!(
            route(&Method::POST, Some(&binary), None, |_| true),
            Route::Stateless
        );
    }

    #[test]
    fn only_a_post_that_may_start_a_session_is_read_to_be_routed() {
        let mut headers = HeaderMap::new();
        assert!(needs_body(&Method::POST, &headers));
        assert!(!needs_body(&Method::GET, &headers));
        headers.insert(MCP_METHOD, HeaderValue::from_static("tools/call"));
        assert!(!needs_body(&Method::POST, &headers));
        headers.insert(MCP_METHOD, HeaderValue::from_static("initialize"));
        assert!(needs_body(&Method::POST, &headers));
    }
}
