//! One step's streamed response read to its end: decoded by its format's stream parser, its
//! calls assembled as fragments arrive (`tool.started`, `tool.delta`), and what must not run
//! failed, into a [`Step`].

use std::collections::HashMap;

use tokio_util::sync::CancellationToken;

use super::client::{ModelError, ModelResponse, WireFormat};
use super::options::{AgentOptions, StepReport};
use crate::assemble::{StreamAssembler, StreamError};
use crate::call::ToolCall;
use crate::error::{ErrorCode, ToolError};
use crate::event::{EventSender, ToolEvent};
use crate::providers::openai_responses::TOOL_SEARCH_CALL;
use crate::providers::{Decoder, ProviderEvent, StreamParser, StreamProblem};
use crate::session::SessionHandle;

/// One step's response, read: the text, the calls in order of first sight with the error of
/// each that must not run, and the report.
pub(crate) struct Step {
    pub(crate) text: Option<String>,
    pub(crate) calls: Vec<ToolCall>,
    pub(crate) failed: Vec<Option<ToolError>>,
    pub(crate) report: StepReport,
}

/// When a step must be over, and what to say if it is not: the response is cut off there, as if
/// the connection dropped, with a [`ModelError::Timeout`] saying this.
pub(crate) struct Deadline {
    pub(crate) at: tokio::time::Instant,
    pub(crate) why: String,
}

/// Reads a response to its end (or a break, the size cap, the deadline, cancellation), sending
/// `tool.started` and `tool.delta` as calls and fragments arrive. Returns the step and, if the
/// response broke off, why. `search_tool` is the search tool's name when the run defers
/// natively: the provider's own search calls (OpenAI Responses' `tool_search_call`, which has no
/// name) are read as its calls.
pub(crate) async fn read_response(
    response: ModelResponse,
    session: &SessionHandle,
    options: &AgentOptions,
    search_tool: Option<&str>,
    deadline: Option<&Deadline>,
    sink: &EventSender,
    signal: &CancellationToken,
) -> (Step, Option<ModelError>) {
    let ModelResponse { format, mut body } = response;
    let mut reading = Reading {
        decoder: Decoder::sse(Box::new(Watched {
            parser: format.provider_format().stream_parser(),
            ended: false,
        })),
        assembler: StreamAssembler::with_limits(session.limits()),
        text: String::new(),
        report: StepReport::default(),
        sink,
        provider_error: None,
        calls_under: HashMap::new(),
        search_call: search_tool
            .filter(|_| format == WireFormat::OpenAiResponses)
            .map(|search| (TOOL_SEARCH_CALL, search)),
    };
    let mut received = 0usize;
    let mut broke = None;
    loop {
        let chunk = tokio::select! {
            biased;
            () = signal.cancelled() => break,
            () = until(deadline) => {
                broke = deadline.map(|deadline| ModelError::Timeout(deadline.why.clone()));
                break;
            }
            chunk = body.next_chunk() => chunk,
        };
        match chunk {
            Ok(Some(bytes)) => {
                received = received.saturating_add(bytes.len());
                if received > options.max_response_bytes {
                    broke = Some(ModelError::TooLarge {
                        limit: options.max_response_bytes,
                    });
                    break;
                }
                let events = reading.decoder.feed(&bytes);
                reading.apply(events);
            }
            Ok(None) => break,
            Err(error) => {
                broke = Some(error);
                break;
            }
        }
    }
    // The connection goes as soon as the response is over, before any call runs.
    drop(body);
    let cancelled = signal.is_cancelled();
    if !cancelled {
        // Calls still open fail as incomplete; after a cancellation they fail as cancelled.
        let events = reading.decoder.finish();
        reading.apply(events);
    }
    let Reading {
        decoder,
        assembler,
        text,
        mut report,
        provider_error,
        ..
    } = reading;
    // An error the provider reported in a response it had begun breaks it off like a dropped
    // connection: its text is no answer, and the run stops with the error.
    let broke = broke.or(provider_error.map(ModelError::Provider));
    // A stream that ended holding nothing (no choice, no text, no call, no finish reason) and
    // without its end signal is a server that failed after its headers, not an empty answer.
    let empty = !cancelled
        && !decoder.parser().ended
        && text.is_empty()
        && report.finish_reason.is_none()
        && report.stream_errors.is_empty()
        && report.refused.is_empty();
    report.skipped_events = decoder.parser().skipped();
    let (calls, failed): (Vec<_>, Vec<_>) = assembler
        .finish()
        .into_iter()
        .map(|streamed| {
            let failure = match streamed.parsed {
                // Cut off by the cancellation, not by the provider.
                Err(error) if cancelled && error.code() == ErrorCode::ArgumentsIncomplete => {
                    Some(cancelled_before_running())
                }
                Err(error) => Some(error),
                Ok(_) if cancelled => Some(cancelled_before_running()),
                Ok(_) => None,
            };
            (streamed.call, failure)
        })
        .unzip();
    let broke = broke.or((empty && calls.is_empty()).then_some(ModelError::EmptyStream));
    let text = (!text.is_empty()).then_some(text);
    report.text.clone_from(&text);
    let step = Step {
        text,
        calls,
        failed,
        report,
    };
    (step, broke)
}

/// Waits until the deadline; forever without one.
pub(crate) async fn until(deadline: Option<&Deadline>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline.at).await,
        None => std::future::pending().await,
    }
}

/// A stream parser, and whether its stream gave its end signal (`data: [DONE]`): a stream that
/// holds nothing else and not that either is no answer.
struct Watched {
    parser: Box<dyn StreamParser + Send>,
    ended: bool,
}

impl StreamParser for Watched {
    fn feed(&mut self, data: &str) -> Vec<ProviderEvent> {
        self.ended |= data.trim() == "[DONE]";
        self.parser.feed(data)
    }

    fn unreadable(&mut self, reason: &str) -> Vec<ProviderEvent> {
        self.parser.unreadable(reason)
    }

    fn finish(&mut self) -> Vec<ProviderEvent> {
        self.parser.finish()
    }

    fn skipped(&self) -> usize {
        self.parser.skipped()
    }
}

fn cancelled_before_running() -> ToolError {
    ToolError::new(
        ErrorCode::Cancelled,
        "the run was cancelled before this call could run; it did not run",
    )
}

/// The state of a response being read.
struct Reading<'a> {
    decoder: Decoder<Box<Watched>>,
    assembler: StreamAssembler,
    text: String,
    report: StepReport,
    sink: &'a EventSender,
    /// The first error the provider reported in the stream: the response broke off there.
    provider_error: Option<String>,
    /// Provider keys used again after their call ended (the parsers allow it), with how many
    /// calls each has had: the assembler names each call by its own key, `<key>@<n>` from the
    /// second on, so that the later call is not refused as the earlier one's.
    calls_under: HashMap<String, usize>,
    /// The name the format reads its provider's own search calls under, and the search tool's.
    search_call: Option<(&'static str, &'a str)>,
}

impl Reading<'_> {
    fn apply(&mut self, events: Vec<ProviderEvent>) {
        for event in events {
            match event {
                ProviderEvent::CallStarted { key, id, name } => {
                    let name = match self.search_call {
                        Some((read_as, search)) if name == read_as => search.to_owned(),
                        _ => name,
                    };
                    let count = self.calls_under.entry(key.clone()).or_default();
                    *count += 1;
                    let key = self.assembler_key(key);
                    let begun = self.assembler.begin(&key, &id, &name);
                    self.announce(begun);
                }
                ProviderEvent::CallSignature { key, signature } => {
                    let key = self.assembler_key(key);
                    let signed = self.assembler.sign(&key, &signature).map(|()| None);
                    self.announce(signed);
                }
                ProviderEvent::ArgumentsDelta { key, fragment } => {
                    let key = self.assembler_key(key);
                    let pushed = self.assembler.push(&key, fragment);
                    self.announce(pushed);
                }
                ProviderEvent::CallEnded { key } => {
                    let key = self.assembler_key(key);
                    let ended = self.assembler.end(&key).map(|_| None);
                    self.announce(ended);
                }
                ProviderEvent::CallFailed {
                    key,
                    id,
                    name,
                    problem,
                    error,
                } => {
                    let key = self.assembler_key(key);
                    self.call_failed(&key, id, name, problem, error);
                }
                ProviderEvent::Text { delta } => self.text.push_str(&delta),
                ProviderEvent::Finished { reason } => self.report.finish_reason = reason,
                ProviderEvent::Usage {
                    input_tokens,
                    output_tokens,
                } => {
                    self.report.input_tokens = input_tokens.or(self.report.input_tokens);
                    self.report.output_tokens = output_tokens.or(self.report.output_tokens);
                }
                ProviderEvent::StreamError { problem, message } => {
                    if problem == StreamProblem::ProviderError && self.provider_error.is_none() {
                        self.provider_error = Some(message.clone());
                    }
                    self.report.stream_errors.push(message);
                }
            }
        }
    }

    /// The assembler's key for the latest call under the provider's `key`: `key` itself unless
    /// the provider used it again after its call ended.
    fn assembler_key(&self, key: String) -> String {
        match self.calls_under.get(&key) {
            Some(&n) if n > 1 => format!("{key}@{n}"),
            _ => key,
        }
    }

    /// Sends an assembler event; a refusal that fails no call is reported. A call's own failure
    /// shows at the end of the response, with its result.
    fn announce(&mut self, outcome: Result<Option<ToolEvent>, StreamError>) {
        match outcome {
            Ok(Some(event)) => self.sink.send(event),
            Ok(None) | Err(StreamError::CallFailed { .. }) => {}
            Err(refused) => self.report.refused.push(refused.to_string()),
        }
    }

    /// The provider's parser failed a call. A call the assembler has fails there; one it never
    /// saw but whose id and name are known (a start without a usable body) is announced and
    /// failed, so it still gets its terminal event and result; the rest (a second use of an id,
    /// fragments for a call never started) name no call of their own and are reported.
    fn call_failed(
        &mut self,
        key: &str,
        id: Option<String>,
        name: Option<String>,
        problem: StreamProblem,
        error: ToolError,
    ) {
        match self.assembler.fail(key, error.clone()) {
            Ok(()) => return,
            Err(StreamError::UnknownKey { .. }) => {}
            Err(refused) => {
                self.report.refused.push(refused.to_string());
                return;
            }
        }
        match (id, name) {
            (Some(id), Some(name)) if problem != StreamProblem::DuplicateId => {
                match self.assembler.begin(key, &id, &name) {
                    Ok(started) => {
                        if let Some(event) = started {
                            self.sink.send(event);
                        }
                        // The call was just begun under `key`: it is open, so this holds.
                        let _ = self.assembler.fail(key, error);
                    }
                    Err(refused) => self.report.refused.push(refused.to_string()),
                }
            }
            _ => self.report.refused.push(error.message().to_owned()),
        }
    }
}
