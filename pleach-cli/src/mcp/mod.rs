//! `pleach mcp`: the registry (and the `--mcp-*` servers' tools: a gateway) served over the Model
//! Context Protocol, on stdin and stdout, or over Streamable HTTP with `--http ADDR` (`http`).

mod http;
mod listing;

use std::process::ExitCode;

use crate::host::HostArgs;
use crate::signal::terminated;
use crate::usage::{Outcome, UsageError};

/// What `pleach mcp` was asked.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct Args {
    #[command(subcommand)]
    action: Option<crate::oauth::Action>,
    #[command(flatten)]
    http: Box<http::HttpArgs>,
    #[command(flatten)]
    host: HostArgs,
    #[command(flatten)]
    listing: listing::ListingArgs,
}

impl Args {
    /// Whether the server is to serve HTTP (`--http`) rather than stdio.
    pub(crate) fn is_http(&self) -> bool {
        self.http.is_http()
    }
}

/// Serves until the client goes or the process is told to stop.
pub(crate) async fn run(args: Args) -> Outcome {
    if let Some(action) = args.action {
        return crate::oauth::run(action).await;
    }
    if args.is_http() {
        return http::run(&args.http, &args.host, &args.listing).await;
    }
    let runtime = args.host.runtime().await?;
    let mcp = pleach_mcp::McpServer::new(runtime).map_err(|error| UsageError(error.to_string()))?;
    let mcp = args.listing.apply(mcp)?;
    tokio::select! {
        served = pleach_mcp::serve(mcp) => match served {
            Ok(()) => Ok(ExitCode::SUCCESS),
            Err(error) => {
                eprintln!("error: {error}");
                Ok(ExitCode::FAILURE)
            }
        },
        // MCP's stdio shutdown: the client closes stdin, waits, then sends SIGTERM (the official
        // SDKs wait 2 s, less than rmcp's 5 s drain of a call still running). SIGINT and SIGHUP
        // end it too: the SDKs start the server in the client's process group, so Ctrl-C in the
        // client's terminal reaches the server, and closing that terminal hangs it up. Ending
        // here shuts the async runtime down, which drops the calls still running: a dropped
        // `shell_exec` kills its program's process group, which none of these signals reaches.
        () = terminated() => Ok(ExitCode::SUCCESS),
    }
}
