//! A request body's bytes: the text `serde_json::to_vec` writes, with long strings that need no
//! escaping copied whole instead of checked byte by byte.
//!
//! A request carrying a tool's image holds its base64 text: 1.4 MB for a 1 MB image. `serde_json`
//! looks up every byte of a string in its escape table as it writes it, which costs about as much
//! as encoding the base64 in the first place. Base64 has nothing JSON escapes, and a check for
//! the three kinds of byte that need it (`"`, `\` and the controls below U+0020) runs over a whole
//! block at a time. So a long string passes that check and is copied as it is; a short one, or
//! one that needs escaping, is written by `serde_json`. The bytes are the same either way.

use crate::content::Bytes;
use serde_json::Value;

/// Strings at least this long are checked a block at a time before `serde_json` would escape them
/// byte by byte; shorter ones go to `serde_json` directly (the check would cost more than it saves).
const CHECKED_WHOLE: usize = 512;

/// The bytes `serde_json::to_vec(value)` writes (compact JSON, keys in the map's order), written
/// in one pass into a buffer sized once: the request bodies pleach's model clients send.
///
/// A long string that JSON needs not escape (a medium's base64) is copied whole; everything else
/// is written by `serde_json` itself, so the output is the same byte for byte.
///
/// ```
/// use serde_json::json;
///
/// let image = "iVBORw0KGgo".repeat(100);
/// let body = json!({
///     "model": "m",
///     "messages": [{ "role": "user", "content": [
///         { "type": "image", "source": { "type": "base64", "media_type": "image/png", "data": image } },
///         { "type": "text", "text": "What is \"this\"?\n" },
///     ] }],
///     "max_tokens": 200,
///     "temperature": 0.5,
/// });
/// let bytes = pleach_core::providers::json_bytes(&body)?;
/// assert_eq!(bytes, serde_json::to_vec(&body)?);
/// # Ok::<(), serde_json::Error>(())
/// ```
///
/// # Errors
///
/// Only those `serde_json::to_vec` would return for the same value (none for a [`Value`] today:
/// its keys are strings and its numbers finite).
pub fn json_bytes(value: &Value) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(size_hint(value, usize::MAX));
    write_value(&mut out, value)?;
    Ok(out)
}

/// About how many bytes `value` takes as JSON: its strings' lengths and a few bytes per node, so a
/// body holding a medium is written without its buffer growing and copying the medium again.
/// Strings of `moved` bytes or more count only their quotes (they become pieces of a
/// [`JsonBody`] of their own; `usize::MAX` counts every string).
fn size_hint(value: &Value, moved: usize) -> usize {
    match value {
        Value::String(text) if text.len() >= moved => 2,
        Value::String(text) => text.len() + 2,
        Value::Array(items) => {
            2 + items
                .iter()
                .map(|item| size_hint(item, moved) + 1)
                .sum::<usize>()
        }
        Value::Object(map) => {
            2 + map
                .iter()
                .map(|(key, item)| key.len() + 4 + size_hint(item, moved))
                .sum::<usize>()
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => 8,
    }
}

fn write_value(out: &mut Vec<u8>, value: &Value) -> serde_json::Result<()> {
    match value {
        Value::String(text) => write_str(out, text),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, item)?;
            }
            out.push(b']');
            Ok(())
        }
        Value::Object(map) => {
            out.push(b'{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, key)?;
                out.push(b':');
                write_value(out, item)?;
            }
            out.push(b'}');
            Ok(())
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => serde_json::to_writer(&mut *out, value),
    }
}

fn write_str(out: &mut Vec<u8>, text: &str) -> serde_json::Result<()> {
    if text.len() >= CHECKED_WHOLE && !needs_escaping(text.as_bytes()) {
        out.reserve(text.len() + 2);
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
        Ok(())
    } else {
        serde_json::to_writer(&mut *out, text)
    }
}

/// Strings at least this long that need no escaping are not copied into a [`JsonBody`]: the
/// string's own buffer becomes a piece of the body. Below it, a copy costs less than a piece.
const MOVED_WHOLE: usize = 64 * 1024;

/// A request body as the pieces it is sent in: the JSON text [`json_bytes`] writes, but each long
/// string that needs no escaping (a medium's base64) is its own piece, moved out of the value
/// rather than copied. pleach's model clients send these pieces as they are, with a
/// `Content-Length` of [`len`](Self::len): a tool's image is encoded once and never copied again
/// on its way to the socket.
///
/// ```
/// use serde_json::json;
/// use pleach_core::providers::JsonBody;
///
/// let image = "iVBORw0KGgo".repeat(10_000);
/// let body = json!({ "model": "m", "messages": [{ "role": "user", "content": [
///     { "type": "image", "source": { "type": "base64", "media_type": "image/png", "data": image } },
/// ] }] });
/// let expected = serde_json::to_vec(&body)?;
/// let pieces = JsonBody::new(body)?;
/// assert_eq!(pieces.len(), expected.len());
/// assert_eq!(pieces.iter().count(), 3); // the JSON before the base64, the base64, the rest
/// assert_eq!(pieces.to_vec(), expected);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JsonBody {
    pieces: Vec<Bytes>,
    len: usize,
}

impl JsonBody {
    /// `value`'s compact JSON text (the bytes `serde_json::to_vec` writes), its long unescaped
    /// strings moved in as pieces of their own.
    ///
    /// ```
    /// let body = pleach_core::providers::JsonBody::new(serde_json::json!({ "a": [1, "b"] }))?;
    /// assert_eq!(body.to_vec(), br#"{"a":[1,"b"]}"#);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// Only those `serde_json::to_vec` would return for the same value (none for a [`Value`]
    /// today: its keys are strings and its numbers finite).
    pub fn new(value: Value) -> serde_json::Result<Self> {
        let mut writer = PieceWriter {
            body: JsonBody::default(),
            current: Vec::with_capacity(size_hint(&value, MOVED_WHOLE)),
        };
        writer.value(value)?;
        writer.flush();
        Ok(writer.body)
    }

    /// The body's length in bytes: every piece together.
    ///
    /// ```
    /// let body = pleach_core::providers::JsonBody::new(serde_json::json!([true]))?;
    /// assert_eq!(body.len(), 6);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the body holds no bytes (never, for a body written from a value).
    ///
    /// ```
    /// assert!(pleach_core::providers::JsonBody::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The pieces in order, none of them empty.
    ///
    /// ```
    /// let body = pleach_core::providers::JsonBody::new(serde_json::json!({ "a": 1 }))?;
    /// assert_eq!(body.iter().map(|piece| piece.len()).sum::<usize>(), body.len());
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn iter(&self) -> std::slice::Iter<'_, Bytes> {
        self.pieces.iter()
    }

    /// The whole body in one buffer (a copy of every piece).
    ///
    /// ```
    /// let body = pleach_core::providers::JsonBody::new(serde_json::json!("x"))?;
    /// assert_eq!(body.to_vec(), b"\"x\"");
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len);
        for piece in &self.pieces {
            out.extend_from_slice(piece);
        }
        out
    }
}

impl IntoIterator for JsonBody {
    type Item = Bytes;
    type IntoIter = std::vec::IntoIter<Bytes>;

    /// The pieces in order, owned.
    ///
    /// ```
    /// let body = pleach_core::providers::JsonBody::new(serde_json::json!(null))?;
    /// let pieces: Vec<_> = body.into_iter().collect();
    /// assert_eq!(pieces, [pleach_core::content::Bytes::from_static(b"null")]);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    fn into_iter(self) -> Self::IntoIter {
        self.pieces.into_iter()
    }
}

impl<'a> IntoIterator for &'a JsonBody {
    type Item = &'a Bytes;
    type IntoIter = std::slice::Iter<'a, Bytes>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Writes a [`JsonBody`]: text into `current`, which becomes a piece when a long string is moved
/// in after it.
struct PieceWriter {
    body: JsonBody,
    current: Vec<u8>,
}

impl PieceWriter {
    fn value(&mut self, value: Value) -> serde_json::Result<()> {
        match value {
            Value::String(text)
                if text.len() >= MOVED_WHOLE && !needs_escaping(text.as_bytes()) =>
            {
                self.current.push(b'"');
                self.flush();
                self.piece(Bytes::from(text));
                self.current.push(b'"');
                Ok(())
            }
            Value::String(text) => write_str(&mut self.current, &text),
            Value::Array(items) => {
                self.current.push(b'[');
                for (i, item) in items.into_iter().enumerate() {
                    if i > 0 {
                        self.current.push(b',');
                    }
                    self.value(item)?;
                }
                self.current.push(b']');
                Ok(())
            }
            Value::Object(map) => {
                self.current.push(b'{');
                for (i, (key, item)) in map.into_iter().enumerate() {
                    if i > 0 {
                        self.current.push(b',');
                    }
                    write_str(&mut self.current, &key)?;
                    self.current.push(b':');
                    self.value(item)?;
                }
                self.current.push(b'}');
                Ok(())
            }
            scalar @ (Value::Null | Value::Bool(_) | Value::Number(_)) => {
                serde_json::to_writer(&mut self.current, &scalar)
            }
        }
    }

    /// The text written so far becomes a piece (the rest goes into a new buffer).
    fn flush(&mut self) {
        if !self.current.is_empty() {
            let text = std::mem::take(&mut self.current);
            self.piece(Bytes::from(text));
        }
    }

    fn piece(&mut self, piece: Bytes) {
        self.body.len += piece.len();
        self.body.pieces.push(piece);
    }
}

/// Whether any byte is one JSON escapes: `"`, `\` or a control below U+0020 (`serde_json`'s escape
/// table holds exactly these). Each block is folded without stopping early, which the compiler
/// turns into vector compares.
fn needs_escaping(bytes: &[u8]) -> bool {
    bytes.chunks(64).any(|block| {
        let found = block.iter().fold(0u8, |found, &byte| {
            found | u8::from(byte < 0x20) | u8::from(byte == b'"') | u8::from(byte == b'\\')
        });
        found != 0
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{CHECKED_WHOLE, JsonBody, MOVED_WHOLE, json_bytes, needs_escaping};

    /// A string of `len` bytes built from `alphabet`, with `inner` placed in its middle.
    fn long(alphabet: &str, len: usize, inner: &str) -> String {
        let mut text: String = alphabet.chars().cycle().take(len).collect();
        text.insert_str(len / 2, inner);
        text
    }

    #[test]
    fn the_bytes_are_serde_jsons_for_every_kind_of_value() {
        let base64 = long(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
            4096,
            "",
        );
        let values = [
            json!(null),
            json!(true),
            json!(0),
            json!(-17),
            json!(u64::MAX),
            json!(1.5e300),
            json!(-0.0),
            json!(""),
            json!("short \"quoted\" \\ \n\t\u{1} é 😀"),
            json!([]),
            json!({}),
            json!({ "a": [1, 2.25, "x"], "b": { "c": null, "é\"": false } }),
            json!({ "data": base64 }),
            json!([
                long("ab", CHECKED_WHOLE, "\""),
                long("ab", CHECKED_WHOLE, "\\")
            ]),
            json!([
                long("ab", CHECKED_WHOLE, "\u{1f}"),
                long("ab", CHECKED_WHOLE, "\n")
            ]),
            json!([
                long("ab", CHECKED_WHOLE, "\u{7f}é😀"),
                long("ab", CHECKED_WHOLE - 1, "")
            ]),
            json!({ long("k", CHECKED_WHOLE * 2, "\t"): long("v", CHECKED_WHOLE * 2, "") }),
        ];
        for value in values {
            assert_eq!(
                json_bytes(&value).expect("writes"),
                serde_json::to_vec(&value).expect("writes"),
                "{value}"
            );
        }
    }

    #[test]
    fn an_escape_anywhere_in_a_long_string_is_found() {
        for at in [0, 1, 63, 64, 65, 1000, 4095] {
            for byte in [b'"', b'\\', 0, 0x1f] {
                let mut bytes = vec![b'A'; 4096];
                bytes[at] = byte;
                assert!(needs_escaping(&bytes), "{byte:#x} at {at}");
            }
        }
        assert!(!needs_escaping(&[b' '; 4096]));
        assert!(!needs_escaping("é😀\u{7f}".repeat(500).as_bytes()));
        let value: Value = json!("x".repeat(CHECKED_WHOLE));
        assert_eq!(json_bytes(&value).expect("writes").len(), CHECKED_WHOLE + 2);
    }

    #[test]
    fn a_body_in_pieces_is_serde_jsons_text_with_long_plain_strings_moved_in() {
        let base64 = long(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
            MOVED_WHOLE,
            "",
        );
        let cases = [
            (json!(null), 1),
            (json!({ "a": [1, "b", { "c": null }] }), 1),
            (json!(base64), 3),
            (json!({ "data": base64 }), 3),
            (json!([base64, base64]), 5),
            (json!({ "data": base64, "more": [1, 2] }), 3),
            // Short, or needing an escape: copied (and escaped) like everything else.
            (json!([long("ab", MOVED_WHOLE - 1, "")]), 1),
            (json!([long("ab", MOVED_WHOLE, "\n\"é")]), 1),
        ];
        for (value, pieces) in cases {
            let expected = serde_json::to_vec(&value).expect("writes");
            let body = JsonBody::new(value).expect("writes");
            assert_eq!(body.to_vec(), expected);
            assert_eq!(body.len(), expected.len());
            assert_eq!(body.iter().count(), pieces);
            assert!(body.iter().all(|piece| !piece.is_empty()));
        }
    }

    #[test]
    fn a_moved_string_keeps_its_buffer() {
        let text = "Q".repeat(MOVED_WHOLE);
        let at = text.as_ptr();
        let body = JsonBody::new(serde_json::Value::String(text)).expect("writes");
        assert_eq!(body.iter().nth(1).map(|piece| piece.as_ptr()), Some(at));
    }
}
