//! `pleach approve`: a decision on a durable conversation's call waiting for approval. No worker
//! needs to run.

use std::process::ExitCode;

use pleach_core::safety::Action;
use pleach_temporal::DurableError;

use super::{connect, usage};
use crate::usage::{Outcome, UsageError};

/// What `pleach approve` was asked.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("decision").required(true).args(["accept", "edit", "reject"])))]
pub(crate) struct Args {
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
    #[arg(long, value_name = "HOST:PORT", env = "TEMPORAL_ADDRESS", default_value = super::DEFAULT_ADDRESS)]
    temporal: String,
}

/// Sends the decision; exit 1 when it is refused: no such call waits, its approval expired,
/// another decision on it is on its way (the first is final), or the fingerprint is another's.
pub(crate) async fn run(args: Args) -> Outcome {
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
    let client = connect(&args.temporal).await?;
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
