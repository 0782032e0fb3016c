//! **pleach**: one model step through the whole pipeline, as a host runs it.
//!
//! Setup, not timed: a runtime from `Runtime::builder().max_concurrency(64).build()` (built once),
//! and per batch a fresh session with `SessionOptions::enabled(["read_noop"])` and the step's
//! 100,000 `ToolCall::new(format!("c{i}"), "read_noop", format!("{{\"n\":{i}}}"))`. `read_noop`
//! gets no batching hint: its name starts with the read-only verb `read`, so inference makes it
//! `parallel` (checked in `verify`), and it runs under the global cap of 64.
//!
//! Timed: `Session::run_turn(calls)` (the assistant message with the calls written into the
//! conversation, a `tool.started` per call, the driver task spawned), then the turn's events read
//! with `recv()` until the stream ends (the driver closes it once every call's terminal event is
//! sent and the result messages are written back), then `Turn::finish()`. In between, pleach
//! computes a lane per call and its schedule (at most 64 in flight), and runs each call's pipeline
//! (lookup, limits, parse and input validation, the tool, output validation, `tool.completed`) as
//! its lane lets it start, then puts the results in call order and writes one result message per
//! call. `read_noop` has no `.await`, so on this current-thread runtime each call finishes where it
//! starts, inside the driver task: no task or future per call (a tool that awaits gets a future,
//! polled in the driver task). Dropping the results and
//! the session (with its 200,001-message conversation) happens after the clock stops.

use std::hint::black_box;
use std::time::{Duration, Instant};

use pleach_core::{BatchingStrategy, Session, SessionOptions, ToolCall, ToolResult};
use serde_json::Value;
use tokio::runtime::Runtime;

use super::{CALLS, CAP};
use crate::measure::Contender;

/// The column's name.
pub(super) const LABEL: &str = "pleach";

/// The tool's name, as the model calls it.
const TOOL: &str = "read_noop";

/// A runtime with a concurrency cap of 64, running one step per batch in a fresh session.
pub(super) struct TurnOfCalls {
    runtime: pleach_core::Runtime,
}

impl TurnOfCalls {
    pub(super) fn new() -> Result<Self, Box<dyn std::error::Error>> {
        let runtime = pleach_core::Runtime::builder()
            .max_concurrency(CAP)
            .build()?;
        Ok(TurnOfCalls { runtime })
    }

    fn new_session(&self) -> Session {
        // `new` already built a session the same way in `verify`, so this cannot fail here.
        self.runtime
            .create_session(SessionOptions::enabled([TOOL]))
            .unwrap_or_else(|error| panic!("a session with `{TOOL}`: {error}"))
    }
}

/// The step's calls, as a host builds them from a provider's message (also the `floor` row's).
pub(super) fn new_calls(calls: u32) -> Vec<ToolCall> {
    (0..calls)
        .map(|i| ToolCall::new(format!("c{i}"), TOOL, format!("{{\"n\":{i}}}")))
        .collect()
}

/// Runs one step and reads its events to the end; returns the results and the events read.
async fn run_step(session: &Session, calls: Vec<ToolCall>) -> (Vec<ToolResult>, Vec<&'static str>) {
    let mut turn = session.run_turn(calls);
    let mut types = Vec::new();
    while let Some(event) = turn.events().recv().await {
        types.push(event.event_type());
    }
    (turn.finish().await, types)
}

impl Contender for TurnOfCalls {
    fn label(&self) -> &'static str {
        LABEL
    }

    fn describe(&self) -> &'static str {
        "run_turn(100k ToolCalls) + events recv() to the end + Turn::finish"
    }

    fn verify(&mut self, runtime: &Runtime) -> Result<(), String> {
        let strategy = self.runtime.batching_strategy(TOOL);
        if strategy != Some(BatchingStrategy::Parallel) {
            return Err(format!("`{TOOL}` is batched as {strategy:?}, not parallel"));
        }
        let session = self
            .runtime
            .create_session(SessionOptions::enabled([TOOL]))
            .map_err(|error| error.to_string())?;
        let (results, types) = runtime.block_on(run_step(&session, new_calls(CALLS)));
        if results.len() != CALLS as usize {
            return Err(format!("{} results for {CALLS} calls", results.len()));
        }
        for (i, result) in (0..CALLS).zip(&results) {
            let value = result.outcome.as_ref().map(pleach_core::ToolOutput::value);
            if result.tool_call.id() != format!("c{i}") || value != Ok(&Value::from(i)) {
                return Err(format!(
                    "result {i} is {:?} for call `{}`",
                    result.outcome,
                    result.tool_call.id()
                ));
            }
        }
        let (started, completed) = (CALLS as usize, 2 * CALLS as usize);
        if types.len() != completed
            || types[..started].iter().any(|t| *t != "tool.started")
            || types[started..].iter().any(|t| *t != "tool.completed")
        {
            return Err(format!(
                "{} events, expected {CALLS} `tool.started` then {CALLS} `tool.completed`",
                types.len()
            ));
        }
        let messages = session.conversation().len();
        if messages != 1 + CALLS as usize {
            return Err(format!("{messages} messages in the conversation"));
        }
        Ok(())
    }

    fn time_batch(&mut self, runtime: &Runtime, calls: u32) -> Duration {
        let session = self.new_session();
        let step = new_calls(calls);
        let (elapsed, results) = runtime.block_on(async {
            let start = Instant::now();
            let mut turn = session.run_turn(step);
            while let Some(event) = turn.events().recv().await {
                black_box(event);
            }
            let results = black_box(turn.finish().await);
            (start.elapsed(), results)
        });
        drop(results);
        drop(session);
        elapsed
    }
}
