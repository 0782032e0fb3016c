//! What a call in an MCP session sends its client besides rmcp's own messages: its log messages
//! and progress, sent on the call's own answer (its SSE stream), in order, before its result.
//!
//! rmcp's in-memory sessions send a notification other than progress on the session's stream
//! outside a request (the standalone `GET` stream), which a client may never open: a call's log
//! messages would be lost. So the call puts them here instead, and the answer to its request
//! (`http`'s `buffered`) sends them on its stream, each before the next of rmcp's
//! messages: a request of the server's (an elicitation) the call sent after them, or its result.
//!
//! When the client's connection drops during the call, what the call sends meanwhile waits here;
//! the client's `GET` with `Last-Event-ID` resumes rmcp's stream of the call, and
//! [`OpenCalls`] finds the call's own messages to join it, also after the call has ended (for
//! [`KEEP`], as rmcp keeps the stream's own events).

use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures_util::{Stream, StreamExt};
use sse_stream::Sse;

/// How many messages a call's stream holds that the client has not taken (its stream dropped,
/// not yet resumed); past it, the oldest is dropped.
const CAPACITY: usize = 256;

/// How long the messages of a call that ended with no client reading them wait for it to resume
/// (rmcp keeps a stream's own events a minute after its result).
const KEEP: Duration = Duration::from_mins(1);

/// How many ended calls with messages waiting are kept at most; past it, the longest-waiting go.
const MAX_KEPT: usize = 4096;

/// The messages a call sends on its own answer, from the call to the answer's stream. Held in
/// the request's extensions, so the call finds it in its request context.
#[derive(Debug, Clone, Default)]
pub(crate) struct CallStream(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    queue: Mutex<VecDeque<String>>,
    ready: tokio::sync::Notify,
    /// How many answers have read this stream: only the latest (a resumed one, once the client
    /// resumes) takes its messages.
    readers: AtomicU64,
}

impl CallStream {
    /// Queues `message` (a JSON-RPC message) for the call's answer. Never waits: a client that
    /// does not read (its stream dropped) costs at most [`CAPACITY`] messages.
    pub(crate) fn send(&self, message: String) {
        let mut queue = self.0.queue.lock().unwrap_or_else(PoisonError::into_inner);
        if queue.len() >= CAPACITY {
            queue.pop_front();
            tracing::warn!(
                "a call's client is not reading its stream: its oldest message is dropped"
            );
        }
        queue.push_back(message);
        drop(queue);
        self.0.ready.notify_waiters();
    }

    /// The next queued message for reader `reader`, if there is one now and no later reader took
    /// over.
    fn try_next(&self, reader: u64) -> Option<String> {
        if self.0.readers.load(Ordering::SeqCst) != reader {
            return None;
        }
        self.0
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front()
    }

    /// The next message for reader `reader`, once there is one; `None` once a later reader took
    /// over (the client resumed on another connection).
    async fn next(&self, reader: u64) -> Option<String> {
        loop {
            let notified = self.0.ready.notified();
            tokio::pin!(notified);
            // Registered before the queue is looked at, so a message sent in between wakes it.
            notified.as_mut().enable();
            if self.0.readers.load(Ordering::SeqCst) != reader {
                return None;
            }
            if let Some(message) = self.try_next(reader) {
                return Some(message);
            }
            notified.await;
        }
    }

    /// rmcp's `events` of the call's answer with this stream's messages among them: each message
    /// the call queued before one of rmcp's events goes out before it; the stream ends with
    /// rmcp's (after the result). A stream merged later (the client resumed) takes over the
    /// call's messages: this one then ends, as rmcp's does.
    pub(crate) fn merged(
        self,
        events: impl Stream<Item = Sse> + Send + 'static,
    ) -> Pin<Box<dyn Stream<Item = Sse> + Send>> {
        struct State {
            events: Pin<Box<dyn Stream<Item = Sse> + Send>>,
            call: CallStream,
            reader: u64,
            pending: VecDeque<Sse>,
            ended: bool,
        }
        let reader = self.0.readers.fetch_add(1, Ordering::SeqCst) + 1;
        // A reader this one takes over from wakes up to end.
        self.0.ready.notify_waiters();
        let state = State {
            events: Box::pin(events),
            call: self,
            reader,
            pending: VecDeque::new(),
            ended: false,
        };
        Box::pin(futures_util::stream::unfold(
            state,
            |mut state| async move {
                loop {
                    if let Some(event) = state.pending.pop_front() {
                        return Some((event, state));
                    }
                    if state.ended {
                        return None;
                    }
                    tokio::select! {
                        biased;
                        message = state.call.next(state.reader) => match message {
                            Some(message) => state.pending.push_back(event_of(message)),
                            None => state.ended = true,
                        },
                        event = state.events.next() => {
                            // What the call queued before rmcp sent this went out before it.
                            while let Some(message) = state.call.try_next(state.reader) {
                                state.pending.push_back(event_of(message));
                            }
                            match event {
                                Some(event) => state.pending.push_back(event),
                                None => state.ended = true,
                            }
                        }
                    }
                }
            },
        ))
    }
}

/// The calls of this server's sessions whose answers are streams, by session and rmcp's stream
/// (the `N` of its event ids `I/N`), so a resumed stream gets the call's own messages too. A call
/// is kept while it runs or its answer is read; once both have ended, only while messages its
/// client did not take wait (for [`KEEP`], at most [`MAX_KEPT`] such calls).
#[derive(Debug, Default)]
pub(crate) struct OpenCalls(Mutex<HashMap<(String, String), Kept>>);

/// A call [`OpenCalls`] holds, and since when it has held it alone (the call and its answer
/// ended), if it does.
#[derive(Debug)]
struct Kept {
    call: Arc<Inner>,
    alone_since: Option<Instant>,
}

impl OpenCalls {
    /// Notes `call`, whose answer is rmcp's stream of session `session` whose events have ids
    /// like `event_id`.
    pub(crate) fn insert(&self, session: &str, event_id: &str, call: &CallStream) {
        let Some((_, stream)) = event_id.split_once('/') else {
            return;
        };
        let mut calls = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        prune(&mut calls, Instant::now());
        calls.insert(
            (session.to_owned(), stream.to_owned()),
            Kept {
                call: Arc::clone(&call.0),
                alone_since: None,
            },
        );
    }

    /// The call of session `session` whose stream sent the event `last_event_id`: while it runs,
    /// or after it ended while messages its client did not take wait.
    pub(crate) fn find(&self, session: &str, last_event_id: &str) -> Option<CallStream> {
        let (_, stream) = last_event_id.split_once('/')?;
        let mut calls = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        prune(&mut calls, Instant::now());
        calls
            .get(&(session.to_owned(), stream.to_owned()))
            .map(|kept| CallStream(Arc::clone(&kept.call)))
    }
}

/// Drops the calls no one needs any more: ended (held here alone) with nothing waiting, or
/// waiting longer than [`KEEP`]; then, past [`MAX_KEPT`] ended ones, the longest-waiting.
fn prune(calls: &mut HashMap<(String, String), Kept>, now: Instant) {
    calls.retain(|_, kept| {
        if Arc::strong_count(&kept.call) > 1 {
            kept.alone_since = None;
            return true;
        }
        let waiting = !kept
            .call
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty();
        let since = *kept.alone_since.get_or_insert(now);
        waiting && now.saturating_duration_since(since) <= KEEP
    });
    let ended = calls
        .values()
        .filter(|kept| kept.alone_since.is_some())
        .count();
    if ended <= MAX_KEPT {
        return;
    }
    let mut oldest: Vec<(Instant, (String, String))> = calls
        .iter()
        .filter_map(|(key, kept)| kept.alone_since.map(|since| (since, key.clone())))
        .collect();
    oldest.sort_unstable_by_key(|(since, _)| *since);
    for (_, key) in oldest.drain(..ended - MAX_KEPT) {
        calls.remove(&key);
    }
}

/// An SSE event carrying `message`. It has no id: the client's `Last-Event-ID` stays the last of
/// rmcp's events, the one rmcp resumes after.
fn event_of(message: String) -> Sse {
    Sse {
        event: Some("message".to_owned()),
        data: Some(message),
        ..Sse::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(events: &[Sse]) -> Vec<&str> {
        events
            .iter()
            .filter_map(|event| event.data.as_deref())
            .collect()
    }

    #[tokio::test]
    async fn what_the_call_queued_goes_out_before_the_result() {
        let call = CallStream::default();
        call.send("log 1".to_owned());
        call.send("log 2".to_owned());
        let rmcp = futures_util::stream::iter([Sse {
            data: Some("result".to_owned()),
            ..Sse::default()
        }]);
        let events: Vec<Sse> = call.clone().merged(rmcp).collect().await;
        assert_eq!(data(&events), ["log 1", "log 2", "result"]);
        // The call's messages carry no id: the client resumes after rmcp's.
        assert!(events[0].id.is_none());
    }

    #[tokio::test]
    async fn messages_go_out_as_they_come_while_rmcp_sends_nothing() {
        let call = CallStream::default();
        let (sender, receiver) = tokio::sync::mpsc::channel::<Sse>(1);
        let rmcp = futures_util::stream::unfold(receiver, |mut receiver| async move {
            receiver.recv().await.map(|event| (event, receiver))
        });
        let mut merged = call.clone().merged(rmcp);
        call.send("log".to_owned());
        let first = merged.next().await.and_then(|event| event.data);
        assert_eq!(first.as_deref(), Some("log"));
        drop(sender);
        assert!(merged.next().await.is_none());
    }

    #[tokio::test]
    async fn a_resumed_answer_takes_over_the_calls_messages_and_the_dropped_one_ends() {
        let call = CallStream::default();
        let mut dropped = call.clone().merged(futures_util::stream::pending());
        call.send("before the drop".to_owned());
        let first = dropped.next().await.and_then(|event| event.data);
        assert_eq!(first.as_deref(), Some("before the drop"));
        let mut resumed = call.clone().merged(futures_util::stream::pending());
        call.send("after the resumption".to_owned());
        assert!(dropped.next().await.is_none(), "the dropped answer ends");
        let next = resumed.next().await.and_then(|event| event.data);
        assert_eq!(next.as_deref(), Some("after the resumption"));
    }

    #[test]
    fn a_resumed_stream_finds_its_call_while_the_call_runs() {
        let calls = OpenCalls::default();
        let call = CallStream::default();
        calls.insert("s1", "0/7", &call);
        call.send("queued while the client was away".to_owned());
        let found = calls.find("s1", "3/7").expect("the call runs");
        assert_eq!(
            found.try_next(0).as_deref(),
            Some("queued while the client was away")
        );
        assert!(calls.find("s2", "3/7").is_none(), "another session's");
        assert!(calls.find("s1", "3/8").is_none(), "another stream");
        assert!(calls.find("s1", "3").is_none(), "the session's own stream");
        drop((call, found));
        assert!(
            calls.find("s1", "3/7").is_none(),
            "the call ended, its client took everything"
        );
    }

    #[test]
    fn what_a_call_sent_while_its_client_was_away_waits_after_the_call_ends() {
        let calls = OpenCalls::default();
        let call = CallStream::default();
        calls.insert("s1", "0/7", &call);
        call.send("sent while the client was away".to_owned());
        // The call and its answer end before the client comes back.
        drop(call);
        let found = calls.find("s1", "3/7").expect("its message waits");
        assert_eq!(
            found.try_next(0).as_deref(),
            Some("sent while the client was away")
        );
        drop(found);
        assert!(calls.find("s1", "3/7").is_none(), "nothing waits any more");
    }

    #[test]
    fn an_ended_calls_messages_wait_a_bounded_time_and_number() {
        let calls = OpenCalls::default();
        for n in 0..=MAX_KEPT {
            let call = CallStream::default();
            calls.insert("s1", &format!("0/{n}"), &call);
            call.send(format!("message {n}"));
        }
        let running = CallStream::default();
        calls.insert("s1", "0/running", &running);
        let mut held = calls.0.lock().unwrap();
        prune(&mut held, Instant::now());
        assert_eq!(
            held.len(),
            MAX_KEPT + 1,
            "{MAX_KEPT} ended calls and the running one"
        );
        assert!(
            !held.contains_key(&("s1".to_owned(), "0".to_owned())),
            "the longest-waiting went"
        );
        prune(&mut held, Instant::now() + KEEP + Duration::from_secs(1));
        assert_eq!(held.len(), 1, "after the wait, only the running call");
        assert!(held.contains_key(&("s1".to_owned(), "running".to_owned())));
    }

    #[test]
    fn a_client_that_does_not_read_costs_a_bounded_queue() {
        let call = CallStream::default();
        for n in 0..=CAPACITY {
            call.send(n.to_string());
        }
        assert_eq!(call.try_next(0).as_deref(), Some("1"));
        assert_eq!(call.0.queue.lock().unwrap().len(), CAPACITY - 1);
    }
}
