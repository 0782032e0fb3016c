//! The incremental JSON parser against serde_json: any bytes, split at a point the input picks,
//! give serde_json's verdict, and for valid JSON serde_json's value. Never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pleach_core::assemble::IncrementalJson;

fuzz_target!(|data: &[u8]| {
    let Some((&split, text)) = data.split_first() else {
        return;
    };
    let at = usize::from(split).min(text.len());
    let mut parser = IncrementalJson::new();
    let fed = parser
        .feed(&text[..at])
        .and_then(|()| parser.feed(&text[at..]));
    let _ = parser.partial_value();
    let ours = fed.and_then(|()| parser.finish());
    let theirs = serde_json::from_slice::<serde_json::Value>(text);
    match (&ours, &theirs) {
        (Ok(a), Ok(b)) => assert_eq!(a, b),
        (Err(_), Err(_)) => {}
        // Duplicate keys: pleach refuses what serde_json keeps (the last one wins there).
        (Err(pleach_core::assemble::IncrementalJsonError::DuplicateKey { .. }), Ok(_)) => {}
        _ => panic!("verdicts differ: pleach {ours:?}, serde_json {theirs:?}"),
    }
});
