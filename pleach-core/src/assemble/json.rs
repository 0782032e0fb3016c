//! [`IncrementalJson`]: a strict JSON parser that takes its input in pieces and keeps its state
//! between them, so the cost of a document is linear in its bytes however it is split.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::error::{ErrorCode, ToolError};
use crate::schema;

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

/// An array or object still open, with its completed children.
#[derive(Debug, Clone)]
enum Frame {
    Array(Vec<Value>),
    Object {
        map: Map<String, Value>,
        /// The key of the member being read (empty before it has been read).
        key: String,
    },
}

/// What the parser expects next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// A value: at the start, or after `:` in an object.
    Value,
    /// After `[`: a value or `]`.
    FirstItem,
    /// After `,` in an array: a value.
    NextItem,
    /// After `{`: a key or `}`.
    FirstKey,
    /// After `,` in an object: a key.
    NextKey,
    /// After a key: `:`.
    Colon,
    /// After a value inside an array or object: `,` or the closing bracket.
    AfterValue,
    /// Inside a string: a key's or a value's.
    Str { key: bool, escape: Escape },
    /// Inside a number (its text so far in `number`).
    Number,
    /// Inside `true`, `false` or `null`, `seen` bytes of it read.
    Literal { word: Literal, seen: u8 },
    /// After the top-level value: whitespace only.
    Done,
}

/// Where a string is in an escape sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escape {
    /// Not in one.
    None,
    /// After `\`.
    Backslash,
    /// In the hex digits of `\u`: after a leading surrogate `high` when this is its pair.
    Hex {
        high: Option<u16>,
        digits: u8,
        code: u16,
    },
    /// After a leading surrogate: its pair's `\` must come.
    PairBackslash { high: u16 },
    /// After a leading surrogate and `\`: `u` must come.
    PairU { high: u16 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Literal {
    True,
    False,
    Null,
}

impl Literal {
    fn text(self) -> &'static [u8] {
        match self {
            Literal::True => b"true",
            Literal::False => b"false",
            Literal::Null => b"null",
        }
    }

    fn value(self) -> Value {
        match self {
            Literal::True => Value::Bool(true),
            Literal::False => Value::Bool(false),
            Literal::Null => Value::Null,
        }
    }
}

/// Why text fed to an [`IncrementalJson`] is not one JSON value.
///
/// ```
/// use pleach_core::assemble::{IncrementalJson, IncrementalJsonError};
///
/// let mut parser = IncrementalJson::new();
/// let err = parser.feed(r#"{"a":1,}"#).unwrap_err();
/// assert!(matches!(err, IncrementalJsonError::Syntax { offset: 7, .. }));
/// assert_eq!(err.to_string(), "trailing comma at byte 7");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IncrementalJsonError {
    /// The text breaks JSON's grammar at byte `offset` (counted from the start of the input).
    #[error("{reason} at byte {offset}")]
    Syntax {
        /// Where, in bytes from the start of the input.
        offset: usize,
        /// What was wrong there.
        reason: &'static str,
    },
    /// The bytes at `offset` are not UTF-8 (a sequence split across pieces is fine; one that is
    /// wrong, or cut off by the end of the input, is not).
    #[error("invalid UTF-8 at byte {offset}")]
    InvalidUtf8 {
        /// Where, in bytes from the start of the input.
        offset: usize,
    },
    /// The object at JSON pointer `pointer` repeats `key`.
    #[error("the object at `{pointer}` repeats the key `{key}`")]
    DuplicateKey {
        /// The object's JSON pointer (`""` for the top level).
        pointer: String,
        /// The repeated key.
        key: String,
    },
    /// Arrays and objects nest deeper than `limit`.
    #[error("arrays and objects nest deeper than {limit} levels")]
    TooDeep {
        /// The deepest nesting allowed.
        limit: usize,
    },
    /// The input ended after `offset` bytes, before the value did.
    #[error("the text ends after {offset} bytes, before the JSON value does")]
    Incomplete {
        /// How many bytes came.
        offset: usize,
    },
}

impl IncrementalJsonError {
    /// The tool error for arguments refused with this error: 1006 for nesting past the limit,
    /// 1005 for the rest (with the duplicate key's pointer, as a whole-text parse reports it).
    pub(crate) fn to_tool_error(&self) -> ToolError {
        match self {
            IncrementalJsonError::TooDeep { limit } => ToolError::new(
                ErrorCode::ArgumentsTooLarge,
                format!(
                    "the arguments nest more than {limit} levels deep, over the limit of {limit}; \
                     flatten them"
                ),
            ),
            IncrementalJsonError::DuplicateKey { pointer, key } => {
                schema::duplicate_key(pointer.clone(), key).into_tool_error()
            }
            _ => schema::not_json(self).into_tool_error(),
        }
    }
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

    /// Records the first error, so that later calls return it too.
    fn fail(&mut self, error: IncrementalJsonError) -> IncrementalJsonError {
        self.error = Some(error.clone());
        error
    }

    /// Reads whole characters of text; byte offsets in errors count from the input's start.
    fn read(&mut self, text: &str) -> Result<(), IncrementalJsonError> {
        let bytes = text.as_bytes();
        let mut i = 0;
        while let Some(&byte) = bytes.get(i) {
            let at = self.offset + i;
            match self.state {
                State::Str {
                    key,
                    escape: Escape::None,
                } => {
                    // Copy the run of plain characters at once: it ends at an ASCII byte (or the
                    // end), so both ends are character boundaries.
                    let run = bytes[i..]
                        .iter()
                        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
                        .unwrap_or(bytes.len() - i);
                    if run > 0 {
                        self.string
                            .push_str(text.get(i..i + run).unwrap_or_default());
                        i += run;
                        continue;
                    }
                    match byte {
                        b'"' => self.end_string(key, at)?,
                        b'\\' => {
                            self.state = State::Str {
                                key,
                                escape: Escape::Backslash,
                            };
                        }
                        _ => return Err(syntax(at, "control character in a string")),
                    }
                }
                State::Str { key, escape } => {
                    let escape = self.read_escape(escape, byte, at)?;
                    self.state = State::Str { key, escape };
                }
                State::Number => {
                    let run = bytes[i..]
                        .iter()
                        .position(|&b| !is_number_byte(b))
                        .unwrap_or(bytes.len() - i);
                    self.number
                        .push_str(text.get(i..i + run).unwrap_or_default());
                    i += run;
                    if i < bytes.len() {
                        self.end_number()?;
                    }
                    continue;
                }
                State::Literal { word, seen } => {
                    let spelling = word.text();
                    if spelling.get(usize::from(seen)) != Some(&byte) {
                        return Err(syntax(at, "expected `true`, `false` or `null`"));
                    }
                    let seen = seen + 1;
                    if usize::from(seen) == spelling.len() {
                        self.complete(word.value());
                    } else {
                        self.state = State::Literal { word, seen };
                    }
                }
                _ => self.read_structural(byte, at)?,
            }
            i += 1;
        }
        Ok(())
    }

    /// A byte outside strings, numbers and literals.
    fn read_structural(&mut self, byte: u8, at: usize) -> Result<(), IncrementalJsonError> {
        if matches!(byte, b' ' | b'\t' | b'\n' | b'\r') {
            return Ok(());
        }
        match (self.state, byte) {
            (State::FirstItem, b']') | (State::FirstKey, b'}') => self.close(),
            (State::AfterValue, b']') if matches!(self.stack.last(), Some(Frame::Array(_))) => {
                self.close();
            }
            (State::AfterValue, b'}')
                if matches!(self.stack.last(), Some(Frame::Object { .. })) =>
            {
                self.close();
            }
            (State::AfterValue, b',') => {
                self.state = match self.stack.last() {
                    Some(Frame::Object { .. }) => State::NextKey,
                    _ => State::NextItem,
                };
            }
            (State::AfterValue, _) => {
                return Err(syntax(
                    at,
                    match self.stack.last() {
                        Some(Frame::Object { .. }) => "expected `,` or `}`",
                        _ => "expected `,` or `]`",
                    },
                ));
            }
            (State::Value | State::FirstItem | State::NextItem, _) => {
                if byte == b']' && self.state == State::NextItem {
                    return Err(syntax(at, "trailing comma"));
                }
                self.begin_value(byte, at)?;
            }
            (State::FirstKey | State::NextKey, b'"') => {
                self.state = State::Str {
                    key: true,
                    escape: Escape::None,
                };
            }
            (State::NextKey, b'}') => return Err(syntax(at, "trailing comma")),
            (State::FirstKey | State::NextKey, _) => {
                return Err(syntax(at, "expected a string key"));
            }
            (State::Colon, b':') => self.state = State::Value,
            (State::Colon, _) => return Err(syntax(at, "expected `:`")),
            (State::Done, _) => return Err(syntax(at, "trailing characters")),
            // Strings, numbers and literals are read in `read`.
            (State::Str { .. } | State::Number | State::Literal { .. }, _) => {}
        }
        Ok(())
    }

    /// The first byte of a value.
    fn begin_value(&mut self, byte: u8, at: usize) -> Result<(), IncrementalJsonError> {
        match byte {
            b'{' | b'[' => {
                if self.stack.len() >= self.max_depth {
                    return Err(IncrementalJsonError::TooDeep {
                        limit: self.max_depth,
                    });
                }
                if byte == b'{' {
                    self.stack.push(Frame::Object {
                        map: Map::new(),
                        key: String::new(),
                    });
                    self.state = State::FirstKey;
                } else {
                    self.stack.push(Frame::Array(Vec::new()));
                    self.state = State::FirstItem;
                }
            }
            b'"' => {
                self.string.clear();
                self.state = State::Str {
                    key: false,
                    escape: Escape::None,
                };
            }
            b'-' | b'0'..=b'9' => {
                self.number.clear();
                self.number.push(char::from(byte));
                self.number_at = at;
                self.state = State::Number;
            }
            b't' | b'f' | b'n' => {
                let word = match byte {
                    b't' => Literal::True,
                    b'f' => Literal::False,
                    _ => Literal::Null,
                };
                self.state = State::Literal { word, seen: 1 };
            }
            _ => return Err(syntax(at, "expected a value")),
        }
        Ok(())
    }

    /// One byte of an escape sequence; returns where the string is next.
    fn read_escape(
        &mut self,
        escape: Escape,
        byte: u8,
        at: usize,
    ) -> Result<Escape, IncrementalJsonError> {
        let next = match escape {
            Escape::None => Escape::None,
            Escape::Backslash => {
                let unescaped = match byte {
                    b'"' => '"',
                    b'\\' => '\\',
                    b'/' => '/',
                    b'b' => '\u{8}',
                    b'f' => '\u{c}',
                    b'n' => '\n',
                    b'r' => '\r',
                    b't' => '\t',
                    b'u' => {
                        return Ok(Escape::Hex {
                            high: None,
                            digits: 0,
                            code: 0,
                        });
                    }
                    _ => return Err(syntax(at, "invalid escape")),
                };
                self.string.push(unescaped);
                Escape::None
            }
            Escape::Hex { high, digits, code } => {
                let Some(digit) = hex_digit(byte) else {
                    return Err(syntax(at, "invalid hex digit in a `\\u` escape"));
                };
                let code = (code << 4) | digit;
                if digits < 3 {
                    return Ok(Escape::Hex {
                        high,
                        digits: digits + 1,
                        code,
                    });
                }
                return self.end_unicode_escape(high, code, at);
            }
            Escape::PairBackslash { high } if byte == b'\\' => Escape::PairU { high },
            Escape::PairU { high } if byte == b'u' => Escape::Hex {
                high: Some(high),
                digits: 0,
                code: 0,
            },
            Escape::PairBackslash { .. } | Escape::PairU { .. } => {
                return Err(syntax(at, "lone leading surrogate in a `\\u` escape"));
            }
        };
        Ok(next)
    }

    /// The fourth hex digit of `\uXXXX` was read: `code` is the escape's value.
    fn end_unicode_escape(
        &mut self,
        high: Option<u16>,
        code: u16,
        at: usize,
    ) -> Result<Escape, IncrementalJsonError> {
        let is_trailing = (0xDC00..=0xDFFF).contains(&code);
        let scalar = match high {
            None if (0xD800..=0xDBFF).contains(&code) => {
                return Ok(Escape::PairBackslash { high: code });
            }
            None if is_trailing => {
                return Err(syntax(at, "lone trailing surrogate in a `\\u` escape"));
            }
            None => u32::from(code),
            Some(high) if is_trailing => {
                0x1_0000 + ((u32::from(high) - 0xD800) << 10) + (u32::from(code) - 0xDC00)
            }
            Some(_) => return Err(syntax(at, "lone leading surrogate in a `\\u` escape")),
        };
        match char::from_u32(scalar) {
            Some(c) => {
                self.string.push(c);
                Ok(Escape::None)
            }
            None => Err(syntax(at, "invalid `\\u` escape")),
        }
    }

    /// The closing quote of a string.
    fn end_string(&mut self, key: bool, at: usize) -> Result<(), IncrementalJsonError> {
        if !key {
            let value = Value::String(std::mem::take(&mut self.string));
            self.complete(value);
            return Ok(());
        }
        let duplicate = match self.stack.last_mut() {
            Some(Frame::Object { map, key }) => {
                if map.contains_key(&self.string) {
                    true
                } else {
                    std::mem::swap(key, &mut self.string);
                    false
                }
            }
            _ => return Err(syntax(at, "a key outside an object")),
        };
        if duplicate {
            return Err(IncrementalJsonError::DuplicateKey {
                pointer: self.open_pointer(self.stack.len().saturating_sub(1)),
                key: std::mem::take(&mut self.string),
            });
        }
        self.string.clear();
        self.state = State::Colon;
        Ok(())
    }

    /// The byte after a number: its text is complete.
    fn end_number(&mut self) -> Result<(), IncrementalJsonError> {
        match parse_number(&self.number) {
            Some(value) => {
                self.complete(value);
                Ok(())
            }
            None => Err(syntax(self.number_at, "invalid number")),
        }
    }

    /// A value completed: it becomes the top-level value, or a child of the open container.
    fn complete(&mut self, value: Value) {
        let top_level_member = self.stack.len() == 1;
        match self.stack.last_mut() {
            None => {
                self.root = Some(value);
                self.state = State::Done;
                return;
            }
            Some(Frame::Array(items)) => {
                if top_level_member {
                    self.completed.push(format!("/{}", items.len()));
                }
                items.push(value);
            }
            Some(Frame::Object { map, key }) => {
                if top_level_member {
                    let mut pointer = String::with_capacity(key.len() + 1);
                    schema::push_pointer_segment(&mut pointer, key);
                    self.completed.push(pointer);
                }
                map.insert(std::mem::take(key), value);
            }
        }
        self.state = State::AfterValue;
    }

    /// The closing bracket of the innermost open container.
    fn close(&mut self) {
        let value = match self.stack.pop() {
            Some(Frame::Array(items)) => Value::Array(items),
            Some(Frame::Object { map, .. }) => Value::Object(map),
            None => return,
        };
        self.complete(value);
    }

    /// The JSON pointer of the open container at `depth` (0 is the outermost).
    fn open_pointer(&self, depth: usize) -> String {
        let mut pointer = String::new();
        for frame in self.stack.iter().take(depth) {
            match frame {
                Frame::Array(items) => {
                    schema::push_pointer_segment(&mut pointer, &items.len().to_string());
                }
                Frame::Object { key, .. } => schema::push_pointer_segment(&mut pointer, key),
            }
        }
        pointer
    }

    /// Moves the open containers (and an open string) into one tree in `root`, each the last
    /// child of its parent: the partial value, built without copying.
    fn fold(&mut self) {
        if self.folded {
            return;
        }
        let open_string = matches!(self.state, State::Str { key: false, .. });
        if self.stack.is_empty() && !open_string {
            return;
        }
        let mut child = open_string.then(|| Value::String(std::mem::take(&mut self.string)));
        for frame in self.stack.iter_mut().rev() {
            child = Some(match frame {
                Frame::Array(items) => {
                    items.extend(child);
                    Value::Array(std::mem::take(items))
                }
                Frame::Object { map, key } => {
                    if let Some(child) = child {
                        map.insert(key.clone(), child);
                    }
                    Value::Object(std::mem::take(map))
                }
            });
        }
        self.root = child;
        self.folded = true;
        self.folded_string = open_string;
    }

    /// Undoes [`Self::fold`]: the open containers back on the stack, the open string back in
    /// its buffer.
    fn unfold(&mut self) {
        if !std::mem::take(&mut self.folded) {
            return;
        }
        let mut value = self.root.take();
        let depth = self.stack.len();
        for (level, frame) in self.stack.iter_mut().enumerate() {
            let has_child = level + 1 < depth || self.folded_string;
            value = match (frame, value) {
                (Frame::Array(items), Some(Value::Array(folded))) => {
                    *items = folded;
                    if has_child { items.pop() } else { None }
                }
                (Frame::Object { map, key }, Some(Value::Object(folded))) => {
                    *map = folded;
                    if has_child {
                        map.remove(key.as_str())
                    } else {
                        None
                    }
                }
                // `fold` built the tree from these frames: the shapes always match.
                _ => None,
            };
        }
        if let Some(Value::String(open)) = value {
            self.string = open;
        }
    }
}

/// A syntax error at `at`.
fn syntax(at: usize, reason: &'static str) -> IncrementalJsonError {
    IncrementalJsonError::Syntax { offset: at, reason }
}

/// The value of a hex digit.
fn hex_digit(byte: u8) -> Option<u16> {
    let value = match byte {
        b'0'..=b'9' => byte - b'0',
        b'a'..=b'f' => byte - b'a' + 10,
        b'A'..=b'F' => byte - b'A' + 10,
        _ => return None,
    };
    Some(u16::from(value))
}

/// Bytes that can continue a number: a run of them ends it only where something else starts.
fn is_number_byte(byte: u8) -> bool {
    matches!(byte, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
}

/// The value `serde_json` gives a number's text, or `None` when the text is not a number.
fn parse_number(text: &str) -> Option<Value> {
    // Plain integers that fit (no leading zero, no `-0`, which serde_json reads as a float) are
    // read directly; everything else goes to serde_json so floats round as it rounds them.
    let (negative, digits) = match text.strip_prefix('-') {
        Some(digits) => (true, digits),
        None => (false, text),
    };
    let plain = !digits.is_empty()
        && digits.len() <= 18
        && digits.bytes().all(|b| b.is_ascii_digit())
        && !digits.starts_with('0');
    if plain {
        return if negative {
            text.parse::<i64>().ok().map(Value::from)
        } else {
            text.parse::<u64>().ok().map(Value::from)
        };
    }
    match serde_json::from_str::<Value>(text) {
        Ok(value @ Value::Number(_)) => Some(value),
        _ => None,
    }
}

/// The bytes of a UTF-8 character that a piece cut off, kept for the next piece.
#[derive(Debug, Clone, Default)]
struct Utf8Carry {
    bytes: [u8; 4],
    len: usize,
}

impl Utf8Carry {
    fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The whole characters of what was carried followed by `piece`; the bytes of a character
    /// `piece` leaves open are carried to the next call. `Err` holds how many bytes (of the
    /// carried ones and `piece`) came before the first invalid one.
    fn decode<'a>(&mut self, piece: &'a [u8]) -> Result<Cow<'a, str>, usize> {
        let mut rest = piece;
        let mut head = None;
        if self.len > 0 {
            let width = utf8_width(self.bytes[0]);
            let take = width.saturating_sub(self.len).min(rest.len());
            let (more, after) = rest.split_at(take);
            self.bytes[self.len..self.len + take].copy_from_slice(more);
            self.len += take;
            rest = after;
            match std::str::from_utf8(&self.bytes[..self.len]) {
                Ok(c) => head = Some(c.to_owned()),
                Err(e) if e.error_len().is_none() => return Ok(Cow::Borrowed("")),
                Err(_) => return Err(0),
            }
            self.len = 0;
        }
        let carried = head.as_ref().map_or(0, String::len);
        let text = match std::str::from_utf8(rest) {
            Ok(text) => text,
            Err(e) if e.error_len().is_none() => {
                let (valid, open) = rest.split_at(e.valid_up_to());
                self.bytes[..open.len()].copy_from_slice(open);
                self.len = open.len();
                std::str::from_utf8(valid).map_err(|_| carried)?
            }
            Err(e) => return Err(carried + e.valid_up_to()),
        };
        Ok(match head {
            Some(mut head) => {
                head.push_str(text);
                Cow::Owned(head)
            }
            None => Cow::Borrowed(text),
        })
    }
}

/// How many bytes the UTF-8 character that starts with `lead` has (1 for a byte that starts none).
fn utf8_width(lead: u8) -> usize {
    match lead {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Texts `serde_json` accepts, with every kind of token, escape and number.
    const VALID: &[&str] = &[
        "{}",
        "[]",
        " \t\r\n{ } ",
        "0",
        "-0",
        "-0.0",
        "12",
        "-12",
        "18446744073709551615",
        "18446744073709551616",
        "-9223372036854775808",
        "-9223372036854775809",
        "123456789012345678901234567890",
        "1.5",
        "-1.25e-3",
        "1E+2",
        "0.1e10",
        "3.141592653589793238462643383279",
        "true",
        "false",
        "null",
        r#""""#,
        r#""plain""#,
        r#""\"\\\/\b\f\n\r\t""#,
        r#""\u00e9\u00E9 \u20ac \ud83d\ude00 \uD834\uDD1E""#,
        "\"caf\u{e9} \u{1f600} \u{7f}\"",
        r#"{"a":[1,-2,3.5,"x",null,true,false,{"b":{}}],"":{"":[]}}"#,
        r#"[[[[[]]]],{"k":[{"k":[]}]}]"#,
        r#"{"a/b~c":{"x":1},"y":[0,[1,[2]]]}"#,
    ];

    /// Texts `serde_json` refuses.
    const INVALID: &[&str] = &[
        "",
        " ",
        "{",
        "[",
        "[1,]",
        r#"{"a":1,}"#,
        "[,1]",
        "{,}",
        r#"{"a" 1}"#,
        r#"{"a":}"#,
        "{1:2}",
        "{'a':1}",
        r#"{"a":1} x"#,
        "{} {}",
        "\u{feff}{}",
        "01",
        "-",
        "-01",
        "+1",
        ".5",
        "1.",
        "1.e5",
        "1e",
        "1e+",
        "0x10",
        "1.2.3",
        "--1",
        "1e400",
        "-1e400",
        "NaN",
        "Infinity",
        "-Infinity",
        "tru",
        "truex",
        "nul",
        "nulll",
        "True",
        r#""abc"#,
        "\"a\u{1}b\"",
        "\"tab\there\"",
        r#""\x""#,
        r#""\u12""#,
        r#""\u12G4""#,
        r#""\ud800""#,
        r#""\ud800x""#,
        r#""\ud800\n""#,
        r#""\ud800\u0041""#,
        r#""\ud800\ud800""#,
        r#""\udc00""#,
        r#""\"#,
        "[1 2]",
        r#"{"a":1 "b":2}"#,
        "]",
        "}",
        "[}",
        "{]",
        "/* c */ {}",
        "[1]]",
        "\"\u{2028}\" x",
    ];

    fn parse_whole(text: &[u8]) -> Result<Value, IncrementalJsonError> {
        let mut parser = IncrementalJson::new();
        parser.feed(text)?;
        parser.finish()
    }

    /// Feeds `text` cut at `cuts` (byte offsets), reading the partial value after every piece.
    fn parse_pieces(text: &[u8], cuts: &[usize]) -> Result<Value, IncrementalJsonError> {
        let mut parser = IncrementalJson::new();
        let mut start = 0;
        for &cut in cuts.iter().chain([text.len()].iter()) {
            parser.feed(&text[start..cut])?;
            let _ = parser.partial_value();
            start = cut;
        }
        parser.finish()
    }

    #[test]
    fn valid_texts_give_serde_jsons_value_however_they_are_split() {
        for text in VALID {
            let expected: Value = serde_json::from_str(text).unwrap();
            assert_eq!(parse_whole(text.as_bytes()).unwrap(), expected, "{text}");
            let bytes = text.as_bytes();
            let every_byte: Vec<usize> = (1..bytes.len()).collect();
            assert_eq!(
                parse_pieces(bytes, &every_byte).unwrap(),
                expected,
                "{text}"
            );
            for cut in 0..=bytes.len() {
                assert_eq!(
                    parse_pieces(bytes, &[cut]).unwrap(),
                    expected,
                    "{text} @{cut}"
                );
            }
        }
    }

    #[test]
    fn invalid_texts_are_refused_however_they_are_split() {
        for text in INVALID {
            assert!(
                serde_json::from_str::<Value>(text).is_err(),
                "serde_json: {text:?}"
            );
            assert!(parse_whole(text.as_bytes()).is_err(), "{text:?}");
            let bytes = text.as_bytes();
            let every_byte: Vec<usize> = (1..bytes.len()).collect();
            assert!(parse_pieces(bytes, &every_byte).is_err(), "{text:?}");
        }
    }

    #[test]
    fn numbers_keep_serde_jsons_types() {
        for text in ["-0", "12", "-12", "1.0", "18446744073709551616", "1e2"] {
            let ours = parse_whole(text.as_bytes()).unwrap();
            let theirs: Value = serde_json::from_str(text).unwrap();
            assert_eq!(
                (ours.is_u64(), ours.is_i64(), ours.is_f64()),
                (theirs.is_u64(), theirs.is_i64(), theirs.is_f64()),
                "{text}"
            );
            assert_eq!(ours.to_string(), theirs.to_string(), "{text}");
        }
    }

    #[test]
    fn nesting_is_refused_where_serde_json_refuses_it() {
        let deepest = format!("{}{}", "[".repeat(127), "]".repeat(127));
        assert!(serde_json::from_str::<Value>(&deepest).is_ok());
        assert!(parse_whole(deepest.as_bytes()).is_ok());
        let deeper = format!("{}{}", "[".repeat(128), "]".repeat(128));
        assert!(serde_json::from_str::<Value>(&deeper).is_err());
        assert_eq!(
            parse_whole(deeper.as_bytes()).unwrap_err(),
            IncrementalJsonError::TooDeep { limit: 127 }
        );
        // Hostile depth is refused at the first level past the limit, without building it.
        let hostile = "[".repeat(1_000_000);
        assert!(parse_whole(hostile.as_bytes()).is_err());
    }

    #[test]
    fn a_character_split_anywhere_is_read_whole() {
        let text = "\"a\u{e9}\u{20ac}\u{1f600}z\"".as_bytes();
        for first in 0..text.len() {
            for second in first..text.len() {
                let value = parse_pieces(text, &[first, second]).unwrap();
                assert_eq!(
                    value,
                    json!("a\u{e9}\u{20ac}\u{1f600}z"),
                    "{first} {second}"
                );
            }
        }
    }

    #[test]
    fn invalid_utf8_is_refused_with_its_offset() {
        for (bytes, offset) in [
            (&b"\"a\xffb\""[..], 2),
            (b"\"a\xc3\x28\"", 2),
            (b"\"\xe2\x82\"", 1),
            (b"\"\xed\xa0\x80\"", 1), // an encoded surrogate
            (b"\"\xf5\x80\x80\x80\"", 1),
            (b"\xc3\xa9", 0), // valid UTF-8, not JSON: a syntax error at its start
        ] {
            let whole = parse_whole(bytes).unwrap_err();
            let every_byte: Vec<usize> = (1..bytes.len()).collect();
            let split = parse_pieces(bytes, &every_byte).unwrap_err();
            assert_eq!(whole, split, "{bytes:?}");
            match whole {
                IncrementalJsonError::InvalidUtf8 { offset: at }
                | IncrementalJsonError::Syntax { offset: at, .. } => {
                    assert_eq!(at, offset, "{bytes:?}");
                }
                other => panic!("{bytes:?}: {other:?}"),
            }
        }
        // A character cut off by the end of the input.
        let mut parser = IncrementalJson::new();
        parser.feed(b"\"\xe2\x82").unwrap();
        assert_eq!(
            parser.finish().unwrap_err(),
            IncrementalJsonError::InvalidUtf8 { offset: 1 }
        );
    }

    #[test]
    fn duplicate_keys_are_refused_with_the_pointer_a_whole_parse_gives() {
        let text = r#"{"a":{"x/y":[{"k":1,"k":2}]}}"#;
        let err = parse_whole(text.as_bytes()).unwrap_err();
        assert_eq!(
            err,
            IncrementalJsonError::DuplicateKey {
                pointer: "/a/x~1y/0".into(),
                key: "k".into()
            }
        );
        let expected = schema::parse_arguments(text).unwrap_err().into_tool_error();
        assert_eq!(err.to_tool_error(), expected);
        let top = parse_whole(br#"{"a":1,"a":1}"#).unwrap_err();
        assert_eq!(
            top.to_tool_error().message(),
            "the arguments repeat the key `a`; send each key once"
        );
    }

    #[test]
    fn errors_map_to_tool_error_codes() {
        let syntax = parse_whole(b"[1,]").unwrap_err().to_tool_error();
        assert_eq!(syntax.code(), ErrorCode::ArgumentsNotJson);
        assert_eq!(
            syntax.message(),
            "the arguments are not valid JSON: trailing comma at byte 3"
        );
        assert_eq!(syntax.keyword(), Some("json"));
        let deep = IncrementalJsonError::TooDeep { limit: 4 }.to_tool_error();
        assert_eq!(deep.code(), ErrorCode::ArgumentsTooLarge);
        let cut = parse_whole(b"{\"a\"").unwrap_err().to_tool_error();
        assert_eq!(cut.code(), ErrorCode::ArgumentsNotJson);
        assert!(
            cut.message().contains("ends after 4 bytes"),
            "{}",
            cut.message()
        );
    }

    #[test]
    fn errors_stick() {
        let mut parser = IncrementalJson::new();
        let first = parser.feed("[1,,").unwrap_err();
        assert_eq!(parser.feed("2]").unwrap_err(), first);
        assert_eq!(parser.finish().unwrap_err(), first);
    }

    #[test]
    fn partial_values_show_what_came_and_nothing_unfinished() {
        let text = r#"{"s":"ab\u00e9c","n":-12.5,"t":true,"l":[1,[2,{"k":"v"}]],"o":{}}"#;
        let mut parser = IncrementalJson::new();
        let mut seen = Vec::new();
        for piece in text.as_bytes().chunks(3) {
            parser.feed(piece).unwrap();
            seen.push(parser.partial_value().cloned());
        }
        assert_eq!(seen[0], Some(json!({}))); // a key being read is left out
        assert_eq!(seen[1], Some(json!({ "s": "" })));
        assert_eq!(seen[2], Some(json!({ "s": "ab" }))); // an escape being read too
        assert_eq!(seen[4], Some(json!({ "s": "ab\u{e9}c" })));
        // `-12.5` is left out until the byte after it.
        assert_eq!(seen[7], Some(json!({ "s": "ab\u{e9}c" })));
        assert_eq!(seen[8], Some(json!({ "s": "ab\u{e9}c", "n": -12.5 })));
        assert_eq!(seen[10], seen[9]); // so is `true`
        assert_eq!(
            seen[14],
            Some(json!({ "s": "ab\u{e9}c", "n": -12.5, "t": true, "l": [1, []] }))
        );
        assert_eq!(
            seen[17],
            Some(json!({ "s": "ab\u{e9}c", "n": -12.5, "t": true, "l": [1, [2, { "k": "v" }]] }))
        );
        let last = seen.last().cloned().flatten();
        assert_eq!(parser.finish().unwrap(), last.unwrap());
    }

    #[test]
    fn a_top_level_string_shows_as_it_comes() {
        let mut parser = IncrementalJson::new();
        parser.feed("\"Hel").unwrap();
        assert_eq!(parser.partial_value(), Some(&json!("Hel")));
        parser.feed("lo").unwrap();
        assert_eq!(parser.partial_value(), Some(&json!("Hello")));
        parser.feed("\"").unwrap();
        assert_eq!(parser.finish().unwrap(), json!("Hello"));
    }

    #[test]
    fn a_complete_value_is_not_the_end_of_the_input() {
        let mut parser = IncrementalJson::new();
        parser.feed(r#"{"a":1}"#).unwrap();
        assert_eq!(parser.partial_value(), Some(&json!({ "a": 1 })));
        // More may still come, and what comes is checked.
        assert!(parser.feed(r#","b":2}"#).is_err());
        let mut parser = IncrementalJson::new();
        parser.feed("12").unwrap();
        parser.feed("34").unwrap();
        assert_eq!(parser.finish().unwrap(), json!(1234));
    }

    #[test]
    fn completed_fields_are_top_level_members_only() {
        let mut parser = IncrementalJson::new();
        parser
            .feed(r#"{"a":{"b":1,"c":2},"d":"x","e~f":3,"g":"#)
            .unwrap();
        assert_eq!(parser.take_completed_fields(), ["/a", "/d", "/e~0f"]);
        assert!(parser.take_completed_fields().is_empty());
        let mut parser = IncrementalJson::new();
        parser.feed("[10,[20],30").unwrap();
        assert_eq!(parser.take_completed_fields(), ["/0", "/1"]);
        parser.feed("]").unwrap();
        assert_eq!(parser.take_completed_fields(), ["/2"]);
    }

    #[test]
    fn errors_count_bytes_from_the_start_of_the_input() {
        let mut parser = IncrementalJson::new();
        parser.feed("{\"a\":").unwrap();
        parser.feed("\"\u{e9}\"").unwrap();
        let err = parser.feed(" x").unwrap_err();
        assert_eq!(
            err,
            IncrementalJsonError::Syntax {
                offset: 10,
                reason: "expected `,` or `}`"
            }
        );
    }
}
