//! `pleach replay`: a recorded provider stream through the parser, the assembler and a session.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use pleach_core::assemble::StreamError;
use pleach_core::providers::{Decoder, ProviderEvent, StreamParser};
use pleach_core::{Session, SessionOptions, StreamAssembler, ToolCall, ToolError, ToolEvent};

use crate::host::HostArgs;
use crate::provider::Provider;
use crate::render::Renderer;
use crate::usage::{Outcome, UsageError, read_file};

/// What `pleach replay` was asked.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Whose stream it is.
    #[arg(long, value_enum)]
    provider: Provider,
    /// The recorded stream.
    file: PathBuf,
    /// Prints the events as NDJSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    host: HostArgs,
}

/// Whether the recording is Server-Sent Events (its first line is a field or a comment) rather
/// than one JSON event a line.
fn is_sse(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]);
    text.lines()
        .map(str::trim_start)
        .find(|line| !line.is_empty())
        .is_some_and(|line| {
            line.starts_with(':')
                || ["data:", "event:", "id:", "retry:"]
                    .iter()
                    .any(|field| line.starts_with(field))
        })
}

/// Replays the stream; exit 1 when a call failed or the stream reported a problem.
pub(crate) async fn run(args: Args) -> Outcome {
    let bytes = read_file(&args.file)?;
    let (events, skipped) = decode(args.provider, &bytes);
    readable(&events, skipped, &args.file)?;
    let runtime = args.host.runtime().await?;
    let session = runtime
        .create_session(SessionOptions::all())
        .map_err(|error| UsageError(error.to_string()))?;
    let mut renderer = Renderer::new(args.json);

    let mut assembler = StreamAssembler::new();
    // Calls the provider's stream failed, by id: their error wins over the assembler's own.
    let mut failed: HashMap<String, ToolError> = HashMap::new();
    // Failed before they began (no id known to the assembler): reported as they are.
    let mut orphans: Vec<(ToolCall, ToolError)> = Vec::new();
    let mut begun: HashSet<String> = HashSet::new();
    let mut text = String::new();
    // A problem of the stream itself (not of one call, which its events report): on stderr, in
    // either output mode, and the replay fails.
    let mut stream_failed = false;
    let mut report = |what: &dyn std::fmt::Display| {
        eprintln!("error: {what}");
        stream_failed = true;
    };
    for event in events {
        match event {
            ProviderEvent::CallStarted { key, id, name } => {
                match assembler.begin(&key, &id, &name) {
                    Ok(Some(started)) => {
                        begun.insert(id);
                        renderer.event(&started);
                    }
                    Ok(None) => {}
                    Err(refused) => report(&refused),
                }
            }
            ProviderEvent::ArgumentsDelta { key, fragment } => {
                match assembler.push(&key, fragment) {
                    Ok(Some(delta)) => renderer.event(&delta),
                    // A call that failed is reported by `finish`, with its own events.
                    Ok(None) | Err(StreamError::CallFailed { .. }) => {}
                    Err(refused) => report(&refused),
                }
            }
            ProviderEvent::CallEnded { key } => {
                // A refused end leaves the call failed in the assembler; `finish` reports it.
                let _ = assembler.end(&key);
            }
            ProviderEvent::CallFailed {
                id, name, error, ..
            } => match id {
                Some(id) if !failed.contains_key(&id) => {
                    if begun.contains(&id) {
                        failed.insert(id, error);
                    } else {
                        let call = ToolCall::new(id, name.unwrap_or_default(), "");
                        orphans.push((call, error));
                    }
                }
                _ => {}
            },
            ProviderEvent::Text { delta } => text.push_str(&delta),
            ProviderEvent::StreamError { problem, message } => {
                report(&format_args!(
                    "the stream reported a problem ({problem}): {message}"
                ));
            }
            _ => {}
        }
    }
    if !text.trim().is_empty() {
        renderer.say("model", text.trim());
    }

    let mut any_failed = stream_failed;
    let mut runnable = Vec::new();
    for streamed in assembler.finish() {
        let ((Some(error), _) | (None, Err(error))) =
            (failed.remove(streamed.call.id()), streamed.parsed)
        else {
            runnable.push(ToolCall::clone(&streamed.call));
            continue;
        };
        any_failed = true;
        renderer.event(&ToolEvent::Failed {
            tool_call: streamed.call,
            error,
        });
    }
    for (call, error) in orphans {
        any_failed = true;
        renderer.event(&ToolEvent::Started {
            tool_call: call.clone(),
        });
        renderer.event(&ToolEvent::Failed {
            tool_call: call,
            error,
        });
    }
    if !runnable.is_empty() {
        any_failed |= run_calls(&session, runnable, &mut renderer).await;
    }
    Ok(if any_failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Runs the calls the stream completed as one turn; whether any of them failed.
async fn run_calls(session: &Session, calls: Vec<ToolCall>, renderer: &mut Renderer) -> bool {
    let mut turn = session.run_turn(calls);
    // The assembler announced these calls already: the turn's own `tool.started` would repeat it.
    let stream = turn.events();
    while let Some(event) = stream.recv().await {
        if !matches!(event, ToolEvent::Started { .. }) {
            renderer.event(&event);
        }
        if let ToolEvent::InterruptRequested { interrupt } = &event {
            crate::ask::answer(session, interrupt);
        }
    }
    turn.finish().await.iter().any(|r| r.outcome.is_err())
}

/// Refuses a recording with nothing of the provider's stream in it (empty, another provider's,
/// not JSON): there is nothing to replay, and saying so beats an empty, successful run.
fn readable(events: &[ProviderEvent], skipped: usize, file: &Path) -> Result<(), UsageError> {
    let at = format!("`{}`", file.display());
    if events.is_empty() {
        return Err(UsageError(format!(
            "{at} holds no event of this provider's stream ({skipped} skipped as unknown); check \
             the file and `--provider`"
        )));
    }
    if events
        .iter()
        .all(|event| matches!(event, ProviderEvent::StreamError { .. }))
    {
        let first = match &events[0] {
            ProviderEvent::StreamError { message, .. } => message.as_str(),
            _ => "",
        };
        let more = match events.len() - 1 {
            0 => String::new(),
            n => format!(" (and {n} more problems)"),
        };
        return Err(UsageError(format!(
            "{at} cannot be read as this provider's stream: {first}{more}"
        )));
    }
    Ok(())
}

/// The provider's events of a recording, framed as its content says, and how many events the
/// parser skipped as unknown.
fn decode(provider: Provider, bytes: &[u8]) -> (Vec<ProviderEvent>, usize) {
    let parser = provider.format().stream_parser();
    let mut decoder = if is_sse(bytes) {
        Decoder::sse(parser)
    } else {
        Decoder::json_lines(parser)
    };
    let mut events = decoder.feed(bytes);
    events.extend(decoder.finish());
    (events, decoder.parser().skipped())
}
