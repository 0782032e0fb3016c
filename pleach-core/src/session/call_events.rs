//! The runtime's per-call event gate: a call whose tool holds a [`ToolContext`](crate::ToolContext)
//! can report progress at any time (even from a task it left behind), so its `tool.delta` events
//! and its one terminal event pass one gate, closed by the terminal event.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::call::ToolCall;
use crate::client::{
    Client, ClientFuture, Elicitation, Elicited, LogLevel, LogMessage, Progress, Sampled,
    SamplingRequest,
};
use crate::content::ToolOutput;
use crate::error::{ErrorCode, ToolError};
use crate::event::{Answered, ClientRequest, EventSender, ToolEvent};

/// The event channel of one call whose tool holds a context (and so can report progress at any
/// time, even from a task it left behind): closed when the call's terminal event is sent, so that
/// nothing follows that event. A call whose tool takes no context cannot send anything itself and
/// needs no such gate: its terminal event goes straight to the sink ([`send_terminal`]).
#[derive(Debug)]
pub(crate) struct CallEvents {
    call: ToolCall,
    sink: EventSender,
    open: std::sync::Mutex<bool>,
    asking: Asking,
}

/// How a call's requests to its client (elicitation, sampling) are answered.
#[derive(Debug, Clone)]
pub(crate) struct Asking {
    /// Whether the session's host answers elicitation (see `Session::set_client_capabilities`).
    pub(crate) elicitation: bool,
    /// Whether the session's host answers sampling.
    pub(crate) sampling: bool,
    /// How long a request waits for its answer: the runtime's approval timeout.
    pub(crate) timeout: Duration,
    /// The call's signal: a cancelled call stops waiting.
    pub(crate) signal: CancellationToken,
}

impl CallEvents {
    pub(crate) fn new(call: ToolCall, sink: EventSender, asking: Asking) -> Self {
        CallEvents {
            call,
            sink,
            open: std::sync::Mutex::new(true),
            asking,
        }
    }

    /// Sends `event` while the call is open; whether it was sent.
    fn send_open(&self, event: impl FnOnce() -> ToolEvent) -> bool {
        let open = self.lock_open();
        if *open {
            self.sink.send(event());
        }
        *open
    }

    /// Sends a request of the tool to the host (`event` carries it) and waits for the answer,
    /// within the approval timeout, while the call runs and someone reads its events; or 1020
    /// at once when the host does not answer such requests (`answered`: it said so, or nobody
    /// reads this call's events).
    fn ask<Q, A: Send + 'static>(
        &self,
        what: &'static str,
        answered: bool,
        request: Q,
        event: impl FnOnce(Arc<ClientRequest<Q, A>>) -> ToolEvent,
    ) -> ClientFuture<A> {
        if !answered || !self.sink.is_connected() {
            let detail = if answered {
                "dispatched without an event stream: nobody can answer"
            } else {
                "the session's host does not answer it (an MCP client that did not declare it)"
            };
            return Box::pin(std::future::ready(Err(ToolError::new(
                ErrorCode::CapabilityMissing,
                format!(
                    "this tool needs its client's `{what}`, and this client does not provide it;                      the tool cannot do this here"
                ),
            )
            .with_detail(detail))));
        }
        let (pending, reply): (_, Answered<A>) = ClientRequest::new(self.call.id(), request);
        if !self.send_open(|| event(pending.clone())) {
            return Box::pin(std::future::ready(Err(cancelled())));
        }
        let sink = self.sink.clone();
        let Asking {
            timeout, signal, ..
        } = self.asking.clone();
        // The host's side learns that the tool stopped waiting, however it stopped.
        let withdrawn = pending.signal().clone().drop_guard();
        Box::pin(async move {
            let _withdrawn = withdrawn;
            tokio::select! {
                biased;
                () = signal.cancelled() => Err(cancelled()),
                answer = reply => answer.unwrap_or_else(|_| Err(ToolError::new(
                    ErrorCode::CapabilityMissing,
                    format!("the host dropped the tool's `{what}` request unanswered"),
                ))),
                () = sink.reader_gone() => Err(ToolError::new(
                    ErrorCode::CapabilityMissing,
                    format!("this tool needs its client's `{what}`, and nobody reads this call's events to answer"),
                )),
                () = tokio::time::sleep(timeout) => Err(ToolError::new(
                    ErrorCode::NoAnswer,
                    format!(
                        "the tool's `{what}` request got no answer within {} s \
                         (RuntimeBuilder::approval_timeout)",
                        timeout.as_secs()
                    ),
                )),
            }
        })
    }

    fn lock_open(&self) -> std::sync::MutexGuard<'_, bool> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Closes the channel without a terminal event (the call's future was dropped).
    pub(crate) fn close(&self) {
        *self.lock_open() = false;
    }
}

/// A call's `tool.completed` or `tool.failed`.
#[inline]
pub(crate) fn terminal_event(
    call: &ToolCall,
    outcome: &Result<ToolOutput, ToolError>,
) -> ToolEvent {
    match outcome {
        Ok(result) => ToolEvent::Completed {
            tool_call: call.clone(),
            result: result.structured.clone().unwrap_or(Value::Null),
            // Most results carry no blocks: an empty `Vec` is made, not cloned.
            content: if result.content.is_empty() {
                Vec::new()
            } else {
                result.content.clone()
            },
        },
        Err(error) => ToolEvent::Failed {
            tool_call: call.clone(),
            error: error.clone(),
        },
    }
}

/// Sends a call's terminal event (`tool.completed` or `tool.failed`) to `sink`, through the
/// call's gate when its tool holds a context: atomically with respect to the tool's progress
/// reports, and at most once. The event is built only when someone listens.
pub(crate) fn send_terminal(
    sink: &EventSender,
    call: &ToolCall,
    gate: Option<&CallEvents>,
    outcome: &Result<ToolOutput, ToolError>,
) {
    if !sink.is_connected() {
        if let Some(gate) = gate {
            gate.close();
        }
        return;
    }
    let event = || terminal_event(call, outcome);
    match gate {
        Some(gate) => {
            let mut open = gate.lock_open();
            if *open {
                *open = false;
                sink.send(event());
            }
        }
        None => sink.send(event()),
    }
}

/// The error of a request whose call was cancelled while it waited.
fn cancelled() -> ToolError {
    ToolError::new(
        ErrorCode::Cancelled,
        "the call was cancelled while it waited for its client's answer",
    )
}

/// A tool's messages become events of its call while the call is open: `tool.delta`,
/// `tool.log` (and a `tracing` event), `tool.progress`; its requests, `elicitation.requested`
/// and `sampling.requested`, which the host answers.
impl Client for CallEvents {
    fn report(&self, delta: Value) -> bool {
        self.send_open(|| ToolEvent::Delta {
            tool_call_id: Arc::from(self.call.id()),
            delta,
        })
    }

    fn log(&self, message: LogMessage) -> bool {
        let (id, name) = (self.call.id(), self.call.name());
        let logger = message.logger.as_deref().unwrap_or("");
        let data = &message.data;
        match message.level {
            LogLevel::Debug => {
                tracing::debug!(target: "pleach::tool::log", tool_call_id = id, tool = name, logger, %data);
            }
            LogLevel::Info | LogLevel::Notice => {
                tracing::info!(target: "pleach::tool::log", tool_call_id = id, tool = name, logger, %data);
            }
            LogLevel::Warning => {
                tracing::warn!(target: "pleach::tool::log", tool_call_id = id, tool = name, logger, %data);
            }
            LogLevel::Error | LogLevel::Critical | LogLevel::Alert | LogLevel::Emergency => {
                tracing::error!(target: "pleach::tool::log", tool_call_id = id, tool = name, logger, level = message.level.as_str(), %data);
            }
        }
        self.send_open(|| ToolEvent::Log {
            tool_call_id: Arc::from(id),
            message,
        })
    }

    fn report_progress(&self, progress: Progress) -> bool {
        self.send_open(|| ToolEvent::Progress {
            tool_call_id: Arc::from(self.call.id()),
            progress,
        })
    }

    fn elicit(&self, elicitation: Elicitation) -> ClientFuture<Elicited<Value>> {
        self.ask(
            "elicitation",
            self.asking.elicitation,
            elicitation,
            |request| ToolEvent::ElicitationRequested { request },
        )
    }

    fn sample(&self, request: SamplingRequest) -> ClientFuture<Sampled> {
        self.ask("sampling", self.asking.sampling, request, |request| {
            ToolEvent::SamplingRequested { request }
        })
    }
}
