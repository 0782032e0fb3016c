//! CORS for browser pages of the allowed origins: tower-http's layer, configured with the MCP
//! headers, answers preflights before the guard (so they need no token) and adds the CORS headers
//! to the answers of requests that carry an `Origin`.
//!
//! A request without `Origin` (every non-browser client, and so nearly every request) does not
//! go through the layer's per-request work: its answer gets the `Vary` the layer gives such a
//! request (so a cache keeps answers to browsers and to other clients apart), worked out once,
//! when the site is built, by asking the layer itself.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderName, Method, header};
use axum::response::Response;
use futures_util::future::Either;
use tower::{Layer as _, Service as _};
use tower_http::cors::{AllowOrigin, Cors, CorsLayer};

use super::Shared;
use super::guard::{Answer, Guarded};

/// The CORS of a site: its allowed origins are `shared`'s.
pub(super) fn layer(shared: Arc<Shared>) -> CorsLayer {
    let mcp = HeaderName::from_static;
    CorsLayer::new()
        .allow_origin(AllowOrigin::predicate(move |origin, _| {
            shared.origins.allows(origin)
        }))
        .allow_methods([Method::GET, Method::POST, Method::DELETE])
        .allow_headers([
            header::AUTHORIZATION,
            header::CONTENT_TYPE,
            header::ACCEPT,
            mcp("mcp-session-id"),
            mcp("mcp-protocol-version"),
            mcp("last-event-id"),
            mcp("mcp-method"),
            mcp("mcp-name"),
        ])
        .expose_headers([
            mcp("mcp-session-id"),
            mcp("mcp-protocol-version"),
            header::WWW_AUTHENTICATE,
            header::RETRY_AFTER,
        ])
        .max_age(Duration::from_mins(10))
}

/// The endpoint behind CORS: requests with an `Origin`, and preflights, through the layer; the
/// rest straight to the endpoint, which gives their answers the headers the layer would give them
/// (but `Access-Control-Expose-Headers`: [`plain_headers`]). One `Arc`, as [`Guarded`] is.
#[derive(Clone)]
pub(super) struct BrowserCors(Arc<Plain>);

/// The layer and the endpoint.
struct Plain {
    layer: CorsLayer,
    endpoint: Guarded,
}

impl BrowserCors {
    pub(super) fn new(layer: CorsLayer, endpoint: Guarded) -> BrowserCors {
        let endpoint = endpoint.with_plain_headers(plain_headers(&layer));
        BrowserCors(Arc::new(Plain { layer, endpoint }))
    }
}

/// What `layer` adds to the answer of a `GET` without `Origin`: asked of the layer, in front of a
/// service answering at once, so it is whatever this version of tower-http adds; less
/// `Access-Control-Expose-Headers`, which a browser reads only on the answer to a request with
/// `Origin` (every cross-origin request has one), so that on other answers it is bytes every
/// client reads for nothing.
fn plain_headers(layer: &CorsLayer) -> HeaderMap {
    let answer =
        tower::service_fn(|_: Request| async { Ok::<Response, Infallible>(Response::default()) });
    let mut cors = layer.layer(answer);
    let mut future = std::pin::pin!(cors.call(Request::default()));
    let mut headers = match future
        .as_mut()
        .poll(&mut Context::from_waker(std::task::Waker::noop()))
    {
        Poll::Ready(Ok(response)) => response.into_parts().0.headers,
        Poll::Ready(Err(never)) => match never {},
        // Nothing in the layer waits on a request without `Origin`.
        Poll::Pending => HeaderMap::new(),
    };
    headers.remove(header::ACCESS_CONTROL_EXPOSE_HEADERS);
    headers
}

impl tower::Service<Request> for BrowserCors {
    type Response = Response;
    type Error = Infallible;
    type Future = Either<tower_http::cors::ResponseFuture<Answer>, Answer>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        if request.method() == Method::OPTIONS || request.headers().contains_key(header::ORIGIN) {
            let mut cors: Cors<Guarded> = self.0.layer.layer(self.0.endpoint.clone());
            return Either::Left(cors.call(request));
        }
        Either::Right(self.0.endpoint.answer(request, true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_headers_of_an_answer_without_origin_are_the_layers_own_but_what_only_cors_reads() {
        let layer = CorsLayer::new()
            .allow_origin(AllowOrigin::predicate(|_, _| true))
            .expose_headers([HeaderName::from_static("mcp-session-id")]);
        let headers = plain_headers(&layer);
        assert_eq!(
            headers.get(header::VARY).map(|vary| vary.to_str().unwrap()),
            Some("origin, access-control-request-method, access-control-request-headers")
        );
        assert!(!headers.contains_key(header::ACCESS_CONTROL_EXPOSE_HEADERS));
        assert!(!headers.contains_key(header::ACCESS_CONTROL_ALLOW_ORIGIN));
    }
}
