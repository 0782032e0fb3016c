//! Sampling: a running tool asks its client's model for a completion (MCP
//! `sampling/createMessage`), and gets the model's answer.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who wrote a message of a sampling conversation.
///
/// ```
/// use pleach_core::client::Role;
/// assert_eq!(serde_json::to_value(Role::Assistant).unwrap(), "assistant");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user (what the tool asks).
    User,
    /// The model.
    Assistant,
}

/// One text message of a sampling conversation.
///
/// ```
/// use pleach_core::client::{Role, SamplingMessage};
/// let message = SamplingMessage::new(Role::User, "Name a colour.");
/// assert_eq!(message.text, "Name a colour.");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SamplingMessage {
    /// Who wrote it.
    pub role: Role,
    /// What it says.
    pub text: String,
}

impl SamplingMessage {
    /// A message of `role` saying `text`.
    ///
    /// ```
    /// use pleach_core::client::{Role, SamplingMessage};
    /// assert_eq!(SamplingMessage::new(Role::Assistant, "Blue.").role, Role::Assistant);
    /// ```
    pub fn new(role: Role, text: impl Into<String>) -> SamplingMessage {
        SamplingMessage {
            role,
            text: text.into(),
        }
    }
}

/// What a tool asks its client's model: a conversation (one user message to begin with), and
/// the settings MCP's `sampling/createMessage` takes. The client (and its user) may change or
/// refuse it.
///
/// ```
/// use pleach_core::client::SamplingRequest;
///
/// let request = SamplingRequest::new("Summarise: …")
///     .system_prompt("You summarise in one line.")
///     .max_tokens(100)
///     .temperature(0.2);
/// assert_eq!(request.messages.len(), 1);
/// assert_eq!(request.max_tokens, 100);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SamplingRequest {
    /// The conversation so far, oldest first.
    pub messages: Vec<SamplingMessage>,
    /// The system prompt, if any.
    pub system_prompt: Option<String>,
    /// The most tokens the answer may take (MCP requires a limit; 1000 unless set).
    pub max_tokens: u32,
    /// The sampling temperature, if the tool has a preference.
    pub temperature: Option<f64>,
    /// Sequences that end the answer.
    pub stop_sequences: Vec<String>,
}

impl SamplingRequest {
    /// The most tokens an answer takes unless [`max_tokens`](SamplingRequest::max_tokens) says
    /// otherwise.
    pub const DEFAULT_MAX_TOKENS: u32 = 1000;

    /// A request whose conversation is one user message, `prompt`.
    ///
    /// ```
    /// use pleach_core::client::{Role, SamplingRequest};
    /// let request = SamplingRequest::new("Hello");
    /// assert_eq!(request.messages[0].role, Role::User);
    /// assert_eq!(request.max_tokens, SamplingRequest::DEFAULT_MAX_TOKENS);
    /// ```
    pub fn new(prompt: impl Into<String>) -> SamplingRequest {
        SamplingRequest {
            messages: vec![SamplingMessage::new(Role::User, prompt)],
            system_prompt: None,
            max_tokens: SamplingRequest::DEFAULT_MAX_TOKENS,
            temperature: None,
            stop_sequences: Vec::new(),
        }
    }

    /// The same request with `message` after the conversation so far.
    ///
    /// ```
    /// use pleach_core::client::{Role, SamplingMessage, SamplingRequest};
    /// let request = SamplingRequest::new("2 + 2?")
    ///     .message(SamplingMessage::new(Role::Assistant, "4"))
    ///     .message(SamplingMessage::new(Role::User, "times 3?"));
    /// assert_eq!(request.messages.len(), 3);
    /// ```
    #[must_use]
    pub fn message(mut self, message: SamplingMessage) -> SamplingRequest {
        self.messages.push(message);
        self
    }

    /// The same request with a system prompt.
    ///
    /// ```
    /// let request = pleach_core::client::SamplingRequest::new("Hi").system_prompt("Be brief.");
    /// assert_eq!(request.system_prompt.as_deref(), Some("Be brief."));
    /// ```
    #[must_use]
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> SamplingRequest {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// The same request with an answer of at most `tokens` tokens.
    ///
    /// ```
    /// assert_eq!(pleach_core::client::SamplingRequest::new("Hi").max_tokens(5).max_tokens, 5);
    /// ```
    #[must_use]
    pub fn max_tokens(mut self, tokens: u32) -> SamplingRequest {
        self.max_tokens = tokens;
        self
    }

    /// The same request with a sampling temperature.
    ///
    /// ```
    /// let request = pleach_core::client::SamplingRequest::new("Hi").temperature(0.0);
    /// assert_eq!(request.temperature, Some(0.0));
    /// ```
    #[must_use]
    pub fn temperature(mut self, temperature: f64) -> SamplingRequest {
        self.temperature = Some(temperature);
        self
    }

    /// The same request, its answer ending at `sequence`.
    ///
    /// ```
    /// let request = pleach_core::client::SamplingRequest::new("Count").stop_sequence("5");
    /// assert_eq!(request.stop_sequences, ["5"]);
    /// ```
    #[must_use]
    pub fn stop_sequence(mut self, sequence: impl Into<String>) -> SamplingRequest {
        self.stop_sequences.push(sequence.into());
        self
    }
}

/// The client's model's answer to a [`SamplingRequest`].
///
/// ```
/// use pleach_core::client::{Role, Sampled};
///
/// let answer = Sampled::new("gpt-test", serde_json::json!({ "type": "text", "text": "Blue." }));
/// assert_eq!(answer.text(), Some("Blue."));
/// assert_eq!(answer.role, Role::Assistant);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Sampled {
    /// The model that answered, as the client names it.
    pub model: String,
    /// Who wrote the answer (the assistant).
    pub role: Role,
    /// The answer's content, as MCP writes it (`{"type": "text", "text": …}` for text; an image
    /// or audio block otherwise).
    pub content: Value,
    /// Why the answer ended (`endTurn`, `maxTokens`, `stopSequence`), if the client says.
    pub stop_reason: Option<String>,
}

impl Sampled {
    /// An assistant's answer from `model` with `content`.
    ///
    /// ```
    /// let answer = pleach_core::client::Sampled::new("m", serde_json::json!({ "type": "text", "text": "ok" }));
    /// assert_eq!(answer.stop_reason, None);
    /// ```
    pub fn new(model: impl Into<String>, content: Value) -> Sampled {
        Sampled {
            model: model.into(),
            role: Role::Assistant,
            content,
            stop_reason: None,
        }
    }

    /// The answer's text, when it is a text block (or a list of blocks whose first is text).
    ///
    /// ```
    /// let image = pleach_core::client::Sampled::new("m", serde_json::json!({ "type": "image" }));
    /// assert_eq!(image.text(), None);
    /// ```
    pub fn text(&self) -> Option<&str> {
        let block = match &self.content {
            Value::Array(blocks) => blocks.first()?,
            block => block,
        };
        if block.get("type").and_then(Value::as_str) != Some("text") {
            return None;
        }
        block.get("text").and_then(Value::as_str)
    }
}
