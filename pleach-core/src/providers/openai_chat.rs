//! OpenAI Chat Completions (and the many APIs that copy it: DeepSeek, Groq, xAI, Mistral, Alibaba,
//! vLLM, …): tool definitions, `tool_calls` in whole and streamed responses, and the `tool`
//! messages results go back in.
//!
//! Streams: a call's fragments are keyed by `tool_calls[].index`; the first fragment of an index
//! carries the id and the name. A call ends when its choice's `finish_reason` arrives; a
//! `finish_reason` of `length` or `content_filter` fails the open calls as incomplete (1007), since
//! the model stopped mid-arguments. `data: [DONE]` without a `finish_reason` also ends the open
//! calls: it is the server's own in-band end of the stream (a dropped connection sends neither, and
//! its calls fail as incomplete). An id or name sent again as `""` (Alibaba, Mistral) never
//! overwrites the known one, and a `finish_reason` of `""` (`SGLang`, older Ollama) is no reason:
//! it ends nothing. Without `index`, a fragment that repeats the open call's id continues it.
//! Arguments for a call that already ended are dropped and reported as a stream error. A new id
//! with a name on an index that is in use starts the next call and ends the open one (Ollama sends
//! every call whole as `index: 0`); a new id without a name fails the open call (1005).
//!
//! ```
//! use pleach_core::providers::{openai_chat::ChatStreamParser, ProviderEvent, StreamParser};
//!
//! let mut parser = ChatStreamParser::new();
//! let mut events = parser.feed(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}"#);
//! events.extend(parser.feed(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"","function":{"name":"","arguments":"{\"city\":\"Oslo\"}"}}]}}]}"#));
//! events.extend(parser.feed(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#));
//! assert_eq!(events[0], ProviderEvent::CallStarted { key: "0".into(), id: "call_1".into(), name: "get_weather".into() });
//! assert_eq!(events[1], ProviderEvent::ArgumentsDelta { key: "0".into(), fragment: r#"{"city":"Oslo"}"#.into() });
//! assert_eq!(events[2], ProviderEvent::CallEnded { key: "0".into() });
//! ```

use std::collections::{BTreeSet, HashMap};

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::call::ToolCall;
use crate::content::ToolOutput;
use crate::conversation::Message;
use crate::error::{ErrorCode, ToolError};
use crate::tool::ToolDefinition;

use super::attachments::{self, Part};
use super::calls::CallTable;
use super::{
    Profile, ProfileProblem, ProviderEvent, ProviderFormat, ResponseError, StreamParser,
    StreamProblem, ToolResultMessage, end_of_stream, error_text, lost_event, openai_parameters,
    parse_event, parse_response, provider_error, usage_event,
};

/// OpenAI Chat Completions as a [`ProviderFormat`]: `{"type":"function","function":{…}}`
/// definitions (strict mode through [`Profile::OpenAiStrict`]), `tool_calls` in whole and
/// streamed responses ([`ChatStreamParser`]), `tool` messages for results.
///
/// A `tool` message takes text only, so a result's media (images, files, recordings) go in a
/// `user` message right after the conversation's run of `tool` messages: `image_url`, `file` and
/// `input_audio` parts, each after a text part naming its call. A host whose model reads no
/// media refuses them instead with [`OpenAiChatTextOnly`].
///
/// ```
/// use pleach_core::providers::{openai_chat::OpenAiChat, ProviderFormat};
/// use pleach_core::{Message, ToolCall};
///
/// let call = ToolCall::new("call_1", "ping", "{}");
/// let messages = OpenAiChat.messages(&[
///     Message::User { content: "ping?".into() },
///     Message::Assistant { content: None, tool_calls: vec![call.clone()] },
///     Message::tool_result(&call, &Ok(serde_json::json!("pong").into())),
/// ]);
/// assert_eq!(messages[2]["role"], "tool");
/// assert_eq!(messages[2]["content"], "\"pong\"");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct OpenAiChat;

impl ProviderFormat for OpenAiChat {
    fn profile(&self) -> Option<Profile> {
        None
    }

    fn strict_profile(&self) -> Option<Profile> {
        Some(Profile::OpenAiStrict)
    }

    /// The definition, not strict: the schema as it is (but for bounds past 2^53, see
    /// `docs/providers.md`), `"strict": false`. Never refused.
    ///
    /// ```
    /// use pleach_core::{ToolError, ToolDefinition};
    /// use pleach_core::providers::{openai_chat::OpenAiChat, ProviderFormat};
    ///
    /// let tool = ToolDefinition::builder("ping", "Answers pong.")
    ///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
    ///     .unwrap();
    /// let def = OpenAiChat.definition(&tool).unwrap();
    /// assert_eq!(def["type"], "function");
    /// assert_eq!(def["function"]["name"], "ping");
    /// assert_eq!(def["function"]["parameters"], serde_json::json!({ "type": "object" }));
    /// assert_eq!(def["function"]["strict"], false);
    /// ```
    fn definition(&self, tool: &ToolDefinition) -> Result<Value, Vec<ProfileProblem>> {
        openai_parameters(tool, false).map(|parameters| wrap(tool, &parameters, false))
    }

    /// The definition in strict mode: the schema through [`Profile::OpenAiStrict`],
    /// `"strict": true`; or every problem that profile finds.
    ///
    /// ```
    /// use pleach_core::tool;
    /// use pleach_core::providers::{openai_chat::OpenAiChat, ProviderFormat};
    ///
    /// /// Free-text search.
    /// #[tool]
    /// async fn search(query: String, limit: Option<u32>) -> Vec<String> {
    ///     vec![query; limit.unwrap_or(1) as usize]
    /// }
    ///
    /// let def = OpenAiChat.strict_definition(&search::definition()).unwrap();
    /// assert_eq!(def["function"]["strict"], true);
    /// assert_eq!(def["function"]["parameters"]["required"], serde_json::json!(["limit", "query"]));
    /// ```
    fn strict_definition(&self, tool: &ToolDefinition) -> Result<Value, Vec<ProfileProblem>> {
        openai_parameters(tool, true).map(|parameters| wrap(tool, &parameters, true))
    }

    /// The tool calls of a whole response body, from its first choice, in order.
    ///
    /// `arguments` is normally a string of JSON; an object (some compatible servers send one) is
    /// taken as its JSON text, and arguments left out, `null` or `""` as `{}`. A call without an
    /// id or a name, or an id used twice, is an error.
    ///
    /// ```
    /// use pleach_core::providers::{openai_chat::OpenAiChat, ProviderFormat};
    ///
    /// let body = r#"{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[
    ///     {"id":"call_1","type":"function","function":{"name":"add","arguments":"{\"a\":1,\"b\":2}"}}
    /// ]},"finish_reason":"tool_calls"}]}"#;
    /// let calls = OpenAiChat.tool_calls(body).unwrap();
    /// assert_eq!(calls[0].id(), "call_1");
    /// assert_eq!(calls[0].arguments(), r#"{"a":1,"b":2}"#);
    /// ```
    fn tool_calls(&self, body: &str) -> Result<Vec<ToolCall>, ResponseError> {
        tool_calls(body)
    }

    /// The `tool` message for a call's outcome: the result as JSON text, or
    /// `error <code>: <message>`.
    ///
    /// ```
    /// use pleach_core::{ToolCall, ToolError};
    /// use pleach_core::providers::{openai_chat::OpenAiChat, ProviderFormat};
    /// use serde_json::json;
    ///
    /// let call = ToolCall::new("call_1", "add", r#"{"a":1,"b":2}"#);
    /// assert_eq!(
    ///     OpenAiChat.tool_result(&call, &Ok(json!(3).into())),
    ///     json!({ "role": "tool", "tool_call_id": "call_1", "content": "3" })
    /// );
    /// let failed = OpenAiChat.tool_result(&call, &Err(ToolError::failed("boom")));
    /// assert_eq!(failed["content"], "error 1008: boom");
    /// ```
    fn tool_result(&self, call: &ToolCall, outcome: &Result<ToolOutput, ToolError>) -> Value {
        let message = Message::tool_result(call, outcome);
        ToolResultMessage::of(&message)
            .map_or(Value::Null, |tool| tool_message(&tool, Media::Follow))
    }

    /// One assistant message carrying the calls (and text, if any).
    ///
    /// ```
    /// use pleach_core::ToolCall;
    /// use pleach_core::providers::{openai_chat::OpenAiChat, ProviderFormat};
    /// use serde_json::json;
    ///
    /// let m = OpenAiChat.assistant_messages(None, &[ToolCall::new("call_1", "ping", "{}")]);
    /// assert_eq!(m, [json!({
    ///     "role": "assistant",
    ///     "content": null,
    ///     "tool_calls": [{ "id": "call_1", "type": "function", "function": { "name": "ping", "arguments": "{}" } }]
    /// })]);
    /// ```
    fn assistant_messages(&self, content: Option<&str>, calls: &[ToolCall]) -> Vec<Value> {
        vec![assistant_message(content, calls)]
    }

    /// A conversation as Chat Completions `messages` (see [`OpenAiChat`] for an example), with
    /// the media of each run of `tool` messages in a `user` message after it.
    ///
    /// ```
    /// use pleach_core::providers::{openai_chat::OpenAiChat, ProviderFormat};
    /// use pleach_core::{ContentBlock, Message, ToolCall, ToolOutput};
    ///
    /// let call = ToolCall::new("call_1", "screenshot", "{}");
    /// let shot = ToolOutput::from_blocks([ContentBlock::image(vec![1u8, 2, 3], "image/png")]);
    /// let messages = OpenAiChat.messages(&[
    ///     Message::Assistant { content: None, tool_calls: vec![call.clone()] },
    ///     Message::tool_result(&call, &Ok(shot)),
    /// ]);
    /// assert_eq!(messages[1]["role"], "tool");
    /// assert_eq!(messages[2]["role"], "user");
    /// assert_eq!(messages[2]["content"][1]["image_url"]["url"], "data:image/png;base64,AQID");
    /// ```
    fn messages(&self, conversation: &[Message]) -> Vec<Value> {
        chat_messages(conversation, Media::Follow)
    }

    fn stream_parser(&self) -> Box<dyn StreamParser + Send> {
        Box::new(ChatStreamParser::new())
    }
}

/// OpenAI Chat Completions for a model that reads no media: [`OpenAiChat`] in everything but a
/// result's media, which are refused rather than sent. The `tool` message then starts with
/// `error 1019: the tool returned image/png (84 KB) and this model API takes text only; …`
/// (`ErrorCode::ContentRefused`) and keeps the result's text after it, so the model knows what it
/// did not get. Pick it where a model rejects requests with images.
///
/// ```
/// use pleach_core::providers::{openai_chat::OpenAiChatTextOnly, ProviderFormat};
/// use pleach_core::{ContentBlock, ToolCall, ToolOutput};
///
/// let call = ToolCall::new("call_1", "screenshot", "{}");
/// let shot = ToolOutput::new(serde_json::json!("saved")).block(ContentBlock::image(vec![0u8; 2048], "image/png"));
/// let message = OpenAiChatTextOnly.tool_result(&call, &Ok(shot));
/// assert_eq!(
///     message["content"],
///     "error 1019: the tool returned image/png (2 KB) and this model API takes text only; ask for a text result\nThe result's text: \"saved\""
/// );
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct OpenAiChatTextOnly;

impl ProviderFormat for OpenAiChatTextOnly {
    fn profile(&self) -> Option<Profile> {
        OpenAiChat.profile()
    }

    fn strict_profile(&self) -> Option<Profile> {
        OpenAiChat.strict_profile()
    }

    fn definition(&self, tool: &ToolDefinition) -> Result<Value, Vec<ProfileProblem>> {
        OpenAiChat.definition(tool)
    }

    fn strict_definition(&self, tool: &ToolDefinition) -> Result<Value, Vec<ProfileProblem>> {
        OpenAiChat.strict_definition(tool)
    }

    fn tool_calls(&self, body: &str) -> Result<Vec<ToolCall>, ResponseError> {
        OpenAiChat.tool_calls(body)
    }

    fn tool_result(&self, call: &ToolCall, outcome: &Result<ToolOutput, ToolError>) -> Value {
        let message = Message::tool_result(call, outcome);
        ToolResultMessage::of(&message)
            .map_or(Value::Null, |tool| tool_message(&tool, Media::Refuse))
    }

    fn assistant_messages(&self, content: Option<&str>, calls: &[ToolCall]) -> Vec<Value> {
        OpenAiChat.assistant_messages(content, calls)
    }

    fn messages(&self, conversation: &[Message]) -> Vec<Value> {
        chat_messages(conversation, Media::Refuse)
    }

    fn stream_parser(&self) -> Box<dyn StreamParser + Send> {
        OpenAiChat.stream_parser()
    }
}

fn wrap(tool: &ToolDefinition, parameters: &Value, strict: bool) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": tool.name(),
            "description": tool.description(),
            "parameters": parameters,
            "strict": strict,
        }
    })
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    choices: Vec<ResponseChoice>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct ResponseChoice {
    #[serde(default)]
    message: Option<ResponseMessage>,
}

#[derive(Deserialize)]
struct ResponseMessage {
    #[serde(default)]
    tool_calls: Option<Vec<ResponseToolCall>>,
}

#[derive(Deserialize)]
struct ResponseToolCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<ResponseFunction>,
}

#[derive(Deserialize)]
struct ResponseFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Box<RawValue>>,
}

/// The tool calls of a whole response body (see [`OpenAiChat::tool_calls`]).
fn tool_calls(body: &str) -> Result<Vec<ToolCall>, ResponseError> {
    let response: Response = parse_response(body)?;
    if let Some(error) = &response.error {
        return Err(ResponseError::new(
            "/error",
            format!("the provider returned an error: {}", error_text(error)),
        ));
    }
    let Some(calls) = response
        .choices
        .into_iter()
        .next()
        .and_then(|c| c.message)
        .and_then(|m| m.tool_calls)
    else {
        return Ok(Vec::new());
    };
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(calls.len());
    for (i, call) in calls.into_iter().enumerate() {
        let at = format!("/choices/0/message/tool_calls/{i}");
        let id = call
            .id
            .filter(|id| !id.is_empty())
            .ok_or_else(|| ResponseError::new(format!("{at}/id"), "a tool call has no id"))?;
        if !seen.insert(id.clone()) {
            return Err(ResponseError::new(
                format!("{at}/id"),
                format!("the call id `{id}` is used twice"),
            ));
        }
        let function = call.function.ok_or_else(|| {
            ResponseError::new(format!("{at}/function"), "a tool call has no function")
        })?;
        let name = function.name.filter(|n| !n.is_empty()).ok_or_else(|| {
            ResponseError::new(format!("{at}/function/name"), "a tool call has no name")
        })?;
        let arguments = raw_arguments(function.arguments.as_deref())
            .map_err(|message| ResponseError::new(format!("{at}/function/arguments"), message))?;
        out.push(ToolCall::new(id, name, arguments));
    }
    Ok(out)
}

/// Arguments as text: a JSON string's content, or other JSON (an object) as written.
fn raw_arguments(raw: Option<&RawValue>) -> Result<String, String> {
    let Some(raw) = raw else {
        return Ok(super::NO_ARGUMENTS.to_owned());
    };
    let text = raw.get();
    if text.starts_with('"') {
        serde_json::from_str::<String>(text)
            .map(super::no_arguments_as_empty_object)
            .map_err(|e| format!("the arguments string could not be read: {e}"))
    } else if text == "null" {
        Ok(super::NO_ARGUMENTS.to_owned())
    } else {
        Ok(text.to_owned())
    }
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    /// A string for OpenAI; some compatible servers send a list of parts (read as no text).
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

/// The stream parser for Chat Completions chunks (`chat.completion.chunk`).
///
/// ```
/// use pleach_core::providers::{openai_chat::ChatStreamParser, ProviderEvent, StreamParser, StreamProblem};
///
/// let mut parser = ChatStreamParser::new();
/// parser.feed(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"f","arguments":"{\"a\":"}}]}}]}"#);
/// // The model ran out of tokens mid-arguments: the call fails as incomplete (1007).
/// let events = parser.feed(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#);
/// assert!(matches!(&events[0], ProviderEvent::CallFailed { problem: StreamProblem::Incomplete, .. }));
/// ```
#[derive(Debug, Default)]
pub struct ChatStreamParser {
    calls: CallTable,
    /// The choice of each key.
    choice_of: HashMap<String, u64>,
    /// The most recent key of each choice (for deltas without an `index`).
    last_key: HashMap<u64, String>,
    /// How many calls each choice started (the position of one without an `index`).
    started: HashMap<u64, u64>,
    /// The key a reused `index` now stands for (Ollama sends each whole call as `index: 0`).
    reused: HashMap<String, String>,
    skipped: usize,
}

impl ChatStreamParser {
    /// A parser for one stream.
    ///
    /// ```
    /// use pleach_core::providers::{openai_chat::ChatStreamParser, StreamParser};
    /// let mut parser = ChatStreamParser::new();
    /// assert!(parser.finish().is_empty()); // nothing was open
    /// assert_eq!(parser.skipped(), 0);
    /// ```
    pub fn new() -> Self {
        ChatStreamParser::default()
    }

    fn key(choice: u64, index: u64) -> String {
        if choice == 0 {
            index.to_string()
        } else {
            format!("{choice}/{index}")
        }
    }

    fn tool_call(&mut self, out: &mut Vec<ProviderEvent>, choice: u64, delta: ToolCallDelta) {
        let id = delta.id.filter(|id| !id.is_empty());
        let (name, arguments) = match delta.function {
            Some(f) => (
                f.name.filter(|n| !n.is_empty()),
                f.arguments.unwrap_or_default(),
            ),
            None => (None, String::new()),
        };
        let key = match delta.index {
            Some(index) => {
                let key = Self::key(choice, index);
                self.reused.get(&key).cloned().unwrap_or(key)
            }
            // No index: a call with a new id is the next one (a server that repeats the id on
            // every fragment continues its call); a fragment without one continues the last
            // call of the choice.
            None if id.is_some() => {
                let last = self.last_key.get(&choice).filter(|key| {
                    self.calls.open_call(key).map(|(known, _)| known) == id.as_deref()
                });
                match last {
                    Some(key) => key.clone(),
                    None => Self::key(choice, self.started.get(&choice).copied().unwrap_or(0)),
                }
            }
            None => {
                let Some(key) = self.last_key.get(&choice).cloned() else {
                    let message = "the provider sent a tool-call fragment without an `index` before any call started; it was not run".to_owned();
                    self.calls.fail(
                        out,
                        &Self::key(choice, 0),
                        StreamProblem::UnknownCall,
                        message,
                    );
                    return;
                };
                key
            }
        };
        if let Some((known_id, known_name)) = self.calls.open_call(&key) {
            // A new id with a name on an index in use starts the next call (Ollama sends every
            // call whole as `index: 0`): the open one is over, and ends; if its arguments are
            // not whole, that fails it, as any call that ends early.
            if let (Some(new_id), Some(new_name)) = (id.as_deref(), name.as_deref())
                && new_id != known_id
            {
                self.calls.end(out, &key);
                let base = delta
                    .index
                    .map_or_else(|| key.clone(), |i| Self::key(choice, i));
                let next = format!("{base}#{}", self.started.get(&choice).copied().unwrap_or(0));
                self.reused.insert(base, next.clone());
                self.start_call(out, choice, &next, new_id, new_name);
                self.calls.delta(out, &next, &arguments);
                return;
            }
            let conflict = id.as_deref().is_some_and(|id| id != known_id)
                || name.as_deref().is_some_and(|name| name != known_name);
            if conflict {
                let message = format!(
                    "the provider sent a different id or name for the open call `{known_id}` (index `{key}`); it was not run"
                );
                self.calls
                    .fail(out, &key, StreamProblem::ConflictingCall, message);
                return;
            }
        } else if let (Some(id), Some(name)) = (&id, &name) {
            self.start_call(out, choice, &key, id, name);
        } else if !self.calls.is_known(&key) {
            let message = format!(
                "the provider sent a tool-call fragment for index `{key}` before that call's id and name; it was not run"
            );
            self.calls
                .fail(out, &key, StreamProblem::UnknownCall, message);
            return;
        }
        self.calls.delta(out, &key, &arguments);
    }

    /// Starts a call of `choice` under `key`.
    fn start_call(
        &mut self,
        out: &mut Vec<ProviderEvent>,
        choice: u64,
        key: &str,
        id: &str,
        name: &str,
    ) {
        self.calls.start(out, key, id, name);
        if self.calls.is_open(key) {
            *self.started.entry(choice).or_default() += 1;
            self.choice_of.insert(key.to_owned(), choice);
            self.last_key.insert(choice, key.to_owned());
        }
    }

    fn finish_choice(&mut self, out: &mut Vec<ProviderEvent>, choice: u64, reason: &str) {
        let keys: Vec<String> = self
            .calls
            .open_keys()
            .into_iter()
            .filter(|k| self.choice_of.get(k) == Some(&choice))
            .collect();
        for key in keys {
            match reason {
                "length" | "content_filter" => {
                    let id = self
                        .calls
                        .open_call(&key)
                        .map(|(id, _)| id.to_owned())
                        .unwrap_or_default();
                    let message = format!(
                        "the model stopped (`finish_reason: {reason}`) before the arguments of call `{id}` were complete; it was not run"
                    );
                    self.calls
                        .fail(out, &key, StreamProblem::Incomplete, message);
                }
                _ => self.calls.end(out, &key),
            }
        }
    }
}

impl StreamParser for ChatStreamParser {
    fn feed(&mut self, data: &str) -> Vec<ProviderEvent> {
        let mut out = Vec::new();
        if data.trim() == "[DONE]" {
            for key in self.calls.open_keys() {
                self.calls.end(&mut out, &key);
            }
            return out;
        }
        let chunk: Chunk = match parse_event(data) {
            Ok(chunk) => chunk,
            Err(reason) => {
                lost_event(&mut self.calls, &mut out, &reason);
                return out;
            }
        };
        if let Some(error) = &chunk.error {
            provider_error(&mut self.calls, &mut out, &error_text(error));
            return out;
        }
        let Some(choices) = chunk.choices else {
            if chunk.usage.is_none() {
                self.skipped += 1;
            }
            out.extend(
                chunk
                    .usage
                    .as_ref()
                    .and_then(|u| usage_event(u, "prompt_tokens", "completion_tokens")),
            );
            return out;
        };
        for choice in choices {
            let index = choice.index.unwrap_or(0);
            if let Some(delta) = choice.delta {
                if let Some(Value::String(text)) = delta.content
                    && !text.is_empty()
                {
                    out.push(ProviderEvent::Text { delta: text });
                }
                for call in delta.tool_calls.into_iter().flatten() {
                    self.tool_call(&mut out, index, call);
                }
            }
            // Some servers (SGLang, older Ollama) send `""` on every chunk where OpenAI sends
            // `null`: that is no reason, and ending the calls on it would run them cut short.
            if let Some(reason) = choice.finish_reason.filter(|reason| !reason.is_empty()) {
                self.finish_choice(&mut out, index, &reason);
                out.push(ProviderEvent::Finished {
                    reason: Some(reason),
                });
            }
        }
        out.extend(
            chunk
                .usage
                .as_ref()
                .and_then(|u| usage_event(u, "prompt_tokens", "completion_tokens")),
        );
        out
    }

    fn unreadable(&mut self, reason: &str) -> Vec<ProviderEvent> {
        let mut out = Vec::new();
        lost_event(&mut self.calls, &mut out, reason);
        out
    }

    fn finish(&mut self) -> Vec<ProviderEvent> {
        let mut out = Vec::new();
        end_of_stream(&mut self.calls, &mut out, "`finish_reason` and no `[DONE]`");
        out
    }

    fn skipped(&self) -> usize {
        self.skipped
    }
}

/// What a Chat Completions format does with a result's media.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Media {
    /// Sent in a `user` message after the `tool` messages.
    Follow,
    /// Refused: the `tool` message says so (1019).
    Refuse,
}

/// A conversation as `messages`; each run of `tool` messages is followed by one `user` message
/// holding their media, when they have any and `media` sends them.
fn chat_messages(conversation: &[Message], media: Media) -> Vec<Value> {
    let mut out = Vec::with_capacity(conversation.len());
    let mut attached: Vec<Value> = Vec::new();
    for message in conversation {
        if let Some(tool) = ToolResultMessage::of(message) {
            out.push(tool_message(&tool, media));
            if media == Media::Follow && !tool.attachments.is_empty() {
                attached.extend(media_parts(&tool));
            }
            continue;
        }
        if !attached.is_empty() {
            out.push(json!({ "role": "user", "content": std::mem::take(&mut attached) }));
        }
        out.push(match message {
            Message::User { content } => json!({ "role": "user", "content": content }),
            Message::Assistant {
                content,
                tool_calls,
            } => assistant_message(content.as_deref(), tool_calls),
            // Tool messages were written above; `Message` may grow.
            _ => continue,
        });
    }
    if !attached.is_empty() {
        out.push(json!({ "role": "user", "content": attached }));
    }
    out
}

/// A result's `tool` message: its text, with a line per attachment saying where it went.
fn tool_message(tool: &ToolResultMessage<'_>, media: Media) -> Value {
    let id = tool.call.id();
    if tool.attachments.is_empty() {
        return json!({ "role": "tool", "tool_call_id": id, "content": tool.content });
    }
    let mut content = tool.content.to_owned();
    let mut refused = Vec::new();
    for part in attachments::parts(tool.attachments) {
        let line = match (part, media) {
            (Part::Text(text), _) => text.into_owned(),
            (
                Part::Image { mime, data }
                | Part::Audio { mime, data }
                | Part::File { mime, data, .. },
                Media::Follow,
            ) => {
                format!(
                    "[{mime}, {}: in the next user message]",
                    attachments::human_size(data.len())
                )
            }
            (
                Part::Image { mime, data }
                | Part::Audio { mime, data }
                | Part::File { mime, data, .. },
                Media::Refuse,
            ) => {
                refused.push(format!("{mime} ({})", attachments::human_size(data.len())));
                continue;
            }
        };
        if !content.is_empty() {
            content.push('\n');
        }
        content.push_str(&line);
    }
    if !refused.is_empty() {
        let error = ToolError::new(
            ErrorCode::ContentRefused,
            format!(
                "the tool returned {} and this model API takes text only; ask for a text result",
                refused.join(", ")
            ),
        );
        content = if content.is_empty() {
            error.model_text()
        } else {
            format!("{}\nThe result's text: {content}", error.model_text())
        };
    }
    json!({ "role": "tool", "tool_call_id": id, "content": content })
}

/// A result's media as user-message parts: a text part naming the call, then an `image_url`,
/// `file` or `input_audio` part each (a recording other than WAV or MP3 as a note).
fn media_parts(tool: &ToolResultMessage<'_>) -> Vec<Value> {
    let mut parts = Vec::new();
    for part in attachments::parts(tool.attachments) {
        let value = match part {
            Part::Text(_) => continue, // in the tool message
            Part::Image { mime, data } => json!({
                "type": "image_url",
                "image_url": { "url": attachments::data_url(mime, data) }
            }),
            Part::File { mime, data, name } => json!({
                "type": "file",
                "file": {
                    "filename": name.unwrap_or("attachment"),
                    "file_data": attachments::data_url(mime, data)
                }
            }),
            Part::Audio { mime, data } => match audio_format(mime) {
                Some(format) => json!({
                    "type": "input_audio",
                    "input_audio": { "data": attachments::base64(data), "format": format }
                }),
                None => json!({
                    "type": "text",
                    "text": attachments::not_sent("recording", mime, data.len(), "Chat Completions takes WAV and MP3")
                }),
            },
        };
        if parts.is_empty() {
            parts.push(json!({
                "type": "text",
                "text": format!("Attached by the tool call `{}` ({}):", tool.call.id(), tool.call.name())
            }));
        }
        parts.push(value);
    }
    parts
}

/// The `input_audio` format of a recording's MIME type.
fn audio_format(mime: &str) -> Option<&'static str> {
    match mime {
        "audio/wav" | "audio/x-wav" | "audio/wave" => Some("wav"),
        "audio/mpeg" | "audio/mp3" => Some("mp3"),
        _ => None,
    }
}

/// The assistant message carrying the calls (and text, if any).
fn assistant_message(content: Option<&str>, calls: &[ToolCall]) -> Value {
    let mut message = json!({ "role": "assistant", "content": content });
    if !calls.is_empty() {
        message["tool_calls"] = calls
            .iter()
            .map(|c| {
                json!({
                    "id": c.id(),
                    "type": "function",
                    "function": { "name": c.name(), "arguments": super::arguments_text(c) },
                })
            })
            .collect();
    }
    message
}
