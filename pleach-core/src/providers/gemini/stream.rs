//! [`GeminiStreamParser`]: `streamGenerateContent` chunks read into provider events, whole calls
//! complete at once and Gemini 3's streamed calls assembled from their `partialArgs`.

use serde_json::{Map, Value};

use super::partial_args::place_partial_arg;
use super::{Chunk, FunctionCall, PartialArg, synthetic_call_id};
use crate::providers::calls::CallTable;
use crate::providers::{
    ProviderEvent, StreamParser, StreamProblem, end_of_stream, error_text, lost_event, parse_event,
    provider_error, usage_event,
};

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
