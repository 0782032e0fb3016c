//! # pleach
//!
//! The pleach command line: the tool catalog (`pleach-tools`, every feature on) through the real
//! runtime.
//!
//! | command | what it does |
//! | --- | --- |
//! | `pleach demo [--json]` | a scripted conversation (a bundled model transcript, no key) through the runtime |
//! | `pleach list [--json]` | the registry: name, safety tier, batching strategy, description |
//! | `pleach schema NAME\|--all [--provider P [--strict]]` | a tool's definition as a provider sees it (in its strict mode with `--strict`) |
//! | `pleach schema --tools DEFS.json [NAME] [--provider P [--strict]]` | tool definitions from a file (OpenAI's format, or any `validate --tools` reads) converted to a provider's |
//! | `pleach validate [--tools DEFS.json] [--calls CALLS.jsonl]` | checks calls against definitions, one verdict a line |
//! | `pleach call NAME --args JSON` | one call through the full runtime; its events |
//! | `pleach replay --provider P FILE` | a recorded provider stream through assembly and dispatch |
//! | `pleach chat --base-url URL --model M [--provider openai-chat\|anthropic] [--no-strict]` | the agent loop against a real endpoint, key from the environment; tools in the provider's strict mode unless `--no-strict` |
//! | `pleach mcp [--http ADDR …]` | serves the registry over MCP on stdio, or over Streamable HTTP at `http://ADDR/mcp` |
//! | `pleach worker\|approve\|status`, `pleach chat --temporal HOST:PORT …` | (feature `temporal`) durable conversations on Temporal: `docs/durable.md` |
//!
//! ```sh
//! pleach demo                                   # the scripted conversation, rendered live
//! pleach demo --json                            # the same as NDJSON events
//! pleach list
//! pleach schema math --provider anthropic
//! pleach schema --all --provider openai-chat --strict
//! pleach schema --tools tools.json --provider gemini
//! echo '{"name":"math","arguments":{"expression":"6*7"}}' | pleach validate
//! pleach validate --tools tools.json --calls calls.jsonl
//! pleach call math --args '{"expression":"6*7"}'
//! pleach call fs_list --args '{"path":"."}' --root . --json
//! pleach call shell_exec --args '{"program":"ls","args":["-l"]}' --root . --allow-program ls --timeout 2s
//! pleach replay --provider anthropic stream.sse --json
//! OPENAI_API_KEY=… pleach chat --base-url https://api.openai.com/v1 --model gpt-4o-mini
//! pleach chat --base-url http://127.0.0.1:11434/v1 --model llama3.2 --message "what is 6*7?"
//! ANTHROPIC_API_KEY=… pleach chat --provider anthropic --base-url https://api.anthropic.com --model claude-haiku-4-5
//! pleach mcp --root .                           # an MCP server on stdin/stdout
//! pleach mcp --http 127.0.0.1:8080              # the same over Streamable HTTP
//! pleach mcp --http 0.0.0.0:8080 --token-file tokens.txt --allow-origin https://app.example.com
//! ```
//!
//! `--root DIR` gives the `fs_*` tools and `shell_exec` their root folder, `--allow-program P`
//! (repeatable, needs `--root`) the programs `shell_exec` may run, `--timeout DURATION` the
//! runtime's default timeout and the shell's. `url_fetch` uses its strict default policy;
//! `http_request` has no host allowed.
//!
//! Every flag that takes a duration (`--timeout`, and `pleach mcp --http`'s `--drain`,
//! `--drain-notice` and `--session-ttl`; `chat --temporal`'s `--approval-expiry`) reads a number
//! and a unit: `500ms`, `30s`, `5m`, `2h`, `1d`, or several together (`1m30s`). A number without
//! a unit is a usage error.
//!
//! `pleach validate` reads tool definitions as a JSON list in any format `pleach schema --all`
//! prints: OpenAI's (`{"type":"function","function":{"name","description","parameters"}}`, or
//! bare `{"name","parameters"}`), Gemini's (`parameters`, whose OpenAPI `nullable: true` is read
//! as a `null` type, or `parametersJsonSchema`), Anthropic's (`input_schema`), MCP's and pleach's
//! own (`inputSchema`). A tool with no schema key takes no arguments; one with two is refused. Without `--tools`, the registry's tools. Each call line is
//! `{"name": …, "arguments": …}` (other keys, such as `id`, are ignored) with the arguments as a
//! JSON object, kept as written so a repeated key is reported, or a string holding JSON
//! (absent: `{}`). Each verdict is `{"valid": bool, "errors": [{"path", "keyword", "message"}]}`:
//! the keyword is a JSON Schema keyword, `json` or `duplicateKey` for arguments that are not one
//! JSON object text, or `unknownTool` for a name the definitions lack.
//!
//! `pleach schema --tools DEFS.json` reads the same files and converts each tool as `pleach
//! schema` converts the registry's: the converter on its own, for tools not written in Rust.
//!
//! Exit codes: 0 success; 1 `validate` found an invalid call, a call of `call` or `replay`
//! failed (the events say why), or `schema` met a tool the provider's format cannot express (each
//! problem on stderr, with its path; nothing on stdout); 2 a usage error, a missing file or JSON
//! that cannot be read.

/// `print!` that ends the process quietly when stdout's reader has gone (`pleach demo | head`).
macro_rules! out {
    ($($arg:tt)*) => { $crate::stdout::emit(&format!($($arg)*)) };
}

/// `println!` that ends the process quietly when stdout's reader has gone.
macro_rules! outln {
    ($($arg:tt)*) => { $crate::stdout::emit(&format!("{}\n", format!($($arg)*))) };
}

mod ask;
mod call;
mod chat;
mod chat_request;
mod chat_turns;
mod definitions;
mod demo;
#[cfg(feature = "temporal")]
mod durable;
mod duration;
mod form;
mod host;
mod list;
mod mcp;
mod oauth;
mod pins;
mod provider;
mod remote;
mod render;
mod replay;
mod sampling;
mod schema;
mod signal;
mod stdout;
mod telemetry;
mod token_file;
mod usage;
mod validate;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::usage::{Outcome, UsageError};

/// Schema-typed LLM tools: the pleach catalog through the real runtime.
#[derive(Debug, Parser)]
#[command(name = "pleach", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Exports the command's spans and metrics over OTLP to the collector at URL (its base:
    /// `/v1/traces` and `/v1/metrics` are added), or without URL where `OTEL_EXPORTER_OTLP_ENDPOINT` says
    /// (default `http://localhost:4318`). `OTEL_EXPORTER_OTLP_PROTOCOL` (http/protobuf, http/json)
    /// and `OTEL_EXPORTER_OTLP_HEADERS` apply.
    #[arg(long, global = true, value_name = "URL", num_args = 0..=1, default_missing_value = "")]
    otlp: Option<String>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Runs a scripted conversation (a bundled model transcript, no API key) through the runtime.
    Demo(demo::Args),
    /// Lists the registry: name, safety tier, batching strategy, description.
    List(list::Args),
    /// Prints a tool's definition, as a provider sees it.
    Schema(schema::Args),
    /// Checks tool calls against tool definitions, one JSON verdict a line, in input order.
    Validate(validate::Args),
    /// Runs one call through the full runtime and prints its events.
    Call(call::Args),
    /// Feeds a recorded provider stream (raw SSE or one JSON event a line) through assembly and
    /// dispatch, and prints the events.
    Replay(replay::Args),
    /// Talks with a model through the agent loop: each line of stdin (or `--message`) is a user
    /// turn; the model's tool calls run with the catalog. The key comes from `OPENAI_API_KEY`
    /// (optional for local servers) or `ANTHROPIC_API_KEY`. A tool's question (elicitation) is
    /// asked on the terminal as a form; without a terminal it is declined. A tool's sampling
    /// request is answered by the chat's model as `--sampling` says.
    Chat(Box<chat::Args>),
    /// Runs durable conversations (`pleach chat --temporal`): polls a Temporal task queue and
    /// runs their model steps and calls with the catalog (and `--mcp-*` servers' tools).
    #[cfg(feature = "temporal")]
    Worker(durable::worker::Args),
    /// Decides on a durable conversation's call waiting for approval; no worker needs to run.
    #[cfg(feature = "temporal")]
    Approve(durable::approve::Args),
    /// Where a durable conversation stands: running or not, the calls waiting for approval.
    #[cfg(feature = "temporal")]
    Status(durable::status::Args),
    /// Serves the registry over the Model Context Protocol on stdin and stdout, or over
    /// Streamable HTTP with `--http ADDR`.
    Mcp(mcp::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let exporting = match cli.otlp.as_deref() {
        None => None,
        Some(url) => match telemetry::Exporting::start(Some(url).filter(|url| !url.is_empty())) {
            Ok(exporting) => Some(exporting),
            Err(UsageError(message)) => {
                eprintln!("error: {message}");
                return ExitCode::from(2);
            }
        },
    };
    log_to_stderr(exporting.as_ref());
    pleach_tools::link();
    // An HTTP server answers many clients at once: a thread per core. Everything else is one
    // conversation (or one stdio client) and runs on this thread.
    let threaded = match &cli.command {
        Command::Mcp(args) => args.is_http(),
        // A worker runs many calls at once.
        #[cfg(feature = "temporal")]
        Command::Worker(_) => true,
        _ => false,
    };
    let mut builder = if threaded {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::from(2);
        }
    };
    let outcome = runtime.block_on(run(cli.command));
    if let Some(exporting) = exporting {
        exporting.shutdown();
    }
    // Dropping the runtime would wait for its blocking threads, one of which may be blocked
    // reading a stdin that never closes (`pleach mcp` ended by a signal): stop waiting soon. The
    // tasks still running are dropped either way.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    match outcome {
        Ok(code) => code,
        Err(UsageError(message)) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

/// Runs the command asked for.
async fn run(command: Command) -> Outcome {
    match command {
        Command::Demo(args) => demo::run(args).await,
        Command::List(args) => list::run(args).await,
        Command::Schema(args) => schema::run(args),
        Command::Validate(args) => validate::run(args),
        Command::Call(args) => call::run(args).await,
        Command::Replay(args) => replay::run(args).await,
        Command::Chat(args) => chat::run(*args).await,
        #[cfg(feature = "temporal")]
        Command::Worker(args) => durable::worker::run(args).await,
        #[cfg(feature = "temporal")]
        Command::Approve(args) => durable::approve::run(args).await,
        #[cfg(feature = "temporal")]
        Command::Status(args) => durable::status::run(args).await,
        Command::Mcp(args) => mcp::run(args).await,
    }
}

/// Sends the libraries' log records to stderr (stdout carries the command's output, or MCP's
/// JSON-RPC): warnings and errors by default, which include an MCP message rmcp drops for being
/// over its 16 MiB line limit, and a worker's Temporal connection lost and back; `RUST_LOG=debug`
/// (or `info`, `trace`) shows more, such as a message dropped as unparsable JSON.
///
/// By default rmcp's service loop logs errors only: it warns of every error response it sends (an
/// unknown tool, a method this server does not have), which is the client's mistake and already
/// the client's to see, not something wrong with the server.
fn log_to_stderr(exporting: Option<&telemetry::Exporting>) {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let chosen = std::env::var("RUST_LOG")
        .ok()
        .and_then(|level| level.trim().parse::<tracing::Level>().ok());
    let mut filter = tracing_subscriber::filter::Targets::new()
        .with_default(chosen.unwrap_or(tracing::Level::WARN));
    if chosen.is_none() {
        filter = filter.with_target("rmcp::service", tracing::Level::ERROR);
        // A worker that lost Temporal says so once, and once when it is back
        // (`pleach_temporal::connection`), and why a model step failed; the SDK's own warning of
        // every retried poll is noise beside that.
        filter = filter
            .with_target("pleach_temporal", tracing::Level::INFO)
            .with_target("temporalio_sdk_core", tracing::Level::ERROR)
            .with_target("temporalio_client", tracing::Level::ERROR)
            .with_target("temporalio_sdk", tracing::Level::ERROR);
    }
    let output = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(true)
        .without_time();
    // pleach's spans and their events, for `--otlp`.
    let exported = exporting.map(|exporting| {
        exporting.layer().with_filter(
            tracing_subscriber::filter::Targets::new().with_target("pleach", tracing::Level::DEBUG),
        )
    });
    // Fails only when a subscriber is already set, and then that one logs.
    let _ = tracing_subscriber::registry()
        .with(output.with_filter(filter))
        .with(exported)
        .try_init();
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    /// clap checks a command's definition (unique argument and group names, valid references)
    /// only when it is built in a debug build: every feature set's `pleach` is built here once.
    #[test]
    fn the_command_line_is_well_formed() {
        super::Cli::command().debug_assert();
    }
}
