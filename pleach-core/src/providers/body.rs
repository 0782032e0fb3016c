//! A request body's bytes: the text `serde_json::to_vec` writes, with long strings that need no
//! escaping copied whole instead of checked byte by byte.
//!
//! A request carrying a tool's image holds its base64 text: 1.4 MB for a 1 MB image. `serde_json`
//! looks up every byte of a string in its escape table as it writes it, which costs about as much
//! as encoding the base64 in the first place. Base64 has nothing JSON escapes, and a check for
//! the three kinds of byte that need it (`"`, `\` and the controls below U+0020) runs over a whole
//! block at a time. So a long string passes that check and is copied as it is; a short one, or
//! one that needs escaping, is written by `serde_json`. The bytes are the same either way.

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
    let mut out = Vec::with_capacity(size_hint(value));
    write_value(&mut out, value)?;
    Ok(out)
}

/// About how many bytes `value` takes as JSON: its strings' lengths and a few bytes per node, so a
/// body holding a medium is written without its buffer growing and copying the medium again.
fn size_hint(value: &Value) -> usize {
    match value {
        Value::String(text) => text.len() + 2,
        Value::Array(items) => 2 + items.iter().map(|item| size_hint(item) + 1).sum::<usize>(),
        Value::Object(map) => {
            2 + map
                .iter()
                .map(|(key, item)| key.len() + 4 + size_hint(item))
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

    use super::{CHECKED_WHOLE, json_bytes, needs_escaping};

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
}
