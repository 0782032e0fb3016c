//! [`IncrementalJson`]: a strict JSON parser that takes its input in pieces and keeps its state
//! between them, so the cost of a document is linear in its bytes however it is split.
//!
//! This file holds the parser and what it offers; its state machine is `machine.rs`, its error
//! `error.rs`, and the UTF-8 carried between pieces `utf8.rs`.

mod error;
mod machine;
#[cfg(test)]
mod tests;
mod utf8;

pub use error::IncrementalJsonError;

use std::borrow::Cow;

use serde_json::Value;

use self::machine::{Frame, State};
use self::utf8::Utf8Carry;

/// The deepest nesting of arrays and objects `serde_json` accepts (its recursion limit of 128
/// refuses the 128th level), and so the default of [`IncrementalJson::new`].
const SERDE_JSON_MAX_DEPTH: usize = 127;

/// A strict JSON parser fed in pieces: bytes split anywhere (inside a string, a number, an escape
/// or a multi-byte character) give the same value as one parse of the whole text, for a cost
/// linear in the bytes received.
///
/// Its verdicts are `serde_json`'s (RFC 8259: no comments, no trailing commas, no byte order
/// mark, no lone surrogates in `\u` escapes, no control characters in strings, nothing but
/// whitespace after the value), with one addition: an object that repeats a key is refused, as
/// pleach refuses it everywhere. Numbers get exactly the value `serde_json` gives them.
///
/// Between pieces it can show the value so far ([`partial_value`](Self::partial_value)) and say
/// which top-level fields have completed ([`take_completed_fields`](Self::take_completed_fields)).
/// A complete value is not the end of the input: only [`finish`](Self::finish) says that.
///
/// ```
/// use pleach_core::assemble::IncrementalJson;
/// use serde_json::json;
///
/// let mut parser = IncrementalJson::new();
/// parser.feed(r#"{"path":"notes/to"#).unwrap();
/// assert_eq!(parser.partial_value(), Some(&json!({ "path": "notes/to" })));
/// parser.feed(r#"do.md","lines":["a","#).unwrap();
/// assert_eq!(parser.take_completed_fields(), ["/path"]);
/// assert_eq!(parser.partial_value(), Some(&json!({ "path": "notes/todo.md", "lines": ["a"] })));
/// parser.feed("\"b\"]}").unwrap();
/// assert_eq!(parser.take_completed_fields(), ["/lines"]);
/// assert_eq!(parser.finish().unwrap(), json!({ "path": "notes/todo.md", "lines": ["a", "b"] }));
/// ```
#[derive(Debug, Clone)]
pub struct IncrementalJson {
    max_depth: usize,
    /// The open arrays and objects, outermost first, each holding its completed children.
    stack: Vec<Frame>,
    state: State,
    /// The text of the string being read (a key or a value).
    string: String,
    /// The text of the number being read.
    number: String,
    /// Where the number being read starts, for its error.
    number_at: usize,
    /// The complete top-level value, or, while `folded`, the partial value.
    root: Option<Value>,
    /// Whether `root` holds the open containers (moved there by [`Self::partial_value`]).
    folded: bool,
    /// Whether the folded tree also holds the open string (as its innermost value).
    folded_string: bool,
    utf8: Utf8Carry,
    /// Bytes taken so far, whole characters only.
    offset: usize,
    completed: Vec<String>,
    /// The first error: every later call returns it again.
    error: Option<IncrementalJsonError>,
}

impl Default for IncrementalJson {
    fn default() -> Self {
        IncrementalJson::new()
    }
}

impl IncrementalJson {
    /// A parser for one JSON value, nesting at most 127 levels deep (what `serde_json` accepts).
    ///
    /// ```
    /// let mut parser = pleach_core::assemble::IncrementalJson::new();
    /// parser.feed("[1, 2").unwrap();
    /// parser.feed(", 3]").unwrap();
    /// assert_eq!(parser.finish().unwrap(), serde_json::json!([1, 2, 3]));
    /// ```
    pub fn new() -> Self {
        IncrementalJson::with_max_depth(SERDE_JSON_MAX_DEPTH)
    }

    /// A parser that refuses arrays and objects nested deeper than `max_depth` (`{}` is 1 deep),
    /// as soon as the level past it opens.
    ///
    /// ```
    /// use pleach_core::assemble::{IncrementalJson, IncrementalJsonError};
    /// let mut parser = IncrementalJson::with_max_depth(2);
    /// parser.feed("[[").unwrap();
    /// assert_eq!(parser.feed("[").unwrap_err(), IncrementalJsonError::TooDeep { limit: 2 });
    /// ```
    pub fn with_max_depth(max_depth: usize) -> Self {
        IncrementalJson {
            max_depth,
            stack: Vec::new(),
            state: State::Value,
            string: String::new(),
            number: String::new(),
            number_at: 0,
            root: None,
            folded: false,
            folded_string: false,
            utf8: Utf8Carry::default(),
            offset: 0,
            completed: Vec::new(),
            error: None,
        }
    }

    /// Reads the next piece of the text. Pieces may split the text anywhere, even inside a UTF-8
    /// character. After an error, every later call returns the same error.
    ///
    /// ```
    /// let mut parser = pleach_core::assemble::IncrementalJson::new();
    /// let e_acute = "é".as_bytes();
    /// parser.feed(b"\"caf").unwrap();
    /// parser.feed(&e_acute[..1]).unwrap(); // half a character: kept for the next piece
    /// parser.feed(&e_acute[1..]).unwrap();
    /// parser.feed(b"\"").unwrap();
    /// assert_eq!(parser.finish().unwrap(), "café");
    /// ```
    pub fn feed(&mut self, piece: impl AsRef<[u8]>) -> Result<(), IncrementalJsonError> {
        self.feed_decoded(piece.as_ref()).map(drop)
    }

    /// [`feed`](Self::feed), returning the text of the piece that was read: its whole characters,
    /// with the part of a character the previous piece left open and without the part this one
    /// leaves open.
    pub(crate) fn feed_decoded<'a>(
        &mut self,
        piece: &'a [u8],
    ) -> Result<Cow<'a, str>, IncrementalJsonError> {
        if let Some(error) = &self.error {
            return Err(error.clone());
        }
        let text = match self.utf8.decode(piece) {
            Ok(text) => text,
            Err(valid) => {
                return Err(self.fail(IncrementalJsonError::InvalidUtf8 {
                    offset: self.offset + valid,
                }));
            }
        };
        self.unfold();
        if let Err(error) = self.read(&text) {
            return Err(self.fail(error));
        }
        self.offset += text.len();
        Ok(text)
    }

    /// The value so far, or `None` before it starts: open arrays and objects as they are, the
    /// string being read as far as it came, a member whose value has not started left out, and a
    /// number or `true`/`false`/`null` left out until it ends. Once the value is complete, the
    /// value.
    ///
    /// Cheap to call between pieces: the open containers move into one tree and back (no copy;
    /// work proportional to the nesting depth), so reading it every few pieces keeps the total
    /// cost linear.
    ///
    /// ```
    /// use serde_json::json;
    /// let mut parser = pleach_core::assemble::IncrementalJson::new();
    /// assert_eq!(parser.partial_value(), None);
    /// parser.feed(r#"{"items":[{"n":1},{"n":2"#).unwrap();
    /// assert_eq!(parser.partial_value(), Some(&json!({ "items": [{ "n": 1 }, {}] })));
    /// ```
    pub fn partial_value(&mut self) -> Option<&Value> {
        self.fold();
        self.root.as_ref()
    }

    /// The JSON pointers of the top-level value's members (object fields, or array items) that
    /// completed since the last call, in the order they completed.
    ///
    /// ```
    /// let mut parser = pleach_core::assemble::IncrementalJson::new();
    /// parser.feed(r#"{"a/b":1,"c":[2"#).unwrap();
    /// assert_eq!(parser.take_completed_fields(), ["/a~1b"]);
    /// parser.feed("]}").unwrap();
    /// assert_eq!(parser.take_completed_fields(), ["/c"]);
    /// ```
    pub fn take_completed_fields(&mut self) -> Vec<String> {
        std::mem::take(&mut self.completed)
    }

    /// Ends the input: the value, or why the text is not one whole JSON value.
    ///
    /// ```
    /// use pleach_core::assemble::{IncrementalJson, IncrementalJsonError};
    /// let mut parser = IncrementalJson::new();
    /// parser.feed(r#"{"a":"#).unwrap();
    /// assert_eq!(parser.finish().unwrap_err(), IncrementalJsonError::Incomplete { offset: 5 });
    /// ```
    pub fn finish(mut self) -> Result<Value, IncrementalJsonError> {
        if let Some(error) = self.error {
            return Err(error);
        }
        if !self.utf8.is_empty() {
            return Err(IncrementalJsonError::InvalidUtf8 {
                offset: self.offset,
            });
        }
        self.unfold();
        if self.state == State::Number && self.stack.is_empty() {
            self.end_number()?;
        }
        match (self.state, self.root) {
            (State::Done, Some(value)) => Ok(value),
            _ => Err(IncrementalJsonError::Incomplete {
                offset: self.offset,
            }),
        }
    }
}
