//! **floor** (context, not in the summary line): what any step pays with pleach's events and
//! result messages, without pleach's pipeline or scheduler.
//!
//! Setup, not timed: the same 100,000 calls as the `pleach` column. Timed, for one step: a
//! `tool.started` per call into an `event::channel()`, then per call the `raw` reading of its
//! arguments (`serde_json::from_str` into a struct, `read_noop(n).await`, `serde_json::to_value`),
//! a `tool.completed` with the call and the result, a `ToolResult`, and its
//! `Message::tool_result` pushed onto a conversation; the events drained every 128 calls (the
//! `pleach` column's reader gets them in runs of about that size). No lookup, limits, validation,
//! panic guard, schedule or cap. The `pleach` row minus this one is what the pipeline and the
//! scheduler cost.

use std::hint::black_box;
use std::time::Duration;

use pleach_core::{Message, ToolCall, ToolEvent, ToolResult};
use serde::Deserialize;
use tokio::runtime::Runtime;

use super::{CALLS, read_noop};
use crate::measure::Contender;

/// Events are drained every this many calls.
const DRAIN_EVERY: usize = 128;

#[derive(Deserialize)]
struct Args {
    n: u32,
}

/// The calls, their events, results and messages, with nothing in between.
pub(super) struct EventFloor;

/// One step: its results and conversation, and how many events were read.
async fn step(calls: Vec<ToolCall>) -> (Vec<ToolResult>, Vec<Message>, usize) {
    let (sender, mut stream) = pleach_core::event::channel();
    for call in &calls {
        sender.send(ToolEvent::Started {
            tool_call: call.clone(),
        });
    }
    let mut results = Vec::with_capacity(calls.len());
    let mut conversation = Vec::with_capacity(calls.len());
    let mut read = 0;
    for (index, call) in calls.into_iter().enumerate() {
        let outcome = match serde_json::from_str::<Args>(call.arguments()) {
            Ok(args) => serde_json::to_value(read_noop(args.n).await)
                .map(pleach_core::ToolOutput::new)
                .map_err(|error| pleach_core::ToolError::failed(error.to_string())),
            Err(error) => Err(pleach_core::ToolError::failed(error.to_string())),
        };
        if let Ok(result) = &outcome {
            sender.send(ToolEvent::Completed {
                tool_call: call.clone(),
                result: result.value().clone(),
                content: Vec::new(),
            });
        }
        conversation.push(Message::tool_result(&call, &outcome));
        results.push(ToolResult {
            tool_call: call,
            outcome,
        });
        if index % DRAIN_EVERY == DRAIN_EVERY - 1 {
            read += black_box(stream.drain()).len();
        }
    }
    read += black_box(stream.drain()).len();
    (results, conversation, read)
}

impl Contender for EventFloor {
    fn label(&self) -> &'static str {
        "floor"
    }

    fn describe(&self) -> &'static str {
        "2 events + raw call + ToolResult + result message per call, no pipeline or schedule"
    }

    fn verify(&mut self, runtime: &Runtime) -> Result<(), String> {
        let (results, conversation, read) =
            runtime.block_on(step(super::pleach_turn::new_calls(CALLS)));
        let expected = CALLS as usize;
        let all_ok = (0..CALLS).zip(&results).all(|(i, result)| {
            result.outcome.as_ref().map(pleach_core::ToolOutput::value)
                == Ok(&serde_json::Value::from(i))
        });
        if results.len() != expected
            || conversation.len() != expected
            || read != 2 * expected
            || !all_ok
        {
            return Err(format!(
                "{} results, {} messages, {read} events",
                results.len(),
                conversation.len()
            ));
        }
        Ok(())
    }

    fn time_batch(&mut self, runtime: &Runtime, calls: u32) -> Duration {
        super::bare_buffered::time(runtime, step(super::pleach_turn::new_calls(calls)))
    }
}
