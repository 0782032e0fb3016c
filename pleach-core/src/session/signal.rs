//! A session's signal: the token that fires when the session is dropped, made only when
//! something asks for it. A session that never runs a turn (a server's session for one request,
//! whose calls carry a signal of their own) then makes, fires and frees no token.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering, fence};

use tokio_util::sync::CancellationToken;

/// A token made on first use, and cancelled (or made cancelled) once [`fire`](Self::fire)d.
#[derive(Debug, Default)]
pub(super) struct SessionSignal {
    token: OnceLock<CancellationToken>,
    fired: AtomicBool,
}

impl SessionSignal {
    /// The token: cancelled if the signal has fired, even when it was made afterwards.
    pub(super) fn token(&self) -> &CancellationToken {
        if let Some(token) = self.token.get() {
            return token;
        }
        let token = self.token.get_or_init(CancellationToken::new);
        // Paired with the fence in `fire`: of a token made while the signal fires, either this
        // sees `fired` or `fire` sees the token, so it is cancelled either way.
        fence(Ordering::SeqCst);
        if self.fired.load(Ordering::Relaxed) {
            token.cancel();
        }
        token
    }

    /// Fires the signal: the token, if made, is cancelled, and one made later starts cancelled.
    pub(super) fn fire(&self) {
        self.fired.store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        if let Some(token) = self.token.get() {
            token.cancel();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_asked_for_before_the_signal_fires_is_cancelled_by_it() {
        let signal = SessionSignal::default();
        let token = signal.token().clone();
        assert!(!token.is_cancelled());
        signal.fire();
        assert!(token.is_cancelled());
    }

    #[test]
    fn a_token_asked_for_after_the_signal_fired_starts_cancelled() {
        let signal = SessionSignal::default();
        signal.fire();
        assert!(signal.token().is_cancelled());
        assert!(signal.token().child_token().is_cancelled());
    }

    #[test]
    fn a_signal_that_fires_while_its_token_is_made_still_cancels_it() {
        for _ in 0..1_000 {
            let signal = std::sync::Arc::new(SessionSignal::default());
            let asking = {
                let signal = std::sync::Arc::clone(&signal);
                std::thread::spawn(move || signal.token().clone())
            };
            signal.fire();
            let token = asking.join().expect("the thread asking for the token");
            assert!(token.is_cancelled());
        }
    }
}
