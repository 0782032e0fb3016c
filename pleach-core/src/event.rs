//! The wire events of a tool call's lifecycle: `tool.started`, `tool.delta`, `tool.completed`,
//! `tool.failed`, serialized exactly as the spec prints them, and their NDJSON and SSE forms.
//!
//! `docs/events.md` is the contract: payloads, ordering rules, examples.
//!
//! ```
//! use pleach_core::{ToolCall, event::{self, ToolEvent}};
//!
//! let (sender, mut stream) = event::channel();
//! let call = ToolCall::new("c1", "add", r#"{"a":1,"b":2}"#);
//! sender.send(ToolEvent::Started { tool_call: call.clone() });
//! sender.send(ToolEvent::Completed { tool_call: call, result: 3.into() });
//! let lines: String = stream.drain().iter().map(ToolEvent::to_ndjson).collect();
//! assert_eq!(
//!     lines,
//!     concat!(
//!         r#"{"type":"tool.started","toolCall":{"id":"c1","name":"add","args":{"a":1,"b":2}}}"#, "\n",
//!         r#"{"type":"tool.completed","toolCall":{"id":"c1","name":"add","args":{"a":1,"b":2}},"result":3}"#, "\n",
//!     )
//! );
//! ```

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::error::ToolError;
use crate::tool::ToolCall;

/// One event of a tool call's lifecycle.
///
/// Every call that reaches a session produces one `Started`, any number of `Delta`s, then exactly
/// one of `Completed` / `Failed`, and nothing after that.
///
/// ```
/// use pleach_core::{ToolCall, event::ToolEvent};
///
/// let call = ToolCall::new("call_1", "search_corpus", r#"{"query":"rust"}"#);
/// let started = ToolEvent::Started { tool_call: call.clone() };
/// assert_eq!(
///     started.to_json(),
///     r#"{"type":"tool.started","toolCall":{"id":"call_1","name":"search_corpus","args":{"query":"rust"}}}"#
/// );
/// let done = ToolEvent::Completed { tool_call: call, result: serde_json::json!(["a"]) };
/// assert_eq!(done.event_type(), "tool.completed");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ToolEvent {
    /// The call was seen (its id and name known).
    Started {
        /// The call.
        tool_call: ToolCall,
    },
    /// A fragment: streamed arguments text, or progress a tool reports through its context.
    Delta {
        /// The call's id.
        tool_call_id: Arc<str>,
        /// The fragment (a string for argument text; any JSON for tool progress).
        delta: Value,
    },
    /// The call finished with a result.
    Completed {
        /// The call.
        tool_call: ToolCall,
        /// The tool's result.
        result: Value,
    },
    /// The call failed.
    Failed {
        /// The call.
        tool_call: ToolCall,
        /// Why.
        error: ToolError,
    },
    /// `interrupt.requested`: a detector flagged a `standard`-tier call; it waits for the host's
    /// decision ([`Session::resolve`](crate::Session::resolve)). See `docs/safety.md`.
    InterruptRequested {
        /// The waiting call, its findings and the ground-truth panel.
        interrupt: Arc<crate::safety::Interrupt>,
    },
    /// `interrupt.resolved`: the host answered an interrupt (the call then runs, or fails with
    /// 1013 for a rejection).
    InterruptResolved {
        /// The call's id.
        tool_call_id: Arc<str>,
        /// The interrupt's id.
        interrupt_id: String,
        /// `accept`, `edit` or `reject`.
        action: &'static str,
    },
    /// `safety.probe`: a detector flagged an `advisory`-tier call; the call runs anyway.
    SafetyProbe {
        /// The call.
        tool_call: ToolCall,
        /// What was flagged.
        findings: Vec<crate::safety::Finding>,
    },
}

impl ToolEvent {
    /// The dotted event name: `tool.started`, `tool.delta`, `tool.completed` or `tool.failed`.
    ///
    /// ```
    /// use pleach_core::{ToolCall, ToolError, ToolEvent};
    ///
    /// let failed = ToolEvent::Failed {
    ///     tool_call: ToolCall::new("c1", "add", "{}"),
    ///     error: ToolError::failed("no"),
    /// };
    /// assert_eq!(failed.event_type(), "tool.failed");
    /// ```
    pub fn event_type(&self) -> &'static str {
        match self {
            ToolEvent::Started { .. } => "tool.started",
            ToolEvent::Delta { .. } => "tool.delta",
            ToolEvent::Completed { .. } => "tool.completed",
            ToolEvent::Failed { .. } => "tool.failed",
            ToolEvent::InterruptRequested { .. } => "interrupt.requested",
            ToolEvent::InterruptResolved { .. } => "interrupt.resolved",
            ToolEvent::SafetyProbe { .. } => "safety.probe",
        }
    }

    /// The id of the call the event is about.
    ///
    /// ```
    /// use pleach_core::ToolEvent;
    ///
    /// let delta = ToolEvent::Delta { tool_call_id: "c7".into(), delta: "{\"a\":".into() };
    /// assert_eq!(delta.tool_call_id(), "c7");
    /// ```
    pub fn tool_call_id(&self) -> &str {
        match self {
            ToolEvent::Started { tool_call }
            | ToolEvent::Completed { tool_call, .. }
            | ToolEvent::Failed { tool_call, .. }
            | ToolEvent::SafetyProbe { tool_call, .. } => tool_call.id(),
            ToolEvent::Delta { tool_call_id, .. }
            | ToolEvent::InterruptResolved { tool_call_id, .. } => tool_call_id,
            ToolEvent::InterruptRequested { interrupt } => interrupt.tool_call.id(),
        }
    }

    /// Whether this is the call's last event (`tool.completed` or `tool.failed`).
    ///
    /// ```
    /// use pleach_core::{ToolCall, ToolEvent};
    ///
    /// let call = ToolCall::new("c1", "add", "{}");
    /// assert!(!ToolEvent::Started { tool_call: call.clone() }.is_terminal());
    /// assert!(ToolEvent::Completed { tool_call: call, result: 3.into() }.is_terminal());
    /// ```
    pub fn is_terminal(&self) -> bool {
        matches!(self, ToolEvent::Completed { .. } | ToolEvent::Failed { .. })
    }

    /// The event as one line of JSON (no trailing newline). No line break of any kind is written
    /// raw: U+2028, U+2029 and U+0085 become `\u` escapes, like the control characters.
    ///
    /// ```
    /// use pleach_core::ToolEvent;
    ///
    /// let delta = ToolEvent::Delta { tool_call_id: "c1".into(), delta: "{\"a\":".into() };
    /// assert_eq!(delta.to_json(), r#"{"type":"tool.delta","toolCallId":"c1","delta":"{\"a\":"}"#);
    /// ```
    pub fn to_json(&self) -> String {
        // Serializing these shapes cannot fail: string keys, and values already JSON.
        escape_line_separators(serde_json::to_string(self).unwrap_or_default())
    }

    /// The event as an NDJSON line (JSON and `\n`).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use pleach_core::event::ToolEvent;
    /// let e = ToolEvent::Delta { tool_call_id: Arc::from("call_1"), delta: "{\"q".into() };
    /// assert_eq!(e.to_ndjson(), "{\"type\":\"tool.delta\",\"toolCallId\":\"call_1\",\"delta\":\"{\\\"q\"}\n");
    /// ```
    pub fn to_ndjson(&self) -> String {
        let mut line = self.to_json();
        line.push('\n');
        line
    }

    /// The event as a Server-Sent Events message: `event: <type>`, `data: <json>`, blank line.
    ///
    /// ```
    /// # use pleach_core::{ToolCall, event::ToolEvent};
    /// let call = ToolCall::new("c1", "ping", "{}");
    /// let sse = ToolEvent::Started { tool_call: call }.to_sse();
    /// assert_eq!(sse, "event: tool.started\ndata: {\"type\":\"tool.started\",\"toolCall\":{\"id\":\"c1\",\"name\":\"ping\",\"args\":{}}}\n\n");
    /// ```
    pub fn to_sse(&self) -> String {
        format!("event: {}\ndata: {}\n\n", self.event_type(), self.to_json())
    }
}

/// `json` with U+0085, U+2028 and U+2029 written as `\u` escapes. JSON takes them raw inside
/// strings, and NDJSON and SSE break lines only at `\n` and `\r`, but readers that split at every
/// Unicode line break (Python's `str.splitlines`, many log viewers) would cut an event there. The
/// escaped text is the same JSON value; `serde_json` already escapes the other control characters.
/// In JSON text these characters can only stand inside strings (they are not JSON whitespace), so
/// replacing each one anywhere in the text keeps it valid.
fn escape_line_separators(json: String) -> String {
    const SEPARATORS: [char; 3] = ['\u{85}', '\u{2028}', '\u{2029}'];
    if json.is_ascii() || !json.contains(SEPARATORS) {
        return json;
    }
    let mut escaped = String::with_capacity(json.len() + 8);
    for c in json.chars() {
        match c {
            '\u{85}' => escaped.push_str("\\u0085"),
            '\u{2028}' => escaped.push_str("\\u2028"),
            '\u{2029}' => escaped.push_str("\\u2029"),
            c => escaped.push(c),
        }
    }
    escaped
}

impl fmt::Display for ToolEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_json())
    }
}

impl Serialize for ToolEvent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let fields = match self {
            ToolEvent::Started { .. } => 2,
            ToolEvent::InterruptResolved { .. } => 4,
            _ => 3,
        };
        let mut s = serializer.serialize_struct("ToolEvent", fields)?;
        s.serialize_field("type", self.event_type())?;
        match self {
            ToolEvent::Started { tool_call } => {
                s.serialize_field("toolCall", &WireCall(tool_call))?;
            }
            ToolEvent::Delta {
                tool_call_id,
                delta,
            } => {
                s.serialize_field("toolCallId", &**tool_call_id)?;
                s.serialize_field("delta", delta)?;
            }
            ToolEvent::Completed { tool_call, result } => {
                s.serialize_field("toolCall", &WireCall(tool_call))?;
                s.serialize_field("result", result)?;
            }
            ToolEvent::Failed { tool_call, error } => {
                s.serialize_field("toolCall", &WireCall(tool_call))?;
                s.serialize_field("error", error)?;
            }
            ToolEvent::InterruptRequested { interrupt } => {
                s.serialize_field("toolCallId", interrupt.tool_call.id())?;
                s.serialize_field("interrupt", &WireInterrupt(interrupt))?;
            }
            ToolEvent::InterruptResolved {
                tool_call_id,
                interrupt_id,
                action,
            } => {
                s.serialize_field("toolCallId", &**tool_call_id)?;
                s.serialize_field("interruptId", interrupt_id)?;
                s.serialize_field("action", action)?;
            }
            ToolEvent::SafetyProbe {
                tool_call,
                findings,
            } => {
                s.serialize_field("toolCall", &WireCall(tool_call))?;
                s.serialize_field("findings", findings)?;
            }
        }
        s.end()
    }
}

/// An interrupt in an event: its `toolCall` in the events' `{ id, name, args }` form (a sealed
/// interrupt keeps `Interrupt`'s own serde form).
struct WireInterrupt<'a>(&'a crate::safety::Interrupt);

impl Serialize for WireInterrupt<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let interrupt = self.0;
        let mut s = serializer.serialize_struct("Interrupt", 6)?;
        s.serialize_field("id", &interrupt.id)?;
        s.serialize_field("toolCall", &WireCall(&interrupt.tool_call))?;
        s.serialize_field("fingerprint", &interrupt.fingerprint)?;
        s.serialize_field("tier", &interrupt.tier)?;
        s.serialize_field("findings", &interrupt.findings)?;
        s.serialize_field("groundTruth", &interrupt.ground_truth)?;
        s.end()
    }
}

/// `{ id, name, args }`: the arguments as raw JSON when they are JSON, else as the string the
/// model sent (so an event about bad JSON is itself valid JSON, and shows what came). Arguments
/// nested deeper than [`READABLE_DEPTH`] are written as the string too: in place, they would make
/// the event line deeper than common JSON readers take (`serde_json` stops at 128 levels), and
/// one unreadable line can stop a reader of the whole stream. So are arguments that only follow
/// JSON's grammar (see [`Readable`]).
struct WireCall<'a>(&'a ToolCall);

/// The deepest arguments an event writes as JSON: the event and its `toolCall` add two levels,
/// and the line stays well inside `serde_json`'s 128.
const READABLE_DEPTH: usize = 100;

impl Serialize for WireCall<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("ToolCall", 3)?;
        s.serialize_field("id", &self.0.id())?;
        s.serialize_field("name", &self.0.name())?;
        let arguments = self.0.arguments();
        if crate::schema::nesting_depth(arguments) > READABLE_DEPTH {
            s.serialize_field("args", arguments)?;
            return s.end();
        }
        let raw = serde_json::from_str::<&RawValue>(arguments)
            .ok()
            .filter(|_| serde_json::from_str::<Readable>(arguments).is_ok());
        match raw {
            // Line breaks in JSON text are whitespace between tokens (a string cannot hold one
            // raw), and a model's pretty-printed arguments would split an NDJSON line or an SSE
            // `data:` field: written as spaces, the text means the same on one line.
            Some(_) if arguments.contains(['\n', '\r']) => {
                match RawValue::from_string(arguments.replace(['\n', '\r'], " ")) {
                    Ok(raw) => s.serialize_field("args", &raw)?,
                    Err(_) => s.serialize_field("args", arguments)?,
                }
            }
            Some(raw) => s.serialize_field("args", raw)?,
            None => s.serialize_field("args", arguments)?,
        }
        s.end()
    }
}

/// JSON text read through and kept nowhere: whether `serde_json` can read it as a value. A
/// `RawValue` takes text that follows JSON's grammar, but that is not enough for a reader: a lone
/// surrogate (`"\ud800"`) or a number past `f64` (`1e400`) passes the grammar, and `serde_json`
/// refuses the whole line that holds it. The session refuses such arguments too (1005), so their
/// events carry them as the text that came.
struct Readable;

impl<'de> Deserialize<'de> for Readable {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Readable)
    }
}

impl<'de> Visitor<'de> for Readable {
    type Value = Readable;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Readable, E> {
        Ok(Readable)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Readable, E> {
        Ok(Readable)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Readable, E> {
        Ok(Readable)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Readable, E> {
        Ok(Readable)
    }

    fn visit_str<E>(self, _: &str) -> Result<Readable, E> {
        Ok(Readable)
    }

    fn visit_unit<E>(self) -> Result<Readable, E> {
        Ok(Readable)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Readable, A::Error> {
        while items.next_element::<Readable>()?.is_some() {}
        Ok(Readable)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<Readable, A::Error> {
        while entries.next_entry::<Readable, Readable>()?.is_some() {}
        Ok(Readable)
    }
}

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
/// ```rust,standalone_crate
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use pleach_core::{tool, Runtime, SessionOptions, ToolCall};
///
/// /// Adds two integers.
/// #[tool]
/// async fn add(a: i64, b: i64) -> i64 { a + b }
///
/// let runtime = Runtime::builder().build().unwrap();
/// let session = runtime.create_session(SessionOptions::enabled(["add"])).unwrap();
/// let mut turn = session.run_turn(vec![ToolCall::new("c1", "add", r#"{"a":1,"b":2}"#)]);
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
    use crate::error::ErrorCode;
    use serde_json::json;

    fn call(arguments: &str) -> ToolCall {
        ToolCall::new("call_1", "search_corpus", arguments)
    }

    #[test]
    fn pretty_printed_arguments_stay_on_one_ndjson_line_and_one_sse_field() {
        let pretty = "{\n  \"query\": \"rust\",\r\n  \"tags\": [\n    \"a b\"\n  ]\n}";
        for event in [
            ToolEvent::Started {
                tool_call: call(pretty),
            },
            ToolEvent::Completed {
                tool_call: call(pretty),
                result: json!("line one\nline two"),
            },
        ] {
            let line = event.to_ndjson();
            assert_eq!(line.matches('\n').count(), 1, "{line:?}");
            assert!(line.ends_with('\n'));
            let value: Value = serde_json::from_str(&line).unwrap();
            assert_eq!(
                value["toolCall"]["args"],
                json!({ "query": "rust", "tags": ["a b"] })
            );
            let sse = event.to_sse();
            let data: Vec<&str> = sse.lines().filter(|l| l.starts_with("data:")).collect();
            assert_eq!(data.len(), 1, "{sse:?}");
            assert!(!sse.contains('\r'), "{sse:?}");
        }
        // Text that is not JSON is sent as the string it was, escapes and all.
        let bad = ToolEvent::Started {
            tool_call: call("{\n oops"),
        };
        assert_eq!(bad.to_ndjson().matches('\n').count(), 1);
    }

    #[test]
    fn unicode_line_breaks_are_escaped_so_every_line_reader_keeps_an_event_whole() {
        // As in the result, the id and the arguments' strings; not JSON whitespace, so arguments
        // holding one between tokens are no JSON and go as text.
        let arguments = "{\"note\":\"a\u{2028}b\u{2029}c\u{85}d \u{e9}\"}";
        for event in [
            ToolEvent::Completed {
                tool_call: ToolCall::new("c\u{2028}1", "t", arguments),
                result: json!({ "text": "one\u{2029}two\u{85}three \u{1f600}" }),
            },
            ToolEvent::Started {
                tool_call: ToolCall::new("c1", "t", "{\"a\":\u{2028}1}"),
            },
        ] {
            let line = event.to_ndjson();
            // What Python's `str.splitlines` and other Unicode-aware readers split at.
            let breaks = ['\n', '\r', '\u{b}', '\u{c}', '\u{1c}', '\u{1d}', '\u{1e}'];
            let pieces: Vec<&str> = line
                .split(|c| breaks.contains(&c) || ['\u{85}', '\u{2028}', '\u{2029}'].contains(&c))
                .collect();
            assert_eq!(pieces, [line.trim_end_matches('\n'), ""], "{line:?}");
            // The same JSON value: the escapes read back as the characters.
            let value: Value = serde_json::from_str(&line).unwrap();
            let sse = event.to_sse();
            assert_eq!(sse.lines().count(), 3, "{sse:?}");
            if let ToolEvent::Completed { .. } = event {
                assert_eq!(value["toolCall"]["id"], "c\u{2028}1");
                assert_eq!(
                    value["toolCall"]["args"]["note"],
                    "a\u{2028}b\u{2029}c\u{85}d \u{e9}"
                );
                assert_eq!(
                    value["result"]["text"],
                    "one\u{2029}two\u{85}three \u{1f600}"
                );
                // Other non-ASCII text stays UTF-8.
                assert!(
                    line.contains("\u{e9}") && line.contains("\u{1f600}"),
                    "{line:?}"
                );
            } else {
                assert_eq!(value["toolCall"]["args"], "{\"a\":\u{2028}1}");
            }
        }
    }

    #[test]
    fn shapes_match_the_spec() {
        let completed = ToolEvent::Completed {
            tool_call: call(r#"{ "query" : "rust" }"#),
            result: json!({ "results": [] }),
        };
        let value: Value = serde_json::from_str(&completed.to_json()).unwrap();
        assert_eq!(
            value,
            json!({
                "type": "tool.completed",
                "toolCall": { "id": "call_1", "name": "search_corpus", "args": { "query": "rust" } },
                "result": { "results": [] }
            })
        );
        let failed = ToolEvent::Failed {
            tool_call: call("{}"),
            error: ToolError::new(ErrorCode::UnknownTool, "no tool named `x`"),
        };
        let value: Value = serde_json::from_str(&failed.to_json()).unwrap();
        assert_eq!(value["error"]["code"], 1003);
        assert_eq!(value["error"]["_recoverable"], true);
    }

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

    #[test]
    fn arguments_that_are_not_json_stay_a_string() {
        let started = ToolEvent::Started {
            tool_call: call(r#"{"query": "ru"#),
        };
        let value: Value = serde_json::from_str(&started.to_json()).unwrap();
        assert_eq!(value["toolCall"]["args"], json!(r#"{"query": "ru"#));
    }

    #[test]
    fn arguments_json_readers_refuse_are_written_as_text() {
        // Each passes JSON's grammar (a `RawValue` takes it) and `serde_json` refuses it as a
        // value: in place, it would make the whole event line unreadable.
        for arguments in [
            r#"{"x":"\ud800"}"#,
            r#"{"x":"\udc00\ud800"}"#,
            r#"{"\ud800":1}"#,
            r#"{"x":1e400}"#,
            r#"{"x":[-1e400]}"#,
        ] {
            let line = ToolEvent::Started {
                tool_call: call(arguments),
            }
            .to_json();
            let value: Value = serde_json::from_str(&line).unwrap();
            assert_eq!(value["toolCall"]["args"], json!(arguments), "{line}");
        }
        // What a reader takes stays a value: paired surrogates, escapes, big and small numbers.
        let readable = r#"{"x":"\ud83d\ude00\u0000","n":[1e308,-1e-400,18446744073709551616,-0]}"#;
        let line = ToolEvent::Started {
            tool_call: call(readable),
        }
        .to_json();
        let value: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(value["toolCall"]["args"]["x"], json!("\u{1f600}\u{0}"));
    }

    #[test]
    fn arguments_too_deep_for_readers_are_written_as_text() {
        let at = |depth: usize| format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
        for (depth, as_text) in [
            (READABLE_DEPTH, false),
            (READABLE_DEPTH + 1, true),
            (500, true),
        ] {
            let call = ToolCall::new("c1", "t", at(depth));
            let line = ToolEvent::Started { tool_call: call }.to_json();
            // Every event line reads back with serde_json's default limits.
            let value: Value = serde_json::from_str(&line).unwrap();
            assert_eq!(
                value["toolCall"]["args"].is_string(),
                as_text,
                "depth {depth}"
            );
            if as_text {
                assert_eq!(value["toolCall"]["args"], json!(at(depth)));
            }
        }
    }
}
