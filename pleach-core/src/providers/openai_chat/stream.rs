//! The stream parser of Chat Completions chunks: `tool_calls[].index` fragments, ended by their
//! choice's `finish_reason` or `data: [DONE]`.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

use crate::providers::calls::CallTable;
use crate::providers::{
    ProviderEvent, StreamParser, StreamProblem, end_of_stream, error_text, lost_event, parse_event,
    provider_error, usage_event,
};

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
