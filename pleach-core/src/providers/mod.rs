//! Providers: tool definitions serialized for each LLM API, their tool calls (whole and streamed)
//! read into canonical calls, and results written back in their message formats.
//!
//! Each model API's wire format is a unit struct implementing [`ProviderFormat`]: tool
//! definitions (plain and strict, one tool or a registry), the request's `tools` value, calls read
//! out of a whole response, results and the conversation written back, and a fresh stream parser.
//! Pick one at run time as a `&dyn ProviderFormat`.
//!
//! | module | format | definitions | whole responses | streams | write-back |
//! | --- | --- | --- | --- | --- | --- |
//! | [`openai_chat`] | [`OpenAiChat`](openai_chat::OpenAiChat) | `{"type":"function","function":{…}}` | `choices[0].message.tool_calls` | [`ChatStreamParser`](openai_chat::ChatStreamParser) | `role: tool` |
//! | [`openai_responses`] | [`OpenAiResponses`](openai_responses::OpenAiResponses) | `{"type":"function", name, …}` | `output[]` `function_call` items | [`ResponsesStreamParser`](openai_responses::ResponsesStreamParser) | `function_call_output` |
//! | [`anthropic`] | [`Anthropic`](anthropic::Anthropic) | `{name, description, input_schema}` | `content[]` `tool_use` blocks | [`MessagesStreamParser`](anthropic::MessagesStreamParser) | `tool_result` blocks |
//! | [`gemini`] | [`Gemini`](gemini::Gemini), [`GeminiJsonSchema`](gemini::GeminiJsonSchema) | `functionDeclarations` | `parts[].functionCall` | [`GeminiStreamParser`](gemini::GeminiStreamParser) | `functionResponse` parts |
//! | [`mcp_tools`] | — (not a model API: free functions) | `{name, description, inputSchema, …}` | — | — | `CallToolResult` |
//!
//! [`profile`] holds the schema profiles (OpenAI strict, Gemini, Anthropic, Anthropic strict, MCP) as checked
//! transforms with path-level problems, and [`assert_registry_fits`] for tests.
//!
//! ## Streams
//!
//! A stream parser reads one event's data at a time and emits [`ProviderEvent`]s: a call starts
//! (`CallStarted`, with the provider's key, the call id and the tool's name), its arguments arrive
//! as text fragments (`ArgumentsDelta`), and it ends on the provider's own end signal
//! (`CallEnded`) — or fails (`CallFailed`) with a [`ToolError`] saying why. A call never ends
//! because a prefix of its arguments happened to parse. [`Decoder`] puts a framing
//! ([`sse::SseFramer`] or [`sse::JsonLines`]) in front of a parser: bytes in, events out.
//!
//! Per key, the events are: at most one `CallStarted`, any `ArgumentsDelta`s (and, from Gemini,
//! a `CallSignature` carrying the provider's signature for the call), then exactly one of
//! `CallEnded` / `CallFailed`, and nothing after (a `CallFailed` can also come for a key that never
//! started: its id and name are then unknown). A key is used again only after its call ended.
//!
//! ```
//! use pleach_core::providers::{anthropic::MessagesStreamParser, Decoder, ProviderEvent};
//!
//! let body = concat!(
//!     "event: content_block_start\n",
//!     r#"data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}"#, "\n\n",
//!     "event: content_block_delta\n",
//!     r#"data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Par"}}"#, "\n\n",
//!     "event: content_block_delta\n",
//!     r#"data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"is\"}"}}"#, "\n\n",
//!     "event: content_block_stop\n",
//!     r#"data: {"type":"content_block_stop","index":0}"#, "\n\n",
//! );
//! let mut decoder = Decoder::sse(MessagesStreamParser::new());
//! let mut events = Vec::new();
//! for chunk in body.as_bytes().chunks(7) {
//!     events.extend(decoder.feed(chunk));
//! }
//! events.extend(decoder.finish());
//!
//! let arguments: String = events
//!     .iter()
//!     .filter_map(|e| match e {
//!         ProviderEvent::ArgumentsDelta { fragment, .. } => Some(fragment.as_str()),
//!         _ => None,
//!     })
//!     .collect();
//! assert_eq!(arguments, r#"{"city": "Paris"}"#);
//! assert!(matches!(&events[0], ProviderEvent::CallStarted { id, name, .. } if id == "toolu_1" && name == "get_weather"));
//! assert!(matches!(events.last(), Some(ProviderEvent::CallEnded { .. })));
//! ```
//!
//! `docs/providers.md` lists each provider's end signals, the quirks handled and the recorded
//! streams that prove them.

use std::fmt;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::call::ToolCall;
use crate::conversation::Message;
use crate::error::ToolError;
use crate::tool::ToolDefinition;

pub mod anthropic;
mod attachments;
mod body;
mod calls;
mod format;
pub mod gemini;
pub mod mcp_tools;
pub mod openai_chat;
pub mod openai_responses;
pub mod profile;
pub mod sse;

pub use body::{JsonBody, json_bytes};
pub use format::ProviderFormat;
pub use profile::{Profile, ProfileError, ProfileProblem, assert_registry_fits, check_registry};

use calls::CallTable;
use sse::{FrameError, JsonLines, SseFramer};

/// What a stream parser reads out of a provider's events, the same for every provider.
///
/// `key` is the provider's own handle on a call while it streams: the tool call's `index` (OpenAI
/// Chat; `"<choice>/<index>"` for choices after the first), the output item's id (Responses), the
/// content block's index (Anthropic), a counter (Gemini).
///
/// ```
/// use pleach_core::providers::ProviderEvent;
///
/// let e = ProviderEvent::ArgumentsDelta { key: "0".into(), fragment: "{\"ci".into() };
/// assert_eq!(e.key(), Some("0"));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ProviderEvent {
    /// A call began: its id (the one results are written back under) and the tool's name.
    CallStarted {
        /// The provider's key for the call.
        key: String,
        /// The call id.
        id: String,
        /// The tool's name.
        name: String,
    },
    /// The provider's opaque signature for a started call (Gemini's `thoughtSignature`), to be
    /// sent back with the call: see [`ToolCall::signature`](crate::ToolCall::signature).
    CallSignature {
        /// The provider's key for the call.
        key: String,
        /// The signature, as the provider sent it.
        signature: String,
    },
    /// A fragment of a call's arguments text; the fragments of a key, concatenated, are the
    /// arguments (nothing at all means `{}`).
    ArgumentsDelta {
        /// The provider's key for the call.
        key: String,
        /// The text to append.
        fragment: String,
    },
    /// The provider's end signal for the call: its arguments are complete.
    CallEnded {
        /// The provider's key for the call.
        key: String,
    },
    /// The call cannot be run: the stream broke for it (see [`StreamProblem`]). Its id and name
    /// are given when they were known.
    CallFailed {
        /// The provider's key for the call.
        key: String,
        /// The call id, if the call had started.
        id: Option<String>,
        /// The tool's name, if the call had started.
        name: Option<String>,
        /// What went wrong, for code.
        problem: StreamProblem,
        /// What went wrong, for the model and the operator: 1007 when the arguments were cut
        /// short, 1005 when what arrived cannot be trusted as the call's arguments.
        error: ToolError,
    },
    /// Assistant text (not reasoning).
    Text {
        /// The text to append.
        delta: String,
    },
    /// The provider's finish or stop reason (`tool_calls`, `tool_use`, `STOP`, `completed`, …).
    Finished {
        /// The reason as the provider spells it.
        reason: Option<String>,
    },
    /// Token usage, as reported.
    Usage {
        /// Prompt tokens.
        input_tokens: Option<u64>,
        /// Completion tokens.
        output_tokens: Option<u64>,
    },
    /// A problem not tied to one call: an event that could not be read, or an error the provider
    /// reported. Open calls fail with it too (a `CallFailed` each).
    StreamError {
        /// What kind of problem.
        problem: StreamProblem,
        /// What happened.
        message: String,
    },
}

impl ProviderEvent {
    /// The key of the call the event is about, if it is about one.
    ///
    /// ```
    /// use pleach_core::providers::ProviderEvent;
    /// assert_eq!(ProviderEvent::Text { delta: "hi".into() }.key(), None);
    /// ```
    pub fn key(&self) -> Option<&str> {
        match self {
            ProviderEvent::CallStarted { key, .. }
            | ProviderEvent::CallSignature { key, .. }
            | ProviderEvent::ArgumentsDelta { key, .. }
            | ProviderEvent::CallEnded { key }
            | ProviderEvent::CallFailed { key, .. } => Some(key),
            _ => None,
        }
    }
}

/// Why a call failed while streaming, or what a [`ProviderEvent::StreamError`] is about.
///
/// ```
/// use pleach_core::providers::StreamProblem;
/// use pleach_core::ErrorCode;
/// assert_eq!(StreamProblem::Incomplete.error_code(), ErrorCode::ArgumentsIncomplete);
/// assert_eq!(StreamProblem::DuplicateId.error_code(), ErrorCode::ArgumentsNotJson);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StreamProblem {
    /// The stream ended, or the model stopped (token limit, content filter), before the call's
    /// end signal. 1007.
    Incomplete,
    /// The provider reported an error in the stream before the call's end signal. 1007.
    ProviderError,
    /// An event could not be read (not JSON, not UTF-8, too large) while the call was open: a
    /// fragment of it may be lost. 1005.
    UnreadableEvent,
    /// The call id was already used by another call of the stream. 1005.
    DuplicateId,
    /// Fragments or an end for a call never started, or a start without an id or a name. 1005.
    UnknownCall,
    /// A second, different id or name for an open call. 1005.
    ConflictingCall,
    /// The provider's final arguments differ from the fragments it streamed. 1005.
    ArgumentsMismatch,
    /// Gemini's path-addressed partial arguments could not be placed. 1005.
    InvalidPartialArguments,
}

impl StreamProblem {
    /// The error code of a call that failed for this reason.
    ///
    /// ```
    /// use pleach_core::providers::StreamProblem;
    /// assert_eq!(StreamProblem::UnreadableEvent.error_code().as_u16(), 1005);
    /// ```
    pub fn error_code(self) -> crate::ErrorCode {
        match self {
            StreamProblem::Incomplete | StreamProblem::ProviderError => {
                crate::ErrorCode::ArgumentsIncomplete
            }
            _ => crate::ErrorCode::ArgumentsNotJson,
        }
    }
}

impl fmt::Display for StreamProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StreamProblem::Incomplete => "incomplete",
            StreamProblem::ProviderError => "provider error",
            StreamProblem::UnreadableEvent => "unreadable event",
            StreamProblem::DuplicateId => "duplicate call id",
            StreamProblem::UnknownCall => "unknown call",
            StreamProblem::ConflictingCall => "conflicting call",
            StreamProblem::ArgumentsMismatch => "arguments mismatch",
            StreamProblem::InvalidPartialArguments => "invalid partial arguments",
        })
    }
}

/// A provider's stream parser: one event's data in, canonical events out.
///
/// ```
/// use pleach_core::providers::{openai_chat::ChatStreamParser, ProviderEvent, StreamParser};
///
/// let mut parser = ChatStreamParser::new();
/// let events = parser.feed(r#"{"choices":[{"index":0,"delta":{"content":"Hi"}}]}"#);
/// assert_eq!(events, [ProviderEvent::Text { delta: "Hi".into() }]);
/// assert!(parser.feed(r#"{"type":"what is this"}"#).is_empty());
/// assert!(parser.finish().is_empty());
/// ```
pub trait StreamParser {
    /// Reads one event's data (an SSE event's `data`, or one JSON line). Data that is not JSON
    /// is a [`ProviderEvent::StreamError`] and fails the open calls; the stream goes on.
    ///
    /// ```
    /// use pleach_core::providers::{ProviderEvent, StreamParser, openai_chat::ChatStreamParser};
    /// let mut parser = ChatStreamParser::new();
    /// let events = parser.feed(r#"{"choices":[{"index":0,"delta":{"content":"Hi"}}]}"#);
    /// assert_eq!(events, [ProviderEvent::Text { delta: "Hi".into() }]);
    /// ```
    fn feed(&mut self, data: &str) -> Vec<ProviderEvent>;

    /// An event was lost before it reached the parser (not UTF-8, too large): the open calls
    /// fail, since a fragment of theirs may be in it.
    ///
    /// ```
    /// use pleach_core::providers::{ProviderEvent, StreamParser, openai_chat::ChatStreamParser};
    /// let mut parser = ChatStreamParser::new();
    /// parser.feed(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":"{"}}]}}]}"#);
    /// let events = parser.unreadable("an event that is not UTF-8");
    /// assert!(events.iter().any(|e| matches!(e, ProviderEvent::CallFailed { .. })));
    /// ```
    fn unreadable(&mut self, reason: &str) -> Vec<ProviderEvent>;

    /// The stream ended: calls still open fail as incomplete (1007).
    ///
    /// ```
    /// use pleach_core::providers::{ProviderEvent, StreamParser, openai_chat::ChatStreamParser};
    /// let mut parser = ChatStreamParser::new();
    /// parser.feed(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":"{"}}]}}]}"#);
    /// // The stream ended with the call still open: it failed as incomplete.
    /// assert!(parser.finish().iter().any(|e| matches!(e, ProviderEvent::CallFailed { .. })));
    /// ```
    fn finish(&mut self) -> Vec<ProviderEvent>;

    /// How many events (or parts) the parser skipped because it does not know their type.
    ///
    /// ```
    /// use pleach_core::providers::{StreamParser, anthropic::MessagesStreamParser};
    /// let mut parser = MessagesStreamParser::new();
    /// assert!(parser.feed(r#"{"type":"a_future_event"}"#).is_empty());
    /// assert_eq!(parser.skipped(), 1);
    /// ```
    fn skipped(&self) -> usize;
}

/// A boxed parser is a parser: pick the provider at run time with one [`Decoder`] type.
///
/// ```
/// use pleach_core::providers::{anthropic::Anthropic, openai_chat::OpenAiChat, Decoder, ProviderFormat};
///
/// let anthropic_stream = false;
/// let format: &dyn ProviderFormat = if anthropic_stream { &Anthropic } else { &OpenAiChat };
/// let mut decoder = Decoder::json_lines(format.stream_parser());
/// assert!(decoder.finish().is_empty());
/// ```
impl<P: StreamParser + ?Sized> StreamParser for Box<P> {
    fn feed(&mut self, data: &str) -> Vec<ProviderEvent> {
        (**self).feed(data)
    }

    fn unreadable(&mut self, reason: &str) -> Vec<ProviderEvent> {
        (**self).unreadable(reason)
    }

    fn finish(&mut self) -> Vec<ProviderEvent> {
        (**self).finish()
    }

    fn skipped(&self) -> usize {
        (**self).skipped()
    }
}

/// A framing and a parser: a provider's response bytes in, [`ProviderEvent`]s out.
///
/// ```
/// use pleach_core::providers::{openai_chat::ChatStreamParser, Decoder, ProviderEvent};
///
/// let mut decoder = Decoder::sse(ChatStreamParser::new());
/// let mut events = decoder.feed(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"ping\",\"arguments\":\"{}\"}}]}}]}\n\n");
/// events.extend(decoder.feed(b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n"));
/// events.extend(decoder.finish());
/// assert!(matches!(&events[2], ProviderEvent::CallEnded { key } if key == "0"));
/// ```
#[derive(Debug)]
pub struct Decoder<P> {
    framing: Framing,
    parser: P,
}

#[derive(Debug)]
enum Framing {
    Sse(SseFramer),
    JsonLines(JsonLines),
}

impl<P: StreamParser> Decoder<P> {
    /// Reads Server-Sent Events (what the providers' HTTP streaming endpoints send).
    ///
    /// ```
    /// # use pleach_core::providers::{gemini::GeminiStreamParser, Decoder};
    /// let decoder = Decoder::sse(GeminiStreamParser::new());
    /// # drop(decoder);
    /// ```
    pub fn sse(parser: P) -> Self {
        Decoder {
            framing: Framing::Sse(SseFramer::new()),
            parser,
        }
    }

    /// Reads JSON lines (one event per line, as in recorded `.chunks.txt` fixtures).
    ///
    /// ```
    /// # use pleach_core::providers::{openai_responses::ResponsesStreamParser, Decoder};
    /// let decoder = Decoder::json_lines(ResponsesStreamParser::new());
    /// # drop(decoder);
    /// ```
    pub fn json_lines(parser: P) -> Self {
        Decoder {
            framing: Framing::JsonLines(JsonLines::new()),
            parser,
        }
    }

    /// Feeds the next chunk of bytes, split anywhere.
    ///
    /// ```
    /// # use pleach_core::providers::{openai_chat::ChatStreamParser, Decoder};
    /// let mut decoder = Decoder::sse(ChatStreamParser::new());
    /// assert!(decoder.feed(b"data: {\"choi").is_empty());
    /// ```
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<ProviderEvent> {
        let mut out = Vec::new();
        match &mut self.framing {
            Framing::Sse(framer) => {
                for event in framer.feed(bytes) {
                    out.extend(self.parser_input(event.map(|e| e.data)));
                }
            }
            Framing::JsonLines(lines) => {
                for line in lines.feed(bytes) {
                    out.extend(self.parser_input(line));
                }
            }
        }
        out
    }

    /// Ends the stream: flushes the framing, then [`StreamParser::finish`].
    ///
    /// ```
    /// # use pleach_core::providers::{anthropic::MessagesStreamParser, Decoder, ProviderEvent};
    /// let mut decoder = Decoder::json_lines(MessagesStreamParser::new());
    /// decoder.feed(br#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"f","input":{}}}"#);
    /// let events = decoder.finish(); // the connection dropped before `content_block_stop`
    /// assert!(matches!(&events[..], [_, ProviderEvent::CallFailed { .. }]));
    /// ```
    pub fn finish(&mut self) -> Vec<ProviderEvent> {
        let mut out = Vec::new();
        match &mut self.framing {
            Framing::Sse(framer) => {
                // An event cut off by the end of the stream was never delivered; the parser's
                // `finish` fails the calls it concerned as incomplete.
                framer.finish();
            }
            Framing::JsonLines(lines) => {
                for line in lines.finish() {
                    out.extend(self.parser_input(line));
                }
            }
        }
        out.extend(self.parser.finish());
        out
    }

    /// The parser (for [`StreamParser::skipped`], say).
    ///
    /// ```
    /// use pleach_core::providers::{anthropic::MessagesStreamParser, Decoder, StreamParser};
    /// let mut decoder = Decoder::json_lines(MessagesStreamParser::new());
    /// decoder.feed(b"{\"type\":\"something_new\"}\n");
    /// assert_eq!(decoder.parser().skipped(), 1);
    /// ```
    pub fn parser(&self) -> &P {
        &self.parser
    }

    /// The parser, giving up the framing.
    ///
    /// ```
    /// use pleach_core::providers::{openai_chat::ChatStreamParser, Decoder, StreamParser};
    /// let mut parser = Decoder::sse(ChatStreamParser::new()).into_parser();
    /// assert!(parser.feed("[DONE]").is_empty());
    /// ```
    pub fn into_parser(self) -> P {
        self.parser
    }

    fn parser_input(&mut self, data: Result<String, FrameError>) -> Vec<ProviderEvent> {
        match data {
            Ok(data) => self.parser.feed(&data),
            Err(error) => self.parser.unreadable(&error.to_string()),
        }
    }
}

/// Why a whole (non-streamed) response could not be read: where (a JSON pointer into the
/// response) and what.
///
/// ```
/// use pleach_core::providers::{openai_chat::OpenAiChat, ProviderFormat};
/// let err = OpenAiChat.tool_calls("not json").unwrap_err();
/// assert_eq!(err.path, "");
/// assert!(err.to_string().starts_with("the response is not JSON"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}{}", if path.is_empty() { String::new() } else { format!(" (at `{path}`)") })]
pub struct ResponseError {
    /// JSON pointer to the offending value (`""` for the whole response).
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl ResponseError {
    fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        ResponseError {
            path: path.into(),
            message: message.into(),
        }
    }
}

/// The arguments of a call that has none: a whole response that leaves them out, or sends `null`
/// or `""`, means a call without arguments, as a stream that sends no fragment does.
pub(crate) const NO_ARGUMENTS: &str = "{}";

/// `arguments`, or [`NO_ARGUMENTS`] when it is empty.
pub(crate) fn no_arguments_as_empty_object(arguments: String) -> String {
    if arguments.is_empty() {
        NO_ARGUMENTS.to_owned()
    } else {
        arguments
    }
}

/// Parses a whole response body.
fn parse_response<T: DeserializeOwned>(body: &str) -> Result<T, ResponseError> {
    serde_json::from_str(body).map_err(|e| {
        ResponseError::new(
            "",
            format!("the response is not JSON of the expected shape: {e}"),
        )
    })
}

/// Parses one streamed event's data, or says why it could not be.
fn parse_event<T: DeserializeOwned>(data: &str) -> Result<T, String> {
    serde_json::from_str(data).map_err(|e| format!("a stream event could not be read: {e}"))
}

/// An event was lost: say so, and fail the open calls (a fragment of theirs may be in it).
fn lost_event(calls: &mut CallTable, out: &mut Vec<ProviderEvent>, reason: &str) {
    stream_error(calls, out, StreamProblem::UnreadableEvent, reason, |id| {
        format!(
            "an event of the stream could not be read while the call `{id}` was streaming, so its arguments may be missing a part; it was not run ({reason})"
        )
    });
}

/// The provider reported an error mid-stream: say so, and fail the open calls as incomplete.
fn provider_error(calls: &mut CallTable, out: &mut Vec<ProviderEvent>, message: &str) {
    stream_error(calls, out, StreamProblem::ProviderError, message, |id| {
        format!(
            "the model API failed mid-response ({message}) before it ended the call `{id}`, so the call did not run; call it again"
        )
    });
}

fn stream_error(
    calls: &mut CallTable,
    out: &mut Vec<ProviderEvent>,
    problem: StreamProblem,
    message: &str,
    why: impl Fn(&str) -> String,
) {
    out.push(ProviderEvent::StreamError {
        problem,
        message: message.to_owned(),
    });
    calls.fail_open(out, problem, why);
}

/// The stream ended: fail the calls without an end signal as incomplete.
fn end_of_stream(calls: &mut CallTable, out: &mut Vec<ProviderEvent>, signal: &str) {
    calls.fail_open(out, StreamProblem::Incomplete, |id| {
        format!("the response ended without the provider's end signal for the call `{id}` (no {signal}), so the call did not run; call it again")
    });
}

/// The text of an error object a provider sent (`{"error": {"message": …}}` or a string).
fn error_text(error: &Value) -> String {
    match error {
        Value::String(text) => text.clone(),
        Value::Object(map) => map
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| error.to_string(), str::to_owned),
        other => other.to_string(),
    }
}

/// A token count from a usage object, whatever number form it came in.
fn token_count(usage: &Value, field: &str) -> Option<u64> {
    let value = usage.get(field)?;
    value.as_u64().or_else(|| {
        value
            .as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0 && f.fract() == 0.0 && *f < 9.0e15)
            // In range and whole: the conversion is exact.
            .map(|f| {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let n = f as u64;
                n
            })
    })
}

/// A `Usage` event, if the usage object has either count.
fn usage_event(usage: &Value, input: &str, output: &str) -> Option<ProviderEvent> {
    let input_tokens = token_count(usage, input);
    let output_tokens = token_count(usage, output);
    (input_tokens.is_some() || output_tokens.is_some()).then_some(ProviderEvent::Usage {
        input_tokens,
        output_tokens,
    })
}

/// A call's arguments as a JSON object, for the formats that carry them as one (Anthropic,
/// Gemini). Arguments that are not a JSON object (a call that failed to parse) become `{}`: the
/// call's result message says what went wrong.
fn arguments_object(call: &ToolCall) -> Value {
    match serde_json::from_str::<Value>(call.arguments()) {
        Ok(value @ Value::Object(_)) => value,
        _ => Value::Object(serde_json::Map::new()),
    }
}

/// A call's arguments as text, for the formats that carry them as a string (Chat Completions): as
/// the model sent them when they are a JSON object, else `{}`. A call cut off mid-arguments or sent
/// as broken JSON failed (its result message says so); sent back as it came, it would make servers
/// that parse the history (vLLM) refuse every later request of the conversation.
fn arguments_text(call: &ToolCall) -> &str {
    match serde_json::from_str::<Value>(call.arguments()) {
        Ok(Value::Object(_)) => call.arguments(),
        _ => "{}",
    }
}

/// The `parameters` OpenAI's formats send for a tool (Chat Completions and Responses): in strict
/// mode through [`Profile::OpenAiStrict`], else the schema as it is (but for bounds past 2^53).
fn openai_parameters(tool: &ToolDefinition, strict: bool) -> Result<Value, Vec<ProfileProblem>> {
    if strict {
        Profile::OpenAiStrict.apply_tool(tool)
    } else {
        Ok(profile::sendable_numbers(tool.input_schema()))
    }
}

/// A conversation for the APIs that want every tool result of a turn in one user message
/// (Anthropic, Gemini): `result` builds one result's block or part, `results` the message that
/// holds a run of them.
/// A tool-result message's parts, as every format reads them.
pub(crate) struct ToolResultMessage<'a> {
    pub(crate) call: &'a ToolCall,
    pub(crate) content: &'a str,
    pub(crate) attachments: &'a [crate::content::ContentBlock],
    pub(crate) is_error: bool,
}

impl<'a> ToolResultMessage<'a> {
    /// The parts of a `Message::Tool`; `None` for any other message.
    pub(crate) fn of(message: &'a Message) -> Option<Self> {
        match message {
            Message::Tool {
                tool_call,
                content,
                attachments,
                is_error,
                ..
            } => Some(ToolResultMessage {
                call: tool_call,
                content,
                attachments,
                is_error: *is_error,
            }),
            _ => None,
        }
    }
}

fn grouped_messages(
    conversation: &[Message],
    user: impl Fn(&str) -> Value,
    assistant: impl Fn(Option<&str>, &[ToolCall]) -> Value,
    result: impl Fn(&ToolResultMessage<'_>) -> Value,
    results: impl Fn(Vec<Value>) -> Value,
) -> Vec<Value> {
    let mut out = Vec::new();
    let mut pending = Vec::new();
    for message in conversation {
        match message {
            Message::Tool { .. } => {
                if let Some(tool) = ToolResultMessage::of(message) {
                    pending.push(result(&tool));
                }
            }
            Message::User { content } => {
                if !pending.is_empty() {
                    out.push(results(std::mem::take(&mut pending)));
                }
                out.push(user(content));
            }
            Message::Assistant {
                content,
                tool_calls,
            } => {
                if !pending.is_empty() {
                    out.push(results(std::mem::take(&mut pending)));
                }
                out.push(assistant(content.as_deref(), tool_calls));
            }
        }
    }
    if !pending.is_empty() {
        out.push(results(pending));
    }
    out
}
