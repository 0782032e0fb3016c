//! The wire events of a tool call's lifecycle: `tool.started`, `tool.delta`, `tool.completed`,
//! `tool.failed`, serialized exactly as the TypeScript spec prints them, and their NDJSON and SSE
//! forms.
//!
//! `docs/events.md` is the contract: payloads, ordering rules, examples.
//!
//! ```
//! use pleach_core::{ToolCall, event::{self, ToolEvent}};
//!
//! let (sender, mut stream) = event::channel();
//! let call = ToolCall::new("c1", "add", r#"{"a":1,"b":2}"#);
//! sender.send(ToolEvent::Started { tool_call: call.clone() });
//! sender.send(ToolEvent::Completed { tool_call: call, result: 3.into(), content: Vec::new() });
//! let lines: String = stream.drain().iter().map(ToolEvent::to_ndjson).collect();
//! assert_eq!(
//!     lines,
//!     concat!(
//!         r#"{"type":"tool.started","toolCall":{"id":"c1","name":"add","args":{"a":1,"b":2}}}"#, "\n",
//!         r#"{"type":"tool.completed","toolCall":{"id":"c1","name":"add","args":{"a":1,"b":2}},"result":3}"#, "\n",
//!     )
//! );
//! ```
//!
//! | file | owns |
//! | --- | --- |
//! | `mod.rs` | [`ToolEvent`]: the events and their text forms |
//! | `wire.rs` | the wire format: the JSON each event is written as |
//! | `channel.rs` | [`channel`], [`EventSender`], [`EventStream`]: how events reach a reader |
//! | `request.rs` | [`ClientRequest`]: a running tool's request its host answers |

mod channel;
mod request;
mod wire;

pub use channel::{EventSender, EventStream, channel};
pub use request::{Answered, ClientRequest};

use std::sync::Arc;

use serde_json::Value;

use crate::call::ToolCall;
use crate::client::{Elicitation, Elicited, LogMessage, Progress, Sampled, SamplingRequest};
use crate::content::ContentBlock;
use crate::error::ToolError;

/// One event of a tool call's lifecycle.
///
/// Every call that reaches a session produces one `Started`, any number of `Delta`s, then exactly
/// one of `Completed` / `Failed`, and nothing after that.
///
/// ```
/// use pleach_core::{ToolCall, event::ToolEvent};
///
/// let call = ToolCall::new("call_1", "search_corpus", r#"{"query":"rust"}"#);
/// let started = ToolEvent::Started { tool_call: call.clone() };
/// assert_eq!(
///     started.to_json(),
///     r#"{"type":"tool.started","toolCall":{"id":"call_1","name":"search_corpus","args":{"query":"rust"}}}"#
/// );
/// let done = ToolEvent::Completed { tool_call: call, result: serde_json::json!(["a"]), content: Vec::new() };
/// assert_eq!(done.event_type(), "tool.completed");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ToolEvent {
    /// The call was seen (its id and name known).
    Started {
        /// The call.
        tool_call: ToolCall,
    },
    /// A fragment: streamed arguments text, or progress a tool reports through its context.
    Delta {
        /// The call's id.
        tool_call_id: Arc<str>,
        /// The fragment (a string for argument text; any JSON for tool progress).
        delta: Value,
    },
    /// The call finished with a result.
    Completed {
        /// The call.
        tool_call: ToolCall,
        /// The tool's structured result (`null` when it returned content blocks alone).
        result: Value,
        /// The tool's content blocks (images, audio, files, text), if any; their bytes are
        /// shared, not copied. On the wire each media block shows its type, MIME type and size
        /// (its bytes only through [`to_json_including_data`](Self::to_json_including_data)).
        content: Vec<ContentBlock>,
    },
    /// The call failed.
    Failed {
        /// The call.
        tool_call: ToolCall,
        /// Why.
        error: ToolError,
    },
    /// `interrupt.requested`: a detector flagged a `standard`-tier call; it waits for the host's
    /// decision ([`Session::resolve`](crate::Session::resolve)). See `docs/safety.md`.
    InterruptRequested {
        /// The waiting call, its findings and the ground-truth panel.
        interrupt: Arc<crate::safety::Interrupt>,
    },
    /// `interrupt.resolved`: the host answered an interrupt (the call then runs, or fails with
    /// 1013 for a rejection).
    InterruptResolved {
        /// The call's id.
        tool_call_id: Arc<str>,
        /// The interrupt's id.
        interrupt_id: String,
        /// `accept`, `edit` or `reject`.
        action: &'static str,
    },
    /// `safety.probe`: a detector flagged an `advisory`-tier call; the call runs anyway.
    SafetyProbe {
        /// The call.
        tool_call: ToolCall,
        /// What was flagged.
        findings: Vec<crate::safety::Finding>,
    },
    /// `tools.loaded`: a call of the agent loop's search tool found deferred tools
    /// ([`search::ToolSearch`](crate::search::ToolSearch)); they are sent to the model from the
    /// next step on. After the search call's `tool.completed`; only tools not loaded before.
    ToolsLoaded {
        /// The search call's id.
        tool_call_id: Arc<str>,
        /// The tools loaded, by name, sorted.
        tools: Vec<String>,
    },
    /// `tool.log`: a log message of a running tool
    /// ([`ToolContext::log`](crate::ToolContext::log)).
    Log {
        /// The call's id.
        tool_call_id: Arc<str>,
        /// The message: level, logger name, data.
        message: LogMessage,
    },
    /// `tool.progress`: how far a running tool has got, in its own numbers
    /// ([`ToolContext::report_progress`](crate::ToolContext::report_progress)).
    Progress {
        /// The call's id.
        tool_call_id: Arc<str>,
        /// The report.
        progress: Progress,
    },
    /// `elicitation.requested`: a running tool asks the user a question
    /// ([`ToolContext::elicit`](crate::ToolContext::elicit)); the host answers it with
    /// [`ClientRequest::answer`] within the runtime's approval timeout.
    ElicitationRequested {
        /// The question and where its answer goes.
        request: Arc<ClientRequest<Elicitation, Elicited<Value>>>,
    },
    /// `sampling.requested`: a running tool asks for a completion of the client's model
    /// ([`ToolContext::sample`](crate::ToolContext::sample)); the host answers it with
    /// [`ClientRequest::answer`] within the runtime's approval timeout.
    SamplingRequested {
        /// The request and where its answer goes.
        request: Arc<ClientRequest<SamplingRequest, Sampled>>,
    },
}

impl ToolEvent {
    /// The dotted event name: `tool.started`, `tool.delta`, `tool.completed` or `tool.failed`.
    ///
    /// ```
    /// use pleach_core::{ToolCall, ToolError, ToolEvent};
    ///
    /// let failed = ToolEvent::Failed {
    ///     tool_call: ToolCall::new("c1", "add", "{}"),
    ///     error: ToolError::failed("no"),
    /// };
    /// assert_eq!(failed.event_type(), "tool.failed");
    /// ```
    pub fn event_type(&self) -> &'static str {
        match self {
            ToolEvent::Started { .. } => "tool.started",
            ToolEvent::Delta { .. } => "tool.delta",
            ToolEvent::Completed { .. } => "tool.completed",
            ToolEvent::Failed { .. } => "tool.failed",
            ToolEvent::InterruptRequested { .. } => "interrupt.requested",
            ToolEvent::InterruptResolved { .. } => "interrupt.resolved",
            ToolEvent::SafetyProbe { .. } => "safety.probe",
            ToolEvent::ToolsLoaded { .. } => "tools.loaded",
            ToolEvent::Log { .. } => "tool.log",
            ToolEvent::Progress { .. } => "tool.progress",
            ToolEvent::ElicitationRequested { .. } => "elicitation.requested",
            ToolEvent::SamplingRequested { .. } => "sampling.requested",
        }
    }

    /// The id of the call the event is about.
    ///
    /// ```
    /// use pleach_core::ToolEvent;
    ///
    /// let delta = ToolEvent::Delta { tool_call_id: "c7".into(), delta: "{\"a\":".into() };
    /// assert_eq!(delta.tool_call_id(), "c7");
    /// ```
    pub fn tool_call_id(&self) -> &str {
        match self {
            ToolEvent::Started { tool_call }
            | ToolEvent::Completed { tool_call, .. }
            | ToolEvent::Failed { tool_call, .. }
            | ToolEvent::SafetyProbe { tool_call, .. } => tool_call.id(),
            ToolEvent::Delta { tool_call_id, .. }
            | ToolEvent::InterruptResolved { tool_call_id, .. }
            | ToolEvent::ToolsLoaded { tool_call_id, .. }
            | ToolEvent::Log { tool_call_id, .. }
            | ToolEvent::Progress { tool_call_id, .. } => tool_call_id,
            ToolEvent::InterruptRequested { interrupt } => interrupt.tool_call.id(),
            ToolEvent::ElicitationRequested { request } => request.tool_call_id(),
            ToolEvent::SamplingRequested { request } => request.tool_call_id(),
        }
    }

    /// Whether this is the call's last event (`tool.completed` or `tool.failed`).
    ///
    /// ```
    /// use pleach_core::{ToolCall, ToolEvent};
    ///
    /// let call = ToolCall::new("c1", "add", "{}");
    /// assert!(!ToolEvent::Started { tool_call: call.clone() }.is_terminal());
    /// assert!(ToolEvent::Completed { tool_call: call, result: 3.into(), content: Vec::new() }.is_terminal());
    /// ```
    pub fn is_terminal(&self) -> bool {
        matches!(self, ToolEvent::Completed { .. } | ToolEvent::Failed { .. })
    }

    /// The event as one line of JSON (no trailing newline). No line break of any kind is written
    /// raw: U+2028, U+2029 and U+0085 become `\u` escapes, like the control characters.
    ///
    /// ```
    /// use pleach_core::ToolEvent;
    ///
    /// let delta = ToolEvent::Delta { tool_call_id: "c1".into(), delta: "{\"a\":".into() };
    /// assert_eq!(delta.to_json(), r#"{"type":"tool.delta","toolCallId":"c1","delta":"{\"a\":"}"#);
    /// ```
    pub fn to_json(&self) -> String {
        // Serializing these shapes cannot fail: string keys, and values already JSON.
        wire::escape_line_separators(serde_json::to_string(self).unwrap_or_default())
    }

    /// [`to_json`](Self::to_json) with the bytes of a `tool.completed`'s media blocks, in base64
    /// (`data`; a resource's `blob` or `text`): what a consumer that shows or stores them reads.
    /// `to_json` gives each one's type, MIME type and size alone.
    ///
    /// ```
    /// use pleach_core::{ContentBlock, ToolCall, ToolEvent};
    ///
    /// let done = ToolEvent::Completed {
    ///     tool_call: ToolCall::new("c1", "shot", "{}"),
    ///     result: serde_json::Value::Null,
    ///     content: vec![ContentBlock::image(vec![1u8, 2, 3], "image/png")],
    /// };
    /// let line: serde_json::Value = serde_json::from_str(&done.to_json()).unwrap();
    /// assert_eq!(line["content"], serde_json::json!([{ "type": "image", "mimeType": "image/png", "size": 3 }]));
    /// assert!(done.to_json_including_data().contains(r#""data":"AQID""#));
    /// ```
    pub fn to_json_including_data(&self) -> String {
        let event = wire::WireEvent {
            event: self,
            data: true,
        };
        wire::escape_line_separators(serde_json::to_string(&event).unwrap_or_default())
    }

    /// The event as an NDJSON line (JSON and `\n`).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use pleach_core::event::ToolEvent;
    /// let e = ToolEvent::Delta { tool_call_id: Arc::from("call_1"), delta: "{\"q".into() };
    /// assert_eq!(e.to_ndjson(), "{\"type\":\"tool.delta\",\"toolCallId\":\"call_1\",\"delta\":\"{\\\"q\"}\n");
    /// ```
    pub fn to_ndjson(&self) -> String {
        let mut line = self.to_json();
        line.push('\n');
        line
    }

    /// The event as a Server-Sent Events message: `event: <type>`, `data: <json>`, blank line.
    ///
    /// ```
    /// # use pleach_core::{ToolCall, event::ToolEvent};
    /// let call = ToolCall::new("c1", "ping", "{}");
    /// let sse = ToolEvent::Started { tool_call: call }.to_sse();
    /// assert_eq!(sse, "event: tool.started\ndata: {\"type\":\"tool.started\",\"toolCall\":{\"id\":\"c1\",\"name\":\"ping\",\"args\":{}}}\n\n");
    /// ```
    pub fn to_sse(&self) -> String {
        format!("event: {}\ndata: {}\n\n", self.event_type(), self.to_json())
    }
}

#[cfg(test)]
mod tests {
    use super::wire::READABLE_DEPTH;
    use super::*;
    use crate::error::ErrorCode;
    use serde_json::json;

    fn call(arguments: &str) -> ToolCall {
        ToolCall::new("call_1", "search_corpus", arguments)
    }

    #[test]
    fn pretty_printed_arguments_stay_on_one_ndjson_line_and_one_sse_field() {
        let pretty = "{\n  \"query\": \"rust\",\r\n  \"tags\": [\n    \"a b\"\n  ]\n}";
        for event in [
            ToolEvent::Started {
                tool_call: call(pretty),
            },
            ToolEvent::Completed {
                tool_call: call(pretty),
                result: json!("line one\nline two"),
                content: Vec::new(),
            },
        ] {
            let line = event.to_ndjson();
            assert_eq!(line.matches('\n').count(), 1, "{line:?}");
            assert!(line.ends_with('\n'));
            let value: Value = serde_json::from_str(&line).unwrap();
            assert_eq!(
                value["toolCall"]["args"],
                json!({ "query": "rust", "tags": ["a b"] })
            );
            let sse = event.to_sse();
            let data: Vec<&str> = sse.lines().filter(|l| l.starts_with("data:")).collect();
            assert_eq!(data.len(), 1, "{sse:?}");
            assert!(!sse.contains('\r'), "{sse:?}");
        }
        // Text that is not JSON is sent as the string it was, escapes and all.
        let bad = ToolEvent::Started {
            tool_call: call("{\n oops"),
        };
        assert_eq!(bad.to_ndjson().matches('\n').count(), 1);
    }

    #[test]
    fn unicode_line_breaks_are_escaped_so_every_line_reader_keeps_an_event_whole() {
        // As in the result, the id and the arguments' strings; not JSON whitespace, so arguments
        // holding one between tokens are no JSON and go as text.
        let arguments = "{\"note\":\"a\u{2028}b\u{2029}c\u{85}d \u{e9}\"}";
        for event in [
            ToolEvent::Completed {
                tool_call: ToolCall::new("c\u{2028}1", "t", arguments),
                result: json!({ "text": "one\u{2029}two\u{85}three \u{1f600}" }),
                content: Vec::new(),
            },
            ToolEvent::Started {
                tool_call: ToolCall::new("c1", "t", "{\"a\":\u{2028}1}"),
            },
        ] {
            let line = event.to_ndjson();
            // What Python's `str.splitlines` and other Unicode-aware readers split at.
            let breaks = ['\n', '\r', '\u{b}', '\u{c}', '\u{1c}', '\u{1d}', '\u{1e}'];
            let pieces: Vec<&str> = line
                .split(|c| breaks.contains(&c) || ['\u{85}', '\u{2028}', '\u{2029}'].contains(&c))
                .collect();
            assert_eq!(pieces, [line.trim_end_matches('\n'), ""], "{line:?}");
            // The same JSON value: the escapes read back as the characters.
            let value: Value = serde_json::from_str(&line).unwrap();
            let sse = event.to_sse();
            assert_eq!(sse.lines().count(), 3, "{sse:?}");
            if let ToolEvent::Completed { .. } = event {
                assert_eq!(value["toolCall"]["id"], "c\u{2028}1");
                assert_eq!(
                    value["toolCall"]["args"]["note"],
                    "a\u{2028}b\u{2029}c\u{85}d \u{e9}"
                );
                assert_eq!(
                    value["result"]["text"],
                    "one\u{2029}two\u{85}three \u{1f600}"
                );
                // Other non-ASCII text stays UTF-8.
                assert!(
                    line.contains("\u{e9}") && line.contains("\u{1f600}"),
                    "{line:?}"
                );
            } else {
                assert_eq!(value["toolCall"]["args"], "{\"a\":\u{2028}1}");
            }
        }
    }

    #[test]
    fn shapes_match_the_spec() {
        let completed = ToolEvent::Completed {
            tool_call: call(r#"{ "query" : "rust" }"#),
            result: json!({ "results": [] }),
            content: Vec::new(),
        };
        let value: Value = serde_json::from_str(&completed.to_json()).unwrap();
        assert_eq!(
            value,
            json!({
                "type": "tool.completed",
                "toolCall": { "id": "call_1", "name": "search_corpus", "args": { "query": "rust" } },
                "result": { "results": [] }
            })
        );
        let failed = ToolEvent::Failed {
            tool_call: call("{}"),
            error: ToolError::new(ErrorCode::UnknownTool, "no tool named `x`"),
        };
        let value: Value = serde_json::from_str(&failed.to_json()).unwrap();
        assert_eq!(value["error"]["code"], 1003);
        assert_eq!(value["error"]["_recoverable"], true);
    }

    #[test]
    fn arguments_that_are_not_json_stay_a_string() {
        let started = ToolEvent::Started {
            tool_call: call(r#"{"query": "ru"#),
        };
        let value: Value = serde_json::from_str(&started.to_json()).unwrap();
        assert_eq!(value["toolCall"]["args"], json!(r#"{"query": "ru"#));
    }

    #[test]
    fn arguments_json_readers_refuse_are_written_as_text() {
        // Each passes JSON's grammar (a `RawValue` takes it) and `serde_json` refuses it as a
        // value: in place, it would make the whole event line unreadable.
        for arguments in [
            r#"{"x":"\ud800"}"#,
            r#"{"x":"\udc00\ud800"}"#,
            r#"{"\ud800":1}"#,
            r#"{"x":1e400}"#,
            r#"{"x":[-1e400]}"#,
        ] {
            let line = ToolEvent::Started {
                tool_call: call(arguments),
            }
            .to_json();
            let value: Value = serde_json::from_str(&line).unwrap();
            assert_eq!(value["toolCall"]["args"], json!(arguments), "{line}");
        }
        // What a reader takes stays a value: paired surrogates, escapes, big and small numbers.
        let readable = r#"{"x":"\ud83d\ude00\u0000","n":[1e308,-1e-400,18446744073709551616,-0]}"#;
        let line = ToolEvent::Started {
            tool_call: call(readable),
        }
        .to_json();
        let value: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(value["toolCall"]["args"]["x"], json!("\u{1f600}\u{0}"));
    }

    #[test]
    fn arguments_too_deep_for_readers_are_written_as_text() {
        let at = |depth: usize| format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
        for (depth, as_text) in [
            (READABLE_DEPTH, false),
            (READABLE_DEPTH + 1, true),
            (500, true),
        ] {
            let call = ToolCall::new("c1", "t", at(depth));
            let line = ToolEvent::Started { tool_call: call }.to_json();
            // Every event line reads back with serde_json's default limits.
            let value: Value = serde_json::from_str(&line).unwrap();
            assert_eq!(
                value["toolCall"]["args"].is_string(),
                as_text,
                "depth {depth}"
            );
            if as_text {
                assert_eq!(value["toolCall"]["args"], json!(at(depth)));
            }
        }
    }
}
