//! The OpenAI Responses client: OpenAI, Azure OpenAI, and the servers that speak the Responses
//! API.

use serde_json::{Value, json};

use super::{
    BoxFuture, ModelClient, ModelError, ModelRequest, ModelResponse, ToolChoice, WireFormat,
};
use super::{http, native_deferral};
use crate::providers::ProviderFormat;
use crate::providers::openai_responses::OpenAiResponses;

/// A streaming client for the Responses API: POST `{base_url}/responses` with `"stream": true`,
/// the conversation as `input` items (results as `function_call_output` items, their images and
/// files in its `output` array: `docs/providers.md`, "Content blocks"), the session's tools as
/// flat `{"type":"function",…}` definitions; the key (if any) as `Authorization: Bearer`.
///
/// Strict mode goes as for [`OpenAiChatClient`](crate::agent::OpenAiChatClient): on for
/// OpenAI's own API and Azure OpenAI (a tool whose schema strict mode cannot express goes
/// without it, with a warning through `tracing`), off elsewhere; `"strict"` is always sent, since
/// the API takes a function as strict when the field is left out. [`OpenAiResponsesClient::strict`]
/// forces either.
///
/// The request carries the run's settings ([`ModelRequest`]): the system prompt as
/// `instructions`, `max_output_tokens`, `temperature`, `tool_choice`. Nothing is kept at the
/// provider between steps: every request carries the whole conversation.
///
/// ```
/// use pleach_core::agent::OpenAiResponsesClient;
/// let client = OpenAiResponsesClient::new("https://api.openai.com/v1", "gpt-5.1", Some("sk-secret".into())).unwrap();
/// assert_eq!(client.url(), "https://api.openai.com/v1/responses");
/// assert!(client.is_strict());
/// // The key never shows in debug output.
/// assert!(!format!("{client:?}").contains("sk-secret"));
/// ```
#[derive(Clone)]
pub struct OpenAiResponsesClient {
    connection: http::Connection,
    api_key: Option<String>,
    strict: bool,
}

impl std::fmt::Debug for OpenAiResponsesClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiResponsesClient")
            .field("url", &self.connection.url)
            .field("model", &self.connection.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("strict", &self.strict)
            .finish_non_exhaustive()
    }
}

impl OpenAiResponsesClient {
    /// A client for the API at `base_url` (up to and including `/v1`), asking `model`, sending
    /// `api_key` as a bearer token when there is one.
    ///
    /// ```
    /// let client = pleach_core::agent::OpenAiResponsesClient::new("http://127.0.0.1:8000/v1/", "m", None).unwrap();
    /// assert_eq!(client.url(), "http://127.0.0.1:8000/v1/responses");
    /// // A base URL without its scheme is refused here, not at the first request.
    /// assert!(pleach_core::agent::OpenAiResponsesClient::new("api.openai.com/v1", "m", None).is_err());
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
        let connection = http::Connection::new(base_url.as_ref(), "responses", model.into())?;
        Ok(OpenAiResponsesClient {
            strict: http::honours_strict(&connection.url, WireFormat::OpenAiResponses),
            connection,
            api_key,
        })
    }

    /// A client set up from the environment, as
    /// [`OpenAiChatClient::from_env`](crate::agent::OpenAiChatClient::from_env):
    /// `OPENAI_BASE_URL` (default `https://api.openai.com/v1`), `OPENAI_MODEL` (required) and
    /// `OPENAI_API_KEY` (optional).
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use pleach_core::agent::{ModelClient, OpenAiResponsesClient};
    ///
    /// let client: Arc<dyn ModelClient> = Arc::new(OpenAiResponsesClient::from_env()?);
    /// // session.run_agent(client, AgentOptions::default()) …
    /// # drop(client);
    /// # Ok::<(), pleach_core::agent::ModelError>(())
    /// ```
    pub fn from_env() -> Result<Self, ModelError> {
        let (base, model, key) = http::openai_env()?;
        OpenAiResponsesClient::new(base, model, key)
    }

    /// Sends tools in strict mode (`true`) or not (`false`: every schema as it is,
    /// `"strict": false`). Default: strict for OpenAI's own API and Azure OpenAI, plain
    /// elsewhere.
    ///
    /// ```
    /// # let client = pleach_core::agent::OpenAiResponsesClient::new("http://127.0.0.1:1/v1", "m", None).unwrap();
    /// assert!(!client.is_strict());
    /// assert!(client.strict(true).is_strict());
    /// ```
    #[must_use]
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Whether tools go in strict mode (see [`OpenAiResponsesClient::strict`]).
    ///
    /// ```
    /// # let client = pleach_core::agent::OpenAiResponsesClient::new("https://api.openai.com/v1", "m", None).unwrap();
    /// assert!(client.is_strict());
    /// ```
    pub fn is_strict(&self) -> bool {
        self.strict
    }

    /// The model asked.
    ///
    /// ```
    /// # let client = pleach_core::agent::OpenAiResponsesClient::new("http://127.0.0.1:1/v1", "m", None).unwrap();
    /// assert_eq!(client.model(), "m");
    /// ```
    pub fn model(&self) -> &str {
        &self.connection.model
    }

    /// The URL requests go to.
    ///
    /// ```
    /// # let client = pleach_core::agent::OpenAiResponsesClient::new("http://127.0.0.1:1/v1", "m", None).unwrap();
    /// assert_eq!(client.url(), "http://127.0.0.1:1/v1/responses");
    /// ```
    pub fn url(&self) -> &str {
        &self.connection.url
    }

    /// The request body for `request`.
    fn body(&self, request: &ModelRequest<'_>) -> Result<Value, ModelError> {
        let mut body = json!({ "model": self.connection.model, "stream": true });
        // Moved in: `json!` would copy the conversation, media and all.
        body["input"] = Value::Array(OpenAiResponses.messages(request.conversation));
        if let Some(system) = request.system {
            body["instructions"] = json!(system);
        }
        if let Some(tokens) = request.max_tokens {
            body["max_output_tokens"] = json!(tokens);
        }
        if let Some(temperature) = request.temperature {
            body["temperature"] = json!(temperature);
        }
        self.tools(request, &mut body)?;
        native_deferral::responses(&mut body, request);
        Ok(body)
    }

    /// The tools part of the request: `tools` and `tool_choice`, when the request offers tools.
    fn tools(&self, request: &ModelRequest<'_>, body: &mut Value) -> Result<(), ModelError> {
        if request.tools.is_empty() {
            return Ok(());
        }
        body["tools"] = http::request_tools(
            &OpenAiResponses,
            "Responses API",
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
                ToolChoice::Tool(name) => json!({ "type": "function", "name": name }),
            };
        }
        Ok(())
    }
}

impl ModelClient for OpenAiResponsesClient {
    fn model(&self) -> Option<&str> {
        Some(&self.connection.model)
    }

    fn provider_name(&self) -> Option<&str> {
        Some("openai")
    }

    fn native_deferral(&self) -> bool {
        true
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
                .post(headers, body, WireFormat::OpenAiResponses)
                .await
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::Message;
    use crate::agent::AgentOptions;
    use crate::tool::{ToolDefinition, UnifiedToolDefinition};

    fn search() -> UnifiedToolDefinition {
        ToolDefinition::builder("search", "Searches.")
            .input_schema(json!({
                "type": "object",
                "properties": { "query": { "type": "string" }, "limit": { "type": "integer" } },
                "required": ["query"]
            }))
            .execute_json(|value, _| async move { Ok::<_, crate::ToolError>(value) })
            .map(UnifiedToolDefinition::from)
            .unwrap()
    }

    #[test]
    fn the_runs_request_settings_go_as_the_responses_api_names_them() {
        let tools = [search()];
        let conversation = [Message::User {
            content: "hi".into(),
        }];
        let request = ModelRequest::new(&conversation, &tools);
        let local = OpenAiResponsesClient::new("http://127.0.0.1:8000/v1", "m", None).unwrap();
        let bare = local.body(&request).unwrap();
        for field in [
            "instructions",
            "max_output_tokens",
            "temperature",
            "tool_choice",
        ] {
            assert_eq!(bare.get(field), None, "{field} is not sent unless set");
        }
        assert_eq!(bare["input"], json!([{ "role": "user", "content": "hi" }]));
        assert_eq!(bare["tools"][0]["name"], "search");
        assert_eq!(bare["tools"][0]["strict"], false);

        let options = AgentOptions::default()
            .system("Be brief.")
            .max_tokens(200)
            .temperature(0.5)
            .tool_choice(ToolChoice::Tool("search".into()))
            .strict(true);
        let body = local.body(&request.options(&options)).unwrap();
        assert_eq!(body["instructions"], "Be brief.");
        assert_eq!(body["max_output_tokens"], 200);
        assert_eq!(body.get("max_tokens"), None);
        assert_eq!(body["temperature"], 0.5);
        assert_eq!(
            body["tool_choice"],
            json!({ "type": "function", "name": "search" })
        );
        assert_eq!(body["tools"][0]["strict"], true);
        assert_eq!(
            body["tools"][0]["parameters"]["required"],
            json!(["limit", "query"])
        );

        let openai = OpenAiResponsesClient::new("https://api.openai.com/v1", "m", None).unwrap();
        let options = AgentOptions::default().tool_choice(ToolChoice::Required);
        let body = openai.body(&request.options(&options)).unwrap();
        assert_eq!(body["tools"][0]["strict"], true);
        assert_eq!(body["tool_choice"], "required");
    }

    #[test]
    fn forcing_the_search_tool_under_native_deferral_forces_the_tool_search_tool() {
        let tools = [search()];
        let deferred = [ToolDefinition::builder("weather", "Weather for a city.")
            .execute_json(|value, _| async move { Ok::<_, crate::ToolError>(value) })
            .map(UnifiedToolDefinition::from)
            .unwrap()];
        let conversation = [Message::User {
            content: "hi".into(),
        }];
        let client = OpenAiResponsesClient::new("http://127.0.0.1:8000/v1", "m", None).unwrap();
        let forced = AgentOptions::default().tool_choice(ToolChoice::Tool("search".into()));
        let mut request = ModelRequest::new(&conversation, &tools).options(&forced);
        request.deferred = &deferred;
        request.search_tool = Some("search");
        let body = client.body(&request).unwrap();
        assert_eq!(body["tools"][0]["type"], "tool_search");
        assert_eq!(
            body["tool_choice"],
            json!({"type": "allowed_tools", "mode": "required", "tools": [{"type": "tool_search"}]}),
            "no function is named `search`: the choice names the tool_search tool"
        );

        let other = AgentOptions::default().tool_choice(ToolChoice::Tool("other".into()));
        let mut request = ModelRequest::new(&conversation, &tools).options(&other);
        request.deferred = &deferred;
        request.search_tool = Some("search");
        assert_eq!(
            client.body(&request).unwrap()["tool_choice"],
            json!({"type": "function", "name": "other"}),
            "another tool is forced as a function"
        );

        let mut request = ModelRequest::new(&conversation, &tools).options(&forced);
        request.search_tool = Some("search");
        assert_eq!(
            client.body(&request).unwrap()["tool_choice"],
            json!({"type": "function", "name": "search"}),
            "nothing deferred: the search tool is a function"
        );
    }
}
