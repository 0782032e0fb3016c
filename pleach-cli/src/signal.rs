//! The signals that ask a long-running command (`pleach mcp` on stdio, `pleach worker`) to stop.

/// Resolves when the process is asked to stop: SIGTERM, SIGINT or SIGHUP. A signal that cannot
/// be watched keeps its default action (the process dies without dropping its calls); never
/// resolves where there are no such signals.
pub(crate) async fn terminated() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::SignalKind;
        tokio::select! {
            () = received(SignalKind::terminate()) => {}
            () = received(SignalKind::interrupt()) => {}
            () = received(SignalKind::hangup()) => {}
        }
    }
    #[cfg(not(unix))]
    std::future::pending::<()>().await;
}

/// Resolves when `kind` arrives; never when it cannot be watched.
#[cfg(unix)]
async fn received(kind: tokio::signal::unix::SignalKind) {
    match tokio::signal::unix::signal(kind) {
        Ok(mut signal) => {
            signal.recv().await;
        }
        Err(_) => std::future::pending::<()>().await,
    }
}
