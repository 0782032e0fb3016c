//! The assembler's unit tests: events, failures, limits and keys, each call on its own.

use super::*;
use crate::call::ToolCall;
use crate::error::{ErrorCode, ToolError};
use crate::event::ToolEvent;
use crate::runtime::Limits;
use serde_json::json;

fn failure(result: Result<impl std::fmt::Debug, StreamError>) -> ToolError {
    match result {
        Err(StreamError::CallFailed { error, .. }) => *error,
        other => panic!("expected a failed call, got {other:?}"),
    }
}

#[test]
fn events_come_on_first_sight_and_per_fragment() {
    let mut assembler = StreamAssembler::new();
    let started = assembler.begin("0", "call_1", "search").unwrap().unwrap();
    let ToolEvent::Started { tool_call } = &started else {
        panic!("{started:?}")
    };
    assert_eq!(*tool_call, ToolCall::new("call_1", "search", ""));
    let mut fragments = Vec::new();
    for fragment in ["", "{\"q\"", ":\"x\"}"] {
        match assembler.push("0", fragment).unwrap() {
            Some(ToolEvent::Delta {
                tool_call_id,
                delta,
            }) => {
                assert_eq!(&*tool_call_id, "call_1");
                fragments.push(delta);
            }
            None => assert!(fragment.is_empty()),
            Some(other) => panic!("{other:?}"),
        }
    }
    assert_eq!(fragments, [json!("{\"q\""), json!(":\"x\"}")]);
    let call = assembler.end("0").unwrap();
    assert_eq!(call, ToolCall::new("call_1", "search", r#"{"q":"x"}"#));
    assert_eq!(assembler.partial_value("0"), Some(&json!({ "q": "x" })));
    // Ending again gives the same call; a fragment after the end is refused.
    assert_eq!(assembler.end("0").unwrap(), call);
    assert!(matches!(
        assembler.push("0", " "),
        Err(StreamError::Ended { .. })
    ));
    let calls = assembler.finish();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].call, call);
    assert_eq!(calls[0].parsed, Ok(json!({ "q": "x" })));
}

#[test]
fn a_call_that_never_ends_fails_with_1007_even_when_its_text_parses() {
    let mut assembler = StreamAssembler::new();
    assembler.begin("0", "call_1", "delete_files").unwrap();
    assembler.push("0", r#"{"path":"tmp/a"}"#).unwrap();
    assembler.begin("1", "call_2", "write_file").unwrap();
    assembler.push("1", r#"{"path":"b","text":"Dea"#).unwrap();
    assembler.begin("2", "call_3", "list").unwrap();
    assembler.end("2").unwrap();
    let calls = assembler.finish();
    let ids: Vec<&str> = calls.iter().map(|c| c.call.id()).collect();
    assert_eq!(ids, ["call_1", "call_2", "call_3"]);
    for streamed in &calls[..2] {
        let error = streamed.parsed.as_ref().unwrap_err();
        assert_eq!(error.code(), ErrorCode::ArgumentsIncomplete);
        assert!(error.is_recoverable());
        assert!(
            error.message().contains("cut off") && error.message().contains("did not run"),
            "{}",
            error.message()
        );
    }
    assert_eq!(calls[0].call.arguments(), r#"{"path":"tmp/a"}"#);
    assert_eq!(calls[2].parsed, Ok(json!({})));
}

#[test]
fn a_call_whose_json_is_cut_off_at_its_end_signal_fails_with_1005() {
    let mut assembler = StreamAssembler::new();
    assembler.begin("0", "call_1", "search").unwrap();
    assembler.push("0", r#"{"q":"ru"#).unwrap();
    let error = failure(assembler.end("0"));
    assert_eq!(error.code(), ErrorCode::ArgumentsNotJson);
    assert_eq!(failure(assembler.end("0")), error);
    let calls = assembler.finish();
    assert_eq!(calls[0].parsed, Err(error));
    assert_eq!(calls[0].call.arguments(), r#"{"q":"ru"#);
}

#[test]
fn bad_input_fails_its_own_call_and_no_other() {
    let mut assembler = StreamAssembler::with_limits(
        Limits::default()
            .max_argument_bytes(64)
            .max_argument_depth(3),
    );
    for (key, id) in [
        ("ok", "c0"),
        ("big", "c1"),
        ("deep", "c2"),
        ("bad", "c3"),
        ("dup", "c4"),
    ] {
        assembler.begin(key, id, "t").unwrap();
    }
    assembler.push("ok", "{\"a\":").unwrap();

    let big = failure(assembler.push("big", "[".to_owned() + &"1,".repeat(40)));
    assert_eq!(big.code(), ErrorCode::ArgumentsTooLarge);
    assert!(big.message().contains("limit of 64"), "{}", big.message());
    assert_eq!(assembler.push("big", "1]").unwrap(), None); // dropped

    let deep = failure(assembler.push("deep", "[[[["));
    assert_eq!(deep.code(), ErrorCode::ArgumentsTooLarge);
    assert!(deep.message().contains("3 levels"), "{}", deep.message());

    let bad = failure(assembler.push("bad", "{\"a\":\"\u{1}\"}"));
    assert_eq!(bad.code(), ErrorCode::ArgumentsNotJson);

    let dup = failure(assembler.push("dup", r#"{"a":1,"a":2}"#));
    assert_eq!(dup.code(), ErrorCode::ArgumentsNotJson);
    assert_eq!(dup.keyword(), Some("duplicateKey"));

    assembler.push("ok", "1}").unwrap();
    assembler.end("ok").unwrap();
    let calls = assembler.finish();
    assert_eq!(calls[0].parsed, Ok(json!({ "a": 1 })));
    let codes: Vec<u16> = calls[1..]
        .iter()
        .map(|c| c.parsed.as_ref().unwrap_err().code().as_u16())
        .collect();
    assert_eq!(codes, [1006, 1006, 1005, 1005]);
}

#[test]
fn the_size_limit_counts_bytes_up_to_and_including_the_limit() {
    let mut assembler = StreamAssembler::with_limits(Limits::default().max_argument_bytes(8));
    assembler.begin("0", "c0", "t").unwrap();
    assembler.push("0", r#"{"a":"#).unwrap();
    assembler.push("0", "\"\"}").unwrap(); // exactly 8 bytes
    assert!(assembler.end("0").is_ok());
    assembler.begin("1", "c1", "t").unwrap();
    assembler.push("1", "        ").unwrap();
    assert_eq!(
        failure(assembler.push("1", " ")).code(),
        ErrorCode::ArgumentsTooLarge
    );
}

#[test]
fn ids_and_keys_name_one_call_each() {
    let mut assembler = StreamAssembler::new();
    assembler.begin("0", "call_1", "a").unwrap();
    assert_eq!(assembler.begin("0", "call_1", "a").unwrap(), None);
    assert_eq!(
        assembler.begin("0", "call_2", "a").unwrap_err(),
        StreamError::KeyInUse {
            key: "0".into(),
            tool_call_id: "call_1".into()
        }
    );
    let duplicate = StreamError::DuplicateCallId {
        key: "1".into(),
        tool_call_id: "call_1".into(),
    };
    assert_eq!(assembler.begin("1", "call_1", "b").unwrap_err(), duplicate);
    // The refused call's fragments are dropped; the first call is unharmed.
    assert_eq!(assembler.push("1", "{\"x\":1}").unwrap(), None);
    assert_eq!(assembler.end("1").unwrap_err(), duplicate);
    assembler.push("0", "{}").unwrap();
    assert!(assembler.end("0").is_ok());
    assert_eq!(
        assembler.push("9", "{}").unwrap_err(),
        StreamError::UnknownKey { key: "9".into() }
    );
    assert_eq!(
        assembler.end("9").unwrap_err(),
        StreamError::UnknownKey { key: "9".into() }
    );
    let calls = assembler.finish();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].parsed, Ok(json!({})));
}

#[test]
fn utf8_split_between_fragments_is_joined_and_invalid_utf8_fails_the_call() {
    let text = "{\"s\":\"\u{e9}\u{1f600}\"}".as_bytes();
    for cut in 0..=text.len() {
        let mut assembler = StreamAssembler::new();
        assembler.begin("0", "c", "t").unwrap();
        let mut deltas = String::new();
        for piece in [&text[..cut], &text[cut..]] {
            if let Some(ToolEvent::Delta { delta, .. }) = assembler.push("0", piece).unwrap() {
                deltas.push_str(delta.as_str().unwrap());
            }
        }
        assert_eq!(deltas.as_bytes(), text, "cut at {cut}");
        assert_eq!(
            assembler.end("0").unwrap().arguments().as_bytes(),
            text,
            "{cut}"
        );
    }
    let mut assembler = StreamAssembler::new();
    assembler.begin("0", "c", "t").unwrap();
    assembler.push("0", b"{\"s\":\"\xe2\x82").unwrap();
    let error = failure(assembler.push("0", b"(\"}"));
    assert_eq!(error.code(), ErrorCode::ArgumentsNotJson);
    assert!(error.message().contains("UTF-8"), "{}", error.message());
    // A character left open by the last fragment.
    let mut assembler = StreamAssembler::new();
    assembler.begin("0", "c", "t").unwrap();
    assembler.push("0", b"\"\xe2\x82").unwrap();
    assert_eq!(
        failure(assembler.end("0")).code(),
        ErrorCode::ArgumentsNotJson
    );
}

#[test]
fn partial_values_and_completed_fields_per_call() {
    let mut assembler = StreamAssembler::new();
    assert_eq!(assembler.partial_value("0"), None);
    assembler.begin("0", "c0", "t").unwrap();
    assembler.begin("1", "c1", "t").unwrap();
    assert_eq!(assembler.partial_value("0"), None);
    assembler.push("0", r#"{"a":"x","b":[1"#).unwrap();
    assembler.push("1", r#"{"c":"#).unwrap();
    assert_eq!(
        assembler.partial_value("0"),
        Some(&json!({ "a": "x", "b": [] }))
    );
    assert_eq!(assembler.partial_value("1"), Some(&json!({})));
    assert_eq!(assembler.take_completed_fields("0"), ["/a"]);
    assert!(assembler.take_completed_fields("1").is_empty());
    assert!(assembler.take_completed_fields("nope").is_empty());
    assembler.push("0", "]}").unwrap();
    assert_eq!(assembler.take_completed_fields("0"), ["/b"]);
}

#[test]
fn failures_carry_operator_detail() {
    let mut assembler = StreamAssembler::new();
    assembler.begin("k7", "c", "t").unwrap();
    let error = failure(assembler.push("k7", "{]"));
    assert!(error.detail().unwrap().contains("`k7`"), "{error:?}");
    let wire = serde_json::to_value(&error).unwrap();
    assert!(wire.get("detail").is_none());
}
