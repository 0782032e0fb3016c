//! The runtime's per-call event gate: a call whose tool holds a [`ToolContext`](crate::ToolContext)
//! can report progress at any time (even from a task it left behind), so its `tool.delta` events
//! and its one terminal event pass one gate, closed by the terminal event.

use std::sync::Arc;

use serde_json::Value;

use crate::call::ToolCall;
use crate::content::ToolOutput;
use crate::error::ToolError;
use crate::event::{EventSender, ToolEvent};
use crate::tool::ProgressSink;

/// The event channel of one call whose tool holds a context (and so can report progress at any
/// time, even from a task it left behind): closed when the call's terminal event is sent, so that
/// nothing follows that event. A call whose tool takes no context cannot send anything itself and
/// needs no such gate: its terminal event goes straight to the sink ([`send_terminal`]).
#[derive(Debug)]
pub(crate) struct CallEvents {
    call: ToolCall,
    sink: EventSender,
    open: std::sync::Mutex<bool>,
}

impl CallEvents {
    pub(crate) fn new(call: ToolCall, sink: EventSender) -> Self {
        CallEvents {
            call,
            sink,
            open: std::sync::Mutex::new(true),
        }
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
pub(crate) fn terminal_event(
    call: &ToolCall,
    outcome: &Result<ToolOutput, ToolError>,
) -> ToolEvent {
    match outcome {
        Ok(result) => ToolEvent::Completed {
            tool_call: call.clone(),
            result: result.structured.clone().unwrap_or(Value::Null),
            content: result.content.clone(),
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

/// A tool's progress reports become `tool.delta` events while the call is open.
impl ProgressSink for CallEvents {
    fn report(&self, delta: Value) -> bool {
        let open = self.lock_open();
        if *open {
            self.sink.send(ToolEvent::Delta {
                tool_call_id: Arc::from(self.call.id()),
                delta,
            });
        }
        *open
    }
}
