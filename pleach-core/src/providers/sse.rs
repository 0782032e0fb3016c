//! Framing a byte stream into events: Server-Sent Events ([`SseFramer`]) and JSON lines
//! ([`JsonLines`], one JSON event per line, the form the SDKs' recorded fixtures use).
//!
//! Both are incremental: feed chunks split anywhere (inside a line, inside a `\r\n`, inside a
//! multi-byte UTF-8 character) and the events come out the same as from the whole stream. A line
//! is decoded only once it is complete, so a character split across chunks is whole again by then;
//! a line that is not UTF-8 is an error on the event it belongs to, and the stream goes on.
//!
//! ```
//! use pleach_core::providers::sse::SseFramer;
//!
//! let mut framer = SseFramer::new();
//! let mut events = framer.feed(b"event: ping\ndata: {\"a\":");
//! assert!(events.is_empty()); // the event is not over yet
//! events = framer.feed(b"1}\n\n: a comment\ndata: [DONE]\n\n");
//! let first = events[0].as_ref().unwrap();
//! assert_eq!(first.event.as_deref(), Some("ping"));
//! assert_eq!(first.data, r#"{"a":1}"#);
//! assert!(events[1].as_ref().unwrap().is_done());
//! ```

use std::mem;

use crate::defaults::MAX_EVENT_BYTES;

/// One Server-Sent Event: its `event:` name, if any, and its `data:` lines joined with `\n`.
///
/// ```
/// use pleach_core::providers::sse::SseEvent;
///
/// let event = SseEvent { event: None, data: "[DONE]".into() };
/// assert!(event.is_done());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field (`content_block_delta`, `response.completed`, …), if the event had one.
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

impl SseEvent {
    /// Whether this is OpenAI's end-of-stream sentinel, `data: [DONE]`.
    ///
    /// ```
    /// # use pleach_core::providers::sse::SseEvent;
    /// assert!(!SseEvent { event: None, data: "{}".into() }.is_done());
    /// ```
    pub fn is_done(&self) -> bool {
        self.data.trim() == "[DONE]"
    }
}

/// U+FEFF in UTF-8: skipped at the start of an event stream.
const BYTE_ORDER_MARK: &[u8] = "\u{feff}".as_bytes();

/// Why an event (or a line) could not be read. The events before and after it are unaffected.
///
/// ```
/// use pleach_core::providers::sse::{FrameError, SseFramer};
///
/// let mut framer = SseFramer::new();
/// let events = framer.feed(b"data: \xff\xfe\n\ndata: ok\n\n");
/// assert!(matches!(events[0], Err(FrameError::InvalidUtf8 { .. })));
/// assert_eq!(events[1].as_ref().unwrap().data, "ok");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// A line is not valid UTF-8.
    #[error(
        "a line of the stream is not valid UTF-8 (the first {valid_up_to} bytes are); the event was dropped"
    )]
    InvalidUtf8 {
        /// How many bytes of the line are valid UTF-8.
        valid_up_to: usize,
    },
    /// A line or an event is longer than the limit.
    #[error("an event of the stream is longer than {limit} bytes; it was dropped")]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
}

/// Splits bytes into lines, whatever the chunking: `\n`, `\r\n` and `\r` all end a line, and a
/// `\r\n` split across two chunks ends one line, not two.
#[derive(Debug)]
struct LineSplitter {
    partial: Vec<u8>,
    /// The previous chunk ended with `\r`: a `\n` starting the next one belongs to that break.
    skip_lf: bool,
    /// The current line went over the limit: drop bytes until its end.
    overflowed: bool,
    max: usize,
}

/// What the splitter hands on for each finished line.
#[derive(Clone, Copy)]
enum Line<'a> {
    Text(&'a [u8]),
    Overflowed,
}

impl LineSplitter {
    fn new(max: usize) -> Self {
        LineSplitter {
            partial: Vec::new(),
            skip_lf: false,
            overflowed: false,
            max,
        }
    }

    fn feed(&mut self, mut bytes: &[u8], mut on_line: impl FnMut(Line<'_>)) {
        // An empty chunk says nothing about what follows the `\r`: keep waiting for the `\n`.
        if self.skip_lf && !bytes.is_empty() {
            self.skip_lf = false;
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
        }
        while let Some(end) = bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
            let (line, rest) = bytes.split_at(end);
            let is_cr = rest.first() == Some(&b'\r');
            bytes = &rest[1..];
            if is_cr {
                match bytes.first() {
                    Some(b'\n') => bytes = &bytes[1..],
                    None => self.skip_lf = true,
                    Some(_) => {}
                }
            }
            self.finish_line(line, &mut on_line);
        }
        self.buffer(bytes);
    }

    /// Ends the stream: a last line without a line break is handed on.
    fn flush(&mut self, mut on_line: impl FnMut(Line<'_>)) {
        self.skip_lf = false;
        if !self.partial.is_empty() || self.overflowed {
            self.finish_line(&[], &mut on_line);
        }
    }

    fn buffer(&mut self, bytes: &[u8]) {
        if self.overflowed {
            return;
        }
        if self.partial.len() + bytes.len() > self.max {
            self.partial = Vec::new();
            self.overflowed = true;
        } else {
            self.partial.extend_from_slice(bytes);
        }
    }

    fn finish_line(&mut self, tail: &[u8], on_line: &mut impl FnMut(Line<'_>)) {
        if self.overflowed || self.partial.len() + tail.len() > self.max {
            self.overflowed = false;
            self.partial.clear();
            on_line(Line::Overflowed);
        } else if self.partial.is_empty() {
            on_line(Line::Text(tail));
        } else {
            self.partial.extend_from_slice(tail);
            let line = mem::take(&mut self.partial);
            on_line(Line::Text(&line));
            // Keep the allocation for the next partial line.
            self.partial = line;
            self.partial.clear();
        }
    }
}

fn decode(line: &[u8]) -> Result<&str, FrameError> {
    std::str::from_utf8(line).map_err(|e| FrameError::InvalidUtf8 {
        valid_up_to: e.valid_up_to(),
    })
}

/// An incremental Server-Sent Events parser (the WHATWG `text/event-stream` rules): `data:` lines
/// accumulate until a blank line dispatches the event; `event:` names it; lines starting with `:`
/// are comments; `id:` and `retry:` are read and ignored; a leading byte-order mark is skipped.
///
/// An event without any `data:` line is not dispatched, as the standard says. At the end of the
/// stream ([`finish`](Self::finish)) an event not closed by a blank line is dropped (the standard's
/// rule, and the right one: a connection that dropped mid-event has not delivered it).
///
/// ```
/// use pleach_core::providers::sse::SseFramer;
///
/// let mut framer = SseFramer::new();
/// let events = framer.feed(b"data: line one\r\ndata: line two\r\n\r\n");
/// assert_eq!(events[0].as_ref().unwrap().data, "line one\nline two");
/// ```
#[derive(Debug)]
pub struct SseFramer {
    lines: LineSplitter,
    max: usize,
    /// How many bytes of a leading byte-order mark have come, while the stream may still start
    /// with one (`None` once it cannot).
    bom_seen: Option<usize>,
    event: Option<String>,
    data: String,
    has_data: bool,
    poisoned: Option<FrameError>,
}

impl Default for SseFramer {
    fn default() -> Self {
        SseFramer::new()
    }
}

impl SseFramer {
    /// A framer with the default size limit ([`MAX_EVENT_BYTES`], 8 MiB). A stream that sends more
    /// without a line break is refused rather than buffered without end.
    ///
    /// ```
    /// let framer = pleach_core::providers::sse::SseFramer::new();
    /// # drop(framer);
    /// ```
    pub fn new() -> Self {
        SseFramer::with_max_event_bytes(MAX_EVENT_BYTES)
    }

    /// A framer that refuses lines and events longer than `max` bytes.
    ///
    /// ```
    /// use pleach_core::providers::sse::{FrameError, SseFramer};
    ///
    /// let mut framer = SseFramer::with_max_event_bytes(16);
    /// let events = framer.feed(b"data: 0123456789abcdef0123\n\ndata: ok\n\n");
    /// assert_eq!(events[0], Err(FrameError::TooLarge { limit: 16 }));
    /// assert_eq!(events[1].as_ref().unwrap().data, "ok");
    /// ```
    pub fn with_max_event_bytes(max: usize) -> Self {
        SseFramer {
            lines: LineSplitter::new(max),
            max,
            bom_seen: Some(0),
            event: None,
            data: String::new(),
            has_data: false,
            poisoned: None,
        }
    }

    /// Feeds the next chunk; returns the events it completed, in order.
    ///
    /// ```
    /// use pleach_core::providers::sse::SseFramer;
    ///
    /// let mut framer = SseFramer::new();
    /// // "é" is two bytes; split between them, it is still one character.
    /// assert!(framer.feed(b"data: caf\xc3").is_empty());
    /// let events = framer.feed(b"\xa9\n\n");
    /// assert_eq!(events[0].as_ref().unwrap().data, "café");
    /// ```
    pub fn feed(&mut self, mut bytes: &[u8]) -> Vec<Result<SseEvent, FrameError>> {
        let mut out = Vec::new();
        let mut held: &[u8] = &[];
        if let Some(seen) = self.bom_seen {
            // The byte-order mark may itself arrive split: its first bytes are held back until
            // it is whole (and skipped) or the stream shows it has none (and they are its own).
            let take = (BYTE_ORDER_MARK.len() - seen).min(bytes.len());
            if bytes[..take] == BYTE_ORDER_MARK[seen..seen + take] {
                bytes = &bytes[take..];
                if seen + take < BYTE_ORDER_MARK.len() {
                    self.bom_seen = Some(seen + take);
                    return out;
                }
            } else {
                held = &BYTE_ORDER_MARK[..seen];
            }
            self.bom_seen = None;
        }
        let mut lines = mem::replace(&mut self.lines, LineSplitter::new(0));
        for bytes in [held, bytes] {
            lines.feed(bytes, |line| self.line(line, &mut out));
        }
        self.lines = lines;
        out
    }

    /// Ends the stream. Returns whether an unfinished event (no closing blank line) was dropped.
    ///
    /// ```
    /// use pleach_core::providers::sse::SseFramer;
    ///
    /// let mut framer = SseFramer::new();
    /// assert!(framer.feed(b"data: {\"cut\":").is_empty());
    /// assert!(framer.finish());
    /// ```
    pub fn finish(&mut self) -> bool {
        let mut out = Vec::new();
        let mut lines = mem::replace(&mut self.lines, LineSplitter::new(0));
        lines.flush(|line| self.line(line, &mut out));
        self.lines = lines;
        let dropped = self.has_data || self.poisoned.is_some() || self.event.is_some();
        self.reset();
        dropped
    }

    fn reset(&mut self) {
        self.event = None;
        self.data.clear();
        self.has_data = false;
        self.poisoned = None;
    }

    fn line(&mut self, line: Line<'_>, out: &mut Vec<Result<SseEvent, FrameError>>) {
        let text = match line {
            Line::Overflowed => {
                self.poison(FrameError::TooLarge { limit: self.max });
                return;
            }
            Line::Text(bytes) => match decode(bytes) {
                Ok(text) => text,
                Err(error) => {
                    self.poison(error);
                    return;
                }
            },
        };
        if text.is_empty() {
            self.dispatch(out);
            return;
        }
        if text.starts_with(':') {
            return;
        }
        let (field, value) = match text.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (text, ""),
        };
        match field {
            "data" => {
                if self.data.len() + value.len() > self.max {
                    self.data.clear();
                    self.poison(FrameError::TooLarge { limit: self.max });
                } else if self.poisoned.is_none() {
                    self.data.push_str(value);
                    self.data.push('\n');
                }
                self.has_data = true;
            }
            "event" => self.event = Some(value.to_owned()),
            _ => {}
        }
    }

    fn poison(&mut self, error: FrameError) {
        if self.poisoned.is_none() {
            self.poisoned = Some(error);
        }
    }

    fn dispatch(&mut self, out: &mut Vec<Result<SseEvent, FrameError>>) {
        if let Some(error) = self.poisoned.take() {
            out.push(Err(error));
        } else if self.has_data {
            let mut data = mem::take(&mut self.data);
            if data.ends_with('\n') {
                data.pop();
            }
            out.push(Ok(SseEvent {
                event: self.event.take(),
                data,
            }));
        }
        self.reset();
    }
}

/// An incremental reader of JSON lines: one event per line, blank lines skipped, `\r\n` accepted.
/// At the end of the stream a last line without a line break is still an event (files end so).
///
/// ```
/// use pleach_core::providers::sse::JsonLines;
///
/// let mut lines = JsonLines::new();
/// let mut events = lines.feed(b"{\"a\":1}\n\n{\"b\"");
/// events.extend(lines.feed(b":2}"));
/// events.extend(lines.finish());
/// let events: Vec<String> = events.into_iter().map(Result::unwrap).collect();
/// assert_eq!(events, [r#"{"a":1}"#, r#"{"b":2}"#]);
/// ```
#[derive(Debug)]
pub struct JsonLines {
    lines: LineSplitter,
}

impl Default for JsonLines {
    fn default() -> Self {
        JsonLines::new()
    }
}

impl JsonLines {
    /// A reader with the default size limit ([`MAX_EVENT_BYTES`], 8 MiB). A stream that sends
    /// more without a line break is refused rather than buffered without end.
    ///
    /// ```
    /// let lines = pleach_core::providers::sse::JsonLines::new();
    /// # drop(lines);
    /// ```
    pub fn new() -> Self {
        JsonLines::with_max_event_bytes(MAX_EVENT_BYTES)
    }

    /// A reader that refuses lines longer than `max` bytes.
    ///
    /// ```
    /// use pleach_core::providers::sse::{FrameError, JsonLines};
    /// let mut lines = JsonLines::with_max_event_bytes(4);
    /// assert_eq!(lines.feed(b"{\"long\":1}\n"), [Err(FrameError::TooLarge { limit: 4 })]);
    /// ```
    pub fn with_max_event_bytes(max: usize) -> Self {
        JsonLines {
            lines: LineSplitter::new(max),
        }
    }

    /// Feeds the next chunk; returns the lines it completed.
    ///
    /// ```
    /// let mut lines = pleach_core::providers::sse::JsonLines::new();
    /// assert!(lines.feed(b"{\"partial\"").is_empty());
    /// ```
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Result<String, FrameError>> {
        let mut out = Vec::new();
        let limit = self.lines.max;
        self.lines
            .feed(bytes, |line| push_json_line(line, limit, &mut out));
        out
    }

    /// Ends the stream; returns the last line if it had no line break and is complete JSON (a
    /// file's last line). A last line that is not complete JSON was cut off with the connection:
    /// it is dropped, as an unfinished Server-Sent Event is.
    ///
    /// ```
    /// let mut lines = pleach_core::providers::sse::JsonLines::new();
    /// lines.feed(b"{}");
    /// assert_eq!(lines.finish(), [Ok("{}".to_owned())]);
    /// lines.feed(b"{\"cut\":");
    /// assert!(lines.finish().is_empty());
    /// ```
    pub fn finish(&mut self) -> Vec<Result<String, FrameError>> {
        let mut out = Vec::new();
        let limit = self.lines.max;
        self.lines
            .flush(|line| push_json_line(line, limit, &mut out));
        out.retain(|line| match line {
            Ok(text) => serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok(),
            Err(_) => false,
        });
        out
    }
}

fn push_json_line(line: Line<'_>, limit: usize, out: &mut Vec<Result<String, FrameError>>) {
    match line {
        Line::Overflowed => out.push(Err(FrameError::TooLarge { limit })),
        Line::Text(bytes) => match decode(bytes) {
            Ok(text) if text.trim().is_empty() => {}
            Ok(text) => out.push(Ok(text.to_owned())),
            Err(error) => out.push(Err(error)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(framer: &mut SseFramer, chunks: &[&[u8]]) -> Vec<Result<SseEvent, FrameError>> {
        chunks.iter().flat_map(|chunk| framer.feed(chunk)).collect()
    }

    #[test]
    fn crlf_split_between_chunks_is_one_line_break() {
        let mut framer = SseFramer::new();
        let events = collect(&mut framer, &[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"]);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].as_ref().unwrap().data, "a\nb");
    }

    #[test]
    fn an_empty_chunk_between_cr_and_lf_is_still_one_line_break() {
        let mut framer = SseFramer::new();
        let events = collect(&mut framer, &[b"data: {\r", b"", b"\ndata: }\r\n\r\n"]);
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0].as_ref().unwrap().data, "{\n}");
    }

    #[test]
    fn byte_order_mark_split_across_chunks_is_skipped() {
        let mut framer = SseFramer::new();
        let events = collect(&mut framer, &[b"\xef", b"", b"\xbb", b"\xbfdata: x\n\n"]);
        assert_eq!(events[0].as_ref().unwrap().data, "x");
        // Bytes that only begin like one are the stream's own.
        let mut framer = SseFramer::new();
        let events = collect(&mut framer, &[b"\xef", b"\xbbdata: x\n\ndata: y\n\n"]);
        assert!(
            matches!(events[0], Err(FrameError::InvalidUtf8 { .. })),
            "{events:?}"
        );
        assert_eq!(events[1].as_ref().unwrap().data, "y");
    }

    #[test]
    fn lone_cr_ends_a_line() {
        let mut framer = SseFramer::new();
        let events = framer.feed(b"data: a\r\rdata: b\r\r");
        let data: Vec<_> = events.into_iter().map(|e| e.unwrap().data).collect();
        assert_eq!(data, ["a", "b"]);
    }

    #[test]
    fn event_without_data_is_not_dispatched() {
        let mut framer = SseFramer::new();
        assert!(framer.feed(b"event: ping\n\n").is_empty());
        let events = framer.feed(b"data: x\n\n");
        assert_eq!(events[0].as_ref().unwrap().event, None);
    }

    #[test]
    fn field_without_colon_and_without_space() {
        let mut framer = SseFramer::new();
        let events = framer.feed(b"data\ndata:x\n\n");
        assert_eq!(events[0].as_ref().unwrap().data, "\nx");
    }

    #[test]
    fn byte_order_mark_is_skipped() {
        let mut framer = SseFramer::new();
        let events = framer.feed("\u{feff}data: x\n\n".as_bytes());
        assert_eq!(events[0].as_ref().unwrap().data, "x");
    }

    #[test]
    fn overflow_poisons_only_its_event() {
        let mut framer = SseFramer::with_max_event_bytes(8);
        let events = collect(
            &mut framer,
            &[b"data: 0123", b"456789", b"abc\n\ndata: ok\n\n"],
        );
        assert_eq!(events[0], Err(FrameError::TooLarge { limit: 8 }));
        assert_eq!(events[1].as_ref().unwrap().data, "ok");
    }

    #[test]
    fn data_over_the_limit_across_lines_is_refused() {
        let mut framer = SseFramer::with_max_event_bytes(8);
        let events = framer.feed(b"data: 12345\ndata: 12345\n\n");
        assert_eq!(events, [Err(FrameError::TooLarge { limit: 8 })]);
    }

    #[test]
    fn json_lines_overflow_names_the_limit() {
        let mut lines = JsonLines::with_max_event_bytes(3);
        assert_eq!(
            lines.feed(b"{\"a\":1}\n{}\n"),
            [Err(FrameError::TooLarge { limit: 3 }), Ok("{}".to_owned())]
        );
    }
}
