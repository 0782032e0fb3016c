//! `pleach status`: where a durable conversation stands, and the calls waiting for approval. No
//! worker needs to run.

use std::process::ExitCode;

use super::{connect, usage};
use crate::usage::Outcome;

/// What `pleach status` was asked.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The conversation's workflow id.
    workflow: String,
    /// The Temporal service: `HOST:PORT`.
    #[arg(long, value_name = "HOST:PORT", env = "TEMPORAL_ADDRESS", default_value = super::DEFAULT_ADDRESS)]
    temporal: String,
    /// Prints JSON: `{"state", "running", "pending": [interrupt…], "unapplied": [decision…],
    /// "expired": [interrupt id…], "lastFailure", "refused"}`.
    #[arg(long)]
    json: bool,
}

/// Where a conversation stands: its state, the calls waiting for approval.
pub(crate) async fn run(args: Args) -> Outcome {
    let client = connect(&args.temporal).await?;
    let status = client
        .status(&args.workflow)
        .await
        .map_err(|error| usage(&error))?;
    if args.json {
        let json = serde_json::json!({
            "state": status.state,
            "running": status.running,
            "pending": status.waiting.pending,
            "unapplied": status.unapplied,
            "expired": status.expired,
            "lastFailure": status.last_failure,
            "refused": status.waiting.refused,
        });
        outln!("{json}");
        return Ok(ExitCode::SUCCESS);
    }
    outln!("{}: {}", args.workflow, status.state);
    for interrupt in &status.waiting.pending {
        // What a worker will do with it when it next runs the conversation.
        let state = if status.is_expired(&interrupt.id) {
            "expired (the call ends with 1016)".to_owned()
        } else if let Some(decision) = status.unapplied(&interrupt.id) {
            format!(
                "decision sent, not yet applied ({})",
                decision.action.name()
            )
        } else {
            "waiting".to_owned()
        };
        outln!(
            "  {state}: call {} {} {} (fingerprint {})",
            interrupt.tool_call.id(),
            interrupt.tool_call.name(),
            interrupt.tool_call.arguments(),
            interrupt.fingerprint
        );
        for finding in &interrupt.findings {
            outln!("    {}", finding.reason);
        }
    }
    if let Some(failure) = &status.last_failure {
        outln!("  last failure: {failure}");
    }
    if let Some(refused) = &status.waiting.refused {
        outln!("  last decision refused: {refused}");
    }
    Ok(ExitCode::SUCCESS)
}
