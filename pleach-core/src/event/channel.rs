//! The channel between a session and its reader: [`channel`], [`EventSender`], [`EventStream`].

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use super::ToolEvent;

/// The sending half of an event stream: where a session sends the events of the calls it runs.
/// Cloning is cheap. A stream that was dropped (nobody listening) is not an error.
///
/// ```
/// let (sender, mut stream) = pleach_core::event::channel();
/// drop(sender);
/// assert!(stream.drain().is_empty());
/// ```
#[derive(Debug)]
pub struct EventSender {
    shared: Option<Arc<Shared>>,
}

/// The queue between senders and the stream. A mutex-guarded deque: one uncontended lock per
/// send, and one per batch of events the stream takes (everything queued at once), which is what
/// the dispatch path can afford (a general-purpose channel costs several atomic
/// read-modify-writes per message on each side).
#[derive(Debug, Default)]
struct Shared {
    state: Mutex<ChannelState>,
    /// Woken when the stream is dropped: a sender waiting for a reader's answer learns there is
    /// none.
    reader_gone: tokio::sync::Notify,
}

#[derive(Debug, Default)]
struct ChannelState {
    queue: VecDeque<ToolEvent>,
    waker: Option<Waker>,
    senders: usize,
    /// Set when the producer declares the stream over, whoever still holds a sender.
    closed: bool,
    stream_dropped: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, ChannelState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A connected sender and stream. Unbounded: a session never waits on a slow reader, so read the
/// stream (or drop it) to bound memory.
///
/// ```
/// let (sender, mut stream) = pleach_core::event::channel();
/// sender.send(pleach_core::ToolEvent::Delta { tool_call_id: "c1".into(), delta: "x".into() });
/// drop(sender);
/// assert_eq!(stream.drain().len(), 1);
/// ```
pub fn channel() -> (EventSender, EventStream) {
    let shared = Arc::new(Shared::default());
    shared.lock().senders = 1;
    (
        EventSender {
            shared: Some(shared.clone()),
        },
        EventStream {
            shared,
            taken: VecDeque::new(),
        },
    )
}

impl EventSender {
    /// A sender that drops everything.
    ///
    /// ```
    /// pleach_core::event::EventSender::discard().send(pleach_core::ToolEvent::Delta {
    ///     tool_call_id: "c1".into(),
    ///     delta: "x".into(),
    /// });
    /// ```
    pub fn discard() -> EventSender {
        EventSender { shared: None }
    }

    /// Whether events sent here can reach a stream (`false` for [`EventSender::discard`]).
    pub(crate) fn is_connected(&self) -> bool {
        self.shared.is_some()
    }

    /// Returns once the stream has been dropped: nobody reads these events any more (never, for
    /// [`EventSender::discard`], which nobody ever read).
    pub(crate) async fn reader_gone(&self) {
        let Some(shared) = &self.shared else {
            return std::future::pending().await;
        };
        loop {
            let notified = shared.reader_gone.notified();
            tokio::pin!(notified);
            // Registered before the look, so a drop between the two still wakes this.
            notified.as_mut().enable();
            if shared.lock().stream_dropped {
                return;
            }
            notified.await;
        }
    }

    /// Ends the stream once what is queued has been read, even if senders remain (a tool may
    /// keep its context, and with it a sender, after its call ended).
    pub(crate) fn close(&self) {
        let Some(shared) = &self.shared else { return };
        let waker = {
            let mut state = shared.lock();
            state.closed = true;
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Sends `event`.
    ///
    /// ```
    /// let (sender, mut stream) = pleach_core::event::channel();
    /// sender.send(pleach_core::ToolEvent::Delta { tool_call_id: "c1".into(), delta: 50.into() });
    /// assert_eq!(stream.drain()[0].event_type(), "tool.delta");
    /// ```
    pub fn send(&self, event: ToolEvent) {
        self.enqueue(|queue| queue.push_back(event));
    }

    /// Sends two events under one lock, each built only when someone listens (a call's
    /// `tool.started` and terminal event, when it ran to its end in place).
    pub(crate) fn send_pair(
        &self,
        first: impl FnOnce() -> ToolEvent,
        second: impl FnOnce() -> ToolEvent,
    ) {
        self.enqueue(|queue| {
            queue.push_back(first());
            queue.push_back(second());
        });
    }

    /// Sends several events under one lock (a turn's `tool.started` events, say).
    pub(crate) fn send_all(&self, events: impl IntoIterator<Item = ToolEvent>) {
        self.enqueue(|queue| queue.extend(events));
    }

    /// Adds to the queue under its lock, unless nobody will read it, and wakes the reader.
    fn enqueue(&self, add: impl FnOnce(&mut VecDeque<ToolEvent>)) {
        let Some(shared) = &self.shared else { return };
        let waker = {
            let mut state = shared.lock();
            if state.stream_dropped || state.closed {
                return;
            }
            add(&mut state.queue);
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl Clone for EventSender {
    fn clone(&self) -> Self {
        if let Some(shared) = &self.shared {
            shared.lock().senders += 1;
        }
        EventSender {
            shared: self.shared.clone(),
        }
    }
}

impl Drop for EventSender {
    fn drop(&mut self) {
        let Some(shared) = &self.shared else { return };
        let waker = {
            let mut state = shared.lock();
            state.senders -= 1;
            if state.senders == 0 {
                state.waker.take()
            } else {
                None
            }
        };
        // The last sender is gone: a waiting stream learns it is over.
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// The events of a turn, as an async [`Stream`](futures_core::Stream). Ends when the turn is over
/// and every event has been read.
///
/// ```rust
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use pleach_core::{tool, Runtime, SessionOptions, ToolCall};
///
/// /// Doubles an integer.
/// #[tool]
/// async fn double(n: i64) -> i64 { n * 2 }
///
/// let runtime = Runtime::builder().build().unwrap();
/// let session = runtime.create_session(SessionOptions::enabled(["double"])).unwrap();
/// let mut turn = session.run_turn(vec![ToolCall::new("c1", "double", r#"{"n":2}"#)]);
/// let mut types = Vec::new();
/// while let Some(event) = turn.events().recv().await {
///     types.push(event.event_type());
/// }
/// assert_eq!(types, ["tool.started", "tool.completed"]);
/// # }
/// ```
#[derive(Debug)]
pub struct EventStream {
    shared: Arc<Shared>,
    /// Events taken from the queue and not yet read: the reader takes everything queued under
    /// one lock, then reads it here without locking.
    taken: VecDeque<ToolEvent>,
}

impl EventStream {
    /// The next event, or `None` when the stream is over.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let (sender, mut stream) = pleach_core::event::channel();
    /// sender.send(pleach_core::ToolEvent::Delta { tool_call_id: "c1".into(), delta: "x".into() });
    /// drop(sender); // the last sender gone: the stream ends once read
    /// assert_eq!(stream.recv().await.map(|e| e.event_type()), Some("tool.delta"));
    /// assert!(stream.recv().await.is_none());
    /// # }
    /// ```
    pub async fn recv(&mut self) -> Option<ToolEvent> {
        std::future::poll_fn(|cx| self.poll_event(cx)).await
    }

    /// The events already sent, without waiting.
    ///
    /// ```
    /// let (sender, mut stream) = pleach_core::event::channel();
    /// assert!(stream.drain().is_empty());
    /// sender.send(pleach_core::ToolEvent::Delta { tool_call_id: "c1".into(), delta: "x".into() });
    /// assert_eq!(stream.drain().len(), 1);
    /// ```
    pub fn drain(&mut self) -> Vec<ToolEvent> {
        // Hand over the queue's buffer rather than copy it out; the senders get a fresh one of
        // the same size, since they are likely to send about as much again.
        let mut state = self.shared.lock();
        let fresh = VecDeque::with_capacity(state.queue.len());
        let queued = std::mem::replace(&mut state.queue, fresh);
        drop(state);
        if self.taken.is_empty() {
            return Vec::from(queued);
        }
        let mut events = Vec::from(std::mem::take(&mut self.taken));
        events.extend(queued);
        events
    }

    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<ToolEvent>> {
        if let Some(event) = self.taken.pop_front() {
            return Poll::Ready(Some(event));
        }
        let mut state = self.shared.lock();
        if !state.queue.is_empty() {
            // Everything queued at once, under this one lock: the senders get this stream's
            // empty buffer back, so neither side allocates while events keep flowing.
            std::mem::swap(&mut state.queue, &mut self.taken);
            drop(state);
            return Poll::Ready(self.taken.pop_front());
        }
        if state.senders == 0 || state.closed {
            return Poll::Ready(None);
        }
        state.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for EventStream {
    fn drop(&mut self) {
        // Nobody will read: free what is queued and refuse what comes.
        let mut state = self.shared.lock();
        state.stream_dropped = true;
        state.queue.clear();
        drop(state);
        self.shared.reader_gone.notify_waiters();
        self.taken.clear();
    }
}

impl futures_core::Stream for EventStream {
    type Item = ToolEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ToolEvent>> {
        self.poll_event(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::ToolCall;

    #[tokio::test]
    async fn reading_takes_the_queue_at_once_and_keeps_the_order() {
        let (sender, mut stream) = channel();
        let started = |id: &str| ToolEvent::Started {
            tool_call: ToolCall::new(id, "t", "{}"),
        };
        for id in ["a", "b", "c"] {
            sender.send(started(id));
        }
        // `a` is read; `b` and `c` now wait on the stream's side, `d` and `e` in the queue.
        assert_eq!(stream.recv().await.unwrap().tool_call_id(), "a");
        sender.send(started("d"));
        assert_eq!(stream.recv().await.unwrap().tool_call_id(), "b");
        sender.send(started("e"));
        let rest: Vec<String> = stream
            .drain()
            .iter()
            .map(|event| event.tool_call_id().to_owned())
            .collect();
        assert_eq!(rest, ["c", "d", "e"]);
        sender.send(started("f"));
        drop(sender);
        assert_eq!(stream.recv().await.unwrap().tool_call_id(), "f");
        assert!(stream.recv().await.is_none());
    }
}
