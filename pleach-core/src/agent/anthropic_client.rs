//! The Anthropic Messages client.

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};

use super::http;
use super::{BoxFuture, ModelClient, ModelError, ModelRequest, ModelResponse, WireFormat};
use crate::providers::anthropic;

/// The default base URL of [`AnthropicClient::from_env`].
const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The API version sent in `anthropic-version`.
const API_VERSION: &str = "2023-06-01";
/// The default `max_tokens` of a response.
const DEFAULT_MAX_TOKENS: u32 = 4096;

/// A streaming client for Anthropic Messages: POST `{base_url}/v1/messages` with
/// `"stream": true`, the conversation in Anthropic's format (a turn's tool results in one `user`
/// message), the session's tools through the Anthropic schema profile; the key as `x-api-key`,
/// and `anthropic-version: 2023-06-01`.
///
/// ```
/// use pleach_core::agent::AnthropicClient;
/// let client = AnthropicClient::new("https://api.anthropic.com", "claude-sonnet-4-5", "sk-ant-secret")
///     .unwrap()
///     .with_max_tokens(1024);
/// assert_eq!(client.url(), "https://api.anthropic.com/v1/messages");
/// assert!(!format!("{client:?}").contains("sk-ant-secret"));
/// ```
#[derive(Clone)]
pub struct AnthropicClient {
    http: reqwest::Client,
    url: String,
    model: String,
    api_key: String,
    max_tokens: u32,
}

impl std::fmt::Debug for AnthropicClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicClient")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("api_key", &"<redacted>")
            .field("max_tokens", &self.max_tokens)
            .finish_non_exhaustive()
    }
}

impl AnthropicClient {
    /// A client for the API at `base_url` (without `/v1`), asking `model`, with `api_key`.
    ///
    /// ```
    /// let client = pleach_core::agent::AnthropicClient::new("http://127.0.0.1:9/", "claude-haiku-4-5", "k").unwrap();
    /// assert_eq!(client.url(), "http://127.0.0.1:9/v1/messages");
    /// // A base URL without its scheme is refused here, not at the first request.
    /// assert!(pleach_core::agent::AnthropicClient::new("api.anthropic.com", "claude-haiku-4-5", "k").is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// [`ModelError::Config`] when no model is named or `base_url` is not an absolute http or
    /// https URL, or when the HTTP client cannot be set up.
    pub fn new(
        base_url: impl AsRef<str>,
        model: impl Into<String>,
        api_key: impl Into<String>,
    ) -> Result<Self, ModelError> {
        let model = model.into();
        if model.trim().is_empty() {
            return Err(ModelError::Config("no model named".into()));
        }
        Ok(AnthropicClient {
            http: http::client()?,
            url: http::endpoint(base_url.as_ref(), "v1/messages")?,
            model,
            api_key: api_key.into(),
            max_tokens: DEFAULT_MAX_TOKENS,
        })
    }

    /// A client set up from the environment: `ANTHROPIC_BASE_URL` (default
    /// `https://api.anthropic.com`), `ANTHROPIC_MODEL` and `ANTHROPIC_API_KEY` (both required).
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use pleach_core::agent::{ModelClient, AnthropicClient};
    ///
    /// let client: Arc<dyn ModelClient> = Arc::new(AnthropicClient::from_env()?);
    /// // session.run_agent(client, AgentOptions::default()) …
    /// # drop(client);
    /// # Ok::<(), pleach_core::agent::ModelError>(())
    /// ```
    pub fn from_env() -> Result<Self, ModelError> {
        let model = http::env("ANTHROPIC_MODEL")
            .ok_or_else(|| ModelError::Config("set ANTHROPIC_MODEL to the model to ask".into()))?;
        let key = http::env("ANTHROPIC_API_KEY")
            .ok_or_else(|| ModelError::Config("set ANTHROPIC_API_KEY".into()))?;
        let base = http::env("ANTHROPIC_BASE_URL").unwrap_or_else(|| DEFAULT_BASE_URL.to_owned());
        AnthropicClient::new(base, model, key)
    }

    /// Sets `max_tokens`, the most a response may have (default 4096).
    ///
    /// ```
    /// # let client = pleach_core::agent::AnthropicClient::new("http://127.0.0.1:9", "m", "k").unwrap();
    /// let client = client.with_max_tokens(512);
    /// # drop(client);
    /// ```
    #[must_use]
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// The URL requests go to.
    ///
    /// ```
    /// # let client = pleach_core::agent::AnthropicClient::new("http://127.0.0.1:9", "m", "k").unwrap();
    /// assert_eq!(client.url(), "http://127.0.0.1:9/v1/messages");
    /// ```
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The request body for `request`, or the tools the Anthropic profile refuses.
    fn body(&self, request: &ModelRequest<'_>) -> Result<Value, ModelError> {
        let mut body = json!({
            "model": self.model,
            "max_tokens": self.max_tokens,
            "stream": true,
            "messages": anthropic::messages(request.conversation),
        });
        if !request.tools.is_empty() {
            let mut tools = Vec::new();
            let mut problems = Vec::new();
            for tool in request.tools {
                match anthropic::definition(tool.definition()) {
                    Ok(definition) => tools.push(definition),
                    Err(found) => problems.extend(
                        found
                            .iter()
                            .map(|problem| format!("`{}` {problem}", tool.name())),
                    ),
                }
            }
            if !problems.is_empty() {
                return Err(ModelError::Config(format!(
                    "tools the Anthropic API cannot take: {}",
                    problems.join("; ")
                )));
            }
            body["tools"] = Value::Array(tools);
        }
        Ok(body)
    }
}

impl ModelClient for AnthropicClient {
    fn send<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        let body = self
            .body(&request)
            .map(|body| body.to_string().into_bytes());
        Box::pin(async move {
            let body = body?;
            let mut headers = HeaderMap::new();
            http::secret_header(&mut headers, "x-api-key", &self.api_key)?;
            headers.insert(
                HeaderName::from_static("anthropic-version"),
                HeaderValue::from_static(API_VERSION),
            );
            http::post_stream(
                &self.http,
                &self.url,
                headers,
                body,
                WireFormat::AnthropicMessages,
            )
            .await
        })
    }
}
