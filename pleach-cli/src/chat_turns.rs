//! A chat's turns, in process (`chat`) or durable (`durable::chat`): the user's lines in, one a
//! turn, and each turn's end told the user the same way.

use pleach_core::agent::{AgentOutcome, StopReason};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::render::Renderer;
use crate::usage::UsageError;

/// Where the user's lines come from: one `--message`, or stdin until it ends.
pub(crate) enum UserLines {
    One(Option<String>),
    Stdin(tokio::io::Lines<BufReader<tokio::io::Stdin>>),
}

impl UserLines {
    /// `message` alone, or stdin's lines without one.
    pub(crate) fn new(message: Option<String>) -> UserLines {
        match message {
            Some(message) => UserLines::One(Some(message)),
            None => UserLines::Stdin(BufReader::new(tokio::io::stdin()).lines()),
        }
    }

    /// The next line with something on it, trimmed; `None` once there is none.
    pub(crate) async fn next(&mut self) -> Result<Option<String>, UsageError> {
        loop {
            let line = match self {
                UserLines::One(message) => message.take(),
                UserLines::Stdin(lines) => lines
                    .next_line()
                    .await
                    .map_err(|e| UsageError(format!("cannot read stdin: {e}")))?,
            };
            let Some(line) = line else {
                return Ok(None);
            };
            let line = line.trim();
            if !line.is_empty() {
                return Ok(Some(line.to_owned()));
            }
        }
    }
}

/// How a turn ended.
pub(crate) enum TurnEnd {
    /// The model answered without calling tools: its text.
    Answered(Option<String>),
    /// The model's answer was cut off by its token limit: what it wrote, and whether the chat is
    /// scripted (`--json`, `--message`, stdin not a terminal), where that fails the turn.
    CutOff {
        text: Option<String>,
        scripted: bool,
    },
    /// The model was still calling tools after `--max-steps` requests.
    MaxSteps,
    /// Anything else: what stopped the turn.
    Stopped(String),
}

impl TurnEnd {
    /// How an in-process turn ended, from its outcome.
    pub(crate) fn of(outcome: AgentOutcome, scripted: bool) -> TurnEnd {
        match outcome.stop_reason {
            StopReason::Finished => TurnEnd::Answered(outcome.final_text),
            StopReason::MaxTokens => TurnEnd::CutOff {
                text: outcome.final_text,
                scripted,
            },
            StopReason::MaxSteps => TurnEnd::MaxSteps,
            StopReason::Cancelled => TurnEnd::Stopped("cancelled".to_owned()),
            StopReason::TimedOut(after) => TurnEnd::Stopped(format!(
                "the turn took longer than {} (--turn-timeout)",
                humantime::format_duration(after)
            )),
            StopReason::Error(error) => {
                TurnEnd::Stopped(format!("the model's endpoint failed: {error}"))
            }
            other => TurnEnd::Stopped(format!("the turn stopped: {other:?}")),
        }
    }

    /// Tells the user: an answer as the model's line (`--json`: a `model.answer` event), anything
    /// else on stderr (`--json`: a `turn.stopped` event too). Whether the turn failed.
    pub(crate) fn report(self, renderer: &mut Renderer, max_steps: usize) -> bool {
        let json = renderer.is_json();
        match self {
            TurnEnd::Answered(text) => {
                if json {
                    outln!(
                        "{}",
                        json!({ "type": "model.answer", "text": text, "cutOff": false })
                    );
                }
                renderer.say("model", text.as_deref().unwrap_or(""));
                false
            }
            TurnEnd::CutOff { text, scripted } => {
                if json {
                    outln!(
                        "{}",
                        json!({ "type": "model.answer", "text": text, "cutOff": true })
                    );
                }
                renderer.say("model", text.as_deref().unwrap_or(""));
                eprintln!(
                    "pleach chat: the answer was cut off by the model's token limit \
                     (raise --max-tokens, or the server's context size)"
                );
                scripted
            }
            TurnEnd::MaxSteps => {
                let reason = format!(
                    "the model was still calling tools after {max_steps} steps (--max-steps)"
                );
                if json {
                    outln!("{}", json!({ "type": "turn.stopped", "reason": reason }));
                }
                eprintln!("pleach chat: {reason}");
                true
            }
            TurnEnd::Stopped(reason) => {
                if json {
                    outln!("{}", json!({ "type": "turn.stopped", "reason": reason }));
                }
                eprintln!("pleach chat: {reason}");
                true
            }
        }
    }
}

/// In `--json` mode, one `model.step` event for each step of the turn: its text (`null` when it
/// had none), finish reason and token counts, in step order.
pub(crate) fn print_steps(renderer: &Renderer, outcome: &AgentOutcome) {
    if !renderer.is_json() {
        return;
    }
    for (index, step) in outcome.steps.iter().enumerate() {
        outln!(
            "{}",
            json!({
                "type": "model.step",
                "step": index + 1,
                "text": step.text,
                "finishReason": step.finish_reason,
                "inputTokens": step.input_tokens,
                "outputTokens": step.output_tokens,
            })
        );
    }
}
