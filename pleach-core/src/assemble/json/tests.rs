//! The incremental parser's unit tests: every verdict and value checked against `serde_json`'s,
//! however the text is split.

use super::*;
use crate::error::ErrorCode;
use crate::schema;
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
