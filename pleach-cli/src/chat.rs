//! `pleach chat`: the agent loop against a real endpoint. Each line the user types (or the one
//! `--message`) is a user turn; the model streams, its tool calls are assembled, run with the
//! catalog and written back, and the model is asked again until it answers without tools. With
//! `--temporal` (feature `temporal`), each turn is a durable conversation instead
//! (`durable::chat`).

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::ValueEnum;

use pleach_core::agent::{ModelEndpoint, WireFormat};
use pleach_core::{SessionOptions, ToolEvent};

use crate::chat_request::RequestArgs;
use crate::chat_turns::{TurnEnd, UserLines, print_steps};
use crate::host::HostArgs;
use crate::provider::Provider;
use crate::render::Renderer;
use crate::sampling::SamplingPolicy;
use crate::usage::{Outcome, UsageError};

/// What `pleach chat` was asked.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The API's base URL: OpenAI-compatible (Chat Completions and Responses) up to `/v1`
    /// (`https://api.openai.com/v1`, `http://127.0.0.1:11434/v1` for Ollama); Anthropic without
    /// it; Gemini up to its version (`https://generativelanguage.googleapis.com/v1beta`).
    #[arg(long, value_name = "URL")]
    base_url: String,
    /// The model to ask.
    #[arg(long, value_name = "M")]
    model: String,
    /// The API's wire format.
    #[arg(long, value_enum, default_value = "openai-chat")]
    provider: ChatProvider,
    /// One message instead of reading lines from stdin.
    #[arg(long, value_name = "TEXT")]
    message: Option<String>,
    /// Most model requests in one user turn.
    #[arg(long, value_name = "N", default_value_t = 16)]
    max_steps: usize,
    #[command(flatten)]
    request: RequestArgs,
    /// Prints the events as NDJSON.
    #[arg(long)]
    json: bool,
    /// Whether a tool may have this chat's model answer it (sampling): `ask` on the terminal
    /// (refused without one), `allow` or `deny` without asking.
    #[arg(long, value_enum, value_name = "deny|ask|allow", default_value = "ask")]
    sampling: SamplingPolicy,
    #[cfg(feature = "temporal")]
    #[command(flatten)]
    durable: crate::durable::chat::Args,
    #[command(flatten)]
    host: HostArgs,
}

/// The wire formats `pleach chat` has a client for: [`Provider`]'s, spelled as it spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ChatProvider(WireFormat);

impl ValueEnum for ChatProvider {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            ChatProvider(WireFormat::OpenAiChat),
            ChatProvider(WireFormat::OpenAiResponses),
            ChatProvider(WireFormat::AnthropicMessages),
            ChatProvider(WireFormat::Gemini),
        ]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        match self.0 {
            WireFormat::OpenAiChat => Provider::OpenaiChat.to_possible_value(),
            WireFormat::OpenAiResponses => Provider::OpenaiResponses.to_possible_value(),
            WireFormat::AnthropicMessages => Provider::Anthropic.to_possible_value(),
            WireFormat::Gemini => Provider::Gemini.to_possible_value(),
            _ => None,
        }
    }
}

impl Args {
    /// The endpoint the flags name; its tools in the provider's strict mode as `--strict` or
    /// `--no-strict` say, else as the endpoint goes.
    fn endpoint(&self) -> ModelEndpoint {
        let endpoint = ModelEndpoint::new(self.provider.0, &self.base_url, &self.model);
        match self.request.strict() {
            Some(strict) => endpoint.strict(strict),
            None => endpoint,
        }
    }
}

/// Runs the conversation; exit 1 when a turn ended in an error (the endpoint failed, say).
pub(crate) async fn run(args: Args) -> Outcome {
    if args.max_steps == 0 {
        return Err("--max-steps must be at least 1".into());
    }
    let endpoint = args.endpoint();
    #[cfg(feature = "temporal")]
    if args.durable.is_on() {
        if let Some(flag) = args.request.per_run_flag() {
            return Err(UsageError(format!(
                "{flag} is not taken with --temporal: a durable conversation's model steps run \
                 on the worker, with its own settings"
            )));
        }
        if !args.host.approved_tools().is_empty() {
            // The calls run on the workers, with their runtime's detectors.
            return Err(
                "with --temporal, the workers' runtime asks for approvals: give \
                        `--approve TOOL` to `pleach worker`"
                    .into(),
            );
        }
        let Args {
            durable,
            message,
            max_steps,
            json,
            ..
        } = args;
        return crate::durable::chat::run(durable, endpoint, message, max_steps, json).await;
    }
    // The key is read from the environment: `OPENAI_API_KEY` (optional for local servers),
    // `ANTHROPIC_API_KEY` or `GEMINI_API_KEY` (required).
    let client = endpoint.client().map_err(UsageError)?;
    let runtime = args.host.runtime().await?;
    let session = runtime
        .create_session(SessionOptions::all())
        .map_err(|e| UsageError(e.to_string()))?;
    let known: Vec<&str> = session.tool_names().collect();
    let options = args.request.agent_options(args.max_steps, &known)?;
    let mut renderer = Renderer::new(args.json);
    // A person at a terminal reads a cut answer's notice; a script reads the exit code.
    let scripted = args.json || args.message.is_some() || !std::io::stdin().is_terminal();

    let mut failed = false;
    let mut lines = UserLines::new(args.message);
    while let Some(line) = lines.next().await? {
        renderer.say("user", &line);
        session.push_user_message(line);
        let mut run = session.run_agent(client.clone(), options.clone());
        renderer
            .follow(run.events(), |event| match event {
                ToolEvent::InterruptRequested { interrupt } => {
                    crate::ask::answer(&session, interrupt);
                }
                ToolEvent::ElicitationRequested { request } => crate::form::answer(request),
                ToolEvent::SamplingRequested { request } => {
                    crate::sampling::answer(request, args.sampling, &client, &args.model);
                }
                _ => {}
            })
            .await;
        let outcome = run.finish().await;
        print_steps(&renderer, &outcome);
        let end = TurnEnd::of(outcome, scripted);
        failed |= end.report(&mut renderer, args.max_steps);
    }
    Ok(ExitCode::from(u8::from(failed)))
}
