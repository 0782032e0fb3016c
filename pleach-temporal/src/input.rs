//! What starts a durable conversation, and what its workflow keeps.

use std::time::Duration;

use pleach_core::Message;
use pleach_core::agent::ModelEndpoint;
use pleach_core::durable::DurableOptions;
use pleach_core::safety::Interrupt;
use serde::{Deserialize, Serialize};

use crate::defaults;

/// The input of a [`ConversationWorkflow`](crate::ConversationWorkflow): the conversation so far
/// (the user's message last), the model, and how the loop runs.
///
/// ```
/// use pleach_core::{Message, agent::{ModelEndpoint, WireFormat}};
/// use pleach_temporal::ConversationInput;
///
/// let input = ConversationInput::new(
///     vec![Message::User { content: "what is 6*7?".into() }],
///     ModelEndpoint::new(WireFormat::OpenAiChat, "http://127.0.0.1:11434/v1", "llama3.2"),
/// );
/// assert_eq!(input.options.max_steps, 16);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ConversationInput {
    /// The conversation so far.
    pub conversation: Vec<Message>,
    /// The model every step asks.
    pub model: ModelEndpoint,
    /// How the loop runs: steps, concurrency, approval expiry.
    #[serde(default)]
    pub options: DurableOptions,
    /// How long a worker may go silent (it heartbeats while it runs a step or a call) before its
    /// activity counts as lost: a crashed worker is noticed this long after its last heartbeat
    /// (default [`defaults::HEARTBEAT_TIMEOUT`], 5 s).
    #[serde(default = "default_heartbeat", with = "secs")]
    pub heartbeat_timeout: Duration,
}

fn default_heartbeat() -> Duration {
    defaults::HEARTBEAT_TIMEOUT
}

impl ConversationInput {
    /// A conversation asking `model`, with the default options.
    ///
    /// ```
    /// use pleach_core::agent::{ModelEndpoint, WireFormat};
    /// let input = pleach_temporal::ConversationInput::new(Vec::new(), ModelEndpoint::new(WireFormat::OpenAiChat, "http://x/v1", "m"));
    /// assert_eq!(input.heartbeat_timeout, pleach_temporal::defaults::HEARTBEAT_TIMEOUT);
    /// ```
    pub fn new(conversation: Vec<Message>, model: ModelEndpoint) -> Self {
        ConversationInput {
            conversation,
            model,
            options: DurableOptions::default(),
            heartbeat_timeout: defaults::HEARTBEAT_TIMEOUT,
        }
    }

    /// Sets how the loop runs: steps, concurrency, approval expiry (default
    /// [`DurableOptions::default`]).
    ///
    /// ```
    /// use pleach_core::{agent::{ModelEndpoint, WireFormat}, durable::DurableOptions};
    /// let input = pleach_temporal::ConversationInput::new(Vec::new(), ModelEndpoint::new(WireFormat::OpenAiChat, "http://x/v1", "m"))
    ///     .options(DurableOptions::default().max_steps(2));
    /// assert_eq!(input.options.max_steps, 2);
    /// ```
    #[must_use]
    pub fn options(mut self, options: DurableOptions) -> Self {
        self.options = options;
        self
    }

    /// Sets how long a worker may go silent before its activity counts as lost (at least a
    /// second; default [`defaults::HEARTBEAT_TIMEOUT`], 5 s).
    ///
    /// ```
    /// use std::time::Duration;
    /// use pleach_core::agent::{ModelEndpoint, WireFormat};
    /// let input = pleach_temporal::ConversationInput::new(Vec::new(), ModelEndpoint::new(WireFormat::OpenAiChat, "http://x/v1", "m"))
    ///     .heartbeat_timeout(Duration::from_secs(2));
    /// assert_eq!(input.heartbeat_timeout, Duration::from_secs(2));
    /// ```
    #[must_use]
    pub fn heartbeat_timeout(mut self, timeout: Duration) -> Self {
        self.heartbeat_timeout = timeout.max(Duration::from_secs(1));
        self
    }
}

/// `Duration` as seconds.
mod secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(
        value: &Duration,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(value.as_secs_f64())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Duration, D::Error> {
        Duration::try_from_secs_f64(f64::deserialize(deserializer)?)
            .map_err(serde::de::Error::custom)
    }
}

/// What a conversation's memo says, readable with no worker running (`pleach status`,
/// `pleach approve`): the interrupts waiting for a decision, and the last decision refused.
///
/// ```
/// let memo = pleach_temporal::Waiting::default();
/// assert!(memo.pending.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Waiting {
    /// The interrupts waiting for the user, oldest first.
    pub pending: Vec<Interrupt>,
    /// Why the last decision sent was refused, if one was.
    pub refused: Option<String>,
}
