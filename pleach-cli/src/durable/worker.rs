//! `pleach worker`: runs durable conversations' model steps and calls, polling a Temporal task
//! queue.

use std::process::ExitCode;
use std::time::Duration;

use pleach_temporal::ServeOptions;

use crate::duration;
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
    /// Most model steps and calls run at once (default 64).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_calls: Option<u64>,
    /// How long a conversation's next step waits for this worker before another may take it:
    /// how long its conversations stall if it dies (`2s`; at least `1s`).
    #[arg(long, value_name = "DURATION", value_parser = duration::positive)]
    sticky_queue_timeout: Option<Duration>,
    #[command(flatten)]
    host: HostArgs,
}

/// Runs a worker until SIGTERM, SIGINT or SIGHUP: the catalog's tools (and the remote MCP
/// servers' given with `--mcp-*`) for every conversation on the queue.
pub(crate) async fn run(args: Args) -> Outcome {
    let runtime = args.host.runtime().await?;
    let worker = pleach_core::durable::Worker::new(runtime);
    let mut options = ServeOptions::default().task_queue(args.task_queue.as_str());
    if let Some(max) = args.max_calls {
        options = options.max_calls(usize::try_from(max).unwrap_or(usize::MAX));
    }
    if let Some(timeout) = args.sticky_queue_timeout {
        options = options.sticky_queue_timeout(timeout);
    }
    // "serving" is said once the service answered: a worker that cannot reach it says that
    // instead, and ends.
    super::connect(&args.temporal).await?;
    eprintln!(
        "pleach worker: serving task queue `{}` on {}",
        args.task_queue, args.temporal
    );
    pleach_temporal::serve(&args.temporal, worker, options, terminated())
        .await
        .map_err(|error| UsageError(error.to_string()))?;
    Ok(ExitCode::SUCCESS)
}
