//! The parser's state machine: what it expects next ([`State`]), the arrays and objects still
//! open ([`Frame`]), how each byte of text moves it, and how the open containers fold into the
//! partial value and back.

use serde_json::{Map, Value};

use super::IncrementalJson;
use super::error::IncrementalJsonError;
use crate::schema;

/// An array or object still open, with its completed children.
#[derive(Debug, Clone)]
pub(super) enum Frame {
    Array(Vec<Value>),
    Object {
        map: Map<String, Value>,
        /// The key of the member being read (empty before it has been read).
        key: String,
    },
}

/// What the parser expects next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
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
pub(super) enum Escape {
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
pub(super) enum Literal {
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

impl IncrementalJson {
    /// Records the first error, so that later calls return it too.
    pub(super) fn fail(&mut self, error: IncrementalJsonError) -> IncrementalJsonError {
        self.error = Some(error.clone());
        error
    }

    /// Reads whole characters of text; byte offsets in errors count from the input's start.
    pub(super) fn read(&mut self, text: &str) -> Result<(), IncrementalJsonError> {
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
    pub(super) fn end_number(&mut self) -> Result<(), IncrementalJsonError> {
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
    pub(super) fn fold(&mut self) {
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
    pub(super) fn unfold(&mut self) {
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
