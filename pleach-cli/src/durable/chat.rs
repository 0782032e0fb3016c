//! `pleach chat --temporal`: each user turn a durable conversation, started on Temporal and
//! followed until it ends (or, with `--detach`, only started).

use std::process::ExitCode;
use std::time::Duration;

use pleach_core::Message;
use pleach_core::agent::ModelEndpoint;
use pleach_core::durable::{DurableOptions, DurableStop};
use pleach_temporal::{ConversationInput, DurableClient};

use super::{connect, usage};
use crate::chat_turns::{TurnEnd, UserLines};
use crate::duration;
use crate::render::Renderer;
use crate::usage::{Outcome, UsageError};

/// How often a followed conversation's events are read.
const POLL: Duration = Duration::from_millis(250);

/// What `pleach chat --temporal` adds to a chat. Flattened into `chat`'s own `Args`, so it takes
/// no argument group of its own: clap names a derived group after its struct, and two `Args` in
/// one command are refused when the command is built.
#[derive(Debug, clap::Args)]
#[group(skip)]
pub(crate) struct Args {
    /// Runs each user turn as a durable conversation on the Temporal service at `HOST:PORT`
    /// (workers run its steps and calls: `pleach worker`).
    #[arg(long, value_name = "HOST:PORT")]
    temporal: Option<String>,
    /// The task queue the workers poll.
    #[arg(long, value_name = "Q", default_value = pleach_temporal::defaults::TASK_QUEUE, requires = "temporal")]
    task_queue: String,
    /// The conversation's workflow id (default: a new one).
    #[arg(long, value_name = "ID", requires = "temporal")]
    id: Option<String>,
    /// How long an approval waits for a decision before its call fails with 1016 (`10m`, `1h`;
    /// default: for ever).
    #[arg(long, value_name = "DURATION", requires = "temporal", value_parser = duration::positive)]
    approval_expiry: Option<Duration>,
    /// How long a worker may go silent mid-step or mid-call before another takes over: how long
    /// the conversation stalls if its worker dies (`5s`; at least `1s`).
    #[arg(long, value_name = "DURATION", requires = "temporal", value_parser = duration::positive)]
    heartbeat_timeout: Option<Duration>,
    /// Starts the conversation, prints its id (alone on stdout) and returns (follow it with
    /// `pleach status`).
    #[arg(long, requires = "temporal")]
    detach: bool,
}

impl Args {
    /// Whether the chat is durable (`--temporal`).
    pub(crate) fn is_on(&self) -> bool {
        self.temporal.is_some()
    }
}

/// One user turn (or each line of stdin) as a durable conversation on `endpoint`, followed to
/// its end.
pub(crate) async fn run(
    durable: Args,
    endpoint: ModelEndpoint,
    message: Option<String>,
    max_steps: usize,
    json: bool,
) -> Outcome {
    let Some(target) = durable.temporal.as_deref() else {
        return Err("`--temporal HOST:PORT` is missing".into());
    };
    let client = connect(target).await?;
    let mut options = DurableOptions::default().max_steps(max_steps);
    if let Some(expiry) = durable.approval_expiry {
        options = options.approval_expiry(expiry);
    }
    let mut renderer = Renderer::new(json);
    let mut conversation = Vec::new();
    let mut lines = UserLines::new(message);
    let mut failed = false;
    while let Some(line) = lines.next().await? {
        // Detached, stdout is the conversation's id alone: `id=$(pleach chat … --detach)`.
        if !durable.detach {
            renderer.say("user", &line);
        }
        conversation.push(Message::User { content: line });
        let mut input =
            ConversationInput::new(conversation.clone(), endpoint.clone()).options(options.clone());
        if let Some(timeout) = durable.heartbeat_timeout {
            input = input.heartbeat_timeout(timeout);
        }
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
        let end = match &outcome.stop {
            DurableStop::Finished => TurnEnd::Answered(outcome.final_text),
            DurableStop::MaxSteps => TurnEnd::MaxSteps,
            DurableStop::Error(error) => {
                TurnEnd::Stopped(format!("the conversation stopped: {error}"))
            }
            other => TurnEnd::Stopped(format!("the conversation stopped: {other:?}")),
        };
        failed |= end.report(&mut renderer, max_steps);
        conversation = outcome.conversation;
    }
    Ok(ExitCode::from(u8::from(failed)))
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
