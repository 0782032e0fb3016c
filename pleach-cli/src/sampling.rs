//! A running tool's request for a completion (`sampling.requested`, `ToolContext::sample`) in
//! `chat`: `--sampling ask` (the default) asks the user on the terminal whether to allow it,
//! `allow` and `deny` decide without asking. Allowed, the chat's own model answers the request's
//! messages (text only, no tools) and the tool gets its text; otherwise the tool's request fails
//! with 1008 saying why. Without a terminal to ask on, `ask` refuses.

use std::io::{BufRead as _, BufReader, Write as _};
use std::sync::Arc;

use pleach_core::agent::{AgentOptions, ModelClient, StopReason};
use pleach_core::client::{Role, Sampled, SamplingRequest};
use pleach_core::event::ClientRequest;
use pleach_core::{Runtime, SessionOptions};
use serde_json::json;

/// What `sampling.requested` carries.
pub(crate) type Request = ClientRequest<SamplingRequest, Sampled>;

/// Whether a tool may have the chat's model answer it (`--sampling`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum SamplingPolicy {
    /// Every request is refused.
    Deny,
    /// The user is asked on the terminal; refused without one.
    #[default]
    Ask,
    /// Every request is answered without asking.
    Allow,
}

/// Answers `request` as `policy` says, the model's part in a task of its own (the events go on
/// meanwhile).
pub(crate) fn answer(
    request: &Arc<Request>,
    policy: SamplingPolicy,
    client: &Arc<dyn ModelClient>,
    model: &str,
) {
    let allowed = match policy {
        SamplingPolicy::Deny => {
            Err("the user does not allow sampling (--sampling deny)".to_owned())
        }
        SamplingPolicy::Allow => Ok(()),
        SamplingPolicy::Ask => ask(request),
    };
    if let Err(reason) = allowed {
        eprintln!(
            "pleach: refused the sampling request of call {}: {reason}",
            request.tool_call_id()
        );
        request.refuse(reason);
        return;
    }
    let (request, client, model) = (Arc::clone(request), Arc::clone(client), model.to_owned());
    tokio::spawn(async move {
        match sample(request.request(), client).await {
            Ok((text, stop_reason)) => {
                let mut sampled = Sampled::new(model, json!({ "type": "text", "text": text }));
                sampled.stop_reason = Some(stop_reason.to_owned());
                request.answer(sampled);
            }
            Err(reason) => {
                request.refuse(reason);
            }
        }
    });
}

/// Whether the user allows it, asked on the controlling terminal.
fn ask(request: &Request) -> Result<(), String> {
    let asked = (|| {
        let terminal = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/tty")?;
        let mut prompt = terminal.try_clone()?;
        let sampling = request.request();
        writeln!(
            prompt,
            "sampling: call {} asks the model",
            request.tool_call_id()
        )?;
        if let Some(system) = &sampling.system_prompt {
            writeln!(prompt, "  system: {system}")?;
        }
        for message in &sampling.messages {
            let role = match message.role {
                Role::User => "user",
                Role::Assistant => "model",
            };
            writeln!(prompt, "  {role}: {}", message.text)?;
        }
        write!(prompt, "allow it? [y/N] ")?;
        prompt.flush()?;
        let mut line = String::new();
        BufReader::new(terminal).read_line(&mut line)?;
        Ok::<_, std::io::Error>(matches!(line.trim(), "y" | "Y" | "yes"))
    })();
    match asked {
        Ok(true) => Ok(()),
        Ok(false) => Err("the user did not allow it".to_owned()),
        Err(error) => Err(format!(
            "the user was not asked (no terminal to ask on: {error}); give --sampling allow or \
             deny"
        )),
    }
}

/// The model's answer to `sampling`: its text and why it ended (MCP's `endTurn`, `maxTokens`).
async fn sample(
    sampling: &SamplingRequest,
    client: Arc<dyn ModelClient>,
) -> Result<(String, &'static str), String> {
    let runtime = Runtime::builder()
        .build()
        .map_err(|error| format!("cannot build a runtime: {error}"))?;
    let session = runtime
        .create_session(SessionOptions::all())
        .map_err(|error| error.to_string())?;
    for message in &sampling.messages {
        match message.role {
            Role::User => session.push_user_message(message.text.clone()),
            Role::Assistant => session.push_assistant_message(message.text.clone()),
        }
    }
    // One model step, no tools.
    let mut options = AgentOptions::default()
        .max_steps(1)
        .max_tokens(sampling.max_tokens)
        .tools(Vec::<String>::new());
    if let Some(system) = &sampling.system_prompt {
        options = options.system(system.clone());
    }
    if let Some(temperature) = sampling.temperature {
        options = options.temperature(temperature);
    }
    let mut run = session.run_agent(client, options);
    while run.events().recv().await.is_some() {}
    let outcome = run.finish().await;
    let stop = match outcome.stop_reason {
        StopReason::Finished => "endTurn",
        StopReason::MaxTokens => "maxTokens",
        StopReason::Error(error) => return Err(format!("the model's endpoint failed: {error}")),
        other => return Err(format!("the model did not answer: {other:?}")),
    };
    Ok((outcome.final_text.unwrap_or_default(), stop))
}
