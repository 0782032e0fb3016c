//! The OpenAI Chat Completions client: OpenAI, and the servers that speak its API (vLLM,
//! llama.cpp's server, Ollama, `OpenRouter`, …).

use serde_json::{Value, json};

use super::http;
use super::{
    BoxFuture, ModelClient, ModelError, ModelRequest, ModelResponse, ToolChoice, WireFormat,
};
use crate::providers::ProviderFormat;
use crate::providers::openai_chat::OpenAiChat;

/// A streaming client for Chat Completions: POST `{base_url}/chat/completions` with
/// `"stream": true`, the conversation in OpenAI's `messages` format, the session's tools as
/// `{"type":"function",…}` definitions; the key (if any) as `Authorization: Bearer`.
///
/// For OpenAI's own API and Azure OpenAI, tools go in strict mode (`"strict": true`, the schema
/// through [`Profile::OpenAiStrict`](crate::providers::Profile::OpenAiStrict)), so the model's
/// arguments are held to the schema as they are sampled. A tool whose schema strict mode cannot
/// express goes without it (`"strict": false`, its schema as it is), and a warning through
/// `tracing` names the tool and the problems. Any other base URL (llama.cpp's server, Ollama,
/// vLLM, a gateway) gets plain schemas: those servers ignore `strict`, and one that builds a
/// grammar from the schema would make a small model fill every optional property.
/// [`OpenAiChatClient::strict`] forces either.
///
/// The request carries the run's settings ([`ModelRequest`]): a system prompt as the first
/// message, `max_completion_tokens` for OpenAI's own API and Azure OpenAI and `max_tokens`
/// elsewhere (the local servers read that one), `temperature`, `tool_choice`.
///
/// ```
/// use pleach_core::agent::OpenAiChatClient;
/// // A local OpenAI-compatible server (llama.cpp, vLLM, Ollama) needs no key, and gets plain
/// // schemas.
/// let client = OpenAiChatClient::new("http://127.0.0.1:8080/v1", "local-model", None).unwrap();
/// assert_eq!(client.model(), "local-model");
/// assert!(!client.is_strict());
/// // The key never shows in debug output.
/// let client = OpenAiChatClient::new("https://api.openai.com/v1", "gpt-4.1", Some("sk-secret".into())).unwrap();
/// assert!(!format!("{client:?}").contains("sk-secret"));
/// ```
#[derive(Clone)]
pub struct OpenAiChatClient {
    connection: http::Connection,
    api_key: Option<String>,
    strict: bool,
    /// OpenAI's own API or Azure OpenAI: `max_completion_tokens`, where others read
    /// `max_tokens`.
    official: bool,
}

impl std::fmt::Debug for OpenAiChatClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiChatClient")
            .field("url", &self.connection.url)
            .field("model", &self.connection.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("strict", &self.strict)
            .finish_non_exhaustive()
    }
}

impl OpenAiChatClient {
    /// A client for the API at `base_url` (up to and including `/v1`), asking `model`, sending
    /// `api_key` as a bearer token when there is one.
    ///
    /// ```
    /// let client = pleach_core::agent::OpenAiChatClient::new("http://127.0.0.1:11434/v1/", "llama3.2", None).unwrap();
    /// assert_eq!(client.url(), "http://127.0.0.1:11434/v1/chat/completions");
    /// // A base URL without its scheme is refused here, not at the first request.
    /// assert!(pleach_core::agent::OpenAiChatClient::new("127.0.0.1:11434/v1", "llama3.2", None).is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// [`ModelError::Config`] when no model is named or `base_url` is not an absolute http or
    /// https URL, or when the HTTP client cannot be set up.
    pub fn new(
        base_url: impl AsRef<str>,
        model: impl Into<String>,
        api_key: Option<String>,
    ) -> Result<Self, ModelError> {
        let connection =
            http::Connection::new(base_url.as_ref(), "chat/completions", model.into())?;
        let official = http::honours_strict(&connection.url, WireFormat::OpenAiChat);
        Ok(OpenAiChatClient {
            connection,
            api_key,
            strict: official,
            official,
        })
    }

    /// A client set up from the environment: `OPENAI_BASE_URL` (default
    /// `https://api.openai.com/v1`), `OPENAI_MODEL` (required) and `OPENAI_API_KEY` (optional:
    /// local servers need none).
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use pleach_core::agent::{ModelClient, OpenAiChatClient};
    ///
    /// let client: Arc<dyn ModelClient> = Arc::new(OpenAiChatClient::from_env()?);
    /// // session.run_agent(client, AgentOptions::default()) …
    /// # drop(client);
    /// # Ok::<(), pleach_core::agent::ModelError>(())
    /// ```
    pub fn from_env() -> Result<Self, ModelError> {
        let (base, model, key) = http::openai_env()?;
        OpenAiChatClient::new(base, model, key)
    }

    /// Sends tools in strict mode (`true`) or not (`false`: every schema as it is,
    /// `"strict": false`). Default: strict for OpenAI's own API (`api.openai.com`) and Azure
    /// OpenAI (`*.openai.azure.com`, `*.cognitiveservices.azure.com`), plain elsewhere.
    ///
    /// ```
    /// # let client = pleach_core::agent::OpenAiChatClient::new("http://127.0.0.1:1/v1", "m", None).unwrap();
    /// assert!(!client.is_strict());
    /// let client = client.strict(true);
    /// assert!(client.is_strict());
    /// let openai = pleach_core::agent::OpenAiChatClient::new("https://api.openai.com/v1", "gpt-4.1", None).unwrap();
    /// assert!(openai.is_strict());
    /// ```
    #[must_use]
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Whether tools go in strict mode (see [`OpenAiChatClient::strict`]).
    ///
    /// ```
    /// # let client = pleach_core::agent::OpenAiChatClient::new("https://api.openai.com/v1", "m", None).unwrap();
    /// assert!(client.is_strict());
    /// ```
    pub fn is_strict(&self) -> bool {
        self.strict
    }

    /// The model asked.
    ///
    /// ```
    /// # let client = pleach_core::agent::OpenAiChatClient::new("http://127.0.0.1:1/v1", "m", None).unwrap();
    /// assert_eq!(client.model(), "m");
    /// ```
    pub fn model(&self) -> &str {
        &self.connection.model
    }

    /// The URL requests go to.
    ///
    /// ```
    /// # let client = pleach_core::agent::OpenAiChatClient::new("http://127.0.0.1:1/v1", "m", None).unwrap();
    /// assert_eq!(client.url(), "http://127.0.0.1:1/v1/chat/completions");
    /// ```
    pub fn url(&self) -> &str {
        &self.connection.url
    }

    /// The request body for `request`.
    fn body(&self, request: &ModelRequest<'_>) -> Result<Value, ModelError> {
        let mut messages = OpenAiChat.messages(request.conversation);
        if let Some(system) = request.system {
            messages.insert(0, json!({ "role": "system", "content": system }));
        }
        let mut body = json!({ "model": self.connection.model, "stream": true });
        // Moved in: `json!` would copy the messages, media and all.
        body["messages"] = Value::Array(messages);
        if let Some(tokens) = request.max_tokens {
            let field = if self.official {
                "max_completion_tokens"
            } else {
                "max_tokens"
            };
            body[field] = json!(tokens);
        }
        if let Some(temperature) = request.temperature {
            body["temperature"] = json!(temperature);
        }
        if !request.tools.is_empty() {
            body["tools"] = http::request_tools(
                &OpenAiChat,
                "Chat Completions API",
                request.tools,
                request.strict.unwrap_or(self.strict),
                &self.connection.fallbacks,
                |_| Ok(()),
            )?;
            if let Some(choice) = request.tool_choice {
                body["tool_choice"] = match choice {
                    ToolChoice::Auto => json!("auto"),
                    ToolChoice::Required => json!("required"),
                    ToolChoice::None => json!("none"),
                    ToolChoice::Tool(name) => {
                        json!({ "type": "function", "function": { "name": name } })
                    }
                };
            }
        }
        Ok(body)
    }
}

impl ModelClient for OpenAiChatClient {
    fn model(&self) -> Option<&str> {
        Some(&self.connection.model)
    }

    fn provider_name(&self) -> Option<&str> {
        Some("openai")
    }

    fn send<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        let body = self.body(&request).and_then(http::request_body);
        Box::pin(async move {
            let body = body?;
            let headers = http::bearer(self.api_key.as_deref())?;
            self.connection
                .post(headers, body, WireFormat::OpenAiChat)
                .await
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tool::{ToolDefinition, UnifiedToolDefinition};
    use crate::{Message, ToolError};

    fn tool(name: &str, schema: Value) -> UnifiedToolDefinition {
        ToolDefinition::builder(name, "A test tool.")
            .input_schema(schema)
            .execute_json(|value, _| async move { Ok::<_, ToolError>(value) })
            .map(UnifiedToolDefinition::from)
            .unwrap()
    }

    /// A tool with one required and one optional property.
    fn search() -> UnifiedToolDefinition {
        tool(
            "search",
            json!({
                "type": "object",
                "properties": { "query": { "type": "string" }, "limit": { "type": "integer" } },
                "required": ["query"]
            }),
        )
    }

    #[test]
    fn a_tool_strict_mode_cannot_express_goes_without_it_and_the_others_stay_strict() {
        let tools = [
            // A map: strict mode allows only the properties it names, so it cannot say this.
            tool(
                "tag",
                json!({
                    "type": "object",
                    "properties": { "labels": { "type": "object", "additionalProperties": { "type": "string" } } },
                    "required": ["labels"]
                }),
            ),
            search(),
        ];
        let conversation = [Message::User {
            content: "hi".into(),
        }];
        let request = ModelRequest::new(&conversation, &tools);
        let client = OpenAiChatClient::new("http://127.0.0.1:1/v1", "m", None)
            .unwrap()
            .strict(true);
        let body = client.body(&request).unwrap();
        let (tag, search) = (&body["tools"][0]["function"], &body["tools"][1]["function"]);
        assert_eq!(tag["strict"], false);
        assert_eq!(&tag["parameters"], tools[0].definition().input_schema());
        assert_eq!(search["strict"], true);
        assert_eq!(search["parameters"]["required"], json!(["limit", "query"]));
        assert_eq!(search["parameters"]["additionalProperties"], false);

        let body = client.strict(false).body(&request).unwrap();
        assert_eq!(body["tools"][1]["function"]["strict"], false);
        assert_eq!(
            &body["tools"][1]["function"]["parameters"],
            tools[1].definition().input_schema()
        );
    }

    #[test]
    fn strict_mode_goes_by_the_endpoint_unless_forced() {
        let tools = [search()];
        let conversation = [Message::User {
            content: "hi".into(),
        }];
        let request = ModelRequest::new(&conversation, &tools);
        let strict = |base: &str| {
            let client = OpenAiChatClient::new(base, "m", None).unwrap();
            client.body(&request).unwrap()["tools"][0]["function"]["strict"] == true
        };
        assert!(strict("https://api.openai.com/v1"));
        assert!(strict("https://my-resource.openai.azure.com/openai/v1"));
        assert!(strict(
            "https://my-resource.cognitiveservices.azure.com/openai/v1"
        ));
        // llama.cpp, Ollama, vLLM, a gateway: plain schemas, `required` as the tool wrote it.
        assert!(!strict("http://127.0.0.1:8080/v1"));
        assert!(!strict("http://localhost:11434/v1"));
        assert!(!strict("https://openrouter.ai/api/v1"));
        assert!(!strict("https://api.openai.com.example.org/v1"));

        let local = OpenAiChatClient::new("http://127.0.0.1:8080/v1", "m", None).unwrap();
        let plain = local.body(&request).unwrap();
        assert_eq!(
            &plain["tools"][0]["function"]["parameters"],
            tools[0].definition().input_schema()
        );
        // Forced either way, by the client or by the run.
        let forced = local.clone().strict(true).body(&request).unwrap();
        assert_eq!(forced["tools"][0]["function"]["strict"], true);
        let options = crate::agent::AgentOptions::default().strict(true);
        let by_run = local.body(&request.options(&options)).unwrap();
        assert_eq!(by_run["tools"][0]["function"]["strict"], true);
        let openai = OpenAiChatClient::new("https://api.openai.com/v1", "m", None).unwrap();
        let options = crate::agent::AgentOptions::default().strict(false);
        let by_run = openai.body(&request.options(&options)).unwrap();
        assert_eq!(by_run["tools"][0]["function"]["strict"], false);
    }

    #[test]
    fn the_runs_request_settings_go_as_the_api_names_them() {
        let tools = [tool("math", json!({ "type": "object", "properties": {} }))];
        let conversation = [Message::User {
            content: "hi".into(),
        }];
        let request = ModelRequest::new(&conversation, &tools);
        let local = OpenAiChatClient::new("http://127.0.0.1:8080/v1", "m", None).unwrap();
        let bare = local.body(&request).unwrap();
        for field in [
            "max_tokens",
            "max_completion_tokens",
            "temperature",
            "tool_choice",
        ] {
            assert_eq!(bare.get(field), None, "{field} is not sent unless set");
        }
        assert_eq!(bare["messages"][0]["role"], "user");

        let options = crate::agent::AgentOptions::default()
            .system("Be brief.")
            .max_tokens(200)
            .temperature(0.25)
            .tool_choice(ToolChoice::Tool("math".into()));
        let body = local.body(&request.options(&options)).unwrap();
        assert_eq!(
            body["messages"][0],
            json!({ "role": "system", "content": "Be brief." })
        );
        assert_eq!(body["messages"][1]["role"], "user");
        assert_eq!(body["max_tokens"], 200);
        assert_eq!(body.get("max_completion_tokens"), None);
        assert_eq!(body["temperature"], 0.25);
        assert_eq!(
            body["tool_choice"],
            json!({ "type": "function", "function": { "name": "math" } })
        );

        let openai = OpenAiChatClient::new("https://api.openai.com/v1", "m", None).unwrap();
        let options = crate::agent::AgentOptions::default()
            .max_tokens(200)
            .tool_choice(ToolChoice::Required);
        let body = openai.body(&request.options(&options)).unwrap();
        assert_eq!(body["max_completion_tokens"], 200);
        assert_eq!(body.get("max_tokens"), None);
        assert_eq!(body["tool_choice"], "required");
    }
}
