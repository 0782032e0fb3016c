//! **pleach**: the whole pipeline a host runs for one of a model's calls.
//!
//! One call: `ToolCall::new("call_1", "add", arguments)` (its texts copied into one shared
//! allocation, as a host builds it from a provider's message) and `Session::dispatch(call, &sender).await`: whatever pleach-core's
//! pipeline does for a call. As documented there: the tool lookup, the size and nesting limits,
//! the JSON parse with its duplicate-key check and input-schema validation (or their equivalent),
//! the repeated-failure check, the run with the call's cancellation token and timeout wiring, the
//! panic guard, output-schema validation, and the `tool.started` and `tool.completed` events into
//! an unbounded channel. Reading the events is part of a host's work too: the stream is drained
//! every [`DRAIN_EVERY`] calls inside the timed loop.
//!
//! With `--profile`, [`profile_parts`] times pieces of the same work through pleach's public API,
//! plus one ingredient the pipeline is built from (a cancellation child token, made and dropped
//! once per call), so the core team can see where the time goes without touching pleach-core;
//! and [`EventFloor`], the floor under this column: what a host pays for the call and its two
//! events with no pipeline at all.

use std::hint::black_box;
use std::time::{Duration, Instant};

use pleach_core::event::{EventSender, EventStream};
use pleach_core::{
    CancellationToken, Session, SessionOptions, ToolCall, ToolContext, ToolDefinition, ToolEvent,
};
use serde_json::Value;
use tokio::runtime::Runtime;

use super::{ARGUMENTS, add};
use crate::measure::Contender;

/// The column's name.
pub(super) const LABEL: &str = "pleach";

/// Events are read (and dropped) every this many calls, so memory stays flat.
const DRAIN_EVERY: u32 = 1_000;

/// A session with `add` enabled, dispatching into an event channel.
pub(super) struct SessionDispatch {
    session: Session,
    sender: EventSender,
    stream: EventStream,
}

impl SessionDispatch {
    pub(super) fn new() -> Result<Self, Box<dyn std::error::Error>> {
        let session = new_session()?;
        let (sender, stream) = pleach_core::event::channel();
        Ok(SessionDispatch {
            session,
            sender,
            stream,
        })
    }
}

fn new_session() -> Result<Session, Box<dyn std::error::Error>> {
    let runtime = pleach_core::Runtime::builder().build()?;
    Ok(runtime.create_session(SessionOptions::enabled(["add"]))?)
}

fn new_call(arguments: &str) -> ToolCall {
    ToolCall::new("call_1", "add", arguments)
}

impl Contender for SessionDispatch {
    fn label(&self) -> &'static str {
        LABEL
    }

    fn describe(&self) -> &'static str {
        "ToolCall::new + Session::dispatch, events into a channel"
    }

    fn verify(&mut self, runtime: &Runtime) -> Result<(), String> {
        let result = runtime.block_on(self.session.dispatch(new_call(ARGUMENTS), &self.sender));
        let types: Vec<&str> = self
            .stream
            .drain()
            .iter()
            .map(pleach_core::ToolEvent::event_type)
            .collect();
        if result.outcome.as_ref().map(pleach_core::ToolOutput::value) != Ok(&Value::from(3)) {
            return Err(format!("{:?}", result.outcome));
        }
        if types != ["tool.started", "tool.completed"] {
            return Err(format!("events {types:?}"));
        }
        Ok(())
    }

    fn time_batch(&mut self, runtime: &Runtime, calls: u32) -> Duration {
        runtime.block_on(async {
            let start = Instant::now();
            for index in 1..=calls {
                let call = new_call(black_box(ARGUMENTS));
                black_box(self.session.dispatch(call, &self.sender).await);
                if index % DRAIN_EVERY == 0 {
                    black_box(self.stream.drain());
                }
            }
            black_box(self.stream.drain());
            start.elapsed()
        })
    }
}

/// `--profile`'s floor row: the work every host with pleach's events does, without the pipeline.
/// One call: `ToolCall::new`, a `tool.started` with the call into a channel, the `raw` column's
/// call on the call's arguments, a `tool.completed` with the call and the result; the channel
/// drained every [`DRAIN_EVERY`] calls, as in the `pleach` column. No lookup, limits, validation,
/// panic guard or result. What the pipeline costs is the `pleach` row minus this one.
pub(super) struct EventFloor {
    sender: EventSender,
    stream: EventStream,
}

impl EventFloor {
    pub(super) fn new() -> Self {
        let (sender, stream) = pleach_core::event::channel();
        EventFloor { sender, stream }
    }

    async fn once(&self) -> Result<Value, String> {
        let call = new_call(black_box(ARGUMENTS));
        self.sender.send(ToolEvent::Started {
            tool_call: call.clone(),
        });
        let result = super::raw_serde::call(call.arguments())
            .await
            .map_err(|error| error.to_string())?;
        self.sender.send(ToolEvent::Completed {
            tool_call: call,
            result: result.clone(),
            content: Vec::new(),
        });
        Ok(result)
    }
}

impl Contender for EventFloor {
    fn label(&self) -> &'static str {
        "floor/call + 2 events"
    }

    fn describe(&self) -> &'static str {
        "ToolCall::new + raw call + tool.started/completed into a channel, no pipeline"
    }

    fn verify(&mut self, runtime: &Runtime) -> Result<(), String> {
        let result = runtime.block_on(self.once())?;
        let events = self.stream.drain().len();
        match result {
            value if value == 3 && events == 2 => Ok(()),
            value => Err(format!("{value} with {events} events")),
        }
    }

    fn time_batch(&mut self, runtime: &Runtime, calls: u32) -> Duration {
        runtime.block_on(async {
            let start = Instant::now();
            for index in 1..=calls {
                black_box(self.once().await.is_ok());
                if index % DRAIN_EVERY == 0 {
                    black_box(self.stream.drain());
                }
            }
            black_box(self.stream.drain());
            start.elapsed()
        })
    }
}

/// The pieces `--profile` times, each through pleach's public API.
#[derive(Debug, Clone, Copy)]
enum Part {
    NewCall,
    ParseValue,
    ValidateArguments,
    DefinitionCall,
    SessionCall,
    ChildToken,
}

impl Part {
    const ALL: [Part; 6] = [
        Part::NewCall,
        Part::ParseValue,
        Part::ValidateArguments,
        Part::DefinitionCall,
        Part::SessionCall,
        Part::ChildToken,
    ];
}

/// One piece of the pipeline, timed like a column.
pub(super) struct PipelinePart {
    part: Part,
    definition: ToolDefinition,
    session: Session,
    /// A long-lived token, as a session's own signal is.
    parent: CancellationToken,
}

/// The `--profile` rows: from building the `ToolCall` alone up to `Session::call` (the whole
/// pipeline without an event channel), then the ingredient. Each row's time includes checking its
/// result, a comparison of a few nanoseconds.
pub(super) fn profile_parts() -> Result<Vec<Box<dyn Contender>>, Box<dyn std::error::Error>> {
    let definition = add::definition();
    let mut parts: Vec<Box<dyn Contender>> = Vec::new();
    for part in Part::ALL {
        parts.push(Box::new(PipelinePart {
            part,
            definition: definition.clone(),
            session: new_session()?,
            parent: CancellationToken::new(),
        }));
    }
    parts.push(Box::new(EventFloor::new()));
    Ok(parts)
}

impl PipelinePart {
    /// One call of this piece; `Err` says what came out wrong.
    async fn once(&self) -> Result<(), String> {
        let arguments = black_box(ARGUMENTS);
        match self.part {
            Part::NewCall => {
                black_box(new_call(arguments));
                Ok(())
            }
            Part::ParseValue => match serde_json::from_str::<Value>(arguments) {
                Ok(value) => {
                    black_box(value);
                    Ok(())
                }
                Err(error) => Err(error.to_string()),
            },
            Part::ValidateArguments => {
                let verdict = black_box(self.definition.validate_arguments(arguments));
                if verdict.valid {
                    Ok(())
                } else {
                    Err(format!("{:?}", verdict.errors))
                }
            }
            Part::DefinitionCall => {
                let ctx = ToolContext::new("call_1");
                expect_three(self.definition.call(arguments, ctx).await)
            }
            Part::SessionCall => expect_three(self.session.call(new_call(arguments)).await.outcome),
            Part::ChildToken => {
                black_box(self.parent.child_token());
                Ok(())
            }
        }
    }
}

fn expect_three<E: std::fmt::Debug>(
    outcome: Result<pleach_core::ToolOutput, E>,
) -> Result<(), String> {
    match outcome {
        Ok(value) if *value.value() == 3 => {
            black_box(value);
            Ok(())
        }
        other => Err(format!("{other:?}")),
    }
}

impl Contender for PipelinePart {
    fn label(&self) -> &'static str {
        match self.part {
            Part::NewCall => "pleach/ToolCall::new",
            Part::ParseValue => "pleach/parse Value",
            Part::ValidateArguments => "pleach/validate_arguments",
            Part::DefinitionCall => "pleach/ToolDefinition::call",
            Part::SessionCall => "pleach/Session::call",
            Part::ChildToken => "ingredient/child token",
        }
    }

    fn describe(&self) -> &'static str {
        match self.part {
            Part::NewCall => "the ToolCall alone (one allocation)",
            Part::ParseValue => "from_str::<Value>, no duplicate-key check",
            Part::ValidateArguments => "validate_arguments: checked parse into Value + schema",
            Part::DefinitionCall => "ToolDefinition::call: validate, run, output schema",
            Part::SessionCall => "ToolCall::new + Session::call: events discarded",
            Part::ChildToken => "CancellationToken::child_token of a long-lived token, dropped",
        }
    }

    fn verify(&mut self, runtime: &Runtime) -> Result<(), String> {
        runtime.block_on(self.once())
    }

    fn time_batch(&mut self, runtime: &Runtime, calls: u32) -> Duration {
        runtime.block_on(async {
            let start = Instant::now();
            for _ in 0..calls {
                black_box(self.once().await.is_ok());
            }
            start.elapsed()
        })
    }
}
