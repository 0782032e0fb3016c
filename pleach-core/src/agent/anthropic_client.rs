//! The Anthropic Messages client.

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};

use super::{
    BoxFuture, ModelClient, ModelError, ModelRequest, ModelResponse, ToolChoice, WireFormat,
};
use super::{http, native_deferral};
use crate::providers::ProviderFormat;
use crate::providers::anthropic::Anthropic;

/// The default base URL of [`AnthropicClient::from_env`].
const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The API version sent in `anthropic-version`.
const API_VERSION: &str = "2023-06-01";
/// Anthropic's limits on the strict schemas of one request, together ("Schema is too complex for
/// compilation" past them): tools with `strict: true`, ...
const MAX_STRICT_TOOLS: usize = 20;
/// ... properties not in `required`, at every level, ...
const MAX_STRICT_OPTIONAL: usize = 24;
/// ... and schemas with `anyOf` or a type array (`["string", "null"]`).
const MAX_STRICT_UNIONS: usize = 16;

/// A streaming client for Anthropic Messages: POST `{base_url}/v1/messages` with
/// `"stream": true`, the conversation in Anthropic's format (a turn's tool results in one `user`
/// message), the session's tools through the Anthropic schema profile; the key as `x-api-key`,
/// and `anthropic-version: 2023-06-01`.
///
/// For Anthropic's own API (`api.anthropic.com`), tools go in strict tool use (`"strict": true`,
/// the schema through
/// [`Profile::AnthropicStrict`](crate::providers::Profile::AnthropicStrict); generally available,
/// no beta header), so Claude's inputs are held to the schema as they are sampled; any other
/// base URL (a local server or a gateway speaking the Messages API) gets plain schemas. A tool goes
/// without it (no `strict` field, its schema as it is), with a warning through `tracing` naming
/// the tool and why, when strict mode cannot express its schema, or when it would take the
/// request past Anthropic's limits for strict schemas together (20 tools, 24 optional
/// properties, 16 unions; the tools are taken in name order). [`AnthropicClient::strict`] forces
/// either.
///
/// The request carries the run's settings ([`ModelRequest`]): `system`, `max_tokens` (the run's,
/// else the client's), `temperature`, `tool_choice`.
///
/// ```
/// use pleach_core::agent::AnthropicClient;
/// let client = AnthropicClient::new("https://api.anthropic.com", "claude-sonnet-4-5", "sk-ant-secret")
///     .unwrap()
///     .max_tokens(1024);
/// assert_eq!(client.url(), "https://api.anthropic.com/v1/messages");
/// assert!(!format!("{client:?}").contains("sk-ant-secret"));
/// ```
#[derive(Clone)]
pub struct AnthropicClient {
    connection: http::Connection,
    api_key: String,
    max_tokens: u32,
    strict: bool,
}

impl std::fmt::Debug for AnthropicClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicClient")
            .field("url", &self.connection.url)
            .field("model", &self.connection.model)
            .field("api_key", &"<redacted>")
            .field("max_tokens", &self.max_tokens)
            .field("strict", &self.strict)
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
        let connection = http::Connection::new(base_url.as_ref(), "v1/messages", model.into())?;
        Ok(AnthropicClient {
            strict: http::honours_strict(&connection.url, WireFormat::AnthropicMessages),
            connection,
            api_key: api_key.into(),
            max_tokens: crate::defaults::MAX_TOKENS,
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

    /// Sets `max_tokens`, the most a response may have (default
    /// [`defaults::MAX_TOKENS`](crate::defaults::MAX_TOKENS), 4096): the API requires one, so
    /// this is sent when the run sets none
    /// ([`AgentOptions::max_tokens`](crate::agent::AgentOptions::max_tokens)).
    ///
    /// ```
    /// # let client = pleach_core::agent::AnthropicClient::new("http://127.0.0.1:9", "m", "k").unwrap();
    /// let client = client.max_tokens(512);
    /// # drop(client);
    /// ```
    #[must_use]
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Sends tools in strict tool use (`true`) or not (`false`: every schema as it is, no
    /// `strict` field). Default: strict for Anthropic's own API (`api.anthropic.com`), plain
    /// elsewhere.
    ///
    /// ```
    /// # let client = pleach_core::agent::AnthropicClient::new("https://api.anthropic.com", "m", "k").unwrap();
    /// assert!(client.is_strict());
    /// assert!(!client.strict(false).is_strict());
    /// let local = pleach_core::agent::AnthropicClient::new("http://127.0.0.1:9", "m", "k").unwrap();
    /// assert!(!local.is_strict());
    /// ```
    #[must_use]
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Whether tools go in strict tool use (see [`AnthropicClient::strict`]).
    ///
    /// ```
    /// # let client = pleach_core::agent::AnthropicClient::new("http://127.0.0.1:9", "m", "k").unwrap();
    /// assert!(!client.is_strict());
    /// ```
    pub fn is_strict(&self) -> bool {
        self.strict
    }

    /// The URL requests go to.
    ///
    /// ```
    /// # let client = pleach_core::agent::AnthropicClient::new("http://127.0.0.1:9", "m", "k").unwrap();
    /// assert_eq!(client.url(), "http://127.0.0.1:9/v1/messages");
    /// ```
    pub fn url(&self) -> &str {
        &self.connection.url
    }

    /// The request body for `request`, or the tools the Anthropic profile refuses.
    fn body(&self, request: &ModelRequest<'_>) -> Result<Value, ModelError> {
        let mut body = json!({
            "model": self.connection.model,
            "max_tokens": request.max_tokens.unwrap_or(self.max_tokens),
            "stream": true,
        });
        // Moved in: `json!` would copy the messages, media and all.
        body["messages"] = Value::Array(Anthropic.messages(request.conversation));
        if let Some(system) = request.system {
            body["system"] = json!(system);
        }
        if let Some(temperature) = request.temperature {
            body["temperature"] = json!(temperature);
        }
        if !request.tools.is_empty() {
            let mut budget = StrictBudget::default();
            body["tools"] = http::request_tools(
                &Anthropic,
                "Anthropic API",
                request.tools,
                request.strict.unwrap_or(self.strict),
                &self.connection.fallbacks,
                |strict| budget.take(&strict["input_schema"]),
            )?;
            if let Some(choice) = request.tool_choice {
                body["tool_choice"] = match choice {
                    ToolChoice::Auto => json!({ "type": "auto" }),
                    ToolChoice::Required => json!({ "type": "any" }),
                    ToolChoice::None => json!({ "type": "none" }),
                    ToolChoice::Tool(name) => json!({ "type": "tool", "name": name }),
                };
            }
        }
        native_deferral::anthropic(&mut body, request, &self.connection.fallbacks)?;
        Ok(body)
    }
}

/// What the strict schemas of one request have used of Anthropic's limits.
#[derive(Debug, Default)]
struct StrictBudget {
    tools: usize,
    optional: usize,
    unions: usize,
}

impl StrictBudget {
    /// Counts one more strict schema in, or says which limit it would pass (and counts nothing).
    fn take(&mut self, schema: &Value) -> Result<(), String> {
        let (mut optional, mut unions) = (0, 0);
        count_complexity(schema, &mut optional, &mut unions);
        let past = if self.tools + 1 > MAX_STRICT_TOOLS {
            Some(format!("{MAX_STRICT_TOOLS} strict tools"))
        } else if self.optional + optional > MAX_STRICT_OPTIONAL {
            Some(format!(
                "{MAX_STRICT_OPTIONAL} optional properties ({optional} here, {} before it)",
                self.optional
            ))
        } else if self.unions + unions > MAX_STRICT_UNIONS {
            Some(format!(
                "{MAX_STRICT_UNIONS} properties with `anyOf` or a type array ({unions} here, {} before it)",
                self.unions
            ))
        } else {
            None
        };
        if let Some(limit) = past {
            return Err(format!(
                "with it the request's strict schemas would pass Anthropic's limit of {limit}"
            ));
        }
        self.tools += 1;
        self.optional += optional;
        self.unions += unions;
        Ok(())
    }
}

/// Adds a strict schema's optional properties (at every level) and its unions (`anyOf`, type
/// arrays) to the counts. The schema has no `$ref`s: the strict profile inlines them.
fn count_complexity(schema: &Value, optional: &mut usize, unions: &mut usize) {
    let Value::Object(map) = schema else {
        return;
    };
    if map.contains_key("anyOf") || map.get("type").is_some_and(Value::is_array) {
        *unions += 1;
    }
    if let Some(Value::Object(properties)) = map.get("properties") {
        let required: Vec<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        *optional += properties
            .keys()
            .filter(|name| !required.contains(&name.as_str()))
            .count();
        for property in properties.values() {
            count_complexity(property, optional, unions);
        }
    }
    if let Some(items) = map.get("items") {
        count_complexity(items, optional, unions);
    }
    if let Some(Value::Array(branches)) = map.get("anyOf") {
        for branch in branches {
            count_complexity(branch, optional, unions);
        }
    }
}

impl ModelClient for AnthropicClient {
    fn model(&self) -> Option<&str> {
        Some(&self.connection.model)
    }

    fn provider_name(&self) -> Option<&str> {
        Some("anthropic")
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
            let mut headers = HeaderMap::new();
            http::secret_header(&mut headers, "x-api-key", &self.api_key)?;
            headers.insert(
                HeaderName::from_static("anthropic-version"),
                HeaderValue::from_static(API_VERSION),
            );
            self.connection
                .post(headers, body, WireFormat::AnthropicMessages)
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

    fn body(client: &AnthropicClient, tools: &[UnifiedToolDefinition]) -> Value {
        let conversation = [Message::User {
            content: "hi".into(),
        }];
        client
            .body(&ModelRequest::new(&conversation, tools))
            .unwrap()
    }

    /// A client that goes strict, as it does for Anthropic's own API.
    fn client() -> AnthropicClient {
        AnthropicClient::new("http://127.0.0.1:9", "m", "k")
            .unwrap()
            .strict(true)
    }

    #[test]
    fn a_tool_strict_mode_cannot_express_goes_without_it_and_the_others_stay_strict() {
        let tools = [
            tool(
                "search",
                json!({
                    "type": "object",
                    "properties": { "query": { "type": "string" }, "limit": { "type": "integer", "maximum": 50 } },
                    "required": ["query"]
                }),
            ),
            // A map: strict mode closes every object, so it cannot say this.
            tool(
                "tag",
                json!({
                    "type": "object",
                    "properties": { "labels": { "type": "object", "additionalProperties": { "type": "string" } } },
                    "required": ["labels"]
                }),
            ),
        ];
        let sent = body(&client(), &tools);
        let (search, tag) = (&sent["tools"][0], &sent["tools"][1]);
        assert_eq!(search["strict"], true);
        assert_eq!(search["input_schema"]["additionalProperties"], false);
        assert_eq!(
            search["input_schema"]["properties"]["limit"],
            json!({ "type": "integer", "description": "{maximum: 50}" })
        );
        assert_eq!(tag.get("strict"), None);
        assert_eq!(&tag["input_schema"], tools[1].definition().input_schema());

        let sent = body(&client().strict(false), &tools);
        assert_eq!(sent["tools"][0].get("strict"), None);
        assert_eq!(
            &sent["tools"][0]["input_schema"],
            tools[0].definition().input_schema()
        );
    }

    #[test]
    fn strict_schemas_stay_within_anthropics_limits_for_one_request() {
        // Five optional properties each: the fifth tool would make 25, past the 24 allowed.
        let optional = json!({
            "type": "object",
            "properties": {
                "a": { "type": "string" }, "b": { "type": "string" }, "c": { "type": "string" },
                "d": { "type": "string" }, "e": { "type": "string" }
            }
        });
        let tools: Vec<_> = (0..6)
            .map(|i| tool(&format!("t{i}"), optional.clone()))
            .collect();
        let sent = body(&client(), &tools);
        let strict: Vec<bool> = sent["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["strict"] == true)
            .collect();
        assert_eq!(strict, [true, true, true, true, false, false]);

        // Twenty-one tools with nothing optional: twenty go strict.
        let bare = json!({ "type": "object", "properties": { "x": { "type": "string" } }, "required": ["x"] });
        let tools: Vec<_> = (0..21)
            .map(|i| tool(&format!("t{i:02}"), bare.clone()))
            .collect();
        let sent = body(&client(), &tools);
        let strict = sent["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["strict"] == true)
            .count();
        assert_eq!(strict, 20);
        assert_eq!(sent["tools"][20].get("strict"), None);

        let mut nullable = (0, 0);
        count_complexity(
            &json!({ "type": "object", "properties": {
                "n": { "type": ["integer", "null"] },
                "m": { "anyOf": [{ "type": "string" }, { "type": "object", "properties": { "k": { "type": "string" } } }] }
            }, "required": ["n", "m"] }),
            &mut nullable.0,
            &mut nullable.1,
        );
        assert_eq!(nullable, (1, 2), "the `k` inside a branch is optional too");
    }

    #[test]
    fn strict_tool_use_goes_by_the_endpoint_and_the_runs_settings_are_sent() {
        let tools = [tool(
            "math",
            json!({ "type": "object", "properties": { "x": { "type": "string" } } }),
        )];
        let conversation = [Message::User {
            content: "hi".into(),
        }];
        let request = ModelRequest::new(&conversation, &tools);
        let anthropic = AnthropicClient::new("https://api.anthropic.com", "m", "k").unwrap();
        assert_eq!(
            anthropic.body(&request).unwrap()["tools"][0]["strict"],
            true
        );
        let local = AnthropicClient::new("http://127.0.0.1:9", "m", "k").unwrap();
        let plain = local.body(&request).unwrap();
        assert_eq!(plain["tools"][0].get("strict"), None);
        assert_eq!(plain["max_tokens"], crate::defaults::MAX_TOKENS);
        assert_eq!(plain.get("system"), None);
        assert_eq!(plain.get("tool_choice"), None);

        let options = crate::agent::AgentOptions::default()
            .system("Be brief.")
            .max_tokens(200)
            .temperature(0.5)
            .tool_choice(ToolChoice::Required)
            .strict(true);
        let body = local.body(&request.options(&options)).unwrap();
        assert_eq!(body["system"], "Be brief.");
        assert_eq!(body["max_tokens"], 200);
        assert_eq!(body["temperature"], 0.5);
        assert_eq!(body["tool_choice"], json!({ "type": "any" }));
        assert_eq!(body["tools"][0]["strict"], true);
        let options =
            crate::agent::AgentOptions::default().tool_choice(ToolChoice::Tool("math".into()));
        let body = local.body(&request.options(&options)).unwrap();
        assert_eq!(
            body["tool_choice"],
            json!({ "type": "tool", "name": "math" })
        );
    }
}
