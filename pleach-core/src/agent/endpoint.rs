//! A model endpoint named as data: what a conversation kept elsewhere (a durable engine's input)
//! says about its model, built into a client where the steps run.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{
    AnthropicClient, GeminiClient, ModelClient, OpenAiChatClient, OpenAiResponsesClient, WireFormat,
};

/// A model endpoint: its wire format, base URL and model, and whether tools go in the provider's
/// strict mode (unset: by the endpoint, as the clients decide — strict for OpenAI's own API,
/// Azure OpenAI and Anthropic's own API, plain elsewhere; Gemini has none).
/// [`client`](ModelEndpoint::client) reads the key from the environment: `OPENAI_API_KEY` for
/// Chat Completions and Responses (optional for local servers), `ANTHROPIC_API_KEY`, or
/// `GEMINI_API_KEY`.
///
/// ```
/// use pleach_core::agent::{ModelEndpoint, WireFormat};
/// let endpoint = ModelEndpoint::new(WireFormat::OpenAiChat, "http://127.0.0.1:11434/v1", "llama3.2");
/// assert!(endpoint.client().is_ok());
/// let json = serde_json::to_value(&endpoint).unwrap();
/// assert_eq!(json["format"], "openai");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ModelEndpoint {
    /// The API's wire format.
    pub format: WireFormat,
    /// The API's base URL: OpenAI-compatible (Chat Completions and Responses) up to `/v1`;
    /// Anthropic without it; Gemini up to its version (`…/v1beta`).
    pub base_url: String,
    /// The model to ask.
    pub model: String,
    /// Whether tools go in the provider's strict mode where their schemas allow it; `None` (the
    /// default): by the endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
}

impl ModelEndpoint {
    /// An endpoint whose tools go in strict mode where the endpoint honours it.
    ///
    /// ```
    /// use pleach_core::agent::{ModelEndpoint, WireFormat};
    /// let endpoint = ModelEndpoint::new(WireFormat::OpenAiChat, "https://api.openai.com/v1", "gpt-4o-mini");
    /// assert_eq!(endpoint.strict, None);
    /// ```
    pub fn new(format: WireFormat, base_url: impl Into<String>, model: impl Into<String>) -> Self {
        ModelEndpoint {
            format,
            base_url: base_url.into(),
            model: model.into(),
            strict: None,
        }
    }

    /// Sets whether tools go in the provider's strict mode, whatever the endpoint.
    ///
    /// ```
    /// use pleach_core::agent::{ModelEndpoint, WireFormat};
    /// let endpoint = ModelEndpoint::new(WireFormat::OpenAiChat, "http://x/v1", "m").strict(true);
    /// assert_eq!(endpoint.strict, Some(true));
    /// ```
    #[must_use]
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = Some(strict);
        self
    }

    /// The endpoint's client, its key read from this process's environment.
    ///
    /// # Errors
    ///
    /// The URL or the model name cannot be used, or the key is not set for Anthropic
    /// (`ANTHROPIC_API_KEY`) or Gemini (`GEMINI_API_KEY`).
    pub fn client(&self) -> Result<Arc<dyn ModelClient>, String> {
        let key = |name: &str| std::env::var(name).ok().filter(|k| !k.trim().is_empty());
        let setup = |error: super::ModelError| format!("cannot set up the client: {error}");
        match self.format {
            WireFormat::OpenAiChat => {
                let mut client =
                    OpenAiChatClient::new(&self.base_url, &self.model, key("OPENAI_API_KEY"))
                        .map_err(setup)?;
                if let Some(strict) = self.strict {
                    client = client.strict(strict);
                }
                Ok(Arc::new(client))
            }
            WireFormat::OpenAiResponses => {
                let mut client =
                    OpenAiResponsesClient::new(&self.base_url, &self.model, key("OPENAI_API_KEY"))
                        .map_err(setup)?;
                if let Some(strict) = self.strict {
                    client = client.strict(strict);
                }
                Ok(Arc::new(client))
            }
            WireFormat::Gemini => {
                let api_key = key("GEMINI_API_KEY")
                    .ok_or("set GEMINI_API_KEY to the key for the Gemini API")?;
                // Gemini has no strict mode: `strict` asks for nothing it can give.
                let client =
                    GeminiClient::new(&self.base_url, &self.model, api_key).map_err(setup)?;
                Ok(Arc::new(client))
            }
            WireFormat::AnthropicMessages => {
                let api_key = key("ANTHROPIC_API_KEY")
                    .ok_or("set ANTHROPIC_API_KEY to the key for the Anthropic API")?;
                let mut client =
                    AnthropicClient::new(&self.base_url, &self.model, api_key).map_err(setup)?;
                if let Some(strict) = self.strict {
                    client = client.strict(strict);
                }
                Ok(Arc::new(client))
            }
        }
    }
}
