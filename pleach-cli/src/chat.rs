//! `pleach chat`: the agent loop against a real endpoint. Each line the user types (or the one
//! `--message`) is a user turn; the model streams, its tool calls are assembled, run with the
//! catalog and written back, and the model is asked again until it answers without tools.

use std::process::ExitCode;
use std::sync::Arc;

use pleach_core::SessionOptions;
use pleach_core::agent::{AgentOptions, ModelClient, ModelEndpoint, StopReason, WireFormat};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::catalog::HostArgs;
use crate::render::Renderer;
use crate::usage::{Outcome, UsageError};

/// The APIs `pleach chat` talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ChatProvider {
    /// OpenAI-compatible Chat Completions (OpenAI, vLLM, llama.cpp's server, Ollama, `OpenRouter`).
    Openai,
    /// Anthropic Messages.
    Anthropic,
}

/// What `pleach chat` was asked.
pub(crate) struct ChatArgs {
    pub(crate) base_url: String,
    pub(crate) model: String,
    pub(crate) provider: ChatProvider,
    pub(crate) message: Option<String>,
    pub(crate) max_steps: usize,
    /// Tools in the provider's strict mode, where their schemas allow it.
    pub(crate) strict: bool,
    pub(crate) json: bool,
}

/// The endpoint `args` name.
pub(crate) fn endpoint(
    provider: ChatProvider,
    base_url: &str,
    model: &str,
    strict: bool,
) -> ModelEndpoint {
    let format = match provider {
        ChatProvider::Openai => WireFormat::OpenAiChat,
        ChatProvider::Anthropic => WireFormat::AnthropicMessages,
    };
    ModelEndpoint::new(format, base_url, model).with_strict(strict)
}

/// The client for `args`, its key read from the environment (`OPENAI_API_KEY`, optional for
/// local servers; `ANTHROPIC_API_KEY`, required).
fn client(args: &ChatArgs) -> Result<Arc<dyn ModelClient>, UsageError> {
    endpoint(args.provider, &args.base_url, &args.model, args.strict)
        .client()
        .map_err(UsageError)
}

/// Runs the conversation; exit 1 when a turn ended in an error (the endpoint failed, say).
pub(crate) async fn run(args: ChatArgs, host: &HostArgs) -> Outcome {
    if args.max_steps == 0 {
        return Err("--max-steps must be at least 1".into());
    }
    let client = client(&args)?;
    let runtime = host.runtime().await?;
    let session = runtime
        .create_session(SessionOptions::all())
        .map_err(|e| UsageError(e.to_string()))?;
    let mut renderer = Renderer::new(args.json);
    let options = AgentOptions::default().with_max_steps(args.max_steps);

    let mut failed = false;
    let mut lines = Lines::new(args.message);
    while let Some(line) = lines.next().await? {
        let line = line.trim().to_owned();
        if line.is_empty() {
            continue;
        }
        renderer.say("user", &line);
        session.push_user_message(line);
        let mut run = session.run_agent(client.clone(), options);
        renderer.follow(run.events()).await;
        let outcome = run.finish().await;
        match outcome.stop_reason {
            StopReason::Finished => {
                renderer.say("model", outcome.final_text.as_deref().unwrap_or(""));
            }
            StopReason::MaxSteps => {
                eprintln!(
                    "pleach chat: the model was still calling tools after {} steps (--max-steps)",
                    args.max_steps
                );
                failed = true;
            }
            StopReason::Cancelled => {
                eprintln!("pleach chat: cancelled");
                failed = true;
            }
            StopReason::Error(error) => {
                eprintln!("pleach chat: the model's endpoint failed: {error}");
                failed = true;
            }
            other => {
                eprintln!("pleach chat: the turn stopped: {other:?}");
                failed = true;
            }
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Where the user's lines come from: one `--message`, or stdin until it ends.
pub(crate) enum Lines {
    One(Option<String>),
    Stdin(tokio::io::Lines<BufReader<tokio::io::Stdin>>),
}

impl Lines {
    /// `message` alone, or stdin's lines without one.
    pub(crate) fn new(message: Option<String>) -> Lines {
        match message {
            Some(message) => Lines::One(Some(message)),
            None => Lines::Stdin(BufReader::new(tokio::io::stdin()).lines()),
        }
    }

    pub(crate) async fn next(&mut self) -> Result<Option<String>, UsageError> {
        match self {
            Lines::One(message) => Ok(message.take()),
            Lines::Stdin(lines) => lines
                .next_line()
                .await
                .map_err(|e| UsageError(format!("cannot read stdin: {e}"))),
        }
    }
}
