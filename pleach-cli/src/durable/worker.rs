//! `pleach worker`: runs durable conversations' model steps and calls, polling a Temporal task
//! queue.

use std::process::ExitCode;

use crate::host::HostArgs;
use crate::signal::terminated;
use crate::usage::{Outcome, UsageError};

/// What `pleach worker` was asked.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The Temporal service: `HOST:PORT` (or an `http://` / `https://` URL).
    #[arg(long, value_name = "HOST:PORT", env = "TEMPORAL_ADDRESS", default_value = super::DEFAULT_ADDRESS)]
    temporal: String,
    /// The task queue to poll.
    #[arg(long, value_name = "Q", default_value = pleach_temporal::defaults::TASK_QUEUE)]
    task_queue: String,
    /// Most model steps and calls run at once.
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    max_calls: u64,
    #[command(flatten)]
    host: HostArgs,
}

/// Runs a worker until SIGTERM, SIGINT or SIGHUP: the catalog's tools (and the remote MCP
/// servers' given with `--mcp-*`) for every conversation on the queue.
pub(crate) async fn run(args: Args) -> Outcome {
    let runtime = args.host.runtime().await?;
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
        terminated(),
    )
    .await
    .map_err(|error| UsageError(error.to_string()))?;
    Ok(ExitCode::SUCCESS)
}
