//! Streamed tool calls: argument fragments assembled as they arrive, at a cost linear in the bytes
//! received, and a call final only on its provider's explicit end signal.
//!
//! Providers stream a call's arguments as text fragments. Parsing the whole buffer again on every
//! fragment costs time quadratic in its length; treating a buffer that happens to parse as the
//! final arguments runs tools with truncated input (`{"path":"a"}` is complete JSON even when
//! `,"recursive":true}` is still on its way). [`StreamAssembler`] avoids both: each call's
//! fragments go through an [`IncrementalJson`] parser that keeps its state between fragments, and
//! a call ends only when the provider says so.
//!
//! | the provider's stream | the assembler | event |
//! | --- | --- | --- |
//! | first sight of a call: its id and name | [`begin(key, id, name)`](StreamAssembler::begin) | `tool.started` |
//! | an arguments fragment | [`push(key, fragment)`](StreamAssembler::push) | `tool.delta` (the fragment's text) |
//! | the end signal for the call | [`end(key)`](StreamAssembler::end) | — the call may run |
//! | the end of the response | [`finish()`](StreamAssembler::finish) | — every call begun and not ended fails with 1007 |
//!
//! The key is whatever identifies a call within one response in the provider's stream: the
//! `index` of `OpenAI` Chat `tool_calls`, the `item_id` of the Responses API, the content block
//! `index` of Anthropic. Keys are unique within one assembler (one model response).
//!
//! ```
//! use pleach_core::assemble::StreamAssembler;
//! use pleach_core::{ErrorCode, ToolEvent};
//! use serde_json::json;
//!
//! let mut assembler = StreamAssembler::new();
//! let started = assembler.begin("0", "call_1", "read_file").unwrap();
//! assert!(matches!(started, Some(ToolEvent::Started { .. })));
//! assembler.push("0", r#"{"path":"#).unwrap();
//! assembler.push("0", r#""notes.md"}"#).unwrap();
//! // Complete JSON, but not final: only the provider's end signal makes it so.
//! assert_eq!(assembler.partial_value("0"), Some(&json!({ "path": "notes.md" })));
//! let call = assembler.end("0").unwrap();
//! assert_eq!(call.arguments(), r#"{"path":"notes.md"}"#);
//!
//! // A second call, cut off before its end signal (the response hit its token limit).
//! assembler.begin("1", "call_2", "write_file").unwrap();
//! assembler.push("1", r#"{"path":"out.md","text":"Dear"#).unwrap();
//!
//! let calls = assembler.finish();
//! assert_eq!(calls[0].parsed, Ok(json!({ "path": "notes.md" })));
//! let cut_off = calls[1].parsed.as_ref().unwrap_err();
//! assert_eq!(cut_off.code(), ErrorCode::ArgumentsIncomplete); // 1007: it must not run
//! ```

mod assembler;
mod error;
mod json;
#[cfg(test)]
mod tests;

pub use assembler::{StreamAssembler, StreamedCall};
pub use error::StreamError;
pub use json::{IncrementalJson, IncrementalJsonError};
