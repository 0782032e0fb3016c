//! The events of the sessions' streams, held in memory so a client whose connection dropped can
//! resume a call's stream with `Last-Event-ID`, also once the call has ended.
//!
//! rmcp's in-memory sessions keep a stream only while its call runs: the result sent into a
//! dropped connection went with it. Given this store, rmcp writes every event of a session's
//! streams here, and a `GET` with `Last-Event-ID` reads the stream from here: what came after that
//! event, then what comes next, until the call's result.
//!
//! Bounded: at most [`EVENTS_A_STREAM`] events a stream (the oldest dropped) and
//! [`MAX_STREAMS`] streams (the least recently used that no client reads dropped first); a
//! stream whose result was sent is kept [`KEPT_AFTER_RESULT`].

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rmcp::model::ServerJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::{
    EventId, EventStore, EventStoreError, EventStream, ServerSseMessage,
};

/// How many events of one stream are kept: past it, the oldest goes.
const EVENTS_A_STREAM: usize = 64;
/// How many streams are kept.
const MAX_STREAMS: usize = 4096;
/// How long a stream is kept once its call's result is in it.
const KEPT_AFTER_RESULT: Duration = Duration::from_mins(1);

/// The sessions' streams and their recent events.
#[derive(Debug, Default)]
pub(super) struct MemoryEvents(Mutex<HashMap<String, Log>>);

/// One stream's recent events.
#[derive(Debug)]
struct Log {
    /// The events kept, each with its number in the stream.
    events: VecDeque<(u64, ServerSseMessage)>,
    /// The number the next event gets.
    next: u64,
    /// When the call's result was written, if it was.
    ended: Option<Instant>,
    /// When an event was last written or read.
    used: Instant,
    /// How many clients read it now: a stream being read is not dropped for room.
    readers: usize,
    /// Woken when an event is written.
    written: Arc<tokio::sync::Notify>,
}

impl Log {
    fn new() -> Log {
        Log {
            events: VecDeque::new(),
            next: 0,
            ended: None,
            used: Instant::now(),
            readers: 0,
            written: Arc::default(),
        }
    }
}

/// `N/STREAM`: rmcp's own form of an event id.
fn event_id(stream: &str, number: u64) -> EventId {
    format!("{number}/{stream}")
}

/// The stream and number an event id names.
fn parse(event_id: &str) -> Option<(&str, u64)> {
    let (number, stream) = event_id.split_once('/')?;
    Some((stream, number.parse().ok()?))
}

/// Whether `event` carries the call's result (a response or an error): the stream's last.
fn is_result(event: &ServerSseMessage) -> bool {
    matches!(
        event.message.as_deref(),
        Some(ServerJsonRpcMessage::Response(_) | ServerJsonRpcMessage::Error(_))
    )
}

impl MemoryEvents {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Log>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes `event` to `stream`; its id.
    fn write(&self, stream: &str, event: &ServerSseMessage) -> EventId {
        let mut streams = self.lock();
        if !streams.contains_key(stream) {
            make_room(&mut streams);
        }
        let log = streams.entry(stream.to_owned()).or_insert_with(Log::new);
        let number = log.next;
        log.next += 1;
        let id = event_id(stream, number);
        let mut kept = event.clone();
        kept.event_id = Some(id.clone());
        if is_result(&kept) {
            log.ended = Some(Instant::now());
        }
        if log.events.len() >= EVENTS_A_STREAM {
            log.events.pop_front();
        }
        log.events.push_back((number, kept));
        log.used = Instant::now();
        log.written.notify_waiters();
        id
    }

    /// The events of the stream `last` belongs to that came after it, then each as it is written,
    /// until the call's result; `None` for a stream not (or no longer) kept.
    fn read_after(self: &Arc<Self>, last: &str) -> Option<EventStream> {
        let (stream, number) = parse(last)?;
        self.lock().get_mut(stream)?.readers += 1;
        let reader = Reader {
            events: Arc::clone(self),
            stream: stream.to_owned(),
            after: number,
            done: false,
        };
        Some(Box::pin(futures_util::stream::unfold(
            reader,
            |mut reader| async move {
                let event = reader.next().await?;
                Some((event, reader))
            },
        )))
    }
}

/// Drops what is past its time, and the least recently used stream no client reads when there
/// are [`MAX_STREAMS`].
fn make_room(streams: &mut HashMap<String, Log>) {
    streams.retain(|_, log| {
        log.readers > 0
            || log
                .ended
                .is_none_or(|ended| ended.elapsed() < KEPT_AFTER_RESULT)
    });
    while streams.len() >= MAX_STREAMS {
        let oldest = streams
            .iter()
            .filter(|(_, log)| log.readers == 0)
            .min_by_key(|(_, log)| log.used)
            .map(|(stream, _)| stream.clone());
        match oldest {
            Some(stream) => streams.remove(&stream),
            None => break,
        };
    }
}

/// One client's read of a stream.
struct Reader {
    events: Arc<MemoryEvents>,
    stream: String,
    /// The number of the last event it has.
    after: u64,
    done: bool,
}

impl Reader {
    /// The next event, once it is written; `None` after the result, or when the stream is gone.
    async fn next(&mut self) -> Option<ServerSseMessage> {
        loop {
            if self.done {
                return None;
            }
            let written = {
                let mut streams = self.events.lock();
                let log = streams.get_mut(&self.stream)?;
                log.used = Instant::now();
                if let Some((number, event)) =
                    log.events.iter().find(|(number, _)| *number > self.after)
                {
                    self.after = *number;
                    self.done = is_result(event);
                    return Some(event.clone());
                }
                if log.ended.is_some() {
                    return None;
                }
                Arc::clone(&log.written)
            };
            let notified = written.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            // Written between the look and the wait: look again.
            let written_since = self
                .events
                .lock()
                .get(&self.stream)
                .is_none_or(|log| log.next > self.after + 1);
            if !written_since {
                notified.await;
            }
        }
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        if let Some(log) = self.events.lock().get_mut(&self.stream) {
            log.readers = log.readers.saturating_sub(1);
        }
    }
}

/// rmcp's handle on the store.
#[derive(Debug, Clone, Default)]
pub(super) struct SharedEvents(Arc<MemoryEvents>);

#[async_trait::async_trait]
impl EventStore for SharedEvents {
    async fn store_event(
        &self,
        stream_id: &str,
        event: &ServerSseMessage,
    ) -> Result<EventId, EventStoreError> {
        Ok(self.0.write(stream_id, event))
    }

    async fn replay_events_after(
        &self,
        last_event_id: &str,
    ) -> Result<EventStream, EventStoreError> {
        self.0.read_after(last_event_id).ok_or_else(|| {
            format!(
                "no stream has the event `{last_event_id}` (it ended a while ago, or never was)"
            )
            .into()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;
    use rmcp::model::{JsonRpcResponse, JsonRpcVersion2_0, NumberOrString, RequestId};

    fn result(id: i64) -> ServerSseMessage {
        ServerSseMessage::from_message(ServerJsonRpcMessage::Response(JsonRpcResponse {
            jsonrpc: JsonRpcVersion2_0,
            id: RequestId::from(NumberOrString::Number(id)),
            result: rmcp::model::ServerResult::empty(()),
        }))
    }

    fn priming() -> ServerSseMessage {
        ServerSseMessage::retry(Duration::from_secs(3))
    }

    #[tokio::test]
    async fn a_read_gets_what_came_after_then_what_comes_until_the_result() {
        let events = Arc::new(MemoryEvents::default());
        let first = events.write("s", &priming());
        let second = events.write("s", &priming());
        assert_eq!((first.as_str(), second.as_str()), ("0/s", "1/s"));
        let mut read = events.read_after(&first).expect("kept");
        let next = read.next().await.expect("the second");
        assert_eq!(next.event_id.as_deref(), Some("1/s"));
        let writer = Arc::clone(&events);
        tokio::spawn(async move {
            tokio::task::yield_now().await;
            writer.write("s", &result(1));
        });
        let last = read.next().await.expect("the result, once written");
        assert!(is_result(&last));
        assert!(
            read.next().await.is_none(),
            "the stream ends with the result"
        );
        // Resumed once the call ended: the result again, from the store.
        let again: Vec<_> = events.read_after(&second).expect("kept").collect().await;
        assert_eq!(again.len(), 1);
        assert!(events.read_after("0/unknown").is_none());
        assert!(events.read_after("not an id").is_none());
    }

    #[test]
    fn a_stream_keeps_its_latest_events_and_streams_are_bounded() {
        let events = MemoryEvents::default();
        for _ in 0..EVENTS_A_STREAM + 3 {
            events.write("s", &priming());
        }
        let streams = events.lock();
        let kept = &streams["s"].events;
        assert_eq!(kept.len(), EVENTS_A_STREAM);
        assert_eq!(kept.front().map(|(number, _)| *number), Some(3));
        drop(streams);
        for n in 0..MAX_STREAMS + 5 {
            events.write(&format!("stream {n}"), &priming());
        }
        assert!(events.lock().len() <= MAX_STREAMS);
    }
}
