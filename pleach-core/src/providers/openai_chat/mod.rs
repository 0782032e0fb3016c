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

use std::collections::BTreeSet;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::call::ToolCall;
use crate::content::ToolOutput;
use crate::conversation::Message;
use crate::error::ToolError;
use crate::tool::ToolDefinition;

use super::{
    Profile, ProfileProblem, ProviderFormat, ResponseError, StreamParser, ToolResultMessage,
    error_text, openai_parameters, parse_response,
};

mod messages;
mod stream;

use messages::{Media, assistant_message, chat_messages, tool_message};
pub use stream::ChatStreamParser;

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
