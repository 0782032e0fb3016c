//! The user's side of a chat: one `--message`, or the lines of stdin until it ends.

use tokio::io::{AsyncBufReadExt, BufReader};

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

    /// The next line, `None` once there is none.
    pub(crate) async fn next(&mut self) -> Result<Option<String>, UsageError> {
        match self {
            UserLines::One(message) => Ok(message.take()),
            UserLines::Stdin(lines) => lines
                .next_line()
                .await
                .map_err(|e| UsageError(format!("cannot read stdin: {e}"))),
        }
    }
}
