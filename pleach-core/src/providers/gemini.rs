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

use std::collections::BTreeSet;

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::call::ToolCall;
use crate::conversation::Message;
use crate::error::ToolError;
use crate::registry::ToolSource;
use crate::tool::ToolDefinition;

use super::calls::CallTable;
use super::{
    NO_ARGUMENTS, Profile, ProfileError, ProfileProblem, ProviderEvent, ResponseError,
    StreamParser, StreamProblem, arguments_object, each_checked_definition, each_definition,
    end_of_stream, error_text, grouped_messages, lost_event, parse_event, parse_response,
    provider_error, usage_event,
};

/// A tool's `functionDeclaration` with `parameters` in Gemini's OpenAPI subset
/// ([`Profile::Gemini`]: `$ref`s inlined, type arrays made `nullable`, …), or every problem
/// found. A tool without arguments gets no `parameters` (Gemini refuses an object without
/// properties).
///
/// ```
/// use pleach_core::tool;
/// use pleach_core::providers::gemini;
///
/// /// Free-text search over notes.
/// #[tool]
/// async fn search_notes(query: String, limit: Option<u32>) -> Vec<String> {
///     vec![query; limit.unwrap_or(1) as usize]
/// }
///
/// let def = gemini::definition(&search_notes::definition()).unwrap();
/// assert_eq!(def["name"], "search_notes");
/// assert_eq!(def["parameters"]["properties"]["limit"]["nullable"], true);
/// assert!(def["parameters"].get("additionalProperties").is_none());
/// ```
pub fn definition(tool: &ToolDefinition) -> Result<Value, Vec<ProfileProblem>> {
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

/// A tool's `functionDeclaration` with the JSON Schema as it is (but for bounds past 2^53, see
/// `docs/providers.md`), in `parametersJsonSchema` (the newer field, which takes JSON Schema
/// rather than the OpenAPI subset).
///
/// ```
/// use pleach_core::{define_tool, ToolError};
/// let tool = define_tool("ping", "Answers pong.")
///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
///     .unwrap();
/// let def = pleach_core::providers::gemini::definition_json_schema(&tool);
/// assert_eq!(def["parametersJsonSchema"], serde_json::json!({ "type": "object" }));
/// ```
pub fn definition_json_schema(tool: &ToolDefinition) -> Value {
    json!({
        "name": tool.name(),
        "description": tool.description(),
        "parametersJsonSchema": super::profile::sendable_numbers(tool.input_schema()),
    })
}

/// The `tools` entry for every tool of a registry: `{"functionDeclarations": [...]}`, with
/// [`definition`]; every problem of every tool if any.
///
/// ```
/// let registry = pleach_core::ToolRegistryBuilder::new().build().unwrap();
/// let tools = pleach_core::providers::gemini::tools(&registry).unwrap();
/// assert_eq!(tools, serde_json::json!({ "functionDeclarations": [] }));
/// ```
pub fn tools(registry: &dyn ToolSource) -> Result<Value, ProfileError> {
    let declarations =
        each_checked_definition(registry, Profile::Gemini, |t| definition(t.definition()))?;
    Ok(json!({ "functionDeclarations": declarations }))
}

/// The `tools` entry for every tool of a registry, with [`definition_json_schema`].
///
/// ```
/// use pleach_core::{define_tool, ToolError, ToolRegistryBuilder};
/// let ping = define_tool("ping", "Answers pong.")
///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
///     .unwrap();
/// let registry = ToolRegistryBuilder::new().register(ping).build().unwrap();
/// let tools = pleach_core::providers::gemini::tools_json_schema(&registry);
/// assert_eq!(tools["functionDeclarations"][0]["parametersJsonSchema"]["type"], "object");
/// ```
pub fn tools_json_schema(registry: &dyn ToolSource) -> Value {
    json!({ "functionDeclarations": each_definition(registry, definition_json_schema) })
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

/// The function calls of a whole (non-streamed) response body, from its first candidate, in
/// order; calls without an id get [`synthetic_call_id`]s.
///
/// ```
/// use pleach_core::providers::gemini;
///
/// let body = r#"{"candidates":[{"content":{"role":"model","parts":[
///     {"functionCall":{"name":"weather","args":{"location":"San Francisco"}}}
/// ]},"finishReason":"STOP"}],"responseId":"abc"}"#;
/// let calls = gemini::tool_calls(body).unwrap();
/// assert_eq!(calls[0].id(), "gemini_abc_0");
/// assert_eq!(calls[0].arguments(), r#"{"location":"San Francisco"}"#);
/// ```
pub fn tool_calls(body: &str) -> Result<Vec<ToolCall>, ResponseError> {
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

/// A streamed call being assembled from `partialArgs`.
#[derive(Debug)]
struct Streaming {
    key: String,
    arguments: Value,
}

/// The stream parser for `streamGenerateContent` chunks (`GenerateContentResponse`s).
///
/// ```
/// use pleach_core::providers::{gemini::GeminiStreamParser, ProviderEvent, StreamParser, StreamProblem};
///
/// let mut parser = GeminiStreamParser::new();
/// parser.feed(r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","willContinue":true}}]}}]}"#);
/// // The candidate finished before the call's end signal.
/// let events = parser.feed(r#"{"candidates":[{"content":{"parts":[{"text":""}]},"finishReason":"MAX_TOKENS"}]}"#);
/// assert!(matches!(&events[0], ProviderEvent::CallFailed { problem: StreamProblem::Incomplete, .. }));
/// ```
#[derive(Debug, Default)]
pub struct GeminiStreamParser {
    calls: CallTable,
    /// How many calls this stream has had (the next key, and the `n` of synthetic ids).
    count: u64,
    streaming: Option<Streaming>,
    response_id: Option<String>,
    skipped: usize,
}

impl GeminiStreamParser {
    /// A parser for one stream.
    ///
    /// ```
    /// use pleach_core::providers::{gemini::GeminiStreamParser, StreamParser};
    /// let mut parser = GeminiStreamParser::new();
    /// assert!(parser.finish().is_empty()); // nothing was open
    /// assert_eq!(parser.skipped(), 0);
    /// ```
    pub fn new() -> Self {
        GeminiStreamParser::default()
    }

    fn next_key(&mut self, id: Option<String>) -> (String, String) {
        let n = self.count;
        self.count += 1;
        let id = id
            .filter(|id| !id.is_empty())
            .unwrap_or_else(|| synthetic_call_id(self.response_id.as_deref(), n));
        (n.to_string(), id)
    }

    fn function_call(
        &mut self,
        out: &mut Vec<ProviderEvent>,
        call: FunctionCall,
        signature: Option<String>,
    ) {
        let continues = call.will_continue == Some(true);
        let streaming_part = call.partial_args.is_some() || (call.name.is_some() && continues);
        let terminal = call.name.is_none()
            && call.args.is_none()
            && call.partial_args.is_none()
            && call.will_continue.is_none();
        if streaming_part {
            if let Some(name) = call.name {
                self.start_streaming(out, call.id, &name);
            }
            self.sign_streaming(out, signature);
            if let Some(args) = call.partial_args {
                let ends = !continues && args.iter().all(|a| a.will_continue != Some(true));
                self.partial_args(out, &args);
                if ends {
                    self.end_streaming(out);
                }
            }
        } else if terminal {
            self.sign_streaming(out, signature);
            self.end_streaming(out);
        } else if let Some(name) = call.name {
            // A whole call: with its arguments, or (`{name}` alone) without any.
            let (key, id) = self.next_key(call.id);
            self.calls.start(out, &key, &id, &name);
            if let Some(signature) = signature {
                self.calls.sign(out, &key, signature);
            }
            let arguments = call
                .args
                .map_or_else(|| "{}".to_owned(), |raw| raw.get().to_owned());
            self.calls.delta(out, &key, &arguments);
            self.calls.end(out, &key);
        }
    }

    /// A signature on a part of the call being streamed, on whichever part it comes.
    fn sign_streaming(&mut self, out: &mut Vec<ProviderEvent>, signature: Option<String>) {
        if let (Some(signature), Some(streaming)) = (signature, &self.streaming) {
            self.calls.sign(out, &streaming.key, signature);
        }
    }

    fn start_streaming(&mut self, out: &mut Vec<ProviderEvent>, id: Option<String>, name: &str) {
        if let Some(previous) = self.streaming.take() {
            let message =
                "a new function call began before this one's end signal; it was not run".to_owned();
            self.calls
                .fail(out, &previous.key, StreamProblem::Incomplete, message);
        }
        let (key, id) = self.next_key(id);
        self.calls.start(out, &key, &id, name);
        if self.calls.is_open(&key) {
            self.streaming = Some(Streaming {
                key,
                arguments: Value::Object(Map::new()),
            });
        }
    }

    fn partial_args(&mut self, out: &mut Vec<ProviderEvent>, args: &[PartialArg]) {
        let Some(streaming) = self.streaming.as_mut() else {
            let (key, _) = self.next_key(None);
            let message = "the provider sent partial arguments for a function call it never started; they were not run".to_owned();
            self.calls
                .fail(out, &key, StreamProblem::UnknownCall, message);
            return;
        };
        for arg in args {
            if let Err(reason) = place_partial_arg(&mut streaming.arguments, arg) {
                let key = streaming.key.clone();
                self.streaming = None;
                let message = format!(
                    "the call's partial arguments could not be assembled: {reason}; it was not run"
                );
                self.calls
                    .fail(out, &key, StreamProblem::InvalidPartialArguments, message);
                return;
            }
        }
    }

    fn end_streaming(&mut self, out: &mut Vec<ProviderEvent>) {
        if let Some(streaming) = self.streaming.take() {
            self.calls
                .delta(out, &streaming.key, &streaming.arguments.to_string());
            self.calls.end(out, &streaming.key);
        }
    }
}

impl StreamParser for GeminiStreamParser {
    fn feed(&mut self, data: &str) -> Vec<ProviderEvent> {
        let mut out = Vec::new();
        let chunk: Chunk = match parse_event(data) {
            Ok(chunk) => chunk,
            Err(reason) => {
                lost_event(&mut self.calls, &mut out, &reason);
                self.streaming = None;
                return out;
            }
        };
        if let Some(error) = &chunk.error {
            provider_error(&mut self.calls, &mut out, &error_text(error));
            self.streaming = None;
            return out;
        }
        if self.response_id.is_none() {
            self.response_id = chunk.response_id;
        }
        if let Some(candidate) = chunk.candidates.into_iter().flatten().next() {
            let parts = candidate.content.and_then(|c| c.parts).unwrap_or_default();
            for part in parts {
                match (part.function_call, part.text) {
                    (Some(call), _) => {
                        self.function_call(&mut out, call, part.thought_signature);
                    }
                    (None, Some(text)) => {
                        if part.thought != Some(true) && !text.is_empty() {
                            out.push(ProviderEvent::Text { delta: text });
                        }
                    }
                    (None, None) => self.skipped += 1,
                }
            }
            if let Some(reason) = candidate.finish_reason {
                if let Some(streaming) = self.streaming.take() {
                    let message = format!(
                        "the response finished (`{reason}`) before the function call's end signal; it was not run"
                    );
                    self.calls
                        .fail(&mut out, &streaming.key, StreamProblem::Incomplete, message);
                }
                out.push(ProviderEvent::Finished {
                    reason: Some(reason),
                });
            }
        }
        out.extend(
            chunk
                .usage_metadata
                .as_ref()
                .and_then(|u| usage_event(u, "promptTokenCount", "candidatesTokenCount")),
        );
        out
    }

    fn unreadable(&mut self, reason: &str) -> Vec<ProviderEvent> {
        let mut out = Vec::new();
        lost_event(&mut self.calls, &mut out, reason);
        self.streaming = None;
        out
    }

    fn finish(&mut self) -> Vec<ProviderEvent> {
        let mut out = Vec::new();
        end_of_stream(&mut self.calls, &mut out, "closing `functionCall`");
        self.streaming = None;
        out
    }

    fn skipped(&self) -> usize {
        self.skipped
    }
}

/// One step of a `jsonPath`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

/// Paths deeper than this are refused (the arguments are parsed later with a depth limit too).
const MAX_PATH_STEPS: usize = 64;
/// An index further than this past the end is refused rather than padded.
const MAX_INDEX: usize = 1 << 20;

/// Parses `$.a.b[3]['c d']` into steps.
fn parse_path(path: &str) -> Result<Vec<Step>, String> {
    let rest = path
        .strip_prefix('$')
        .ok_or_else(|| format!("the jsonPath `{path}` does not start with `$`"))?;
    let bad = || format!("the jsonPath `{path}` cannot be read");
    let mut steps = Vec::new();
    let mut chars = rest.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '.' => {
                let start = at + 1;
                let mut end = rest.len();
                while let Some(&(i, c)) = chars.peek() {
                    if c == '.' || c == '[' {
                        end = i;
                        break;
                    }
                    chars.next();
                }
                let key = &rest[start..end];
                if key.is_empty() {
                    return Err(bad());
                }
                steps.push(Step::Key(key.to_owned()));
            }
            '[' => {
                let inner_start = at + 1;
                let close = rest[inner_start..].find(']').ok_or_else(bad)? + inner_start;
                let inner = &rest[inner_start..close];
                let step = if let Some(quoted) = inner
                    .strip_prefix('\'')
                    .and_then(|s| s.strip_suffix('\''))
                    .or_else(|| inner.strip_prefix('"').and_then(|s| s.strip_suffix('"')))
                {
                    Step::Key(quoted.to_owned())
                } else {
                    let index: usize = inner.parse().map_err(|_| bad())?;
                    if index > MAX_INDEX {
                        return Err(format!("the jsonPath `{path}` has an index out of range"));
                    }
                    Step::Index(index)
                };
                steps.push(step);
                while chars.peek().is_some_and(|&(i, _)| i <= close) {
                    chars.next();
                }
            }
            _ => return Err(bad()),
        }
        if steps.len() > MAX_PATH_STEPS {
            return Err(format!(
                "the jsonPath `{path}` is deeper than {MAX_PATH_STEPS} steps"
            ));
        }
    }
    if steps.is_empty() {
        return Err(format!(
            "the jsonPath `{path}` names the whole arguments object"
        ));
    }
    Ok(steps)
}

/// Places one partial argument into the arguments object: a new value, or the next piece of a
/// string already there.
fn place_partial_arg(root: &mut Value, arg: &PartialArg) -> Result<(), String> {
    let value = if let Some(s) = &arg.string_value {
        Value::String(s.clone())
    } else if let Some(n) = &arg.number_value {
        Value::Number(n.clone())
    } else if let Some(b) = arg.bool_value {
        Value::Bool(b)
    } else if arg.null_value {
        Value::Null
    } else {
        // Nothing to place (a bare `willContinue`).
        return Ok(());
    };
    let path = arg.json_path.as_deref().unwrap_or_default();
    let steps = parse_path(path)?;
    place(root, &steps, value).map_err(|why| format!("at `{path}`: {why}"))
}

fn place(root: &mut Value, steps: &[Step], value: Value) -> Result<(), String> {
    let Some((last, parents)) = steps.split_last() else {
        return Err("no path".to_owned());
    };
    let mut current = root;
    for (i, step) in parents.iter().enumerate() {
        let next_is_index = matches!(steps.get(i + 1), Some(Step::Index(_)));
        let empty = || {
            if next_is_index {
                Value::Array(Vec::new())
            } else {
                Value::Object(Map::new())
            }
        };
        current = match (step, current) {
            (Step::Key(key), Value::Object(map)) => map.entry(key.clone()).or_insert_with(empty),
            (Step::Index(index), Value::Array(items)) => {
                if *index == items.len() {
                    items.push(empty());
                }
                items
                    .get_mut(*index)
                    .ok_or_else(|| "the path skips array positions".to_owned())?
            }
            _ => return Err("the path goes through a value of another kind".to_owned()),
        };
        let fits = match &*current {
            Value::Array(_) => next_is_index,
            Value::Object(_) => !next_is_index,
            _ => false,
        };
        if !fits {
            return Err("the path goes through a value of another kind".to_owned());
        }
    }
    let slot = match (last, current) {
        (Step::Key(key), Value::Object(map)) => {
            if !map.contains_key(key) {
                map.insert(key.clone(), value);
                return Ok(());
            }
            map.get_mut(key)
                .ok_or_else(|| "the path goes through a value of another kind".to_owned())?
        }
        (Step::Index(index), Value::Array(items)) => {
            if *index == items.len() {
                items.push(value);
                return Ok(());
            }
            items
                .get_mut(*index)
                .ok_or_else(|| "the path skips array positions".to_owned())?
        }
        _ => return Err("the path goes through a value of another kind".to_owned()),
    };
    match (slot, value) {
        (Value::String(existing), Value::String(piece)) => {
            existing.push_str(&piece);
            Ok(())
        }
        _ => Err("a second value for the same place".to_owned()),
    }
}

/// The `functionResponse` part for a call's outcome: `{"output": result}`, or `{"error":
/// message}` for a failure (the keys Gemini's documentation gives for a function's output and
/// error).
///
/// ```
/// use pleach_core::{ToolCall, ToolError};
/// use pleach_core::providers::gemini;
/// use serde_json::json;
///
/// let call = ToolCall::new("gemini_r1_0", "add", "{}");
/// assert_eq!(
///     gemini::tool_result(&call, &Ok(json!(3))),
///     json!({ "functionResponse": { "id": "gemini_r1_0", "name": "add", "response": { "output": 3 } } })
/// );
/// let failed = gemini::tool_result(&call, &Err(ToolError::failed("boom")));
/// assert_eq!(failed["functionResponse"]["response"], json!({ "error": "error 1008: boom" }));
/// ```
pub fn tool_result(call: &ToolCall, outcome: &Result<Value, ToolError>) -> Value {
    let response = match outcome {
        Ok(value) => json!({ "output": value }),
        Err(error) => json!({ "error": error.model_text() }),
    };
    response_part(call.id(), call.name(), &response)
}

fn response_part(id: &str, name: &str, response: &Value) -> Value {
    json!({ "functionResponse": { "id": id, "name": name, "response": response } })
}

/// The `model` content carrying the calls as `functionCall` parts (after a text part, if any).
/// Arguments that are not a JSON object (a call that failed to parse) are sent as `{}`.
///
/// A call's [`signature`](ToolCall::signature) (the `thoughtSignature` Gemini 3 sent with it, and
/// requires back) goes on its part, beside `functionCall`.
///
/// ```
/// use pleach_core::ToolCall;
/// use pleach_core::providers::gemini;
/// use serde_json::json;
///
/// let content = gemini::assistant_message(None, &[ToolCall::new("gemini_r1_0", "add", r#"{"a":1}"#)]);
/// assert_eq!(content, json!({ "role": "model", "parts": [
///     { "functionCall": { "id": "gemini_r1_0", "name": "add", "args": { "a": 1 } } }
/// ] }));
/// ```
pub fn assistant_message(content: Option<&str>, calls: &[ToolCall]) -> Value {
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

/// A conversation as Gemini `contents`: consecutive tool results go into one `user` content of
/// `functionResponse` parts.
///
/// ```
/// use pleach_core::{Message, ToolCall};
/// use pleach_core::providers::gemini;
///
/// let (a, b) = (ToolCall::new("c0", "f", "{}"), ToolCall::new("c1", "g", "{}"));
/// let contents = gemini::messages(&[
///     Message::User { content: "go".into() },
///     Message::Assistant { content: None, tool_calls: vec![a.clone(), b.clone()] },
///     Message::tool_result(&a, &Ok(serde_json::json!({ "n": 1 }))),
///     Message::tool_result(&b, &Ok(serde_json::json!(2))),
/// ]);
/// assert_eq!(contents.len(), 3);
/// assert_eq!(contents[2]["parts"][0]["functionResponse"]["response"]["output"]["n"], 1);
/// ```
pub fn messages(conversation: &[Message]) -> Vec<Value> {
    grouped_messages(
        conversation,
        |text| json!({ "role": "user", "parts": [{ "text": text }] }),
        assistant_message,
        |id, name, content, is_error| {
            let response = if is_error {
                json!({ "error": content })
            } else {
                let output = serde_json::from_str::<Value>(content)
                    .unwrap_or_else(|_| Value::String(content.to_owned()));
                json!({ "output": output })
            };
            response_part(id, name, &response)
        },
        |parts| json!({ "role": "user", "parts": parts }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arg(path: &str, value: &Value, will_continue: bool) -> PartialArg {
        PartialArg {
            json_path: Some(path.to_owned()),
            string_value: value.as_str().map(str::to_owned),
            number_value: value.as_number().cloned(),
            bool_value: value.as_bool(),
            null_value: value.is_null(),
            will_continue: Some(will_continue),
        }
    }

    #[test]
    fn paths() {
        assert_eq!(
            parse_path("$.recipe.ingredients[3].name").unwrap(),
            [
                Step::Key("recipe".into()),
                Step::Key("ingredients".into()),
                Step::Index(3),
                Step::Key("name".into())
            ]
        );
        assert_eq!(
            parse_path("$['a.b'][0]").unwrap(),
            [Step::Key("a.b".into()), Step::Index(0)]
        );
        for bad in [
            "",
            "$",
            "location",
            "$.",
            "$..a",
            "$[x]",
            "$[1",
            "$.a[99999999999]",
        ] {
            assert!(parse_path(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn values_nest_and_strings_continue() {
        let mut root = Value::Object(Map::new());
        for a in [
            arg("$.recipe.steps[0]", &json!("Pre"), true),
            arg("$.recipe.steps[0]", &json!("heat"), false),
            arg("$.recipe.steps[1]", &json!("Bake"), false),
            arg("$.recipe.serves", &json!(4), false),
            arg("$.recipe.vegan", &json!(false), false),
            arg("$.recipe.note", &Value::Null, false),
        ] {
            place_partial_arg(&mut root, &a).unwrap();
        }
        assert_eq!(
            root,
            json!({ "recipe": { "steps": ["Preheat", "Bake"], "serves": 4, "vegan": false, "note": null } })
        );
    }

    #[test]
    fn conflicting_places_are_refused() {
        let mut root = json!({ "a": 1, "list": [] });
        assert!(place_partial_arg(&mut root, &arg("$.a", &json!(2), false)).is_err());
        assert!(place_partial_arg(&mut root, &arg("$.a.b", &json!(2), false)).is_err());
        assert!(place_partial_arg(&mut root, &arg("$.list[2]", &json!(2), false)).is_err());
        assert!(place_partial_arg(&mut root, &arg("$.list.x", &json!(2), false)).is_err());
    }
}
