//! `pleach call`: one call through the full runtime, and its events.

use std::process::ExitCode;

use pleach_core::{SessionOptions, ToolCall, ToolEvent};
use serde_json::Value;

use crate::host::HostArgs;
use crate::render::Renderer;
use crate::usage::{Outcome, UsageError};

/// What `pleach call` was asked.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The tool's name.
    name: String,
    /// The arguments, a JSON object.
    #[arg(long = "args", value_name = "JSON", default_value = "{}")]
    arguments: String,
    /// Prints the events as NDJSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    host: HostArgs,
}

/// Runs the call; exit 1 when it failed (its events say why).
pub(crate) async fn run(args: Args) -> Outcome {
    let arguments = args.arguments.as_str();
    if let Err(error) = serde_json::from_str::<Value>(arguments)
        && !too_deep_to_read(&error)
    {
        return Err(UsageError(format!("`--args` is not JSON: {error}")));
    }
    let runtime = args.host.runtime().await?;
    let session = runtime
        .create_session(SessionOptions::all())
        .map_err(|error| UsageError(error.to_string()))?;
    let mut renderer = Renderer::new(args.json);
    let mut turn = session.run_turn(vec![ToolCall::new("call_1", args.name.as_str(), arguments)]);
    renderer
        .follow(turn.events(), |event| match event {
            ToolEvent::InterruptRequested { interrupt } => crate::ask::answer(&session, interrupt),
            ToolEvent::ElicitationRequested { request } => crate::form::answer(request),
            ToolEvent::SamplingRequested { request } => {
                request.refuse("`pleach call` has no model to sample with (`pleach chat` has)");
            }
            _ => {}
        })
        .await;
    let results = turn.finish().await;
    Ok(if results.iter().all(|r| r.outcome.is_ok()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Whether `serde_json` gave up on the text only for its nesting (past its 128 levels): the text
/// may well be JSON, and the runtime, whose depth limit is lower, refuses it with the code for
/// that (1006) instead of a usage error saying it is not JSON.
fn too_deep_to_read(error: &serde_json::Error) -> bool {
    error.is_syntax() && error.to_string().starts_with("recursion limit exceeded")
}
