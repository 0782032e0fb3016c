//! Anthropic Messages API: tool definitions (`input_schema`), `tool_use` content blocks in whole
//! and streamed responses, and `tool_result` blocks for results.
//!
//! Streams: a `content_block_start` of type `tool_use` starts a call (the block's `index` is its
//! key), `input_json_delta.partial_json` fragments carry its input, and that block's
//! `content_block_stop` ends it. An input that streamed nothing at all is `{}` (a start `input`
//! that is already a non-empty object counts when no fragment follows). A `message_delta` with a
//! `stop_reason` (or `message_stop`) while a `tool_use` block is still open fails it as
//! incomplete (1007): that is how a `max_tokens` cut looks; an `error` event fails the open calls
//! too. `server_tool_use` blocks run on Anthropic's side and are not calls for this runtime.
//!
//! ```
//! use pleach_core::providers::{anthropic::MessagesStreamParser, ProviderEvent, StreamParser};
//!
//! let mut parser = MessagesStreamParser::new();
//! let mut events = parser.feed(r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"list_issues","input":{}}}"#);
//! events.extend(parser.feed(r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}"#));
//! events.extend(parser.feed(r#"{"type":"content_block_stop","index":1}"#));
//! // No fragment at all: the arguments are `{}`.
//! assert_eq!(events, [
//!     ProviderEvent::CallStarted { key: "1".into(), id: "toolu_1".into(), name: "list_issues".into() },
//!     ProviderEvent::CallEnded { key: "1".into() },
//! ]);
//! ```

use std::collections::{BTreeSet, HashMap};

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::call::ToolCall;
use crate::content::ToolOutput;
use crate::conversation::Message;
use crate::error::ToolError;
use crate::tool::ToolDefinition;

use super::attachments::{self, Part, with};
use super::calls::CallTable;
use super::{
    NO_ARGUMENTS, Profile, ProfileProblem, ProviderEvent, ProviderFormat, ResponseError,
    StreamParser, StreamProblem, ToolResultMessage, arguments_object, end_of_stream, error_text,
    grouped_messages, lost_event, parse_event, parse_response, provider_error, usage_event,
};

/// The Anthropic Messages API as a [`ProviderFormat`]: `{name, description, input_schema}`
/// definitions through [`Profile::Anthropic`] (strict tool use through
/// [`Profile::AnthropicStrict`]), `tool_use` blocks in whole and streamed responses
/// ([`MessagesStreamParser`]), `tool_result` blocks for results.
///
/// ```
/// use pleach_core::providers::{anthropic::Anthropic, ProviderFormat};
/// use pleach_core::{Message, ToolCall};
///
/// let (a, b) = (ToolCall::new("toolu_1", "f", "{}"), ToolCall::new("toolu_2", "g", "{}"));
/// let messages = Anthropic.messages(&[
///     Message::User { content: "go".into() },
///     Message::Assistant { content: None, tool_calls: vec![a.clone(), b.clone()] },
///     Message::tool_result(&a, &Ok(serde_json::json!(1).into())),
///     Message::tool_result(&b, &Ok(serde_json::json!(2).into())),
/// ]);
/// // A turn's results go in one `user` message, as the API requires.
/// assert_eq!(messages.len(), 3);
/// assert_eq!(messages[2]["content"].as_array().unwrap().len(), 2);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Anthropic;

impl ProviderFormat for Anthropic {
    fn profile(&self) -> Option<Profile> {
        Some(Profile::Anthropic)
    }

    fn strict_profile(&self) -> Option<Profile> {
        Some(Profile::AnthropicStrict)
    }

    /// The definition: `{name, description, input_schema}`, the schema checked against
    /// [`Profile::Anthropic`].
    ///
    /// ```
    /// use pleach_core::{ToolError, ToolDefinition};
    /// use pleach_core::providers::{anthropic::Anthropic, ProviderFormat};
    ///
    /// let tool = ToolDefinition::builder("ping", "Answers pong.")
    ///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
    ///     .unwrap();
    /// assert_eq!(Anthropic.definition(&tool).unwrap(), serde_json::json!({
    ///     "name": "ping",
    ///     "description": "Answers pong.",
    ///     "input_schema": { "type": "object" }
    /// }));
    /// ```
    fn definition(&self, tool: &ToolDefinition) -> Result<Value, Vec<ProfileProblem>> {
        let input_schema = Profile::Anthropic.apply_tool(tool)?;
        Ok(json!({
            "name": tool.name(),
            "description": tool.description(),
            "input_schema": input_schema,
        }))
    }

    /// The definition for strict tool use: the schema through [`Profile::AnthropicStrict`]
    /// (every object closed, the constraints strict mode cannot hold moved into descriptions)
    /// and `"strict": true`; or every problem that profile finds.
    ///
    /// ```
    /// use pleach_core::tool;
    /// use pleach_core::providers::{anthropic::Anthropic, ProviderFormat};
    ///
    /// /// Finds messages.
    /// #[tool]
    /// async fn find_messages(query: String, #[arg(default = 10, min = 1, max = 50)] limit: u32) -> Vec<String> {
    ///     vec![query; limit as usize]
    /// }
    ///
    /// let def = Anthropic.strict_definition(&find_messages::definition()).unwrap();
    /// assert_eq!(def["strict"], true);
    /// let schema = &def["input_schema"];
    /// assert_eq!(schema["additionalProperties"], false);
    /// // Optional stays optional (Anthropic's strict mode has no need of nulls) …
    /// assert_eq!(schema["required"], serde_json::json!(["query"]));
    /// // … and the bounds strict mode cannot hold are told in the description.
    /// assert!(schema["properties"]["limit"].get("maximum").is_none());
    /// assert!(schema["properties"]["limit"]["description"].as_str().unwrap().contains("maximum: 50"));
    /// ```
    fn strict_definition(&self, tool: &ToolDefinition) -> Result<Value, Vec<ProfileProblem>> {
        let input_schema = Profile::AnthropicStrict.apply_tool(tool)?;
        Ok(json!({
            "name": tool.name(),
            "description": tool.description(),
            "input_schema": input_schema,
            "strict": true,
        }))
    }

    /// The tool calls of a whole response body: its `tool_use` blocks, in order, the `input`
    /// object's JSON text as it was sent.
    ///
    /// ```
    /// use pleach_core::providers::{anthropic::Anthropic, ProviderFormat};
    ///
    /// let body = r#"{"type":"message","role":"assistant","content":[
    ///     {"type":"text","text":"Let me check."},
    ///     {"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city": "Paris"}}
    /// ],"stop_reason":"tool_use"}"#;
    /// let calls = Anthropic.tool_calls(body).unwrap();
    /// assert_eq!(calls[0].arguments(), r#"{"city": "Paris"}"#);
    /// ```
    fn tool_calls(&self, body: &str) -> Result<Vec<ToolCall>, ResponseError> {
        tool_calls(body)
    }

    /// The `tool_result` content block for a call's outcome (`is_error` set for a failure).
    ///
    /// ```
    /// use pleach_core::{ToolCall, ToolError};
    /// use pleach_core::providers::{anthropic::Anthropic, ProviderFormat};
    /// use serde_json::json;
    ///
    /// let call = ToolCall::new("toolu_1", "get_weather", "{}");
    /// assert_eq!(
    ///     Anthropic.tool_result(&call, &Err(ToolError::failed("no such city"))),
    ///     json!({ "type": "tool_result", "tool_use_id": "toolu_1", "content": "error 1008: no such city", "is_error": true })
    /// );
    /// ```
    fn tool_result(&self, call: &ToolCall, outcome: &Result<ToolOutput, ToolError>) -> Value {
        let message = Message::tool_result(call, outcome);
        ToolResultMessage::of(&message).map_or(Value::Null, |tool| result_block(&tool))
    }

    /// One assistant message carrying the calls as `tool_use` blocks (after a text block, if
    /// any). Arguments that are not a JSON object (a call that failed to parse) are sent as `{}`.
    ///
    /// ```
    /// use pleach_core::ToolCall;
    /// use pleach_core::providers::{anthropic::Anthropic, ProviderFormat};
    /// use serde_json::json;
    ///
    /// let m = Anthropic.assistant_messages(Some("Checking."), &[ToolCall::new("toolu_1", "get_weather", r#"{"city":"Paris"}"#)]);
    /// assert_eq!(m, [json!({ "role": "assistant", "content": [
    ///     { "type": "text", "text": "Checking." },
    ///     { "type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": { "city": "Paris" } }
    /// ] })]);
    /// ```
    fn assistant_messages(&self, content: Option<&str>, calls: &[ToolCall]) -> Vec<Value> {
        vec![assistant_message(content, calls)]
    }

    /// A conversation as Messages API `messages`: consecutive tool results go into one `user`
    /// message, as the API requires (all results of an assistant turn in the next user turn; see
    /// [`Anthropic`] for an example).
    fn messages(&self, conversation: &[Message]) -> Vec<Value> {
        grouped_messages(
            conversation,
            |text| json!({ "role": "user", "content": text }),
            assistant_message,
            result_block,
            |blocks| with(json!({ "role": "user" }), "content", blocks),
        )
    }

    fn stream_parser(&self) -> Box<dyn StreamParser + Send> {
        Box::new(MessagesStreamParser::new())
    }
}

#[derive(Deserialize)]
struct Block {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    input: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    content: Vec<Block>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    error: Option<Value>,
}

/// The tool calls of a whole response body (see [`Anthropic::tool_calls`]).
fn tool_calls(body: &str) -> Result<Vec<ToolCall>, ResponseError> {
    let response: Response = parse_response(body)?;
    if response.kind.as_deref() == Some("error") {
        let message = response
            .error
            .as_ref()
            .map_or_else(|| "unknown error".to_owned(), error_text);
        return Err(ResponseError::new(
            "/error",
            format!("the provider returned an error: {message}"),
        ));
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for (i, block) in response.content.into_iter().enumerate() {
        if block.kind.as_deref() != Some("tool_use") {
            continue;
        }
        let at = format!("/content/{i}");
        let id = block
            .id
            .filter(|id| !id.is_empty())
            .ok_or_else(|| ResponseError::new(format!("{at}/id"), "a tool_use block has no id"))?;
        if !seen.insert(id.clone()) {
            return Err(ResponseError::new(
                format!("{at}/id"),
                format!("the call id `{id}` is used twice"),
            ));
        }
        let name = block.name.filter(|n| !n.is_empty()).ok_or_else(|| {
            ResponseError::new(format!("{at}/name"), "a tool_use block has no name")
        })?;
        let arguments = block
            .input
            .map_or_else(|| NO_ARGUMENTS.to_owned(), |raw| raw.get().to_owned());
        out.push(ToolCall::new(id, name, arguments));
    }
    Ok(out)
}

#[derive(Deserialize)]
struct Event {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    content_block: Option<Block>,
    #[serde(default)]
    delta: Option<Value>,
    #[serde(default)]
    message: Option<Value>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

/// The stream parser for Messages API events.
///
/// ```
/// use pleach_core::providers::{anthropic::MessagesStreamParser, ProviderEvent, StreamParser, StreamProblem};
///
/// let mut parser = MessagesStreamParser::new();
/// parser.feed(r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"make_file","input":{}}}"#);
/// parser.feed(r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"filename\": \"tax"}}"#);
/// let events = parser.feed(r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":124}}"#);
/// assert!(matches!(&events[0], ProviderEvent::CallFailed { problem: StreamProblem::Incomplete, error, .. } if error.code().as_u16() == 1007));
/// ```
#[derive(Debug, Default)]
pub struct MessagesStreamParser {
    calls: CallTable,
    /// Per open block: a non-empty `input` from its start, and whether any fragment came since.
    start_inputs: HashMap<String, (Option<String>, bool)>,
    skipped: usize,
}

impl MessagesStreamParser {
    /// A parser for one stream.
    ///
    /// ```
    /// use pleach_core::providers::{anthropic::MessagesStreamParser, StreamParser};
    /// let mut parser = MessagesStreamParser::new();
    /// assert!(parser.finish().is_empty()); // nothing was open
    /// assert_eq!(parser.skipped(), 0);
    /// ```
    pub fn new() -> Self {
        MessagesStreamParser::default()
    }

    fn block_start(&mut self, out: &mut Vec<ProviderEvent>, key: &str, block: Block) {
        if block.kind.as_deref() != Some("tool_use") {
            return;
        }
        self.calls.start(
            out,
            key,
            block.id.as_deref().unwrap_or_default(),
            block.name.as_deref().unwrap_or_default(),
        );
        if self.calls.is_open(key) {
            let input = block.input.map(|raw| raw.get().to_owned()).filter(|text| {
                serde_json::from_str::<Value>(text)
                    .is_ok_and(|v| v.as_object().is_some_and(|o| !o.is_empty()))
            });
            self.start_inputs.insert(key.to_owned(), (input, false));
        }
    }

    fn block_delta(&mut self, out: &mut Vec<ProviderEvent>, key: &str, delta: &Value) {
        match delta.get("type").and_then(Value::as_str) {
            Some("input_json_delta") => {
                let fragment = delta
                    .get("partial_json")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if let Some((_, streamed)) = self.start_inputs.get_mut(key) {
                    *streamed |= !fragment.is_empty();
                }
                self.calls.delta(out, key, fragment);
            }
            Some("text_delta") => {
                if let Some(text) = delta
                    .get("text")
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                {
                    out.push(ProviderEvent::Text {
                        delta: text.to_owned(),
                    });
                }
            }
            Some("thinking_delta" | "signature_delta" | "citations_delta") => {}
            _ => self.skipped += 1,
        }
    }

    fn block_stop(&mut self, out: &mut Vec<ProviderEvent>, key: &str) {
        if !self.calls.is_open(key) {
            // A text or thinking block, or a call that already failed.
            return;
        }
        if let Some((Some(input), false)) = self.start_inputs.remove(key) {
            self.calls.delta(out, key, &input);
        }
        self.calls.end(out, key);
    }

    /// The message stopped: a `tool_use` block still open will not get its `content_block_stop`.
    fn message_stopped(&mut self, out: &mut Vec<ProviderEvent>, reason: &str) {
        self.calls.fail_open(out, StreamProblem::Incomplete, |id| {
            format!("the message stopped (`{reason}`) before the input of call `{id}` was complete; it was not run")
        });
        self.start_inputs.clear();
    }
}

impl StreamParser for MessagesStreamParser {
    fn feed(&mut self, data: &str) -> Vec<ProviderEvent> {
        let mut out = Vec::new();
        let event: Event = match parse_event(data) {
            Ok(event) => event,
            Err(reason) => {
                lost_event(&mut self.calls, &mut out, &reason);
                return out;
            }
        };
        let key = event.index.map(|i| i.to_string()).unwrap_or_default();
        match event.kind.as_deref().unwrap_or_default() {
            "content_block_start" => {
                if let Some(block) = event.content_block {
                    self.block_start(&mut out, &key, block);
                }
            }
            "content_block_delta" => {
                if let Some(delta) = &event.delta {
                    self.block_delta(&mut out, &key, delta);
                }
            }
            "content_block_stop" => self.block_stop(&mut out, &key),
            "message_delta" => {
                let reason = event
                    .delta
                    .as_ref()
                    .and_then(|d| d.get("stop_reason"))
                    .and_then(Value::as_str);
                if let Some(reason) = reason {
                    self.message_stopped(&mut out, reason);
                    out.push(ProviderEvent::Finished {
                        reason: Some(reason.to_owned()),
                    });
                }
                out.extend(
                    event
                        .usage
                        .as_ref()
                        .and_then(|u| usage_event(u, "input_tokens", "output_tokens")),
                );
            }
            "message_stop" => self.message_stopped(&mut out, "message_stop"),
            "message_start" => {
                let usage = event.message.as_ref().and_then(|m| m.get("usage"));
                out.extend(usage.and_then(|u| usage_event(u, "input_tokens", "output_tokens")));
            }
            "ping" => {}
            "error" => {
                let message = event
                    .error
                    .as_ref()
                    .map_or_else(|| "unknown error".to_owned(), error_text);
                provider_error(&mut self.calls, &mut out, &message);
                self.start_inputs.clear();
            }
            _ => self.skipped += 1,
        }
        out
    }

    fn unreadable(&mut self, reason: &str) -> Vec<ProviderEvent> {
        let mut out = Vec::new();
        lost_event(&mut self.calls, &mut out, reason);
        out
    }

    fn finish(&mut self) -> Vec<ProviderEvent> {
        let mut out = Vec::new();
        end_of_stream(&mut self.calls, &mut out, "`content_block_stop`");
        self.start_inputs.clear();
        out
    }

    fn skipped(&self) -> usize {
        self.skipped
    }
}

fn result_block(tool: &ToolResultMessage<'_>) -> Value {
    let id = tool.call.id();
    let is_error = tool.is_error;
    if tool.attachments.is_empty() {
        let content = tool.content;
        return json!({ "type": "tool_result", "tool_use_id": id, "content": content, "is_error": is_error });
    }
    // Content blocks: the text (if any; the API refuses an empty text block), then each
    // attachment as an `image` or `document` block, or text saying why it is not there.
    let mut blocks = Vec::with_capacity(tool.attachments.len() + 1);
    if !tool.content.is_empty() {
        blocks.push(json!({ "type": "text", "text": tool.content }));
    }
    for part in attachments::parts(tool.attachments) {
        blocks.push(match part {
            Part::Text(text) => json!({ "type": "text", "text": text }),
            Part::Image { mime, data } if IMAGE_TYPES.contains(&mime) => with(
                json!({ "type": "image" }),
                "source",
                with(
                    json!({ "type": "base64", "media_type": mime }),
                    "data",
                    attachments::base64(data),
                ),
            ),
            Part::File {
                mime: "application/pdf",
                data,
                name,
            } => {
                let source = json!({ "type": "base64", "media_type": "application/pdf" });
                let mut document = with(
                    json!({ "type": "document" }),
                    "source",
                    with(source, "data", attachments::base64(data)),
                );
                if let Some(name) = name {
                    document["title"] = Value::from(name);
                }
                document
            }
            Part::File { mime, data, name } if mime.starts_with("text/") => {
                let text = String::from_utf8_lossy(data);
                let mut document = json!({
                    "type": "document",
                    "source": { "type": "text", "media_type": "text/plain", "data": text }
                });
                if let Some(name) = name {
                    document["title"] = Value::from(name);
                }
                document
            }
            Part::Image { mime, data } => {
                let note = attachments::not_sent(
                    "image",
                    mime,
                    data.len(),
                    "the Messages API takes JPEG, PNG, GIF and WebP",
                );
                json!({ "type": "text", "text": note })
            }
            Part::Audio { mime, data } => {
                let note = attachments::not_sent(
                    "recording",
                    mime,
                    data.len(),
                    "the Messages API takes no audio",
                );
                json!({ "type": "text", "text": note })
            }
            Part::File { mime, data, .. } => {
                let note = attachments::not_sent(
                    "file",
                    mime,
                    data.len(),
                    "the Messages API takes PDF and text documents",
                );
                json!({ "type": "text", "text": note })
            }
        });
    }
    let result = json!({ "type": "tool_result", "tool_use_id": id, "is_error": is_error });
    with(result, "content", blocks)
}

/// A tool definition the API holds back until a search names it: `defer_loading: true`. Claude
/// sees the tool only once a `tool_reference` block in a tool result names it.
#[cfg(feature = "http")]
pub(crate) fn deferred_definition(mut definition: Value) -> Value {
    definition["defer_loading"] = Value::Bool(true);
    definition
}

/// Rewrites the results of the client-side search tool `search_tool` in `messages` (the
/// request's `messages`) as Anthropic's tool search results: the `tool_result` of each
/// successful search becomes one `{"type":"tool_reference","tool_name":…}` block per tool
/// `found` names in its text, and the API loads those tools for the next step. A search that
/// failed or found nothing keeps its text.
#[cfg(feature = "http")]
pub(crate) fn reference_search_results(
    messages: &mut [Value],
    search_tool: &str,
    found: impl Fn(&str) -> Vec<String>,
) {
    let searches: std::collections::HashSet<String> = messages
        .iter()
        .filter(|message| message["role"] == "assistant")
        .filter_map(|message| message["content"].as_array())
        .flatten()
        .filter(|block| block["type"] == "tool_use" && block["name"] == search_tool)
        .filter_map(|block| block["id"].as_str().map(str::to_owned))
        .collect();
    if searches.is_empty() {
        return;
    }
    let results = messages
        .iter_mut()
        .filter(|message| message["role"] == "user")
        .filter_map(|message| message.get_mut("content").and_then(Value::as_array_mut))
        .flatten()
        .filter(|block| {
            block["type"] == "tool_result"
                && block["is_error"] != true
                && block["tool_use_id"]
                    .as_str()
                    .is_some_and(|id| searches.contains(id))
        });
    for block in results {
        let names = block["content"].as_str().map(&found).unwrap_or_default();
        if names.is_empty() {
            continue;
        }
        block["content"] = names
            .into_iter()
            .map(|name| json!({ "type": "tool_reference", "tool_name": name }))
            .collect();
    }
}

/// The image types the Messages API reads.
const IMAGE_TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// The assistant message carrying the calls as `tool_use` blocks (after a text block, if any).
fn assistant_message(content: Option<&str>, calls: &[ToolCall]) -> Value {
    let text = content
        .filter(|t| !t.is_empty())
        .map(|t| json!({ "type": "text", "text": t }));
    let blocks: Vec<Value> = text
        .into_iter()
        .chain(calls.iter().map(|c| {
            json!({ "type": "tool_use", "id": c.id(), "name": c.name(), "input": arguments_object(c) })
        }))
        .collect();
    json!({ "role": "assistant", "content": blocks })
}

#[cfg(all(test, feature = "http"))]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_client_search_result_becomes_tool_references_and_other_results_stay() {
        // Anthropic's custom tool search: the tool's `tool_result` holds `tool_reference` blocks.
        let mut messages = vec![
            json!({"role": "user", "content": "weather in Paris?"}),
            json!({"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "search_tools", "input": {"query": "weather"}},
                {"type": "tool_use", "id": "toolu_2", "name": "search_tools", "input": {"query": "("}},
                {"type": "tool_use", "id": "toolu_3", "name": "get_time", "input": {}}
            ]}),
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": r#"{"tools":[{"name":"get_weather"},{"name":"get_forecast"}]}"#, "is_error": false},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "error 1003: bad regex", "is_error": true},
                {"type": "tool_result", "tool_use_id": "toolu_3", "content": r#"{"tools":["x"]}"#, "is_error": false}
            ]}),
        ];
        reference_search_results(&mut messages, "search_tools", |text| {
            assert!(
                text.starts_with('{'),
                "only successful searches are read: {text}"
            );
            vec!["get_weather".into(), "get_forecast".into()]
        });
        let results = &messages[2]["content"];
        assert_eq!(
            results[0],
            json!({"type": "tool_result", "tool_use_id": "toolu_1", "is_error": false, "content": [
                {"type": "tool_reference", "tool_name": "get_weather"},
                {"type": "tool_reference", "tool_name": "get_forecast"}
            ]})
        );
        assert_eq!(results[1]["content"], "error 1003: bad regex");
        assert_eq!(results[2]["content"], r#"{"tools":["x"]}"#);

        // A search that found nothing keeps its text: a tool result needs content.
        let mut messages = messages[..2].to_vec();
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": r#"{"tools":[]}"#, "is_error": false}
        ]}));
        reference_search_results(&mut messages, "search_tools", |_| Vec::new());
        assert_eq!(messages[2]["content"][0]["content"], r#"{"tools":[]}"#);
        assert_eq!(
            deferred_definition(json!({"name": "get_weather"})),
            json!({"name": "get_weather", "defer_loading": true})
        );
    }
}
