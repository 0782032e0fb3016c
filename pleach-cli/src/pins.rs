//! Pinned tool definitions of remote MCP servers: `--pin-policy` on every command taking
//! `--mcp`, the terminal prompt of `--pin-policy ask`, and `pleach mcp trust URL` and
//! `pleach mcp pins URL`, which read and write a server's lock file
//! (`<config>/pleach/mcp-pins/<server>.json`).

use std::collections::BTreeSet;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;

use pleach_mcp::remote::{DefinitionChange, McpRemote, OAuth, PinPolicy, RemoteServer};

use crate::token_file::read_token;
use crate::usage::{Outcome, UsageError};

/// `--pin-policy`: what happens to a definition that changed since it was pinned, or a new tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum PinChoice {
    /// Not offered, its calls refused (1012), a warning with the diff, until `pleach mcp trust`.
    #[default]
    #[value(alias = "reject")]
    HoldBack,
    /// Asked on the terminal with the diff; held back where nobody can answer.
    Ask,
    /// Recorded and offered, with a warning showing the diff.
    Accept,
    /// Nothing pinned: whatever the server lists is offered.
    Off,
}

impl PinChoice {
    /// `remote` pinned as chosen.
    pub(crate) fn apply(self, remote: McpRemote) -> McpRemote {
        match self {
            PinChoice::HoldBack => remote.pin_policy(PinPolicy::HoldBack),
            PinChoice::Ask => remote
                .pin_policy(PinPolicy::Ask)
                .trust_prompt(ask_on_terminal),
            PinChoice::Accept => remote.pin_policy(PinPolicy::Accept),
            PinChoice::Off => remote.pin_definitions(false),
        }
    }
}

/// Shows `change` on the controlling terminal and reads whether the user trusts it; without a
/// terminal (a service, a script) nobody can answer, and it is held back.
async fn ask_on_terminal(change: DefinitionChange) -> bool {
    let asked = tokio::task::spawn_blocking(move || -> std::io::Result<bool> {
        let terminal = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/tty")?;
        let mut prompt = terminal.try_clone()?;
        write!(prompt, "{change}trust the new definition? [y/N] ")?;
        prompt.flush()?;
        let mut line = String::new();
        BufReader::new(terminal).read_line(&mut line)?;
        Ok(matches!(line.trim(), "y" | "Y" | "yes"))
    })
    .await;
    match asked {
        Ok(Ok(trusted)) => trusted,
        Ok(Err(error)) => {
            tracing::warn!("no terminal to ask whether to trust a changed definition: {error}");
            false
        }
        Err(_) => false,
    }
}

/// What `pleach mcp trust` was asked.
#[derive(Debug, clap::Args)]
pub(crate) struct TrustArgs {
    /// The server's Streamable HTTP URL.
    url: String,
    /// A tool to trust, by the server's name for it (repeatable).
    #[arg(value_name = "NAME", required_unless_present = "all")]
    names: Vec<String>,
    /// Trusts every definition held back.
    #[arg(long, conflicts_with = "names")]
    all: bool,
    #[command(flatten)]
    server: ServerArgs,
}

/// What `pleach mcp pins` was asked.
#[derive(Debug, clap::Args)]
pub(crate) struct PinsArgs {
    /// The server's Streamable HTTP URL.
    url: String,
    #[command(flatten)]
    server: ServerArgs,
}

/// How `trust` and `pins` reach the server.
#[derive(Debug, clap::Args)]
struct ServerArgs {
    /// A bearer token for the server: the file's first line that is neither blank nor a `#`
    /// comment (else the tokens of `pleach mcp login URL`, if any).
    #[arg(long = "token-file", value_name = "FILE")]
    token_file: Option<PathBuf>,
}

/// The server at `url`, its definitions screened against its lock file (nothing accepted).
async fn connect(url: &str, server: &ServerArgs) -> Result<(RemoteServer, PathBuf), UsageError> {
    let lock = crate::oauth::pin_path(url)?;
    let mut remote = McpRemote::http(url)
        .pin_file(&lock)
        .pin_policy(PinPolicy::HoldBack);
    remote = match &server.token_file {
        Some(file) => remote.bearer_token(read_token(file)?),
        None => remote.oauth(OAuth::new().token_file(crate::oauth::token_path(url)?)),
    };
    let connected = remote
        .connect()
        .await
        .map_err(|error| UsageError(error.to_string()))?;
    Ok((connected, lock))
}

/// `pleach mcp trust URL NAME…|--all`: prints each held-back definition trusted, with its diff,
/// and records it.
pub(crate) async fn trust(args: TrustArgs) -> Outcome {
    let (server, lock) = connect(&args.url, &args.server).await?;
    let held = server.held_back();
    let names: Vec<String> = if args.all {
        held.iter().map(|change| change.tool.clone()).collect()
    } else {
        args.names.clone()
    };
    let held_names: BTreeSet<&str> = held.iter().map(|change| change.tool.as_str()).collect();
    let unknown: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|name| !held_names.contains(name))
        .collect();
    if !unknown.is_empty() {
        server.close().await;
        let held = if held_names.is_empty() {
            "nothing is held back".to_owned()
        } else {
            format!(
                "held back: {}",
                held_names.into_iter().collect::<Vec<_>>().join(", ")
            )
        };
        return Err(UsageError(format!(
            "not held back at {}: {} ({held})",
            args.url,
            unknown.join(", ")
        )));
    }
    for change in held.iter().filter(|change| names.contains(&change.tool)) {
        outln!("{change}");
    }
    let trusted = server
        .trust(&names)
        .await
        .map_err(|error| UsageError(error.to_string()));
    server.close().await;
    let trusted = trusted?;
    if trusted.is_empty() {
        eprintln!(
            "nothing held back at {}: the definitions pinned in {} are the ones listed",
            args.url,
            lock.display()
        );
    } else {
        eprintln!(
            "trusted {}: recorded in {}",
            trusted.join(", "),
            lock.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `pleach mcp pins URL`: each pinned tool with its fingerprint and whether it is offered, then
/// each definition held back with its diff.
pub(crate) async fn pins(args: PinsArgs) -> Outcome {
    let (server, lock) = connect(&args.url, &args.server).await?;
    let pinned = server.pinned();
    let offered = server.tool_names();
    let held = server.held_back();
    server.close().await;
    let pinned = pinned.map_err(|error| UsageError(error.to_string()))?;
    outln!("pinned in {}:", lock.display());
    for pin in &pinned {
        let state = if held.iter().any(|change| change.tool == pin.tool) {
            "held back"
        } else if offered.contains(&pin.tool) {
            "offered"
        } else {
            "not listed"
        };
        outln!("  {}  {}  {state}", pin.tool, pin.fingerprint);
    }
    if held.is_empty() {
        outln!("nothing held back");
    } else {
        outln!(
            "held back (`pleach mcp trust {} NAME…` to accept):",
            args.url
        );
        for change in &held {
            outln!("{change}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::PinChoice;
    use clap::ValueEnum as _;

    #[test]
    fn the_policies_are_named_as_documented() {
        let named = |text: &str| PinChoice::from_str(text, false).ok();
        assert_eq!(named("hold-back"), Some(PinChoice::HoldBack));
        assert_eq!(named("reject"), Some(PinChoice::HoldBack));
        assert_eq!(named("ask"), Some(PinChoice::Ask));
        assert_eq!(named("accept"), Some(PinChoice::Accept));
        assert_eq!(named("off"), Some(PinChoice::Off));
        assert_eq!(named("trust"), None);
        assert_eq!(PinChoice::default(), PinChoice::HoldBack);
    }
}
