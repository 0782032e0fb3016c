//! `pleach chat`: the agent loop against a real endpoint. Each line the user types (or the one
//! `--message`) is a user turn; the model streams, its tool calls are assembled, run with the
//! catalog and written back, and the model is asked again until it answers without tools.

use std::process::ExitCode;
use std::sync::Arc;

use pleach_core::SessionOptions;
use pleach_core::agent::{
    AgentOptions, AnthropicClient, ModelClient, OpenAiChatClient, StopReason,
};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::catalog::HostArgs;
use crate::render::Renderer;
use crate::{ChatProvider, Outcome, UsageError};

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

/// The client for `args`, its key read from the environment (`OPENAI_API_KEY`, optional for
/// local servers; `ANTHROPIC_API_KEY`, required).
fn client(args: &ChatArgs) -> Result<Arc<dyn ModelClient>, UsageError> {
    let key = |name: &str| std::env::var(name).ok().filter(|k| !k.trim().is_empty());
    match args.provider {
        ChatProvider::Openai => {
            let client = OpenAiChatClient::new(&args.base_url, &args.model, key("OPENAI_API_KEY"))
                .map_err(|e| UsageError(format!("cannot set up the client: {e}")))?
                .strict(args.strict);
            Ok(Arc::new(client))
        }
        ChatProvider::Anthropic => {
            let api_key = key("ANTHROPIC_API_KEY")
                .ok_or("set ANTHROPIC_API_KEY to the key for the Anthropic API")?;
            let client = AnthropicClient::new(&args.base_url, &args.model, api_key)
                .map_err(|e| UsageError(format!("cannot set up the client: {e}")))?
                .strict(args.strict);
            Ok(Arc::new(client))
        }
    }
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
    let mut lines = match args.message {
        Some(message) => Lines::One(Some(message)),
        None => Lines::Stdin(BufReader::new(tokio::io::stdin()).lines()),
    };
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
enum Lines {
    One(Option<String>),
    Stdin(tokio::io::Lines<BufReader<tokio::io::Stdin>>),
}

impl Lines {
    async fn next(&mut self) -> Result<Option<String>, UsageError> {
        match self {
            Lines::One(message) => Ok(message.take()),
            Lines::Stdin(lines) => lines
                .next_line()
                .await
                .map_err(|e| UsageError(format!("cannot read stdin: {e}"))),
        }
    }
}
