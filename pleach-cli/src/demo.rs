//! `pleach demo`: a bundled model transcript, step by step through the real runtime.

use std::process::ExitCode;
use std::time::Instant;

use pleach_core::{AssistantStep, Runtime, SessionOptions, ToolCall};
use serde::Deserialize;
use serde_json::Value;

use crate::render::Renderer;
use crate::usage::{Outcome, UsageError};

/// The scripted conversation: what the user asks, what the model does at each step, and its
/// final answer. A recorded transcript stands in for the model, so no key is needed.
const TRANSCRIPT: &str = include_str!("../demo/transcript.json");

#[derive(Debug, Deserialize)]
struct Transcript {
    user: String,
    steps: Vec<Step>,
    answer: String,
}

#[derive(Debug, Deserialize)]
struct Step {
    #[serde(default)]
    text: Option<String>,
    calls: Vec<ScriptedCall>,
}

#[derive(Debug, Deserialize)]
struct ScriptedCall {
    name: String,
    arguments: Value,
}

/// What `pleach demo` was asked.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Prints the events as NDJSON instead of rendering them.
    #[arg(long)]
    json: bool,
}

/// Runs the transcript, rendering each step's calls as they run.
pub(crate) async fn run(args: Args) -> Outcome {
    let transcript: Transcript = serde_json::from_str(TRANSCRIPT)
        .map_err(|error| UsageError(format!("the bundled transcript is broken: {error}")))?;
    let started = Instant::now();
    let mut builder = Runtime::builder();
    if let Some(meter) = crate::telemetry::meter() {
        builder = builder.meter(meter);
    }
    let runtime = builder
        .build()
        .map_err(|error| UsageError(format!("cannot build the runtime: {error}")))?;
    let session = runtime
        .create_session(SessionOptions::enabled([
            "math",
            "unit_convert",
            "datetime",
            "parse_structured",
            "scratchpad",
            "text_search",
        ]))
        .map_err(|error| UsageError(error.to_string()))?;
    let mut renderer = Renderer::new(args.json);
    renderer.say(
        "pleach demo",
        "a scripted model (a bundled transcript, no API key) driving the real runtime",
    );
    renderer.say("user", &transcript.user);
    session.push_user_message(transcript.user.as_str());
    let mut n = 0_u32;
    for step in transcript.steps {
        let calls: Vec<ToolCall> = step
            .calls
            .iter()
            .map(|call| {
                n += 1;
                ToolCall::from_value(format!("call_{n}"), call.name.as_str(), &call.arguments)
            })
            .collect();
        let mut scripted = AssistantStep::from(calls);
        if let Some(text) = step.text {
            renderer.say("model", &text);
            scripted = scripted.with_text(text);
        }
        let mut turn = session.run_turn(scripted);
        renderer.follow(turn.events(), |_| {}).await;
        turn.finish().await;
    }
    renderer.say("model", &transcript.answer);
    session.push_assistant_message(transcript.answer.as_str());
    let took = started.elapsed();
    renderer.say(
        "done",
        &format!(
            "{n} calls, {} messages in the conversation, {:.1} ms",
            session.conversation().len(),
            took.as_secs_f64() * 1000.0
        ),
    );
    Ok(ExitCode::SUCCESS)
}
