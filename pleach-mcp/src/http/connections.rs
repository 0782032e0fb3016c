//! The server's connections: at most so many open at once, HTTP/1.1 only, a request's headers
//! within the header timeout, and on drain the connections with no request running closed at
//! once, the others once their response is sent.
//!
//! HTTP/1.1 alone, whatever features the build unifies into hyper: h2c (HTTP/2 without TLS,
//! by prior knowledge or `Upgrade`) is not spoken. Behind a load balancer or a TLS terminator,
//! that hop speaks HTTP/2 with browsers and clients; MCP clients speak HTTP/1.1; and one protocol
//! keeps one set of limits to reason about (HTTP/2's streams have their own: rapid reset, many
//! streams on one connection under one connection's cap).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// How many connections may be open and how long a request's headers may take.
#[derive(Debug, Clone, Copy)]
pub(super) struct ConnectionLimits {
    pub(super) max_connections: usize,
    pub(super) header_timeout: Duration,
}

/// Serves `app` on `listener` until `closing` fires; then takes no more connections, closes
/// those with no request running, lets the others send their response, and returns when every
/// connection is closed.
///
/// At the cap, no connection is accepted until one closes: new ones wait in the listener's
/// backlog, costing the server no descriptor, and are served as slow ones are cut.
pub(super) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    closing: CancellationToken,
) {
    let max = u32::try_from(limits.max_connections.max(1)).unwrap_or(u32::MAX);
    let open = Arc::new(Semaphore::new(max as usize));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    loop {
        let permit = tokio::select! {
            biased;
            () = closing.cancelled() => break,
            permit = Arc::clone(&open).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_closed) => break,
            },
        };
        let stream = tokio::select! {
            biased;
            () = closing.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    // Out of descriptors, most likely: the open connections go on, and a moment
                    // later one may have closed.
                    tracing::warn!("cannot accept a connection: {error}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let running = Arc::new(AtomicUsize::new(0));
        let service = {
            let (app, running) = (app.clone(), Arc::clone(&running));
            hyper::service::service_fn(move |request: Request<Incoming>| {
                let busy = Busy::new(&running);
                let app = app.clone();
                async move {
                    let response = app.oneshot(request.map(Body::new)).await?;
                    Ok::<_, Infallible>(
                        response.map(|body| Body::new(Holding { body, _busy: busy })),
                    )
                }
            })
        };
        let connection = http.serve_connection(TokioIo::new(stream), service);
        let closing = closing.clone();
        tokio::spawn(async move {
            tokio::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => {}
                () = closing.cancelled() => {
                    // No request running (idle, or its headers still coming): closed now.
                    if running.load(Ordering::SeqCst) > 0 {
                        connection.as_mut().graceful_shutdown();
                        let _ = connection.await;
                    }
                }
            }
            drop(permit);
        });
    }
    drop(listener);
    // Every permit back: every connection closed.
    let _ = open.acquire_many(max).await;
}

/// Counts a request as running on its connection, from its headers to its response's end.
struct Busy(Arc<AtomicUsize>);

impl Busy {
    fn new(running: &Arc<AtomicUsize>) -> Busy {
        running.fetch_add(1, Ordering::SeqCst);
        Busy(Arc::clone(running))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A response body that keeps its request counted as running until it is sent or dropped.
struct Holding {
    body: Body,
    _busy: Busy,
}

impl http_body::Body for Holding {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}
