//! Arguments text parsed as pleach parses it everywhere: duplicate object keys refused with their
//! pointer, nesting bounded, and the errors (`json`, `duplicateKey`) as field-path
//! [`ValidationError`]s; JSON pointers built and nesting measured without a parse.

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::{KEYWORD_DUPLICATE_KEY, KEYWORD_JSON, ValidationError};

/// Parses arguments text into a value, refusing duplicate object keys (`serde_json` keeps the last
/// one silently, so a reviewer and the tool could see different values). Nesting is bounded by
/// `serde_json`'s recursion limit (128), so hostile input cannot overflow the stack.
#[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
pub fn parse_arguments(text: &str) -> Result<Value, ValidationError> {
    let duplicate = RefCell::new(None);
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let parsed = CheckedValue {
        pointer: &mut String::new(),
        duplicate: &duplicate,
    }
    .deserialize(&mut deserializer)
    .and_then(|value| deserializer.end().map(|()| value));
    parsed.map_err(|e| match duplicate.into_inner() {
        Some((path, key)) => duplicate_key(path, &key),
        None => not_json(e),
    })
}

/// The violation for arguments that are not JSON, `reason` saying where and why.
#[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
pub fn not_json(reason: impl fmt::Display) -> ValidationError {
    ValidationError {
        path: String::new(),
        keyword: KEYWORD_JSON.to_owned(),
        message: format!("the arguments are not valid JSON: {reason}"),
    }
}

/// The violation for an object, at JSON pointer `path`, that repeats `key`.
#[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
pub fn duplicate_key(path: String, key: &str) -> ValidationError {
    ValidationError {
        message: format!(
            "the arguments repeat the key `{key}`{}; send each key once",
            if path.is_empty() {
                String::new()
            } else {
                format!(" in `{path}`")
            }
        ),
        path,
        keyword: KEYWORD_DUPLICATE_KEY.to_owned(),
    }
}

/// Appends `segment` to a JSON pointer, escaped as RFC 6901 says (`~` as `~0`, `/` as `~1`).
#[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
pub fn push_pointer_segment(pointer: &mut String, segment: &str) {
    pointer.push('/');
    for c in segment.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            c => pointer.push(c),
        }
    }
}

/// The deepest nesting of arrays and objects in `text`, by a scan that skips strings: cheap
/// enough to run before parsing, so hostile nesting is refused without building anything.
/// (On text that is not JSON the number is meaningless but finite; the parser reports the error.)
#[doc(hidden)] // the runtime's seam (ARCHITECTURE.md, "Seams")
pub fn nesting_depth(text: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for &byte in text.as_bytes() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// A `Value` deserializer that tracks its JSON pointer and refuses duplicate keys.
struct CheckedValue<'a> {
    pointer: &'a mut String,
    duplicate: &'a RefCell<Option<(String, String)>>,
}

impl CheckedValue<'_> {
    fn child(&mut self, segment: &str) -> (CheckedValue<'_>, usize) {
        let len = self.pointer.len();
        push_pointer_segment(self.pointer, segment);
        (
            CheckedValue {
                pointer: self.pointer,
                duplicate: self.duplicate,
            },
            len,
        )
    }
}

impl<'de> DeserializeSeed<'de> for CheckedValue<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for CheckedValue<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        loop {
            let (child, len) = self.child(&items.len().to_string());
            let next = seq.next_element_seed(child)?;
            self.pointer.truncate(len);
            match next {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                *self.duplicate.borrow_mut() = Some((self.pointer.clone(), key.clone()));
                return Err(de::Error::custom(format!("duplicate key `{key}`")));
            }
            let (child, len) = self.child(&key);
            let value = map.next_value_seed(child)?;
            self.pointer.truncate(len);
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn parses_like_serde_json() {
        for text in [
            "{}",
            r#"{"a":[1,-2,3.5,"x",null,true,{"b":{}}]}"#,
            r#"{"big":18446744073709551615,"neg":-9223372036854775808}"#,
            r#"{"esc":"\u00e9\n\"","a/b~c":1}"#,
        ] {
            let expected: Value = serde_json::from_str(text).unwrap();
            assert_eq!(parse_arguments(text).unwrap(), expected, "{text}");
        }
    }

    #[test]
    fn duplicate_keys_are_refused_with_their_pointer() {
        let err = parse_arguments(r#"{"a":{"x/y":[{"k":1,"k":2}]}}"#).unwrap_err();
        assert_eq!(err.keyword, "duplicateKey");
        assert_eq!(err.path, "/a/x~1y/0");
        assert!(err.message.contains("`k`"), "{}", err.message);
        assert_eq!(err.into_tool_error().code(), ErrorCode::ArgumentsNotJson);
    }

    #[test]
    fn bad_json_is_refused() {
        for text in [
            "",
            "{",
            r#"{"a":1} trailing"#,
            "\u{feff}{}",
            r#"{"s":"\ud800"}"#,
        ] {
            let err = parse_arguments(text).unwrap_err();
            assert_eq!(err.keyword, "json", "{text:?}");
        }
    }

    #[test]
    fn nesting_depth_skips_strings() {
        assert_eq!(nesting_depth("{}"), 1);
        assert_eq!(nesting_depth(r#"{"a":[1,{"b":[]}]}"#), 4);
        assert_eq!(nesting_depth(r#"{"a":"[[[[{{{{\"]]]"}"#), 1);
        assert_eq!(nesting_depth("1"), 0);
        assert_eq!(nesting_depth(&"[".repeat(1000)), 1000);
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let text = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let err = parse_arguments(&text).unwrap_err();
        assert!(err.message.contains("recursion limit"), "{}", err.message);
    }
}
