//! `pleach mcp`: the registry (and the `--mcp-*` servers' tools: a gateway) served over the Model
//! Context Protocol, on stdin and stdout, or over Streamable HTTP with `--http ADDR` (`http`).

mod http;
mod listing;

use std::process::ExitCode;

use crate::host::HostArgs;
use crate::signal::terminated;
use crate::usage::{Outcome, UsageError};

/// `pleach mcp login`, `logout`, `trust` and `pins`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Action {
    /// Signs in to an OAuth-protected MCP server: prints the authorization URL (and opens a
    /// browser on a terminal), waits for the browser's redirect on a loopback port, or for the
    /// redirected URL or its code pasted on stdin (over SSH), and keeps the tokens for later
    /// `--mcp URL`.
    Login(crate::oauth::LoginArgs),
    /// Forgets the tokens of an MCP server.
    Logout(crate::oauth::LogoutArgs),
    /// Shows the diff of each tool definition held back (changed since it was pinned, or new)
    /// and records the ones named as the pinned definitions, so they are offered again.
    Trust(crate::pins::TrustArgs),
    /// Lists the pinned definitions of an MCP server and the ones held back, with their diffs.
    Pins(crate::pins::PinsArgs),
}

/// Runs `login`, `logout`, `trust` or `pins`.
async fn act(action: Action) -> Outcome {
    match action {
        Action::Login(args) => crate::oauth::login(args).await,
        Action::Logout(args) => crate::oauth::logout(&args),
        Action::Trust(args) => crate::pins::trust(args).await,
        Action::Pins(args) => crate::pins::pins(args).await,
    }
}

/// What `pleach mcp` was asked.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct Args {
    #[command(subcommand)]
    action: Option<Action>,
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
        return act(action).await;
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
