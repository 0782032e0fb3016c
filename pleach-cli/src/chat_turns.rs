//! A chat's turns, in process (`chat`) or durable (`durable::chat`): the user's lines in, one a
//! turn, and each turn's end told the user the same way.

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
    /// The model was still calling tools after `--max-steps` requests.
    MaxSteps,
    /// Anything else: what stopped the turn.
    Stopped(String),
}

impl TurnEnd {
    /// Tells the user: an answer as the model's line, anything else on stderr. Whether the turn
    /// failed.
    pub(crate) fn report(self, renderer: &mut Renderer, max_steps: usize) -> bool {
        match self {
            TurnEnd::Answered(text) => {
                renderer.say("model", text.as_deref().unwrap_or(""));
                false
            }
            TurnEnd::MaxSteps => {
                eprintln!(
                    "pleach chat: the model was still calling tools after {max_steps} steps \
                     (--max-steps)"
                );
                true
            }
            TurnEnd::Stopped(reason) => {
                eprintln!("pleach chat: {reason}");
                true
            }
        }
    }
}
