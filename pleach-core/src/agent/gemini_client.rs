//! The Gemini client: `streamGenerateContent` on the Gemini API (and the servers that copy it).

use reqwest::header::HeaderMap;
use serde_json::{Value, json};

use super::http;
use super::{
    BoxFuture, ModelClient, ModelError, ModelRequest, ModelResponse, ToolChoice, WireFormat,
};
use crate::providers::ProviderFormat;
use crate::providers::gemini::Gemini;

/// The default base URL of [`GeminiClient::from_env`].
const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// A streaming client for Gemini: POST
/// `{base_url}/models/{model}:streamGenerateContent?alt=sse`, the conversation as `contents` (a
/// turn's results as `functionResponse` parts in one `user` content, their images and files as
/// `inlineData` in the function response's own `parts`: `docs/providers.md`, "Content blocks"),
/// the session's tools as `functionDeclarations` with their schemas in Gemini's OpenAPI subset
/// ([`Profile::Gemini`](crate::providers::Profile::Gemini)); the key as `x-goog-api-key`.
///
/// Gemini has no strict mode: tools always go plain (a run asking for strict mode gets a warning
/// per tool through `tracing`, saying so).
///
/// The request carries the run's settings ([`ModelRequest`]): the system prompt as
/// `systemInstruction`, `generationConfig.maxOutputTokens`, `generationConfig.temperature`, and
/// the tool choice as `toolConfig.functionCallingConfig` (`AUTO`, `ANY`, `NONE`, or `ANY` with
/// one name in `allowedFunctionNames`).
///
/// ```
/// use pleach_core::agent::GeminiClient;
/// let client = GeminiClient::new("https://generativelanguage.googleapis.com/v1beta", "gemini-2.5-flash", "AIza-secret").unwrap();
/// assert_eq!(
///     client.url(),
///     "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
/// );
/// // The key never shows in debug output.
/// assert!(!format!("{client:?}").contains("AIza-secret"));
/// ```
#[derive(Clone)]
pub struct GeminiClient {
    connection: http::Connection,
    api_key: String,
}

impl std::fmt::Debug for GeminiClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeminiClient")
            .field("url", &self.connection.url)
            .field("model", &self.connection.model)
            .field("api_key", &"<redacted>")
            .finish_non_exhaustive()
    }
}

impl GeminiClient {
    /// A client for the API at `base_url` (up to and including the version,
    /// `https://generativelanguage.googleapis.com/v1beta`), asking `model` (`gemini-2.5-flash`;
    /// `models/gemini-2.5-flash` is read the same), with `api_key`.
    ///
    /// ```
    /// let client = pleach_core::agent::GeminiClient::new("http://127.0.0.1:9/v1beta/", "models/gemini-2.5-pro", "k").unwrap();
    /// assert_eq!(client.url(), "http://127.0.0.1:9/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse");
    /// // A model name that is not one path segment is refused here, not at the first request.
    /// assert!(pleach_core::agent::GeminiClient::new("http://127.0.0.1:9/v1beta", "gemini?x=1", "k").is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// [`ModelError::Config`] when no model is named, the model's name holds characters other
    /// than ASCII letters, digits, `-`, `.` and `_`, `base_url` is not an absolute http or https
    /// URL, or the HTTP client cannot be set up.
    pub fn new(
        base_url: impl AsRef<str>,
        model: impl Into<String>,
        api_key: impl Into<String>,
    ) -> Result<Self, ModelError> {
        let model = model.into();
        let name = model.trim().trim_start_matches("models/");
        if name.is_empty() {
            return Err(ModelError::Config("no model named".into()));
        }
        if let Some(bad) = name
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_')))
        {
            return Err(ModelError::Config(format!(
                "the model name `{model}` holds `{bad}`; a Gemini model is named like `gemini-2.5-flash`"
            )));
        }
        let connection = http::Connection::new(
            base_url.as_ref(),
            &format!("models/{name}:streamGenerateContent?alt=sse"),
            name.to_owned(),
        )?;
        Ok(GeminiClient {
            connection,
            api_key: api_key.into(),
        })
    }

    /// A client set up from the environment: `GEMINI_BASE_URL` (default
    /// `https://generativelanguage.googleapis.com/v1beta`), `GEMINI_MODEL` and `GEMINI_API_KEY`
    /// (both required).
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use pleach_core::agent::{ModelClient, GeminiClient};
    ///
    /// let client: Arc<dyn ModelClient> = Arc::new(GeminiClient::from_env()?);
    /// // session.run_agent(client, AgentOptions::default()) …
    /// # drop(client);
    /// # Ok::<(), pleach_core::agent::ModelError>(())
    /// ```
    pub fn from_env() -> Result<Self, ModelError> {
        let model = http::env("GEMINI_MODEL")
            .ok_or_else(|| ModelError::Config("set GEMINI_MODEL to the model to ask".into()))?;
        let key = http::env("GEMINI_API_KEY")
            .ok_or_else(|| ModelError::Config("set GEMINI_API_KEY".into()))?;
        let base = http::env("GEMINI_BASE_URL").unwrap_or_else(|| DEFAULT_BASE_URL.to_owned());
        GeminiClient::new(base, model, key)
    }

    /// The model asked, without a `models/` prefix.
    ///
    /// ```
    /// # let client = pleach_core::agent::GeminiClient::new("http://127.0.0.1:9/v1beta", "models/gemini-2.5-pro", "k").unwrap();
    /// assert_eq!(client.model(), "gemini-2.5-pro");
    /// ```
    pub fn model(&self) -> &str {
        &self.connection.model
    }

    /// The URL requests go to.
    ///
    /// ```
    /// # let client = pleach_core::agent::GeminiClient::new("http://127.0.0.1:9/v1beta", "gemini-2.5-pro", "k").unwrap();
    /// assert!(client.url().ends_with(":streamGenerateContent?alt=sse"));
    /// ```
    pub fn url(&self) -> &str {
        &self.connection.url
    }

    /// The request body for `request`.
    fn body(&self, request: &ModelRequest<'_>) -> Result<Value, ModelError> {
        // Moved in: `json!` would copy the conversation, media and all.
        let mut body = json!({});
        body["contents"] = Value::Array(Gemini.messages(request.conversation));
        if let Some(system) = request.system {
            body["systemInstruction"] = json!({ "parts": [{ "text": system }] });
        }
        let mut generation = serde_json::Map::new();
        if let Some(tokens) = request.max_tokens {
            generation.insert("maxOutputTokens".into(), json!(tokens));
        }
        if let Some(temperature) = request.temperature {
            generation.insert("temperature".into(), json!(temperature));
        }
        if !generation.is_empty() {
            body["generationConfig"] = Value::Object(generation);
        }
        self.tools(request, &mut body)?;
        Ok(body)
    }

    /// The tools part of the request: `tools` and `toolConfig`, when the request offers tools.
    fn tools(&self, request: &ModelRequest<'_>, body: &mut Value) -> Result<(), ModelError> {
        if request.tools.is_empty() {
            return Ok(());
        }
        body["tools"] = http::request_tools(
            &Gemini,
            "Gemini API",
            request.tools,
            request.strict.unwrap_or(false),
            &self.connection.fallbacks,
            |_| Ok(()),
        )?;
        if let Some(choice) = request.tool_choice {
            let config = match choice {
                ToolChoice::Auto => json!({ "mode": "AUTO" }),
                ToolChoice::Required => json!({ "mode": "ANY" }),
                ToolChoice::None => json!({ "mode": "NONE" }),
                ToolChoice::Tool(name) => json!({ "mode": "ANY", "allowedFunctionNames": [name] }),
            };
            body["toolConfig"] = json!({ "functionCallingConfig": config });
        }
        Ok(())
    }
}

impl ModelClient for GeminiClient {
    fn model(&self) -> Option<&str> {
        Some(&self.connection.model)
    }

    fn provider_name(&self) -> Option<&str> {
        Some("gcp.gemini")
    }

    fn send<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        let body = self.body(&request).and_then(http::request_body);
        Box::pin(async move {
            let body = body?;
            let mut headers = HeaderMap::new();
            http::secret_header(&mut headers, "x-goog-api-key", &self.api_key)?;
            self.connection
                .post(headers, body, WireFormat::Gemini)
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
                "properties": { "query": { "type": "string" } },
                "required": ["query"]
            }))
            .execute_json(|value, _| async move { Ok::<_, crate::ToolError>(value) })
            .map(UnifiedToolDefinition::from)
            .unwrap()
    }

    #[test]
    fn the_runs_request_settings_go_as_gemini_names_them() {
        let tools = [search()];
        let conversation = [Message::User {
            content: "hi".into(),
        }];
        let request = ModelRequest::new(&conversation, &tools);
        let client =
            GeminiClient::new("http://127.0.0.1:9/v1beta", "gemini-2.5-flash", "k").unwrap();
        let bare = client.body(&request).unwrap();
        for field in ["systemInstruction", "generationConfig", "toolConfig"] {
            assert_eq!(bare.get(field), None, "{field} is not sent unless set");
        }
        assert_eq!(
            bare["contents"],
            json!([{ "role": "user", "parts": [{ "text": "hi" }] }])
        );
        assert_eq!(
            bare["tools"][0]["functionDeclarations"][0]["name"],
            "search"
        );

        let options = AgentOptions::default()
            .system("Be brief.")
            .max_tokens(200)
            .temperature(0.5)
            .tool_choice(ToolChoice::Tool("search".into()));
        let body = client.body(&request.options(&options)).unwrap();
        assert_eq!(
            body["systemInstruction"],
            json!({ "parts": [{ "text": "Be brief." }] })
        );
        assert_eq!(
            body["generationConfig"],
            json!({ "maxOutputTokens": 200, "temperature": 0.5 })
        );
        assert_eq!(
            body["toolConfig"],
            json!({ "functionCallingConfig": { "mode": "ANY", "allowedFunctionNames": ["search"] } })
        );
        // No strict mode: a run asking for it still gets the plain declarations.
        let options = AgentOptions::default()
            .strict(true)
            .tool_choice(ToolChoice::None);
        let body = client.body(&request.options(&options)).unwrap();
        assert_eq!(
            body["tools"][0]["functionDeclarations"][0]["parameters"]["required"],
            json!(["query"])
        );
        assert_eq!(
            body["toolConfig"]["functionCallingConfig"],
            json!({ "mode": "NONE" })
        );
    }

    #[test]
    fn a_model_name_that_is_not_one_path_segment_is_refused() {
        for model in ["", "models/", "gemini/../x", "a b", "gemini?alt=json"] {
            let refused = GeminiClient::new("http://127.0.0.1:9/v1beta", model, "k");
            assert!(
                matches!(refused, Err(ModelError::Config(_))),
                "{model}: {refused:?}"
            );
        }
    }
}
