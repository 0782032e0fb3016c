//! OpenAI Responses API (and Azure OpenAI's): flat tool definitions, `function_call` output
//! items, and `function_call_output` input items for results.
//!
//! Streams: a call starts with `response.output_item.added` (an item of type `function_call`, its
//! `id` the key, its `call_id` the call id results are matched back by), its fragments come in
//! `response.function_call_arguments.delta` keyed by `item_id`, and it ends with
//! `response.function_call_arguments.done` (or, failing that, `response.output_item.done`). The
//! final `arguments` of the end event are checked against the streamed fragments: if none were
//! streamed, the final text is the arguments; if they differ, the call fails. A
//! `response.incomplete` (token limit) fails the open calls as incomplete (1007); an `error` event
//! or `response.failed` fails them as well. Several responses in one stream (multi-step) are fine.
//!
//! ```
//! use pleach_core::providers::{openai_responses::ResponsesStreamParser, ProviderEvent, StreamParser};
//!
//! let mut parser = ResponsesStreamParser::new();
//! let mut events = parser.feed(r#"{"type":"response.output_item.added","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"call_1","name":"ping","arguments":""}}"#);
//! events.extend(parser.feed(r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"{}"}"#));
//! events.extend(parser.feed(r#"{"type":"response.function_call_arguments.done","item_id":"fc_1","output_index":0,"arguments":"{}"}"#));
//! assert_eq!(events[0], ProviderEvent::CallStarted { key: "fc_1".into(), id: "call_1".into(), name: "ping".into() });
//! assert_eq!(events[2], ProviderEvent::CallEnded { key: "fc_1".into() });
//! ```

use std::collections::{BTreeSet, HashMap};

use serde::Deserialize;
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
    StreamParser, StreamProblem, ToolResultMessage, end_of_stream, error_text, lost_event,
    no_arguments_as_empty_object, openai_parameters, parse_event, parse_response, provider_error,
    usage_event,
};

/// The OpenAI Responses API as a [`ProviderFormat`]: flat function definitions (`"strict"`
/// always sent: the API takes a function as strict when the field is left out; strict mode
/// through [`Profile::OpenAiStrict`]), `function_call` output items in whole and streamed
/// responses ([`ResponsesStreamParser`]), `function_call_output` input items for results.
///
/// ```
/// use pleach_core::providers::{openai_responses::OpenAiResponses, ProviderFormat};
/// use pleach_core::{Message, ToolCall};
///
/// let call = ToolCall::new("call_1", "ping", "{}");
/// let input = OpenAiResponses.messages(&[
///     Message::User { content: "ping?".into() },
///     Message::Assistant { content: None, tool_calls: vec![call.clone()] },
///     Message::tool_result(&call, &Ok(serde_json::json!("pong").into())),
/// ]);
/// assert_eq!(input.len(), 3);
/// assert_eq!(input[2]["type"], "function_call_output");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct OpenAiResponses;

impl ProviderFormat for OpenAiResponses {
    fn profile(&self) -> Option<Profile> {
        None
    }

    fn strict_profile(&self) -> Option<Profile> {
        Some(Profile::OpenAiStrict)
    }

    /// The definition, not strict (`"strict": false` is sent explicitly: the Responses API
    /// takes function tools as strict when the field is left out). Never refused.
    ///
    /// ```
    /// use pleach_core::{ToolError, ToolDefinition};
    /// use pleach_core::providers::{openai_responses::OpenAiResponses, ProviderFormat};
    ///
    /// let tool = ToolDefinition::builder("ping", "Answers pong.")
    ///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
    ///     .unwrap();
    /// assert_eq!(OpenAiResponses.definition(&tool).unwrap(), serde_json::json!({
    ///     "type": "function",
    ///     "name": "ping",
    ///     "description": "Answers pong.",
    ///     "parameters": { "type": "object" },
    ///     "strict": false
    /// }));
    /// ```
    fn definition(&self, tool: &ToolDefinition) -> Result<Value, Vec<ProfileProblem>> {
        openai_parameters(tool, false).map(|parameters| wrap(tool, &parameters, false))
    }

    /// The definition in strict mode ([`Profile::OpenAiStrict`]), or every problem found.
    ///
    /// ```
    /// use pleach_core::tool;
    /// use pleach_core::providers::{openai_responses::OpenAiResponses, ProviderFormat};
    ///
    /// /// Raises an integer to a power.
    /// #[tool]
    /// async fn power(base: i64, exponent: u32) -> i64 {
    ///     base.pow(exponent)
    /// }
    ///
    /// let def = OpenAiResponses.strict_definition(&power::definition()).unwrap();
    /// assert_eq!(def["strict"], true);
    /// assert_eq!(def["parameters"]["additionalProperties"], false);
    /// ```
    fn strict_definition(&self, tool: &ToolDefinition) -> Result<Value, Vec<ProfileProblem>> {
        openai_parameters(tool, true).map(|parameters| wrap(tool, &parameters, true))
    }

    /// The function calls of a whole response body: its `function_call` output items, in order,
    /// each as a [`ToolCall`] whose id is the item's `call_id`.
    ///
    /// ```
    /// use pleach_core::providers::{openai_responses::OpenAiResponses, ProviderFormat};
    ///
    /// let body = r#"{"status":"completed","output":[
    ///     {"type":"reasoning","id":"rs_1","summary":[]},
    ///     {"type":"function_call","id":"fc_1","call_id":"call_1","name":"add","arguments":"{\"a\":1}","status":"completed"}
    /// ]}"#;
    /// let calls = OpenAiResponses.tool_calls(body).unwrap();
    /// assert_eq!(calls.len(), 1);
    /// assert_eq!(calls[0].id(), "call_1");
    /// ```
    fn tool_calls(&self, body: &str) -> Result<Vec<ToolCall>, ResponseError> {
        tool_calls(body)
    }

    /// The `function_call_output` input item for a call's outcome.
    ///
    /// ```
    /// use pleach_core::ToolCall;
    /// use pleach_core::providers::{openai_responses::OpenAiResponses, ProviderFormat};
    /// use serde_json::json;
    ///
    /// let call = ToolCall::new("call_1", "add", "{}");
    /// assert_eq!(
    ///     OpenAiResponses.tool_result(&call, &Ok(json!(3).into())),
    ///     json!({ "type": "function_call_output", "call_id": "call_1", "output": "3" })
    /// );
    /// ```
    fn tool_result(&self, call: &ToolCall, outcome: &Result<ToolOutput, ToolError>) -> Value {
        let message = Message::tool_result(call, outcome);
        ToolResultMessage::of(&message).map_or(Value::Null, |tool| output_item(&tool))
    }

    /// The input items of an assistant turn: its text as an assistant message (if any), then
    /// one `function_call` item per call.
    ///
    /// ```
    /// use pleach_core::ToolCall;
    /// use pleach_core::providers::{openai_responses::OpenAiResponses, ProviderFormat};
    /// use serde_json::json;
    ///
    /// let items = OpenAiResponses.assistant_messages(Some("Checking."), &[ToolCall::new("call_1", "ping", "{}")]);
    /// assert_eq!(items[0], json!({ "role": "assistant", "content": "Checking." }));
    /// assert_eq!(items[1], json!({ "type": "function_call", "call_id": "call_1", "name": "ping", "arguments": "{}" }));
    /// ```
    fn assistant_messages(&self, content: Option<&str>, calls: &[ToolCall]) -> Vec<Value> {
        assistant_items(content, calls)
    }

    /// A conversation as Responses API `input` items (see [`OpenAiResponses`] for an example).
    fn messages(&self, conversation: &[Message]) -> Vec<Value> {
        let mut items = Vec::new();
        for message in conversation {
            match message {
                Message::User { content } => {
                    items.push(json!({ "role": "user", "content": content }));
                }
                Message::Assistant {
                    content,
                    tool_calls,
                } => {
                    items.extend(assistant_items(content.as_deref(), tool_calls));
                }
                Message::Tool { .. } => {
                    if let Some(tool) = ToolResultMessage::of(message) {
                        items.push(output_item(&tool));
                    }
                }
            }
        }
        items
    }

    fn stream_parser(&self) -> Box<dyn StreamParser + Send> {
        Box::new(ResponsesStreamParser::new())
    }
}

fn wrap(tool: &ToolDefinition, parameters: &Value, strict: bool) -> Value {
    json!({
        "type": "function",
        "name": tool.name(),
        "description": tool.description(),
        "parameters": parameters,
        "strict": strict,
    })
}

#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    id: Option<String>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    call_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    /// A function call's arguments text; a tool search call's arguments object.
    #[serde(default)]
    arguments: Option<Value>,
    /// Who runs a tool search call: `client` (this runtime) or `server` (the provider).
    #[serde(default)]
    execution: Option<String>,
}

impl Item {
    /// The arguments as text: a string as it is, anything else (a tool search call's object) as
    /// its JSON text.
    fn arguments_text(&self) -> Option<String> {
        match self.arguments.as_ref()? {
            Value::String(text) => Some(text.clone()),
            Value::Null => None,
            other => Some(other.to_string()),
        }
    }

    /// Whether this is a tool search call the client runs (`execution: "client"`).
    fn is_client_search(&self) -> bool {
        self.kind.as_deref() == Some("tool_search_call")
            && self.execution.as_deref() == Some("client")
    }
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    output: Vec<Item>,
    #[serde(default)]
    error: Option<Value>,
}

/// The function calls of a whole response body (see [`OpenAiResponses::tool_calls`]).
fn tool_calls(body: &str) -> Result<Vec<ToolCall>, ResponseError> {
    let response: Response = parse_response(body)?;
    if let Some(error) = response.error.as_ref().filter(|e| !e.is_null()) {
        return Err(ResponseError::new(
            "/error",
            format!("the provider returned an error: {}", error_text(error)),
        ));
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for (i, item) in response.output.into_iter().enumerate() {
        let search = item.is_client_search();
        if item.kind.as_deref() != Some("function_call") && !search {
            continue;
        }
        let at = format!("/output/{i}");
        let id = item
            .call_id
            .clone()
            .filter(|id| !id.is_empty())
            .ok_or_else(|| {
                ResponseError::new(format!("{at}/call_id"), "a function call has no call_id")
            })?;
        if !seen.insert(id.clone()) {
            return Err(ResponseError::new(
                format!("{at}/call_id"),
                format!("the call id `{id}` is used twice"),
            ));
        }
        let name = if search {
            TOOL_SEARCH_CALL.to_owned()
        } else {
            item.name.clone().filter(|n| !n.is_empty()).ok_or_else(|| {
                ResponseError::new(format!("{at}/name"), "a function call has no name")
            })?
        };
        let arguments = item
            .arguments_text()
            .map_or_else(|| NO_ARGUMENTS.to_owned(), no_arguments_as_empty_object);
        out.push(ToolCall::new(id, name, arguments));
    }
    Ok(out)
}

#[derive(Deserialize)]
struct Event {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    item_id: Option<String>,
    #[serde(default)]
    delta: Option<Value>,
    #[serde(default)]
    arguments: Option<String>,
    #[serde(default)]
    item: Option<Item>,
    #[serde(default)]
    response: Option<Value>,
    #[serde(default)]
    message: Option<Value>,
}

/// Event types the parser knows and has nothing to do with (not counted as skipped).
const IGNORED: &[&str] = &[
    "response.created",
    "response.in_progress",
    "response.queued",
    "response.content_part.added",
    "response.content_part.done",
    "response.output_text.done",
    "response.output_text.annotation.added",
    "response.refusal.delta",
    "response.refusal.done",
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_part.done",
    "response.reasoning_summary_text.delta",
    "response.reasoning_summary_text.done",
    "response.reasoning_text.delta",
    "response.reasoning_text.done",
];

/// The stream parser for Responses API events.
///
/// ```
/// use pleach_core::providers::{openai_responses::ResponsesStreamParser, ProviderEvent, StreamParser, StreamProblem};
///
/// let mut parser = ResponsesStreamParser::new();
/// // Arguments for an item that never started: that call fails, nothing else does.
/// let events = parser.feed(r#"{"type":"response.function_call_arguments.delta","item_id":"fc_9","delta":"{"}"#);
/// assert!(matches!(&events[0], ProviderEvent::CallFailed { key, problem: StreamProblem::UnknownCall, .. } if key == "fc_9"));
/// ```
#[derive(Debug, Default)]
pub struct ResponsesStreamParser {
    calls: CallTable,
    /// The fragments streamed so far per open call, to check the final `arguments` against.
    received: HashMap<String, String>,
    skipped: usize,
}

impl ResponsesStreamParser {
    /// A parser for one stream.
    ///
    /// ```
    /// use pleach_core::providers::{openai_responses::ResponsesStreamParser, StreamParser};
    /// let mut parser = ResponsesStreamParser::new();
    /// assert!(parser.finish().is_empty()); // nothing was open
    /// assert_eq!(parser.skipped(), 0);
    /// ```
    pub fn new() -> Self {
        ResponsesStreamParser::default()
    }

    fn item_added(&mut self, out: &mut Vec<ProviderEvent>, item: &Item) {
        if item.kind.as_deref() != Some("function_call") {
            return;
        }
        let Some(key) = item.id.clone().or_else(|| item.call_id.clone()) else {
            let message = "the provider started a function call without an item id or call id; it was not run".to_owned();
            self.calls
                .fail(out, "", StreamProblem::UnknownCall, message);
            return;
        };
        self.calls.start(
            out,
            &key,
            item.call_id.as_deref().unwrap_or_default(),
            item.name.as_deref().unwrap_or_default(),
        );
        if self.calls.is_open(&key) {
            let arguments = item.arguments_text().unwrap_or_default();
            self.calls.delta(out, &key, &arguments);
            self.received.insert(key, arguments);
        }
    }

    fn arguments_delta(&mut self, out: &mut Vec<ProviderEvent>, key: &str, fragment: &str) {
        if let Some(received) = self.received.get_mut(key) {
            received.push_str(fragment);
        }
        self.calls.delta(out, key, fragment);
    }

    /// The end signal, with the final arguments if the event carried them.
    fn end(
        &mut self,
        out: &mut Vec<ProviderEvent>,
        key: &str,
        call_id: Option<&str>,
        arguments: Option<&str>,
    ) {
        let Some((id, _)) = self.calls.open_call(key) else {
            // Ended already (`arguments.done` then `output_item.done`), or never started.
            if !self.calls.is_known(key) {
                self.calls.end(out, key);
            }
            return;
        };
        if let Some(call_id) = call_id.filter(|c| !c.is_empty() && *c != id) {
            let message = format!(
                "the provider ended the call `{id}` (item `{key}`) under another call id, `{call_id}`; it was not run"
            );
            self.received.remove(key);
            self.calls
                .fail(out, key, StreamProblem::ConflictingCall, message);
            return;
        }
        let received = self.received.remove(key).unwrap_or_default();
        if let Some(arguments) = arguments {
            if received.is_empty() {
                self.calls.delta(out, key, arguments);
            } else if received != arguments {
                let message = format!(
                    "the final arguments of call `{id}` differ from the fragments streamed for it; it was not run"
                );
                self.calls
                    .fail(out, key, StreamProblem::ArgumentsMismatch, message);
                return;
            }
        }
        self.calls.end(out, key);
    }

    /// A client-run tool search call, whole: a call of [`TOOL_SEARCH_CALL`] with the item's
    /// arguments object as its arguments.
    fn search_called(&mut self, out: &mut Vec<ProviderEvent>, item: &Item) {
        let (Some(key), Some(call_id)) = (
            item.id.clone().or_else(|| item.call_id.clone()),
            item.call_id.as_deref().filter(|id| !id.is_empty()),
        ) else {
            let message =
                "the provider made a client tool search call without a call id; it was not run"
                    .to_owned();
            self.calls
                .fail(out, "", StreamProblem::UnknownCall, message);
            return;
        };
        self.calls.start(out, &key, call_id, TOOL_SEARCH_CALL);
        if self.calls.is_open(&key) {
            let arguments = item.arguments_text().unwrap_or_default();
            self.calls.delta(out, &key, &arguments);
            self.calls.end(out, &key);
        }
    }

    /// `response.completed` or `response.incomplete`: calls still open get no end signal any more.
    fn response_ended(&mut self, out: &mut Vec<ProviderEvent>, incomplete: bool, response: &Value) {
        if incomplete {
            let reason = response
                .pointer("/incomplete_details/reason")
                .and_then(Value::as_str)
                .unwrap_or("incomplete")
                .to_owned();
            self.calls.fail_open(out, StreamProblem::Incomplete, |id| {
                format!("the response ended incomplete (`{reason}`) before the arguments of call `{id}` were complete; it was not run")
            });
        } else {
            end_of_stream(
                &mut self.calls,
                out,
                "`response.function_call_arguments.done`",
            );
        }
        self.received.clear();
        let reason = response
            .get("status")
            .and_then(Value::as_str)
            .map(str::to_owned);
        out.push(ProviderEvent::Finished { reason });
        out.extend(
            response
                .get("usage")
                .and_then(|u| usage_event(u, "input_tokens", "output_tokens")),
        );
    }
}

impl StreamParser for ResponsesStreamParser {
    fn feed(&mut self, data: &str) -> Vec<ProviderEvent> {
        let mut out = Vec::new();
        let event: Event = match parse_event(data) {
            Ok(event) => event,
            Err(reason) => {
                lost_event(&mut self.calls, &mut out, &reason);
                return out;
            }
        };
        let kind = event.kind.as_deref().unwrap_or_default();
        match kind {
            "response.output_item.added" => {
                if let Some(item) = event.item {
                    self.item_added(&mut out, &item);
                }
            }
            "response.function_call_arguments.delta" => {
                let key = event.item_id.unwrap_or_default();
                let fragment = event
                    .delta
                    .as_ref()
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                self.arguments_delta(&mut out, &key, fragment);
            }
            "response.function_call_arguments.done" => {
                let key = event.item_id.unwrap_or_default();
                self.end(&mut out, &key, None, event.arguments.as_deref());
            }
            "response.output_item.done" => match event.item {
                Some(item) if item.kind.as_deref() == Some("function_call") => {
                    let key = item
                        .id
                        .clone()
                        .or_else(|| item.call_id.clone())
                        .unwrap_or_default();
                    self.end(
                        &mut out,
                        &key,
                        item.call_id.as_deref(),
                        item.arguments_text().as_deref(),
                    );
                }
                Some(item) if item.is_client_search() => self.search_called(&mut out, &item),
                _ => {}
            },
            "response.output_text.delta" => {
                if let Some(text) = event
                    .delta
                    .as_ref()
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                {
                    out.push(ProviderEvent::Text {
                        delta: text.to_owned(),
                    });
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = event.response.unwrap_or(Value::Null);
                self.response_ended(&mut out, kind == "response.incomplete", &response);
            }
            "response.failed" | "error" => {
                let message = event
                    .response
                    .as_ref()
                    .and_then(|r| r.get("error"))
                    .filter(|e| !e.is_null())
                    .or(event.message.as_ref())
                    .map_or_else(|| "the response failed".to_owned(), error_text);
                provider_error(&mut self.calls, &mut out, &message);
                self.received.clear();
            }
            k if IGNORED.contains(&k) => {}
            k if k.starts_with("response.output_item.") => {}
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
        end_of_stream(
            &mut self.calls,
            &mut out,
            "`response.function_call_arguments.done`",
        );
        self.received.clear();
        out
    }

    fn skipped(&self) -> usize {
        self.skipped
    }
}

/// The name a client-run tool search call (a `tool_search_call` item with `execution: "client"`)
/// is read under: the item has no name of its own. The agent loop runs it as its search tool.
pub(crate) const TOOL_SEARCH_CALL: &str = "tool_search";

/// A function definition the API holds back until a tool search loads it: `defer_loading: true`.
#[cfg(feature = "http")]
pub(crate) fn deferred_definition(mut definition: Value) -> Value {
    definition["defer_loading"] = Value::Bool(true);
    definition
}

/// The client-run tool search tool: `{"type":"tool_search","execution":"client",…}` with the
/// search tool's description and parameters, in place of its function definition.
#[cfg(feature = "http")]
pub(crate) fn tool_search_tool(description: &str, parameters: &Value) -> Value {
    json!({
        "type": "tool_search",
        "execution": "client",
        "description": description,
        "parameters": parameters,
    })
}

/// The `tool_choice` that makes the model call the client-run `tool_search` tool: `allowed_tools`
/// (the tools it may call) with that tool alone and mode `required` (it must call one).
#[cfg(feature = "http")]
pub(crate) fn tool_search_choice() -> Value {
    json!({
        "type": "allowed_tools",
        "mode": "required",
        "tools": [{ "type": "tool_search" }],
    })
}

/// Rewrites the calls of the search tool `search_tool` in `items` (the request's `input`) as the
/// API's client tool search items: each `function_call` becomes a `tool_search_call` (its
/// arguments an object), and its `function_call_output` a `tool_search_output` whose `tools` are
/// the definitions `loaded` gives for the result's text (none for a failed search).
#[cfg(feature = "http")]
pub(crate) fn search_items(
    items: &mut [Value],
    search_tool: &str,
    loaded: impl Fn(&str) -> Vec<Value>,
) {
    let mut searches = BTreeSet::new();
    for item in items.iter_mut() {
        match item["type"].as_str() {
            Some("function_call") if item["name"] == search_tool => {
                let call_id = item["call_id"].clone();
                let arguments = item["arguments"]
                    .as_str()
                    .and_then(|text| serde_json::from_str::<Value>(text).ok())
                    .filter(Value::is_object)
                    .unwrap_or_else(|| json!({}));
                searches.extend(call_id.as_str().map(str::to_owned));
                *item = json!({
                    "type": "tool_search_call",
                    "call_id": call_id,
                    "execution": "client",
                    "status": "completed",
                    "arguments": arguments,
                });
            }
            Some("function_call_output")
                if item["call_id"]
                    .as_str()
                    .is_some_and(|id| searches.contains(id)) =>
            {
                let tools = item["output"].as_str().map(&loaded).unwrap_or_default();
                *item = json!({
                    "type": "tool_search_output",
                    "call_id": item["call_id"].clone(),
                    "execution": "client",
                    "status": "completed",
                    "tools": tools,
                });
            }
            _ => {}
        }
    }
}

fn output_item(tool: &ToolResultMessage<'_>) -> Value {
    let call_id = tool.call.id();
    if tool.attachments.is_empty() {
        let output = tool.content;
        return json!({ "type": "function_call_output", "call_id": call_id, "output": output });
    }
    // An output with media is an array of `input_text`, `input_image` and `input_file` parts.
    let mut output = Vec::with_capacity(tool.attachments.len() + 1);
    if !tool.content.is_empty() {
        output.push(json!({ "type": "input_text", "text": tool.content }));
    }
    for part in attachments::parts(tool.attachments) {
        output.push(match part {
            Part::Text(text) => json!({ "type": "input_text", "text": text }),
            Part::Image { mime, data } => with(
                json!({ "type": "input_image" }),
                "image_url",
                attachments::data_url(mime, data),
            ),
            Part::File { mime, data, name } => with(
                json!({ "type": "input_file", "filename": name.unwrap_or("attachment") }),
                "file_data",
                attachments::data_url(mime, data),
            ),
            Part::Audio { mime, data } => json!({
                "type": "input_text",
                "text": attachments::not_sent("recording", mime, data.len(), "a function_call_output takes no audio")
            }),
        });
    }
    let item = json!({ "type": "function_call_output", "call_id": call_id });
    with(item, "output", output)
}

/// The input items of an assistant turn: its text as an assistant message (if any), then one
/// `function_call` item per call.
fn assistant_items(content: Option<&str>, calls: &[ToolCall]) -> Vec<Value> {
    let text = content
        .filter(|t| !t.is_empty())
        .map(|t| json!({ "role": "assistant", "content": t }));
    text.into_iter()
        .chain(calls.iter().map(|c| {
            json!({ "type": "function_call", "call_id": c.id(), "name": c.name(), "arguments": super::arguments_text(c) })
        }))
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::providers::StreamParser;

    #[test]
    fn a_client_tool_search_call_is_read_as_a_call_and_a_server_one_is_not() {
        let item = json!({"id": "ts_1", "type": "tool_search_call", "call_id": "call_1", "execution": "client",
                          "status": "completed", "arguments": {"query": "weather"}});
        let mut parser = ResponsesStreamParser::new();
        let mut events = parser.feed(
            &json!({"type": "response.output_item.added", "output_index": 0, "item": item})
                .to_string(),
        );
        assert!(
            events.is_empty(),
            "a search call is read whole, when it is done"
        );
        events.extend(
            parser.feed(
                &json!({"type": "response.output_item.done", "output_index": 0, "item": item})
                    .to_string(),
            ),
        );
        assert_eq!(
            events,
            [
                ProviderEvent::CallStarted {
                    key: "ts_1".into(),
                    id: "call_1".into(),
                    name: TOOL_SEARCH_CALL.into()
                },
                ProviderEvent::ArgumentsDelta {
                    key: "ts_1".into(),
                    fragment: r#"{"query":"weather"}"#.into()
                },
                ProviderEvent::CallEnded { key: "ts_1".into() },
            ]
        );
        let mut server = item.clone();
        server["execution"] = json!("server");
        assert!(
            ResponsesStreamParser::new()
                .feed(&json!({"type": "response.output_item.done", "item": server}).to_string())
                .is_empty()
        );
        let whole = json!({"output": [item, server]}).to_string();
        let calls = OpenAiResponses.tool_calls(&whole).unwrap();
        assert_eq!(calls.len(), 1);
        assert_eq!(
            (calls[0].id(), calls[0].name(), calls[0].arguments()),
            ("call_1", TOOL_SEARCH_CALL, r#"{"query":"weather"}"#)
        );
    }

    #[test]
    #[cfg(feature = "http")]
    fn the_search_tools_calls_and_results_become_tool_search_items() {
        let mut items = vec![
            json!({"role": "user", "content": "weather?"}),
            json!({"type": "function_call", "call_id": "call_1", "name": "search_tools", "arguments": r#"{"query":"weather"}"#}),
            json!({"type": "function_call_output", "call_id": "call_1", "output": r#"{"tools":[{"name":"get_weather"}]}"#}),
            json!({"type": "function_call", "call_id": "call_2", "name": "get_weather", "arguments": "{}"}),
            json!({"type": "function_call_output", "call_id": "call_2", "output": "\"sunny\""}),
        ];
        let definition = deferred_definition(json!({"type": "function", "name": "get_weather"}));
        search_items(&mut items, "search_tools", |text| {
            assert!(text.contains("get_weather"));
            vec![definition.clone()]
        });
        assert_eq!(
            items[1],
            json!({"type": "tool_search_call", "call_id": "call_1", "execution": "client", "status": "completed", "arguments": {"query": "weather"}})
        );
        assert_eq!(
            items[2],
            json!({"type": "tool_search_output", "call_id": "call_1", "execution": "client", "status": "completed",
                   "tools": [{"type": "function", "name": "get_weather", "defer_loading": true}]})
        );
        assert_eq!(items[3]["type"], "function_call");
        assert_eq!(items[4]["type"], "function_call_output");
        assert_eq!(
            tool_search_tool("Finds tools.", &json!({"type": "object"})),
            json!({"type": "tool_search", "execution": "client", "description": "Finds tools.", "parameters": {"type": "object"}})
        );
    }
}
