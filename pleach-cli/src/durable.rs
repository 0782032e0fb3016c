//! Durable conversations on Temporal (feature `temporal`, `docs/durable.md`): `pleach worker`
//! runs them, `pleach chat --temporal` starts one and follows it, `pleach approve` decides on a
//! waiting call, `pleach status` says where one stands. `approve` and `status` need no worker.

use std::process::ExitCode;
use std::time::Duration;

use pleach_core::Message;
use pleach_core::agent::ModelEndpoint;
use pleach_core::durable::{DurableOptions, DurableStop};
use pleach_core::safety::Action;
use pleach_temporal::{ConversationInput, DurableClient, DurableError};

use crate::catalog::HostArgs;
use crate::render::Renderer;
use crate::usage::{Outcome, UsageError};

/// The Temporal service `worker`, `approve` and `status` use without `--temporal` or
/// `TEMPORAL_ADDRESS` (the Temporal CLI's variable): a dev server's default.
const DEFAULT_ADDRESS: &str = "127.0.0.1:7233";

/// How often a followed conversation's events are read.
const POLL: Duration = Duration::from_millis(250);

/// What `pleach worker` was asked.
#[derive(Debug, clap::Args)]
pub(crate) struct WorkerArgs {
    /// The Temporal service: `HOST:PORT` (or an `http://` / `https://` URL).
    #[arg(long, value_name = "HOST:PORT", env = "TEMPORAL_ADDRESS", default_value = DEFAULT_ADDRESS)]
    temporal: String,
    /// The task queue to poll.
    #[arg(long, value_name = "Q", default_value = pleach_temporal::DEFAULT_TASK_QUEUE)]
    task_queue: String,
    /// Most model steps and calls run at once.
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    max_calls: u64,
}

/// Runs a worker until SIGTERM, SIGINT or SIGHUP: the catalog's tools (and the remote MCP
/// servers' given with `--mcp-*`) for every conversation on the queue.
pub(crate) async fn worker(args: &WorkerArgs, host: &HostArgs) -> Outcome {
    let runtime = host.runtime().await?;
    let worker = pleach_core::durable::Worker::new(runtime);
    eprintln!(
        "pleach worker: serving task queue `{}` on {}",
        args.task_queue, args.temporal
    );
    let max_calls = usize::try_from(args.max_calls).unwrap_or(usize::MAX);
    pleach_temporal::serve(
        &args.temporal,
        &args.task_queue,
        worker,
        max_calls,
        crate::signal::terminated(),
    )
    .await
    .map_err(|error| UsageError(error.to_string()))?;
    Ok(ExitCode::SUCCESS)
}

/// What `pleach chat --temporal` adds to a chat.
#[derive(Debug, clap::Args)]
pub(crate) struct DurableChatArgs {
    /// Runs each user turn as a durable conversation on the Temporal service at `HOST:PORT`
    /// (workers run its steps and calls: `pleach worker`).
    #[arg(long, value_name = "HOST:PORT")]
    pub(crate) temporal: Option<String>,
    /// The task queue the workers poll.
    #[arg(long, value_name = "Q", default_value = pleach_temporal::DEFAULT_TASK_QUEUE, requires = "temporal")]
    task_queue: String,
    /// The conversation's workflow id (default: a new one).
    #[arg(long, value_name = "ID", requires = "temporal")]
    id: Option<String>,
    /// Seconds an approval waits for a decision before its call fails with 1016 (default: for ever).
    #[arg(long, value_name = "SECS", requires = "temporal")]
    approval_expiry: Option<f64>,
    /// Starts the conversation, prints its id and returns (follow it with `pleach status`).
    #[arg(long, requires = "temporal")]
    detach: bool,
}

/// One user turn (or each line of stdin) as a durable conversation, followed to its end.
pub(crate) async fn chat(
    durable: &DurableChatArgs,
    target: &str,
    endpoint: ModelEndpoint,
    message: Option<String>,
    max_steps: usize,
    json: bool,
) -> Outcome {
    let client = DurableClient::connect(target)
        .await
        .map_err(|error| usage(&error))?;
    let mut options = DurableOptions::default().with_max_steps(max_steps);
    if let Some(secs) = durable.approval_expiry {
        let expiry = Duration::try_from_secs_f64(secs)
            .map_err(|_| UsageError("--approval-expiry must be a number of seconds".into()))?;
        options = options.with_approval_expiry(expiry);
    }
    let mut renderer = Renderer::new(json);
    let mut conversation = Vec::new();
    let mut lines = crate::chat::Lines::new(message);
    let mut failed = false;
    while let Some(line) = lines.next().await? {
        let line = line.trim().to_owned();
        if line.is_empty() {
            continue;
        }
        renderer.say("user", &line);
        conversation.push(Message::User { content: line });
        let input = ConversationInput::new(conversation.clone(), endpoint.clone())
            .with_options(options.clone());
        let id = client
            .start(&durable.task_queue, durable.id.clone(), input)
            .await
            .map_err(|error| usage(&error))?;
        if durable.detach {
            outln!("{id}");
            return Ok(ExitCode::SUCCESS);
        }
        eprintln!("pleach chat: conversation `{id}` on {target}");
        let outcome = follow(&client, &id, target, &mut renderer).await?;
        match &outcome.stop {
            DurableStop::Finished => {
                renderer.say("model", outcome.final_text.as_deref().unwrap_or(""));
            }
            DurableStop::MaxSteps => {
                eprintln!(
                    "pleach chat: the model was still calling tools after {max_steps} steps (--max-steps)"
                );
                failed = true;
            }
            DurableStop::Error(error) => {
                eprintln!("pleach chat: the conversation stopped: {error}");
                failed = true;
            }
            other => {
                eprintln!("pleach chat: the conversation stopped: {other:?}");
                failed = true;
            }
        }
        conversation = outcome.conversation;
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Prints the conversation's events as they come (read from its workflow) until it ends.
async fn follow(
    client: &DurableClient,
    id: &str,
    target: &str,
    renderer: &mut Renderer,
) -> Result<pleach_core::durable::DurableOutcome, UsageError> {
    let mut seen = 0;
    loop {
        // No worker yet (or none now): the events wait; the conversation does too.
        if let Ok(events) = client.events(id, seen).await {
            seen += events.len();
            for event in &events {
                renderer.wire(event);
                if event["type"] == "interrupt.requested" && !renderer.is_json() {
                    let call = event["toolCallId"].as_str().unwrap_or("CALL");
                    eprintln!(
                        "pleach chat: decide with `pleach approve {id} {call} --temporal {target} \
                         --accept | --edit JSON | --reject REASON`"
                    );
                }
            }
        }
        if let Some(outcome) = client
            .outcome_within(id, POLL)
            .await
            .map_err(|error| usage(&error))?
        {
            if let Ok(events) = client.events(id, seen).await {
                for event in &events {
                    renderer.wire(event);
                }
            }
            return Ok(outcome);
        }
    }
}

/// What `pleach approve` was asked.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("decision").required(true).args(["accept", "edit", "reject"])))]
pub(crate) struct ApproveArgs {
    /// The conversation's workflow id.
    workflow: String,
    /// The id of the call waiting for approval.
    call: String,
    /// Runs the call as the model made it.
    #[arg(long)]
    accept: bool,
    /// Runs the call with these arguments instead (JSON; checked against the tool's schema).
    #[arg(long, value_name = "JSON")]
    edit: Option<String>,
    /// Does not run the call; the model reads REASON (error 1013).
    #[arg(long, value_name = "REASON")]
    reject: Option<String>,
    /// The fingerprint of the call as it was shown (`pleach status`): the decision is refused
    /// if the waiting call's differs.
    #[arg(long, value_name = "HEX")]
    fingerprint: Option<String>,
    /// The Temporal service: `HOST:PORT`.
    #[arg(long, value_name = "HOST:PORT", env = "TEMPORAL_ADDRESS", default_value = DEFAULT_ADDRESS)]
    temporal: String,
}

/// Sends the decision; exit 1 when it is refused.
pub(crate) async fn approve(args: ApproveArgs) -> Outcome {
    let action = match (args.accept, args.edit, args.reject) {
        (true, _, _) => Action::Accept,
        (_, Some(arguments), _) => {
            serde_json::from_str::<serde_json::Value>(&arguments)
                .map_err(|error| UsageError(format!("--edit is not JSON: {error}")))?;
            Action::Edit { arguments }
        }
        (_, _, Some(reason)) => Action::Reject { reason },
        _ => return Err("give one of --accept, --edit JSON, --reject REASON".into()),
    };
    let name = action.name();
    let client = DurableClient::connect(&args.temporal)
        .await
        .map_err(|error| usage(&error))?;
    match client
        .decide(
            &args.workflow,
            &args.call,
            args.fingerprint.as_deref(),
            action,
        )
        .await
    {
        Ok(interrupt) => {
            outln!(
                "sent: {name} call {} ({}) of {}",
                args.call,
                interrupt.tool_call.name(),
                args.workflow
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(DurableError::Refused(reason)) => {
            eprintln!("pleach approve: refused: {reason}");
            Ok(ExitCode::from(1))
        }
        Err(error) => Err(usage(&error)),
    }
}

/// What `pleach status` was asked.
#[derive(Debug, clap::Args)]
pub(crate) struct StatusArgs {
    /// The conversation's workflow id.
    workflow: String,
    /// The Temporal service: `HOST:PORT`.
    #[arg(long, value_name = "HOST:PORT", env = "TEMPORAL_ADDRESS", default_value = DEFAULT_ADDRESS)]
    temporal: String,
    /// Prints JSON: `{"state", "running", "pending": [interrupt…], "refused"}`.
    #[arg(long)]
    json: bool,
}

/// Where a conversation stands: its state, the calls waiting for approval.
pub(crate) async fn status(args: &StatusArgs) -> Outcome {
    let client = DurableClient::connect(&args.temporal)
        .await
        .map_err(|error| usage(&error))?;
    let status = client
        .status(&args.workflow)
        .await
        .map_err(|error| usage(&error))?;
    if args.json {
        let json = serde_json::json!({
            "state": status.state,
            "running": status.running,
            "pending": status.waiting.pending,
            "refused": status.waiting.refused,
        });
        outln!("{json}");
        return Ok(ExitCode::SUCCESS);
    }
    outln!("{}: {}", args.workflow, status.state);
    for interrupt in &status.waiting.pending {
        outln!(
            "  waiting: call {} {} {} (fingerprint {})",
            interrupt.tool_call.id(),
            interrupt.tool_call.name(),
            interrupt.tool_call.arguments(),
            interrupt.fingerprint
        );
        for finding in &interrupt.findings {
            outln!("    {}", finding.reason);
        }
    }
    if let Some(refused) = &status.waiting.refused {
        outln!("  last decision refused: {refused}");
    }
    Ok(ExitCode::SUCCESS)
}

fn usage(error: &DurableError) -> UsageError {
    UsageError(error.to_string())
}
