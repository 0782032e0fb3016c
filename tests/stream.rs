//! Streamed tool calls (`pleach_core::assemble`), through the public API:
//!
//! - for any JSON text and any split into pieces (inside strings, escapes, numbers, multi-byte
//!   characters), the incremental parser gives `serde_json`'s value, and the assembler gives the
//!   same value with the text unchanged;
//! - for text `serde_json` refuses, an error (a duplicate key, which `serde_json` keeps silently,
//!   is refused too); for any bytes, never a panic;
//! - partial values only ever show what the final value has;
//! - a call is final only on its end signal: a call never ended fails with 1007, whatever its
//!   text; bad input fails its own call only.

use pleach_core::assemble::{IncrementalJson, IncrementalJsonError, StreamAssembler, StreamError};
use pleach_core::{ErrorCode, Limits, ToolEvent};
use std::fmt::Write as _;

use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Map, Number, Value, json};

/// Any JSON value: every scalar kind, strings over all of Unicode, nesting a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter_map("finite", Number::from_f64)
            .prop_map(Value::Number),
        ".*".prop_map(Value::String),
        "[a-z\"\\\\/\u{0}-\u{1f}é€😀]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((".{0,6}", inner), 0..6)
                .prop_map(|members| Value::Object(members.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// How a value is written: `serde_json`'s compact form, or with whitespace between tokens and
/// characters of strings written as `\u` escapes (surrogate pairs beyond the BMP).
#[derive(Debug, Clone, Copy)]
struct Style {
    spaces: bool,
    /// Escape one character in this many (0: none).
    escape_every: usize,
}

fn style() -> impl Strategy<Value = Style> {
    (any::<bool>(), 0usize..4).prop_map(|(spaces, escape_every)| Style {
        spaces,
        escape_every,
    })
}

fn render(value: &Value, style: Style, out: &mut String) {
    match value {
        Value::String(s) => render_string(s, style, out),
        Value::Array(items) => {
            render_container(
                ['[', ']'],
                items.iter().map(|item| (None, item)),
                style,
                out,
            );
        }
        Value::Object(map) => {
            let members = map.iter().map(|(key, item)| (Some(key.as_str()), item));
            render_container(['{', '}'], members, style, out);
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// An array (members without keys) or an object.
fn render_container<'a>(
    [open, close]: [char; 2],
    members: impl Iterator<Item = (Option<&'a str>, &'a Value)>,
    style: Style,
    out: &mut String,
) {
    let gap = if style.spaces { " \n\t " } else { "" };
    out.push(open);
    for (i, (key, item)) in members.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(gap);
        if let Some(key) = key {
            render_string(key, style, out);
            out.push_str(gap);
            out.push(':');
            out.push_str(gap);
        }
        render(item, style, out);
    }
    out.push_str(gap);
    out.push(close);
}

fn render_string(s: &str, style: Style, out: &mut String) {
    if style.escape_every == 0 {
        out.push_str(&Value::from(s).to_string());
        return;
    }
    out.push('"');
    for (i, c) in s.chars().enumerate() {
        if i % style.escape_every == 0 || c < ' ' || c == '"' || c == '\\' {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    out.push('"');
}

/// `bytes` cut at the given points (any byte offsets, sorted).
fn pieces<'a>(bytes: &'a [u8], cuts: &[Index]) -> Vec<&'a [u8]> {
    let mut points: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
    points.sort_unstable();
    let mut out = Vec::new();
    let mut start = 0;
    for point in points.into_iter().chain([bytes.len()]) {
        out.push(&bytes[start..point]);
        start = point;
    }
    out
}

/// Feeds the pieces, reading the partial value after some of them; returns the final verdict and
/// the partial values read.
fn parse_in_pieces(
    pieces: &[&[u8]],
    read_after: &[bool],
) -> (Result<Value, IncrementalJsonError>, Vec<Value>) {
    let mut parser = IncrementalJson::new();
    let mut partials = Vec::new();
    for (i, piece) in pieces.iter().enumerate() {
        if let Err(error) = parser.feed(piece) {
            return (Err(error), partials);
        }
        if read_after.get(i).copied().unwrap_or(false) {
            partials.extend(parser.partial_value().cloned());
        }
    }
    (parser.finish(), partials)
}

/// Whether `partial` shows only what `whole` has: every member and item it has is a prefix of
/// the one in `whole` (strings may be shorter, containers may lack their last members).
fn is_prefix_of(partial: &Value, whole: &Value) -> bool {
    match (partial, whole) {
        (Value::String(a), Value::String(b)) => b.starts_with(a.as_str()),
        (Value::Array(a), Value::Array(b)) => {
            a.len() <= b.len() && a.iter().zip(b).all(|(x, y)| is_prefix_of(x, y))
        }
        (Value::Object(a), Value::Object(b)) => a
            .iter()
            .all(|(key, x)| b.get(key).is_some_and(|y| is_prefix_of(x, y))),
        (a, b) => a == b,
    }
}

/// The verdict pleach must give on `bytes`: `serde_json`'s, except that a duplicate key (which
/// `serde_json` accepts, keeping the last) is refused.
fn agrees_with_serde_json(bytes: &[u8], ours: &Result<Value, IncrementalJsonError>) -> bool {
    match (serde_json::from_slice::<Value>(bytes), ours) {
        (Ok(theirs), Ok(ours)) => theirs == *ours,
        (Err(_), Err(_)) | (Ok(_), Err(IncrementalJsonError::DuplicateKey { .. })) => true,
        _ => false,
    }
}

/// Bytes that are nearly JSON: its punctuation, literals' letters, digits, escapes, a multi-byte
/// character and its parts, and a few bytes that are never valid.
fn jsonish_bytes() -> impl Strategy<Value = Vec<u8>> {
    let token = prop_oneof![
        Just(&b"{"[..]),
        Just(&b"}"[..]),
        Just(&b"["[..]),
        Just(&b"]"[..]),
        Just(&b","[..]),
        Just(&b":"[..]),
        Just(&b"\""[..]),
        Just(&b"\\"[..]),
        Just(&b" "[..]),
        Just(&b"\"a\""[..]),
        Just(&b"\"a\":"[..]),
        Just(&b"true"[..]),
        Just(&b"nul"[..]),
        Just(&b"l"[..]),
        Just(&b"0"[..]),
        Just(&b"1"[..]),
        Just(&b"-"[..]),
        Just(&b"."[..]),
        Just(&b"e"[..]),
        Just(&b"+"[..]),
        Just(&b"u"[..]),
        Just(&b"d83d"[..]),
        Just(&b"\\ude00"[..]),
        Just(&b"\\n"[..]),
        Just("é".as_bytes()),
        Just(&b"\xc3"[..]),
        Just(&b"\xa9"[..]),
        Just(&b"\xff"[..]),
        Just(&b"\x01"[..]),
    ];
    prop::collection::vec(token, 0..24).prop_map(|tokens| tokens.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn any_split_of_any_json_gives_serde_jsons_value(
        value in json_value(),
        style in style(),
        cuts in prop::collection::vec(any::<Index>(), 0..24),
        read_after in prop::collection::vec(any::<bool>(), 0..25),
    ) {
        let mut text = String::new();
        render(&value, style, &mut text);
        let expected: Value = serde_json::from_str(&text).unwrap();
        let pieces = pieces(text.as_bytes(), &cuts);
        let (parsed, partials) = parse_in_pieces(&pieces, &read_after);
        prop_assert_eq!(parsed.as_ref(), Ok(&expected), "{}", text);
        for partial in &partials {
            prop_assert!(is_prefix_of(partial, &expected), "{} is not a prefix of {}", partial, expected);
        }

        // The same pieces through the assembler: deltas and text unchanged, the same value.
        let mut assembler = StreamAssembler::new();
        assembler.begin("0", "call_1", "tool").unwrap();
        let mut deltas = String::new();
        for piece in &pieces {
            if let Some(ToolEvent::Delta { delta, .. }) = assembler.push("0", piece).unwrap() {
                deltas.push_str(delta.as_str().unwrap_or_default());
            }
        }
        prop_assert_eq!(&deltas, &text);
        let call = assembler.end("0").unwrap();
        prop_assert_eq!(call.arguments(), &text);
        let calls = assembler.finish();
        prop_assert_eq!(calls[0].parsed.as_ref(), Ok(&expected));
    }

    #[test]
    fn broken_json_gets_serde_jsons_verdict(
        value in json_value(),
        style in style(),
        edit_at in any::<Index>(),
        edit in prop_oneof![
            Just(None),
            any::<u8>().prop_map(Some),
            prop::sample::select(b"{}[],:\"\\ 0-.eu".to_vec()).prop_map(Some),
        ],
        cuts in prop::collection::vec(any::<Index>(), 0..12),
    ) {
        let mut text = String::new();
        render(&value, style, &mut text);
        let mut bytes = text.into_bytes();
        let at = edit_at.index(bytes.len() + 1);
        match edit {
            // Delete one byte, or cut the text short there.
            None if at < bytes.len() => { bytes.remove(at); }
            None => bytes.truncate(at / 2),
            Some(byte) => bytes.insert(at, byte),
        }
        let pieces = pieces(&bytes, &cuts);
        let (parsed, _) = parse_in_pieces(&pieces, &[]);
        prop_assert!(
            agrees_with_serde_json(&bytes, &parsed),
            "{:?}: ours {:?}, serde_json {:?}",
            String::from_utf8_lossy(&bytes), parsed, serde_json::from_slice::<Value>(&bytes).map_err(|e| e.to_string())
        );
    }

    #[test]
    fn any_bytes_get_serde_jsons_verdict_and_never_a_panic(
        bytes in prop_oneof![jsonish_bytes(), prop::collection::vec(any::<u8>(), 0..64)],
        cuts in prop::collection::vec(any::<Index>(), 0..12),
        read_after in prop::collection::vec(any::<bool>(), 0..13),
    ) {
        let pieces = pieces(&bytes, &cuts);
        let (parsed, _) = parse_in_pieces(&pieces, &read_after);
        prop_assert!(
            agrees_with_serde_json(&bytes, &parsed),
            "{:?}: ours {:?}, serde_json {:?}",
            String::from_utf8_lossy(&bytes), parsed, serde_json::from_slice::<Value>(&bytes).map_err(|e| e.to_string())
        );
    }

    #[test]
    fn numbers_get_serde_jsons_verdict_and_value(text in "-?[0-9+.eE-]{1,24}") {
        let mut parser = IncrementalJson::new();
        let parsed = parser.feed(&text).and_then(|()| parser.finish());
        match (serde_json::from_str::<Value>(&text), parsed) {
            (Ok(theirs), Ok(ours)) => {
                prop_assert_eq!(&ours, &theirs);
                prop_assert_eq!(ours.to_string(), theirs.to_string());
            }
            (Err(_), Err(_)) => {}
            (theirs, ours) => prop_assert!(false, "{}: ours {:?}, serde_json {:?}", text, ours, theirs),
        }
    }

    #[test]
    fn escapes_get_serde_jsons_verdict(
        body in "([a\"]|\\\\[\"\\\\/bfnrtux]|\\\\u[0-9a-fA-FdD]{0,4}|\\\\u[dD][89abAB][0-9a-f]{2}|\\\\u[dD][c-fC-F][0-9a-f]{2}|[\u{0}-\u{1f}]){0,6}",
        cuts in prop::collection::vec(any::<Index>(), 0..8),
    ) {
        let text = format!("\"{body}\"");
        let pieces = pieces(text.as_bytes(), &cuts);
        let (parsed, _) = parse_in_pieces(&pieces, &[]);
        prop_assert!(agrees_with_serde_json(text.as_bytes(), &parsed), "{:?}: {:?}", text, parsed);
    }

    /// Any sequence of begin / push / end over a few keys and ids: no panic, every call begun
    /// (and not refused) is in `finish` exactly once, in order of first sight, and only ended
    /// calls are ready.
    #[test]
    fn any_sequence_of_stream_events_ends_every_call_once(
        ops in prop::collection::vec(
            (0u8..3, 0usize..4, 0usize..4, prop::sample::select(vec![
                "", "{", "}", "{\"a\":", "1", "[", "]", "\"x\"", ",", "\u{e9}", "\\", " ",
            ])),
            0..40,
        ),
    ) {
        let mut assembler = StreamAssembler::with_limits(Limits::default().max_argument_bytes(32).max_argument_depth(4));
        let mut begun: Vec<String> = Vec::new();
        let mut ended = std::collections::HashSet::new();
        for (op, key, id, fragment) in ops {
            let key = format!("k{key}");
            match op {
                0 => {
                    if assembler.begin(&key, &format!("id{id}"), "tool").is_ok()
                        && !begun.contains(&key)
                    {
                        begun.push(key);
                    }
                }
                1 => { let _ = assembler.push(&key, fragment); }
                _ => {
                    if assembler.end(&key).is_ok() {
                        ended.insert(key);
                    }
                }
            }
        }
        let calls = assembler.finish();
        prop_assert_eq!(calls.len(), begun.len());
        for (streamed, key) in calls.iter().zip(&begun) {
            prop_assert_eq!(streamed.parsed.is_ok(), ended.contains(key));
            if let Err(error) = &streamed.parsed {
                prop_assert!(matches!(error.code().as_u16(), 1005..=1007), "{:?}", error);
            }
        }
    }
}

#[test]
fn a_prefix_that_parses_is_not_final_until_the_end_signal() {
    let mut assembler = StreamAssembler::new();
    assembler.begin("0", "call_1", "delete_files").unwrap();
    assembler.push("0", r#"{"path":"build"}"#).unwrap();
    // Complete JSON, and the partial value shows it, but the call has not ended: if the stream
    // stops here the call fails with 1007 and never runs.
    assert_eq!(
        assembler.partial_value("0"),
        Some(&json!({ "path": "build" }))
    );
    let calls = assembler.finish();
    let error = calls[0].parsed.as_ref().unwrap_err();
    assert_eq!(error.code(), ErrorCode::ArgumentsIncomplete);
    assert_eq!(error.code().as_u16(), 1007);
    assert!(error.is_recoverable());
    let wire = serde_json::to_value(error).unwrap();
    assert_eq!(wire["code"], 1007);
}

#[test]
fn a_stream_cut_off_mid_value_fails_1007_and_others_still_run() {
    // The shape of Anthropic's `max_tokens` stop: a tool_use block with no content_block_stop.
    let mut assembler = StreamAssembler::new();
    assembler.begin("1", "toolu_a", "lookup").unwrap();
    for fragment in ["", "{\"q\"", ": \"hedges\"}"] {
        assembler.push("1", fragment).unwrap();
    }
    assembler.end("1").unwrap();
    assembler.begin("2", "toolu_b", "make_file").unwrap();
    for fragment in [
        "{\"filename\": \"taxes.txt\", ",
        "\"lines_of_text\": [\n\"# GUIDE\",\n\"\",\n\"Filing taxes",
    ] {
        assembler.push("2", fragment).unwrap();
    }
    let calls = assembler.finish();
    assert_eq!(calls[0].parsed, Ok(json!({ "q": "hedges" })));
    assert_eq!(
        calls[1].parsed.as_ref().unwrap_err().code(),
        ErrorCode::ArgumentsIncomplete
    );
    assert!(calls[1].call.arguments().ends_with("Filing taxes"));
}

#[test]
fn a_multi_byte_character_split_at_every_position_is_read_whole() {
    let text = "{\"city\":\"Z\u{fc}rich \u{1f600} \u{20ac}\"}";
    let bytes = text.as_bytes();
    for cut in 0..=bytes.len() {
        let mut assembler = StreamAssembler::new();
        assembler.begin("0", "c", "weather").unwrap();
        assembler.push("0", &bytes[..cut]).unwrap();
        assembler.push("0", &bytes[cut..]).unwrap();
        assert_eq!(
            assembler.end("0").unwrap().arguments(),
            text,
            "cut at {cut}"
        );
    }
}

#[test]
fn an_invalid_utf8_sequence_fails_its_call_with_1005() {
    let mut assembler = StreamAssembler::new();
    assembler.begin("0", "c0", "t").unwrap();
    assembler.begin("1", "c1", "t").unwrap();
    assembler.push("0", b"{\"s\":\"\xf0\x9f").unwrap(); // half an emoji: fine so far
    let err = assembler.push("0", b"\x41\"}").unwrap_err(); // not its continuation
    let StreamError::CallFailed { error, .. } = err else {
        panic!("{err:?}")
    };
    assert_eq!(error.code(), ErrorCode::ArgumentsNotJson);
    assert!(
        error.message().contains("invalid UTF-8 at byte 6"),
        "{}",
        error.message()
    );
    assembler.push("1", "{}").unwrap();
    assembler.end("1").unwrap();
    let calls = assembler.finish();
    assert!(calls[0].parsed.is_err());
    assert_eq!(calls[1].parsed, Ok(json!({})));
}

#[test]
fn duplicate_ids_unknown_keys_and_limits_hurt_no_other_call() {
    let mut assembler = StreamAssembler::with_limits(
        Limits::default()
            .max_argument_bytes(20)
            .max_argument_depth(2),
    );
    assembler.begin("0", "call_1", "a").unwrap();
    assert!(matches!(
        assembler.begin("1", "call_1", "b"),
        Err(StreamError::DuplicateCallId { .. })
    ));
    assert!(matches!(
        assembler.push("5", "{}"),
        Err(StreamError::UnknownKey { .. })
    ));
    assembler.begin("2", "call_2", "c").unwrap();
    let too_large = assembler.push("2", r#"{"text":"twenty-one bytes"}"#);
    assert!(
        matches!(&too_large, Err(StreamError::CallFailed { error, .. }) if error.code() == ErrorCode::ArgumentsTooLarge),
        "{too_large:?}"
    );
    assembler.begin("3", "call_3", "d").unwrap();
    let too_deep = assembler.push("3", "[[[1]]]");
    assert!(
        matches!(&too_deep, Err(StreamError::CallFailed { error, .. }) if error.code() == ErrorCode::ArgumentsTooLarge),
        "{too_deep:?}"
    );
    assembler.push("0", r#"{"n":[1]}"#).unwrap();
    assembler.end("0").unwrap();
    let calls = assembler.finish();
    let ids: Vec<&str> = calls.iter().map(|c| c.call.id()).collect();
    assert_eq!(ids, ["call_1", "call_2", "call_3"]);
    assert_eq!(calls[0].parsed, Ok(json!({ "n": [1] })));
    assert!(calls[1].parsed.is_err() && calls[2].parsed.is_err());
}

#[test]
fn a_duplicate_key_is_refused_with_its_pointer() {
    let mut assembler = StreamAssembler::new();
    assembler.begin("0", "c", "t").unwrap();
    assembler
        .push("0", r#"{"rows":[{"id":1},{"id":2,"#)
        .unwrap();
    let err = assembler.push("0", r#""id":3}]}"#).unwrap_err();
    let StreamError::CallFailed { error, .. } = err else {
        panic!("{err:?}")
    };
    assert_eq!(error.code(), ErrorCode::ArgumentsNotJson);
    assert_eq!(error.path(), Some("/rows/1"));
    assert_eq!(error.keyword(), Some("duplicateKey"));
}

#[test]
fn started_and_delta_events_serialize_as_the_spec_prints_them() {
    let mut assembler = StreamAssembler::new();
    let started = assembler.begin("0", "call_1", "search").unwrap().unwrap();
    assert_eq!(
        started.to_json(),
        r#"{"type":"tool.started","toolCall":{"id":"call_1","name":"search","args":""}}"#
    );
    let delta = assembler.push("0", r#"{"q":"#).unwrap().unwrap();
    assert_eq!(
        delta.to_json(),
        r#"{"type":"tool.delta","toolCallId":"call_1","delta":"{\"q\":"}"#
    );
}
