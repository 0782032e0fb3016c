//! Google Gemini (`generateContent` / `streamGenerateContent`, Gemini API and Vertex AI):
//! `functionDeclarations`, `functionCall` parts in whole and streamed responses, and
//! `functionResponse` parts for results.
//!
//! Gemini does not always send call ids. A call without one gets a stable synthetic id:
//! `gemini_<responseId>_<n>`, `n` counting the calls of the response from 0 (characters other
//! than ASCII letters, digits, `_` and `-` in the response id become `_`), or `gemini_call_<n>`
//! when the response has no id. The same response always gives the same ids.
//!
//! Streams: a `functionCall` with `name` and `args` is a whole call, complete at once; one with a
//! `name` only (no `willContinue`) is a whole call without arguments (`{}`). Since Gemini 3 a call
//! can also stream: `{name, willContinue: true}` starts it, parts with `partialArgs` (each a
//! `jsonPath` such as `$.recipe.steps[4]` with a `stringValue`, `numberValue`, `boolValue` or
//! `nullValue`; a string may arrive in pieces, marked `willContinue`) add values, and it ends with
//! an empty `functionCall: {}`, or with a `partialArgs` part where neither the part nor any of its
//! values says `willContinue`. The parser builds the arguments object itself and emits it as one
//! `ArgumentsDelta` right before `CallEnded` (path-addressed values cannot be streamed as a prefix
//! of the final text in general: a later path may land inside an earlier container). A candidate
//! that finishes (`finishReason`) with a streamed call still open fails that call as incomplete.
//! Only the first candidate is read.
//!
//! This file holds the formats ([`Gemini`], and [`GeminiJsonSchema`] for tools sent in JSON
//! Schema), the response's wire types, whole responses read, and results written back; the
//! stream parser is `stream.rs`, and `partialArgs` placed by their `jsonPath` is
//! `partial_args.rs`.
//!
//! ```
//! use pleach_core::providers::{gemini::GeminiStreamParser, ProviderEvent, StreamParser};
//!
//! let mut parser = GeminiStreamParser::new();
//! let chunk = |part: &str| format!(r#"{{"candidates":[{{"content":{{"role":"model","parts":[{part}]}}}}],"responseId":"r1"}}"#);
//! let mut events = parser.feed(&chunk(r#"{"functionCall":{"name":"getWeather","willContinue":true}}"#));
//! events.extend(parser.feed(&chunk(r#"{"functionCall":{"partialArgs":[{"jsonPath":"$.location","stringValue":"Bos","willContinue":true}],"willContinue":true}}"#)));
//! events.extend(parser.feed(&chunk(r#"{"functionCall":{"partialArgs":[{"jsonPath":"$.location","stringValue":"ton"}],"willContinue":true}}"#)));
//! events.extend(parser.feed(&chunk(r#"{"functionCall":{}}"#)));
//! assert_eq!(events, [
//!     ProviderEvent::CallStarted { key: "0".into(), id: "gemini_r1_0".into(), name: "getWeather".into() },
//!     ProviderEvent::ArgumentsDelta { key: "0".into(), fragment: r#"{"location":"Boston"}"#.into() },
//!     ProviderEvent::CallEnded { key: "0".into() },
//! ]);
//! ```

mod partial_args;
mod stream;

pub use stream::GeminiStreamParser;

use std::collections::BTreeSet;

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::call::ToolCall;
use crate::content::ToolOutput;
use crate::conversation::Message;
use crate::error::ToolError;
use crate::tool::ToolDefinition;

use super::attachments::{self, Part as Attachment, with};
use super::format::no_strict_mode;
use super::{
    NO_ARGUMENTS, Profile, ProfileProblem, ProviderFormat, ResponseError, StreamParser,
    ToolResultMessage, arguments_object, error_text, grouped_messages, parse_response,
};

/// Gemini as a [`ProviderFormat`]: `functionDeclarations` with `parameters` in Gemini's OpenAPI
/// subset ([`Profile::Gemini`]), `functionCall` parts in whole and streamed responses
/// ([`GeminiStreamParser`]), `functionResponse` parts for results. Gemini has no strict mode:
/// [`strict_profile`](ProviderFormat::strict_profile) is `None` and
/// [`strict_definition`](ProviderFormat::strict_definition) refuses every tool, saying so.
/// [`GeminiJsonSchema`] is the same format with the JSON Schema sent as it is.
///
/// ```
/// use pleach_core::providers::{gemini::Gemini, ProviderFormat};
/// use pleach_core::{Message, ToolCall};
///
/// let (a, b) = (ToolCall::new("c0", "f", "{}"), ToolCall::new("c1", "g", "{}"));
/// let contents = Gemini.messages(&[
///     Message::User { content: "go".into() },
///     Message::Assistant { content: None, tool_calls: vec![a.clone(), b.clone()] },
///     Message::tool_result(&a, &Ok(serde_json::json!({ "n": 1 }).into())),
///     Message::tool_result(&b, &Ok(serde_json::json!(2).into())),
/// ]);
/// // A turn's results go in one `user` content of `functionResponse` parts.
/// assert_eq!(contents.len(), 3);
/// assert_eq!(contents[2]["parts"][0]["functionResponse"]["response"]["output"]["n"], 1);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Gemini;

impl ProviderFormat for Gemini {
    fn profile(&self) -> Option<Profile> {
        Some(Profile::Gemini)
    }

    fn strict_profile(&self) -> Option<Profile> {
        None
    }

    /// A tool's `functionDeclaration` with `parameters` in Gemini's OpenAPI subset
    /// ([`Profile::Gemini`]: `$ref`s inlined, type arrays made `nullable`, …), or every problem
    /// found. A tool without arguments gets no `parameters` (Gemini refuses an object without
    /// properties).
    ///
    /// ```
    /// use pleach_core::tool;
    /// use pleach_core::providers::{gemini::Gemini, ProviderFormat};
    ///
    /// /// Free-text search over notes.
    /// #[tool]
    /// async fn search_notes(query: String, limit: Option<u32>) -> Vec<String> {
    ///     vec![query; limit.unwrap_or(1) as usize]
    /// }
    ///
    /// let def = Gemini.definition(&search_notes::definition()).unwrap();
    /// assert_eq!(def["name"], "search_notes");
    /// assert_eq!(def["parameters"]["properties"]["limit"]["nullable"], true);
    /// assert!(def["parameters"].get("additionalProperties").is_none());
    /// ```
    fn definition(&self, tool: &ToolDefinition) -> Result<Value, Vec<ProfileProblem>> {
        let parameters = Profile::Gemini.apply_tool(tool)?;
        let mut declaration = json!({ "name": tool.name(), "description": tool.description() });
        let has_properties = parameters
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| !p.is_empty());
        if has_properties {
            declaration["parameters"] = parameters;
        }
        Ok(declaration)
    }

    /// Gemini has no strict mode: one problem saying so, for every tool.
    fn strict_definition(&self, _tool: &ToolDefinition) -> Result<Value, Vec<ProfileProblem>> {
        Err(no_strict_mode("Gemini"))
    }

    /// One tool of `functionDeclarations`: `[{"functionDeclarations": [...]}]`.
    ///
    /// ```
    /// use pleach_core::providers::{gemini::Gemini, ProviderFormat};
    ///
    /// let registry = pleach_core::ToolRegistryBuilder::new().build().unwrap();
    /// let tools = Gemini.request_tools(Gemini.definitions(&registry).unwrap());
    /// assert_eq!(tools, serde_json::json!([{ "functionDeclarations": [] }]));
    /// ```
    fn request_tools(&self, definitions: Vec<Value>) -> Value {
        json!([{ "functionDeclarations": definitions }])
    }

    /// The function calls of a whole response body, from its first candidate, in order; calls
    /// without an id get [`synthetic_call_id`]s.
    ///
    /// ```
    /// use pleach_core::providers::{gemini::Gemini, ProviderFormat};
    ///
    /// let body = r#"{"candidates":[{"content":{"role":"model","parts":[
    ///     {"functionCall":{"name":"weather","args":{"location":"San Francisco"}}}
    /// ]},"finishReason":"STOP"}],"responseId":"abc"}"#;
    /// let calls = Gemini.tool_calls(body).unwrap();
    /// assert_eq!(calls[0].id(), "gemini_abc_0");
    /// assert_eq!(calls[0].arguments(), r#"{"location":"San Francisco"}"#);
    /// ```
    fn tool_calls(&self, body: &str) -> Result<Vec<ToolCall>, ResponseError> {
        tool_calls(body)
    }

    /// The `functionResponse` part for a call's outcome: `{"output": result}`, or `{"error":
    /// message}` for a failure (the keys Gemini's documentation gives for a function's output and
    /// error).
    ///
    /// ```
    /// use pleach_core::{ToolCall, ToolError};
    /// use pleach_core::providers::{gemini::Gemini, ProviderFormat};
    /// use serde_json::json;
    ///
    /// let call = ToolCall::new("gemini_r1_0", "add", "{}");
    /// assert_eq!(
    ///     Gemini.tool_result(&call, &Ok(json!(3).into())),
    ///     json!({ "functionResponse": { "id": "gemini_r1_0", "name": "add", "response": { "output": 3 } } })
    /// );
    /// let failed = Gemini.tool_result(&call, &Err(ToolError::failed("boom")));
    /// assert_eq!(failed["functionResponse"]["response"], json!({ "error": "error 1008: boom" }));
    /// ```
    fn tool_result(&self, call: &ToolCall, outcome: &Result<ToolOutput, ToolError>) -> Value {
        match outcome {
            Ok(output) if output.content.is_empty() => {
                let value = output.structured.as_ref().unwrap_or(&Value::Null);
                response_part(
                    call.id(),
                    call.name(),
                    &json!({ "output": value }),
                    Vec::new(),
                )
            }
            Err(error) => response_part(
                call.id(),
                call.name(),
                &json!({ "error": error.model_text() }),
                Vec::new(),
            ),
            Ok(_) => {
                let message = Message::tool_result(call, outcome);
                ToolResultMessage::of(&message).map_or(Value::Null, |tool| result_part(&tool))
            }
        }
    }

    /// The `model` content carrying the calls as `functionCall` parts (after a text part, if
    /// any). Arguments that are not a JSON object (a call that failed to parse) are sent as `{}`.
    ///
    /// A call's [`signature`](ToolCall::signature) (the `thoughtSignature` Gemini 3 sent with it,
    /// and requires back) goes on its part, beside `functionCall`.
    ///
    /// ```
    /// use pleach_core::ToolCall;
    /// use pleach_core::providers::{gemini::Gemini, ProviderFormat};
    /// use serde_json::json;
    ///
    /// let content = Gemini.assistant_messages(None, &[ToolCall::new("gemini_r1_0", "add", r#"{"a":1}"#)]);
    /// assert_eq!(content, [json!({ "role": "model", "parts": [
    ///     { "functionCall": { "id": "gemini_r1_0", "name": "add", "args": { "a": 1 } } }
    /// ] })]);
    /// ```
    fn assistant_messages(&self, content: Option<&str>, calls: &[ToolCall]) -> Vec<Value> {
        vec![assistant_message(content, calls)]
    }

    /// A conversation as Gemini `contents`: consecutive tool results go into one `user` content
    /// of `functionResponse` parts (see [`Gemini`] for an example).
    fn messages(&self, conversation: &[Message]) -> Vec<Value> {
        grouped_messages(
            conversation,
            |text| json!({ "role": "user", "parts": [{ "text": text }] }),
            assistant_message,
            result_part,
            |parts| with(json!({ "role": "user" }), "parts", parts),
        )
    }

    fn stream_parser(&self) -> Box<dyn StreamParser + Send> {
        Box::new(GeminiStreamParser::new())
    }
}

/// Gemini with each tool's JSON Schema as it is (but for bounds past 2^53, see
/// `docs/providers.md`) in `parametersJsonSchema`, the newer field that takes JSON Schema rather
/// than the OpenAPI subset: no tool is refused. Calls, results, messages and streams are
/// [`Gemini`]'s.
///
/// ```
/// use pleach_core::{ToolError, ToolRegistryBuilder, ToolDefinition};
/// use pleach_core::providers::{gemini::GeminiJsonSchema, ProviderFormat};
///
/// let ping = ToolDefinition::builder("ping", "Answers pong.")
///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
///     .unwrap();
/// assert_eq!(GeminiJsonSchema.definition(&ping).unwrap()["parametersJsonSchema"], serde_json::json!({ "type": "object" }));
/// let registry = ToolRegistryBuilder::new().register(ping).build().unwrap();
/// let tools = GeminiJsonSchema.request_tools(GeminiJsonSchema.definitions(&registry).unwrap());
/// assert_eq!(tools[0]["functionDeclarations"][0]["parametersJsonSchema"]["type"], "object");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct GeminiJsonSchema;

impl ProviderFormat for GeminiJsonSchema {
    fn profile(&self) -> Option<Profile> {
        None
    }

    fn strict_profile(&self) -> Option<Profile> {
        None
    }

    fn definition(&self, tool: &ToolDefinition) -> Result<Value, Vec<ProfileProblem>> {
        Ok(json!({
            "name": tool.name(),
            "description": tool.description(),
            "parametersJsonSchema": super::profile::sendable_numbers(tool.input_schema()),
        }))
    }

    fn strict_definition(&self, tool: &ToolDefinition) -> Result<Value, Vec<ProfileProblem>> {
        Gemini.strict_definition(tool)
    }

    fn request_tools(&self, definitions: Vec<Value>) -> Value {
        Gemini.request_tools(definitions)
    }

    fn tool_calls(&self, body: &str) -> Result<Vec<ToolCall>, ResponseError> {
        Gemini.tool_calls(body)
    }

    fn tool_result(&self, call: &ToolCall, outcome: &Result<ToolOutput, ToolError>) -> Value {
        Gemini.tool_result(call, outcome)
    }

    fn assistant_messages(&self, content: Option<&str>, calls: &[ToolCall]) -> Vec<Value> {
        Gemini.assistant_messages(content, calls)
    }

    fn messages(&self, conversation: &[Message]) -> Vec<Value> {
        Gemini.messages(conversation)
    }

    fn stream_parser(&self) -> Box<dyn StreamParser + Send> {
        Gemini.stream_parser()
    }
}

/// Characters kept in a synthetic id; others become `_`.
fn id_char(c: char) -> char {
    if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
        c
    } else {
        '_'
    }
}

/// The id of the `n`-th call of a response (see the module docs).
///
/// ```
/// use pleach_core::providers::gemini::synthetic_call_id;
/// assert_eq!(synthetic_call_id(Some("b36L/ac"), 2), "gemini_b36L_ac_2");
/// assert_eq!(synthetic_call_id(None, 0), "gemini_call_0");
/// ```
pub fn synthetic_call_id(response_id: Option<&str>, n: u64) -> String {
    match response_id.filter(|r| !r.is_empty()) {
        Some(response) => format!(
            "gemini_{}_{n}",
            response.chars().map(id_char).collect::<String>()
        ),
        None => format!("gemini_call_{n}"),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Chunk {
    #[serde(default)]
    candidates: Option<Vec<Candidate>>,
    #[serde(default)]
    usage_metadata: Option<Value>,
    #[serde(default)]
    response_id: Option<String>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    #[serde(default)]
    content: Option<Content>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Content {
    #[serde(default)]
    parts: Option<Vec<Part>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thought: Option<bool>,
    #[serde(default)]
    function_call: Option<FunctionCall>,
    /// Gemini 3's signature of the thought behind the part; on a `functionCall` part it must be
    /// sent back with the call.
    #[serde(default)]
    thought_signature: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FunctionCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    args: Option<Box<RawValue>>,
    #[serde(default)]
    partial_args: Option<Vec<PartialArg>>,
    #[serde(default)]
    will_continue: Option<bool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PartialArg {
    #[serde(default)]
    json_path: Option<String>,
    #[serde(default)]
    string_value: Option<String>,
    #[serde(default)]
    number_value: Option<serde_json::Number>,
    #[serde(default)]
    bool_value: Option<bool>,
    #[serde(default, deserialize_with = "present")]
    null_value: bool,
    #[serde(default)]
    will_continue: Option<bool>,
}

/// `true` when the field is there at all (`nullValue` is `"NULL_VALUE"` or `null`).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(deserializer).map(|_| true)
}

/// The function calls of a whole response body (see [`Gemini::tool_calls`]).
fn tool_calls(body: &str) -> Result<Vec<ToolCall>, ResponseError> {
    let response: Chunk = parse_response(body)?;
    if let Some(error) = &response.error {
        return Err(ResponseError::new(
            "/error",
            format!("the provider returned an error: {}", error_text(error)),
        ));
    }
    let parts = response
        .candidates
        .into_iter()
        .flatten()
        .next()
        .and_then(|c| c.content)
        .and_then(|c| c.parts)
        .unwrap_or_default();
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    let mut n = 0;
    for (i, part) in parts.into_iter().enumerate() {
        let Some(call) = &part.function_call else {
            continue;
        };
        let at = format!("/candidates/0/content/parts/{i}/functionCall");
        let name = call.name.clone().filter(|n| !n.is_empty()).ok_or_else(|| {
            ResponseError::new(format!("{at}/name"), "a function call has no name")
        })?;
        let id = call
            .id
            .clone()
            .filter(|id| !id.is_empty())
            .unwrap_or_else(|| synthetic_call_id(response.response_id.as_deref(), n));
        n += 1;
        if !seen.insert(id.clone()) {
            return Err(ResponseError::new(
                format!("{at}/id"),
                format!("the call id `{id}` is used twice"),
            ));
        }
        let arguments = call.args.as_ref().map_or(NO_ARGUMENTS, |raw| raw.get());
        let signature = part.thought_signature.as_deref().unwrap_or_default();
        out.push(ToolCall::joined(&id, &name, arguments, signature));
    }
    Ok(out)
}

fn response_part(id: &str, name: &str, response: &Value, parts: Vec<Value>) -> Value {
    if parts.is_empty() {
        return json!({ "functionResponse": { "id": id, "name": name, "response": response } });
    }
    let function_response = json!({ "id": id, "name": name, "response": response });
    with(
        json!({}),
        "functionResponse",
        with(function_response, "parts", parts),
    )
}

/// A tool-result message as a `functionResponse` part: `response` holds `output` (the result's
/// text read back as JSON where it is JSON) or `error`, and the media go in the function
/// response's own `parts` as `inlineData` (text attachments in `response.content`).
fn result_part(tool: &ToolResultMessage<'_>) -> Value {
    let (id, name, content) = (tool.call.id(), tool.call.name(), tool.content);
    let mut response = if tool.is_error {
        json!({ "error": content })
    } else {
        let output = serde_json::from_str::<Value>(content)
            .unwrap_or_else(|_| Value::String(content.to_owned()));
        json!({ "output": output })
    };
    let mut texts = Vec::new();
    let mut parts = Vec::new();
    for part in attachments::parts(tool.attachments) {
        let (mime, data, display_name) = match part {
            Attachment::Text(text) => {
                texts.push(Value::from(text.into_owned()));
                continue;
            }
            Attachment::Image { mime, data } | Attachment::Audio { mime, data } => {
                (mime, data, None)
            }
            Attachment::File { mime, data, name } => (mime, data, name),
        };
        let mut inline = with(
            json!({ "mimeType": mime }),
            "data",
            attachments::base64(data),
        );
        if let Some(display_name) = display_name {
            inline["displayName"] = Value::from(display_name);
        }
        parts.push(with(json!({}), "inlineData", inline));
    }
    if !texts.is_empty() {
        response["content"] = Value::Array(texts);
    }
    response_part(id, name, &response, parts)
}

/// The `model` content carrying the calls as `functionCall` parts (after a text part, if any),
/// each with its signature.
fn assistant_message(content: Option<&str>, calls: &[ToolCall]) -> Value {
    let text = content
        .filter(|t| !t.is_empty())
        .map(|t| json!({ "text": t }));
    let parts: Vec<Value> = text
        .into_iter()
        .chain(calls.iter().map(|c| {
            let mut part = json!({ "functionCall": { "id": c.id(), "name": c.name(), "args": arguments_object(c) } });
            if let Some(signature) = c.signature() {
                part["thoughtSignature"] = Value::from(signature);
            }
            part
        }))
        .collect();
    json!({ "role": "model", "parts": parts })
}
